#!/usr/bin/env bats
# journal.bats: store=FILE keeps each change as one journal record, fsync'd before the call returns; the snapshot is rewritten only by compaction and at unmount.

load lib/keyfs

setup() {
	skip_unless_memory
	STORE_DIR=$BATS_TEST_TMPDIR/state
	mkdir -p "$STORE_DIR"
	STORE=$STORE_DIR/keys.json
	JOURNAL=$STORE.journal
}

teardown() {
	keyfs_unmount
}

# kill -9 the daemon, as a crash would, and clear its dead mount.
keyfs_crash() {
	kill -9 "$KEYFS_PID"
	while kill -0 "$KEYFS_PID" 2>/dev/null; do sleep 0.05; done
	fusermount3 -u -z "$MNT" 2>/dev/null || true
	KEYFS_PID=
}

# A stream of creates and updates from the background; each name whose
# write returned success goes to $DONE.  kill -9 at a random moment, then
# every one of them must be there after a remount.
crash_during_stream() {
	DONE=$BATS_TEST_TMPDIR/done
	: > "$DONE"
	# close(2) is where a write is saved, and what says it was: the
	# shell's > does not check it, so python writes.
	"$KEYFS_PY" -c '
import os, sys
mnt, done = sys.argv[1], open(sys.argv[2], "a")
for i in range(3000):
    name = "k%d" % (i % 300)
    try:
        fd = os.open(mnt + "/session/" + name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, b"v%d" % i)
        os.close(fd)
    except OSError:
        sys.exit(0)
    done.write("%s v%d\n" % (name, i))
    done.flush()
' "$MNT" "$DONE" &
	local writer=$!
	sleep "0.$((RANDOM % 6 + 3))"
	keyfs_crash
	wait "$writer" || true
	[ -s "$DONE" ] || fail "nothing was written before the crash"
	keyfs_mount "$@"
	# The last value each name was given successfully.
	declare -A want
	while read -r name val; do want[$name]=$val; done < "$DONE"
	for name in "${!want[@]}"; do
		got=$(cat "$MNT/session/$name")
		# The write under way at the kill may have landed too: its
		# value is newer, never older.
		[[ $got == "${want[$name]}" ]] ||
			[[ ${got#v} -gt ${want[$name]#v} ]] ||
			fail "$name: ${want[$name]} returned success, but $got was loaded"
	done
}

@test "each change is one record in the journal; the snapshot waits for unmount" {
	keyfs_mount -o "store=$STORE"
	echo -n a > "$MNT/session/k1"
	local snap=$(sha256sum < "$STORE") n
	n=$(wc -l < "$JOURNAL")
	echo -n b > "$MNT/session/k2"
	echo -n c > "$MNT/session/k1"
	setfattr -n user.keyfs.perm -v 3f3f0000 "$MNT/session/k1"
	# the new k2 is one record with the permission its mode gives, not
	# add_key's and then setperm's
	assert_equal "$(wc -l < "$JOURNAL")" $((n + 3))
	n=$(wc -l < "$JOURNAL")
	mkdir -m 700 "$MNT/session/ring"
	assert_equal "$(wc -l < "$JOURNAL")" $((n + 1))
	tail -n 1 "$JOURNAL" | grep -q '"ring"'
	# mv onto a name: the target's new payload and the source's unlink
	echo -n d > "$MNT/session/k3"
	n=$(wc -l < "$JOURNAL")
	mv "$MNT/session/k3" "$MNT/session/k2"
	assert_equal "$(wc -l < "$JOURNAL")" $((n + 1))
	assert_equal "$(sha256sum < "$STORE")" "$snap"
	assert_equal "$(stat -c %a "$JOURNAL")" 600
	keyfs_unmount
	assert_equal "$(wc -l < "$JOURNAL")" 1
	grep -q '"k2"' "$STORE"
	keyfs_mount -o "store=$STORE"
	assert_equal "$(cat "$MNT/session/k1")" c
	assert_equal "$(cat "$MNT/session/k2")" d
	assert_equal "$(getfattr --absolute-names --only-values -n user.keyfs.perm "$MNT/session/k1")" 0x3f3f0000
}

@test "links and unlinks in a keyring survive a crash" {
	keyfs_mount -o "store=$STORE"
	mkdir "$MNT/session/ring"
	for i in 1 2 3; do echo -n $i > "$MNT/session/ring/k$i"; done
	echo -n x > "$MNT/session/x"
	ln "$MNT/session/x" "$MNT/session/ring/x"
	rm "$MNT/session/ring/k2"
	keyfs_crash
	keyfs_mount -o "store=$STORE"
	run ls "$MNT/session/ring"
	assert_output "k1
k3
x"
}

@test "kill -9 during a stream of changes loses no change that returned success" {
	keyfs_mount -o "store=$STORE"
	crash_during_stream -o "store=$STORE"
}

@test "the journal is compacted into the snapshot once it outgrows the rule" {
	keyfs_mount -o "store=$STORE"
	local big=$(head -c 3000 /dev/zero | tr '\0' x)
	for ((i = 0; i < 40; i++)); do echo -n "$big$i" > "$MNT/session/k$((i % 5))"; done
	# 40 records of about 4 kB: past the 64 KiB floor once, so the
	# snapshot was rewritten while mounted and the journal started again.
	[ "$(stat -c %s "$JOURNAL")" -lt 65536 ] || fail "journal not compacted"
	grep -q '"k4"' "$STORE" || fail "the snapshot was not rewritten"
	assert_equal "$(stat -c %a "$STORE")" 600
	keyfs_crash
	keyfs_mount -o "store=$STORE"
	assert_equal "$(cat "$MNT/session/k4")" "${big}39"
}

@test "a torn last record is dropped with a warning naming the file and offset" {
	keyfs_mount -o "store=$STORE"
	echo -n a > "$MNT/session/k1"
	keyfs_crash
	local size=$(stat -c %s "$JOURNAL")
	printf '{"seq":99,"ops":[{"del":' >> "$JOURNAL"
	keyfs_mount -o "store=$STORE"
	assert_equal "$(cat "$MNT/session/k1")" a
	grep -q "$JOURNAL: dropped a torn last record at byte $size" "$KEYFS_LOG" ||
		fail "no warning: $(cat "$KEYFS_LOG")"
	# Cut off before the next record: the journal goes on whole.
	echo -n b > "$MNT/session/k2"
	keyfs_crash
	keyfs_mount -o "store=$STORE"
	assert_equal "$(cat "$MNT/session/k2")" b
}

@test "a damaged record that is not the last refuses the mount naming file and line" {
	keyfs_mount -o "store=$STORE"
	echo -n a > "$MNT/session/k1"
	echo -n b > "$MNT/session/k2"
	keyfs_crash
	sed -i '2s/"seq":[0-9]*/"seq":77/' "$JOURNAL"
	cp "$JOURNAL" "$BATS_TEST_TMPDIR/before"
	MNT=$BATS_TEST_TMPDIR/mnt
	run timeout 10 "$KEYFS_BIN" -f -o "backend=memory,store=$STORE" "$MNT"
	assert_failure
	assert_equal "${#lines[@]}" 1
	assert_output --regexp "$JOURNAL:[23]: "
	cmp "$JOURNAL" "$BATS_TEST_TMPDIR/before"
}
