#!/usr/bin/env bats
# store-crypt.bats: store_key= encrypts the memory store at rest: nothing readable in the files, every damage refused with its own line, no change lost to kill -9.

load lib/keyfs

setup() {
	skip_unless_memory
	STORE_DIR=$BATS_TEST_TMPDIR/state
	mkdir -p "$STORE_DIR"
	STORE=$STORE_DIR/keys.json
	JOURNAL=$STORE.journal
	KEY=$BATS_TEST_TMPDIR/store.key
	(umask 077 && head -c 32 /dev/urandom > "$KEY")
	KEY2=$BATS_TEST_TMPDIR/other.key
	(umask 077 && head -c 32 /dev/urandom > "$KEY2")
}

teardown() {
	keyfs_unmount
}

# kill -9 the daemon, as a crash would, and clear its dead mount.
keyfs_crash() {
	kill -9 "$KEYFS_PID"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$KEYFS_PID" 2>/dev/null || break
		sleep 0.05
	done
	fusermount3 -u -z "$MNT" 2>/dev/null || true
	KEYFS_PID=
}

# mount_fails ARGS...: keyfs refuses to mount, with one line on stderr
# (in $output) and status 1.
mount_fails() {
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	run timeout 20 "$KEYFS_BIN" -f -o backend=memory "$@" "$MNT"
	assert_equal "$status" 1
	assert_equal "${#lines[@]}" 1
}

@test "with store_key= the payload and description are in neither file, and come back after a remount" {
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	echo -n payload-PLAINSECRET > "$MNT/session/desc-PLAINNAME"
	keyfs_crash
	# Before the unmount: the change is in the journal only.
	! grep -q -e PLAINSECRET -e PLAINNAME "$STORE" "$JOURNAL"
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	assert_equal "$(cat "$MNT/session/desc-PLAINNAME")" payload-PLAINSECRET
	keyfs_unmount
	# After it: in the snapshot only.
	! grep -q -e PLAINSECRET -e PLAINNAME "$STORE" "$JOURNAL"
	assert_equal "$(head -1 "$STORE")" "keyfs encrypted store v1"
	! grep -q 'not encrypted' "$KEYFS_LOG"
}

@test "without store_key= the store is plain, and the mount says once that it is not encrypted" {
	keyfs_mount -o "store=$STORE"
	echo -n v > "$MNT/session/k"
	grep -q '"k"' "$JOURNAL"
	assert_equal "$(grep -c "$STORE: the store is not encrypted" "$KEYFS_LOG")" 1
}

@test "a wrong key says wrong key and leaves the files alone" {
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	echo -n v > "$MNT/session/k"
	keyfs_unmount
	local sum=$(sha256sum "$STORE" "$JOURNAL")
	mount_fails -o "store=$STORE,store_key=file:$KEY2"
	assert_output "keyfs: $STORE: wrong key"
	assert_equal "$(sha256sum "$STORE" "$JOURNAL")" "$sum"
}
