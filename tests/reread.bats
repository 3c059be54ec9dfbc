#!/usr/bin/env bats
# reread.bats: every cat of a key reads its current payload, whole, after rewrites through keyfs or keyctl.

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

@test "a key read again and again reads the same, whole" {
	printf 'first payload' | cat >"$MNT/session/k"
	for _ in 1 2 3 4 5; do
		assert_equal "$(cat "$MNT/session/k")" "first payload"
	done
	assert_equal "$(head -c 5 "$MNT/session/k")" first
	assert_equal "$(tail -c 7 "$MNT/session/k")" payload
}

@test "a key rewritten through keyfs reads anew at once, longer, shorter or the same length" {
	printf 'one' | cat >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" one
	printf 'a longer payload' | cat >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" "a longer payload"
	printf 'two' | cat >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" two
	printf 'six' | cat >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" six
	printf '!!' >>"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" 'six!!'
	truncate -s 2 "$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" si
}

@test "a revoked or removed key's file reads no more" {
	printf 'gone soon' | cat >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" "gone soon"
	echo session/k >"$MNT/.keyfs/revoke"
	run cat "$MNT/session/k"
	assert_failure
	printf 'other' | cat >"$MNT/session/j"
	assert_equal "$(cat "$MNT/session/j")" other
	rm "$MNT/session/j"
	run cat "$MNT/session/j"
	assert_failure
}

@test "keyctl update behind keyfs's back shows at the next cat, whatever the cached size" {
	skip_unless_kernel
	printf 'short' | cat >"$MNT/session/k"
	local k
	k=$(ino "$MNT/session/k")
	assert_equal "$(cat "$MNT/session/k")" short
	stat "$MNT/session/k" >/dev/null
	keyctl update "$k" 'a much longer payload'
	assert_equal "$(cat "$MNT/session/k")" 'a much longer payload'
	keyctl update "$k" 'a much longer PAYLOAD'
	assert_equal "$(cat "$MNT/session/k")" 'a much longer PAYLOAD'
	keyctl update "$k" 'tiny'
	assert_equal "$(cat "$MNT/session/k")" tiny
	exec 7<"$MNT/session/k"
	keyctl update "$k" 'tinier'
	assert_equal "$(cat "$MNT/session/k")" tinier
	assert_equal "$(cat <&7)" tiny
	exec 7<&-
	assert_equal "$(cat "$MNT/session/k")" tinier
}
