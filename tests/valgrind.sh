#!/bin/bash
# valgrind.sh: run keyfs under valgrind memcheck through a smoke workload on both backends; any memory error or definite leak fails.
#
# usage: tests/valgrind.sh [BACKEND...]	(default: memory kernel)
#
# KEYFS_BIN names the keyfs binary (default ./keyfs next to the sources).
# For each backend: mount keyfs in the foreground under valgrind, run a
# few hundred mixed operations (create, read, write, rename, mkdir, rmdir,
# ln, rm, xattrs, control files; KEYFS_VG_ROUNDS rounds of about 24,
# default 10), unmount, and take valgrind's exit status.  The memory backend runs twice on one store file, so saving and
# loading it are checked too.  The kernel backend works in a throwaway
# session keyring and touches nothing else.  Each daemon run is bounded
# (KEYFS_VG_TIMEOUT seconds, default 300).  Logs stay in KEYFS_VG_DIR
# (default a fresh directory under $TMPDIR, removed when all passed).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${KEYFS_BIN:-$here/../keyfs}
limit=${KEYFS_VG_TIMEOUT:-300}
rounds=${KEYFS_VG_ROUNDS:-10}	# about 24 operations each
vg_rc=99	# valgrind's exit status for an error, chosen to differ from keyfs's

die() { echo "valgrind.sh: $*" >&2; exit 1; }

# ---- one daemon run: start, wait for the mount, workload, unmount ----

MNT= PID= LOG=

start() {	# start LOGNAME ARGS...
	LOG=$dir/$1.vg.log
	shift
	mkdir -p "$MNT"
	timeout -s KILL "$limit" valgrind --quiet --error-exitcode=$vg_rc \
		--leak-check=full --errors-for-leak-kinds=definite \
		--show-leak-kinds=definite --num-callers=30 \
		--suppressions="$here/valgrind.supp" \
		--log-file="$LOG" "$bin" -f "$@" "$MNT" \
		>"$LOG.out" 2>&1 </dev/null &
	PID=$!
	for _ in $(seq 600); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$LOG" "$LOG.out" >&2
	die "keyfs did not mount $MNT"
}

stop() {	# unmount, wait for valgrind, fail on its verdict
	local rc=0
	cd "$dir"
	for _ in $(seq 50); do
		fusermount3 -u "$MNT" 2>/dev/null && break
		sleep 0.2
	done
	if mounted "$MNT"; then fusermount3 -u -z "$MNT"; fi
	wait "$PID" || rc=$?
	PID=
	if [ "$rc" -ne 0 ]; then
		cat "$LOG" >&2
		tail -20 "$LOG.out" >&2
		[ "$rc" -eq "$vg_rc" ] && die "valgrind found errors or definite leaks (above)"
		[ "$rc" -eq 137 ] && die "keyfs did not finish within ${limit} s"
		die "keyfs exited with status $rc"
	fi
	# --quiet leaves the log empty unless something was reported.
	if grep -q 'definitely lost\|Invalid\|uninitialised\|Mismatched' "$LOG"; then
		cat "$LOG" >&2
		die "valgrind reported (above)"
	fi
}

# Mounted, even when the daemon died (mountpoint(1) fails on ENOTCONN).
mounted() {
	awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

cleanup() {
	if [ -n "$MNT" ] && mounted "$MNT"; then
		fusermount3 -u -z "$MNT" 2>/dev/null || true
	fi
	if [ -n "$PID" ]; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
}

# ---- the workload ----

ops=0
run() { ops=$((ops + 1)); "$@"; }			# must succeed
try() { ops=$((ops + 1)); "$@" 2>/dev/null || true; }	# may fail (a revoked key...)

workload() {	# workload BASE: BASE is a directory for keys, as a mount path
	local base=$1 rel=${1#"$MNT"/} ctl=$MNT/.keyfs i
	run mkdir "$base"
	for i in $(seq 1 "$rounds"); do
		run sh -c "printf 'payload-%s' $i > '$base/k$i'"
		run cat "$base/k$i" >/dev/null
		run sh -c "printf 'rewritten-%s-%s' $i $i > '$base/k$i'"
		[ "$(cat "$base/k$i")" = "rewritten-$i-$i" ] || die "read back k$i"
		ops=$((ops + 1))
		run mv "$base/k$i" "$base/r$i"
		run mkdir "$base/d$i"
		run ln "$base/r$i" "$base/d$i/"
		run ls -l "$base/d$i" >/dev/null
		run setfattr -n user.keyfs.perm -v 3f3f0000 "$base/r$i"
		run getfattr --absolute-names -d -m - "$base/r$i" >/dev/null
		try setfattr -n user.keyfs.expiry -v 0 "$base/r$i"
		try getfattr --absolute-names -n user.keyfs.nosuch "$base/r$i"
		run sh -c "echo '$rel/r$i 3600' > '$ctl/timeout'"
		run sh -c "echo '$rel/r$i 0x3f010000' > '$ctl/setperm'"
		run sh -c "echo '$rel/r$i 0' > '$ctl/chown'"
		run rm "$base/d$i/r$i"
		run sh -c "echo '$rel/r$i $rel/d$i' > '$ctl/link'"
		run sh -c "echo '$rel/d$i/r$i $rel/d$i' > '$ctl/unlink'"
		case $((i % 3)) in
		0) run sh -c "echo '$rel/r$i' > '$ctl/revoke'"
		   try cat "$base/r$i" ;;
		1) run sh -c "echo '$rel/r$i' > '$ctl/invalidate'" ;;
		2) run rm "$base/r$i" ;;
		esac
		run rmdir "$base/d$i"
		try rm -f "$base/r$i"
		run touch "$base/t$i"		# a pending entry
		try chmod 600 "$base/t$i"
		run rm "$base/t$i"
	done
	run sh -c "printf x > '$base/last'"
	run sh -c "echo '$rel' > '$ctl/clear'"
	try sh -c "echo 'bad line with too many fields here' > '$ctl/revoke'"
	run cat "$ctl/keys" "$ctl/key-users" "$ctl/supports" >/dev/null
	run ls -la "$MNT" "$MNT/.keyfs" >/dev/null
	run ls -laR "$MNT/session" >/dev/null
	run rmdir "$base"
}

one() {	# one BACKEND
	local backend=$1 n0
	trap cleanup EXIT
	MNT=$dir/mnt-$backend
	n0=$ops
	case $backend in
	memory)
		start memory-1 -o backend=memory -o "store=$dir/store.json"
		workload "$MNT/session/vg"
		run sh -c "printf kept > '$MNT/session/kept'"
		# The session keyring starts empty, as keyctl session - makes
		# it: link user/ in, as a login would, so that it is possessed.
		run sh -c "echo user session > '$MNT/.keyfs/link'"
		run mkdir "$MNT/user/ring"
		run sh -c "printf kept2 > '$MNT/user/ring/%logon:svc:a'"
		stop
		# The store file again: it loads, and holds what was written.
		start memory-2 -o backend=memory -o "store=$dir/store.json"
		[ "$(cat "$MNT/session/kept")" = kept ] || die "store lost session/kept"
		run rm "$MNT/session/kept"
		workload "$MNT/user/ring/vg"
		stop
		;;
	kernel)
		# Inside the throwaway session keyring this script runs in.
		start kernel -o backend=kernel
		workload "$MNT/session/vg"
		stop
		;;
	esac
	trap - EXIT
	echo "valgrind: $backend ok: $((ops - n0)) operations, no errors, no definite leaks"
	echo $((ops - n0)) >"$dir/ops-$backend"
}

if [ "${1:-}" = --one ]; then
	dir=$2
	one "$3"
	exit 0
fi

command -v valgrind >/dev/null || die "valgrind is not installed (Debian: valgrind)"
[ -x "$bin" ] || die "no keyfs binary at $bin: build first or set KEYFS_BIN"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
export KEYFS_BIN=$bin
dir=${KEYFS_VG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/keyfs-vg.XXXXXX")}
mkdir -p "$dir"
for backend in "${@:-memory kernel}"; do
	for b in $backend; do
		if [ "$b" = kernel ]; then
			command -v keyctl >/dev/null || die "keyctl is not installed (Debian: keyutils)"
			keyctl session - "$0" --one "$dir" kernel
		else
			"$0" --one "$dir" "$b"
		fi
	done
done
[ -z "${KEYFS_VG_DIR:-}" ] && rm -rf "$dir"
exit 0
