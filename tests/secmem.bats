#!/usr/bin/env bats
# secmem.bats: payload memory kept from swap where allowed, and one warning where it is not.

load lib/keyfs

teardown()
{
	[[ -n ${MNT:-} ]] && fusermount3 -u "$MNT" 2>/dev/null
	MNT=
	keyfs_unmount
}

@test "without the right to lock memory, keyfs warns once that payloads may reach swap, and works" {
	command -v setpriv >/dev/null 2>&1 || skip "needs setpriv"
	# AddressSanitizer and ThreadSanitizer make mlock(2) a no-op that succeeds.
	! grep -q __asan_init "$KEYFS_BIN" || skip "an AddressSanitizer build cannot fail mlock"
	! keyfs_has_tsan || skip "a ThreadSanitizer build cannot fail mlock"
	keyfs_new_session
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	# No CAP_IPC_LOCK and no lockable memory: mlock must fail.
	run bash -c 'ulimit -l 0 && exec setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock -- "$@"' _ \
		"$KEYFS_BIN" "$KEYFS_BACKEND" "$MNT"
	assert_success
	assert_output --partial "payload memory cannot be locked against swap"
	assert_equal "$(grep -c 'cannot be locked' <<<"$output")" 1
	echo -n s3cret >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" s3cret
	fusermount3 -u "$MNT"
}

@test "with the right to lock memory, keyfs starts without a warning" {
	keyfs_new_session
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	run "$KEYFS_BIN" "$KEYFS_BACKEND" "$MNT"
	assert_success
	refute_output --partial "cannot be locked"
	fusermount3 -u "$MNT"
}
