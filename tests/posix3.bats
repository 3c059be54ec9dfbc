#!/usr/bin/env bats
# posix3.bats: file-system behaviour users and tools expect (issue 11, items 4, 6, 7, 8, 10): sizes of unreadable keys, rmdir of unviewable keyrings, the depth limit, search on the whole path, modes at create.

load lib/keyfs
load lib/users

setup_file()
{
	second_user_create kfspx3
}

teardown_file()
{
	second_user_remove
}

setup()
{
	keyfs_mount -o allow_other
	mount_reachable
}

teardown() { keyfs_unmount; }

@test "a key the caller may view but not read has size 0, as the kernel says" {
	need_u2
	printf 'secret' >"$MNT/session/k"
	xset perm 0x3f010009 "$MNT/session/k"
	# the kernel caches attributes per inode, not per caller: ask as the
	# second user first
	run as2 stat -c %s "$MNT/session/k"
	assert_success
	assert_output 0
}
