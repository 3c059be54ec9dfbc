#!/usr/bin/env bats
# rename.bats: rename and link (keyfs(1) "Renaming and linking"): rotation under readers, what a new name carries, EXDEV, a pending entry as the target.

load lib/keyfs
load lib/users

# A second user, made for this file and removed after it (a key's owner).
setup_file() { second_user_create kfsren; }
teardown_file() { second_user_remove; }

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

# The reader of the rotation test: opens and reads KEY until STOP exists
# (or LIMIT seconds pass), making STOP.ready after its first read, and
# prints "reads N errors {...} bad N", where bad counts reads that were
# neither OLD nor NEW.
ROTATE_READER_PY='
import errno, os, sys, time
key, stop, old, new, limit = sys.argv[1:6]
old, new = old.encode(), new.encode()
reads = bad = 0
errors = {}
deadline = time.monotonic() + float(limit)
while time.monotonic() < deadline:
	done = os.path.exists(stop)
	try:
		fd = os.open(key, os.O_RDONLY)
		try:
			data = b""
			while True:
				chunk = os.read(fd, 65536)
				if not chunk:
					break
				data += chunk
		finally:
			os.close(fd)
		if data != old and data != new:
			bad += 1
	except OSError as e:
		name = errno.errorcode.get(e.errno, str(e.errno))
		errors[name] = errors.get(name, 0) + 1
	reads += 1
	if reads == 1:
		open(stop + ".ready", "w").close()
	if done:
		break
print("reads %d errors %s bad %d" % (reads, errors, bad))
'

# The rotator: once the reader has started, the manual's rotation (write
# KEY.new, rename it onto KEY) COUNT times or for LIMIT seconds,
# alternating OLD and NEW; then STOP.  Python, not a shell loop of cat and
# mv: the same system calls, fast enough to race the reader many times.
ROTATE_WRITER_PY='
import os, sys, time
key, stop, old, new, count, limit = sys.argv[1:7]
deadline = time.monotonic() + float(limit)
while not os.path.exists(stop + ".ready") and time.monotonic() < deadline:
	time.sleep(0.01)
i = 0
while i < int(count) and time.monotonic() < deadline:
	with open(key + ".new", "wb") as f:
		f.write((old if i % 2 else new).encode())
	os.rename(key + ".new", key)
	i += 1
open(stop, "w").close()
print("rotations %d" % i)
'

rotate_under_reader()
{
	local key=$1 old=old-secret-1 new=new-secret-22 out
	local stop=$BATS_TEST_TMPDIR/stop
	printf %s "$old" >"$key"
	"$KEYFS_PY" -c "$ROTATE_READER_PY" "$key" "$stop" "$old" "$new" 60 \
		>"$BATS_TEST_TMPDIR/reader.out" &
	local reader=$!
	"$KEYFS_PY" -c "$ROTATE_WRITER_PY" "$key" "$stop" "$old" "$new" 1000 30
	wait "$reader"
	out=$(cat "$BATS_TEST_TMPDIR/reader.out")
	echo "$out"
	[[ $out =~ ^reads\ ([0-9]+)\ errors\ \{\}\ bad\ 0$ ]]
	# The reader must really have raced the rotations.
	((BASH_REMATCH[1] >= 100))
	[[ $(cat "$key") == "$old" || $(cat "$key") == "$new" ]]
	run ls -A "$(dirname "$key")"
	refute_line "$(basename "$key").new"
}

@test "rotation by rename: a concurrent reader sees the old or the new payload, never an error" {
	rotate_under_reader "$MNT/session/db-password"
}

@test "rotation by rename under a shell loop of the manual's commands" {
	local d=$MNT/session i
	printf %s old >"$d/pw"
	for ((i = 0; i < 20; i++)); do
		printf %s "new$i" | cat >"$d/.pw.new"
		mv "$d/.pw.new" "$d/pw"
		assert_equal "$(cat "$d/pw")" "new$i"
	done
	run ls -A "$d"
	refute_line .pw.new
}

@test "mv to a new name in one keyring carries type, permission, owner and expiry; the serial changes" {
	local d=$MNT/session a b exp got
	printf %s pw >"$d/%user:a"
	xset perm 0x3f1f0000 "$d/a"
	setfattr -n user.keyfs.expiry -v +3600 "$d/a"
	chgrp 4242 "$d/a"
	if [[ -n $U2 ]]; then
		chown "$U2UID" "$d/a"
	fi
	a=$(xget serial "$d/a")
	exp=$(xget expiry "$d/a")
	mv "$d/a" "$d/b"
	# The serial, not the inode: until the kernel looks b up again, the
	# inode the VFS moved there stands for the new key.
	b=$(xget serial "$d/b")
	[[ $b != "$a" ]]
	assert_equal "$(cat "$d/b")" pw
	assert_equal "$(xget type "$d/b")" user
	assert_equal "$(xget perm "$d/b")" 0x3f1f0000
	assert_equal "$(stat -c %g "$d/b")" 4242
	if [[ -n $U2 ]]; then
		assert_equal "$(stat -c %u "$d/b")" "$U2UID"
	fi
	got=$(xget expiry "$d/b")
	# The same expiry, to the second the rename took.
	((got >= exp && got <= exp + 2))
	run kerrno stat "$d/a"
	assert_output ENOENT
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(keyctl rdescribe "$b" | cut -d';' -f1,4,5)" \
			"user;3f1f0000;b"
		run klinks @s "$a"
		assert_failure
	fi
}

@test "a key of a type no one can read cannot take a new name in its keyring" {
	printf %s pw >"$MNT/session/%logon:svc:a"
	run kerrno rename "$MNT/session/%logon:svc:a" "$MNT/session/%logon:svc:b"
	assert_output EOPNOTSUPP
	run ls -A "$MNT/session"
	assert_line %logon:svc:a
	refute_line %logon:svc:b
}

@test "mv to a new name that a key of another type answers to is EINVAL" {
	echo user-key >"$MNT/session/name"
	printf %s pw >"$MNT/session/%logon:svc:other"
	run kerrno rename "$MNT/session/%logon:svc:other" "$MNT/session/name"
	assert_output EINVAL
	assert_equal "$(cat "$MNT/session/name")" user-key
	run ls -A "$MNT/session"
	assert_line %logon:svc:other
}

@test "renames in a row right after one another follow the payload" {
	local d=$MNT/session
	echo one >"$d/a"
	echo two >"$d/b"
	mv "$d/a" "$d/b"
	mv "$d/b" "$d/c"
	assert_equal "$(cat "$d/c")" one
	run kerrno stat "$d/b"
	assert_output ENOENT
	ls -A "$d" >/dev/null
	assert_equal "$(cat "$d/c")" one
}

@test "a key linked from two keyrings has nlink 2, and 1 again when unlinked from one" {
	mkdir "$MNT/session/r"
	echo shared >"$MNT/session/k"
	ln "$MNT/session/k" "$MNT/session/r/"
	assert_equal "$(nlink "$MNT/session/k")" 2
	assert_equal "$(nlink "$MNT/session/r/k")" 2
	rm "$MNT/session/r/k"
	eventually output_is 1 nlink "$MNT/session/k"
}

@test "rename across keyrings to a new name is EXDEV, and plain mv copies and deletes" {
	mkdir "$MNT/session/r"
	echo moving >"$MNT/session/k"
	run kerrno rename "$MNT/session/k" "$MNT/session/r/other"
	assert_output EXDEV
	assert_equal "$(cat "$MNT/session/k")" moving
	run mv "$MNT/session/k" "$MNT/session/r/other"
	assert_success
	refute_output --partial "subdirectory of itself"
	assert_equal "$(cat "$MNT/session/r/other")" moving
	run kerrno stat "$MNT/session/k"
	assert_output ENOENT
	# ln keeps its answer: a link is never a copy.
	echo linked >"$MNT/session/l"
	run kerrno link "$MNT/session/l" "$MNT/session/r/other2"
	assert_output EINVAL
}

@test "mv onto a pending entry replaces it: the name is there once, as what was moved" {
	mkdir "$MNT/session/r" "$MNT/session/r2"
	# a pending entry onto another in the same keyring
	touch "$MNT/session/r/a" "$MNT/session/r/b"
	local a
	a=$(ino "$MNT/session/r/a")
	mv "$MNT/session/r/a" "$MNT/session/r/b"
	run ls -1U "$MNT/session/r"
	assert_output b
	assert_equal "$(ino "$MNT/session/r/b")" "$a"
	# a key onto a pending entry
	echo -n K >"$MNT/session/r/key"
	touch "$MNT/session/r/p"
	mv "$MNT/session/r/key" "$MNT/session/r/p"
	run ls -1U "$MNT/session/r"
	assert_line --index 0 --regexp '^(b|p)$'
	assert_equal "${#lines[@]}" 2
	assert_equal "$(cat "$MNT/session/r/p")" K
	assert_equal "$(getfattr --only-values -n user.keyfs.state "$MNT/session/r/p")" valid
	# a pending entry onto one of its name in another keyring
	touch "$MNT/session/r/c" "$MNT/session/r2/c"
	a=$(ino "$MNT/session/r/c")
	mv "$MNT/session/r/c" "$MNT/session/r2/c"
	run ls -1U "$MNT/session/r2"
	assert_output c
	assert_equal "$(ino "$MNT/session/r2/c")" "$a"
	# a writer of the replaced entry commits nothing, as to an unlinked file
	touch "$MNT/session/r/w1" "$MNT/session/r/w2"
	a=$(ino "$MNT/session/r/w1")
	exec {fd}>"$MNT/session/r/w2"
	mv "$MNT/session/r/w1" "$MNT/session/r/w2"
	echo data >&"$fd"
	exec {fd}>&-
	assert_equal "$(ino "$MNT/session/r/w2")" "$a"
	assert_equal "$(getfattr --only-values -n user.keyfs.state "$MNT/session/r/w2")" pending
}
