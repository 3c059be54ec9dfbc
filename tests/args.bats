#!/usr/bin/env bats
# args.bats: arguments keyfs refuses at mount with one line and status 1 (issue 11.20), and the man page's examples for them.

load lib/keyfs

setup()
{
	keyfs_require_bin
	MNT="$BATS_TEST_TMPDIR/mnt"
	mkdir -p "$MNT"
}

teardown()
{
	cd "$BATS_TEST_TMPDIR" || true
	keyfs_unmount
	detached_cleanup
}

# Run keyfs detached (as a user or mount.fuse3 does) with bats's fd 3
# closed, so a daemon it leaves behind does not hold bats's output open.
keyfs_detached()
{
	timeout 10 "$KEYFS_BIN" "$@" 3>&- </dev/null
}

# refused ARGS...: keyfs ARGS... exits 1 with exactly one line on stderr
# (in $output) and mounts nothing on $MNT.
refused()
{
	run --separate-stderr keyfs_detached "$@"
	assert_equal "$status" 1
	assert_equal "$output" ""
	output=$stderr
	assert_equal "${#stderr_lines[@]}" 1
	assert_output --regexp '^keyfs: '
	run keyfs_is_mounted "$MNT"
	assert_failure
	output=$stderr
}

@test "a lone SOURCE says the mount point is missing, with the usage" {
	cd "$BATS_TEST_TMPDIR"
	refused "$KEYFS_BACKEND"
	assert_output --partial "no mount point"
	assert_output --partial "usage: keyfs [SOURCE] MOUNTPOINT"
	refute_output --partial "bad mount point"
	# Even where a directory of that name exists: ./NAME mounts on it.
	mkdir "$BATS_TEST_TMPDIR/$KEYFS_BACKEND"
	refused "$KEYFS_BACKEND"
	assert_output --partial "no mount point"
}

@test "a regular file as the mount point is refused: not a directory" {
	MNT=$BATS_TEST_TMPDIR/file
	touch "$MNT"
	refused "$KEYFS_BACKEND" "$MNT"
	assert_output "keyfs: $MNT: not a directory"
	refused -o "backend=$KEYFS_BACKEND" "$MNT"
	assert_output "keyfs: $MNT: not a directory"
}

@test "a mount point that does not exist is refused, naming it" {
	MNT=$BATS_TEST_TMPDIR/nowhere
	refused "$KEYFS_BACKEND" "$MNT"
	assert_output "keyfs: $MNT: No such file or directory"
}

@test "an fstab-style label as SOURCE is left alone when backend= is given" {
	keyfs_start "$MNT" none "$MNT" -o "backend=$KEYFS_BACKEND"
	# /proc/mounts names the backend that serves it, not the label
	run awk -v m="$MNT" '$2 == m { print $1 }' /proc/mounts
	assert_output "$KEYFS_BACKEND"
}

@test "SOURCE and backend= that disagree are refused; agreeing ones mount" {
	refused kernel "$MNT" -o backend=memory
	assert_output --partial "disagree"
	assert_output --partial "kernel"
	assert_output --partial "memory"
	refused memory "$MNT" -o backend=kernel
	assert_output --partial "disagree"
	refused bogus "$MNT"
	assert_output --partial "unknown source 'bogus'"
	keyfs_start "$MNT" "$KEYFS_BACKEND" "$MNT" -o "backend=$KEYFS_BACKEND"
	run awk -v m="$MNT" '$2 == m { print $1 }' /proc/mounts
	assert_output "$KEYFS_BACKEND"
}

@test "an empty store= is refused with one clear line" {
	refused memory "$MNT" -o store=
	assert_output "keyfs: store= is empty: give the path of the store file"
	refused memory "$MNT" -o "store=$BATS_TEST_TMPDIR/"
	assert_output --partial "does not name a file"
	refused kernel "$MNT" -o store=
	assert_output --partial "store= needs the memory backend"
}

@test "kernel: request_key= and request_timeout= are refused: they are for the memory backend" {
	skip_unless_kernel
	refused kernel "$MNT" -o request_key=/bin/true
	assert_output --partial "request_key= needs the memory backend"
	refused "$MNT" -o request_timeout=5
	assert_output --partial "request_timeout= needs the memory backend"
}

@test "memory: an empty, missing or non-executable request_key= is refused at mount" {
	skip_unless_memory
	refused memory "$MNT" -o request_key=
	assert_output "keyfs: request_key= is empty: give the callout program's path"
	refused memory "$MNT" -o "request_key=$BATS_TEST_TMPDIR/none.sh"
	assert_output "keyfs: request_key=$BATS_TEST_TMPDIR/none.sh: No such file or directory"
	echo '#!/bin/sh' >"$BATS_TEST_TMPDIR/noexec.sh"
	chmod 644 "$BATS_TEST_TMPDIR/noexec.sh"
	refused memory "$MNT" -o "request_key=$BATS_TEST_TMPDIR/noexec.sh"
	assert_output "keyfs: request_key=$BATS_TEST_TMPDIR/noexec.sh: not an executable file"
	refused memory "$MNT" -o "request_key=$BATS_TEST_TMPDIR"
	assert_output "keyfs: request_key=$BATS_TEST_TMPDIR: not an executable file"
}

@test "memory: a relative request_key= is taken from the start directory, also once detached" {
	skip_unless_memory
	keyfs_new_session
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\nprintf "from %%s" "$3"\n' >"$BATS_TEST_TMPDIR/bin/callout.sh"
	chmod +x "$BATS_TEST_TMPDIR/bin/callout.sh"
	cd "$BATS_TEST_TMPDIR"
	run keyfs_detached memory "$MNT" -o request_key=bin/callout.sh
	assert_success
	cd /
	echo 'user db:password app=web' >"$MNT/.keyfs/request"
	assert_equal "$(cat "$MNT/session/db:password")" "from app=web"
	# A name without a slash is in the start directory too, not on PATH.
	detached_cleanup
	cd "$BATS_TEST_TMPDIR/bin"
	run keyfs_detached memory "$MNT" -o request_key=callout.sh
	assert_success
	cd /
	echo 'user db:other app=x' >"$MNT/.keyfs/request"
	assert_equal "$(cat "$MNT/session/db:other")" "from app=x"
}

# The lines of EXAMPLES, as printed, with the mount point of this test.
@test "EXAMPLES: root=@s,default_type=logon mounts as printed, and makes logon keys of service:name" {
	local man=${KEYFS_SRCDIR:-$BATS_TEST_DIRNAME/..}/man/keyfs.1
	run grep -F 'keyfs kernel /run/keys \-o root=@s,default_type=logon' "$man"
	assert_success
	run grep -F 'printf %s "$PW" | cat > /run/keys/cifs:alice' "$man"
	assert_success
	keyfs_start "$MNT" "$KEYFS_BACKEND" "$MNT" -o root=@s,default_type=logon
	local PW=hunter2
	printf %s "$PW" | cat >"$MNT/cifs:alice"
	run ls -A "$MNT"
	assert_line "%logon:cifs:alice"
	run kerrno read "$MNT/%logon:cifs:alice"
	assert_output EOPNOTSUPP
	# What the man page says: a logon name needs a service: prefix.
	run kerrno write "$MNT/password" x
	assert_output EINVAL
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl search @s logon cifs:alice
		assert_success
	fi
}

@test "CONTROL FILES: the .keyfs/request example works as printed given what the man page says it needs" {
	local cf=${KEYFS_SRCDIR:-$BATS_TEST_DIRNAME/..}/man/keyfs.1
	run grep -F "echo \\(aquser db:password app=web\\(aq > .keyfs/request" "$cf"
	assert_success
	if [[ $KEYFS_BACKEND == memory ]]; then
		printf '#!/bin/sh\nprintf "secret for %%s" "$2"\n' >"$BATS_TEST_TMPDIR/callout.sh"
		chmod +x "$BATS_TEST_TMPDIR/callout.sh"
		keyfs_mount -o "request_key=$BATS_TEST_TMPDIR/callout.sh"
		cd "$MNT"
		echo 'user db:password app=web' > .keyfs/request
		assert_equal "$(cat session/db:password)" "secret for db:password"
	else
		# The kernel runs request-key(8), which needs a request-key.conf
		# line for the description; the stock file has one for debug:*.
		grep -qs '^create[[:space:]]*user[[:space:]]*debug:\*' /etc/request-key.conf ||
			skip "no request-key.conf line for user debug:*"
		keyfs_mount
		cd "$MNT"
		run kerrno write .keyfs/request 'user db:password app=web'
		assert_output ENOKEY
		echo 'user debug:password app=web' > .keyfs/request
		assert_equal "$(cat session/debug:password)" "Debug app=web"
	fi
	# The man page says what the example needs on each backend.
	run grep -F '.BR request\-key.conf (5)' "$cf"
	assert_success
	run grep -F 'The example needs one of them' "$cf"
	assert_success
}
