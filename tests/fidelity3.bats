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

# hold KEY: link KEY into the session keyring of a process of its own, so
# that it outlives its last link keyfs can see without being possessed by
# keyfs (the kernel's garbage collector would take it at once, and a
# collected key is ENOKEY, as an invalidated one); sets HOLDER.
hold()
{
	local f=$BATS_TEST_TMPDIR/held i
	keyctl session - sh -c "keyctl link $1 @s && touch $f && exec sleep 30" \
		>/dev/null 2>&1 3>&- &
	HOLDER=$!
	for ((i = 0; i < 50; i++)); do
		[[ -e $f ]] && return 0
		sleep 0.1
	done
	return 1
}

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
	kill "$HOLDER"
	wait "$HOLDER" 2>/dev/null || true
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
