#!/usr/bin/env bats
# options.bats: the command line (SPEC §1): help, version, SOURCE form, root=, default_type=, store=.

load lib/keyfs

# Each test mounts with its own options; teardown always unmounts.
setup()
{
	keyfs_require_bin
	MNT="$BATS_TEST_TMPDIR/mnt"
	mkdir -p "$MNT"
}

teardown()
{
	keyfs_unmount
	detached_cleanup
}

@test "--help exits 0 and prints a usage" {
	run "$KEYFS_BIN" --help
	assert_success
	assert_output --regexp '[Uu]sage'
	run "$KEYFS_BIN" -h
	assert_success
	assert_output --regexp '[Uu]sage'
}

@test "--help names keyfs's own options" {
	run "$KEYFS_BIN" --help
	assert_success
	local o
	for o in backend= store= root= default_type= request_key= request_timeout= \
		attr_timeout= entry_timeout=; do
		assert_output --partial "$o"
	done
}

@test "--version exits 0 and prints the version" {
	run "$KEYFS_BIN" --version
	assert_success
	assert_output --regexp 'keyfs.*[0-9]+\.[0-9]+'
	run "$KEYFS_BIN" -V
	assert_success
	assert_output --regexp 'keyfs.*[0-9]+\.[0-9]+'
}

@test "an unknown backend exits non-zero with a message" {
	run timeout 10 "$KEYFS_BIN" -f -o backend=bogus "$MNT"
	assert_failure
	assert_output --partial bogus
	run keyfs_is_mounted "$MNT"
	assert_failure
}

@test "an unknown SOURCE exits non-zero with a message" {
	run timeout 10 "$KEYFS_BIN" -f bogus "$MNT"
	assert_failure
	assert_output --partial bogus
	run keyfs_is_mounted "$MNT"
	assert_failure
}

@test "no mount point exits non-zero with a message" {
	run timeout 10 "$KEYFS_BIN" -f -o "backend=$KEYFS_BACKEND"
	assert_failure
	refute_output ""
}

@test "keyfs SOURCE MOUNTPOINT mounts that backend" {
	keyfs_start "$MNT" "$KEYFS_BACKEND" "$MNT"
	[ -d "$MNT/session" ]
	echo x >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" x
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(ino "$MNT/session")" "$(keyctl id @s)"
	fi
}

@test "keyfs SOURCE MOUNTPOINT -o OPTS takes options after the mount point" {
	keyfs_start "$MNT" "$KEYFS_BACKEND" "$MNT" -o default_type=logon
	echo -n pw >"$MNT/session/svc:foo"
	run ls -A "$MNT/session"
	assert_line "%logon:svc:foo"
}

@test "kernel: the default backend is kernel" {
	skip_unless_kernel
	keyfs_start "$MNT" "$MNT"
	assert_equal "$(ino "$MNT/session")" "$(keyctl id @s)"
}

# without_fd3 CMD...: run CMD with bats's fd 3 closed, so a daemon it
# leaves behind does not hold bats's output open.
without_fd3()
{
	"$@" 3>&-
}

@test "without -f keyfs detaches and serves the mount" {
	keyfs_new_session
	run without_fd3 timeout 10 "$KEYFS_BIN" -o "backend=$KEYFS_BACKEND" "$MNT"
	assert_success
	run mountpoint -q "$MNT"
	assert_success
	echo x >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" x
}

@test "mount -t fuse PROGRAM#SOURCE MOUNTPOINT (as mount.fuse3 runs keyfs) works" {
	command -v mount.fuse3 >/dev/null || skip "no mount.fuse3"
	keyfs_new_session
	# mount(8) finds fuse.keyfs only on the system PATH; PROGRAM#SOURCE
	# makes mount.fuse3 run this build as "keyfs SOURCE MOUNTPOINT -o ...".
	run without_fd3 timeout 10 mount -t fuse \
		"$KEYFS_BIN#$KEYFS_BACKEND" "$MNT" -o default_type=logon
	assert_success
	run mountpoint -q "$MNT"
	assert_success
	echo x >"$MNT/session/svc:k"
	run ls -A "$MNT/session"
	assert_line "%logon:svc:k"
}

@test "root=@s shows the session keyring at the mount root" {
	keyfs_mount -o root=@s
	run ls -A "$MNT"
	assert_line .keyfs
	refute_line session
	refute_line by-id
	refute_line @s
	echo top >"$MNT/k"
	assert_equal "$(cat "$MNT/k")" top
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(ino "$MNT")" "$(keyctl id @s)"
		assert_equal "$(keyctl pipe "$(keyctl search @s user k)")" top
	fi
}

@test "root=@s reserves only .keyfs: session and by-id are ordinary names" {
	keyfs_mount -o root=@s
	echo a >"$MNT/session"
	mkdir "$MNT/by-id"
	[ -f "$MNT/session" ]
	[ -d "$MNT/by-id" ]
	assert_equal "$(cat "$MNT/session")" a
	run kerrno write "$MNT/.keyfs" x
	refute_output OK
}

@test "kernel: root=SERIAL and root=%:NAME show that keyring" {
	skip_unless_kernel
	keyfs_new_session
	local r
	r=$(keyctl newring rootring @s)
	keyctl add user inside v "$r" >/dev/null
	keyfs_mount -o "root=$r"
	assert_equal "$(ino "$MNT")" "$r"
	assert_equal "$(cat "$MNT/inside")" v
	keyfs_unmount
	keyfs_mount -o "root=%:rootring"
	assert_equal "$(ino "$MNT")" "$r"
}

@test "a root= that names no keyring exits non-zero with a message" {
	run timeout 10 "$KEYFS_BIN" -f -o "backend=$KEYFS_BACKEND,root=nonsense" "$MNT"
	assert_failure
	refute_output ""
	run keyfs_is_mounted "$MNT"
	assert_failure
}

@test "default_type=logon makes plain names logon keys" {
	keyfs_mount -o default_type=logon
	echo x >"$MNT/session/svc:foo"
	run ls -A "$MNT/session"
	assert_line "%logon:svc:foo"
	refute_line "svc:foo"
	run kerrno read "$MNT/session/%logon:svc:foo"
	assert_output EOPNOTSUPP
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl search @s logon svc:foo
		assert_success
	fi
}

@test "default_type=logon refuses a description without a service: prefix" {
	keyfs_mount -o default_type=logon
	# The kernel's logon type wants "service:name" descriptions.
	run kerrno write "$MNT/session/plain" x
	assert_output EINVAL
	run kerrno write "$MNT/session/%logon::plain" x
	assert_output EINVAL
}

@test "default_type=logon still makes user keys from %user:NAME" {
	keyfs_mount -o default_type=logon
	echo u >"$MNT/session/%user:bar"
	run ls -A "$MNT/session"
	assert_line bar
	assert_equal "$(cat "$MNT/session/bar")" u
}

@test "ro refuses changes with EROFS" {
	keyfs_mount -o ro
	run kerrno write "$MNT/session/k" x
	assert_output EROFS
	run kerrno mkdir "$MNT/session/ring"
	assert_output EROFS
	run ls -A "$MNT/session"
	assert_success
}

@test "attr_timeout= and entry_timeout= are accepted" {
	keyfs_mount -o attr_timeout=0,entry_timeout=0
	echo -n abc >"$MNT/session/k"
	assert_equal "$(fsize "$MNT/session/k")" 3
	if [[ $KEYFS_BACKEND == kernel ]]; then
		keyctl update "$(ino "$MNT/session/k")" abcdef
		assert_equal "$(fsize "$MNT/session/k")" 6
	fi
}

@test "store=FILE keeps keys and serials across unmount and mount (store)" {
	skip_unless_memory
	local f=$BATS_TEST_TMPDIR/keys.json k r k2
	keyfs_mount -o "store=$f"
	printf 'kept\0bin' >"$MNT/session/k"
	mkdir "$MNT/session/ring"
	echo inner >"$MNT/session/ring/k2"
	touch "$MNT/session/pending"
	k=$(ino "$MNT/session/k")
	r=$(ino "$MNT/session/ring")
	k2=$(ino "$MNT/session/ring/k2")
	keyfs_unmount
	[ -f "$f" ]
	assert_equal "$(stat -c %a "$f")" 600
	keyfs_mount -o "store=$f"
	printf 'kept\0bin' | cmp - "$MNT/session/k"
	assert_equal "$(ino "$MNT/session/k")" "$k"
	assert_equal "$(ino "$MNT/session/ring")" "$r"
	assert_equal "$(ino "$MNT/session/ring/k2")" "$k2"
	assert_equal "$(cat "$MNT/session/ring/k2")" inner
	run ls -A "$MNT/session"
	refute_line pending
}

@test "store=FILE is written at every change, not only at unmount (store)" {
	skip_unless_memory
	local f=$BATS_TEST_TMPDIR/keys.json
	keyfs_mount -o "store=$f"
	echo x >"$MNT/session/k"
	# into the journal beside it, on disk before the write returned
	[ -s "$f" ]
	run cat "$f.journal"
	assert_output --partial '"k"'
}

@test "a store=FILE inside the mount point is refused: keyfs would write into itself (store)" {
	skip_unless_memory
	local f
	mkdir "$MNT/sub"
	ln -s "$MNT/sub" "$BATS_TEST_TMPDIR/link"
	for f in "$MNT/store.json" "$MNT/sub/store.json" "$MNT/sub/../x.json" \
		"$BATS_TEST_TMPDIR/link/store.json"; do
		run timeout 10 "$KEYFS_BIN" -f -o "backend=memory,store=$f" "$MNT"
		assert_failure
		assert_output --partial "is inside the mount point"
		run keyfs_is_mounted "$MNT"
		assert_failure
	done
	[[ ! -e $MNT/store.json && ! -e $MNT/sub/store.json ]]
}

@test "a store=FILE that is not JSON exits non-zero naming the file (store)" {
	skip_unless_memory
	local f=$BATS_TEST_TMPDIR/bad.json
	echo 'this is not json' >"$f"
	run timeout 10 "$KEYFS_BIN" -f -o "backend=memory,store=$f" "$MNT"
	assert_failure
	assert_output --partial "$f"
	assert_equal "$(cat "$f")" 'this is not json'
	run keyfs_is_mounted "$MNT"
	assert_failure
}
