#!/usr/bin/env bats
# tree.bats: the mount's top level (SPEC §2): keyring directories, @ links, by-id, search.

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

@test "the root lists the keyring directories, the @ links, by-id and .keyfs" {
	run bash -c 'ls -A "$MNT" | LC_ALL=C sort'
	assert_success
	assert_output "$(printf '%s\n' .keyfs @p @s @u @us by-id persistent \
		process session user user-session | LC_ALL=C sort)"
}

@test "the keyring entries of the root are directories" {
	local d
	for d in session user user-session process persistent by-id .keyfs; do
		run stat -c %F "$MNT/$d"
		assert_success
		assert_output directory
	done
}

@test "the @ entries are symlinks to the keyring directories" {
	assert_equal "$(readlink "$MNT/@s")" session
	assert_equal "$(readlink "$MNT/@u")" user
	assert_equal "$(readlink "$MNT/@us")" user-session
	assert_equal "$(readlink "$MNT/@p")" process
	[ -L "$MNT/@s" ]
	assert_equal "$(stat -L -c %i "$MNT/@s")" "$(ino "$MNT/session")"
	assert_equal "$(stat -L -c %i "$MNT/@u")" "$(ino "$MNT/user")"
}

@test "paths through the @ links read the link once, not once a path" {
	keyfs_unmount
	keyfs_mount -d
	local i
	for i in 1 2 3 4 5 6; do
		echo "$i" >"$MNT/@s/k$i"
		stat "$MNT/@s/k$i" >/dev/null
		cat "$MNT/@s/k$i" >/dev/null
	done
	ls -l "$MNT/@s/" >/dev/null
	assert_equal "$(requests_sent READLINK)" 1
}

@test "a key created through @s is in session" {
	echo x >"$MNT/@s/via-link"
	assert_equal "$(cat "$MNT/session/via-link")" x
}

@test "session is by-id of its own inode number" {
	local s
	s=$(ino "$MNT/session")
	[ "$s" -gt 0 ]
	run stat -c '%F %i' "$MNT/by-id/$s"
	assert_success
	assert_output "directory $s"
}

@test "kernel: the session directory's inode is the session keyring's serial" {
	skip_unless_kernel
	assert_equal "$(ino "$MNT/session")" "$(keyctl id @s)"
}

@test "kernel: user and user-session inodes are the user keyrings' serials" {
	skip_unless_kernel
	assert_equal "$(ino "$MNT/user")" "$(keyctl id @u)"
	assert_equal "$(ino "$MNT/user-session")" "$(keyctl id @us)"
}

@test "kernel: persistent is the mounter's persistent keyring" {
	skip_unless_kernel
	skip_unless_cap persistent_keyrings
	local p
	p=$(keyctl get_persistent @s)
	assert_equal "$(ino "$MNT/persistent")" "$p"
	keyctl unlink "$p" @s >/dev/null
}

@test "persistent is a directory" {
	[ -d "$MNT/persistent" ]
	run ls -A "$MNT/persistent"
	assert_success
}

@test "process is a keyring directory of its own" {
	[ -d "$MNT/process" ]
	[ "$(ino "$MNT/process")" -ne "$(ino "$MNT/session")" ]
	echo p >"$MNT/process/pkey"
	assert_equal "$(cat "$MNT/process/pkey")" p
}

@test "by-id/SERIAL is the same inode as the key's file" {
	local s
	echo hello >"$MNT/session/k"
	s=$(ino "$MNT/session/k")
	run stat -c '%F %i' "$MNT/by-id/$s"
	assert_success
	assert_output "regular file $s"
	assert_equal "$(cat "$MNT/by-id/$s")" hello
}

@test "a write through by-id changes the key" {
	local s
	echo old >"$MNT/session/k"
	s=$(ino "$MNT/session/k")
	echo new >"$MNT/by-id/$s"
	assert_equal "$(cat "$MNT/session/k")" new
}

@test "by-id lists the keys and keyrings" {
	local k r
	echo x >"$MNT/session/k"
	mkdir "$MNT/session/ring"
	k=$(ino "$MNT/session/k")
	r=$(ino "$MNT/session/ring")
	run ls "$MNT/by-id"
	assert_success
	assert_line "$k"
	assert_line "$r"
	assert_line "$(ino "$MNT/session")"
}

@test "by-id of a serial with no key is ENOENT" {
	run kerrno stat "$MNT/by-id/2147483000"
	assert_output ENOENT
	run kerrno stat "$MNT/by-id/not-a-number"
	assert_output ENOENT
}

@test "kernel: a key added with keyctl is listed in by-id" {
	skip_unless_kernel
	local s
	s=$(keyctl add user from-keyctl v @s)
	eventually ls_has "$MNT/by-id" "$s"
	assert_equal "$(cat "$MNT/by-id/$s")" v
}

@test ".keyfs/search/user/NAME resolves to the key" {
	local s
	echo found >"$MNT/session/needle"
	s=$(ino "$MNT/session/needle")
	assert_equal "$(ino "$MNT/.keyfs/search/user/needle")" "$s"
	assert_equal "$(cat "$MNT/.keyfs/search/user/needle")" found
}

@test ".keyfs/search finds a key in a keyring nested in the session" {
	mkdir "$MNT/session/ring"
	echo deep >"$MNT/session/ring/nested"
	assert_equal "$(ino "$MNT/.keyfs/search/user/nested")" \
		"$(ino "$MNT/session/ring/nested")"
}

@test ".keyfs/search/keyring/NAME resolves to a keyring" {
	mkdir "$MNT/session/ring"
	run stat -c '%F %i' "$MNT/.keyfs/search/keyring/ring"
	assert_success
	assert_output "directory $(ino "$MNT/session/ring")"
}

@test ".keyfs/search with no matching key is ENOKEY" {
	run kerrno stat "$MNT/.keyfs/search/user/no-such-key"
	assert_output ENOKEY
	echo x >"$MNT/session/other"
	run kerrno stat "$MNT/.keyfs/search/logon/other"
	assert_output ENOKEY
}

@test "kernel: .keyfs/search finds a key added with keyctl" {
	skip_unless_kernel
	local s
	s=$(keyctl add user kc-needle v @s)
	eventually output_is "$s" ino "$MNT/.keyfs/search/user/kc-needle"
}

@test "the tree root refuses new keys and keyrings" {
	run kerrno write "$MNT/newkey" x
	refute_output OK
	run kerrno mkdir "$MNT/newring"
	refute_output OK
}
