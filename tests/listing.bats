#!/usr/bin/env bats
# listing.bats: a keyring's listing made as it is read (issue 10): read in small parts, across removals, from an offset, a keyring's name that depends on a later user key, and a pending entry a key has hidden.

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

# getdents DIR SIZE [SCRIPT]: the entries of DIR read with getdents64(2)
# into SIZE bytes at a time, a line each; SCRIPT (shell) runs after the
# first read.  With "seek", the names after the 400th are read once more
# from that entry's offset and printed after a line "--".
KEYFS_GETDENTS_PY='
import ctypes, os, struct, subprocess, sys

libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": 217, "aarch64": 61}[os.uname().machine]

def read(fd, size):
	buf = ctypes.create_string_buffer(size)
	n = libc.syscall(NR, fd, buf, size)
	if n < 0:
		e = ctypes.get_errno()
		raise OSError(e, os.strerror(e))
	out, pos = [], 0
	while pos < n:
		_, off, reclen, _ = struct.unpack_from("QqHB", buf.raw, pos)
		out.append((off, buf.raw[pos + 19:pos + reclen].split(b"\0", 1)[0].decode()))
		pos += reclen
	return out

fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
size = int(sys.argv[2])
ents = read(fd, size)
if len(sys.argv) > 3 and sys.argv[3] != "seek":
	subprocess.run(sys.argv[3], shell=True, check=True)
while True:
	part = read(fd, size)
	if not part:
		break
	ents += part
for _, name in ents:
	print(name)
if len(sys.argv) > 3 and sys.argv[3] == "seek":
	os.lseek(fd, ents[399][0], os.SEEK_SET)
	print("--")
	while True:
		part = read(fd, size)
		if not part:
			break
		for _, name in part:
			print(name)
'
getdents() { "$KEYFS_PY" -c "$KEYFS_GETDENTS_PY" "$@"; }

# make_keys DIR N: keys k000 ... in DIR, through the mount, in that order.
make_keys()
{
	"$KEYFS_PY" -c '
import sys
for i in range(int(sys.argv[2])):
	with open("%s/k%03d" % (sys.argv[1], i), "w") as f:
		f.write("v%d" % i)
' "$@"
}

@test "a keyring listed in small parts: every key once, a keyring before its user key's name as %keyring:NAME" {
	mkdir "$MNT/session/r"
	mkdir "$MNT/session/r/dup"
	make_keys "$MNT/session/r" 600
	# one more after the part described at opendir
	mkdir "$MNT/session/r/late"
	echo v >"$MNT/session/r/%user:dup"
	echo v >"$MNT/session/r/%user:late"
	run getdents "$MNT/session/r" 512
	assert_success
	assert_equal "$(printf '%s\n' "$output" | sort | uniq -d)" ""
	assert_equal "${#lines[@]}" 606	# ., .., 600 keys, 2 keyrings, 2 keys
	assert_line dup
	assert_line "%keyring:dup"
	assert_line late
	assert_line "%keyring:late"
	assert_line k000
	assert_line k599
	[ -d "$MNT/session/r/%keyring:dup" ]
	assert_equal "$(cat "$MNT/session/r/dup")" v
}

@test "keys removed while the listing is read: the others each once, a removed one at most once" {
	local i
	mkdir "$MNT/session/r"
	make_keys "$MNT/session/r" 800
	run getdents "$MNT/session/r" 512 \
		"for i in \$(seq 400 2 799); do rm '$MNT/session/r/k'\$i; done"
	assert_success
	assert_equal "$(printf '%s\n' "$output" | sort | uniq -d)" ""
	for ((i = 0; i < 800; i++)); do
		if ((i < 400 || i % 2)); then
			assert_line "$(printf 'k%03d' "$i")"
		fi
	done
	run ls "$MNT/session/r"
	assert_equal "${#lines[@]}" 600
}

@test "a listing read again from an entry's offset gives the same entries after it" {
	mkdir "$MNT/session/r"
	make_keys "$MNT/session/r" 600
	run getdents "$MNT/session/r" 1024 seek
	assert_success
	local all=() again=() seen=0 line
	for line in "${lines[@]}"; do
		if [[ $line == -- ]]; then
			seen=1
		elif ((seen)); then
			again+=("$line")
		else
			all+=("$line")
		fi
	done
	assert_equal "${#all[@]}" 602
	assert_equal "${again[*]}" "${all[*]:400}"
}

@test "a keyring listed while its keys change: no error, no name twice" {
	mkdir "$MNT/session/r"
	make_keys "$MNT/session/r" 300
	"$KEYFS_PY" -c '
import os, sys
d = sys.argv[1]
for i in range(300, 600):
	with open("%s/k%03d" % (d, i), "w") as f:
		f.write("x")
	os.unlink("%s/k%03d" % (d, i - 300))
' "$MNT/session/r" &
	local pid=$! n=0
	while kill -0 "$pid" 2>/dev/null && ((n < 50)); do
		# (ls -l would race its lstat with the unlinks, as anywhere)
		run ls -1U "$MNT/session/r"
		assert_success
		assert_equal "$(printf '%s\n' "$output" | sort | uniq -d)" ""
		n=$((n + 1))
	done
	wait "$pid"
	run ls "$MNT/session/r"
	assert_equal "${#lines[@]}" 300
	assert_line k599
}

@test "a pending entry whose name a key has taken since is listed once, as the key" {
	mkdir "$MNT/session/r" "$MNT/session/r2"
	# more than the part described at opendir, so the pending entries
	# are added at the end of a listing made as it is read
	make_keys "$MNT/session/r" 300
	printf x >"$MNT/session/r2/k"
	touch "$MNT/session/r/k"
	echo "session/r2/k session/r" >"$MNT/.keyfs/link"
	run getdents "$MNT/session/r" 512
	assert_success
	assert_equal "$(printf '%s\n' "$output" | sort | uniq -d)" ""
	assert_equal "${#lines[@]}" 303	# ., .., 300 keys, k
	assert_line k
	assert_equal "$(cat "$MNT/session/r/k")" x
	# the key gone, the pending entry is there again
	rm "$MNT/session/r/k"
	run ls -1U "$MNT/session/r"
	assert_equal "$(printf '%s\n' "$output" | grep -c '^k$')" 1
	assert_equal "$(getfattr --only-values -n user.keyfs.state "$MNT/session/r/k")" pending
}
