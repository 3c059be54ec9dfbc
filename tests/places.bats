#!/usr/bin/env bats
# places.bats: a keyring reached in several directories at once (by-id, two keyrings that link it, user under user-session) is a directory in each.

load lib/keyfs

setup() { keyfs_mount; }
teardown()
{
	keyfs_unmount
	# the kernel's user keyring outlives the test
	if [[ -n ${UKEY-} && $KEYFS_BACKEND == kernel ]]; then
		keyctl unlink "$(keyctl search @u user "$UKEY" 2>/dev/null)" @u \
			>/dev/null 2>&1 || true
	fi
}

# Two processes open a key through two places of its keyring in turn
# while two others make and remove keys beside it and rename keys across
# keyrings: the kernel holds one parent per directory inode, and moving
# its cached entry takes the other directory's lock without waiting
# (ESTALE when a create there or a rename anywhere holds it).
PLACES_PY='
import os, sys, time
n, mnt, serial = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ses = os.path.join(mnt, "session")
end = time.time() + 3
i = 0
if n <= 2:
	paths = [os.path.join(ses, "kr", "x"), os.path.join(mnt, "by-id", serial, "x")]
	while time.time() < end:
		with open(paths[i % 2]) as f:
			assert f.read() == "v\n"
		i += 1
else:
	while time.time() < end:
		a = os.path.join(ses, "a", "f%d" % n)
		open(a, "w").close()
		os.rename(a, os.path.join(ses, "b", "f%d" % n))
		os.unlink(os.path.join(ses, "b", "f%d" % n))
		t = os.path.join(ses, "t%d" % n)
		open(t, "w").close()
		os.unlink(t)
		i += 1
print(n, i)
'

@test "a key opens through two places of its keyring while keys come and go beside them" {
	mkdir "$MNT/session/kr" "$MNT/session/a" "$MNT/session/b"
	echo v >"$MNT/session/kr/x"
	local s pids=() i rc=0
	s=$(ino "$MNT/session/kr")
	for i in 1 2 3 4; do
		timeout 60 "$KEYFS_PY" -c "$PLACES_PY" "$i" "$MNT" "$s" \
			>"$BATS_TEST_TMPDIR/w$i.out" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || rc=$?
	done
	((rc == 0)) || fail "a worker failed (status $rc): $(cat "$BATS_TEST_TMPDIR"/w*.out)"
}

@test "a keyring has its serial as inode number in every place, and so do the keys in it" {
	mkdir -p "$MNT/session/kr/sub"
	echo v >"$MNT/session/kr/x"
	local s
	s=$(ino "$MNT/session/kr")
	run stat -c '%F %i' "$MNT/by-id/$s" "$MNT/session/kr"
	assert_success
	assert_output "directory $s
directory $s"
	assert_equal "$(ino "$MNT/by-id/$s/sub")" "$(ino "$MNT/session/kr/sub")"
	assert_equal "$(ino "$MNT/by-id/$s/x")" "$(ino "$MNT/session/kr/x")"
	# readdir's "." says so too
	assert_equal "$(ls -ai "$MNT/by-id/$s" | awk '$2 == "." { print $1 }')" "$s"
	# ls -l of both lists the same entries, each time
	for i in 1 2 3; do
		assert_equal "$(ls -li "$MNT/by-id/$s" | tail -n +2)" \
			"$(ls -li "$MNT/session/kr" | tail -n +2)"
	done
}

@test "a name made or removed through one place of a keyring is at once so in the others" {
	mkdir "$MNT/session/kr"
	local s
	s=$(ino "$MNT/session/kr")
	# the kernel caches "not there" for these names under by-id first
	run cat "$MNT/by-id/$s/f"
	assert_failure
	run stat "$MNT/by-id/$s/sub"
	assert_failure
	echo one >"$MNT/session/kr/f"
	mkdir "$MNT/session/kr/sub"
	assert_equal "$(cat "$MNT/by-id/$s/f")" one
	[ -d "$MNT/by-id/$s/sub" ]
	# and the other way round
	rm "$MNT/by-id/$s/f"
	rmdir "$MNT/by-id/$s/sub"
	run cat "$MNT/session/kr/f"
	assert_failure
	assert_output --partial "No such file or directory"
	run stat "$MNT/session/kr/sub"
	assert_failure
	echo two >"$MNT/by-id/$s/g"
	assert_equal "$(cat "$MNT/session/kr/g")" two
}

@test "a keyring moved to another keyring is reached there and by its serial" {
	mkdir "$MNT/session/kr" "$MNT/session/to"
	echo v >"$MNT/session/kr/x"
	local s
	s=$(ino "$MNT/session/kr")
	assert_equal "$(cat "$MNT/by-id/$s/x")" v
	mv "$MNT/session/kr" "$MNT/session/to/"
	assert_equal "$(cat "$MNT/session/to/kr/x")" v
	assert_equal "$(cat "$MNT/by-id/$s/x")" v
	assert_equal "$(ino "$MNT/session/to/kr")" "$s"
	run ls "$MNT/session"
	refute_line kr
}

@test "the user keyring is a directory both as user and inside the session keyring" {
	local u name
	u=$(ino "$MNT/user")
	# the test's kernel session links @u (keyfs_new_session); the memory
	# backend's session keyring starts empty
	[[ $KEYFS_BACKEND == kernel ]] || echo user session >"$MNT/.keyfs/link"
	name=$(ls "$MNT/session" | while read -r n; do
		[ "$(ino "$MNT/session/$n")" = "$u" ] && echo "$n"; done)
	[ -n "$name" ]
	UKEY=keyfs-places-$$
	echo v >"$MNT/user/$UKEY"
	for i in 1 2 3; do
		assert_equal "$(cat "$MNT/session/$name/$UKEY")" v
		assert_equal "$(cat "$MNT/user/$UKEY")" v
	done
	rm "$MNT/session/$name/$UKEY"
	run cat "$MNT/user/$UKEY"
	assert_failure
}

@test "root=: the mount's own keyring found by a search is a directory there too" {
	local d
	keyfs_unmount
	if [[ $KEYFS_BACKEND == kernel ]]; then
		# a keyring of the test's session, which the search looks through
		keyctl newring places-root @s >/dev/null
		keyfs_mount -o root=%:places-root
		d=$MNT/.keyfs/search/keyring/places-root
	else
		# the memory backend's keyrings last as long as its mount
		keyfs_mount -o root=@u
		echo @u @s >"$MNT/.keyfs/link"
		d=$MNT/.keyfs/search/keyring/_uid.$(id -u)
	fi
	mkdir "$MNT/kr"
	echo v >"$MNT/kr/x"
	run stat -c '%F %i' "$d"
	assert_success
	assert_output "directory $(ino "$MNT")"
	# the listing is the keyring's: the mount root's .keyfs is not in it
	run ls -A "$d"
	assert_success
	assert_output kr
	assert_equal "$(cat "$d/kr/x")" v
	assert_equal "$(cat "$MNT/kr/x")" v
	run ls -A "$MNT"
	assert_line .keyfs
}
