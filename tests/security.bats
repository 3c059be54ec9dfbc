#!/usr/bin/env bats
# security.bats: what one user may do to another's pending entries, and listings that outlive what they list.

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

teardown() { keyfs_unmount; }

# A keyring in session anyone may search, write and link into; prints its
# serial, by which the second user reaches it (by-id/).
open_ring()
{
	mkdir "$MNT/session/ring"
	xset perm 0x3f3f3f3f "$MNT/session/ring"
	ino "$MNT/session/ring"
}

# write_close PATH CMD...: open PATH for writing (creating it), run CMD,
# write a payload and close; prints OK or the errno close gave.
write_close()
{
	"$KEYFS_PY" -c '
import errno, os, subprocess, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
subprocess.run(sys.argv[2:])
os.write(fd, b"secret-root")
try:
	os.close(fd)
	print("OK")
except OSError as e:
	print(errno.errorcode[e.errno])
' "$@"
}

@test "another user cannot change someone's pending entry" {
	need_u2
	local s p
	s=$(open_ring)
	exec 7>"$MNT/session/ring/tokD"
	p=$MNT/by-id/$s/tokD
	run as2_errno chmod "$p" 777
	assert_output EPERM
	run as2_errno chown "$p" "$U2UID" "$U2GID"
	assert_output EPERM
	run as2_errno setxattr "$p" user.keyfs.perm 0x3f3f3f3f
	assert_output EACCES
	run as2_errno setxattr "$p" user.keyfs.expiry +100
	assert_output EACCES
	run as2_errno write "$p" x w
	assert_output EACCES
	run as2_errno truncate "$p" 0
	assert_output EACCES
	run as2_errno utime "$p"
	assert_output EACCES
	echo secret-root >&7
	exec 7>&-
	assert_equal "$(xget perm "$MNT/session/ring/tokD")" 0x3f070202
	assert_equal "$(stat -c %u:%g "$MNT/session/ring/tokD")" 0:0
	assert_equal "$(xget expiry "$MNT/session/ring/tokD")" 0
	run as2_errno read "$p"
	assert_output EACCES
}

@test "the creator still changes its own pending entry" {
	need_u2
	touch "$MNT/session/p"
	chmod 750 "$MNT/session/p"
	chown "$U2UID:$U2GID" "$MNT/session/p"
	xset expiry +1000 "$MNT/session/p"
	echo v >"$MNT/session/p"
	assert_equal "$(xget perm "$MNT/session/p")" 0x3f0f0a00
	assert_equal "$(stat -c %u:%g "$MNT/session/p")" "$U2UID:$U2GID"
	[[ $(xget expiry "$MNT/session/p") -gt $(date +%s) ]]
	assert_equal "$(cat "$MNT/session/p")" v
}

# as2_holds PATH FIFO XATTR=VALUE...: the second user creates PATH, sets
# the attributes on the open entry and holds it open until FIFO is
# written (it writes FIFO once the attributes are set).
as2_holds()
{
	as2 "$KEYFS_PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
for a in sys.argv[3:]:
	name, value = a.split("=", 1)
	os.setxattr(sys.argv[1], "user.keyfs." + name, value.encode())
open(sys.argv[2], "w").close()
open(sys.argv[2]).read()
os.close(fd)
' "$@"
}

# mounter_writes_into S NAME ATTR=VALUE...: the second user holds NAME in
# keyring S (session/ring) open with the attributes set, and the mounter
# writes into it: the errno of the mounter's write and close.
mounter_writes_into()
{
	local s=$1 name=$2 f=$BATS_TEST_TMPDIR/go pid
	shift 2
	[[ -p $f ]] || mkfifo -m 666 "$f"
	as2_holds "$MNT/by-id/$s/$name" "$f" "$@" &
	pid=$!
	cat "$f" >/dev/null
	kerrno write "$MNT/session/ring/$name" secret-root w
	: >"$f"
	wait "$pid"
}

@test "the mounter writing into another user's pending entry keeps what that user set on it" {
	need_u2
	local s
	s=$(open_ring)
	chmod 755 "$BATS_TEST_TMPDIR"
	# an expiry alone: the key is the user's, with add_key's default
	# permission (the user may view it), and expires
	run mounter_writes_into "$s" tokD expiry=+100
	assert_output OK
	assert_equal "$(stat -c %u "$MNT/session/ring/tokD")" "$U2UID"
	assert_equal "$(xget perm "$MNT/session/ring/tokD")" 0x3f010000
	[[ $(xget expiry "$MNT/session/ring/tokD") -gt $(date +%s) ]]
	run as2_errno read "$MNT/session/ring/tokD"
	assert_output EACCES
	# a permission the user chose: the key gets it
	run mounter_writes_into "$s" tokE expiry=+100 perm=0x3f3f0000
	assert_output OK
	assert_equal "$(xget perm "$MNT/session/ring/tokE")" 0x3f3f0000
	[[ $(xget expiry "$MNT/session/ring/tokE") -gt $(date +%s) ]]
	run as2 cat "$MNT/by-id/$s/tokE"
	assert_output secret-root
}

@test "a pending entry removed by another user: the creator's close fails, no key" {
	need_u2
	local s
	s=$(open_ring)
	run write_close "$MNT/session/ring/tokD" \
		setpriv --reuid="$U2UID" --regid="$U2GID" --clear-groups -- \
		rm "$MNT/by-id/$s/tokD"
	assert_output ENOENT
	run ls -A "$MNT/session/ring"
	assert_output ""
}

@test "a pending entry cannot be moved into another user's keyring" {
	need_u2
	local s
	s=$(open_ring)
	as2 mkdir "$MNT/by-id/$s/mine"
	# as keyctl setperm would let it: its own keyring, open to it
	xset perm 0x3f3f0000 "$MNT/session/ring/mine"
	run write_close "$MNT/session/ring/tokD" \
		setpriv --reuid="$U2UID" --regid="$U2GID" --clear-groups -- \
		"$KEYFS_PY" -c "$KEYFS_ERRNO_PY" rename "$MNT/by-id/$s/tokD" "$MNT/by-id/$s/mine/tokD"
	assert_output $'EACCES\nOK'
	assert_equal "$(cat "$MNT/session/ring/tokD")" secret-root
	run ls -A "$MNT/session/ring/mine"
	assert_output ""
}

@test "the creator removing its own open pending entry still closes cleanly" {
	run write_close "$MNT/session/tokD" rm "$MNT/session/tokD"
	assert_output OK
	run ls -A "$MNT/session"
	refute_output --partial tokD
}

@test "a listing read across an unlink of a pending entry stays sane" {
	local i
	mkdir "$MNT/session/big"
	for ((i = 0; i < 60; i++)); do
		echo "v$i" >"$MNT/session/big/key-with-a-longish-name-$i"
	done
	touch "$MNT/session/big/zz-pending"
	run "$KEYFS_HELPERS/readdir-unlink" "$MNT/session/big" zz-pending
	assert_success
	assert_output --partial "0 bad"
}

@test "creat of a name add_key would refuse fails at once and leaves nothing" {
	run kerrno write "$MNT/session/%bogus:x" ""
	assert_output ENODEV
	run kerrno write "$MNT/session/%logon:lg" ""
	assert_output EINVAL
	if grep -qx have_big_key_type=0 "$MNT/.keyfs/supports"; then
		run kerrno write "$MNT/session/%big_key:x" ""
		assert_output ENODEV
	fi
	run ls -A "$MNT/session"
	refute_output --partial bogus
	refute_output --partial lg
	# a logon name with its prefix is taken
	run kerrno write "$MNT/session/%logon:svc:lg" ""
	assert_output OK
}

@test "a create that fails leaves no pending entry behind" {
	mkdir "$MNT/session/r" "$MNT/session/r2"
	touch "$MNT/session/r/k"
	# the possessor loses write on both keyrings: the add at close fails
	xset perm 0x3b010000 "$MNT/session/r"
	xset perm 0x3b010000 "$MNT/session/r2"
	run kerrno write "$MNT/session/r/k" x
	assert_output EACCES
	run kerrno write "$MNT/session/r2/k" x
	assert_output EACCES
	xset perm 0x3f010000 "$MNT/session/r"
	xset perm 0x3f010000 "$MNT/session/r2"
	run ls -A "$MNT/session/r"
	assert_output ""
	run ls -A "$MNT/session/r2"
	assert_output ""
}

@test "a create in a revoked keyring fails with EKEYREVOKED" {
	mkdir "$MNT/session/r"
	echo session/r >"$MNT/.keyfs/revoke"
	# touch: refused at creat, not made pending to fail at a later close
	run kerrno write "$MNT/session/r/k" ""
	assert_output EKEYREVOKED
	run kerrno write "$MNT/session/r/k" x
	assert_output EKEYREVOKED
}
