#!/usr/bin/env bats
# security-kernel.bats: another user reaches no key through request, search, a stale name or a large write (issues 15, 16), and views and reads what keyctl lets it.

load lib/keyfs
load lib/users

# A second user, made for this file and removed after it (as perm.bats).
setup_file()
{
	second_user_create kfssec
}

teardown_file()
{
	second_user_remove
}

setup()
{
	keyfs_mount -o allow_other
	mount_reachable
}

teardown()
{
	# a holder left by a failed test would keep its file open
	if [[ -n ${HOLD_PID:-} ]]; then
		touch "$GO" 2>/dev/null
		kill "$HOLD_PID" 2>/dev/null
	fi
	if [[ -n ${U2RING:-} ]]; then
		as2 keyctl unlink "$U2RING" @u >/dev/null 2>&1 || true
	fi
	keyfs_unmount
}

# The second user may search the session keyring (to reach paths under
# it), and session/ow is a keyring everyone may write and search.
open_session()
{
	xset perm 0x3f1b0008 "$MNT/session"
	mkdir "$MNT/session/ow"
	xset perm 0x3f3f3f3f "$MNT/session/ow"
	OW=$(ino "$MNT/session/ow")
}

# as2 writes TEXT to .keyfs/request; prints OK or the errno's name.
as2_request() { as2_errno write "$MNT/.keyfs/request" "$1" w; }

# ---- 15.2: request and search act as the caller, without keyfs's possession

@test "request by another user does not link a key it may not search" {
	need_u2
	open_session
	echo secret >"$MNT/session/secret"
	run as2_request "user secret - #$OW"
	refute_output OK
	ls_lacks "$MNT/session/ow" secret
	if [[ $KEYFS_BACKEND == kernel ]]; then
		! klinks "$OW" "$(ino "$MNT/session/secret")"
	fi
}

@test "request by another user needs link on the key before it links" {
	need_u2
	open_session
	echo v >"$MNT/session/nolink"
	xset perm 0x3f010008 "$MNT/session/nolink"	# other: search only
	run as2_request "user nolink - #$OW"
	assert_output EACCES
	ls_lacks "$MNT/session/ow" nolink
	echo v >"$MNT/session/pub"
	xset perm 0x3f010018 "$MNT/session/pub"	# other: search and link
	run as2_request "user pub - #$OW"
	assert_output OK
	eventually ls_has "$MNT/session/ow" pub
}

@test "kernel: request cannot link the mounter's key into the caller's own keyring" {
	skip_unless_kernel
	need_u2
	echo secret >"$MNT/session/secret"
	# made in a session of its own, where it may set the perm, and kept
	# in the second user's user keyring
	U2RING=$(as2 keyctl session - sh -c 'r=$(keyctl newring kfssec @s) &&
		keyctl setperm "$r" 0x3f3f0000 && keyctl link "$r" @u &&
		echo "$r"' | tail -n 1)
	[[ $U2RING =~ ^[0-9]+$ ]]
	run as2_request "user secret - #$U2RING"
	refute_output OK
	run as2 keyctl rlist "$U2RING"
	refute_output --partial "$(ino "$MNT/session/secret")"
}

@test "search by another user finds only what it may search without possession" {
	need_u2
	open_session
	echo v >"$MNT/session/hidden"	# 0x3f010000: possessor only
	run as2_errno stat "$MNT/.keyfs/search/user/hidden"
	refute_output OK
	echo v >"$MNT/session/shown"
	xset perm 0x3f010009 "$MNT/session/shown"
	run as2_errno stat "$MNT/.keyfs/search/user/shown"
	assert_output OK
	# a key it may search, in a keyring only the mounter may search
	mkdir -m 700 "$MNT/session/priv"
	echo v >"$MNT/session/priv/nested"
	xset perm 0x3f010009 "$MNT/session/priv/nested"
	run as2_errno stat "$MNT/.keyfs/search/user/nested"
	refute_output OK
	run kerrno stat "$MNT/.keyfs/search/user/nested"
	assert_output OK
}

# ---- 15.3: the write check is made on the key the commit changes

# as2_hold PATH: as the second user, open PATH for writing (creating it)
# and hold it until $GO exists, then write "attacker" and close; the
# result (OK or the errno's name) goes to $RES.
as2_hold()
{
	local dir=$BATS_TEST_TMPDIR/hold
	mkdir -p "$dir"
	chmod 777 "$dir"
	READY=$dir/ready GO=$dir/go RES=$dir/res
	as2 "$KEYFS_PY" -c '
import errno, os, sys, time
path, ready, go, res = sys.argv[1:5]
def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))
try:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
except OSError as e:
    open(res, "w").write(name(e)); open(ready, "w").close(); sys.exit(0)
open(ready, "w").close()
deadline = time.monotonic() + 60  # a test that failed never says go
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.02)
out = "OK"
try:
    os.write(fd, b"attacker")
    os.close(fd)
except OSError as e:
    out = name(e)
open(res, "w").write(out)
' "$1" "$READY" "$GO" "$RES" 3>&- &
	HOLD_PID=$!
	local i
	for ((i = 0; i < 100; i++)); do
		[[ -e $READY ]] && return 0
		sleep 0.05
	done
	fail "the second user's open did not happen"
}

# as2_release: let the holder write and close; print its result.  (Under
# `run` the holder is no child of this shell: wait for its file instead.)
as2_release()
{
	local i
	touch "$GO"
	for ((i = 0; i < 200; i++)); do
		[[ -s $RES ]] && break
		sleep 0.05
	done
	cat "$RES"
}

@test "kernel: a key stored behind keyfs's back is not overwritten through a stale name" {
	skip_unless_kernel
	need_u2
	open_session
	as2_hold "$MNT/session/ow/token"
	# the mounter stores the name with keyctl: a new key keyfs never saw
	keyctl add user token rootsecret "$OW" >/dev/null
	run as2_release
	assert_output EACCES
	run keyctl pipe "$(keyctl search "$OW" user token)"
	assert_output rootsecret
}

@test "a key stored through the mount while another user holds the name is not overwritten" {
	need_u2
	open_session
	as2_hold "$MNT/session/ow/token"
	echo rootsecret >"$MNT/session/ow/token"
	run as2_release
	refute_output OK
	run cat "$MNT/session/ow/token"
	assert_output rootsecret
	# the entry was the second user's, but the payload is not: it may
	# not read it (a key it writes itself it could, posix3.bats)
	run as2_errno read "$MNT/session/ow/token"
	assert_output EACCES
}

# ---- 15.4 and 16.2: writes of more than a page

@test "a large write to session/foo leaves process/foo alone" {
	echo small >"$MNT/session/foo"
	echo mine >"$MNT/process/foo"
	head -c 5000 /dev/zero | tr '\0' a >"$MNT/session/foo"
	assert_equal "$(fsize "$MNT/session/foo")" 5000
	run cat "$MNT/process/foo"
	assert_output mine
}

@test "a large write needs no link permission (perm 0x2f010000)" {
	echo small >"$MNT/session/big"
	xset perm 0x2f010000 "$MNT/session/big"
	head -c 4000 /dev/zero | tr '\0' a >"$MNT/session/big"
	assert_equal "$(fsize "$MNT/session/big")" 4000
	head -c 5000 /dev/zero | tr '\0' b >"$MNT/session/big"
	assert_equal "$(fsize "$MNT/session/big")" 5000
	assert_equal "$(head -c 1 "$MNT/session/big")" b
}

@test "another user's large write acts as that user: write on the key, no link" {
	need_u2
	open_session
	echo small >"$MNT/session/ow/theirs"
	xset perm 0x2f010007 "$MNT/session/ow/theirs"	# other: view, read, write
	head -c 5000 /dev/zero | tr '\0' c >"$BATS_TEST_TMPDIR/big"
	chmod 644 "$BATS_TEST_TMPDIR/big"
	run as2 sh -c "cat '$BATS_TEST_TMPDIR/big' >'$MNT/session/ow/theirs'"
	assert_success
	eventually output_is 5000 fsize "$MNT/session/ow/theirs"
	echo small >"$MNT/session/ow/ro"
	xset perm 0x3f010003 "$MNT/session/ow/ro"	# other: view, read
	run as2 sh -c "cat '$BATS_TEST_TMPDIR/big' >'$MNT/session/ow/ro'"
	assert_failure
	run cat "$MNT/session/ow/ro"
	assert_output small
}

# ---- what another user may view and read, against the kernel's answer

@test "kernel: another user views and reads through by-id/ exactly what keyctl lets it, over 150 random permissions and owners" {
	skip_unless_kernel
	need_u2
	# Keys in a keyring of the test's session, with random permissions,
	# owners and groups; the second user then asks keyfs (stat and cat of
	# by-id/SERIAL) and the kernel (describe and read, from a session of
	# its own: neither possesses anything) for each.
	local serials
	serials=$("$KEYFS_PY" -c '
import ctypes, random, sys
k = ctypes.CDLL("libkeyutils.so.1", use_errno=True)
k.add_key.restype = ctypes.c_int32
k.keyctl.restype = ctypes.c_long
u2, g2 = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(20261207)
ring = k.add_key(b"keyring", b"random-perms", None, 0, -3)
out = []
for i in range(150):
	s = k.add_key(b"user", b"k%03d" % i, b"payload%03d" % i, 10, ring)
	if s < 0:
		sys.exit("add_key: %d" % ctypes.get_errno())
	uid = rnd.choice([0, u2, u2, 65534])
	gid = rnd.choice([0, g2, 65534])
	perm = rnd.getrandbits(32) & 0x3f3f3f3f
	if k.keyctl(4, s, uid, gid) < 0 or k.keyctl(5, s, ctypes.c_uint32(perm)) < 0:
		sys.exit("chown/setperm: %d" % ctypes.get_errno())
	out.append(str(s))
print(" ".join(out))
' "$U2UID" "$U2GID")
	run as2 keyctl session - "$KEYFS_PY" -c '
import ctypes, os, struct, sys
k = ctypes.CDLL("libkeyutils.so.1", use_errno=True)
k.keyctl.restype = ctypes.c_long
mnt, serials = sys.argv[1], [int(x) for x in sys.argv[2].split()]
def kernel(op, s):
	return k.keyctl(op, s, None, 0) >= 0		# 6: describe, 11: read
def fs(f):
	try:
		f()
		return True
	except PermissionError:
		return False
bad = seen = read = 0
for s in serials:
	path = "%s/by-id/%d" % (mnt, s)
	kv, kr = kernel(6, s), kernel(11, s)
	fv, fr = fs(lambda: os.stat(path)), fs(lambda: open(path, "rb").read())
	seen += kv
	read += kr
	# keyfs(1): a key the caller may not view reads as EACCES
	if kv != fv or (kr != fr and kv):
		bad += 1
		print("%d: kernel view %s read %s, keyfs view %s read %s" % (s, kv, kr, fv, fr))
print("keys %d differ %d" % (len(serials), bad))
# both answers occur, or the comparison says nothing
if not (0 < seen < len(serials) and 0 < read < len(serials)):
	print("all alike: %d viewable, %d readable" % (seen, read))
' "$MNT" "$serials"
	assert_success
	assert_line "keys 150 differ 0"
	assert_equal "${#lines[@]}" 2	# and keyctl session's line
}
