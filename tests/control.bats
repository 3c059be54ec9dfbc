#!/usr/bin/env bats
# control.bats: the command and report files in .keyfs/ (SPEC §6).

load lib/keyfs

setup_file()
{
	# kernel: a request-key.d entry of our own, when keyutils' upcall
	# program is there to read it.
	RK_CONF=
	if [[ $KEYFS_BACKEND == kernel && -x /sbin/request-key &&
	      -d /etc/request-key.d && -w /etc/request-key.d ]]; then
		RK_CONF=/etc/request-key.d/keyfs-bats-$$.conf
		printf '%s\n' \
			"create	user	keyfs-bats-$$-ok:*	*	|/bin/cat" \
			"create	user	keyfs-bats-$$-fail:*	*	/bin/false" \
			>"$RK_CONF"
	fi
	RK_TAG=keyfs-bats-$$
	export RK_CONF RK_TAG
}

teardown_file()
{
	if [[ -n ${RK_CONF:-} ]]; then
		rm -f "$RK_CONF"
	fi
}

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

# ctl FILE TEXT: write TEXT to .keyfs/FILE in one write(2); prints OK or
# the errno's name.
ctl() { kerrno write "$MNT/.keyfs/$1" "$2" w; }

# ctl_ok FILE TEXT: the write must succeed.
ctl_ok()
{
	run ctl "$@"
	assert_output OK
}

near()
{
	(($1 >= $2 - 2 && $1 <= $2 + 2)) ||
		fail "expected about $2, got $1"
}

# chain ROOT N: keyrings ROOT/r1/r2/.../rN; prints the deepest path.
chain()
{
	local p=$1 i
	for ((i = 1; i <= $2; i++)); do
		p=$p/r$i
		mkdir "$p" || return 1
	done
	printf '%s\n' "$p"
}

@test ".keyfs lists the control files" {
	run bash -c 'ls -A "$MNT/.keyfs" | LC_ALL=C sort'
	assert_success
	local f
	for f in revoke invalidate link unlink setperm chown timeout clear \
		 request restrict keys key-users supports; do
		assert_line "$f"
	done
}

@test "command files are write-only, report files read-only" {
	run kerrno read "$MNT/.keyfs/revoke"
	refute_output OK
	run kerrno write "$MNT/.keyfs/keys" x w
	refute_output OK
	run kerrno write "$MNT/.keyfs/supports" x w
	refute_output OK
}

@test "revoke: the key's state is revoked and reading it EKEYREVOKED" {
	echo v >"$MNT/session/k"
	ctl_ok revoke session/k
	assert_equal "$(xget state "$MNT/session/k")" revoked
	run kerrno read "$MNT/session/k"
	assert_output EKEYREVOKED
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl rdescribe "$(ino "$MNT/session/k")"
		assert_failure
		assert_output --partial revoked
	fi
}

@test "revoke with a trailing newline, by #SERIAL and by absolute path" {
	echo v >"$MNT/session/a"
	echo v >"$MNT/session/b"
	echo v >"$MNT/session/c"
	echo session/a >"$MNT/.keyfs/revoke"
	ctl_ok revoke "#$(ino "$MNT/session/b")"
	ctl_ok revoke "$MNT/session/c"
	local k
	for k in a b c; do
		assert_equal "$(xget state "$MNT/session/$k")" revoked
	done
}

@test "revoke: bad syntax is EINVAL and nothing happens" {
	echo v >"$MNT/session/k"
	local t
	for t in 'session/k session/k' '#' '#0' '#12x' '#-1' '@x' \
		 '/elsewhere/k' 'session/../k' 'session/k
session/k' '
'; do
		run ctl revoke "$t"
		assert_output EINVAL
	done
	assert_equal "$(xget state "$MNT/session/k")" valid
}

@test "revoke: an unknown key is ENOKEY or ENOENT" {
	run ctl revoke session/nosuch
	assert_output --regexp '^(ENOKEY|ENOENT)$'
	run ctl revoke '#2147483000'
	assert_output ENOKEY
}

@test "a description with a space is written %20" {
	echo v >"$MNT/session/a b"
	ctl_ok revoke 'session/a%20b'
	assert_equal "$(xget state "$MNT/session/a b")" revoked
}

@test "invalidate: the key goes away" {
	echo v >"$MNT/session/k"
	local s
	s=$(ino "$MNT/session/k")
	ctl_ok invalidate session/k
	eventually ls_lacks "$MNT/session" k
	if [[ $KEYFS_BACKEND == kernel ]]; then
		eventually bash -c "! keyctl rdescribe $s"
	fi
	run ctl invalidate 'session/k x'
	assert_output EINVAL
}

@test "link and unlink a key: #SERIAL, @s and paths" {
	mkdir "$MNT/session/ring"
	echo v >"$MNT/session/ring/k"
	local s
	s=$(ino "$MNT/session/ring/k")
	ctl_ok link "#$s @s"
	assert_equal "$(ino "$MNT/session/k")" "$s"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		klinks @s "$s"
	fi
	ctl_ok unlink "session/ring/k session/ring"
	ls_lacks "$MNT/session/ring" k
	ctl_ok link "$MNT/session/k $MNT/session/ring"
	assert_equal "$(ino "$MNT/session/ring/k")" "$s"
	ctl_ok unlink "#$s @s"
	ls_lacks "$MNT/session" k
	assert_equal "$(cat "$MNT/session/ring/k")" v
}

@test "link and unlink a keyring into another (hard links to directories cannot)" {
	mkdir "$MNT/session/a" "$MNT/session/b"
	echo v >"$MNT/session/a/inner"
	run kerrno link "$MNT/session/a" "$MNT/session/b/a"
	refute_output OK
	ctl_ok link "session/a session/b"
	[ -d "$MNT/session/b/a" ]
	assert_equal "$(ino "$MNT/session/b/a")" "$(ino "$MNT/session/a")"
	assert_equal "$(cat "$MNT/session/b/a/inner")" v
	ctl_ok unlink "session/a session/b"
	ls_lacks "$MNT/session/b" a
	[ -d "$MNT/session/a" ]
}

@test "names cached by the kernel follow link, unlink, invalidate and clear at once" {
	# Long timeouts: only keyfs telling the kernel can make these pass.
	keyfs_unmount
	keyfs_mount -o entry_timeout=600,attr_timeout=600
	mkdir "$MNT/session/ring" "$MNT/session/other"
	echo old >"$MNT/session/ring/k"
	echo new >"$MNT/session/other/k"
	echo 1 >"$MNT/session/ring/a"
	echo 2 >"$MNT/session/ring/gone"
	local new
	new=$(ino "$MNT/session/other/k")
	stat "$MNT/session/ring/k" "$MNT/session/ring/a" "$MNT/session/ring/gone" >/dev/null
	ctl_ok invalidate session/ring/gone
	eventually test ! -e "$MNT/session/ring/gone"
	ctl_ok link "session/other/k session/ring"
	eventually output_is "$new" ino "$MNT/session/ring/k"
	ctl_ok unlink "session/ring/k session/ring"
	eventually test ! -e "$MNT/session/ring/k"
	ctl_ok clear session/ring
	eventually test ! -e "$MNT/session/ring/a"
	assert_equal "$(cat "$MNT/session/other/k")" new
}

@test "link and unlink: bad syntax and unknown keys change nothing" {
	mkdir "$MNT/session/ring"
	echo v >"$MNT/session/k"
	local t
	for t in session/k 'session/k session/ring extra' '. session/ring' \
		 'session/k #0'; do
		run ctl link "$t"
		assert_output EINVAL
	done
	run ctl link "session/k session/nosuch"
	assert_output --regexp '^(ENOKEY|ENOENT)$'
	run ctl link "session/nosuch session/ring"
	assert_output --regexp '^(ENOKEY|ENOENT)$'
	ls_lacks "$MNT/session/ring" k
	run ctl unlink "session/k"
	assert_output EINVAL
	run ctl unlink "session/k session/ring"
	assert_output --regexp '^(ENOKEY|ENOENT)$'
	ls_has "$MNT/session" k
}

@test "link: a cycle is EDEADLK" {
	mkdir -p "$MNT/session/a/b"
	run ctl link "session/a session/a/b"
	assert_output EDEADLK
	run ctl link "session/a session/a"
	assert_output EDEADLK
	ls_lacks "$MNT/session/a/b" a
}

@test "link: nesting deeper than 6 is ELOOP" {
	mkdir "$MNT/session/a" "$MNT/session/b" "$MNT/session/c"
	chain "$MNT/session/a" 6 >/dev/null
	# six keyrings below a: linking a under b is still allowed
	ctl_ok link "session/a session/b"
	ctl_ok unlink "session/a session/b"
	# the seventh below c is linked in: mkdir there is out of the
	# possession search's reach (ELOOP, posix3.bats)
	local p
	p=$(chain "$MNT/session/c" 6)
	mkdir "$MNT/session/x"
	ctl_ok link "session/x ${p#"$MNT"/}"
	run ctl link "session/c session/b"
	assert_output ELOOP
	ls_lacks "$MNT/session/b" c
}

@test "setperm" {
	echo v >"$MNT/session/k"
	ctl_ok setperm "session/k 0x3f030000"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f030000
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(keyctl rdescribe "$(ino "$MNT/session/k")" | cut -d';' -f4)" 3f030000
	fi
	local t
	for t in session/k 'session/k zz' 'session/k 0x100000000' \
		 'session/k -1' 'session/k 0x3f010000 x'; do
		run ctl setperm "$t"
		assert_output EINVAL
	done
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f030000
}

@test "chown" {
	echo v >"$MNT/session/k"
	# stat may answer from the kernel's attribute cache for a moment
	ctl_ok chown "session/k 12345"
	eventually output_is 12345 stat -c %u "$MNT/session/k"
	ctl_ok chown "session/k 12345:23456"
	eventually output_is 12345:23456 stat -c %u:%g "$MNT/session/k"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl rdescribe "$(ino "$MNT/session/k")"
		assert_output --regexp '^user;12345;23456;'
	fi
	local t
	for t in session/k 'session/k x' 'session/k 1:' 'session/k :1' \
		 'session/k -1' 'session/k 1:2:3'; do
		run ctl chown "$t"
		assert_output EINVAL
	done
}

@test "timeout sets the expiry; 0 clears it" {
	echo v >"$MNT/session/k"
	local now
	now=$(date +%s)
	ctl_ok timeout "session/k 100"
	near "$(xget expiry "$MNT/session/k")" $((now + 100))
	ctl_ok timeout "session/k 0"
	assert_equal "$(xget expiry "$MNT/session/k")" 0
	local t
	for t in session/k 'session/k +5' 'session/k -5' 'session/k 5s' \
		 'session/k 99999999999'; do
		run ctl timeout "$t"
		assert_output EINVAL
	done
	assert_equal "$(xget expiry "$MNT/session/k")" 0
}

@test "clear empties a keyring and keeps it" {
	mkdir "$MNT/session/ring" "$MNT/session/ring/sub"
	echo 1 >"$MNT/session/ring/a"
	echo 2 >"$MNT/session/ring/b"
	ctl_ok clear session/ring
	run ls -A "$MNT/session/ring"
	assert_success
	assert_output ''
	[ -d "$MNT/session/ring" ]
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl rlist "$(ino "$MNT/session/ring")"
		assert_output ''
	fi
	run ctl clear 'session/ring x'
	assert_output EINVAL
}

@test "clear on a key that is not a keyring fails" {
	echo v >"$MNT/session/k"
	run ctl clear session/k
	refute_output OK
	assert_equal "$(cat "$MNT/session/k")" v
}

@test "restrict: a keyring restricted to nothing refuses links" {
	mkdir "$MNT/session/r"
	echo v >"$MNT/session/k"
	ctl_ok restrict session/r
	run ctl link "session/k session/r"
	assert_output EPERM
	ls_lacks "$MNT/session/r" k
	run ctl restrict 'session/r a b c'
	assert_output EINVAL
}

@test "request without a callout finds a key and links it into the keyring" {
	echo v >"$MNT/session/k"
	mkdir "$MNT/session/dest"
	ctl_ok request "user k - session/dest"
	assert_equal "$(ino "$MNT/session/dest/k")" "$(ino "$MNT/session/k")"
	ctl_ok request "user k"
	run ctl request "user nosuch"
	assert_output ENOKEY
	run ctl request "user nosuch -"
	assert_output ENOKEY
	ls_lacks "$MNT/session" nosuch
	local t
	for t in user 'user k - session/dest extra'; do
		run ctl request "$t"
		assert_output EINVAL
	done
}

# The memory backend's callout, run as PROGRAM TYPE DESCRIPTION
# CALLOUT-INFO UID GID: the payload is what it prints, here the callout
# information; it fails for a description with "fail" in it.
make_callout()
{
	local p=$BATS_TEST_TMPDIR/callout.sh
	cat >"$p" <<'EOF'
#!/bin/sh
case $2 in
*fail*) exit 1 ;;
esac
printf '%s' "$3"
EOF
	chmod +x "$p"
	printf '%s\n' "$p"
}

# remount_with_callout: the memory backend mounted with request_key=.
remount_with_callout()
{
	local p
	p=$(make_callout)
	keyfs_unmount
	keyfs_mount -o "request_key=$p"
}

@test "memory: request with a callout instantiates the key" {
	skip_unless_memory
	remount_with_callout
	ctl_ok request "user $RK_TAG-ok:1 hello%20info"
	assert_equal "$(cat "$MNT/session/$RK_TAG-ok:1")" "hello info"
	assert_equal "$(xget state "$MNT/session/$RK_TAG-ok:1")" valid
}

@test "memory: a failing callout leaves a negative key" {
	skip_unless_memory
	remount_with_callout
	run ctl request "user $RK_TAG-fail:1 info"
	assert_output ENOKEY
	assert_equal "$(xget state "$MNT/session/$RK_TAG-fail:1")" negative
	run kerrno read "$MNT/session/$RK_TAG-fail:1"
	assert_output ENOKEY
}

@test "kernel: request with a callout runs request-key" {
	skip_unless_kernel
	[[ -n $RK_CONF ]] || skip "no /sbin/request-key (keyutils) or /etc/request-key.d"
	ctl_ok request "user $RK_TAG-ok:1 hello%20info"
	assert_equal "$(cat "$MNT/session/$RK_TAG-ok:1")" "hello info"
	assert_equal "$(xget state "$MNT/session/$RK_TAG-ok:1")" valid
	klinks @s "$(ino "$MNT/session/$RK_TAG-ok:1")"
}

@test "kernel: a failing request-key program leaves a negative key" {
	skip_unless_kernel
	[[ -n $RK_CONF ]] || skip "no /sbin/request-key (keyutils) or /etc/request-key.d"
	run ctl request "user $RK_TAG-fail:1 info"
	assert_output ENOKEY
	assert_equal "$(xget state "$MNT/session/$RK_TAG-fail:1")" negative
	run kerrno read "$MNT/session/$RK_TAG-fail:1"
	assert_output ENOKEY
}

PROC_KEYS_RE='^[0-9a-f]{8} [I-][R-][D-][Q-][U-][N-][i-] +[0-9]+ +(perm|expd|[0-9]+[smhdw]) [0-9a-f]{8} +[0-9]+ +[0-9]+ [^ ]+ +[^ ].*$'

@test "keys reads in the format of /proc/keys" {
	echo -n hello >"$MNT/session/k"
	local s hex
	s=$(ino "$MNT/session/k")
	hex=$(printf %08x "$s")
	run cat "$MNT/.keyfs/keys"
	assert_success
	local line
	while IFS= read -r line; do
		[[ $line =~ $PROC_KEYS_RE ]] || fail "not a /proc/keys line: $line"
	done <<<"$output"
	assert_line --regexp "^$hex I--Q--- +[0-9]+ perm 3f070202 +$(id -u) +$(id -g) user +k: 5\$"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		# the same line as the kernel's but for the usage count
		local mine theirs
		mine=$(grep "^$hex " "$MNT/.keyfs/keys" | awk '{ $3 = ""; print }')
		theirs=$(grep "^$hex " /proc/keys | awk '{ $3 = ""; print }')
		assert_equal "$mine" "$theirs"
	fi
}

@test "keys shows a keyring's link count and a timeout" {
	mkdir "$MNT/session/ring"
	echo v >"$MNT/session/ring/k"
	echo v >"$MNT/session/t"
	echo "session/t 600" >"$MNT/.keyfs/timeout"
	run cat "$MNT/.keyfs/keys"
	assert_line --regexp "^$(printf %08x "$(ino "$MNT/session/ring")") .* keyring +ring: 1\$"
	assert_line --regexp "^$(printf %08x "$(ino "$MNT/session/t")") [^ ]+ +[0-9]+ +(9|10)m "
}

@test "key-users reads in the format of /proc/key-users" {
	echo v >"$MNT/session/k"
	run cat "$MNT/.keyfs/key-users"
	assert_success
	local line
	while IFS= read -r line; do
		[[ $line =~ ^\ *[0-9]+:\ +[0-9]+\ [0-9]+/[0-9]+\ [0-9]+/[0-9]+\ [0-9]+/[0-9]+$ ]] ||
			fail "not a /proc/key-users line: $line"
	done <<<"$output"
	assert_line --regexp "^ *$(id -u): "
}

@test "supports lists have_ lines as keyctl supports does" {
	run cat "$MNT/.keyfs/supports"
	assert_success
	local line
	while IFS= read -r line; do
		[[ $line =~ ^have_[a-z_]+=[01]$ ]] || fail "not a supports line: $line"
	done <<<"$output"
	assert_line have_key_invalidate=1
	assert_line have_restrict_keyring=1
	assert_line have_move_key=1
}
