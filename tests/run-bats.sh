#!/bin/sh
# run-bats.sh: run the behaviour tests (tests/*.bats) on one backend, as TAP.
#
# usage: run-bats.sh BACKEND [BATS-OPTIONS...] [FILE.bats...]
# KEYFS_BIN must name the keyfs binary (make check sets it).  Without
# FILE.bats arguments every .bats file next to this script runs.
# KEYFS_UNIT_ONLY=1 skips the run (a TAP plan of 1..0 # SKIP and exit 0,
# which Automake's TAP driver counts as skipped), so that `make check` runs
# the unit tests only: CI's distcheck proves the tarball with it, while
# the behaviour tests run on the plain and the sanitizer builds.
set -u

if [ "${KEYFS_UNIT_ONLY:-}" = 1 ]; then
	echo "1..0 # SKIP KEYFS_UNIT_ONLY=1: unit tests only"
	exit 0
fi

backend=${1:-}
case $backend in
memory|kernel) ;;
*)
	echo "usage: $0 memory|kernel [BATS-OPTIONS...] [FILE.bats...]" >&2
	exit 2
	;;
esac
shift

here=$(cd "$(dirname "$0")" && pwd)

if [ -z "${KEYFS_BIN:-}" ]; then
	echo "Bail out! KEYFS_BIN is not set: export KEYFS_BIN=/path/to/keyfs"
	exit 99
fi
if [ ! -x "$KEYFS_BIN" ]; then
	echo "Bail out! KEYFS_BIN=$KEYFS_BIN is not an executable file"
	exit 99
fi
if ! command -v bats >/dev/null 2>&1; then
	echo "Bail out! bats is not installed (Debian: bats bats-support bats-assert)"
	exit 99
fi
if [ ! -f /usr/lib/bats/bats-assert/load.bash ] ||
   [ ! -f /usr/lib/bats/bats-support/load.bash ]; then
	echo "Bail out! bats-support or bats-assert is missing under /usr/lib/bats"
	exit 99
fi

# Missing capabilities skip the whole run (exit 77 under Automake).
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	echo "1..0 # SKIP no /dev/fuse or fusermount3"
	exit 77
fi
if [ "$backend" = kernel ]; then
	if ! command -v keyctl >/dev/null 2>&1; then
		echo "1..0 # SKIP keyctl (keyutils) is not installed"
		exit 77
	fi
	if ! keyctl session - keyctl id @s >/dev/null 2>&1; then
		echo "1..0 # SKIP the kernel refuses keyctl (no CONFIG_KEYS or a seccomp filter)"
		exit 77
	fi
fi

KEYFS_BACKEND=$backend
export KEYFS_BACKEND KEYFS_BIN

# No test takes minutes: one that does is stuck, and fails (bats kills its
# children) instead of holding up the whole run.  The harness's watchdog
# (KEYFS_WATCHDOG in lib/keyfs.bash) catches a wedged daemon sooner.
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-600}
export BATS_TEST_TIMEOUT

have_files=
for arg in "$@"; do
	case $arg in
	*.bats) have_files=1 ;;
	esac
done
if [ -n "$have_files" ]; then
	exec bats --tap "$@"
fi
exec bats --tap "$@" "$here"/*.bats
