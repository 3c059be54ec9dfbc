# keyfs.bash: the bats harness: mount keyfs for one test, unmount it, and name errnos.
#
# Every .bats file does `load lib/keyfs`, then
#	setup()    { keyfs_mount; }
#	teardown() { keyfs_unmount; }
# so each test has its own mount point, its own daemon and (on the kernel
# backend) its own session keyring, and the mount goes away even when the
# test fails.
#
# Environment:
#	KEYFS_BIN	the keyfs binary (required)
#	KEYFS_BACKEND	memory or kernel (default memory)

load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

bats_require_minimum_version 1.5.0

KEYFS_BACKEND=${KEYFS_BACKEND:-memory}
# A known umask: the mode a key is created with sets its permission, so
# `echo v >KEY` makes 0x3f070202 (shown 744) and mkdir 0x3f0f0a0a (755).
umask 022
export KEYFS_BACKEND

# A system python starts faster than a pyenv shim and is the same language.
if [[ -x /usr/bin/python3 ]]; then
	KEYFS_PY=/usr/bin/python3
else
	KEYFS_PY=python3
fi

# Bounded waits, in tenths of a second.
KEYFS_MOUNT_WAIT=${KEYFS_MOUNT_WAIT:-50}
KEYFS_EXIT_WAIT=${KEYFS_EXIT_WAIT:-100}
# A daemon still running this many seconds after its mount is wedged: the
# watchdog writes its threads' stacks to its log and kills it, so that the
# test fails with the stacks instead of hanging the whole run.
KEYFS_WATCHDOG=${KEYFS_WATCHDOG:-300}
KEYFS_WATCHDOG_PID=
# Where files shared by every run of the tests live (mount.bats's install
# state; the watchdog's reports, which CI prints when a step is stuck).
KEYFS_TEST_STATE=${KEYFS_TEST_STATE:-/run/keyfs-tests}

KEYFS_PID=
KEYFS_SESSION=
MNT=

# The file descriptors tests may hold open on files in the mount; bats
# itself uses 3 and 4.  keyfs_unmount closes them so the unmount is not busy.
KEYFS_TEST_FDS="7 8 9"

keyfs_require_bin()
{
	if [[ -z ${KEYFS_BIN:-} ]]; then
		fail "KEYFS_BIN is not set: point it at the keyfs binary"
		return 1
	fi
	if [[ ! -x $KEYFS_BIN ]]; then
		fail "KEYFS_BIN=$KEYFS_BIN is not an executable file"
		return 1
	fi
}

# Put this test in a fresh session keyring that links the user keyring, as
# a login session does, so keys under user/ are possessed.  Once per test:
# a second mount in the same test (remount) sees the same keys.
keyfs_new_session()
{
	[[ $KEYFS_BACKEND == kernel ]] || return 0
	[[ -z $KEYFS_SESSION ]] || return 0
	# new_session makes keyctl's parent (this shell) join the keyring.
	if ! keyctl new_session >/dev/null; then
		fail "keyctl new_session failed"
		return 1
	fi
	if ! keyctl link @u @s >/dev/null; then
		fail "keyctl link @u @s failed"
		return 1
	fi
	KEYFS_SESSION=$(keyctl id @s)
}

# keyfs_start MOUNTPOINT ARGS...: run "$KEYFS_BIN" -f ARGS... in the
# background and wait until MOUNTPOINT is mounted.  ARGS must name the
# mount point themselves; this is for tests of the command line.
keyfs_start()
{
	local mnt=$1 i rc=0
	shift
	keyfs_require_bin || return 1
	keyfs_new_session || return 1
	MNT=$mnt
	export MNT
	mkdir -p "$MNT"
	KEYFS_LOG="$BATS_TEST_TMPDIR/keyfs.log"
	export KEYFS_LOG
	# Close fd 3 in the daemon: bats waits for every holder of it.
	"$KEYFS_BIN" -f "$@" >>"$KEYFS_LOG" 2>&1 3>&- </dev/null &
	KEYFS_PID=$!
	keyfs_watchdog_start "$KEYFS_PID" "$KEYFS_LOG"
	for ((i = 0; i < KEYFS_MOUNT_WAIT; i++)); do
		if mountpoint -q "$MNT"; then
			return 0
		fi
		if ! kill -0 "$KEYFS_PID" 2>/dev/null; then
			wait "$KEYFS_PID" 2>/dev/null || rc=$?
			KEYFS_PID=
			fail "keyfs exited with status $rc before mounting; log:
$(cat "$KEYFS_LOG")"
			return 1
		fi
		sleep 0.1
	done
	fail "keyfs did not mount $MNT within $((KEYFS_MOUNT_WAIT / 10)) s; log:
$(cat "$KEYFS_LOG")"
	return 1
}

# keyfs_watchdog_start PID LOG: see KEYFS_WATCHDOG.  The watchdog holds
# none of bats's descriptors, so bats never waits for it.
keyfs_watchdog_start()
{
	local pid=$1 log=$2

	keyfs_watchdog_stop
	(
		# wait, unlike a foreground sleep, lets the TERM trap run at once
		trap 'kill "$s" 2>/dev/null; exit 0' TERM
		sleep "$KEYFS_WATCHDOG" &
		s=$!
		wait "$s"
		kill -0 "$pid" 2>/dev/null || exit 0
		keyfs_wedge_report "$pid" >>"$log" 2>&1
		# and where CI's diagnostics look, should the test's log be lost
		mkdir -p "$KEYFS_TEST_STATE" 2>/dev/null &&
			cat "$log" >>"$KEYFS_TEST_STATE/watchdog.log" 2>/dev/null
		kill -9 "$pid" 2>/dev/null
	) 3>&- 4>&- </dev/null >/dev/null 2>&1 &
	KEYFS_WATCHDOG_PID=$!
}

# keyfs_wedge_report PID: what a wedged daemon and everything waiting on
# a FUSE file system are doing, in user space (gdb) and in the kernel.
keyfs_wedge_report()
{
	local pid=$1 t p

	echo "keyfs-test-watchdog: keyfs (pid $pid) still runs after $KEYFS_WATCHDOG s; its threads:"
	if command -v gdb >/dev/null 2>&1; then
		timeout 60 gdb -p "$pid" -batch -ex 'thread apply all bt' 2>&1
	fi
	for t in /proc/"$pid"/task/*; do
		echo "-- thread ${t##*/} ($(cat "$t/wchan" 2>/dev/null)):"
		cat "$t/stack" 2>/dev/null
	done
	echo "-- processes waiting in FUSE:"
	for p in /proc/[0-9]*; do
		for t in "$p"/task/*; do
			grep -q fuse "$t/stack" 2>/dev/null || continue
			echo "pid ${p##*/} thread ${t##*/}: $(timeout 5 cat "$p/cmdline" 2>/dev/null | tr '\0' ' ' | cut -c1-200)"
			cat "$t/stack" 2>/dev/null
		done
	done
	timeout 20 ps -eo pid,ppid,stat,etimes,wchan:32,args --forest 2>&1 | grep -v ' \[' | tail -60
}

keyfs_watchdog_stop()
{
	[[ -n $KEYFS_WATCHDOG_PID ]] || return 0
	kill "$KEYFS_WATCHDOG_PID" 2>/dev/null
	wait "$KEYFS_WATCHDOG_PID" 2>/dev/null
	KEYFS_WATCHDOG_PID=
}

# keyfs_mount [ARGS...]: mount the backend under test on
# $BATS_TEST_TMPDIR/mnt with ARGS (e.g. -o root=@s) and export MNT.
keyfs_mount()
{
	keyfs_start "$BATS_TEST_TMPDIR/mnt" \
		-o "backend=$KEYFS_BACKEND" "$@" "$BATS_TEST_TMPDIR/mnt"
}

# keyfs_is_mounted PATH: something is mounted on PATH, even a FUSE mount
# whose daemon died (mountpoint(1) stats the path and fails with ENOTCONN).
keyfs_is_mounted()
{
	awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' \
		/proc/self/mountinfo
}

# A ThreadSanitizer build runs a thread of its own in the daemon, and
# makes mlock(2) a no-op: tests that count threads or need mlock to fail
# skip on it.
keyfs_has_tsan() { grep -q __tsan_init "$KEYFS_BIN"; }

# Unmount and reap the daemon; fail on sanitizer reports in its log.
# Safe to call twice and when nothing is mounted.
keyfs_unmount()
{
	local i fd rc=0 killed=

	for fd in $KEYFS_TEST_FDS; do
		eval "exec $fd>&-"
	done
	if [[ -n $MNT && $PWD == "$MNT"* ]]; then
		cd "$BATS_TEST_TMPDIR" || true
	fi
	if [[ -n $MNT ]] && keyfs_is_mounted "$MNT"; then
		for ((i = 0; i < 10; i++)); do
			fusermount3 -u "$MNT" 2>/dev/null && break
			sleep 0.1
		done
		if keyfs_is_mounted "$MNT"; then
			fusermount3 -u -z "$MNT" 2>/dev/null || true
		fi
	fi
	if [[ -n $KEYFS_PID ]]; then
		for ((i = 0; i < KEYFS_EXIT_WAIT; i++)); do
			kill -0 "$KEYFS_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$KEYFS_PID" 2>/dev/null; then
			kill -9 "$KEYFS_PID" 2>/dev/null
			killed=1
		fi
		wait "$KEYFS_PID" 2>/dev/null || rc=$?
		KEYFS_PID=
	fi
	keyfs_watchdog_stop
	if [[ -n ${KEYFS_LOG:-} && -f $KEYFS_LOG ]] &&
	   grep -q 'keyfs-test-watchdog' "$KEYFS_LOG"; then
		fail "keyfs was wedged; the watchdog killed it; log:
$(cat "$KEYFS_LOG")"
		return 1
	fi
	# fail only prints and returns 1: bats may run teardown without -e.
	if [[ -n ${KEYFS_LOG:-} && -f $KEYFS_LOG ]] &&
	   grep -qE 'AddressSanitizer|LeakSanitizer|ThreadSanitizer|runtime error' "$KEYFS_LOG"; then
		fail "keyfs reported a sanitizer error; log:
$(cat "$KEYFS_LOG")"
		return 1
	fi
	if [[ -n $killed ]]; then
		fail "keyfs did not exit after unmount; killed it; log:
$(cat "$KEYFS_LOG")"
		return 1
	fi
	if ((rc != 0)); then
		fail "keyfs exited with status $rc after unmount; log:
$(cat "$KEYFS_LOG")"
		return 1
	fi
	return 0
}

# A keyfs started without -f (or by mount.fuse3) has no pid of ours: find
# it by the mount point, which is unique to the test.
detached_pids()
{
	local p
	for p in /proc/[0-9]*; do
		[[ ${p#/proc/} != "$$" ]] || continue
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$MNT" &&
			echo "${p#/proc/}"
	done
	return 0
}

# Unmount $MNT and wait for a detached keyfs serving it to exit.
detached_cleanup()
{
	local i
	if keyfs_is_mounted "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT"
	fi
	for ((i = 0; i < 50; i++)); do
		[[ -z $(detached_pids) ]] && return 0
		sleep 0.1
	done
	fail "a detached keyfs did not exit after unmount: $(detached_pids)"
}

skip_unless_kernel()
{
	[[ $KEYFS_BACKEND == kernel ]] || skip "kernel backend only"
}

skip_unless_memory()
{
	[[ $KEYFS_BACKEND == memory ]] || skip "memory backend only"
}

# skip_unless_cap NAME: skip unless `keyctl supports` says have_NAME=1 (or
# NAME=1 when NAME already starts with have_).
skip_unless_cap()
{
	local cap=$1
	[[ $cap == have_* ]] || cap=have_$cap
	keyctl supports 2>/dev/null | grep -qx "$cap=1" ||
		skip "no $cap in keyctl supports"
}

# kerrno OP ARGS...: do one system call (or open/IO/close) and print the
# errno's name, or OK.  Always exits 0 unless the usage is wrong, so tests
# say `run kerrno rmdir "$d"; assert_output ENOTEMPTY`.
#
#	open PATH [FLAGS]		FLAGS: r w rw, plus c(reat) t(runc)
#					a(ppend) x(cl) d(irectory); default r
#	read PATH			open, read everything, close
#	write PATH TEXT [FLAGS]		open (default wct), write TEXT, close
#	writefile PATH SRC [FLAGS]	the same with SRC's bytes
#	writesize PATH N [FLAGS]	the same with N bytes of 'x'
#	rename A B | rename_noreplace A B | rename_exchange A B
#	link A B | symlink TARGET PATH
#	mkdir PATH | rmdir PATH | unlink PATH
#	truncate PATH N | ftruncate PATH N (opened O_WRONLY)
#	mknod PATH [fifo|chr|blk|reg|sock]	(default fifo)
#	listdir PATH | stat PATH | lstat PATH | readlink PATH
#	chmod PATH OCTAL | chown PATH UID GID | utime PATH
#	getxattr PATH NAME | setxattr PATH NAME VALUE
#	removexattr PATH NAME | listxattr PATH
# Errors of close() count: keyfs commits writes at close.
KEYFS_ERRNO_PY='
import ctypes, errno, os, stat, sys

NAMES = {errno.EOPNOTSUPP: "EOPNOTSUPP", errno.EDEADLK: "EDEADLK",
	 errno.EAGAIN: "EAGAIN"}

def oflags(s):
	if "r" in s and "w" in s:
		f = os.O_RDWR
	elif "w" in s:
		f = os.O_WRONLY
	else:
		f = os.O_RDONLY
	for c, b in (("c", os.O_CREAT), ("t", os.O_TRUNC),
		     ("a", os.O_APPEND), ("x", os.O_EXCL),
		     ("d", os.O_DIRECTORY)):
		if c in s:
			f |= b
	return f

def write_all(path, data, flags):
	fd = os.open(path, oflags(flags), 0o644)
	try:
		while data:
			n = os.write(fd, data)
			data = data[n:]
	finally:
		os.close(fd)

def renameat2(a, b, flag):
	libc = ctypes.CDLL(None, use_errno=True)
	AT_FDCWD = -100
	if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(),
			  flag) != 0:
		e = ctypes.get_errno()
		raise OSError(e, os.strerror(e))

def run(op, a):
	if op == "open":
		os.close(os.open(a[0], oflags(a[1] if len(a) > 1 else "r")))
	elif op == "read":
		fd = os.open(a[0], os.O_RDONLY)
		try:
			while os.read(fd, 65536):
				pass
		finally:
			os.close(fd)
	elif op == "write":
		write_all(a[0], a[1].encode(), a[2] if len(a) > 2 else "wct")
	elif op == "writefile":
		with open(a[1], "rb") as f:
			data = f.read()
		write_all(a[0], data, a[2] if len(a) > 2 else "wct")
	elif op == "writesize":
		write_all(a[0], b"x" * int(a[1]), a[2] if len(a) > 2 else "wct")
	elif op == "rename":
		os.rename(a[0], a[1])
	elif op == "rename_noreplace":
		renameat2(a[0], a[1], 1)
	elif op == "rename_exchange":
		renameat2(a[0], a[1], 2)
	elif op == "link":
		os.link(a[0], a[1])
	elif op == "symlink":
		os.symlink(a[0], a[1])
	elif op == "mkdir":
		os.mkdir(a[0])
	elif op == "rmdir":
		os.rmdir(a[0])
	elif op == "unlink":
		os.unlink(a[0])
	elif op == "truncate":
		os.truncate(a[0], int(a[1]))
	elif op == "ftruncate":
		fd = os.open(a[0], os.O_WRONLY)
		try:
			os.ftruncate(fd, int(a[1]))
		finally:
			os.close(fd)
	elif op == "mknod":
		kind = a[1] if len(a) > 1 else "fifo"
		mode = {"fifo": stat.S_IFIFO, "chr": stat.S_IFCHR,
			"blk": stat.S_IFBLK, "reg": stat.S_IFREG,
			"sock": stat.S_IFSOCK}[kind]
		dev = os.makedev(1, 3) if kind in ("chr", "blk") else 0
		os.mknod(a[0], mode | 0o600, dev)
	elif op == "listdir":
		os.listdir(a[0])
	elif op == "stat":
		os.stat(a[0])
	elif op == "lstat":
		os.lstat(a[0])
	elif op == "readlink":
		os.readlink(a[0])
	elif op == "chmod":
		os.chmod(a[0], int(a[1], 8))
	elif op == "chown":
		os.chown(a[0], int(a[1]), int(a[2]))
	elif op == "utime":
		os.utime(a[0])
	elif op == "getxattr":
		os.getxattr(a[0], a[1])
	elif op == "setxattr":
		os.setxattr(a[0], a[1], a[2].encode())
	elif op == "removexattr":
		os.removexattr(a[0], a[1])
	elif op == "listxattr":
		os.listxattr(a[0])
	else:
		sys.stderr.write("kerrno: unknown operation %s\n" % op)
		sys.exit(2)

try:
	run(sys.argv[1], sys.argv[2:])
	print("OK")
except OSError as e:
	print(NAMES.get(e.errno, errno.errorcode.get(e.errno, str(e.errno))))
'

# intr_start OUT PATH TEXT: start, in the background, a process that
# writes TEXT to PATH (one write(2)) and whom a SIGUSR1 stops waiting: its
# handler raises, so Python does not retry the write.  It prints EINTR,
# OK, or the errno's name into OUT; INTR_PID is its pid.  Send the signal
# only once the write is under way (the handler is set before).
KEYFS_INTR_PY='
import errno, os, signal, sys

def stop(*args):
	raise InterruptedError

signal.signal(signal.SIGUSR1, stop)
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
	os.write(fd, sys.argv[2].encode())
	print("OK")
except InterruptedError:
	print("EINTR")
except OSError as e:
	print(errno.errorcode.get(e.errno, str(e.errno)))
'
intr_start()
{
	local out=$1
	shift
	"$KEYFS_PY" -c "$KEYFS_INTR_PY" "$@" >"$out" &
	INTR_PID=$!
}

# intr_stop PID OUT: signal PID, a writer from intr_start into OUT; it
# must stop waiting at once and say EINTR.
intr_stop()
{
	kill -USR1 "$1"
	gone_within "$1" || fail "the interrupted writer still waits"
	wait "$1"
	assert_equal "$(cat "$2")" EINTR
}

# wait_file FILE [SECONDS]: wait up to SECONDS (5) for FILE to be
# written, as a callout writes its pid.
wait_file()
{
	local i n=$((${2:-5} * 10))
	for ((i = 0; i < n; i++)); do
		[[ -s $1 ]] && return 0
		sleep 0.1
	done
	fail "no $1 within ${2:-5} s"
}

# gone_within PID: wait up to 5 s for PID to exit (a zombie counts).
gone_within()
{
	local i
	for ((i = 0; i < 50; i++)); do
		[[ -e /proc/$1 ]] || return 0
		grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# hold KEY...: link each KEY into the session keyring of a process of its
# own, so that it outlives its last link keyfs can see without being
# possessed by keyfs (the kernel's garbage collector would take it at once,
# and a collected key is ENOKEY, as an invalidated one); sets HOLDER.
# The holder links as the key's user or possessor: give the user link.
hold()
{
	local f=$BATS_TEST_TMPDIR/held links="" k i
	for k in "$@"; do links+="keyctl link $k @s && "; done
	keyctl session - sh -c "$links touch $f && exec sleep 30" \
		>/dev/null 2>&1 3>&- &
	HOLDER=$!
	for ((i = 0; i < 50; i++)); do
		[[ -e $f ]] && return 0
		sleep 0.1
	done
	return 1
}

# unhold: end hold's process, and the keys' last link with it.
unhold()
{
	kill "$HOLDER"
	wait "$HOLDER" 2>/dev/null || true
}

kerrno()
{
	"$KEYFS_PY" -c "$KEYFS_ERRNO_PY" "$@"
}

# eventually CMD...: retry CMD for up to ~3 s (the default entry and attr
# timeouts are 1 s); the last try's output is shown when it still fails.
eventually()
{
	local i
	for ((i = 0; i < 30; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	"$@"
}

# output_is EXPECTED CMD...: true when CMD prints exactly EXPECTED.
output_is()
{
	local want=$1 got
	shift
	got=$("$@" 2>&1) || true
	if [[ $got != "$want" ]]; then
		printf 'expected: %s\nactual:   %s\n' "$want" "$got" >&2
		return 1
	fi
}

# ls_has DIR NAME: DIR's listing (ls -A) has exactly NAME as an entry.
# ls on purpose: the listing (readdir) is what is under test.
# shellcheck disable=SC2010
ls_has()
{
	ls -A -- "$1" | grep -qxF -- "$2"
}

ls_lacks()
{
	! ls_has "$@"
}

# Numbers from stat(1): inode (the serial), size, link count, uid:gid.
ino() { stat -c %i -- "$1"; }
fsize() { stat -c %s -- "$1"; }
nlink() { stat -c %h -- "$1"; }

# The kernel's view of one key, by serial: its type and description.
ktype() { keyctl rdescribe "$1" | cut -d';' -f1; }
kdesc() { keyctl rdescribe "$1" | cut -d';' -f5-; }

# klinks RING SERIAL: the keyring RING (a serial or @s) links SERIAL.
klinks()
{
	keyctl rdescribe "$2" >/dev/null 2>&1 || return 1
	keyctl rlist "$1" 2>/dev/null | tr ' ' '\n' | grep -qx -- "$2"
}

# requests_sent OPCODE: how many OPCODE requests (READ, READLINK, ...) the
# daemon's log shows so far; the mount must have been made with -d.
requests_sent() { grep -c "opcode: $1 (" "$KEYFS_LOG" || true; }

# xget NAME PATH / xset NAME VALUE PATH: a user.keyfs.NAME attribute, the
# value written as a JSON string as the man page shows it.
xget() { getfattr --absolute-names --only-values -n "user.keyfs.$1" -- "$2"; }
xset() { setfattr -n "user.keyfs.$1" -v "\"$2\"" -- "$3"; }
