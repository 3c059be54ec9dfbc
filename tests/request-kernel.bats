#!/usr/bin/env bats
# request-kernel.bats: on the kernel backend, request-key(8) running for one request does not hold up the others.

load lib/keyfs

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

@test "kernel: while request-key(8) hangs for one request, other requests are answered" {
	echo -n hello >"$MNT/session/k"
	kerrno write "$MNT/.keyfs/request" "user $TAG:1 info" w >"$BATS_TEST_TMPDIR/req.out" &
	local req=$! i
	for ((i = 0; i < 100; i++)); do
		[[ -s $BATS_TEST_TMPDIR/callout.pid ]] && break
		sleep 0.1
	done
	[[ -s $BATS_TEST_TMPDIR/callout.pid ]] || fail "request-key never ran the callout"
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
