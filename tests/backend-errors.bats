#!/usr/bin/env bats
# A kernel that refuses keyctl: keyfs says why in one line and points at the memory backend.

load lib/keyfs

setup() {
	NOKEYCTL=${KEYFS_HELPERS:-$(dirname "$KEYFS_BIN")/tests/helpers}/no-keyctl
	[ -x "$NOKEYCTL" ] || skip "no-keyctl helper not built (make check builds it)"
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
}

teardown() {
	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" || fusermount3 -uz "$MNT"
	fi
}

@test "kernel backend under a seccomp filter: one line naming the cause, non-zero exit" {
	run "$NOKEYCTL" EPERM "$KEYFS_BIN" -f -o backend=kernel "$MNT"
	assert_failure
	assert_equal "${#lines[@]}" 1
	assert_output --regexp '^keyfs: .*(seccomp|refused).*-o backend=memory'
	run mountpoint -q "$MNT"
	assert_failure
}

@test "kernel backend without key retention (ENOSYS): one line naming CONFIG_KEYS" {
	run "$NOKEYCTL" ENOSYS "$KEYFS_BIN" -f -o backend=kernel "$MNT"
	assert_failure
	assert_equal "${#lines[@]}" 1
	assert_output --regexp '^keyfs: .*CONFIG_KEYS.*-o backend=memory'
}

@test "the memory backend needs no keyctl" {
	"$NOKEYCTL" ENOSYS "$KEYFS_BIN" -o backend=memory "$MNT"
	echo -n secret > "$MNT/session/k"
	run cat "$MNT/session/k"
	assert_output secret
}
