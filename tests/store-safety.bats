#!/usr/bin/env bats
# store-safety.bats: keys kept safe at rest: failed saves undone, one mount per store, no secrets left behind or dumpable.

load lib/keyfs

setup() {
	STORE_DIR=$BATS_TEST_TMPDIR/state
	mkdir -p "$STORE_DIR"
	STORE=$STORE_DIR/keys.json
	IMMUTABLE=
}

teardown() {
	if [[ -n $IMMUTABLE ]]; then
		chattr -i "$STORE_DIR" || true
		[[ ! -e $STORE.journal ]] || chattr -i "$STORE.journal" || true
	fi
	if [[ -n ${MNT2:-} ]] && keyfs_is_mounted "$MNT2"; then
		fusermount3 -u "$MNT2" || fusermount3 -u -z "$MNT2" || true
	fi
	keyfs_unmount
}

# Make the store unwritable, even for root: an immutable directory (ext4,
# xfs, btrfs) refuses new names and renames, an immutable journal appends
# (also through the descriptor keyfs holds).
store_readonly() {
	chattr +i "$STORE_DIR" 2>/dev/null ||
		skip "chattr +i does not work on $STORE_DIR"
	IMMUTABLE=1
	[[ ! -e $STORE.journal ]] || chattr +i "$STORE.journal"
}

store_writable() {
	chattr -i "$STORE_DIR"
	[[ ! -e $STORE.journal ]] || chattr -i "$STORE.journal"
	IMMUTABLE=
}

# The descriptions in the store's files (snapshot, then the keys the
# journal puts), one a line.
store_descs() {
	"$KEYFS_PY" -c '
import json, os, sys
for k in json.load(open(sys.argv[1]))["keys"]:
    print(k["description"])
if os.path.exists(sys.argv[1] + ".journal"):
    for line in open(sys.argv[1] + ".journal").read().splitlines()[1:]:
        for op in json.loads(line)["ops"]:
            if "put" in op:
                print(op["put"]["description"])' "$STORE"
}

# The file operations whose save fails: each says so and leaves nothing
# changed, so that what is seen is what the store holds.
check_failed_saves_undone() {
	run kerrno write "$MNT/session/k2" new
	refute_output OK
	# At most the pending entry the open made, never a key holding "new".
	run ls "$MNT/session"
	(($(grep -cx k2 <<<"$output") <= 1)) || fail "k2 listed twice: $output"
	[ "$(cat "$MNT/session/k2" 2>/dev/null)" != new ] || fail "k2 holds what failed to save"
	run kerrno mkdir "$MNT/session/d"
	refute_output OK
	ls_lacks "$MNT/session" d
	run kerrno unlink "$MNT/session/k1"
	refute_output OK
	ls_has "$MNT/session" k1
	run kerrno write "$MNT/session/k1" changed
	refute_output OK
	assert_equal "$(cat "$MNT/session/k1")" old
	run setfattr -n user.keyfs.perm -v 3f3f0000 "$MNT/session/k1"
	assert_failure
	assert_equal "$(getfattr --absolute-names --only-values -n user.keyfs.perm "$MNT/session/k1")" 0x3f070202
}

@test "a save that fails while mounted is undone: the change is not seen" {
	skip_unless_memory
	keyfs_mount -o "store=$STORE"
	echo -n old > "$MNT/session/k1"
	echo -n p > "$MNT/process/p"
	store_readonly
	check_failed_saves_undone
	store_writable
	echo -n v > "$MNT/session/k3"
	keyfs_unmount
	keyfs_mount -o "store=$STORE"
	ls_lacks "$MNT/session" k2
	ls_lacks "$MNT/session" d
	ls_has "$MNT/session" k3
	assert_equal "$(cat "$MNT/session/k1")" old
}

@test "a store that cannot be written from the start: every failed save is undone" {
	skip_unless_memory
	keyfs_mount -o "store=$STORE"
	echo -n old > "$MNT/session/k1"
	keyfs_unmount
	store_readonly
	# The process keyring is made at mount, and kept in memory only.
	keyfs_mount -o "store=$STORE"
	echo -n p > "$MNT/process/p"
	assert_equal "$(cat "$MNT/process/p")" p
	check_failed_saves_undone
}

@test "the process keyring and keys only it links are never written to the store" {
	skip_unless_memory
	keyfs_mount -o "store=$STORE"
	echo -n shared > "$MNT/session/both"
	echo -n only > "$MNT/process/proconly"
	mkdir "$MNT/process/pring"
	echo -n inner > "$MNT/process/pring/inner"
	ln "$MNT/session/both" "$MNT/process/both"
	echo -n v > "$MNT/session/after"
	run store_descs
	assert_success
	assert_line both
	assert_line after
	refute_line proconly
	refute_line pring
	refute_line inner
	refute_line --regexp '^_pid'
	grep -q "$(echo -n only | base64)" "$STORE" "$STORE.journal" && fail "a process keyring payload is in the store"
	keyfs_unmount
	keyfs_mount -o "store=$STORE"
	assert_equal "$(cat "$MNT/session/both")" shared
}

@test "a relative store= is the file in the directory keyfs was started in, also once in the background" {
	skip_unless_memory
	local mnt=$BATS_TEST_TMPDIR/mnt pid name=keyfs-test-$$-$RANDOM.json
	STORE=$STORE_DIR/$name
	mkdir -p "$mnt"
	(cd "$STORE_DIR" && "$KEYFS_BIN" -o "backend=memory,store=$name" "$mnt") 3>&-
	MNT=$mnt
	eventually mountpoint -q "$mnt"
	echo -n v > "$mnt/session/k"
	[ -f "$STORE" ] || fail "$name was not written in $STORE_DIR"
	[ ! -e "/$name" ] || { rm -f "/$name"; fail "/$name was written"; }
	pid=$(cat "$STORE.lock")
	fusermount3 -u "$mnt"
	eventually bash -c "! kill -0 $pid 2>/dev/null"
	keyfs_mount -o "store=$STORE"
	assert_equal "$(cat "$MNT/session/k")" v
}

@test "a second mount of one store is refused with one line naming the holder; exit status 1" {
	skip_unless_memory
	keyfs_mount -o "store=$STORE"
	echo -n first > "$MNT/session/k"
	MNT2=$BATS_TEST_TMPDIR/mnt2
	mkdir -p "$MNT2"
	# Another spelling of the same file, in the background as users mount.
	run -1 bash -c "cd '$STORE_DIR/..' && exec timeout 10 '$KEYFS_BIN' -o backend=memory,store=state/./keys.json '$MNT2' 3>&-"
	assert_equal "${#lines[@]}" 1
	assert_output --partial "$STORE_DIR/./keys.json"
	assert_output --partial "pid $KEYFS_PID"
	run mountpoint -q "$MNT2"
	assert_failure
	assert_equal "$(cat "$MNT/session/k")" first
	# Once the first is gone, the store mounts again.
	keyfs_unmount
	keyfs_mount -o "store=$STORE"
	assert_equal "$(cat "$MNT/session/k")" first
}

@test "a mount waits for a holder that says it is closing the store, and goes on once it is gone" {
	skip_unless_memory
	# What keyfs writes in the lock file once unmounted, before its last
	# snapshot; this holder keeps it for two seconds.
	flock -x "$STORE.lock" -c "echo \"\$\$ closing\" > '$STORE.lock'; sleep 2" 3>&- &
	local holder=$! t0
	eventually grep -q closing "$STORE.lock"
	t0=$(date +%s%N)
	keyfs_mount -o "store=$STORE"
	(($(date +%s%N) - t0 > 1000000000)) || fail "the mount did not wait for the closing holder"
	wait "$holder"
	echo -n v > "$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" v
	assert_equal "$(cat "$STORE.lock")" "$KEYFS_PID"
}

@test "a mount right after an unmount follows the keyfs still writing its last snapshot" {
	skip_unless_memory
	# 50,000 keys: the last snapshot takes a moment after fusermount3 -u
	# returns, and a restart mounts at once.
	"$KEYFS_PY" -c '
import json, sys
n = 50000
ses = {"serial": 10, "type": "keyring", "description": "_ses", "uid": 0, "gid": 0,
       "perm": "0x3f030000", "state": "valid", "links": list(range(100, 100 + n))}
keys = [ses] + [{"serial": 100 + i, "type": "user", "description": "k%d" % i, "uid": 0,
                 "gid": 0, "perm": "0x3f010000", "state": "valid", "payload": "eA=="}
                for i in range(n)]
json.dump({"format": 1, "next_serial": 100 + n, "session": 10, "keys": keys}, open(sys.argv[1], "w"))' "$STORE"
	keyfs_mount -o "store=$STORE"
	echo -n v > "$MNT/session/fresh"
	fusermount3 -u "$MNT"
	MNT2=$BATS_TEST_TMPDIR/mnt2
	mkdir -p "$MNT2"
	"$KEYFS_BIN" -f -o "backend=memory,store=$STORE" "$MNT2" 2>"$BATS_TEST_TMPDIR/second.log" 3>&- &
	local second=$! i
	for ((i = 0; i < 300; i++)); do
		mountpoint -q "$MNT2" && break
		kill -0 "$second" 2>/dev/null || break
		sleep 0.1
	done
	mountpoint -q "$MNT2" || fail "the second keyfs did not mount: $(cat "$BATS_TEST_TMPDIR/second.log")"
	assert_equal "$(cat "$MNT2/session/fresh")" v
	assert_equal "$(cat "$MNT2/session/k49999")" x
	fusermount3 -u "$MNT2"
	wait "$second"
	keyfs_unmount
}

@test "temporary files of a save killed midway are removed at mount; nothing else is" {
	skip_unless_memory
	keyfs_mount -o "store=$STORE"
	echo -n v > "$MNT/session/k"
	keyfs_unmount
	echo secret > "$STORE_DIR/.keys.json.tmp.4242.0"
	echo secret > "$STORE_DIR/.keys.json.tmp.77.3"
	echo secret > "$STORE_DIR/.keys.json.journal.tmp.55.1"
	echo keep > "$STORE_DIR/.keys.json.tmp.x"
	echo keep > "$STORE_DIR/.other.json.tmp.1.0"
	echo keep > "$STORE_DIR/keys.json.tmp.1.0"
	ln -s "$STORE" "$STORE_DIR/.keys.json.tmp.9.9"
	keyfs_mount -o "store=$STORE"
	[ ! -e "$STORE_DIR/.keys.json.tmp.4242.0" ] || fail "stale temporary file kept"
	[ ! -e "$STORE_DIR/.keys.json.tmp.77.3" ] || fail "stale temporary file kept"
	[ ! -e "$STORE_DIR/.keys.json.journal.tmp.55.1" ] || fail "stale journal temporary file kept"
	[ -e "$STORE_DIR/.keys.json.tmp.x" ]
	[ -e "$STORE_DIR/.other.json.tmp.1.0" ]
	[ -e "$STORE_DIR/keys.json.tmp.1.0" ]
	[ -L "$STORE_DIR/.keys.json.tmp.9.9" ]
	assert_equal "$(cat "$MNT/session/k")" v
}

@test "a temporary file of another user is not removed" {
	skip_unless_memory
	keyfs_mount -o "store=$STORE"
	keyfs_unmount
	echo x > "$STORE_DIR/.keys.json.tmp.5.0"
	chown 12345 "$STORE_DIR/.keys.json.tmp.5.0"
	keyfs_mount -o "store=$STORE"
	[ -e "$STORE_DIR/.keys.json.tmp.5.0" ]
}

# Reading another process's memory needs it to be dumpable (or
# CAP_SYS_PTRACE, and at least the capabilities it has): run keyfs and the
# reader with the same capabilities less CAP_SYS_PTRACE, so that only the
# dumpable flag decides.
@test "the daemon is not dumpable: its memory cannot be read, no core is written" {
	command -v setpriv >/dev/null || skip "no setpriv"
	local nocap=(setpriv --bounding-set=-sys_ptrace)
	"${nocap[@]}" sleep 5 &
	local sleeper=$!
	sleep 0.2
	"${nocap[@]}" "$KEYFS_PY" -c 'import sys; open("/proc/%s/mem" % sys.argv[1], "rb")' "$sleeper" ||
		{ kill "$sleeper"; skip "the reader cannot open a dumpable process's memory here"; }
	kill "$sleeper"
	wait "$sleeper" || true
	# exec all the way, so that the pid keyfs_start knows is keyfs's.
	printf '#!/bin/sh\nexec setpriv --bounding-set=-sys_ptrace "%s" "$@"\n' \
		"$KEYFS_BIN" > "$BATS_TEST_TMPDIR/keyfs-nocap"
	chmod +x "$BATS_TEST_TMPDIR/keyfs-nocap"
	local store=()
	[[ $KEYFS_BACKEND != memory ]] || store=(-o "store=$STORE")
	KEYFS_BIN=$BATS_TEST_TMPDIR/keyfs-nocap keyfs_mount "${store[@]}"
	echo -n secret > "$MNT/session/k"
	run "${nocap[@]}" "$KEYFS_PY" -c 'import sys; open("/proc/%s/mem" % sys.argv[1], "rb")' "$KEYFS_PID"
	assert_failure
	assert_output --partial "Permission denied"
}

# Every writable mapping of the daemon, searched for token.
count_in_daemon() {
	"$KEYFS_PY" - "$KEYFS_PID" "$1" <<'PY'
import sys
pid, token = sys.argv[1], sys.argv[2].encode()
n = 0
with open("/proc/%s/maps" % pid) as maps, open("/proc/%s/mem" % pid, "rb", 0) as mem:
    for line in maps:
        f = line.split()
        if not f[1].startswith("rw"):
            continue
        a, b = (int(x, 16) for x in f[0].split("-"))
        # Mappings past 1 GiB are reservations (a sanitizer's shadow);
        # read the rest in pieces that overlap by the token's length.
        if b - a > 1 << 30:
            continue
        step = 1 << 24
        for at in range(a, b, step):
            try:
                mem.seek(at)
                n += mem.read(min(step + len(token) - 1, b - at)).count(token)
            except OSError:
                pass
print(n)
PY
}

@test "a removed key's payload is nowhere in the daemon's memory, not even in libfuse's request buffer" {
	local token=wipe-$$-$RANDOM-$RANDOM-me store=()
	# With a store, its snapshot and the JSON text are searched too.
	[[ $KEYFS_BACKEND != memory ]] || store=(-o "store=$STORE")
	keyfs_mount "${store[@]}"
	"$KEYFS_PY" -c 'import sys; sys.stdout.write(sys.argv[1] * 400)' "$token" > "$MNT/session/big"
	assert_equal "$(head -c ${#token} "$MNT/session/big")" "$token"
	rm "$MNT/session/big"
	# The key is destroyed (and wiped) by the garbage collector, after
	# the unlink has answered, as in the kernel: give it a moment.
	local i
	for i in $(seq 20); do
		ls "$MNT/session" >/dev/null
		run count_in_daemon "$token"
		[[ $output != 0 ]] || break
		sleep 0.1
	done
	assert_success
	assert_output 0
}
