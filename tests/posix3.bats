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
	xset perm 0x3f030009 "$MNT/session"
	printf 'secret' >"$MNT/session/k"
	xset perm 0x3f010009 "$MNT/session/k"
	# the kernel caches attributes per inode, not per caller: ask as the
	# second user first
	run as2 stat -c %s "$MNT/session/k"
	assert_success
	assert_output 0
}

@test "rmdir of an empty keyring the caller may not view succeeds, as keyctl unlink does" {
	mkdir "$MNT/session/d"
	xset perm 0x3e3e0000 "$MNT/session/d"
	run kerrno rmdir "$MNT/session/d"
	assert_output OK
	run kerrno stat "$MNT/session/d"
	assert_output ENOENT
}

@test "rmdir of a keyring the caller may neither view nor read: as keyctl unlink, write on the parent suffices" {
	mkdir "$MNT/session/d"
	echo v >"$MNT/session/d/k"
	xset perm 0x34340000 "$MNT/session/d"
	run kerrno rmdir "$MNT/session/d"
	assert_output OK
	run kerrno stat "$MNT/session/d"
	assert_output ENOENT
}

@test "rmdir of a user key the caller may not view is ENOTDIR" {
	echo v >"$MNT/session/k"
	xset perm 0x3e3e0000 "$MNT/session/k"
	run kerrno rmdir "$MNT/session/k"
	assert_output ENOTDIR
}

@test "rmdir of a keyring the caller may read but not view still refuses a non-empty one" {
	mkdir "$MNT/session/d"
	echo v >"$MNT/session/d/k"
	xset perm 0x3e3e0000 "$MNT/session/d"
	run kerrno rmdir "$MNT/session/d"
	assert_output ENOTEMPTY
}

@test "mkdir where the possession search cannot reach gives ELOOP and makes nothing" {
	local p=$MNT/session i
	for i in 1 2 3 4 5 6 7; do
		p=$p/d$i
		run kerrno mkdir "$p"
		assert_output OK
	done
	# 7 levels below session/: possessed, listed, written
	run kerrno listdir "$p"
	assert_output OK
	run kerrno mkdir "$p/d8"
	assert_output ELOOP
	run ls -A "$p"
	assert_output ""
	# a level higher, the same name is fine
	run kerrno mkdir "$MNT/session/d1/d8"
	assert_output OK
	run kerrno listdir "$MNT/session/d1/d8"
	assert_output OK
}

# u2 writes a new key in session/a/b: which needs search on session and a.
u2_create_in_ab()
{
	run as2_errno write "$MNT/session/a/b/$1" v
}

@test "creating in a/b without search on a is refused whether or not the mounter just walked the path" {
	need_u2
	mkdir "$MNT/session/a" "$MNT/session/a/b"
	xset perm 0x3f3f003f "$MNT/session/a/b"
	xset perm 0x3f3f0000 "$MNT/session/a"
	xset perm 0x3f3f0009 "$MNT/session"
	# warm: the mounter walked a/b a moment ago
	ls "$MNT/session/a/b" >/dev/null
	stat "$MNT/session/a/b" >/dev/null
	u2_create_in_ab k1
	assert_output EACCES
	# a listing of a readable a gives no way past its search either
	xset perm 0x3f3f0002 "$MNT/session/a"
	as2 ls "$MNT/session/a" >/dev/null 2>&1 || true
	u2_create_in_ab k2
	assert_output EACCES
	# cold: the same
	sleep 1.2
	u2_create_in_ab k3
	assert_output EACCES
	# with search on a, both ways work
	xset perm 0x3f3f0008 "$MNT/session/a"
	ls "$MNT/session/a/b" >/dev/null
	u2_create_in_ab k4
	assert_output OK
	sleep 1.2
	u2_create_in_ab k5
	assert_output OK
}

# The permission the store holds, asked past keyfs where it can be.
perm_of()
{
	if [[ $KEYFS_BACKEND == kernel ]]; then
		echo "0x$(keyctl rdescribe "$(ino "$1")" | cut -d';' -f4)"
	else
		xget perm "$1"
	fi
}

@test "the mode given at creat, open(O_CREAT), mknod and mkdir applies after the umask" {
	(umask 077 && echo v >"$MNT/session/a")
	assert_equal "$(perm_of "$MNT/session/a")" 0x3f070000
	# the owner class shows the possessor's search as x
	assert_equal "$(stat -c %a "$MNT/session/a")" 700
	(umask 022 && echo v >"$MNT/session/b")
	assert_equal "$(perm_of "$MNT/session/b")" 0x3f070202
	echo v | install -m 640 /dev/stdin "$MNT/session/c"
	assert_equal "$(perm_of "$MNT/session/c")" 0x3f070200
	assert_equal "$(cat "$MNT/session/c")" v
	run "$KEYFS_PY" -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600))' "$MNT/session/d"
	assert_success
	assert_equal "$(xget perm "$MNT/session/d")" 0x3f070000
	(umask 0 && "$KEYFS_PY" -c 'import os, stat, sys; os.mknod(sys.argv[1], stat.S_IFREG | 0o640)' "$MNT/session/e")
	assert_equal "$(xget perm "$MNT/session/e")" 0x3f070200
	(umask 022 && mkdir -m 700 "$MNT/session/r")
	assert_equal "$(perm_of "$MNT/session/r")" 0x3f0f0000
	(umask 022 && mkdir "$MNT/session/r2")
	assert_equal "$(perm_of "$MNT/session/r2")" 0x3f0f0a0a
	assert_equal "$(stat -c %a "$MNT/session/r2")" 755
	# no mode takes the possessor's view, search, link or setattr
	(umask 0 && "$KEYFS_PY" -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0))' "$MNT/session/z")
	echo v >"$MNT/session/z"
	assert_equal "$(perm_of "$MNT/session/z")" 0x39010000
	chmod 600 "$MNT/session/z"
	assert_equal "$(cat "$MNT/session/z")" v
}

@test "a pending entry shows the mode it was created with, and keeps it when written" {
	(umask 077 && touch "$MNT/session/p")
	assert_equal "$(xget state "$MNT/session/p")" pending
	assert_equal "$(xget perm "$MNT/session/p")" 0x3f070000
	echo v >"$MNT/session/p"
	assert_equal "$(perm_of "$MNT/session/p")" 0x3f070000
	# an existing key keeps its permission whatever mode an open gives
	(umask 0 && echo w >"$MNT/session/p")
	assert_equal "$(perm_of "$MNT/session/p")" 0x3f070000
}

@test "another user's new key and keyring take their mode, and that user may read, write and chmod them" {
	need_u2
	xset perm 0x3f030009 "$MNT/session"
	mkdir "$MNT/session/ring"
	xset perm 0x3f3f003f "$MNT/session/ring"
	# It will not possess them (only the mounter's uid does, SPEC 5), so
	# its owner class takes the possessor's share: view, link, setattr.
	run as2 sh -c "umask 077 && echo v >'$MNT/session/ring/k' && cat '$MNT/session/ring/k'"
	assert_success
	assert_output v
	assert_equal "$(perm_of "$MNT/session/ring/k")" 0x3f370000
	assert_equal "$(stat -c %u "$MNT/session/ring/k")" "$U2UID"
	run as2 sh -c "chmod 640 '$MNT/session/ring/k' && echo w >>'$MNT/session/ring/k' && cat '$MNT/session/ring/k'"
	assert_success
	assert_output $'v\nw'
	assert_equal "$(perm_of "$MNT/session/ring/k")" 0x3f370200
	# the mounter still possesses it
	assert_equal "$(cat "$MNT/session/ring/k")" $'v\nw'
	run as2 sh -c "umask 022 && mkdir '$MNT/session/ring/r' && echo x >'$MNT/session/ring/r/y' && cat '$MNT/session/ring/r/y'"
	assert_success
	assert_output x
	assert_equal "$(perm_of "$MNT/session/ring/r")" 0x3f3f0a0a
	assert_equal "$(perm_of "$MNT/session/ring/r/y")" 0x3f370202
	# a rename to a new name makes a new key that keeps all of that
	run as2 mv "$MNT/session/ring/k" "$MNT/session/ring/k2"
	assert_success
	assert_equal "$(perm_of "$MNT/session/ring/k2")" 0x3f370200
	run as2 cat "$MNT/session/ring/k2"
	assert_output $'v\nw'
	# a pending entry shows what the key will get
	run as2 sh -c "umask 077 && touch '$MNT/session/ring/p' && getfattr --absolute-names --only-values -n user.keyfs.perm '$MNT/session/ring/p'"
	assert_output 0x3f370000
}

@test "a user may create in a keyring it may write but not view, as add_key(2) lets it" {
	need_u2
	xset perm 0x3f030009 "$MNT/session"
	mkdir "$MNT/session/ring"
	xset perm 0x3f3f000c "$MNT/session/ring"	# others: write, search
	run as2 sh -c "echo v >'$MNT/session/ring/k' && cat '$MNT/session/ring/k'"
	assert_success
	assert_output v
	run as2_errno mkdir "$MNT/session/ring/r"
	assert_output OK
	# without write, refused at the create, not at the close
	xset perm 0x3f3f0008 "$MNT/session/ring"
	run as2_errno open "$MNT/session/ring/k3" wc
	assert_output EACCES
}

@test "cp -p and tar -p by a user keep what they may and skip the ownership they may not, as on any file system" {
	need_u2
	xset perm 0x3f030009 "$MNT/session"
	mkdir "$MNT/session/ring"
	xset perm 0x3f3f003f "$MNT/session/ring"
	local src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src"
	echo v >"$src/f"	# root's: the user may not give the key to root
	chmod 644 "$src/f"
	chmod 755 "$BATS_TEST_TMPDIR" "$src"
	run as2 cp -p "$src/f" "$MNT/session/ring/f"
	assert_success
	assert_output ''
	assert_equal "$(stat -c %u "$MNT/session/ring/f")" "$U2UID"
	assert_equal "$(cat "$MNT/session/ring/f")" v
	run as2_errno chown "$MNT/session/ring/f" 0 0
	assert_output EPERM
}
