#!/usr/bin/env bats
# store.bats: the memory backend's JSON store seen through mounts: what survives a remount, bad files, SIGKILL.

load lib/keyfs

setup() {
	skip_unless_memory
	STORE_DIR=$BATS_TEST_TMPDIR/state
	mkdir -p "$STORE_DIR"
	STORE=$STORE_DIR/keys.json
}

teardown() {
	keyfs_unmount
}

remount() {
	keyfs_unmount
	keyfs_mount -o "store=$STORE"
}

@test "a missing store starts empty and is written, mode 0600, at the first change" {
	keyfs_mount -o "store=$STORE"
	[ ! -e "$STORE" ] || [ "$(stat -c %s "$STORE")" -gt 0 ]
	echo -n v > "$MNT/session/k"
	[ -f "$STORE" ]
	assert_equal "$(stat -c %a "$STORE")" 600
	# Beside the store only its journal and lock, while mounted; the
	# journal after, empty but for its header.
	run ls -A "$STORE_DIR"
	assert_output "keys.json
keys.json.journal
keys.json.lock"
	assert_equal "$(stat -c %a "$STORE.journal")" 600
	keyfs_unmount
	run ls -A "$STORE_DIR"
	assert_output "keys.json
keys.json.journal"
	assert_equal "$(wc -l < "$STORE.journal")" 1
}

@test "payloads, types, serials, links, perm, owner and expiry survive a remount" {
	keyfs_mount -o "store=$STORE"
	printf 'bin\0ary' > "$MNT/session/k"
	echo -n pw > "$MNT/session/%logon:svc:x"
	mkdir "$MNT/session/ring"
	ln "$MNT/session/k" "$MNT/session/ring/k"
	chmod 750 "$MNT/session/k"
	chown 1234:5678 "$MNT/session/ring/k"
	setfattr -n user.keyfs.expiry -v +3600 "$MNT/session/k"
	local ino_k ino_ring perm expiry
	ino_k=$(ino "$MNT/session/k")
	ino_ring=$(ino "$MNT/session/ring")
	perm=$(getfattr --absolute-names --only-values -n user.keyfs.perm "$MNT/session/k")
	expiry=$(getfattr --absolute-names --only-values -n user.keyfs.expiry "$MNT/session/k")
	remount
	assert_equal "$(ino "$MNT/session/k")" "$ino_k"
	assert_equal "$(ino "$MNT/session/ring/k")" "$ino_k"
	assert_equal "$(ino "$MNT/session/ring")" "$ino_ring"
	assert_equal "$(nlink "$MNT/session/k")" 2
	cmp <(printf 'bin\0ary') "$MNT/session/k"
	assert_equal "$(getfattr --absolute-names --only-values -n user.keyfs.type "$MNT/session/%logon:svc:x")" logon
	assert_equal "$(getfattr --absolute-names --only-values -n user.keyfs.perm "$MNT/session/k")" "$perm"
	assert_equal "$(getfattr --absolute-names --only-values -n user.keyfs.expiry "$MNT/session/k")" "$expiry"
	assert_equal "$(stat -c %u:%g "$MNT/session/k")" 1234:5678
}

@test "a revoked key stays revoked across a remount" {
	keyfs_mount -o "store=$STORE"
	echo -n v > "$MNT/session/k"
	echo session/k > "$MNT/.keyfs/revoke"
	remount
	assert_equal "$(getfattr --absolute-names --only-values -n user.keyfs.state "$MNT/session/k")" revoked
	run kerrno read "$MNT/session/k"
	assert_output EKEYREVOKED
}

@test "a pending entry is not kept: it is keyfs's alone" {
	keyfs_mount -o "store=$STORE"
	touch "$MNT/session/pending"
	echo -n v > "$MNT/session/real"
	remount
	ls_lacks "$MNT/session" pending
	ls_has "$MNT/session" real
}

# A bad store: the mount fails with one line naming the file, and the file
# is left exactly as it was.
bad_store() {
	local want=$1
	cp "$STORE" "$BATS_TEST_TMPDIR/before"
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	run timeout 10 "$KEYFS_BIN" -f -o "backend=memory,store=$STORE" "$MNT"
	assert_failure
	assert_equal "${#lines[@]}" 1
	assert_output --partial "$STORE"
	assert_output --regexp "$want"
	cmp "$STORE" "$BATS_TEST_TMPDIR/before"
	run mountpoint -q "$MNT"
	assert_failure
}

@test "a store that is not JSON fails the mount with line and column" {
	printf '{"format": 1,\n  "keys": [ oops ]\n}\n' > "$STORE"
	bad_store ':2:[0-9]+'
}

@test "a store of an unknown format version fails the mount" {
	echo '{"format": 99, "next_serial": 10, "keys": []}' > "$STORE"
	bad_store 'version'
}

@test "a store that links a serial it does not have fails the mount" {
	keyfs_mount -o "store=$STORE"
	mkdir "$MNT/session/ring"
	keyfs_unmount
	python3 - "$STORE" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
for k in d["keys"]:
    if k["type"] == "keyring" and k["description"] == "ring":
        k["links"] = [999999999]
json.dump(d, open(p, "w"))
PY
	bad_store '999999999'
}

# Edit the store with python: $1 is the code, run with d (the store's JSON)
# and key(description) at hand; the store is written back.
edit_store() {
	python3 - "$STORE" "$1" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
def key(desc):
    return next(k for k in d["keys"] if k["description"] == desc)
exec(sys.argv[2])
json.dump(d, open(p, "w"))
PY
}

@test "a store whose keyrings link each other in a cycle fails the mount" {
	keyfs_mount -o "store=$STORE"
	mkdir "$MNT/session/outer" "$MNT/session/outer/inner"
	keyfs_unmount
	edit_store 'key("inner")["links"] = [key("outer")["serial"]]'
	bad_store 'links back'
}

@test "a store whose keyring links two keys of one name fails the mount" {
	keyfs_mount -o "store=$STORE"
	mkdir "$MNT/session/a" "$MNT/session/b" "$MNT/session/ring"
	echo -n 1 > "$MNT/session/a/k"
	echo -n 2 > "$MNT/session/b/k"
	keyfs_unmount
	edit_store 'key("ring")["links"] = [k["serial"] for k in d["keys"] if k["description"] == "k"]'
	bad_store 'share type and description'
}

@test "an invalidated key in a store is not loaded, nor the links to it" {
	keyfs_mount -o "store=$STORE"
	mkdir "$MNT/session/ring"
	echo -n v > "$MNT/session/ring/gone"
	echo -n w > "$MNT/session/ring/kept"
	keyfs_unmount
	edit_store 'key("gone")["state"] = "invalidated"'
	keyfs_mount -o "store=$STORE"
	ls_lacks "$MNT/session/ring" gone
	assert_equal "$(cat "$MNT/session/ring/kept")" w
}

@test "a store that is a directory fails the mount" {
	rmdir "$STORE_DIR" && mkdir -p "$STORE"
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	run timeout 10 "$KEYFS_BIN" -f -o "backend=memory,store=$STORE" "$MNT"
	assert_failure
	assert_output --partial "$STORE"
}

@test "store= with the kernel backend is refused" {
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	run timeout 10 "$KEYFS_BIN" -f -o "backend=kernel,store=$STORE" "$MNT"
	assert_failure
	assert_output --partial "memory"
}

@test "SIGKILL during a stream of writes never leaves a store that fails to load" {
	local i n writer
	for ((i = 0; i < 5; i++)); do
		keyfs_mount -o "store=$STORE"
		# Writers in the background, killed at a moment nobody chose.
		(
			n=0
			while :; do
				printf 'value-%d' "$n" > "$MNT/session/k$((n % 7))" 2>/dev/null || exit 0
				n=$((n + 1))
			done
		) 3>&- &
		writer=$!
		sleep 0.$((RANDOM % 5 + 2))
		kill -9 "$KEYFS_PID"
		wait "$KEYFS_PID" 2>/dev/null || true
		KEYFS_PID=
		fusermount3 -u -z "$MNT" 2>/dev/null || true
		# the writer only: a bare wait would also wait for bats's timer
		wait "$writer" || true
		# A temporary file may be left by a kill mid-save; the store
		# itself is always whole and loads.
		keyfs_mount -o "store=$STORE"
		run ls "$MNT/session"
		assert_success
		keyfs_unmount
	done
}
