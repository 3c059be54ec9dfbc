#!/usr/bin/env bats
# posix.bats: file-system behaviour users and tools expect (issue 11): sizes of open files, all-or-nothing setattr, modes at create, chmod that keeps possession, rename by another user.

load lib/keyfs
load lib/users

# A second user, made for this file and removed after it.
setup_file()
{
	second_user_create kfsposix
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

kperm() { keyctl rdescribe "$1" | cut -d';' -f4; }

# The permission the store holds, asked past keyfs where it can be.
perm_of()
{
	if [[ $KEYFS_BACKEND == kernel ]]; then
		echo "0x$(kperm "$1")"
	else
		xget perm "$2"
	fi
}

@test "fstat and lseek(SEEK_END) of an open file see its unflushed writes" {
	run "$KEYFS_PY" -c '
import os, sys
p = sys.argv[1]
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
os.write(fd, b"abc")
print(os.fstat(fd).st_size, os.lseek(fd, 0, os.SEEK_END), end=" ")
os.write(fd, b"def")
os.close(fd)
fd = os.open(p, os.O_RDWR)
os.lseek(fd, 0, os.SEEK_END)
os.write(fd, b"gh")
print(os.fstat(fd).st_size, end=" ")
os.close(fd)
print(open(p).read())
' "$MNT/session/k"
	assert_success
	assert_output "3 3 8 abcdefgh"
}

@test "truncate(2) of a created, never written entry succeeds and makes the key" {
	touch "$MNT/session/k"
	run kerrno truncate "$MNT/session/k" 5
	assert_output OK
	assert_equal "$(fsize "$MNT/session/k")" 5
	assert_equal "$(xget state "$MNT/session/k")" valid
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(keyctl pipe "$(ino "$MNT/session/k")" | od -An -tx1 | tr -d ' ')" 0000000000
	fi
}

@test "truncate(2) to 0 of a created entry leaves it pending and succeeds" {
	touch "$MNT/session/k"
	run kerrno truncate "$MNT/session/k" 0
	assert_output OK
	assert_equal "$(xget state "$MNT/session/k")" pending
}

@test "chmod that takes away the caller's possession succeeds and says so" {
	need_u2
	mkdir "$MNT/session/d"
	xset perm 0x3f3f0000 "$MNT/session/d"
	chown "$U2UID:$U2GID" "$MNT/session/d"
	# the mounter reaches d only as its possessor: a mode without x on
	# the owner class must not make it lose that, nor fail after changing
	run kerrno chmod "$MNT/session/d" 0644
	assert_output OK
	assert_equal "$(perm_of "$(ino "$MNT/session/d")" "$MNT/session/d")" 0x3f370202
}

@test "chmod 600 on a key keeps the possessor's view, search, link and setattr" {
	echo v >"$MNT/session/k"
	xset perm 0x3f010000 "$MNT/session/k"
	chmod 600 "$MNT/session/k"
	assert_equal "$(perm_of "$(ino "$MNT/session/k")" "$MNT/session/k")" 0x3f070000
	# still possessed: readable, and chmod works again
	assert_equal "$(cat "$MNT/session/k")" v
	chmod 640 "$MNT/session/k"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f070200
	chmod 000 "$MNT/session/k"
	assert_equal "$(xget perm "$MNT/session/k")" 0x39010000
	chmod 644 "$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" v
}

@test "chmod on a keyring: x is search for user, group and other" {
	mkdir "$MNT/session/ring"
	xset perm 0x3f010000 "$MNT/session/ring"
	chmod 751 "$MNT/session/ring"
	assert_equal "$(xget perm "$MNT/session/ring")" 0x3f0f0a08
	chmod 640 "$MNT/session/ring"
	assert_equal "$(xget perm "$MNT/session/ring")" 0x3f070200
	echo v >"$MNT/session/ring/k"
	assert_equal "$(cat "$MNT/session/ring/k")" v
}

@test "a second user who owns a keyring renames its key in it to a new name" {
	need_u2
	mkdir "$MNT/session/ring"
	echo v >"$MNT/session/ring/k"
	xset perm 0x3f3f0000 "$MNT/session/ring/k"
	xset perm 0x3f3f0000 "$MNT/session/ring"
	chown "$U2UID:$U2GID" "$MNT/session/ring/k" "$MNT/session/ring"
	# the second user walks session/: it needs search there
	xset perm 0x3f030009 "$MNT/session"
	run as2_errno rename "$MNT/session/ring/k" "$MNT/session/ring/k2"
	assert_output OK
	run kerrno stat "$MNT/session/ring/k"
	assert_output ENOENT
	assert_equal "$(cat "$MNT/session/ring/k2")" v
	assert_equal "$(stat -c %u "$MNT/session/ring/k2")" "$U2UID"
	# the new key keeps the old one's permission, set by its maker
	assert_equal "$(xget perm "$MNT/session/ring/k2")" 0x3f3f0000
	run as2 cat "$MNT/session/ring/k2"
	assert_output v
}
