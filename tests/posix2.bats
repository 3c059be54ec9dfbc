#!/usr/bin/env bats
# posix2.bats: file-system behaviour everyday tools expect (issue 11, items 4-7, 9, 10, 15-19).

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

@test "setfattr -v 0x3f3f0000 (4 raw bytes) sets perm as the big-endian mask" {
	echo v >"$MNT/session/k"
	run setfattr -n user.keyfs.perm -v 0x3f3f0000 "$MNT/session/k"
	assert_success
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f3f0000
	# the text forms still work
	setfattr -n user.keyfs.perm -v 3f1b0000 "$MNT/session/k"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f1b0000
	# binary of another length is not a mask
	run setfattr -n user.keyfs.perm -v 0x3f3f00 "$MNT/session/k"
	assert_failure
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f1b0000
}

@test "setfattr -v 0x... (8 raw bytes) sets expiry as a big-endian time" {
	echo v >"$MNT/session/k"
	local t
	t=$(($(date +%s) + 1000))
	setfattr -n user.keyfs.expiry -v "$(printf '0x%016x' "$t")" "$MNT/session/k"
	assert_equal "$(xget expiry "$MNT/session/k")" "$t"
}

@test "a read-only attribute set to its own value succeeds and changes nothing" {
	echo v >"$MNT/session/k"
	local n v
	for n in type description serial state; do
		v=$(xget "$n" "$MNT/session/k")
		run kerrno setxattr "$MNT/session/k" "user.keyfs.$n" "$v"
		assert_output OK
		assert_equal "$(xget "$n" "$MNT/session/k")" "$v"
		run kerrno setxattr "$MNT/session/k" "user.keyfs.$n" "${v}x"
		assert_output EPERM
	done
	# what rsync -X and mv across file systems do
	getfattr --absolute-names -d -m '^user\.keyfs\.' "$MNT/session/k" >"$BATS_TEST_TMPDIR/dump"
	run setfattr --restore="$BATS_TEST_TMPDIR/dump"
	assert_success
	assert_equal "$(cat "$MNT/session/k")" v
}

@test "the keyfs-store(5) example mounts and reads back as shown" {
	skip_unless_memory
	keyfs_unmount
	local store=$BATS_TEST_TMPDIR/keys.json
	sed -n '/^\.SH EXAMPLE/,$p' "${KEYFS_SRCDIR:-$BATS_TEST_DIRNAME/..}/man/keyfs-store.5" |
		awk '/^\.EX/ { n++; next } /^\.EE/ { if (n == 1) exit; next } n == 1' |
		sed 's/\\-/-/g' >"$store"
	grep -q '"serial": 1,' "$store"
	keyfs_mount -o "store=$store"
	run ls "$MNT/session"
	assert_success
	assert_output --partial db:password
	assert_equal "$(cat "$MNT/session/db:password")" hunter2
	run ls "$MNT/user"
	assert_success
	run stat -c %a "$store"
	assert_output 600
	# the key with serial 1 is not the mount root
	[ "$(ino "$MNT/session")" != "$(ino "$MNT")" ]
	[ "$(ino "$MNT/by-id/1")" = "$(ino "$MNT/session")" ]
}

@test "mknod of a regular file is a create; tar -x extracts into a keyring" {
	run kerrno mknod "$MNT/session/f" reg
	assert_output OK
	ls_has "$MNT/session" f
	run kerrno mknod "$MNT/session/f" reg
	assert_output EEXIST
	run kerrno mknod "$MNT/session/fifo" fifo
	assert_output EPERM
	run kerrno mknod "$MNT/session/sock" sock
	assert_output EPERM
	mkdir "$BATS_TEST_TMPDIR/src"
	printf secret >"$BATS_TEST_TMPDIR/src/a"
	printf other >"$BATS_TEST_TMPDIR/src/b"
	tar -C "$BATS_TEST_TMPDIR/src" -cf "$BATS_TEST_TMPDIR/t.tar" a b
	run tar --xattrs --no-same-owner --no-same-permissions -C "$MNT/session" -xf "$BATS_TEST_TMPDIR/t.tar"
	assert_success
	assert_equal "$(cat "$MNT/session/a")" secret
	assert_equal "$(cat "$MNT/session/b")" other
}

@test "statfs: files are the caller's key quota, used are the keys charged" {
	local total free
	read -r total free < <(stat -f -c '%c %d' "$MNT")
	((total > 0)) || fail "no inodes: $total"
	((free <= total)) || fail "more free ($free) than total ($total)"
	# On the kernel backend the quota is the uid's, shared with every
	# other process of root's: make several keys so that others' churn
	# cannot hide them.
	local free2 i
	for i in 1 2 3 4 5 6 7 8; do
		echo v >"$MNT/session/k$i"
	done
	read -r _ free2 < <(stat -f -c '%c %d' "$MNT")
	((free2 < free)) || fail "new keys used no inode: $free -> $free2"
	run df -i "$MNT"
	assert_success
	refute_output --regexp ' -[0-9]'
}

@test "rmdir of a keyring holding a pending entry is ENOTEMPTY" {
	mkdir "$MNT/session/ring"
	exec 7>"$MNT/session/ring/p"
	ls_has "$MNT/session/ring" p
	run kerrno rmdir "$MNT/session/ring"
	assert_output ENOTEMPTY
	ls_has "$MNT/session" ring
	exec 7>&-
}

# A key removed while a file of it is open for writing takes the data
# nowhere, as an unlinked file does: the close says ENOENT, as for a
# pending entry someone else removed (on the kernel backend the kernel
# may still let the update through before it collects the key: then the
# close succeeds), and no key comes back under the name.
@test "a key removed while open for writing: the close says ENOENT or succeeds, and the name stays gone" {
	echo -n old >"$MNT/session/k"
	run "$KEYFS_PY" - "$MNT/session/k" <<'PY'
import os, sys
p = sys.argv[1]
fd = os.open(p, os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"new")
os.unlink(p)
try:
	os.close(fd)
	print("OK")
except OSError as e:
	print(os.strerror(e.errno))
PY
	if [[ $KEYFS_BACKEND == memory ]]; then
		assert_output "No such file or directory"
	else
		assert_output --regexp '^(OK|No such file or directory)$'
	fi
	run kerrno stat "$MNT/session/k"
	assert_output ENOENT
}

@test "ftruncate, write and fstat of an open file whose key or entry was removed work on the open file" {
	echo -n hello >"$MNT/session/k"
	run "$KEYFS_PY" - "$MNT/session/k" "$MNT/session/new" <<'PY'
import os, sys
for p in sys.argv[1:]:
	fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
	os.unlink(p)
	os.ftruncate(fd, 2)
	os.pwrite(fd, b"xyz", 1)
	st = os.fstat(fd)
	# a removed entry is linked nowhere (a removed key the kernel has not
	# collected keeps the count keyfs saw: at least 1)
	print(st.st_size, os.pread(fd, 10, 0), st.st_nlink if p.endswith("new") else "-")
	try:
		os.close(fd)
	except OSError:
		pass
PY
	assert_success
	assert_output "4 b'hxyz' -
4 b'\\x00xyz' 0"
}

@test "fallocate grows an open key file with zeros, keeps its size with -n, refuses holes" {
	run fallocate -l 10 "$MNT/session/f"
	assert_success
	assert_equal "$(fsize "$MNT/session/f")" 10
	assert_equal "$(xget state "$MNT/session/f")" valid
	assert_equal "$(od -An -tx1 "$MNT/session/f" | tr -d ' \n')" 00000000000000000000
	echo abc >"$MNT/session/g"
	run fallocate -n -l 100 "$MNT/session/g"
	assert_success
	run fallocate -l 2 "$MNT/session/g"	# within: nothing changes
	assert_success
	assert_equal "$(cat "$MNT/session/g")" abc
	run fallocate -o 2 -l 3 "$MNT/session/g"
	assert_success
	assert_equal "$(fsize "$MNT/session/g")" 5
	run fallocate -p -o 0 -l 2 "$MNT/session/g"
	assert_failure
	run fallocate -l 40000 "$MNT/session/g"
	assert_failure
	assert_output --partial "too large"
	assert_equal "$(fsize "$MNT/session/g")" 5
	# posix_fallocate, then a write within the range, as preallocating tools do
	run "$KEYFS_PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
os.posix_fallocate(fd, 0, 5)
os.write(fd, b"ab")
print(os.fstat(fd).st_size)
os.close(fd)' "$MNT/session/p"
	assert_output 5
	assert_equal "$(od -An -c "$MNT/session/p" | tr -d ' \n')" 'ab\0\0\0'
}
