#!/bin/bash
# stress.sh: mount keyfs and run tests/stress.py against it on each backend; a broken invariant, a dead daemon or a sanitizer report fails.
#
# usage: tests/stress.sh [BACKEND...]	(default: memory kernel)
#
# KEYFS_BIN names the keyfs binary (default ./keyfs next to the sources;
# an ASan/UBSan build finds the most).  KEYFS_STRESS_SECONDS (default 30)
# and KEYFS_STRESS_PROCS (default 4) size each run; KEYFS_STRESS_OPTS adds
# daemon arguments (e.g. "-o attr_timeout=0,entry_timeout=0" or "-s").  The kernel backend
# runs with a process that changes the keyrings with keyctl behind
# keyfs's back, and its listings are compared with the kernel's links at
# the end.  Each run works in a throwaway session keyring and a mount
# point of its own, always unmounted; the daemon's log is kept in
# KEYFS_STRESS_DIR (default a fresh directory under $TMPDIR, removed when
# all passed).  Not part of make check: a run takes a while and its
# interleavings differ each time (docs/TESTING.md).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${KEYFS_BIN:-$here/../keyfs}
secs=${KEYFS_STRESS_SECONDS:-30}
procs=${KEYFS_STRESS_PROCS:-4}
read -r -a xopts <<<"${KEYFS_STRESS_OPTS:-}"
py=$(command -v python3)
work=${KEYFS_STRESS_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/keyfs-stress.XXXXXX")}
mkdir -p "$work"
status=0

# run_one BACKEND: the daemon in the foreground, stress.py, the unmount.
run_one()
{
	local backend=$1 mnt="$work/mnt-$1" log="$work/$1.log" flags=()

	[[ $backend == kernel ]] && flags=(--behind --check-kernel)
	mkdir -p "$mnt"
	# shellcheck disable=SC2016	# expanded by the inner shell
	keyctl session - bash -c '
		bin=$1 backend=$2 mnt=$3 log=$4 py=$5 secs=$6 procs=$7 nx=$8
		shift 8
		"$bin" "$backend" "$mnt" -f -o "backend=$backend" "${@:1:nx}" 2>"$log" &
		shift "$nx"
		daemon=$!
		trap "fusermount3 -u -z \"\$mnt\" 2>/dev/null; kill \$daemon 2>/dev/null" EXIT
		for _ in $(seq 100); do
			mountpoint -q "$mnt" && break
			sleep 0.1
		done
		mountpoint -q "$mnt" || { echo "stress: $backend: no mount" >&2; exit 1; }
		rc=0
		"$py" "$(dirname "$0")/stress.py" "$mnt" "$secs" "$procs" "$@" || rc=1
		kill -0 $daemon 2>/dev/null || { echo "stress: $backend: the daemon died" >&2; rc=1; }
		cd / && fusermount3 -u "$mnt" && wait $daemon || rc=1
		trap - EXIT
		exit $rc
	' "$here/stress.sh" "$bin" "$backend" "$mnt" "$log" "$py" "$secs" "$procs" \
		"${#xopts[@]}" "${xopts[@]}" "${flags[@]}" || return 1
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$log"; then
		echo "stress: $backend: sanitizer report in $log" >&2
		return 1
	fi
}

[[ $# -gt 0 ]] || set -- memory kernel
for backend in "$@"; do
	echo "stress: $backend, $procs processes, $secs s${xopts[*]:+, ${xopts[*]}}"
	if run_one "$backend"; then
		echo "stress: $backend ok"
	else
		echo "stress: $backend FAILED (logs in $work)"
		status=1
	fi
done
[[ $status -eq 0 && -z ${KEYFS_STRESS_DIR:-} ]] && rm -rf "$work"
exit $status
