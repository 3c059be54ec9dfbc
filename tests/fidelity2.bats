#!/usr/bin/env bats
# fidelity2.bats: more of keyfs answering as keyctl does (issue 16): stale names after control commands, unviewable keys, displacement, revoked keys, the memory session keyring.

load lib/keyfs

setup() { keyfs_mount -o entry_timeout=30; }
teardown() { keyfs_unmount; }

# r1/r3 is a keyring also linked from session/; every name is looked up
# once so the kernel caches it (for 30 s here).
make_r1_r3()
{
	mkdir "$MNT/session/r1" "$MNT/session/r1/r3"
	echo v >"$MNT/session/r1/r3/k"
	echo session/r1/r3 session >"$MNT/.keyfs/link"
	cat "$MNT/session/r1/r3/k" "$MNT/session/r3/k" >/dev/null
	stat "$MNT/session/r1/r3/nonexist" 2>/dev/null || true
}

@test "16.3: after revoke, paths through the revoked keyring fail at once" {
	make_r1_r3
	echo session/r1 >"$MNT/.keyfs/revoke"
	run kerrno stat "$MNT/session/r1/r3/k"
	assert_output EKEYREVOKED
	run kerrno open "$MNT/session/r1/r3/k" r
	assert_output EKEYREVOKED
	run kerrno open "$MNT/session/r1/r3/k" w
	assert_output EKEYREVOKED
	run kerrno open "$MNT/session/r1/r3/nonexist" wc
	assert_output EKEYREVOKED
	# The same keyring by its other name is not under the revoked one.
	assert_equal "$(timeout 20 cat "$MNT/session/r3/k")" v
}

@test "16.3: after setperm without search, paths through the keyring fail at once" {
	make_r1_r3
	echo 'session/r1 0x37370000' >"$MNT/.keyfs/setperm"
	run kerrno stat "$MNT/session/r1/r3/k"
	assert_output EACCES
	run kerrno open "$MNT/session/r1/r3/k" r
	assert_output EACCES
}

@test "16.3: invalidate by an escaped path drops the real name from the cache" {
	mkdir "$MNT/session/r1"
	echo v >"$MNT/session/r1/r 3"
	cat "$MNT/session/r1/r 3" >/dev/null
	echo 'session/r1/r%203' >"$MNT/.keyfs/invalidate"
	run kerrno stat "$MNT/session/r1/r 3"
	assert_output ENOENT
	ls_lacks "$MNT/session/r1" "r 3"
}

@test "16.3: invalidate by serial drops the key's name in its keyring" {
	echo v >"$MNT/session/gone"
	cat "$MNT/session/gone" >/dev/null
	echo "#$(ino "$MNT/session/gone")" >"$MNT/.keyfs/invalidate"
	run kerrno stat "$MNT/session/gone"
	assert_output ENOENT
}

@test "16.8: ln onto an existing name is EEXIST; .keyfs/link displaces it" {
	echo a >"$MNT/session/x"
	mkdir "$MNT/session/d"
	echo b >"$MNT/session/d/x"
	cat "$MNT/session/x" >/dev/null
	run kerrno link "$MNT/session/d/x" "$MNT/session/x"
	assert_output EEXIST
	assert_equal "$(cat "$MNT/session/x")" a
	echo session/d/x session >"$MNT/.keyfs/link"
	assert_equal "$(cat "$MNT/session/x")" b
	assert_equal "$(ino "$MNT/session/x")" "$(ino "$MNT/session/d/x")"
}

@test "16.8: a revoked logon key reads as EOPNOTSUPP, as keyctl read says" {
	echo -n pw >"$MNT/session/%logon:svc:a"
	echo session/%logon:svc:a >"$MNT/.keyfs/revoke"
	run kerrno read "$MNT/session/%logon:svc:a"
	assert_output EOPNOTSUPP
	echo v >"$MNT/session/u"
	echo session/u >"$MNT/.keyfs/revoke"
	run kerrno read "$MNT/session/u"
	assert_output EKEYREVOKED
}

@test "16.8: a key revoked behind keyfs's back before keyfs saw it is listed" {
	skip_unless_kernel
	local k
	k=$(keyctl add user early v @s)
	keyctl revoke "$k"
	ls_has "$MNT/session" early
	run kerrno read "$MNT/session/early"
	assert_output EKEYREVOKED
	rm "$MNT/session/early"
	! klinks @s "$k"
}
