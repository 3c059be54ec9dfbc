#!/usr/bin/env bats
# faults.bats: a killed daemon, an exhausted quota and over-long input leave keys, stores and keyrings as every successful call left them.

load lib/keyfs
load lib/users

# A second user for the quota test (as tests/perm.bats).
setup_file()
{
	second_user_create kfsflt
}

teardown_file()
{
	second_user_remove
}

setup()
{
	STORE=$BATS_TEST_TMPDIR/keys.json
	if [[ $KEYFS_BACKEND == memory ]]; then
		keyfs_mount -o allow_other,store="$STORE"
	else
		keyfs_mount -o allow_other
	fi
	mount_reachable
}

teardown() { keyfs_unmount; }

# sigkill: kill the daemon and reap it; the mount stays, dead.
sigkill()
{
	kill -9 "$KEYFS_PID"
	wait "$KEYFS_PID" 2>/dev/null || true
	KEYFS_PID=
}

# The whole tree under session/, as root sees it through the mount: names,
# payloads, permissions.
tree_state()
{
	local f
	(cd "$MNT/session" && find . -mindepth 1 | LC_ALL=C sort) | while read -r f; do
		if [[ -d $MNT/session/$f ]]; then
			echo "$f/ $(xget perm "$MNT/session/$f")"
		else
			echo "$f $(xget perm "$MNT/session/$f") $(sha256sum <"$MNT/session/$f" | cut -c1-16)"
		fi
	done
}

@test "SIGKILL: fusermount3 -u cleans the dead mount; every change that returned success is there after" {
	local i want got serials=()
	mkdir "$MNT/session/ring"
	for ((i = 0; i < 30; i++)); do
		echo "payload-$i" >"$MNT/session/ring/k$i"
		serials+=("$(ino "$MNT/session/ring/k$i")")
	done
	echo rewritten >"$MNT/session/ring/k0"
	rm "$MNT/session/ring/k1"
	mv "$MNT/session/ring/k2" "$MNT/session/ring/k2b"
	setfattr -n user.keyfs.perm -v 3f3f0000 "$MNT/session/ring/k3"
	mkdir "$MNT/session/ring/sub"
	echo deep >"$MNT/session/ring/sub/d"
	want=$(tree_state)
	sigkill
	# the mount is left, dead; fusermount3 -u takes it away
	keyfs_is_mounted "$MNT"
	run stat "$MNT/session"
	assert_failure
	fusermount3 -u "$MNT"
	! keyfs_is_mounted "$MNT"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		# the kernel keys are untouched by the daemon's death
		assert_equal "$(keyctl pipe "${serials[0]}")" rewritten
		assert_equal "$(keyctl pipe "${serials[4]}")" payload-4
		run keyctl print "${serials[1]}"
		assert_failure
	fi
	# a new mount (on the same store) shows every change
	if [[ $KEYFS_BACKEND == memory ]]; then
		keyfs_mount -o store="$STORE"
	else
		keyfs_mount
	fi
	got=$(tree_state)
	assert_equal "$got" "$want"
	assert_equal "$(cat "$MNT/session/ring/k0")" rewritten
	assert_equal "$(cat "$MNT/session/ring/sub/d")" deep
}

@test "SIGKILL amid a stream of writes: every write whose close returned 0 is in the store" {
	skip_unless_memory
	local i ok=() n
	mkdir "$MNT/session/s"
	"$KEYFS_PY" - "$MNT/session/s" "$BATS_TEST_TMPDIR/done" <<'PY' &
import os, sys
d, log = sys.argv[1], sys.argv[2]
with open(log, "w", buffering=1) as out:
	for i in range(100000):
		try:
			fd = os.open("%s/k%d" % (d, i), os.O_WRONLY | os.O_CREAT, 0o600)
			os.write(fd, b"v%d" % i)
			os.close(fd)
		except OSError:
			break
		out.write("k%d v%d\n" % (i, i))
PY
	local writer=$!
	sleep 1
	sigkill
	wait "$writer" || true
	fusermount3 -u "$MNT"
	n=$(wc -l <"$BATS_TEST_TMPDIR/done")
	((n > 10))
	keyfs_mount -o store="$STORE"
	while read -r name val; do
		[[ $(cat "$MNT/session/s/$name" 2>&1) == "$val" ]] ||
			fail "$name: written ($val) before the kill, but lost"
	done <"$BATS_TEST_TMPDIR/done"
	echo "# memory: $n writes confirmed before SIGKILL, all in the store" >&3
}

@test "quota exhausted: EDQUOT, and the failing create leaves no entry, pending or made" {
	[[ -n $U2 ]] || skip "cannot create a second user"
	mkdir "$MNT/session/drop"
	local ring got i before
	ring=$(ino "$MNT/session/drop")
	setfattr -n user.keyfs.perm -v 3f3f000f "$MNT/session/drop"
	for ((i = 0; i < 40; i++)); do
		got=$(as2_errno writesize "$MNT/by-id/$ring/k$i" 2000)
		[[ $got == OK ]] || break
	done
	assert_equal "$got" EDQUOT
	ls_lacks "$MNT/session/drop" "k$i"
	# the quota columns only: the kernel makes the user's own keyrings
	# (outside the quota) whenever it first looks them up
	before=$(ls -A "$MNT/session/drop"; grep -E "^ *$U2UID:" "$MNT/.keyfs/key-users" | awk '{print $4, $5}')
	# again: nothing half-made, no quota charged
	run as2_errno writesize "$MNT/by-id/$ring/again" 2000
	assert_output EDQUOT
	ls_lacks "$MNT/session/drop" again
	assert_equal "$(ls -A "$MNT/session/drop"; grep -E "^ *$U2UID:" "$MNT/.keyfs/key-users" | awk '{print $4, $5}')" "$before"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl search "$ring" user again
		assert_failure
	fi
}

@test "an over-long control line (8193+ bytes) is EINVAL and changes nothing" {
	echo v >"$MNT/session/k"
	local before long
	before=$(tree_state)
	long=$(head -c 9000 /dev/zero | tr '\0' a)
	run kerrno write "$MNT/.keyfs/setperm" "session/k 0x3f3f3f3f $long"
	assert_output EINVAL
	run kerrno write "$MNT/.keyfs/timeout" "session/k $(head -c 8190 /dev/zero | tr '\0' 1)"
	assert_output EINVAL
	run kerrno write "$MNT/.keyfs/revoke" "session/$long"
	assert_output EINVAL
	assert_equal "$(tree_state)" "$before"
	assert_equal "$(xget state "$MNT/session/k")" valid
	assert_equal "$(xget expiry "$MNT/session/k")" 0
}

@test "64 KiB xattr values are EINVAL and change nothing" {
	echo v >"$MNT/session/k"
	local before v64
	before=$(tree_state)
	v64=$(head -c 65536 /dev/zero | tr '\0' 1)
	run kerrno setxattr "$MNT/session/k" user.keyfs.perm "$v64"
	assert_output EINVAL
	run kerrno setxattr "$MNT/session/k" user.keyfs.expiry "$v64"
	assert_output EINVAL
	assert_equal "$(tree_state)" "$before"
	assert_equal "$(xget expiry "$MNT/session/k")" 0
}

@test "a 4096-byte description is EINVAL; 4095 bytes is only not found" {
	local before
	before=$(tree_state)
	run kerrno write "$MNT/.keyfs/request" "user $(head -c 4096 /dev/zero | tr '\0' d)"
	assert_output EINVAL
	run kerrno write "$MNT/.keyfs/request" "user $(head -c 4095 /dev/zero | tr '\0' d)"
	assert_output ENOKEY
	run kerrno stat "$MNT/.keyfs/search/user/$(head -c 4096 /dev/zero | tr '\0' d)"
	assert_output ENAMETOOLONG
	assert_equal "$(tree_state)" "$before"
}

@test "names of 256 bytes and more: ENAMETOOLONG for create, mkdir, rename and link; nothing changes" {
	echo v >"$MNT/session/k"
	local before n
	before=$(tree_state)
	for n in "$(head -c 256 /dev/zero | tr '\0' n)" "$(head -c 1000 /dev/zero | tr '\0' n)" \
		 "$(for i in {1..86}; do printf %%20; done)"; do
		run kerrno write "$MNT/session/$n" v wcx
		assert_output ENAMETOOLONG
		run kerrno mkdir "$MNT/session/$n"
		assert_output ENAMETOOLONG
		run kerrno rename "$MNT/session/k" "$MNT/session/$n"
		assert_output ENAMETOOLONG
		run kerrno link "$MNT/session/k" "$MNT/user/$n"
		assert_output ENAMETOOLONG
	done
	assert_equal "$(tree_state)" "$before"
}

@test "a write past 32767 bytes at an offset (pwrite) is EFBIG and the key keeps its payload" {
	echo -n keep >"$MNT/session/k"
	run "$KEYFS_PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
	os.pwrite(fd, b"x", 32767)
	print("OK")
except OSError as e:
	print(e.errno == 27 and "EFBIG" or e)
try:
	os.close(fd)
except OSError:
	pass' "$MNT/session/k"
	assert_output EFBIG
	assert_equal "$(cat "$MNT/session/k")" keep
	assert_equal "$(fsize "$MNT/session/k")" 4
}

# A file open when the daemon is told to stop never gets its release: keyfs
# frees it (and wipes its payload) itself, which the sanitizer build's
# leak check sees, and commits nothing the writer has not closed.
@test "SIGTERM with files open: keyfs exits 0, frees them, and commits no unclosed write" {
	local rc=0 holder
	echo -n old >"$MNT/session/k"
	echo -n other >"$MNT/session/j"
	# One process holds them open: a shell redirection would close a
	# duplicate of the writer, and that close commits (FLUSH).
	"$KEYFS_PY" - "$MNT/session" "$BATS_TEST_TMPDIR/ready" <<'PY' &
import os, sys, time
d = sys.argv[1]
w = os.open(d + "/k", os.O_WRONLY | os.O_APPEND)
os.write(w, b"new")
r = os.open(d + "/j", os.O_RDONLY)
os.read(r, 2)
dd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
os.listdir(dd)
open(sys.argv[2], "w").write("ready")
time.sleep(60)
PY
	holder=$!
	wait_file "$BATS_TEST_TMPDIR/ready" 10
	kill -TERM "$KEYFS_PID"
	wait "$KEYFS_PID" || rc=$?
	KEYFS_PID=
	kill "$holder"
	wait "$holder" || true
	((rc == 0)) || fail "keyfs exited with $rc after SIGTERM; log: $(cat "$KEYFS_LOG")"
	! keyfs_is_mounted "$MNT" || fusermount3 -u -z "$MNT"
	if [[ $KEYFS_BACKEND == memory ]]; then
		keyfs_mount -o store="$STORE"
	else
		keyfs_mount
	fi
	[[ $(cat "$MNT/session/k") == old ]] || fail "k: $(cat "$MNT/session/k")"
	[[ $(cat "$MNT/session/j") == other ]]
}
