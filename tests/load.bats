#!/usr/bin/env bats
# load.bats: 8 processes read, rewrite, create, rename and delete keys at once; no crash, no torn payload, only the expected races.

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

LOAD_SECONDS=${KEYFS_LOAD_SECONDS:-5}
LOAD_PROCS=8

# The races each backend answers in its own way besides ENOENT and EEXIST:
# - a name renamed or unlinked between the kernel's lookup and the open (or
#   the rename) leaves an inode whose key is gone: the memory backend answers
#   ENOKEY (the key is destroyed); the kernel backend EACCES (the key lives
#   on elsewhere but is no longer possessed through the mount's keyrings, so
#   the mounter has only the user class) - see docs/TESTING-trust.md;
# - rename of another process's entry that is still pending (created, not
#   yet written) onto an existing key is EINVAL: it has no payload to give;
# - a created entry that another process unlinks or renames away before its
#   creator's close: the close fails (ENOKEY), and no key is made.
races()
{
	local op
	for op in read write create rename unlink; do
		echo "$op:ENOKEY"
		[[ $KEYFS_BACKEND == kernel ]] && echo "$op:EACCES"
	done
	echo rename:EINVAL
}

@test "$LOAD_PROCS processes for $LOAD_SECONDS s: every read is one whole payload, only races fail" {
	mkdir "$MNT/session/load"
	run "$KEYFS_HELPERS/load" "$MNT/session/load" "$LOAD_SECONDS" "$LOAD_PROCS" $(races)
	echo "# $KEYFS_BACKEND: ${lines[0]}" >&3
	assert_success
	assert_line --index 0 --regexp ' bad=0$'
	# the daemon is alive and the keys left are whole records
	mountpoint -q "$MNT"
	local f n=0
	for f in "$MNT"/session/load/*; do
		[[ -e $f ]] || continue
		case $(fsize "$f") in
		0) assert_equal "$(getfattr --only-values -n user.keyfs.state "$f")" pending ;;
		64) [[ $(head -c 4 "$f") == "KFS " ]] || fail "$f: not a record" ;;
		*) fail "$f: $(fsize "$f") bytes" ;;
		esac
		n=$((n + 1))
	done
	((n > 0))
}

@test "load on two keyrings at once, 4 processes each" {
	mkdir "$MNT/session/a" "$MNT/session/b"
	"$KEYFS_HELPERS/load" "$MNT/session/a" "$LOAD_SECONDS" 4 $(races) >"$BATS_TEST_TMPDIR/a" 2>&1 &
	local pa=$!
	run "$KEYFS_HELPERS/load" "$MNT/session/b" "$LOAD_SECONDS" 4 $(races)
	local rb=$status
	wait "$pa" || { cat "$BATS_TEST_TMPDIR/a"; fail "load on a failed"; }
	echo "# $KEYFS_BACKEND a: $(head -1 "$BATS_TEST_TMPDIR/a")" >&3
	echo "# $KEYFS_BACKEND b: ${lines[0]}" >&3
	[[ $rb -eq 0 ]] || fail "load on b failed: $output"
	mountpoint -q "$MNT"
}
