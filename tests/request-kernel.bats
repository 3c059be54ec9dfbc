#!/usr/bin/env bats
# request-kernel.bats: on the kernel backend, request-key(8) running for one request does not hold up the others.

load lib/keyfs
load lib/users

setup_file()
{
	second_user_create kfsrqk
}

teardown_file()
{
	second_user_remove
}

setup()
{
	skip_unless_kernel
	[[ -d /etc/request-key.d && -w /etc/request-key.d ]] ||
		skip "needs a writable /etc/request-key.d"
	command -v request-key >/dev/null 2>&1 || skip "request-key(8) is not installed"
	TAG=keyfs-hang-$$-$RANDOM
	HANG=$BATS_TEST_TMPDIR/hang.sh
	printf '#!/bin/sh\necho $$ >%s/callout.pid\nexec sleep 1000\n' \
		"$BATS_TEST_TMPDIR" >"$HANG"
	chmod 755 "$HANG"
	# request-key(8) reads every *.conf here: this line serves our tag only.
	CONF=/etc/request-key.d/$TAG.conf
	echo "create user $TAG:* * $HANG %k" >"$CONF"
	keyfs_mount
}

teardown()
{
	[[ -f ${BATS_TEST_TMPDIR:-}/callout.pid ]] &&
		kill -9 "$(cat "$BATS_TEST_TMPDIR/callout.pid")" 2>/dev/null
	[[ -n ${CONF:-} ]] && rm -f "$CONF"
	keyfs_unmount
}

# wait_callout: wait up to 10 s for request-key(8) to run our callout.
wait_callout() { wait_file "$BATS_TEST_TMPDIR/callout.pid" 10; }

# expect5 WANT CMD...: run CMD in the background; fail unless it ends
# within 5 s printing WANT.  Not under `run`: a failure must end the test
# (its teardown ends the construction) before anything else waits on it.
expect5()
{
	local want=$1 p
	shift
	"$@" >"$BATS_TEST_TMPDIR/within.out" 2>/dev/null &
	p=$!
	gone_within "$p" || fail "waited for the construction: $*"
	wait "$p" || true
	assert_equal "$(cat "$BATS_TEST_TMPDIR/within.out")" "$want"
}

@test "kernel: while request-key(8) hangs for one request, other requests are answered" {
	echo -n hello >"$MNT/session/k"
	kerrno write "$MNT/.keyfs/request" "user $TAG:1 info" w >"$BATS_TEST_TMPDIR/req.out" &
	local req=$! i
	wait_callout
	(stat "$MNT" >/dev/null && cat "$MNT/session/k" >"$BATS_TEST_TMPDIR/k.out" &&
		touch "$BATS_TEST_TMPDIR/others.done") &
	local others=$!
	for ((i = 0; i < 100; i++)); do
		[[ -e $BATS_TEST_TMPDIR/others.done ]] && break
		sleep 0.1
	done
	[[ -e $BATS_TEST_TMPDIR/others.done ]] ||
		fail "other requests waited for request-key(8)"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/k.out")" hello
	# End the callout: the kernel then fails the request.
	kill -9 "$(cat "$BATS_TEST_TMPDIR/callout.pid")"
	rm -f "$BATS_TEST_TMPDIR/callout.pid"
	wait "$req" || true
	wait "$others"
	run cat "$BATS_TEST_TMPDIR/req.out"
	refute_output ""
}

@test "kernel: a signal to the requester ends its request at once; request-key(8) goes on" {
	intr_start "$BATS_TEST_TMPDIR/req.out" "$MNT/.keyfs/request" "user $TAG:2 info"
	local req=$INTR_PID
	wait_callout
	intr_stop "$req" "$BATS_TEST_TMPDIR/req.out"
	# as for a process interrupted in request_key(2): the kernel's
	# construction is not the requester's to end
	kill -0 "$(cat "$BATS_TEST_TMPDIR/callout.pid")" ||
		fail "the callout ended with its requester"
	# and keyfs answers meanwhile
	echo -n hello >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" hello
}

@test "kernel: a signal to another user's requester ends its request at once too" {
	need_u2
	keyfs_unmount
	keyfs_mount -o allow_other
	mount_reachable
	# The other user's request searches keyfs's session keyring, as the
	# kernel has a requester search its own, and makes the key in pub.
	keyctl setperm @s 0x3f3f0808
	mkdir "$MNT/session/pub"
	setfattr -n user.keyfs.perm -v '"0x3f3f3f3f"' "$MNT/session/pub"
	local pub req
	pub=$(getfattr --only-values -n user.keyfs.serial "$MNT/session/pub")
	setpriv --reuid="$U2UID" --regid="$U2GID" --clear-groups -- \
		"$KEYFS_PY" -c "$KEYFS_INTR_PY" "$MNT/.keyfs/request" "user $TAG:3 info #$pub" \
		>"$BATS_TEST_TMPDIR/req.out" &
	req=$!
	wait_callout
	intr_stop "$req" "$BATS_TEST_TMPDIR/req.out"
	echo -n hello >"$MNT/session/k"
	assert_equal "$(cat "$MNT/session/k")" hello
}

@test "kernel: a key under construction answers EAGAIN at once, and the mount goes on" {
	echo -n hello >"$MNT/session/k"
	# made outside keyfs: keyfs only sees the key its callout builds
	keyctl request2 user "$TAG:5" info @s >/dev/null 2>&1 &
	local req=$! k=$MNT/session/$TAG:5 i
	wait_callout
	# a name made behind keyfs's back shows within entry_timeout
	for ((i = 0; i < 30; i++)); do
		[[ -e $k ]] && break
		sleep 0.1
	done
	expect5 EAGAIN kerrno read "$k"
	expect5 EAGAIN kerrno write "$k" x
	expect5 EAGAIN kerrno write "$k" x wa
	expect5 EAGAIN kerrno write "$MNT/.keyfs/revoke" "$k" w
	expect5 EAGAIN kerrno write "$MNT/.keyfs/invalidate" "$k" w
	mkdir "$MNT/session/r2"
	expect5 EAGAIN kerrno link "$k" "$MNT/session/r2/$TAG:5"
	expect5 EAGAIN kerrno rename "$k" "$MNT/session/r2/$TAG:5"
	expect5 pending getfattr --only-values -n user.keyfs.state "$k"
	# a search finds it as it is; a request would link it: EAGAIN
	expect5 pending getfattr --only-values -n user.keyfs.state "$MNT/.keyfs/search/user/$TAG:5"
	expect5 EAGAIN kerrno write "$MNT/.keyfs/request" "user $TAG:5 -" w
	assert_equal "$(cat "$MNT/session/k")" hello
	# The callout ends: the key is negative, and the request fails.
	kill -9 "$(cat "$BATS_TEST_TMPDIR/callout.pid")"
	rm -f "$BATS_TEST_TMPDIR/callout.pid"
	wait "$req" || true
	# keyfs learns that within entry_timeout (it reads /proc/keys anew)
	for ((i = 0; i < 30; i++)); do
		run kerrno read "$k"
		[[ $output != EAGAIN ]] && break
		sleep 0.1
	done
	assert_output ENOKEY
}

# A listing makes the size probes of a part at once on helper threads
# (src/kernel/prefetch.c); the probe of a key under construction would
# wait for its callout, so it is left to the listing's own check.
@test "kernel: ls -l of a keyring holding a key under construction among many answers at once" {
	local i
	for i in $(seq -w 0 39); do echo -n "v$i" >"$MNT/session/k$i"; done
	keyctl request2 user "$TAG:6" info @s >/dev/null 2>&1 &
	local req=$!
	wait_callout
	expect5 41 sh -c "ls -l '$MNT/session' | grep -c -e ' k[0-9][0-9]\$' -e '$TAG:6\$'"
	expect5 pending getfattr --only-values -n user.keyfs.state "$MNT/session/$TAG:6"
	assert_equal "$(stat -c %s "$MNT/session/k39")" 3
	kill -9 "$(cat "$BATS_TEST_TMPDIR/callout.pid")"
	rm -f "$BATS_TEST_TMPDIR/callout.pid"
	wait "$req" || true
}
