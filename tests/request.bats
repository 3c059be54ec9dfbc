#!/usr/bin/env bats
# request.bats: the memory backend's request_key= callout: its timeout, its process group, and other users meanwhile.

load lib/keyfs
load lib/users

# A second user, made for this file and removed after it (as perm.bats).
setup_file()
{
	second_user_create kfsreq
}

teardown_file()
{
	second_user_remove
}

setup()
{
	skip_unless_memory
	CALLOUT=$(make_callout)
}

teardown()
{
	local f
	# Whatever a failed test left running: only the pids our callout wrote.
	for f in "$BATS_TEST_TMPDIR"/*.pid; do
		[[ -f $f ]] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	keyfs_unmount
}

ctl() { kerrno write "$MNT/.keyfs/$1" "$2" w; }

# make_callout: a callout whose description says what it does:
#   spawn*  starts a long sleep (pid in child.pid), then hangs itself;
#   leave*  prints "left", starts a long sleep that holds its stdout
#           (pid in child.pid), and exits 0;
#   hang*   hangs (its own pid in callout.pid);
#   once*   the first time as hang*, then as other;
#   other   prints the callout information.
make_callout()
{
	local p=$BATS_TEST_TMPDIR/callout.sh d=$BATS_TEST_TMPDIR
	cat >"$p" <<EOF
#!/bin/sh
case \$2 in
spawn*) sleep 1000 & echo \$! >$d/child.pid; exec sleep 1000 ;;
leave*) printf left; sleep 1000 & echo \$! >$d/child.pid; exit 0 ;;
hang*) echo \$\$ >$d/callout.pid; exec sleep 1000 ;;
once*) [ -e $d/once.done ] || { touch $d/once.done; echo \$\$ >$d/callout.pid; exec sleep 1000; } ;;
esac
printf '%s' "\$3"
EOF
	chmod +x "$p"
	printf '%s\n' "$p"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

@test "memory: at the timeout the callout's children are killed too" {
	keyfs_mount -o "request_key=$CALLOUT,request_timeout=2"
	local t0 t1
	t0=$(now_ms)
	run ctl request "user spawn:1 x"
	t1=$(now_ms)
	assert_output ENOKEY
	# the timeout, not sooner
	((t1 - t0 >= 1900)) || fail "answered after $((t1 - t0)) ms"
	wait_file "$BATS_TEST_TMPDIR/child.pid"
	local child
	child=$(cat "$BATS_TEST_TMPDIR/child.pid")
	gone_within "$child" || fail "the callout's child $child outlived the timeout"
	rm -f "$BATS_TEST_TMPDIR/child.pid"
}

@test "memory: a callout that exits 0 is done, whatever it left holding its stdout" {
	keyfs_mount -o "request_key=$CALLOUT,request_timeout=10"
	local t0 t1
	t0=$(now_ms)
	run ctl request "user leave:1 x"
	t1=$(now_ms)
	assert_output OK
	# well under the 10 s timeout
	((t1 - t0 < 5000)) || fail "answered after $((t1 - t0)) ms"
	assert_equal "$(cat "$MNT/session/leave:1")" left
	local child
	child=$(cat "$BATS_TEST_TMPDIR/child.pid")
	gone_within "$child" || fail "what the callout left running ($child) still runs"
	rm -f "$BATS_TEST_TMPDIR/child.pid"
}

@test "memory: a callout that prints and exits 0 makes the key at once" {
	keyfs_mount -o "request_key=$CALLOUT,request_timeout=10"
	local t0 t1
	t0=$(now_ms)
	run ctl request "user plain:1 info"
	t1=$(now_ms)
	assert_output OK
	((t1 - t0 < 5000)) || fail "answered after $((t1 - t0)) ms"
	assert_equal "$(cat "$MNT/session/plain:1")" info
}

@test "memory: while one caller's callout hangs, another user's requests are answered" {
	need_u2
	keyfs_mount -o "allow_other,request_key=$CALLOUT,request_timeout=30"
	mount_reachable
	echo -n hello >"$MNT/session/k"
	ctl request "user hang:1 x" >"$BATS_TEST_TMPDIR/req.out" &
	local req=$!
	wait_file "$BATS_TEST_TMPDIR/callout.pid"
	local callout
	callout=$(cat "$BATS_TEST_TMPDIR/callout.pid")
	# the other user, and the mounter too, in the background: done long
	# before the callout's 30 s
	(as2 stat "$MNT" >/dev/null && as2 cat "$MNT/.keyfs/supports" >/dev/null &&
		cat "$MNT/session/k" >"$BATS_TEST_TMPDIR/k.out" &&
		touch "$BATS_TEST_TMPDIR/others.done") &
	local others=$! i
	for ((i = 0; i < 100; i++)); do
		[[ -e $BATS_TEST_TMPDIR/others.done ]] && break
		sleep 0.1
	done
	[[ -e $BATS_TEST_TMPDIR/others.done ]] ||
		fail "other requests waited for the callout"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/k.out")" hello
	kill -0 "$callout" || fail "the callout ended before the others were answered"
	# End the callout: its request fails at once, as for any failed callout.
	kill -9 "$callout"
	rm -f "$BATS_TEST_TMPDIR/callout.pid"
	wait "$req"
	wait "$others"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/req.out")" ENOKEY
}

@test "memory: a signal to the requester ends its request at once, and leaves no key" {
	keyfs_mount -o "request_key=$CALLOUT,request_timeout=30"
	intr_start "$BATS_TEST_TMPDIR/req.out" "$MNT/.keyfs/request" "user once:1 info"
	local req=$INTR_PID callout
	wait_file "$BATS_TEST_TMPDIR/callout.pid"
	callout=$(cat "$BATS_TEST_TMPDIR/callout.pid")
	intr_stop "$req" "$BATS_TEST_TMPDIR/req.out"
	gone_within "$callout" || fail "the callout ($callout) outlived its request"
	rm -f "$BATS_TEST_TMPDIR/callout.pid"
	# nothing made, not even a negative key refusing the next try
	run ls "$MNT/session"
	refute_output --partial once
	run ctl request "user once:1 info"
	assert_output OK
	assert_equal "$(cat "$MNT/session/once:1")" info
}

@test "memory: request_timeout= must be 1 to 3600 seconds" {
	local v
	for v in 0 3601 x; do
		run timeout 10 "$KEYFS_BIN" -f -o "backend=memory,request_timeout=$v" \
			"$BATS_TEST_TMPDIR"
		assert_failure
		refute_output ""
	done
}
