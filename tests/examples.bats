#!/usr/bin/env bats
# examples.bats: the scripts and systemd units in examples/ do what their comments promise, on a real mount.

load lib/keyfs

EXAMPLES=${KEYFS_SRCDIR:-$BATS_TEST_DIRNAME/..}/examples
SCRIPTS="api-token.sh rotate-secret.sh share-key.sh request-key-helper.sh request-key.sh"

STUB_PID=
REMOVE_AFTER=()

teardown()
{
	local p

	stub_stop
	# Keys a test put in the real user keyring (kernel backend) go first.
	for p in "${REMOVE_AFTER[@]}"; do
		rm -f -- "$p" 2>/dev/null || true
	done
	keyfs_unmount
}

need()
{
	local c

	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "$c is not installed"
	done
}

# A stand-in for an HTTP API on 127.0.0.1: it answers "ok" and records the
# Authorization header of each request, one line each, and stops by itself
# after a minute if nobody stops it.
STUB_PY='
import http.server, os, sys, threading

record, portfile = sys.argv[1], sys.argv[2]

class Handler(http.server.BaseHTTPRequestHandler):
	def do_GET(self):
		with open(record, "a") as f:
			f.write((self.headers.get("Authorization") or "-") + "\n")
		body = b"ok\n"
		self.send_response(200)
		self.send_header("Content-Length", str(len(body)))
		self.end_headers()
		self.wfile.write(body)

	def log_message(self, *args):
		pass

server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
threading.Timer(60, server.shutdown).start()
with open(portfile + ".tmp", "w") as f:
	f.write(str(server.server_address[1]))
os.rename(portfile + ".tmp", portfile)
server.serve_forever()
server.server_close()
os._exit(0)
'

stub_start()
{
	local i

	STUB_RECORD=$BATS_TEST_TMPDIR/stub.record
	: > "$STUB_RECORD"
	"$KEYFS_PY" -c "$STUB_PY" "$STUB_RECORD" "$BATS_TEST_TMPDIR/stub.port" \
		3>&- </dev/null >/dev/null 2>&1 &
	STUB_PID=$!
	for ((i = 0; i < 50; i++)); do
		if [[ -s $BATS_TEST_TMPDIR/stub.port ]]; then
			STUB_PORT=$(cat "$BATS_TEST_TMPDIR/stub.port")
			STUB_URL=http://127.0.0.1:$STUB_PORT
			return 0
		fi
		sleep 0.1
	done
	fail "the stub HTTP server did not start"
}

stub_stop()
{
	[[ -n $STUB_PID ]] || return 0
	kill "$STUB_PID" 2>/dev/null || true
	wait "$STUB_PID" 2>/dev/null || true
	STUB_PID=
}

# A curl that logs its arguments, to show that no secret is among them.
curl_shim()
{
	local real

	real=$(command -v curl)
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	CURL_ARGS=$BATS_TEST_TMPDIR/curl.args
	: > "$CURL_ARGS"
	cat > "$BATS_TEST_TMPDIR/bin/curl" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >> '$CURL_ARGS'
exec '$real' "\$@"
EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/curl"
	PATH=$BATS_TEST_TMPDIR/bin:$PATH
}

# N bytes of the letter L.
fill()
{
	head -c "$1" /dev/zero | tr '\0' "$2"
}

# rotate-secret.sh leaves no .NAME.rotate.PID key behind.
# shellcheck disable=SC2010
no_temporary_keys()
{
	run bash -c 'ls -A -- "$1" | grep -F .rotate.' _ "$1"
	assert_output ""
}

xattr() { getfattr --absolute-names --only-values -n "user.keyfs.$2" -- "$1"; }

@test "every example script has set -eu, a usage line, and says so without arguments" {
	local s

	for s in $SCRIPTS; do
		[[ -x $EXAMPLES/$s ]] || fail "$s is not executable"
		grep -qx 'set -eu' "$EXAMPLES/$s" || fail "$s lacks set -eu"
		run "$EXAMPLES/$s"
		assert_equal "$status" 2
		assert_output --partial "usage: $s "
	done
}

@test "the example scripts pass shellcheck" {
	need shellcheck
	local s

	for s in $SCRIPTS; do
		run shellcheck -s sh "$EXAMPLES/$s"
		assert_success
	done
}

@test "api-token.sh keeps a token for an hour and sends it as a Bearer header, never as an argument" {
	need curl setfattr getfattr
	keyfs_mount
	local token=tok-$RANDOM$RANDOM-secret now expiry

	printf '%s\n' "$token" > "$BATS_TEST_TMPDIR/token"
	run "$EXAMPLES/api-token.sh" put "$MNT" session/api-token < "$BATS_TEST_TMPDIR/token"
	assert_success
	assert_equal "$(cat "$MNT/session/api-token")" "$token"
	now=$(date +%s)
	expiry=$(xattr "$MNT/session/api-token" expiry)
	((expiry >= now + 3590 && expiry <= now + 3601)) ||
		fail "expiry $expiry is not an hour from $now"
	assert_equal "$(xattr "$MNT/session/api-token" perm)" 0x3f070000

	stub_start
	curl_shim
	run "$EXAMPLES/api-token.sh" call "$MNT" session/api-token "$STUB_URL/v1/me"
	assert_success
	assert_output ok
	assert_equal "$(cat "$STUB_RECORD")" "Bearer $token"
	run grep -F -- "$token" "$CURL_ARGS"
	assert_failure
}

@test "api-token.sh refuses an empty token and keeps no key" {
	need setfattr
	keyfs_mount
	run "$EXAMPLES/api-token.sh" put "$MNT" session/api-token </dev/null
	assert_failure 1
	ls_lacks "$MNT/session" api-token
}

@test "api-token.sh calls nothing with a revoked token" {
	need curl setfattr
	keyfs_mount
	echo secret-token | "$EXAMPLES/api-token.sh" put "$MNT" session/api-token
	echo session/api-token > "$MNT/.keyfs/revoke"
	stub_start
	run "$EXAMPLES/api-token.sh" call "$MNT" session/api-token "$STUB_URL/"
	assert_failure
	assert_output --partial revoked
	assert_equal "$(cat "$STUB_RECORD")" ""
}

@test "rotate-secret.sh replaces a secret: readers see old or new, the key keeps its serial, permission and expiry" {
	need getfattr setfattr
	keyfs_mount
	local key=$MNT/session/db-password old new serial perm expiry i

	old=$(fill 20000 A)
	new=$(fill 20000 B)
	printf '%s' "$old" | cat > "$key"
	chmod 750 "$key"
	setfattr -n user.keyfs.expiry -v +3600 "$key"
	serial=$(xattr "$key" serial)
	perm=$(xattr "$key" perm)
	expiry=$(xattr "$key" expiry)

	# A reader that reads the key as fast as it can and counts what it
	# sees; bounded in time, it also stops when told.
	"$KEYFS_PY" -c '
import os, sys, time
path, stop, out = sys.argv[1:4]
seen = {"old": 0, "new": 0, "other": 0, "error": 0}
end = time.time() + 20
while not os.path.exists(stop) and time.time() < end:
	try:
		with open(path, "rb") as f:
			data = f.read()
	except OSError as e:
		seen["error"] += 1
		continue
	if data == b"A" * 20000:
		seen["old"] += 1
	elif data == b"B" * 20000:
		seen["new"] += 1
	else:
		seen["other"] += 1
with open(out, "w") as f:
	f.write("%(old)d %(new)d %(other)d %(error)d\n" % seen)
' "$key" "$BATS_TEST_TMPDIR/stop" "$BATS_TEST_TMPDIR/seen" 3>&- &
	local reader=$!

	for ((i = 0; i < 6; i++)); do
		if ((i % 2 == 0)); then
			printf '%s' "$new" | "$EXAMPLES/rotate-secret.sh" "$MNT" session/db-password
		else
			printf '%s' "$old" | "$EXAMPLES/rotate-secret.sh" "$MNT" session/db-password
		fi
		sleep 0.05
	done
	printf '%s' "$new" | "$EXAMPLES/rotate-secret.sh" "$MNT" session/db-password
	touch "$BATS_TEST_TMPDIR/stop"
	wait "$reader"

	read -r n_old n_new n_other n_err < "$BATS_TEST_TMPDIR/seen"
	((n_other == 0)) || fail "a reader saw $n_other mixed payloads"
	((n_err == 0)) || fail "a reader failed $n_err times"
	((n_old + n_new > 0)) || fail "the reader read nothing"
	assert_equal "$(cat "$key")" "$new"
	assert_equal "$(xattr "$key" serial)" "$serial"
	assert_equal "$(xattr "$key" perm)" "$perm"
	assert_equal "$(xattr "$key" expiry)" "$expiry"
	no_temporary_keys "$MNT/session"
}

@test "rotate-secret.sh makes a key that does not exist yet" {
	need getfattr
	keyfs_mount
	printf 'first' | "$EXAMPLES/rotate-secret.sh" "$MNT" session/fresh
	assert_equal "$(cat "$MNT/session/fresh")" first
	no_temporary_keys "$MNT/session"
}

@test "rotate-secret.sh overwrites a logon key in place" {
	need getfattr
	keyfs_mount
	local key=$MNT/session/%logon:db:app serial

	printf 'one' | "$EXAMPLES/rotate-secret.sh" "$MNT" session/%logon:db:app
	assert_equal "$(xattr "$key" type)" logon
	assert_equal "$(xattr "$key" state)" valid
	serial=$(xattr "$key" serial)
	printf 'two' | "$EXAMPLES/rotate-secret.sh" "$MNT" session/%logon:db:app
	assert_equal "$(xattr "$key" serial)" "$serial"
	no_temporary_keys "$MNT/session"
}

@test "rotate-secret.sh with nothing on standard input changes nothing" {
	need getfattr
	keyfs_mount
	printf 'kept' | cat > "$MNT/session/k"
	run "$EXAMPLES/rotate-secret.sh" "$MNT" session/k </dev/null
	assert_failure 1
	assert_equal "$(cat "$MNT/session/k")" kept
	no_temporary_keys "$MNT/session"
}

@test "share-key.sh links a key into another keyring: one key, two names" {
	need getfattr
	keyfs_mount
	printf 'shared secret' | cat > "$MNT/session/api-token"
	mkdir "$MNT/session/team"
	run "$EXAMPLES/share-key.sh" "$MNT" session/api-token session/team
	assert_success
	assert_output --partial "linked in session/team as api-token"
	assert_equal "$(ino "$MNT/session/team/api-token")" "$(ino "$MNT/session/api-token")"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		klinks "$(ino "$MNT/session/team")" "$(ino "$MNT/session/api-token")"
	fi
	# An update through one name shows through the other.
	printf 'rotated' | cat > "$MNT/session/api-token"
	assert_equal "$(cat "$MNT/session/team/api-token")" rotated
	# Unlinking one leaves the other.
	rm "$MNT/session/api-token"
	assert_equal "$(cat "$MNT/session/team/api-token")" rotated
}

@test "share-key.sh refuses what is not a key or not a keyring" {
	keyfs_mount
	printf 'x' | cat > "$MNT/session/k"
	run "$EXAMPLES/share-key.sh" "$MNT" session/none session
	assert_failure 1
	run "$EXAMPLES/share-key.sh" "$MNT" session/k session/none
	assert_failure 1
}

# The units with their install paths pointed at this build and tree.
units_here()
{
	local dir=$BATS_TEST_TMPDIR/units

	mkdir -p "$dir" "$BATS_TEST_TMPDIR/man/man1"
	sed -e "s#/usr/local/bin/keyfs-api-token#$EXAMPLES/api-token.sh#g" \
	    -e "s#/usr/local/bin/keyfs #$KEYFS_BIN #g" \
	    "$EXAMPLES/keyfs.service" > "$dir/keyfs.service"
	sed -e "s#/usr/local/bin/keyfs-api-token#$EXAMPLES/api-token.sh#g" \
	    -e "s#/usr/local/bin/keyfs #$KEYFS_BIN #g" \
	    "$EXAMPLES/app.service" > "$dir/app.service"
	# Documentation=man:keyfs(1) is checked too.
	cp "${KEYFS_SRCDIR:-$BATS_TEST_DIRNAME/..}/man/keyfs.1" "$BATS_TEST_TMPDIR/man/man1/"
	UNITS=$dir
}

# The value of the first KEY= line of a unit file.
unit_value()
{
	sed -n "s/^$2=//p" "$1" | head -n 1
}

@test "keyfs.service and app.service pass systemd-analyze verify" {
	need systemd-analyze man
	keyfs_require_bin
	units_here
	cd "$UNITS"
	MANPATH=$BATS_TEST_TMPDIR/man run systemd-analyze verify app.service keyfs.service
	assert_success
	assert_output ""
}

@test "app.service's ExecStart, run by hand, reads its token from a keyfs mount" {
	need curl setfattr
	keyfs_mount
	local unit=$EXAMPLES/app.service line env words url

	# user/ possessed through session/, as after a login (the kernel
	# harness links @u into its session; the memory one starts empty)
	[[ $KEYFS_BACKEND == kernel ]] || echo user session >"$MNT/.keyfs/link"
	echo app-token-$RANDOM | "$EXAMPLES/api-token.sh" put "$MNT" user/app-token
	REMOVE_AFTER+=("$MNT/user/app-token")
	stub_start

	line=$(unit_value "$unit" ExecStart)
	env=$(unit_value "$unit" Environment)
	[[ $env == APP_URL=* ]] || fail "app.service has no Environment=APP_URL"
	[[ $line == /usr/local/bin/keyfs-api-token\ * ]] ||
		fail "app.service's ExecStart is not keyfs-api-token: $line"
	# What systemd would run, with the script and mount of this test and a
	# drop-in's APP_URL pointing at the stub.
	url=$STUB_URL/app
	line=${line//\/usr\/local\/bin\/keyfs-api-token/$EXAMPLES/api-token.sh}
	line=${line//\/run\/keys/$MNT}
	line=${line//\$\{APP_URL\}/$url}
	read -ra words <<<"$line"
	run "${words[@]}"
	assert_success
	assert_output ok
	assert_equal "$(cat "$STUB_RECORD")" "Bearer $(cat "$MNT/user/app-token")"
}

@test "keyfs.service's ExecStart, run by hand, mounts and detaches" {
	skip_unless_kernel
	keyfs_require_bin
	keyfs_new_session
	local line words dir=$BATS_TEST_TMPDIR/run-keys

	line=$(unit_value "$EXAMPLES/keyfs.service" ExecStart)
	[[ $line == /usr/local/bin/keyfs\ * ]] ||
		fail "keyfs.service's ExecStart is not keyfs: $line"
	line=${line//\/usr\/local\/bin\/keyfs/$KEYFS_BIN}
	line=${line//\/run\/keys/$dir}
	read -ra words <<<"$line"
	mkdir -p "$dir"
	# Type=forking: the command returns once the file system is mounted.
	"${words[@]}" 3>&- </dev/null
	MNT=$dir
	mountpoint -q "$dir"
	run grep "^kernel $dir fuse.keyfs " /proc/mounts
	assert_success
	assert_output --partial allow_other
	ls_has "$dir" session
	# keyfs_unmount (teardown) unmounts; the detached daemon exits on its own.
}

@test "request-key-helper.sh serves a secret through .keyfs/request (memory backend)" {
	skip_unless_memory
	local secrets=$BATS_TEST_TMPDIR/secrets helper=$BATS_TEST_TMPDIR/helper

	mkdir -m 700 "$secrets"
	(umask 077 && printf 'db-secret-%s' "$RANDOM" > "$secrets/db-password")
	cat > "$helper" <<EOF
#!/bin/sh
KEYFS_SECRETS_DIR='$secrets' exec '$EXAMPLES/request-key-helper.sh' "\$@"
EOF
	chmod +x "$helper"
	keyfs_mount -o "request_key=$helper"

	run "$EXAMPLES/request-key.sh" "$MNT" user db-password app=web
	assert_success
	assert_output "$MNT/session/db-password"
	assert_equal "$(cat "$MNT/session/db-password")" "$(cat "$secrets/db-password")"
	# A second request finds the key without the callout.
	rm "$secrets/db-password"
	run "$EXAMPLES/request-key.sh" "$MNT" user db-password app=web
	assert_success
	# Nothing to serve: the request fails, with the key's error.
	run "$EXAMPLES/request-key.sh" "$MNT" user no-such-secret app=web
	assert_failure
}

@test "request-key-helper.sh refuses what it should not serve" {
	local d=$BATS_TEST_TMPDIR/secrets h=$EXAMPLES/request-key-helper.sh

	mkdir -m 700 "$d"
	(umask 077 && printf 's3cret' > "$d/ok" && printf 'x' > "$d/open")
	chmod 640 "$d/open"
	ln -s ok "$d/link"
	export KEYFS_SECRETS_DIR=$d

	run "$h" user ok app 0 0
	assert_success
	assert_output s3cret
	run "$h" user ok app 12345 0		# not the owner
	assert_failure 1
	run "$h" user open app 0 0		# readable by the group
	assert_failure 1
	run "$h" user link app 0 0		# a symbolic link
	assert_failure 1
	run "$h" user ../secrets/ok app 0 0	# not a plain name
	assert_failure 1
	run "$h" user .hidden app 0 0
	assert_failure 1
	run "$h" keyring ok app 0 0		# not a type it serves
	assert_failure 1
	run "$h" user missing app 0 0
	assert_failure 1
}
