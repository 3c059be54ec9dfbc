#!/usr/bin/env bats
# perm.bats: permissions (SPEC §5): mode bits as a view of perm, chmod, chown, and a second user.

load lib/keyfs
load lib/users

# A second user, made for this file and removed after it.
setup_file()
{
	second_user_create kfsperm
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

# newkey NAME PERM: a key in session with this payload-name and perm; prints
# its serial.
newkey()
{
	echo "secret-$1" >"$MNT/session/$1"
	xset perm "$2" "$MNT/session/$1"
	ino "$MNT/session/$1"
}

@test "chmod 640 on a key with perm 0x3f010000 gives 0x3f070200" {
	echo v >"$MNT/session/k"
	xset perm 0x3f010000 "$MNT/session/k"
	assert_equal "$(stat -c %a "$MNT/session/k")" 700
	chmod 640 "$MNT/session/k"
	# owner rw-: possessor and user get read|write, keep view/link/setattr,
	# the possessor keeps search (the key stays possessed); group r--:
	# read only; other nothing.
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f070200
	assert_equal "$(stat -c %a "$MNT/session/k")" 740
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(kperm "$(ino "$MNT/session/k")")" 3f070200
	fi
}

@test "chmod keeps view, link and setattr of every class" {
	echo v >"$MNT/session/k"
	xset perm 0x3f3f3f3f "$MNT/session/k"
	chmod 000 "$MNT/session/k"
	assert_equal "$(xget perm "$MNT/session/k")" 0x39313131
	assert_equal "$(stat -c %a "$MNT/session/k")" 100
	chmod 777 "$MNT/session/k"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f3f3f3f
	chmod 421 "$MNT/session/k"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3b333539
}

@test "chmod on a keyring" {
	mkdir "$MNT/session/ring"
	xset perm 0x3f010000 "$MNT/session/ring"
	chmod 751 "$MNT/session/ring"
	assert_equal "$(xget perm "$MNT/session/ring")" 0x3f0f0a08
	assert_equal "$(stat -c %a "$MNT/session/ring")" 751
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(kperm "$(ino "$MNT/session/ring")")" 3f0f0a08
	fi
}

@test "mode bits are a view of perm: owner = possessor | user" {
	echo v >"$MNT/session/k"
	# possessor view, user view and read, group write, other search
	# (stat may answer from the kernel's attribute cache for a moment)
	xset perm 0x01030408 "$MNT/session/k"
	eventually output_is 421 stat -c %a "$MNT/session/k"
	# possessor view and search (so the key stays possessed), user view;
	# another key, as that one lost setattr
	echo v >"$MNT/session/k2"
	xset perm 0x09010000 "$MNT/session/k2"
	eventually output_is 100 stat -c %a "$MNT/session/k2"
}

@test "chown as root gives the key to another uid and gid" {
	echo v >"$MNT/session/k"
	chown 12345 "$MNT/session/k"
	assert_equal "$(stat -c %u "$MNT/session/k")" 12345
	chown :23456 "$MNT/session/k"
	assert_equal "$(stat -c %u:%g "$MNT/session/k")" 12345:23456
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl rdescribe "$(ino "$MNT/session/k")"
		assert_output --regexp '^user;12345;23456;[0-9a-f]{8};k$'
	fi
	# possessed: the key stays readable to the mounter
	assert_equal "$(cat "$MNT/session/k")" v
}

@test "chown of a keyring" {
	mkdir "$MNT/session/ring"
	chown 12345:12345 "$MNT/session/ring"
	assert_equal "$(stat -c %u:%g "$MNT/session/ring")" 12345:12345
}

@test "a second user is refused a key whose perm gives it nothing" {
	need_u2
	local s
	s=$(newkey k 0x3f010000)
	run as2_errno read "$MNT/by-id/$s"
	assert_output EACCES
	run as2 cat "$MNT/session/k"
	assert_failure
}

@test "a second user reads a key whose other class grants view and read" {
	need_u2
	local s
	s=$(newkey k 0x3f010003)
	run as2 cat "$MNT/by-id/$s"
	assert_success
	assert_output secret-k
	# but may not write it, change its perm, or chmod it
	run as2_errno write "$MNT/by-id/$s" x w
	assert_output EACCES
	run as2_errno setxattr "$MNT/by-id/$s" user.keyfs.perm 0x3f3f3f3f
	assert_output EACCES
	run as2 chmod 777 "$MNT/by-id/$s"
	assert_failure
	assert_output --partial "Operation not permitted"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f010003
	assert_equal "$(cat "$MNT/session/k")" secret-k
}

@test "view alone lets a second user stat a key but not read it" {
	need_u2
	local s
	s=$(newkey k 0x3f010001)
	run as2 stat -c %i "$MNT/by-id/$s"
	assert_success
	assert_output "$s"
	run as2_errno read "$MNT/by-id/$s"
	assert_output EACCES
}

@test "possessor bits are the mounter's alone" {
	need_u2
	local s
	s=$(newkey k 0x3f000000)
	assert_equal "$(cat "$MNT/session/k")" secret-k
	run as2_errno read "$MNT/by-id/$s"
	assert_output EACCES
}

@test "user, group and other are exclusive: the owner gets the user class only" {
	need_u2
	local s
	s=$(newkey k 0x3f000003)
	chown "$U2UID" "$MNT/session/k"
	run as2_errno read "$MNT/by-id/$s"
	assert_output EACCES
	xset perm 0x3f030000 "$MNT/session/k"
	run as2 cat "$MNT/by-id/$s"
	assert_success
	assert_output secret-k
}

@test "group: the group class when it grants anything, else other" {
	need_u2
	local s
	s=$(newkey k 0x3f000103)
	chown ":$U2GID" "$MNT/session/k"
	# group grants view only: that is the class, so read is refused
	run as2_errno read "$MNT/by-id/$s"
	assert_output EACCES
	# group grants nothing: other applies
	xset perm 0x3f000003 "$MNT/session/k"
	run as2 cat "$MNT/by-id/$s"
	assert_success
	assert_output secret-k
	# group grants read
	xset perm 0x3f000300 "$MNT/session/k"
	run as2 cat "$MNT/by-id/$s"
	assert_success
	assert_output secret-k
}

@test "a second user cannot list the mounter's session keyring" {
	need_u2
	echo v >"$MNT/session/k"
	xset perm 0x3f0b0000 "$MNT/session"
	run as2 ls "$MNT/session"
	assert_failure
	run as2_errno read "$MNT/session/k"
	assert_output EACCES
}

@test "setperm needs ownership: setattr for other is not enough" {
	need_u2
	local s
	s=$(newkey k 0x3f010021)
	run as2_errno setxattr "$MNT/by-id/$s" user.keyfs.perm 0x3f3f3f3f
	assert_output EACCES
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f010021
	# the owner with setattr may
	chown "$U2UID" "$MNT/session/k"
	xset perm 0x3f210021 "$MNT/session/k"
	run as2_errno setxattr "$MNT/by-id/$s" user.keyfs.perm 0x3f230021
	assert_output OK
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f230021
}

@test "a second user's control-file command on a key it cannot reach is refused" {
	need_u2
	local s
	s=$(newkey k 0x3f010001)
	run as2_errno write "$MNT/.keyfs/revoke" "#$s"
	assert_output EACCES
	assert_equal "$(xget state "$MNT/session/k")" valid
}

@test "a second user past its key quota gets EDQUOT; what it made is its own" {
	need_u2
	mkdir "$MNT/session/drop"
	local ring got i
	ring=$(ino "$MNT/session/drop")
	xset perm 0x3f3f000d "$MNT/session/drop"	# other: view, write, search
	run as2_errno write "$MNT/by-id/$ring/first" kept
	assert_output OK
	assert_equal "$(stat -c %u:%g "$MNT/session/drop/first")" "$U2UID:$U2GID"
	# 20,000 bytes is the kernel's default quota for a uid other than root
	for ((i = 0; i < 40; i++)); do
		got=$(as2_errno writesize "$MNT/by-id/$ring/k$i" 2000)
		[[ $got == OK ]] || break
	done
	assert_equal "$got" EDQUOT
	assert_equal "$(cat "$MNT/session/drop/first")" kept
	# the mounter (root) is not charged for it and may still add
	echo -n mine >"$MNT/session/drop/root-key"
	assert_equal "$(cat "$MNT/session/drop/root-key")" mine
}
