#!/usr/bin/env bats
# store-scale.bats: store=FILE writes what a change touched, not the whole store, and the journal alone (a crash) still restores every change; a failed save is undone in a big keyring too.

load lib/keyfs

setup() {
	skip_unless_memory
	STORE_DIR=$BATS_TEST_TMPDIR/state
	mkdir -p "$STORE_DIR"
	STORE=$STORE_DIR/keys.json
	JOURNAL=$STORE.journal
	IMMUTABLE=
}

teardown() {
	if [[ -n $IMMUTABLE ]]; then
		chattr -i "$STORE_DIR" || true
		[[ ! -e $JOURNAL ]] || chattr -i "$JOURNAL" || true
	fi
	keyfs_unmount
}

# kill -9 the daemon (no snapshot at unmount: the journal alone is left).
keyfs_crash() {
	kill -9 "$KEYFS_PID"
	local i
	for i in $(seq 200); do kill -0 "$KEYFS_PID" 2>/dev/null || break; sleep 0.05; done
	fusermount3 -u -z "$MNT" 2>/dev/null || true
	KEYFS_PID=
}

# Every key under the mount's session and user keyrings: path, mode and
# payload (keyrings: their entries), one a line, sorted.
tree_dump() {
	timeout 20 "$KEYFS_PY" -c '
import os, stat, sys
root = sys.argv[1]
out = []
for top in ("session", "user"):
    for d, dirs, files in os.walk(os.path.join(root, top)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            st = os.lstat(p)
            try:
                v = open(p, "rb").read().hex()
            except OSError as e:
                v = "E%d" % e.errno
            out.append("%s %o %s" % (os.path.relpath(p, root), st.st_mode, v))
        out.append("%s/ %s" % (os.path.relpath(d, root), ",".join(sorted(dirs + files))))
print("\n".join(sorted(out)))' "$MNT"
}

# A keyring of n keys (more than a keyring whose old links are copied).
fill() {
	mkdir "$MNT/session/$1"
	timeout 60 "$KEYFS_PY" -c '
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open("%s/k%04d" % (d, i), "w") as f:
        f.write("v%d" % i)' "$MNT/session/$1" "$2"
}

@test "a change in a keyring of 300 keys writes a record of that change, not of the keyring" {
	keyfs_mount -o "store=$STORE"
	fill big 300
	echo -n new > "$MNT/session/big/znew"
	# The record: the new key and one link, not 300 serials.
	(($(tail -n1 "$JOURNAL" | wc -c) < 1000)) ||
		fail "a create wrote $(tail -n1 "$JOURNAL" | wc -c) bytes"
	rm "$MNT/session/big/k0007"
	(($(tail -n1 "$JOURNAL" | wc -c) < 200)) ||
		fail "an unlink wrote $(tail -n1 "$JOURNAL" | wc -c) bytes"
}

@test "link changes in a keyring of 300 keys survive a crash in order, with every other change" {
	keyfs_mount -o "store=$STORE"
	fill big 300
	mkdir "$MNT/session/other"
	echo -n new > "$MNT/session/big/znew"
	rm "$MNT/session/big/k0010" "$MNT/session/big/k0000"
	mv "$MNT/session/big/k0020" "$MNT/session/other/"
	ln "$MNT/session/big/k0030" "$MNT/session/other/k0030"
	echo -n changed > "$MNT/session/big/k0040"
	setfattr -n user.keyfs.perm -v 3f3f0000 "$MNT/session/big/k0050"
	mkdir "$MNT/session/big/sub"
	echo -n inner > "$MNT/session/big/sub/i"
	rm "$MNT/session/big/k0299"
	echo -n last > "$MNT/session/big/k0299"
	local before
	before=$(tree_dump)
	keyfs_crash
	keyfs_mount -o "store=$STORE"
	assert_equal "$(tree_dump)" "$before"
	# Again after a clean unmount (the snapshot from the whole model).
	keyfs_unmount
	keyfs_mount -o "store=$STORE"
	assert_equal "$(tree_dump)" "$before"
}

@test "keys the process keyring alone held are written once a kept keyring links them, and go when none does" {
	keyfs_mount -o "store=$STORE"
	mkdir "$MNT/process/pr"
	echo -n inner > "$MNT/process/pr/i"
	mkdir "$MNT/process/pr/deep"
	echo -n d > "$MNT/process/pr/deep/d"
	ln "$MNT/process/pr/i" "$MNT/session/i"
	! grep -q '"deep"' "$JOURNAL" || fail "an unsaved keyring was written"
	# A kept keyring takes pr: pr and all below it are written.
	mv "$MNT/process/pr" "$MNT/session/pr"
	grep -q '"deep"' "$JOURNAL" || fail "deep was not written"
	keyfs_crash
	keyfs_mount -o "store=$STORE"
	assert_equal "$(cat "$MNT/session/i")" inner
	assert_equal "$(cat "$MNT/session/pr/deep/d")" d
	# Back to the process keyring alone: the store drops them all.
	mv "$MNT/session/pr" "$MNT/process/pr"
	run "$KEYFS_PY" -c '
import json, sys
ops = json.loads(open(sys.argv[1]).read().splitlines()[-1])["ops"]
print(sum(1 for op in ops if "del" in op))' "$JOURNAL"
	assert_output 3
	keyfs_crash
	keyfs_mount -o "store=$STORE"
	ls_lacks "$MNT/session" pr
	assert_equal "$(cat "$MNT/session/i")" inner
}

@test "a save that fails in a keyring of 300 keys is undone" {
	keyfs_mount -o "store=$STORE"
	fill big 300
	local before
	before=$(tree_dump)
	chattr +i "$STORE_DIR" 2>/dev/null || skip "chattr +i does not work on $STORE_DIR"
	IMMUTABLE=1
	chattr +i "$JOURNAL"
	run kerrno write "$MNT/session/big/znew" new
	refute_output OK
	run kerrno unlink "$MNT/session/big/k0005"
	refute_output OK
	run kerrno write "$MNT/session/big/k0006" changed
	refute_output OK
	run kerrno mkdir "$MNT/session/big/d"
	refute_output OK
	# At most the pending entry a failed create's open made.
	assert_equal "$(tree_dump | grep -v znew)" "$(grep -v znew <<<"$before")"
	chattr -i "$STORE_DIR" "$JOURNAL"
	IMMUTABLE=
	echo -n ok > "$MNT/session/big/after"
	before=$(tree_dump)
	keyfs_crash
	keyfs_mount -o "store=$STORE"
	assert_equal "$(tree_dump)" "$before"
}
