#!/bin/sh
# run.sh: build the libFuzzer targets with clang and run each for a bounded time; any crash, leak, hang or failed check fails.
#
# usage: tests/fuzz/run.sh [SECONDS-PER-TARGET] [TARGET...]
#
# TARGET is a name from tests/fuzz/fuzz-TARGET.c (default: all of them);
# SECONDS-PER-TARGET defaults to 12, about a minute for the six.  The
# seed corpus in tests/fuzz/corpus/TARGET is only read: new inputs go to a
# work directory (KEYFS_FUZZ_DIR, default a fresh one under $TMPDIR),
# where a crashing input is saved as TARGET-crash-... and named on stderr.
# Environment: CLANG (default clang), KEYFS_FUZZ_RSS_MB (default 2048).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-12}
[ $# -gt 0 ] && shift
targets=${*:-"parse base64 names control-parse store-json journal"}
cc=${CLANG:-clang}
rss=${KEYFS_FUZZ_RSS_MB:-2048}

command -v "$cc" >/dev/null 2>&1 || {
	echo "fuzz: $cc not found (Debian: clang libclang-rt-dev)" >&2
	exit 2
}
work=${KEYFS_FUZZ_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/keyfs-fuzz.XXXXXX")}
mkdir -p "$work"

# The parsers only: no FUSE, no keyutils.  config.h gives them nothing
# but _GNU_SOURCE.
# Found by name, wherever the source tree keeps them; the store is every
# source in the directory that holds its header, store.h.
srcs=
for f in names.c parse.c control-parse.c specials.c base64.c grow.c; do
	s=$(find "$top/src" -name "$f" | head -n 1)
	[ -n "$s" ] || { echo "fuzz: $f not found under $top/src" >&2; exit 1; }
	srcs="$srcs $s"
done
s=$(find "$top/src" -name store.h | head -n 1)
[ -n "$s" ] || { echo "fuzz: store.h not found under $top/src" >&2; exit 1; }
store=$(dirname "$s")
srcs="$srcs $(find "$store" -maxdepth 1 -name '*.c' | sort | tr '\n' ' ')"
cflags="-g -O1 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror
	-fsanitize=address,undefined -fno-sanitize-recover=all
	-fno-omit-frame-pointer -I$top/include -I$store -I$here"
jansson="$(pkg-config --cflags --libs jansson) $(pkg-config --cflags --libs libsodium)"

# The sources once, instrumented for coverage; each target links them.
objs=
for s in $srcs; do
	o=$work/$(basename "$s" .c).o
	# shellcheck disable=SC2086
	"$cc" $cflags -fsanitize=fuzzer-no-link $(pkg-config --cflags jansson) $(pkg-config --cflags libsodium) -c "$s" -o "$o"
	objs="$objs $o"
done

status=0
for t in $targets; do
	bin=$work/fuzz-$t
	# shellcheck disable=SC2086
	"$cc" $cflags -fsanitize=fuzzer "$here/fuzz-$t.c" $objs $jansson -o "$bin"
	mkdir -p "$work/corpus-$t"
	# A control line may be CTL_LINE_MAX (8192) bytes, after the two
	# bytes that pick the command and the mount point.
	case $t in
	control-parse) maxlen=-max_len=8200 ;;
	*) maxlen= ;;
	esac
	log=$work/fuzz-$t.log
	rc=0
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb="$rss" \
		-print_final_stats=1 $maxlen -artifact_prefix="$work/$t-" \
		"$work/corpus-$t" "$here/corpus/$t" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	found=$(find "$work/corpus-$t" -type f | wc -l)
	seeds=$(find "$here/corpus/$t" -type f | wc -l)
	if [ "$rc" -ne 0 ]; then
		echo "fuzz: $t FAILED (exit $rc); log $log:" >&2
		grep -E 'ERROR|SUMMARY|check failed|Test unit written|runtime error' "$log" | head -20 >&2
		status=1
	else
		echo "fuzz: $t ok: ${execs:-?} execs in ${secs} s, corpus $seeds seeds + $found new"
	fi
done
[ "$status" -eq 0 ] && [ -z "${KEYFS_FUZZ_DIR:-}" ] && rm -rf "$work"
exit "$status"
