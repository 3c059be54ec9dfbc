#!/usr/bin/env bats
# fidelity.bats: keyfs answers as keyctl does (issue 16): lookups, staleness after control commands, emptying, hidden links, the session keyring.

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

@test "16.1: a lookup in a keyring without search is EACCES, for the mounter too" {
	mkdir "$MNT/session/d"
	echo v >"$MNT/session/d/x"
	setfattr -n user.keyfs.perm -v \"0x37010000\" "$MNT/session/d"
	run kerrno stat "$MNT/session/d/x"
	assert_output EACCES
	run kerrno stat "$MNT/session/d/nonexist"
	assert_output EACCES
}

@test "16.1: a lookup under a revoked keyring is EKEYREVOKED" {
	mkdir "$MNT/session/r"
	echo v >"$MNT/session/r/x"
	echo session/r >"$MNT/.keyfs/revoke"
	run kerrno stat "$MNT/session/r/y"
	assert_output EKEYREVOKED
	run kerrno stat "$MNT/session/r/x"
	assert_output EKEYREVOKED
}

@test "16.4: emptying a key by O_TRUNC fails at close with EINVAL and keeps the payload" {
	echo keep >"$MNT/session/k"
	# O_TRUNC and no write: the close commits an empty payload, which the
	# kernel refuses; close(2) gives its error (shells do not look at it).
	run kerrno open "$MNT/session/k" wt
	assert_output EINVAL
	assert_equal "$(cat "$MNT/session/k")" keep
}
