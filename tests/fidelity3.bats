#!/usr/bin/env bats
# fidelity3.bats: still more of keyfs answering as keyctl does (issue 16): keys unlinked behind keyfs's back, the memory session keyring, keys the caller cannot view.

load lib/keyfs
load lib/users

setup_file() { second_user_create kfsfid3; }
teardown_file() { second_user_remove; }

setup()
{
	keyfs_mount -o entry_timeout=30 -o allow_other
	mount_reachable
}

teardown() { keyfs_unmount; }

@test "16 extra: a key unlinked behind keyfs's back but alive elsewhere reads as ENOENT" {
	skip_unless_kernel
	echo v >"$MNT/session/k"
	assert_equal "$(timeout 20 cat "$MNT/session/k")" v
	s=$(ino "$MNT/session/k")
	# the holder is not a possessor: it needs link as the key's user
	keyctl setperm "$s" 0x3f110000
	hold "$s"
	keyctl unlink "$s" @s
	# alive, linked where keyfs does not possess it: keyctl read says
	# EACCES; the name keyfs showed is gone
	run keyctl read "$s"
	assert_failure
	run kerrno read "$MNT/session/k"
	unhold
	assert_output ENOENT
}

@test "16 extra: a key still linked but unreadable stays EACCES" {
	skip_unless_kernel
	echo v >"$MNT/session/k"
	assert_equal "$(timeout 20 cat "$MNT/session/k")" v
	keyctl setperm "$(ino "$MNT/session/k")" 0x35010000
	run kerrno read "$MNT/session/k"
	assert_output EACCES
}

@test "16.6: the memory backend's session keyring starts empty, as keyctl session - makes it" {
	skip_unless_memory
	run ls -A "$MNT/session"
	assert_success
	assert_output ""
	# the user keyring is there, linked where the user links it
	echo user session >"$MNT/.keyfs/link"
	ls_has "$MNT/session" _uid.0
}

# Root is not exempt from view: a perm without view for possessor and user
# hides a key from the mounter as from anyone.
@test "16.5: a key the caller may not view is listed as %#SERIAL and rm removes it" {
	echo v >"$MNT/session/k"
	echo w >"$MNT/session/seen"
	s=$(ino "$MNT/session/k")
	echo "session/k 0x3e3e0000" >"$MNT/.keyfs/setperm"
	ls_has "$MNT/session" "%#$s"
	ls_lacks "$MNT/session" k
	# what stat can say without view
	assert_equal "$(stat -c '%f %s %h %a' "$MNT/session/%#$s")" "8000 0 1 0"
	assert_equal "$(stat -c %u:%g "$MNT/session/%#$s")" \
		"$(cat /proc/sys/kernel/overflowuid):$(cat /proc/sys/kernel/overflowgid)"
	run kerrno read "$MNT/session/%#$s"
	assert_output EACCES
	# a key the caller views has its own name only
	run kerrno stat "$MNT/session/%#$(ino "$MNT/session/seen")"
	assert_output ENOENT
	run kerrno unlink "$MNT/session/%#$s"
	assert_output OK
	ls_lacks "$MNT/session" "%#$s"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl unlink "$s" @s
		assert_failure
	fi
}

@test "16.5: rm of %#SERIAL without write on the keyring is EACCES, as keyctl unlink" {
	mkdir "$MNT/session/r"
	echo v >"$MNT/session/r/k"
	s=$(ino "$MNT/session/r/k")
	r=$(ino "$MNT/session/r")
	echo "session/r/k 0x3e3e0000" >"$MNT/.keyfs/setperm"
	# the keyring without write for anyone
	echo "session/r 0x3b3b0000" >"$MNT/.keyfs/setperm"
	ls_has "$MNT/session/r" "%#$s"
	run kerrno unlink "$MNT/session/r/%#$s"
	assert_output EACCES
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl unlink "$s" "$r"
		assert_failure
		assert_output --partial "Permission denied"
	fi
	ls_has "$MNT/session/r" "%#$s"
}

@test "16.5: another user lists a key it may not view as %#SERIAL and removes it" {
	need_u2
	mkdir "$MNT/session/shared"
	echo v >"$MNT/session/shared/k"
	s=$(ino "$MNT/session/shared/k")
	r=$(ino "$MNT/session/shared")
	# others: view, read, write and search on the keyring, nothing on the key
	echo "session/shared 0x3f3f000f" >"$MNT/.keyfs/setperm"
	run as2 ls -A "$MNT/by-id/$r"
	assert_success
	assert_output "%#$s"
	run as2_errno unlink "$MNT/by-id/$r/%#$s"
	assert_output OK
	ls_lacks "$MNT/session/shared" k
}
