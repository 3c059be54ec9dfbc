#!/usr/bin/env bats
# store-crypt.bats: store_key= encrypts the memory store at rest: nothing readable in the files, every damage refused with its own line, no change lost to kill -9.

load lib/keyfs

EXAMPLES=${KEYFS_SRCDIR:-$BATS_TEST_DIRNAME/..}/examples
UNIT=$EXAMPLES/keyfs-encrypted.service
KEYFS_STORE=${KEYFS_STORE:-$(dirname "$KEYFS_BIN")/keyfs-store}

setup() {
	skip_unless_memory
	STORE_DIR=$BATS_TEST_TMPDIR/state
	mkdir -p "$STORE_DIR"
	STORE=$STORE_DIR/keys.json
	JOURNAL=$STORE.journal
	KEY=$BATS_TEST_TMPDIR/store.key
	(umask 077 && head -c 32 /dev/urandom > "$KEY")
	KEY2=$BATS_TEST_TMPDIR/other.key
	(umask 077 && head -c 32 /dev/urandom > "$KEY2")
}

teardown() {
	keyfs_unmount
}

# kill -9 the daemon, as a crash would, and clear its dead mount.
keyfs_crash() {
	kill -9 "$KEYFS_PID"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$KEYFS_PID" 2>/dev/null || break
		sleep 0.05
	done
	fusermount3 -u -z "$MNT" 2>/dev/null || true
	KEYFS_PID=
}

# mount_fails ARGS...: keyfs refuses to mount, with one line on stderr
# (in $output) and status 1.
mount_fails() {
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
	run timeout 20 "$KEYFS_BIN" -f -o backend=memory "$@" "$MNT"
	assert_equal "$status" 1
	assert_equal "${#lines[@]}" 1
}

@test "with store_key= the payload and description are in neither file, and come back after a remount" {
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	echo -n payload-PLAINSECRET > "$MNT/session/desc-PLAINNAME"
	keyfs_crash
	# Before the unmount: the change is in the journal only.
	! grep -q -e PLAINSECRET -e PLAINNAME "$STORE" "$JOURNAL"
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	assert_equal "$(cat "$MNT/session/desc-PLAINNAME")" payload-PLAINSECRET
	keyfs_unmount
	# After it: in the snapshot only.
	! grep -q -e PLAINSECRET -e PLAINNAME "$STORE" "$JOURNAL"
	assert_equal "$(head -1 "$STORE")" "keyfs encrypted store v1"
	! grep -q 'not encrypted' "$KEYFS_LOG"
}

@test "without store_key= the store is plain, and the mount says once that it is not encrypted" {
	keyfs_mount -o "store=$STORE"
	echo -n v > "$MNT/session/k"
	grep -q '"k"' "$JOURNAL"
	assert_equal "$(grep -c "$STORE: the store is not encrypted" "$KEYFS_LOG")" 1
}

@test "a wrong key says wrong key and leaves the files alone" {
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	echo -n v > "$MNT/session/k"
	keyfs_unmount
	local sum=$(sha256sum "$STORE" "$JOURNAL")
	mount_fails -o "store=$STORE,store_key=file:$KEY2"
	assert_output "keyfs: $STORE: wrong key"
	assert_equal "$(sha256sum "$STORE" "$JOURNAL")" "$sum"
}

# The value of the first KEY= line of a unit file.
unit_value() {
	sed -n "s/^$2=//p" "$1" | head -n 1
}

# wait_gone FILE: wait (10 s at most) until FILE is gone.
wait_gone() {
	for ((i = 0; i < 100; i++)); do
		[[ -e $1 ]] || return 0
		sleep 0.1
	done
	fail "$1 is still there"
}

@test "keyfs-encrypted.service passes systemd-analyze verify" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	command -v man >/dev/null || skip "no man"
	local dir=$BATS_TEST_TMPDIR/units man=$BATS_TEST_TMPDIR/man
	mkdir -p "$dir" "$man/man1" "$man/man5"
	sed -e "s#/usr/local/bin/keyfs #$KEYFS_BIN #g" "$UNIT" > "$dir/keyfs-encrypted.service"
	cp "$KEYFS_SRCDIR/man/keyfs.1" "$man/man1/"
	cp "$KEYFS_SRCDIR/man/keyfs-store.5" "$man/man5/"
	cd "$dir"
	MANPATH=$man run systemd-analyze verify keyfs-encrypted.service
	assert_success
	assert_output ""
}

@test "keyfs-encrypted.service's ExecStart, run by hand with its credential, keeps an encrypted store" {
	local line cred name words dir=$BATS_TEST_TMPDIR/run-keys state=$BATS_TEST_TMPDIR/lib-keyfs
	local creds=$BATS_TEST_TMPDIR/creds

	line=$(unit_value "$UNIT" ExecStart)
	[[ $line == /usr/local/bin/keyfs\ * ]] ||
		fail "the ExecStart is not keyfs: $line"
	cred=$(unit_value "$UNIT" LoadCredentialEncrypted)
	name=${cred%%:*}
	[[ $line == *store_key=cred:$name* ]] ||
		fail "the ExecStart does not take the credential $name: $line"
	# What systemd runs, in this test's directories.
	line=${line//\/usr\/local\/bin\/keyfs/$KEYFS_BIN}
	line=${line//\/run\/keys/$dir}
	line=${line//\/var\/lib\/keyfs/$state}
	read -ra words <<<"$line"
	mkdir -p "$dir" "$creds"
	mkdir -m 700 "$state"
	# systemd's credential: the key, read-only, the service user's.
	install -m 0400 "$KEY" "$creds/$name"
	# Type=forking: the command returns once the file system is mounted.
	CREDENTIALS_DIRECTORY=$creds timeout 20 "${words[@]}" 3>&- </dev/null
	MNT=$dir
	mountpoint -q "$dir"
	echo -n unit-PLAINSECRET | cat > "$dir/session/unit-PLAINNAME"
	fusermount3 -u "$dir"
	wait_gone "$state/keys.json.lock"
	[ -s "$state/keys.json" ]
	! grep -rq -e PLAINSECRET -e PLAINNAME -e "$(printf unit-PLAINSECRET | base64)" "$state"
	# Without the credential the same command line fails, saying why.
	run env -u CREDENTIALS_DIRECTORY timeout 20 "${words[@]}"
	assert_failure 1
	assert_output --partial 'CREDENTIALS_DIRECTORY is not set'
	keyfs_mount -o "store=$state/keys.json,store_key=file:$KEY"
	assert_equal "$(cat "$MNT/session/unit-PLAINNAME")" unit-PLAINSECRET
}

# ---- kill -9 loses nothing that returned ----

# crash_during_stream SIZE MOUNT-ARGS...: from the background, creates and
# updates of SIZE-byte values, each name whose close(2) returned success
# going to $DONE; kill -9 at a random moment, remount with MOUNT-ARGS, and
# every one of them must be there.  Values of a few kB compact the journal
# every few changes, so the kill often lands in a compaction.
crash_during_stream() {
	local size=$1 writer
	shift
	DONE=$BATS_TEST_TMPDIR/done
	: > "$DONE"
	keyfs_mount "$@"
	# close(2) is where a write is saved, and what says it was: the
	# shell's > does not check it, so python writes.
	timeout 60 "$KEYFS_PY" -c '
import os, sys
mnt, done, size = sys.argv[1], open(sys.argv[2], "a"), int(sys.argv[3])
for i in range(3000):
    name = "k%d" % (i % 50)
    val = b"v%d." % i + b"x" * size
    try:
        fd = os.open(mnt + "/session/" + name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, val)
        os.close(fd)
    except OSError:
        sys.exit(0)
    done.write("%s %d\n" % (name, i))
    done.flush()
' "$MNT" "$DONE" "$size" &
	writer=$!
	sleep "0.$((RANDOM % 7 + 2))"
	keyfs_crash
	wait "$writer" || true
	[ -s "$DONE" ] || fail "nothing was written before the crash"
	keyfs_mount "$@"
	declare -A want
	while read -r name val; do want[$name]=$val; done < "$DONE"
	for name in "${!want[@]}"; do
		got=$(head -c 20 "$MNT/session/$name")
		got=${got%%.*}
		got=${got#v}
		# The write under way at the kill may have landed too: its
		# value is newer, never older.
		((got >= want[$name])) ||
			fail "$name: v${want[$name]} returned success, but v$got was loaded"
	done
}

@test "kill -9 during a stream of changes loses no change that returned, plain store" {
	crash_during_stream 10 -o "store=$STORE"
}

@test "kill -9 during a stream of changes loses no change that returned, encrypted store" {
	crash_during_stream 10 -o "store=$STORE,store_key=file:$KEY"
}

@test "kill -9 during a stream of compactions loses no change that returned, plain store" {
	crash_during_stream 4000 -o "store=$STORE"
}

@test "kill -9 during a stream of compactions loses no change that returned, encrypted store" {
	crash_during_stream 4000 -o "store=$STORE,store_key=file:$KEY"
	# And the store is still sealed whole: nothing readable.
	keyfs_unmount
	! grep -q xxxxxxxx "$STORE" "$JOURNAL"
}

# ---- never readable by group or other ----

@test "under umask 000 the snapshot, the journal and their temporary files are never readable by group or other" {
	local watch=$BATS_TEST_TMPDIR/watch stop=$BATS_TEST_TMPDIR/stop watcher
	umask 000
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	# Every file that appears in the store's directory, as often as it
	# can be looked at, for 10 s at most.
	timeout 20 "$KEYFS_PY" -c '
import os, sys, time
d, stop, out = sys.argv[1], sys.argv[2], open(sys.argv[3], "w")
seen = set()
end = time.time() + 10
while time.time() < end and not os.path.exists(stop):
    for e in os.scandir(d):
        try:
            st = e.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        seen.add(e.name)
        if st.st_mode & 0o077:
            out.write("%s %o\n" % (e.name, st.st_mode))
out.write("seen %d\n" % len(seen))
' "$STORE_DIR" "$stop" "$watch" &
	watcher=$!
	local big=$(head -c 3000 /dev/zero | tr '\0' x)
	for ((i = 0; i < 60; i++)); do echo -n "$big$i" > "$MNT/session/k$((i % 5))"; done
	keyfs_unmount
	touch "$stop"
	wait "$watcher"
	grep -q '^seen' "$watch"
	run grep -v '^seen' "$watch"
	assert_output ""
	assert_equal "$(stat -c %a "$STORE") $(stat -c %a "$JOURNAL")" "600 600"
}

# ---- nothing readable in an encrypted store ----

@test "an encrypted store's files hold no payload and no description, in the clear or in base64" {
	local pay=pay-$RANDOM-SECRET desc=desc-$RANDOM-NAME ring=ring-$RANDOM-NAME
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	mkdir "$MNT/session/$ring"
	echo -n "$pay" | cat > "$MNT/session/$ring/$desc"
	setfattr -n user.keyfs.perm -v 3f3f0000 "$MNT/session/$ring/$desc"
	check_none() {
		local f
		for f in "$STORE" "$JOURNAL"; do
			[[ -e $f ]] || continue
			! grep -q -e "$pay" -e "$desc" -e "$ring" -e "$(printf %s "$pay" | base64)" "$f" ||
				fail "$f holds a payload or a description"
		done
	}
	check_none	# the journal
	local big=$(head -c 3000 /dev/zero | tr '\0' x)
	for ((i = 0; i < 40; i++)); do echo -n "$big$i" > "$MNT/session/k$((i % 5))"; done
	check_none	# a compacted snapshot
	keyfs_unmount
	check_none	# the snapshot at unmount
	# The same grep finds them in a plain store: the test can see.
	"$KEYFS_STORE" decrypt "$STORE" "file:$KEY"
	grep -q "$ring" "$STORE"
	grep -q "$(printf %s "$pay" | base64)" "$STORE"
}

# ---- each damage its own line, the files untouched ----

# A sealed store with records in both files: a snapshot written at
# unmount, then a journal of two changes left by a crash.
make_sealed() {
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	echo -n a > "$MNT/session/k1"
	keyfs_unmount
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	echo -n b > "$MNT/session/k2"
	echo -n c > "$MNT/session/k3"
	keyfs_crash
	SUM=$(sha256sum "$STORE" "$JOURNAL")
}

unchanged() {
	assert_equal "$(sha256sum "$STORE" "$JOURNAL")" "$SUM"
}

@test "a journal sealed with another key says wrong key, naming the journal" {
	make_sealed
	# The snapshot of a store under KEY2, beside the journal under KEY.
	local other=$BATS_TEST_TMPDIR/other
	mkdir "$other"
	keyfs_mount -o "store=$other/keys.json,store_key=file:$KEY2"
	echo -n z > "$MNT/session/z"
	keyfs_unmount
	cp "$other/keys.json" "$STORE"
	SUM=$(sha256sum "$STORE" "$JOURNAL")
	mount_fails -o "store=$STORE,store_key=file:$KEY2"
	assert_output "keyfs: $JOURNAL: wrong key"
	unchanged
}

@test "a missing key: no key file, no store_key= for a sealed store, no such kernel key; each its own line" {
	make_sealed
	mount_fails -o "store=$STORE,store_key=file:$BATS_TEST_TMPDIR/none.key"
	assert_output "keyfs: store_key: $BATS_TEST_TMPDIR/none.key: cannot read the key: No such file or directory"
	mount_fails -o "store=$STORE"
	assert_output "keyfs: $STORE: the store is encrypted: give its key with -o store_key="
	mount_fails -o "store=$STORE,store_key=%user:keyfs-test-none-$RANDOM"
	assert_output --regexp "^keyfs: store_key: %user:keyfs-test-none-[0-9]+: no such key in the mounter's keyrings$"
	unchanged
}

@test "a key file others can read, or of the wrong size, is refused before the store is read" {
	make_sealed
	chmod 644 "$KEY"
	mount_fails -o "store=$STORE,store_key=file:$KEY"
	assert_output "keyfs: store_key: $KEY: key file mode 0644: it must be 0600 or 0400"
	chmod 600 "$KEY"
	head -c 31 "$KEY2" > "$BATS_TEST_TMPDIR/short.key"
	chmod 600 "$BATS_TEST_TMPDIR/short.key"
	mount_fails -o "store=$STORE,store_key=file:$BATS_TEST_TMPDIR/short.key"
	assert_output "keyfs: store_key: $BATS_TEST_TMPDIR/short.key: 31 bytes: a key file holds exactly 32"
	unchanged
}

@test "a %user: kernel key opens the store; a %logon: key is refused with the reason" {
	command -v keyctl >/dev/null || skip "no keyctl"
	keyctl new_session >/dev/null
	local desc=keyfs-test-$RANDOM
	keyctl padd user "$desc" @s < "$KEY" >/dev/null
	keyctl padd logon "keyfs:$desc" @s < "$KEY" >/dev/null
	make_sealed
	mount_fails -o "store=$STORE,store_key=%logon:keyfs:$desc"
	assert_output "keyfs: store_key: %logon:keyfs:$desc: a logon key cannot be read from user space: use a %user: key, file: or cred:"
	keyfs_mount -o "store=$STORE,store_key=%user:$desc"
	assert_equal "$(cat "$MNT/session/k3")" c
}

@test "a truncated snapshot says truncated and is left as it was" {
	make_sealed
	local n size=$(stat -c %s "$STORE")
	for n in 10 30 60 $((size / 2)) $((size - 1)); do
		cp "$STORE" "$BATS_TEST_TMPDIR/whole"
		truncate -s "$n" "$STORE"
		SUM=$(sha256sum "$STORE" "$JOURNAL")
		mount_fails -o "store=$STORE,store_key=file:$KEY"
		assert_output "keyfs: $STORE: truncated"
		unchanged
		cp "$BATS_TEST_TMPDIR/whole" "$STORE"
	done
}

# flip FILE OFFSET: change one bit of the byte at OFFSET.
flip() {
	"$KEYFS_PY" -c '
import sys
f, i = sys.argv[1], int(sys.argv[2])
b = bytearray(open(f, "rb").read())
b[i] ^= 1 << (i % 8)
open(f, "wb").write(b)
' "$1" "$2"
}

@test "a flipped bit anywhere in the snapshot refuses the mount with one line, the file left as it was" {
	make_sealed
	local i off size=$(stat -c %s "$STORE")
	cp "$STORE" "$BATS_TEST_TMPDIR/whole"
	# The first line, the check line and the sealed data, then random
	# places.
	for off in 5 30 $((size - 5)) $((RANDOM % size)) $((RANDOM % size)) $((RANDOM % size)); do
		flip "$STORE" "$off"
		SUM=$(sha256sum "$STORE" "$JOURNAL")
		mount_fails -o "store=$STORE,store_key=file:$KEY"
		assert_output --regexp "^keyfs: $STORE: (corrupt|truncated)"
		refute_output --partial "wrong key"
		unchanged
		cp "$BATS_TEST_TMPDIR/whole" "$STORE"
	done
	assert_equal "$(sed -n 3p "$STORE" | wc -c)" "$(sed -n 3p "$BATS_TEST_TMPDIR/whole" | wc -c)"
	flip "$STORE" $((size - 5))
	mount_fails -o "store=$STORE,store_key=file:$KEY"
	assert_output "keyfs: $STORE: corrupt (the sealed data does not authenticate)"
	cp "$BATS_TEST_TMPDIR/whole" "$STORE"
	flip "$STORE" 5
	mount_fails -o "store=$STORE,store_key=file:$KEY"
	assert_output "keyfs: $STORE: corrupt (the first line is not \"keyfs encrypted store v1\")"
	# A plain store given a key is not damage, and says so.
	printf '{"format":1}\n' > "$STORE"
	mount_fails -o "store=$STORE,store_key=file:$KEY"
	assert_output "keyfs: $STORE: the store is not encrypted, but store_key= was given"
}

@test "a flipped bit in the journal refuses the mount naming the journal, the file left as it was" {
	make_sealed
	local off size=$(stat -c %s "$JOURNAL") hdr=$(head -1 "$JOURNAL" | wc -c)
	cp "$JOURNAL" "$BATS_TEST_TMPDIR/whole"
	# Not its last byte: a last line without its newline is a torn append,
	# which is dropped with a warning (keyfs-store(5)).
	for off in 30 $((hdr + 5)) $((size - 5)) $((RANDOM % (size - 1))) $((RANDOM % (size - 1))); do
		flip "$JOURNAL" "$off"
		SUM=$(sha256sum "$STORE" "$JOURNAL")
		mount_fails -o "store=$STORE,store_key=file:$KEY"
		assert_output --regexp "^keyfs: $JOURNAL(:[0-9]+)?: "
		refute_output --partial "wrong key"
		unchanged
		cp "$BATS_TEST_TMPDIR/whole" "$JOURNAL"
	done
	flip "$JOURNAL" $((size - 5))
	mount_fails -o "store=$STORE,store_key=file:$KEY"
	# the last record's line: how many records a create makes is not
	# this test's business
	assert_output --regexp "^keyfs: $JOURNAL:[0-9]+: corrupt \(the record does not authenticate\)$"
}

# ---- keyfs-store: encrypt, decrypt, rekey ----

@test "keyfs-store encrypts a plain store with its journal, rekeys it and decrypts it, the keys intact" {
	keyfs_mount -o "store=$STORE"
	echo -n a > "$MNT/session/k1"
	mkdir "$MNT/session/ring"
	echo -n b > "$MNT/session/ring/k2"
	keyfs_crash	# k1 and ring/k2 in the journal only
	run "$KEYFS_STORE" encrypt "$STORE" "file:$KEY"
	assert_success
	assert_output ""
	[ ! -e "$JOURNAL" ]
	assert_equal "$(head -1 "$STORE")" "keyfs encrypted store v1"
	assert_equal "$(stat -c %a "$STORE")" 600
	! grep -q ring "$STORE"
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	assert_equal "$(cat "$MNT/session/ring/k2")" b
	echo -n c > "$MNT/session/k3"
	keyfs_crash
	run "$KEYFS_STORE" rekey "$STORE" "file:$KEY" "file:$KEY2"
	assert_success
	mount_fails -o "store=$STORE,store_key=file:$KEY"
	assert_output "keyfs: $STORE: wrong key"
	keyfs_mount -o "store=$STORE,store_key=file:$KEY2"
	assert_equal "$(cat "$MNT/session/k3")" c
	keyfs_unmount
	run "$KEYFS_STORE" decrypt "$STORE" "file:$KEY2"
	assert_success
	grep -q '"ring"' "$STORE"
	keyfs_mount -o "store=$STORE"
	assert_equal "$(cat "$MNT/session/k1")$(cat "$MNT/session/ring/k2")$(cat "$MNT/session/k3")" abc
}

@test "keyfs-store refuses a mounted store, a wrong key and a missing store, and changes nothing" {
	keyfs_mount -o "store=$STORE,store_key=file:$KEY"
	echo -n a > "$MNT/session/k1"
	local sum=$(sha256sum "$STORE" "$JOURNAL")
	run timeout 20 "$KEYFS_STORE" rekey "$STORE" "file:$KEY" "file:$KEY2"
	assert_failure 1
	assert_output --regexp "^keyfs: $STORE: in use by another keyfs \\(pid [0-9]+\\)$"
	keyfs_unmount
	sum=$(sha256sum "$STORE" "$JOURNAL")
	run timeout 20 "$KEYFS_STORE" rekey "$STORE" "file:$KEY2" "file:$KEY"
	assert_failure 1
	assert_output "keyfs: $STORE: wrong key"
	run timeout 20 "$KEYFS_STORE" encrypt "$STORE" "file:$KEY2"
	assert_failure 1
	assert_output "keyfs: $STORE: the store is encrypted: give its key with -o store_key="
	run timeout 20 "$KEYFS_STORE" decrypt "$STORE_DIR/none.json" "file:$KEY"
	assert_failure 1
	assert_output "keyfs-store: $STORE_DIR/none.json: No such file or directory"
	[ ! -e "$STORE_DIR/none.json" ]
	run timeout 20 "$KEYFS_STORE" rekey "$STORE"
	assert_failure 2
	assert_equal "$(sha256sum "$STORE" "$JOURNAL")" "$sum"
	[ ! -e "$STORE.lock" ]
}
