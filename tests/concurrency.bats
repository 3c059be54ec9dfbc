#!/usr/bin/env bats
# concurrency.bats: the worker-thread loop: -s, max_threads, max_idle_threads, clone_fd, and many callers at once.

load lib/keyfs

teardown()
{
	local f
	for f in "$BATS_TEST_TMPDIR"/*.pid; do
		[[ -f $f ]] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	keyfs_unmount
}

threads() { ls "/proc/$KEYFS_PID/task" | wc -l; }
fuse_fds() { find "/proc/$KEYFS_PID/fd" -lname /dev/fuse | wc -l; }

@test "-s serves from one thread, the default from a pool" {
	! keyfs_has_tsan || skip "ThreadSanitizer runs a thread of its own"
	keyfs_mount -s
	ls "$MNT/session" >/dev/null
	# the loop and fs-notify.c's notifier; the kernel backend's own
	# threads, its reader of /proc/keys (src/kernel/proc.c), started once
	# an expiry is asked for, and its describers (prefetch.c), started by
	# the first listing of two keys or more, serve no request: not counted
	assert_equal "$(cat /proc/"$KEYFS_PID"/task/*/comm | grep -vc -e '^keyfs-prockeys$' -e '^keyfs-describe$')" 2
	keyfs_unmount
	keyfs_mount
	ls "$MNT/session" >/dev/null
	(($(threads) >= 3)) || fail "only $(threads) threads"
}

# keyfs's own workers are named so (src/fuse/pool.c); libfuse's are not.
workers() { cat /proc/"$KEYFS_PID"/task/*/comm | grep -c '^keyfs-worker$'; }
# "TID:TIMES-SCHEDULED" for each of keyfs's workers; how many of them ran
# between two such lists.
worker_runs()
{
	local t
	for t in /proc/"$KEYFS_PID"/task/*; do
		[[ $(cat "$t/comm") == keyfs-worker ]] || continue
		echo "${t##*/}:$(cut -d' ' -f3 "$t/schedstat")"
	done
}
ran_between() { comm -13 <(sort <<<"$1") <(sort <<<"$2") | wc -l; }

@test "one worker reads requests one after the other; libfuse's pool with max_idle_threads" {
	keyfs_mount
	echo -n v >"$MNT/session/k"
	# The create may have waited for the kernel's invalidations without
	# the lock (fs_forget_wait), another worker reading meanwhile: count
	# the workers that ran during the reads (their schedstat's third
	# field counts the times each was scheduled).
	local i before after
	before=$(worker_runs)
	for ((i = 0; i < 100; i++)); do
		cat "$MNT/session/k" >/dev/null
		stat "$MNT/session/k" >/dev/null
	done
	after=$(worker_runs)
	# no read waited without the lock: nobody else had to read
	assert_equal "$(ran_between "$before" "$after")" 1
	keyfs_unmount
	keyfs_mount -o max_idle_threads=4
	echo -n v >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" v
	assert_equal "$(workers)" 0
}

@test "clone_fd gives the worker a /dev/fuse descriptor of its own" {
	keyfs_mount
	ls "$MNT/session" >/dev/null
	assert_equal "$(fuse_fds)" 1
	keyfs_unmount
	keyfs_mount -o clone_fd
	ls "$MNT/session" >/dev/null
	(($(fuse_fds) >= 2)) || fail "$(fuse_fds) /dev/fuse descriptors"
}

@test "max_threads must be at least 1" {
	run timeout 10 "$KEYFS_BIN" -f -o "backend=$KEYFS_BACKEND,max_threads=0" \
		"$BATS_TEST_TMPDIR"
	assert_failure
	assert_output --partial max_threads
}

@test "memory: max_threads=1 leaves no thread for others while a callout runs" {
	skip_unless_memory
	local p=$BATS_TEST_TMPDIR/callout.sh
	printf '#!/bin/sh\necho $$ >%s/callout.pid\nexec sleep 1000\n' \
		"$BATS_TEST_TMPDIR" >"$p"
	chmod +x "$p"
	keyfs_mount -o "max_threads=1,request_key=$p"
	echo -n v >"$MNT/session/k"
	kerrno write "$MNT/.keyfs/request" "user hang:1 x" w >/dev/null &
	local req=$! i
	for ((i = 0; i < 50; i++)); do
		[[ -s $BATS_TEST_TMPDIR/callout.pid ]] && break
		sleep 0.1
	done
	(cat "$MNT/session/k" >/dev/null && touch "$BATS_TEST_TMPDIR/cat.done") &
	local cat=$!
	sleep 1
	[[ ! -e $BATS_TEST_TMPDIR/cat.done ]] ||
		fail "a second request was answered with max_threads=1"
	kill -9 "$(cat "$BATS_TEST_TMPDIR/callout.pid")"
	rm -f "$BATS_TEST_TMPDIR/callout.pid"
	wait "$req" "$cat"
	[[ -e $BATS_TEST_TMPDIR/cat.done ]] || fail "the cat never finished"
}

# in_parallel N SECS SCRIPT ARG...: N copies of the Python SCRIPT at once,
# copy I run as SCRIPT I ARG..., each under a limit of SECS; fails the
# test unless every copy exits 0.
in_parallel()
{
	local n=$1 secs=$2 script=$3 i pids=() rc=0
	shift 3
	for ((i = 1; i <= n; i++)); do
		timeout "$secs" "$KEYFS_PY" -c "$script" "$i" "$@" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || rc=$?
	done
	((rc == 0)) || fail "a worker failed or took over $secs s (status $rc)"
}

# load_worker N: writes, rewrites, reads back and removes its own keys,
# and reads the shared ones; any error or wrong payload fails it.
LOAD_PY='
import os, sys
n, mnt = int(sys.argv[1]), sys.argv[2]
d = os.path.join(mnt, "session", "w%d" % n)
os.mkdir(d)
for i in range(40):
	p = os.path.join(d, "k%d" % i)
	for v in (b"one-%d" % i, b"two-%d" % i):
		with open(p, "wb") as f:
			f.write(v)
		with open(p, "rb") as f:
			got = f.read()
		if got != v:
			sys.exit("%s: %r, not %r" % (p, got, v))
	# the xattrs (the kernel backend asks its /proc/keys thread for the
	# expiry) and a rename, so that a ThreadSanitizer build sees them
	# run beside the rest
	os.setxattr(p, "user.keyfs.expiry", b"+3600")
	if os.getxattr(p, "user.keyfs.expiry") == b"0":
		sys.exit("%s: no expiry" % p)
	os.getxattr(p, "user.keyfs.perm")
	os.rename(p, p + "x")
	os.rename(p + "x", p)
	with open(os.path.join(mnt, "session", "shared"), "rb") as f:
		if f.read() != b"shared":
			sys.exit("shared changed")
	os.stat(os.path.join(mnt, "session"))
	os.listdir(d)
for i in range(40):
	os.unlink(os.path.join(d, "k%d" % i))
os.rmdir(d)
'

@test "several readers and writers at once: no errors, every payload right" {
	keyfs_mount
	echo -n shared >"$MNT/session/shared"
	in_parallel 6 120 "$LOAD_PY" "$MNT"
	assert_equal "$(cat "$MNT/session/shared")" shared
	run ls "$MNT/session"
	assert_line shared
	refute_line --regexp '^w[0-9]$'
}

# A writer's pass in one keyring: make or rewrite one of four names of its
# own, and remove it every other pass.
WRITER_PY='
import os, sys
me, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tag = sys.argv[4] if len(sys.argv) > 4 else "w"
for i in range(n):
	p = os.path.join(d, "%s%s_%d" % (tag, me, i % 4))
	fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
	os.write(fd, b"v%d" % i)
	os.close(fd)
	if i % 2:
		os.unlink(p)
'

# After a change keyfs waits for the kernel to drop what it cached
# (src/fuse/fs-notify.c, fs_forget_wait).  That wait once held keyfs's
# lock while an invalidation waited in the kernel for another writer's
# request in the same keyring, which keyfs could not answer: every request
# stopped for the wait's 250 ms, and four writers managed about ten
# passes a second between them (1,200 passes: two minutes; now well under
# a second).
@test "four writers in one keyring do not stall one another" {
	keyfs_mount
	mkdir "$MNT/session/w"
	in_parallel 4 60 "$WRITER_PY" "$MNT/session/w" 300
	run ls "$MNT/session/w"
	assert_output "$(printf 'w%d_0\nw%d_2\n' 1 1 2 2 3 3 4 4)"
	assert_equal "$(cat "$MNT/session/w/w3_2")" v298
}

# The same wait with more writers than worker threads: every worker in a
# handler, each waiting for an invalidation that waits behind a request
# none was free to read, ran to the timeout every time.  Here a keyring
# shown in two places makes every create and unlink invalidate its name in
# the other (two threads, eight writers: 141 s before, 1-2 s now).
@test "more writers in one keyring than worker threads do not stall" {
	keyfs_mount -o max_threads=2
	mkdir "$MNT/session/w" "$MNT/session/x"
	echo "session/w session/x" >"$MNT/.keyfs/link"
	in_parallel 4 60 "$WRITER_PY" "$MNT/session/w" 100 &
	local one=$!
	in_parallel 4 60 "$WRITER_PY" "$MNT/session/x/w" 100 x || fail "in x/w"
	wait "$one" || fail "in w"
	run ls "$MNT/session/x/w"
	assert_output "$(printf 'w%d_0\nw%d_2\n' 1 1 2 2 3 3 4 4)$(printf '\nx%d_0\nx%d_2' 1 1 2 2 3 3 4 4)"
}

# With -s no other thread reads requests while a change waits for that
# invalidation: the request it waits behind was never read, and every
# change ran to the wait's timeout (four writers: over a minute).
@test "-s: writers in one keyring do not stall one another" {
	keyfs_mount -s
	mkdir "$MNT/session/w"
	in_parallel 4 60 "$WRITER_PY" "$MNT/session/w" 300
	run ls "$MNT/session/w"
	assert_output "$(printf 'w%d_0\nw%d_2\n' 1 1 2 2 3 3 4 4)"
}

# mix_worker SEED DIR SECONDS MNT: every kind of call on twenty names in
# DIR and in keyrings below it, at random, from several processes at once:
# files, keyrings, renames across keyrings, hard links, the perm
# attribute and the control files.  Races between the processes make
# some calls fail; an errno outside the set below (EIO, ENOTCONN from a
# daemon gone, EBADF, ...) fails the worker.
MIX_PY='
import errno, os, random, sys, time
random.seed(int(sys.argv[1]))
d, secs, mnt = sys.argv[2], float(sys.argv[3]), sys.argv[4]
expected = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.EINVAL,
	    errno.EKEYREVOKED, errno.EKEYEXPIRED, errno.ENOKEY, errno.ENOTDIR,
	    errno.EISDIR, errno.EXDEV, errno.ESTALE, errno.EACCES, errno.EPERM,
	    errno.EOPNOTSUPP}
subs = ["", "/s1", "/s2", "/s1/t"]
rel = lambda p: os.path.relpath(p, mnt)
def ctl(f, line):
	with open(os.path.join(mnt, ".keyfs", f), "w") as c:
		c.write(line + "\n")
end = time.time() + secs
calls = 0
while time.time() < end:
	calls += 1
	sub = random.choice(subs)
	name = "%s%s/k%d" % (d, sub, random.randrange(20))
	other = "%s%s/k%d" % (d, random.choice(subs), random.randrange(20))
	ring = d + random.choice(["", "/s1"]) + "/" + random.choice(["s1", "s2", "t"])
	op = random.randrange(16)
	try:
		if op == 0:
			with open(name, "w") as f:
				f.write("v%d" % calls)
		elif op == 1:
			with open(name) as f:
				f.read()
		elif op == 2:
			os.unlink(name)
		elif op == 3:
			os.listdir(d + sub)
		elif op == 4:
			os.stat(name)
		elif op == 5:
			os.rename(name, other)
		elif op == 6:
			os.mkdir(ring)
		elif op == 7:
			os.rmdir(ring)
		elif op == 8:
			ctl("revoke", rel(name))
		elif op == 9:
			ctl("link", "%s %s" % (rel(name), rel(d + random.choice(subs[:3]))))
		elif op == 10:
			ctl("unlink", "%s %s" % (rel(name), rel(d + sub)))
		elif op == 11:
			ctl("timeout", "%s %d" % (rel(name), random.choice([0, 1, 100])))
		elif op == 12:
			os.setxattr(name, "user.keyfs.perm", b"0x3f3f0000")
		elif op == 13:
			os.link(name, other)
		elif op == 14:
			for root, dirs, files in os.walk(d):
				for f in files:
					os.lstat(os.path.join(root, f))
		else:
			ctl("invalidate", rel(name))
	except OSError as e:
		if e.errno not in expected:
			sys.exit("call %d (op %d on %s): %s" % (calls, op, name, os.strerror(e.errno)))
'

@test "every kind of call from four processes at once in one keyring: only the errors races give" {
	keyfs_mount
	mkdir "$MNT/session/mix"
	in_parallel 4 60 "$MIX_PY" "$MNT/session/mix" 4 "$MNT"
	run ls -R "$MNT/session/mix"
	assert_success
}
