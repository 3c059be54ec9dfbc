#!/usr/bin/env bats
# coherence.bats: what keyctl does behind keyfs's back shows within the timeouts, and what keyfs does keyctl sees at once (kernel backend).

load lib/keyfs

setup() {
	skip_unless_kernel
}

teardown() {
	keyfs_unmount
}

kperm() { keyctl rdescribe "$1" | cut -d';' -f4; }
kowner() { keyctl rdescribe "$1" | cut -d';' -f2,3 | tr ';' :; }

@test "keyctl setperm shows in the mode and the perm xattr" {
	keyfs_mount
	echo -n v > "$MNT/session/k"
	assert_equal "$(stat -c %a "$MNT/session/k")" 744
	keyctl setperm "$(ino "$MNT/session/k")" 0x3f0f0b09
	eventually output_is 0x3f0f0b09 getfattr --absolute-names --only-values -n user.keyfs.perm "$MNT/session/k"
	eventually output_is 751 stat -c %a "$MNT/session/k"
}

# An open by the mounter trusts a description made within entry_timeout
# (src/kernel/key.c, kkey_learn_recent), but never the read itself.
@test "keyctl update, setperm without read or search, revoke: the next cat sees each at once" {
	keyfs_mount -o entry_timeout=30,attr_timeout=30
	echo -n one > "$MNT/session/k"
	local s
	s=$(ino "$MNT/session/k")
	assert_equal "$(cat "$MNT/session/k")" one
	keyctl update "$s" two
	assert_equal "$(cat "$MNT/session/k")" two
	keyctl setperm "$s" 0x35350000	# no read, no search: keyctl read refuses too
	run kerrno read "$MNT/session/k"
	assert_output EACCES
	keyctl setperm "$s" 0x3f010000
	assert_equal "$(cat "$MNT/session/k")" two
	keyctl revoke "$s"
	run kerrno read "$MNT/session/k"
	assert_output EKEYREVOKED
}

@test "keyctl chown shows in the owner" {
	keyfs_mount
	echo -n v > "$MNT/session/k"
	keyctl chown "$(ino "$MNT/session/k")" 4321
	keyctl chgrp "$(ino "$MNT/session/k")" 8765
	eventually output_is 4321:8765 stat -c %u:%g "$MNT/session/k"
}

@test "keyctl add into a new keyring shows in the listing" {
	keyfs_mount
	local ring
	ring=$(keyctl newring outside @s)
	keyctl add user inner payload "$ring" >/dev/null
	eventually ls_has "$MNT/session" outside
	eventually output_is payload cat "$MNT/session/outside/inner"
	assert_equal "$(ino "$MNT/session/outside")" "$ring"
}

@test "with attr_timeout=0 and entry_timeout=0 every change shows at once" {
	keyfs_mount -o attr_timeout=0,entry_timeout=0
	echo -n short > "$MNT/session/k"
	stat "$MNT/session/k" >/dev/null
	keyctl update "$(ino "$MNT/session/k")" "a longer one"
	assert_equal "$(fsize "$MNT/session/k")" 12
	keyctl setperm "$(ino "$MNT/session/k")" 0x3f3f0000
	assert_equal "$(stat -c %a "$MNT/session/k")" 700
	keyctl add user fresh now @s >/dev/null
	ls_has "$MNT/session" fresh
	keyctl unlink "$(ino "$MNT/session/fresh")" @s >/dev/null
	ls_lacks "$MNT/session" fresh
}

# A listing describes its keys a part at a time, the keyctl calls of a
# part made at once on helper threads (src/kernel/prefetch.c): each key
# still shows as keyctl left it, whatever its place in the part.  ls -l
# takes the attributes the listing gave for attr_timeout.
@test "a listing after the timeouts shows each of many keys as keyctl changed it" {
	keyfs_mount
	local ring i s
	ring=$(keyctl newring many @s)
	for i in $(seq -w 0 299); do keyctl add user "k$i" "v$i" "$ring" >/dev/null; done
	ls -l "$MNT/session/many" >/dev/null
	keyctl update "$(ino "$MNT/session/many/k007")" "a longer payload"
	keyctl update "$(ino "$MNT/session/many/k150")" x
	keyctl setperm "$(ino "$MNT/session/many/k151")" 0x3f3f0000
	keyctl chown "$(ino "$MNT/session/many/k299")" 1234 >/dev/null
	keyctl unlink "$(ino "$MNT/session/many/k200")" "$ring" >/dev/null
	keyctl add user late "12345" "$ring" >/dev/null
	sleep 1.2	# entry_timeout and attr_timeout
	run ls -ln "$MNT/session/many"
	assert_success
	assert_equal "$(grep -c ' k[0-9]' <<<"$output")" 299
	assert_line --regexp '^-.* 0 0 +16 .* k007$'
	assert_line --regexp '^-.* 0 0 +1 .* k150$'
	assert_line --regexp '^-rwx------ .* k151$'
	assert_line --regexp '^-.* 1234 0 +4 .* k299$'
	assert_line --regexp '^-.* 0 0 +5 .* late$'
	refute_line --regexp ' k200$'
	# and every other key as it was made
	for i in 000 001 100 298; do
		s=$(stat -c %s "$MNT/session/many/k$i")
		assert_equal "$s" 4
	done
}

@test "what keyfs does, keyctl sees at once: chmod, chown, ln, mv, rm, mkdir" {
	keyfs_mount
	echo -n v > "$MNT/session/k"
	local k
	k=$(ino "$MNT/session/k")
	chmod 750 "$MNT/session/k"
	assert_equal "$(kperm "$k")" 3f0f0a00
	chown 1111:2222 "$MNT/session/k"
	assert_equal "$(kowner "$k")" 1111:2222
	mkdir "$MNT/session/ring"
	local ring
	ring=$(ino "$MNT/session/ring")
	assert_equal "$(keyctl rdescribe "$ring" | cut -d';' -f1)" keyring
	ln "$MNT/session/k" "$MNT/session/ring/k"
	run keyctl show "$ring"
	assert_output --partial "user: k"
	mkdir "$MNT/session/other"
	mv "$MNT/session/ring/k" "$MNT/session/other/k"
	run keyctl show "$ring"
	refute_output --partial "user: k"
	run keyctl show "$(ino "$MNT/session/other")"
	assert_output --partial "user: k"
	rm "$MNT/session/k"
	run keyctl show @s
	refute_output --regexp 'user: k$'
}

# What the daemon's threads read(2): "others", all but its /proc/keys
# reader; "reader", that one alone (0 before it first runs).
rchar() {
	local t reader sum=0
	for t in /proc/"$KEYFS_PID"/task/*; do
		reader=others
		[[ $(cat "$t/comm") == keyfs-prockeys ]] && reader=reader
		[[ $reader == "$1" ]] || continue
		sum=$((sum + $(awk '/^rchar/ {print $2}' "$t/io")))
	done
	echo "$sum"
}

# A mount, a keyring session/bulk of 300 keys (/proc/keys then holds over
# 300 lines of some 80 bytes) and a key session/k, looked at once.
mount_with_bulk() {
	local ring i
	keyfs_mount
	ring=$(keyctl newring bulk @s)
	for i in $(seq 300); do keyctl add user "filler$i" x "$ring" >/dev/null; done
	echo -n v > "$MNT/session/k"
	stat "$MNT/session/k" >/dev/null
}

@test "kernel: no request waits for /proc/keys, even after an idle second" {
	local before after
	mount_with_bulk
	sleep 1.2
	before=$(rchar others)
	stat "$MNT/session/k" >/dev/null
	getfattr --absolute-names -n user.keyfs.expiry "$MNT/session/k" >/dev/null
	after=$(rchar others)
	(( after - before < 16384 )) || fail "the request threads read $((after - before)) bytes"
}

@test "kernel: stat and ls -l never have /proc/keys read; the expiry xattr does" {
	local i before after
	mount_with_bulk
	sleep 1.2	# any parse made so far is old now
	before=$(rchar reader)
	stat "$MNT/session/k" >/dev/null
	ls -l "$MNT/session/bulk" >/dev/null
	stat "$MNT/session/bulk/filler7" >/dev/null
	sleep 0.5
	after=$(rchar reader)
	(( after == before )) || fail "stat and ls -l had /proc/keys read ($((after - before)) bytes)"
	# the measure works: the expiry is what asks for a parse
	getfattr --absolute-names -n user.keyfs.expiry "$MNT/session/k" >/dev/null
	for i in $(seq 20); do
		(( $(rchar reader) > after )) && return 0
		sleep 0.1
	done
	fail "reading user.keyfs.expiry had no parse of /proc/keys made"
}

@test "kernel: a keyring made unsearchable with keyctl refuses new lookups: at once with entry_timeout=0, after it by default" {
	skip_unless_kernel
	keyfs_mount -o entry_timeout=0,attr_timeout=0
	mkdir "$MNT/session/ring"
	echo -n v > "$MNT/session/ring/a"
	local r
	r=$(ino "$MNT/session/ring")
	keyctl add user b w "$r" >/dev/null
	assert_equal "$(cat "$MNT/session/ring/a")" v
	keyctl setperm "$r" 0x37330000	# search neither as possessor nor as owner
	run kerrno stat "$MNT/session/ring/b"
	assert_output EACCES
	keyfs_unmount
	keyctl setperm "$r" 0x3f3f0000
	keyfs_mount
	assert_equal "$(cat "$MNT/session/ring/a")" v
	keyctl setperm "$r" 0x37330000
	sleep 1.2	# the keyring's description keyfs made is older than entry_timeout
	run kerrno stat "$MNT/session/ring/b"
	assert_output EACCES
}

@test "kernel: a keyring made read-only with keyctl refuses a new entry at once, within entry_timeout" {
	skip_unless_kernel
	keyfs_mount
	mkdir "$MNT/session/ring"
	echo -n v > "$MNT/session/ring/a"
	local r
	r=$(ino "$MNT/session/ring")
	keyctl setperm "$r" 0x3b3b0000	# write neither as possessor nor as owner
	# keyfs described the keyring a moment ago; the create asks again
	run kerrno open "$MNT/session/ring/new" wcx
	assert_output EACCES
	run kerrno stat "$MNT/session/ring/new"
	assert_output ENOENT
	keyctl setperm "$r" 0x3f3f0000
	run kerrno open "$MNT/session/ring/new" wcx
	assert_output OK
}

# A listing by the mounter takes the description of a key keyfs made
# within entry_timeout (the keyring's lookup describes every key in it),
# and the kernel keeps the attributes for what is left of attr_timeout
# counted from that description, not from the listing (src/kernel/key.c,
# kkey_recent; src/fuse/fs-dir.c, attr_timeout_since).  Every wait here
# only makes the last stat surer; none can make the listing fresher.
@test "kernel: ls -l shows the description the lookup made within entry_timeout, kept only for the rest of attr_timeout" {
	local ring k old
	keyfs_mount -o entry_timeout=30,attr_timeout=4
	ring=$(keyctl newring recent @s)
	k=$(keyctl add user k v "$ring")
	keyctl setperm "$k" 0x29010000	# no read, no write
	old=$(stat -c %A "$MNT/session/recent/k")
	assert_equal "$old" "---x------"
	sleep 2
	keyctl setperm "$k" 0x3f3f0000
	run ls -l "$MNT/session/recent"
	assert_success
	assert_line --regexp '^---x------ .* k$'
	sleep 2.5	# past attr_timeout since the lookup described k
	assert_equal "$(stat -c %A "$MNT/session/recent/k")" "-rwx------"
}

# A name the kernel cached (for entry_timeout) may lead to a key that
# keyctl has since unlinked, and maybe replaced under the same name: keyfs
# answers ESTALE for the old key's inode once the key is gone, and the VFS
# looks the path up again and retries (src/fuse/fs-reply.c,
# stale_if_gone).  A key no longer linked anywhere is gone as soon as the
# kernel's garbage collector has run (collected: keyctl describe fails).
collected()
{
	local i
	for ((i = 0; i < 50; i++)); do
		keyctl rdescribe "$1" >/dev/null 2>&1 || return 0
		sleep 0.1
	done
	fail "key $1 was not collected"
}

@test "kernel: a key replaced with keyctl under its name opens as the new key at once, for reading and for writing" {
	keyfs_mount -o entry_timeout=30,attr_timeout=30
	echo -n one > "$MNT/session/k"
	local s
	s=$(ino "$MNT/session/k")
	assert_equal "$(cat "$MNT/session/k")" one
	keyctl unlink "$s" @s >/dev/null
	keyctl add user k two @s >/dev/null
	collected "$s"
	assert_equal "$(cat "$MNT/session/k")" two
	s=$(keyctl search @s user k)
	keyctl unlink "$s" @s >/dev/null
	keyctl add user k three @s >/dev/null
	collected "$s"
	echo -n four > "$MNT/session/k"
	assert_equal "$(keyctl pipe "$(keyctl search @s user k)")" four
}

@test "kernel: a key removed with keyctl is ENOENT through its cached name at once, and a write there makes a new key" {
	keyfs_mount -o entry_timeout=30,attr_timeout=30
	echo -n one > "$MNT/session/k"
	echo -n one > "$MNT/session/m"
	assert_equal "$(cat "$MNT/session/k")" one
	assert_equal "$(cat "$MNT/session/m")" one
	local k m
	k=$(ino "$MNT/session/k")
	m=$(ino "$MNT/session/m")
	keyctl unlink "$k" @s >/dev/null
	keyctl unlink "$m" @s >/dev/null
	collected "$k"
	collected "$m"
	run kerrno read "$MNT/session/k"
	assert_output ENOENT
	run kerrno getxattr "$MNT/session/k" user.keyfs.perm
	assert_output ENOENT
	run kerrno write "$MNT/session/m" new
	assert_output OK
	assert_equal "$(keyctl pipe "$(keyctl search @s user m)")" new
}

# Still alive but unpossessed (kept by a process of its own: hold, in
# lib/keyfs.bash): the kernel lets keyfs read it no more, and no keyring
# keyfs knows links it: the same, before any collection.
@test "kernel: a key unlinked with keyctl but alive elsewhere opens as its replacement at once" {
	keyfs_mount -o entry_timeout=30,attr_timeout=30
	local s
	s=$(keyctl add user k one @s)
	keyctl setperm "$s" 0x3f110000	# the holder links it as the key's user
	assert_equal "$(cat "$MNT/session/k")" one
	hold "$s"
	keyctl unlink "$s" @s >/dev/null
	keyctl add user k two @s >/dev/null
	run cat "$MNT/session/k"
	unhold
	assert_output two
}

@test "kernel: chmod, chown and setfattr through the cached name of a key unlinked with keyctl but alive elsewhere: ENOENT" {
	keyfs_mount -o entry_timeout=30,attr_timeout=30
	local a m o i
	a=$(keyctl add user a one @s)
	m=$(keyctl add user m one @s)
	o=$(keyctl add user o one @s)
	for i in "$a" "$m" "$o"; do keyctl setperm "$i" 0x3f110000; done
	stat "$MNT/session/a" "$MNT/session/m" "$MNT/session/o" >/dev/null
	hold "$a" "$m" "$o"
	keyctl unlink "$a" @s >/dev/null
	keyctl unlink "$m" @s >/dev/null
	keyctl unlink "$o" @s >/dev/null
	run kerrno chmod "$MNT/session/a" 600
	assert_output ENOENT
	run kerrno setxattr "$MNT/session/m" user.keyfs.perm 0x3f3f0000
	assert_output ENOENT
	run kerrno chown "$MNT/session/o" 0 0
	unhold
	assert_output ENOENT
	# the kernel refused keyfs each change: the keys are as they were
	assert_equal "$(keyctl rdescribe "$a" | cut -d';' -f4)" 3f110000
}

@test "kernel: a keyring replaced with keyctl under its name lists as the new one at once" {
	keyfs_mount -o entry_timeout=30,attr_timeout=30
	mkdir "$MNT/session/ring"
	echo -n v > "$MNT/session/ring/old"
	ls_has "$MNT/session/ring" old
	local old r
	old=$(ino "$MNT/session/ring")
	keyctl unlink "$old" @s >/dev/null
	r=$(keyctl newring ring @s)
	keyctl add user new w "$r" >/dev/null
	collected "$old"
	run ls "$MNT/session/ring"
	assert_success
	assert_output new
	keyctl unlink "$r" @s >/dev/null
	collected "$r"
	run kerrno listdir "$MNT/session/ring"
	assert_output ENOENT
}

@test "kernel: a payload over a page written into a key revoked with keyctl fails with EKEYREVOKED and makes no new key" {
	keyfs_mount
	echo -n small > "$MNT/session/t"
	head -c 5000 /dev/zero | tr '\0' a > "$MNT/session/s"
	local t
	t=$(ino "$MNT/session/t")
	# a file opened before the revoke, closed after it
	run "$KEYFS_PY" -c '
import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
subprocess.run(["keyctl", "revoke", sys.argv[2]], check=True)
os.write(fd, b"b" * 5000)
try:
	os.close(fd)
	print("closed")
except OSError as e:
	print(os.strerror(e.errno))
' "$MNT/session/t" "$t"
	assert_output "Key has been revoked"
	# a rename onto it: the payload is the source's, over a page
	run kerrno rename "$MNT/session/s" "$MNT/session/t"
	assert_output EKEYREVOKED
	# the revoked key is still the one linked under t
	run keyctl rlist @s
	assert_output --regexp "(^| )$t( |\$)"
	run keyctl search @s user t	# no live key of that name
	assert_failure
	assert_equal "$(fsize "$MNT/session/s")" 5000
}
