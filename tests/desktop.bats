#!/usr/bin/env bats
# desktop.bats: what a desktop's file layer (GIO, as file managers use it) sees of a keyfs mount.

load lib/keyfs

setup()
{
	command -v gio >/dev/null 2>&1 || skip "gio is not installed (Debian: libglib2.0-bin)"
	keyfs_mount
	OUT=$BATS_TEST_TMPDIR/out
	mkdir -p "$OUT"
}

teardown()
{
	keyfs_unmount
}

# GIO without a desktop session: local files only, bounded in time, and
# holding no bats file descriptor.
g()
{
	GIO_USE_VFS=local timeout 30 gio "$@" 3>&- </dev/null
}

@test "gio list shows the tree and a keyring's keys, with their sizes" {
	printf 'gio-visible' | cat > "$MNT/session/api-token"
	run g list "$MNT"
	assert_success
	assert_line session
	assert_line user
	assert_line by-id
	run g list -l "$MNT/session"
	assert_success
	assert_line --regexp $'^api-token\t11\t\\(regular\\)'
}

@test "gio info shows a key's size, mode, owner and keyfs attributes" {
	printf 'gio-visible' | cat > "$MNT/session/api-token"
	run g info "$MNT/session/api-token"
	assert_success
	assert_line --partial "standard::size: 11"
	assert_line --partial "unix::mode: $((0100744))"
	assert_line --partial "unix::inode: $(ino "$MNT/session/api-token")"
	assert_line --partial "owner::user: $(id -un)"
	assert_line --partial "xattr::keyfs.type: user"
	assert_line --partial "xattr::keyfs.perm: 0x3f070202"
	assert_line --partial "xattr::keyfs.state: valid"
	assert_line --partial "unix mount: $KEYFS_BACKEND $MNT fuse.keyfs"
}

@test "gio info shows a keyring as a directory" {
	mkdir "$MNT/session/work"
	run g info -a 'standard::type,xattr::*' "$MNT/session/work"
	assert_success
	assert_line --partial "standard::type: 2"
	assert_line --partial "xattr::keyfs.type: keyring"
}

@test "gio copy of a key out of the mount keeps its payload" {
	head -c 3000 /dev/urandom | base64 -w0 > "$BATS_TEST_TMPDIR/payload"
	cat "$BATS_TEST_TMPDIR/payload" > "$MNT/session/secret"
	run g copy "$MNT/session/secret" "$OUT/"
	assert_success
	cmp "$BATS_TEST_TMPDIR/payload" "$OUT/secret"
}

@test "gio copy of a file into the mount makes a key" {
	printf 'copied in' > "$BATS_TEST_TMPDIR/in"
	run g copy "$BATS_TEST_TMPDIR/in" "$MNT/session/copied"
	assert_success
	assert_equal "$(cat "$MNT/session/copied")" "copied in"
	run getfattr --absolute-names --only-values -n user.keyfs.state "$MNT/session/copied"
	assert_output valid
}
