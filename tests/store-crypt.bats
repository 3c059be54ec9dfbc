#!/usr/bin/env bats
# store-crypt.bats: store_key= encrypts the memory store at rest: nothing readable in the files, every damage refused with its own line, no change lost to kill -9.

load lib/keyfs

EXAMPLES=${KEYFS_SRCDIR:-$BATS_TEST_DIRNAME/..}/examples
UNIT=$EXAMPLES/keyfs-encrypted.service

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
