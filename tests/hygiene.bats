#!/usr/bin/env bats
# hygiene.bats: no payload appears in keyfs's -d debug output, its log or its error lines, whatever is done with it.

load lib/keyfs

setup()
{
	STORE=$BATS_TEST_TMPDIR/keys.json
	if [[ $KEYFS_BACKEND == memory ]]; then
		keyfs_mount -d -o "store=$STORE"
	else
		keyfs_mount -d
	fi
	# markers: the payload text, and the forms it could leak in
	M1=MARKERpayloadONE$$x
	M2=MARKERpayloadTWO$$y
	M3=MARKERbigPAYLOAD$$z
}

teardown() { keyfs_unmount; }

# leaks FILE: print the lines of FILE with a marker in any plain form
# (text, base64, hex).
leaks()
{
	local m pat=()
	for m in "$M1" "$M2" "$M3"; do
		pat+=(-e "$m" -e "$(printf %s "$m" | base64 | tr -d '=\n' | cut -c1-16)"
		      -e "$(printf %s "$m" | od -An -tx1 | tr -d ' \n' | cut -c1-24)")
	done
	grep -aF "${pat[@]}" -- "$1" || true
}

@test "payloads written, read, renamed, copied, refused and controlled never reach the debug log" {
	local s
	# writes: new key, rewrite, append, a keyring's key, a large one
	printf %s "$M1" >"$MNT/session/a"
	printf %s "$M2" >"$MNT/session/a"
	printf %s "$M1" >>"$MNT/session/a"
	mkdir "$MNT/session/ring"
	printf %s "$M2" >"$MNT/session/ring/b"
	{ for ((s = 0; s < 300; s++)); do printf %s "$M3"; done; } >"$MNT/session/big"
	# reads, through every path
	s=$(ino "$MNT/session/a")
	assert_equal "$(cat "$MNT/session/a")" "$M2$M1"
	assert_equal "$(cat "$MNT/by-id/$s")" "$M2$M1"
	cat "$MNT/session/big" >/dev/null
	dd if="$MNT/session/ring/b" bs=3 skip=1 status=none >/dev/null
	# rename (the payload is copied into a new key), rename over, link
	mv "$MNT/session/a" "$MNT/session/a2"
	mv "$MNT/session/a2" "$MNT/session/ring/b" 2>/dev/null || true
	cp "$MNT/session/ring/b" "$MNT/session/copy"
	# xattrs, and values that hold a marker where a value is refused
	getfattr -d -m - "$MNT/session/copy" >/dev/null
	setfattr -n user.keyfs.perm -v 3f3f0000 "$MNT/session/copy"
	run kerrno setxattr "$MNT/session/copy" user.keyfs.perm "$M1"
	assert_output EINVAL
	run kerrno setxattr "$MNT/session/copy" user.keyfs.expiry "$M2"
	assert_output EINVAL
	run kerrno setxattr "$MNT/session/copy" user.other "$M1"
	refute_output OK
	# refused payloads: too big, and into a key that is revoked
	run kerrno writesize "$MNT/session/huge" 40000
	assert_output EFBIG
	printf %s "$M1" >"$MNT/session/rev"
	echo session/rev >"$MNT/.keyfs/revoke"
	run kerrno write "$MNT/session/rev" "$M2"
	refute_output OK
	# control files: good commands, and bad lines that carry a marker
	echo session/copy 3600 >"$MNT/.keyfs/timeout"
	run kerrno write "$MNT/.keyfs/setperm" "session/copy $M1"
	assert_output EINVAL
	run kerrno write "$MNT/.keyfs/link" "$M2 session"
	refute_output OK
	run kerrno write "$MNT/.keyfs/revoke" "$M1"
	refute_output OK
	cat "$MNT/.keyfs/keys" >/dev/null
	# remove everything
	rm -f "$MNT/session/copy" "$MNT/session/big" "$MNT/session/rev"
	rm -rf "$MNT/session/ring"
	keyfs_unmount
	# -d logged: the requests are there, the payloads are not
	grep -q 'WRITE' "$KEYFS_LOG" || fail "no debug output in $KEYFS_LOG"
	assert_equal "$(leaks "$KEYFS_LOG")" ""
}

@test "a failing store save logs no payload (memory)" {
	skip_unless_memory
	printf %s "$M1" >"$MNT/session/k"
	chmod 500 "$BATS_TEST_TMPDIR"
	# root ignores mode bits: make the store's directory unwritable another way
	chattr +i "$BATS_TEST_TMPDIR" 2>/dev/null || skip "no chattr +i here"
	# and its journal, which keyfs appends to through an open descriptor
	chattr +i "$STORE.journal"
	run kerrno write "$MNT/session/k2" "$M2"
	chattr -i "$STORE.journal"
	chattr -i "$BATS_TEST_TMPDIR"
	chmod 700 "$BATS_TEST_TMPDIR"
	refute_output OK
	keyfs_unmount
	assert_equal "$(leaks "$KEYFS_LOG")" ""
}
