#!/usr/bin/env bats
# files.bats: keys as regular files (SPEC §4): create, read, write, truncate, rename, unlink.

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

# revoke_key NAME: revoke session/NAME, through keyctl on the kernel and
# through the revoke control file (SPEC §6) on the memory backend.
revoke_key()
{
	if [[ $KEYFS_BACKEND == kernel ]]; then
		keyctl revoke "$(ino "$MNT/session/$1")"
	else
		echo "session/$1" >"$MNT/.keyfs/revoke"
	fi
}

# kernel_payload_is PATH EXPECTED: the kernel's payload of PATH's key.
kernel_payload_is()
{
	[[ $KEYFS_BACKEND == kernel ]] || return 0
	assert_equal "$(keyctl pipe "$(ino "$1")")" "$2"
}

@test "echo > NAME creates a key that cat reads back" {
	echo hello >"$MNT/session/greeting"
	assert_equal "$(cat "$MNT/session/greeting")" hello
	run stat -c %F "$MNT/session/greeting"
	assert_output "regular file"
}

@test "a plain name creates a key of type user" {
	echo hello >"$MNT/session/k"
	assert_equal "$(ino "$MNT/session/%user:k")" "$(ino "$MNT/session/k")"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(ktype "$(ino "$MNT/session/k")")" user
	fi
}

@test "kernel: a key written through keyfs is what keyctl pipe and rdescribe report" {
	skip_unless_kernel
	printf 'secret-value' >"$MNT/session/kc"
	local s
	s=$(keyctl search @s user kc)
	assert_equal "$(ino "$MNT/session/kc")" "$s"
	assert_equal "$(keyctl pipe "$s")" secret-value
	assert_equal "$(ktype "$s")" user
	assert_equal "$(kdesc "$s")" kc
	assert_equal "$(keyctl rdescribe "$s" | cut -d';' -f2,3)" "$(id -u);$(id -g)"
	klinks @s "$s"
}

@test "a binary payload with NUL bytes reads back exactly" {
	local src=$BATS_TEST_TMPDIR/bin
	{ printf 'a\0b\0\0c'; head -c 4000 /dev/urandom; printf '\0'; } >"$src"
	cp "$src" "$MNT/session/bin"
	cmp "$src" "$MNT/session/bin"
	assert_equal "$(fsize "$MNT/session/bin")" "$(stat -c %s "$src")"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		keyctl pipe "$(ino "$MNT/session/bin")" | cmp "$src" -
	fi
}

@test "stat size is the payload length" {
	printf hello >"$MNT/session/five"
	assert_equal "$(fsize "$MNT/session/five")" 5
	printf 'hello, world' >"$MNT/session/five"
	assert_equal "$(fsize "$MNT/session/five")" 12
}

@test "a new key is owned by the caller's uid and gid" {
	echo x >"$MNT/session/mine"
	assert_equal "$(stat -c %u:%g "$MNT/session/mine")" "$(id -u):$(id -g)"
}

@test "an open file reads the payload as it was at open" {
	echo old >"$MNT/session/snap"
	exec 7<"$MNT/session/snap"
	echo new >"$MNT/session/snap"
	run cat <&7
	exec 7<&-
	assert_output old
	assert_equal "$(cat "$MNT/session/snap")" new
}

@test "an open file stays readable after rm" {
	echo still-here >"$MNT/session/gone"
	exec 7<"$MNT/session/gone"
	rm "$MNT/session/gone"
	[ ! -e "$MNT/session/gone" ]
	run cat <&7
	exec 7<&-
	assert_output still-here
}

@test "O_APPEND (>>) appends to the current payload" {
	echo abc >"$MNT/session/app"
	echo def >>"$MNT/session/app"
	assert_equal "$(cat "$MNT/session/app")" "abc
def"
	kernel_payload_is "$MNT/session/app" "abc
def"
}

@test "O_TRUNC (>) replaces the payload" {
	echo abcdef >"$MNT/session/tr"
	echo x >"$MNT/session/tr"
	assert_equal "$(cat "$MNT/session/tr")" x
	assert_equal "$(fsize "$MNT/session/tr")" 2
}

@test "a write at an offset patches the payload" {
	printf abcdef >"$MNT/session/patch"
	printf XY | dd of="$MNT/session/patch" bs=1 seek=2 conv=notrunc status=none
	assert_equal "$(cat "$MNT/session/patch")" abXYef
	kernel_payload_is "$MNT/session/patch" abXYef
}

@test "a write past the end fills the gap with zero bytes" {
	printf abc >"$MNT/session/gap"
	printf Z | dd of="$MNT/session/gap" bs=1 seek=5 conv=notrunc status=none
	printf 'abc\0\0Z' | cmp - "$MNT/session/gap"
}

@test "several writes to one open file make one payload" {
	{
		printf part1
		printf part2
		printf part3
	} >"$MNT/session/multi"
	assert_equal "$(cat "$MNT/session/multi")" part1part2part3
}

@test "a write is committed at close, not before" {
	echo -n old >"$MNT/session/later"
	# One descriptor held open by python, and no child process: every
	# close of a copy of it (a shell's dup, a child's exec or exit)
	# flushes, and keyfs commits at flush.
	run "$KEYFS_PY" - "$MNT/session/later" "$KEYFS_BACKEND" <<'PY'
import ctypes, os, sys
path, backend = sys.argv[1], sys.argv[2]
def seen():
	with open(path, "rb") as f:
		s = f.read().decode()
	if backend == "kernel":
		ku = ctypes.CDLL("libkeyutils.so.1")
		ku.keyctl_read.restype = ctypes.c_long
		buf = ctypes.create_string_buffer(4096)
		n = ku.keyctl_read(os.stat(path).st_ino, buf, 4096)
		s += "/" + buf.raw[:n].decode()
	return s
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
os.write(fd, b"-more")
print("open:", seen())
os.close(fd)
print("closed:", seen())
PY
	assert_success
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_output "open: old/old
closed: old-more/old-more"
	else
		assert_output "open: old
closed: old-more"
	fi
}

@test "a read-write open sees the current payload and can change it" {
	printf 0123456789 >"$MNT/session/rw"
	exec 8<>"$MNT/session/rw"
	local first
	read -r -n 4 -u 8 first
	printf AB >&8
	exec 8>&-
	assert_equal "$first" 0123
	assert_equal "$(cat "$MNT/session/rw")" 0123AB6789
}

@test "truncate(2) by path cuts the payload" {
	printf abcdef >"$MNT/session/cut"
	run kerrno truncate "$MNT/session/cut" 2
	assert_output OK
	assert_equal "$(cat "$MNT/session/cut")" ab
	assert_equal "$(fsize "$MNT/session/cut")" 2
	kernel_payload_is "$MNT/session/cut" ab
}

@test "truncate -s N (ftruncate of an open file) cuts the payload" {
	printf abcdef >"$MNT/session/cut"
	truncate -s 3 "$MNT/session/cut"
	assert_equal "$(cat "$MNT/session/cut")" abc
	assert_equal "$(fsize "$MNT/session/cut")" 3
	kernel_payload_is "$MNT/session/cut" abc
}

@test "truncate -s N past the end extends with zero bytes" {
	printf ab >"$MNT/session/ext"
	truncate -s 4 "$MNT/session/ext"
	printf 'ab\0\0' | cmp - "$MNT/session/ext"
}

@test "truncate -s 0 of a user key is EINVAL and keeps the payload" {
	echo keep >"$MNT/session/nz"
	run kerrno truncate "$MNT/session/nz" 0
	assert_output EINVAL
	assert_equal "$(cat "$MNT/session/nz")" keep
	kernel_payload_is "$MNT/session/nz" keep
}

@test "emptying a user key with : > fails and keeps the payload" {
	echo keep >"$MNT/session/nz"
	run kerrno open "$MNT/session/nz" wt
	refute_output OK
	assert_equal "$(cat "$MNT/session/nz")" keep
}

@test "a payload of 32767 bytes works" {
	local src=$BATS_TEST_TMPDIR/max
	head -c 32767 /dev/urandom >"$src"
	cp "$src" "$MNT/session/max"
	cmp "$src" "$MNT/session/max"
	assert_equal "$(fsize "$MNT/session/max")" 32767
}

@test "a payload of 32768 bytes is EFBIG and the key keeps its payload" {
	echo old >"$MNT/session/big"
	run kerrno writesize "$MNT/session/big" 32768
	assert_output EFBIG
	assert_equal "$(cat "$MNT/session/big")" old
	kernel_payload_is "$MNT/session/big" old
}

@test "appending past 32767 bytes is EFBIG and the key keeps its payload" {
	local src=$BATS_TEST_TMPDIR/max
	head -c 32767 /dev/urandom >"$src"
	cp "$src" "$MNT/session/full"
	run kerrno write "$MNT/session/full" x wa
	assert_output EFBIG
	cmp "$src" "$MNT/session/full"
}

@test "a new key over 32767 bytes is EFBIG" {
	run kerrno writesize "$MNT/session/toobig" 40000
	assert_output EFBIG
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl search @s user toobig
		assert_failure
	fi
}

@test "touch NEWNAME makes a pending entry: listed, size 0" {
	touch "$MNT/session/pend"
	run ls -A "$MNT/session"
	assert_line pend
	assert_equal "$(fsize "$MNT/session/pend")" 0
	run cat "$MNT/session/pend"
	assert_success
	assert_output ""
}

@test "kernel: a pending entry is invisible to keyctl until a write instantiates it" {
	skip_unless_kernel
	touch "$MNT/session/pend"
	run keyctl search @s user pend
	assert_failure
	echo now >"$MNT/session/pend"
	run keyctl search @s user pend
	assert_success
	assert_equal "$(keyctl pipe "$output")" now
	assert_equal "$(ino "$MNT/session/pend")" "$output"
}

@test "a write to a pending entry instantiates it" {
	touch "$MNT/session/pend"
	echo now >"$MNT/session/pend"
	assert_equal "$(cat "$MNT/session/pend")" now
	assert_equal "$(fsize "$MNT/session/pend")" 4
}

@test "cp /dev/null makes a pending entry" {
	cp /dev/null "$MNT/session/empty"
	run ls -A "$MNT/session"
	assert_line empty
	assert_equal "$(fsize "$MNT/session/empty")" 0
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run keyctl search @s user empty
		assert_failure
	fi
}

@test "a pending entry is gone after unmount" {
	touch "$MNT/session/pend"
	echo real >"$MNT/session/real"
	keyfs_unmount
	keyfs_mount
	ls_lacks "$MNT/session" pend
	run ls -A "$MNT/session"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_line real
	fi
}

@test "rm of a pending entry removes it" {
	touch "$MNT/session/pend"
	rm "$MNT/session/pend"
	ls_lacks "$MNT/session" pend
}

@test "rm unlinks the key from the keyring" {
	echo x >"$MNT/session/doomed"
	local s
	s=$(ino "$MNT/session/doomed")
	rm "$MNT/session/doomed"
	ls_lacks "$MNT/session" doomed
	run kerrno stat "$MNT/session/doomed"
	assert_output ENOENT
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run klinks @s "$s"
		assert_failure
	fi
}

@test "rm of a missing name is ENOENT" {
	run kerrno unlink "$MNT/session/never"
	assert_output ENOENT
}

@test "symlink in a keyring is EPERM" {
	run kerrno symlink target "$MNT/session/link"
	assert_output EPERM
}

@test "mknod of a fifo or a device in a keyring is EPERM" {
	run kerrno mknod "$MNT/session/fifo" fifo
	assert_output EPERM
	run kerrno mknod "$MNT/session/dev" chr
	assert_output EPERM
	ls_lacks "$MNT/session" fifo
	ls_lacks "$MNT/session" dev
}

@test "touch of an existing key succeeds and keeps the payload" {
	echo keep >"$MNT/session/t"
	touch "$MNT/session/t"
	touch -d @1000000000 "$MNT/session/t"
	run kerrno utime "$MNT/session/t"
	assert_output OK
	assert_equal "$(cat "$MNT/session/t")" keep
}

@test "mv a b in one keyring: b takes a's payload and a disappears" {
	echo from-a >"$MNT/session/a"
	echo from-b >"$MNT/session/b"
	local b
	b=$(ino "$MNT/session/b")
	mv "$MNT/session/a" "$MNT/session/b"
	# Right after the rename, before any listing refreshes the names.
	assert_equal "$(cat "$MNT/session/b")" from-a
	assert_equal "$(ino "$MNT/session/b")" "$b"
	run kerrno stat "$MNT/session/a"
	assert_output ENOENT
	run ls -A "$MNT/session"
	refute_line a
	assert_line b
	assert_equal "$(cat "$MNT/session/b")" from-a
	assert_equal "$(ino "$MNT/session/b")" "$b"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(keyctl pipe "$b")" from-a
	fi
}

@test "mv a b in one keyring: b reads a's payload after the names settle" {
	echo from-a >"$MNT/session/a"
	echo from-b >"$MNT/session/b"
	mv "$MNT/session/a" "$MNT/session/b"
	ls -A "$MNT/session" >/dev/null
	assert_equal "$(cat "$MNT/session/b")" from-a
}

@test "mv a c to a new name in one keyring makes c with a's payload" {
	echo from-a >"$MNT/session/a"
	mv "$MNT/session/a" "$MNT/session/c"
	assert_equal "$(cat "$MNT/session/c")" from-a
	run kerrno stat "$MNT/session/a"
	assert_output ENOENT
	run ls -A "$MNT/session"
	refute_line a
	assert_line c
	assert_equal "$(cat "$MNT/session/c")" from-a
}

@test "sed -i edits a key in place" {
	echo "x marks" >"$MNT/session/edit"
	sed -i s/x/y/ "$MNT/session/edit"
	assert_equal "$(cat "$MNT/session/edit")" "y marks"
	run ls -A "$MNT/session"
	assert_line edit
	refute_line --regexp '^sed'
}

@test "mv across keyrings moves the key" {
	mkdir "$MNT/session/ring"
	echo moving >"$MNT/session/k"
	local s
	s=$(ino "$MNT/session/k")
	mv "$MNT/session/k" "$MNT/session/ring/k"
	run ls -A "$MNT/session"
	refute_line k
	assert_equal "$(cat "$MNT/session/ring/k")" moving
	assert_equal "$(ino "$MNT/session/ring/k")" "$s"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		klinks "$(ino "$MNT/session/ring")" "$s"
		run klinks @s "$s"
		assert_failure
	fi
}

@test "statfs works and counts the keys" {
	echo x >"$MNT/session/k1"
	echo y >"$MNT/session/k2"
	run stat -f -c %c "$MNT"
	assert_success
	[ "$output" -gt 0 ]
	run stat -f -c %c "$MNT/session"
	assert_success
	[ "$output" -gt 0 ]
}

@test "cat of a logon key is EOPNOTSUPP and its size is 0" {
	echo -n pw >"$MNT/session/%logon:svc:alice"
	run kerrno read "$MNT/session/%logon:svc:alice"
	assert_output EOPNOTSUPP
	assert_equal "$(fsize "$MNT/session/%logon:svc:alice")" 0
}

@test "a logon key can be updated by writing it" {
	echo -n pw1 >"$MNT/session/%logon:svc:bob"
	local s
	s=$(ino "$MNT/session/%logon:svc:bob")
	echo -n pw22 >"$MNT/session/%logon:svc:bob"
	assert_equal "$(ino "$MNT/session/%logon:svc:bob")" "$s"
	run bash -c 'ls -A "$MNT/session" | grep -c "svc:bob"'
	assert_output 1
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(keyctl search @s logon svc:bob)" "$s"
	fi
}

@test "a revoked key is EKEYREVOKED on cat and stays listed (control file on memory)" {
	echo x >"$MNT/session/rev"
	revoke_key rev
	eventually output_is EKEYREVOKED kerrno read "$MNT/session/rev"
	run kerrno write "$MNT/session/rev" y
	assert_output EKEYREVOKED
	run ls -A "$MNT/session"
	assert_line rev
}

@test "an expired key is EKEYEXPIRED on cat (control file on memory)" {
	echo x >"$MNT/session/exp"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		keyctl timeout "$(ino "$MNT/session/exp")" 1
	else
		echo "session/exp 1" >"$MNT/.keyfs/timeout"
	fi
	local i
	for ((i = 0; i < 40; i++)); do
		[[ $(kerrno read "$MNT/session/exp") == EKEYEXPIRED ]] && break
		sleep 0.1
	done
	run kerrno read "$MNT/session/exp"
	assert_output EKEYEXPIRED
}

@test "kernel: a key added with keyctl is readable through keyfs" {
	skip_unless_kernel
	keyctl add user added by-keyctl @s >/dev/null
	eventually output_is by-keyctl cat "$MNT/session/added"
}

@test "kernel: keyctl update shows in cat and in stat size" {
	skip_unless_kernel
	echo -n short >"$MNT/session/upd"
	assert_equal "$(fsize "$MNT/session/upd")" 5
	keyctl update "$(ino "$MNT/session/upd")" "a longer payload"
	eventually output_is "a longer payload" cat "$MNT/session/upd"
	eventually output_is 16 fsize "$MNT/session/upd"
}

@test "kernel: keyctl unlink removes the entry" {
	skip_unless_kernel
	echo x >"$MNT/session/unl"
	keyctl unlink "$(ino "$MNT/session/unl")" @s >/dev/null
	eventually ls_lacks "$MNT/session" unl
	eventually output_is ENOENT kerrno stat "$MNT/session/unl"
}

@test "kernel: keyctl revoke makes cat EKEYREVOKED" {
	skip_unless_kernel
	echo x >"$MNT/session/krev"
	keyctl revoke "$(ino "$MNT/session/krev")"
	eventually output_is EKEYREVOKED kerrno read "$MNT/session/krev"
}

# An fsx-like run on one key: random writes at any offset, appends,
# truncations, fsyncs, reopens and private mmaps of the committed payload,
# each checked against a model of what the file must hold (fixed seeds).
FSX_PY='
import mmap, os, random, sys
path, seed, nops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd, model, MAX = random.Random(seed), bytearray(), 32767
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
def check(what):
	st = os.fstat(fd)
	got = os.pread(fd, MAX + 10, 0)
	if st.st_size != len(model) or got != bytes(model):
		sys.exit("%s: size %d, %d bytes read, want %d" % (what, st.st_size, len(got), len(model)))
for n in range(nops):
	op = rnd.choice("wwtacfrm")
	if op == "w":
		off = rnd.randrange(MAX)
		buf = rnd.randbytes(rnd.randrange(1, min(2000, MAX - off) + 1))
		os.pwrite(fd, buf, off)
		model.extend(bytes(max(0, off - len(model))))
		model[off:off + len(buf)] = buf
	elif op == "a" and len(model) < MAX - 500:
		buf = rnd.randbytes(rnd.randrange(1, 500))
		os.lseek(fd, 0, os.SEEK_END)
		os.write(fd, buf)
		model.extend(buf)
	elif op == "t":
		size = rnd.randrange(MAX)
		os.ftruncate(fd, size)
		del model[size:]
		model.extend(bytes(size - len(model)))
	elif op == "c":
		check("read %d" % n)
	elif op == "f":
		os.fsync(fd)
		check("fsync %d" % n)
	elif op == "r":
		os.close(fd)
		fd = os.open(path, os.O_RDWR)
		check("reopen %d" % n)
	elif op == "m" and model:
		os.close(fd)
		fd = os.open(path, os.O_RDONLY)
		with mmap.mmap(fd, len(model), flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ) as m:
			if m[:] != bytes(model):
				sys.exit("mmap %d differs" % n)
		os.close(fd)
		fd = os.open(path, os.O_RDWR)
os.close(fd)
with open(path, "rb") as f:
	if f.read() != bytes(model):
		sys.exit("the committed payload differs")
'

@test "random writes, truncations, reopens and mmaps of one key agree with a model" {
	local seed
	for seed in 1 2 3; do
		run "$KEYFS_PY" -c "$FSX_PY" "$MNT/session/fsx$seed" "$seed" 1500
		assert_success
	done
}
