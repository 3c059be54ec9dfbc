#!/usr/bin/env bats
# pagecache.bats: payloads read through the kernel's page cache (keep_cache): cached only while unchanged, snapshots kept, dropped on every change.

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

# shared_map PATH: print what mmap(MAP_SHARED, PROT_READ) of PATH reads,
# or the errno's name.  Only an open that reads from the page cache can
# be mapped shared; a direct-I/O open gives ENODEV.
shared_map()
{
	"$KEYFS_PY" -c '
import errno, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    m = mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    sys.stdout.write(m[:].decode())
    m.close()
except OSError as e:
    sys.stdout.write(errno.errorcode[e.errno])
' "$1"
}

# cached PATH EXPECTED: after reads, an open of PATH reads EXPECTED from
# the page cache (the kernel drops the old pages from a thread of its own,
# so the first open after a change reads directly).
cached()
{
	cat "$1" >/dev/null
	eventually output_is "$2" shared_map "$1"
}

# change PATH VALUE: give PATH's key a new payload through keyfs.
change()
{
	printf %s "$2" >"$1"
}

# read_in_pieces PATH: open PATH, run the shell command in $2 while it is
# open (after the first piece), then read the rest 3 bytes at a time.
read_in_pieces()
{
	"$KEYFS_PY" -c '
import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
out = os.read(fd, 3)
subprocess.run(["bash", "-c", sys.argv[2]], check=True)
os.stat(sys.argv[1])	# the new size reaches the kernel
while True:
    b = os.read(fd, 3)
    if not b:
        break
    out += b
os.close(fd)
sys.stdout.write(out.decode())
' "$1" "$2"
}

@test "an unchanged key is read from the page cache: it can be mapped shared" {
	change "$MNT/session/k" hello
	cached "$MNT/session/k" hello
	assert_equal "$(cat "$MNT/session/k")" hello
}

@test "the first open of a key since mounting reads from the page cache (no pages to drop)" {
	if [[ $KEYFS_BACKEND == kernel ]]; then
		keyctl add user fresh "made outside" @s >/dev/null
	else
		# a key from a store, never opened by this mount's daemon
		keyfs_unmount
		keyfs_mount -o "store=$BATS_TEST_TMPDIR/store.json"
		printf %s "made outside" >"$MNT/session/fresh"
		keyfs_unmount
		keyfs_mount -o "store=$BATS_TEST_TMPDIR/store.json"
	fi
	# at once: only an open that reads from the cache maps shared
	run shared_map "$MNT/session/fresh"
	assert_output "made outside"
	change "$MNT/session/fresh" changed
	assert_equal "$(cat "$MNT/session/fresh")" changed
	cached "$MNT/session/fresh" changed
}

@test "the first cached open hands the kernel the pages: cat and mmap make no READ" {
	keyfs_unmount
	keyfs_mount -d
	if [[ $KEYFS_BACKEND == kernel ]]; then
		keyctl add user fresh "made outside" @s >/dev/null
	else
		change "$MNT/session/fresh" "made outside"
	fi
	# the writer's pages go first: until then opens read directly (and a
	# shared map of one fails before reading)
	eventually output_is "made outside" shared_map "$MNT/session/fresh"
	assert_equal "$(cat "$MNT/session/fresh")" "made outside"
	assert_equal "$(requests_sent READ)" 0
	# a change: the next cached open hands over the new pages
	change "$MNT/session/fresh" "changed, and longer than before"
	eventually output_is "changed, and longer than before" shared_map "$MNT/session/fresh"
	assert_equal "$(cat "$MNT/session/fresh")" "changed, and longer than before"
	assert_equal "$(requests_sent READ)" 0
}

# map_nostat PATH LEN: print the first LEN bytes of mmap(MAP_SHARED) of
# PATH, or the errno's name; never fstat(2) (Python's mmap does), so the
# kernel asks keyfs for no attributes.
map_nostat()
{
	"$KEYFS_PY" -c '
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
n = int(sys.argv[2])
fd = os.open(sys.argv[1], os.O_RDONLY)
p = libc.mmap(None, n, 1, 1, fd, 0)	# PROT_READ, MAP_SHARED
if p == ctypes.c_void_p(-1).value:
    sys.stdout.write(errno.errorcode[ctypes.get_errno()])
else:
    sys.stdout.write(ctypes.string_at(p, n).decode())
' "$1" "$2"
}

# A stat answered after the hand-over, with an mtime the kernel had not
# seen (keyfs drops the attributes at a change, and nothing had asked for
# them since), made the kernel drop the pages keyfs had just given it
# (libfuse's default auto_inval_data): the next read was a READ again.
@test "pages handed over after a change stay through the next stat" {
	keyfs_unmount
	keyfs_mount -d
	change "$MNT/session/fresh" aaaa
	eventually output_is aaaa map_nostat "$MNT/session/fresh" 4
	sleep 1.1	# a new mtime, whatever the clock's grain
	change "$MNT/session/fresh" bbbb
	# the first open after the change reads directly while the old pages
	# go (its map fails); the first after that hands over the new ones
	eventually output_is bbbb map_nostat "$MNT/session/fresh" 4
	local reads
	reads=$(requests_sent READ)
	run "$KEYFS_PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fstat(fd)
sys.stdout.write(os.read(fd, 100).decode())
' "$MNT/session/fresh"
	assert_output bbbb
	assert_equal "$(requests_sent READ)" "$reads"
}

@test "a key made by create takes its own inode once closed: later opens read from the page cache" {
	local serial
	printf %s made >"$MNT/session/new"
	serial=$(getfattr --only-values -n user.keyfs.serial "$MNT/session/new")
	# the created entry's name is dropped from a thread of its own
	eventually output_is "$serial" ino "$MNT/session/new"
	cached "$MNT/session/new" made
	# a typed name is another spelling: it keeps the entry's inode, and
	# still reads right
	printf %s typed >"$MNT/session/%user:other"
	assert_equal "$(cat "$MNT/session/other")" typed
}

@test "a change through keyfs is read by the next open, longer or shorter" {
	change "$MNT/session/k" hello
	cached "$MNT/session/k" hello
	change "$MNT/session/k" "a longer payload"
	assert_equal "$(cat "$MNT/session/k")" "a longer payload"
	cached "$MNT/session/k" "a longer payload"
	change "$MNT/session/k" xy
	assert_equal "$(cat "$MNT/session/k")" xy
	cached "$MNT/session/k" xy
	# the same length, other bytes
	change "$MNT/session/k" ab
	assert_equal "$(cat "$MNT/session/k")" ab
}

@test "a change by rename onto the name is read by the next open" {
	change "$MNT/session/k" hello
	cached "$MNT/session/k" hello
	change "$MNT/session/new" renamed
	mv "$MNT/session/new" "$MNT/session/k"
	eventually output_is renamed cat "$MNT/session/k"
}

@test "a change made with keyctl is read by the next open" {
	skip_unless_kernel
	change "$MNT/session/k" hello
	cached "$MNT/session/k" hello
	keyctl update "$(ino "$MNT/session/k")" "from keyctl, longer"
	assert_equal "$(cat "$MNT/session/k")" "from keyctl, longer"
	cached "$MNT/session/k" "from keyctl, longer"
	keyctl update "$(ino "$MNT/session/k")" short
	assert_equal "$(cat "$MNT/session/k")" short
}

@test "a reader open from the cache keeps its snapshot across a shorter payload, read in pieces" {
	change "$MNT/session/k" "the old, long payload"
	cached "$MNT/session/k" "the old, long payload"
	run read_in_pieces "$MNT/session/k" "printf new >'$MNT/session/k'"
	assert_output "the old, long payload"
	assert_equal "$(cat "$MNT/session/k")" new
	cached "$MNT/session/k" new
}

@test "a reader open from the cache keeps its snapshot across a longer payload, read in pieces" {
	change "$MNT/session/k" "old"
	cached "$MNT/session/k" "old"
	run read_in_pieces "$MNT/session/k" "printf 'a much longer new payload' >'$MNT/session/k'"
	assert_output "old"
	assert_equal "$(cat "$MNT/session/k")" "a much longer new payload"
}

@test "while an old reader is open, new readers read the new payload; stat gives the old reader's size until it closes" {
	change "$MNT/session/k" "version one"
	cached "$MNT/session/k" "version one"
	exec 7<"$MNT/session/k"
	change "$MNT/session/k" "two"
	assert_equal "$(cat "$MNT/session/k")" two
	assert_equal "$(cat "$MNT/session/k")" two
	# one size per inode in the kernel: the open reader's
	assert_equal "$(fsize "$MNT/session/k")" 11
	run cat <&7
	exec 7<&-
	assert_output "version one"
	eventually output_is 3 fsize "$MNT/session/k"
	cached "$MNT/session/k" two
}

@test "changes under a reader that holds its file open: stats in between never cut or pad its reads" {
	change "$MNT/session/k" "old-secret-1"
	cached "$MNT/session/k" "old-secret-1"
	run "$KEYFS_PY" -c '
import os, sys
path = sys.argv[1]
bad = 0
def put(data, rename):
    if rename:
        with open(path + ".new", "wb") as f:
            f.write(data)
        os.rename(path + ".new", path)
    else:
        with open(path, "wb") as f:
            f.write(data)
for i in range(300):
    fd = os.open(path, os.O_RDONLY)
    first = os.pread(fd, 100, 0)
    # a longer or a shorter payload, in place or by rename, and stats
    # of the open file and of the path, while this file is open
    put(b"new-secret-22" if i % 2 else b"n", i % 4 < 2)
    os.fstat(fd)
    os.stat(path)
    again = os.pread(fd, 100, 0)
    os.fstat(fd)
    tail = os.pread(fd, 100, 3)
    os.close(fd)
    if again != first or tail != first[3:]:
        bad += 1
        print("bad", first, again, tail)
    put(b"old-secret-1", False)
    for _ in range(3):
        with open(path, "rb") as f:
            f.read()
print("bad", bad)
' "$MNT/session/k"
	assert_output "bad 0"
}

@test "a change made with keyctl under a reader that holds its file open: its reads stay its snapshot" {
	skip_unless_kernel
	change "$MNT/session/k" "old-secret-1"
	cached "$MNT/session/k" "old-secret-1"
	local serial
	serial=$(ino "$MNT/session/k")
	run "$KEYFS_PY" -c '
import os, subprocess, sys
path, serial = sys.argv[1], sys.argv[2]
bad = 0
for new in ("a-longer-new-secret", "n", "old-secret-1"):
    fd = os.open(path, os.O_RDONLY)
    first = os.pread(fd, 100, 0)
    subprocess.run(["keyctl", "update", serial, new], check=True)
    os.stat(path)
    os.fstat(fd)
    again = os.pread(fd, 100, 0)
    os.close(fd)
    if again != first:
        bad += 1
        print("bad", first, again)
    with open(path, "rb") as f:
        got = f.read()
    if got != new.encode():
        bad += 1
        print("new open", got, new)
    for _ in range(3):
        with open(path, "rb") as f:
            f.read()
print("bad", bad)
' "$MNT/session/k" "$serial"
	assert_output "bad 0"
}

@test "a revoked, invalidated or expired key is not read from the cache" {
	for k in r i e; do
		change "$MNT/session/$k" "secret-$k"
		cached "$MNT/session/$k" "secret-$k"
	done
	echo session/r >"$MNT/.keyfs/revoke"
	echo session/i >"$MNT/.keyfs/invalidate"
	xset expiry +1 "$MNT/session/e"
	run cat "$MNT/session/r"
	assert_failure
	refute_output --partial secret
	run cat "$MNT/session/i"
	assert_failure
	refute_output --partial secret
	sleep 2.2
	run cat "$MNT/session/e"
	assert_failure
	refute_output --partial secret
}

@test "rm of a cached key: the name is gone, an open reader keeps reading" {
	change "$MNT/session/k" hello
	cached "$MNT/session/k" hello
	exec 7<"$MNT/session/k"
	rm "$MNT/session/k"
	[ ! -e "$MNT/session/k" ]
	run cat <&7
	exec 7<&-
	assert_output hello
}

@test "writers never read or fill the page cache: O_RDWR sees the current payload" {
	change "$MNT/session/k" hello
	cached "$MNT/session/k" hello
	run "$KEYFS_PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
print(os.read(fd, 100).decode())
os.lseek(fd, 0, 0)
os.write(fd, b"HE")
os.close(fd)
' "$MNT/session/k"
	assert_output hello
	assert_equal "$(cat "$MNT/session/k")" HEllo
}

@test "a private mmap of a file open for writing never reaches other readers" {
	change "$MNT/session/k" hello
	cached "$MNT/session/k" hello
	run "$KEYFS_PY" -c '
import mmap, os, sys
path = sys.argv[1]
w = os.open(path, os.O_RDWR)
os.pwrite(w, b"XY", 0)
m = mmap.mmap(w, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
seen = m[:]
# not committed yet: every other open reads the payload
for _ in range(5):
    with open(path, "rb") as f:
        print(f.read().decode())
m.close()
os.close(w)
print(seen.decode())
with open(path, "rb") as f:
    print(f.read().decode())
' "$MNT/session/k"
	assert_output "hello
hello
hello
hello
hello
XYllo
XYllo"
}

@test "O_DIRECT reads past the page cache" {
	change "$MNT/session/k" hello
	cached "$MNT/session/k" hello
	run "$KEYFS_PY" -c '
import errno, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
try:
    mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    print("mapped")
except OSError as e:
    print(errno.errorcode[e.errno])
' "$MNT/session/k"
	assert_output ENODEV
}

@test "-o direct_io: no payload is read from the page cache" {
	keyfs_unmount
	keyfs_mount -o direct_io
	change "$MNT/session/k" hello
	cat "$MNT/session/k" >/dev/null
	sleep 0.3
	assert_equal "$(shared_map "$MNT/session/k")" ENODEV
	assert_equal "$(cat "$MNT/session/k")" hello
}
