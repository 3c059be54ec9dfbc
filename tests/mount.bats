#!/usr/bin/env bats
# mount.bats: keyfs mounts like every FUSE file system: mount -t fuse.keyfs, fstab lines, umount(8).
#
# mount(8) runs mount.fuse3, which finds keyfs in a fixed PATH
# (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin).  So the
# build under test is installed as /usr/local/sbin/keyfs for this file,
# but only where nothing else is there: a copy this file placed earlier
# is recognised by its checksum in $STATE/installed.  Runs of this file in
# parallel (make -j check runs both backends at once) share the copy;
# each holds it with a file in $STATE/holders, and the last one to leave
# removes it.

load lib/keyfs

TARGET=/usr/local/sbin/keyfs
STATE=${KEYFS_TEST_STATE:-/run/keyfs-tests}

MOUNTED=()
DAEMONS=()

# Every change to the install state happens under one lock.
with_lock()
{
	local fd

	mkdir -p "$STATE/holders" || return 1
	exec {fd}>"$STATE/lock"
	flock "$fd"
	"$@"
	local rc=$?
	exec {fd}>&-
	return $rc
}

sum() { sha256sum < "$1" | cut -d' ' -f1; }

# mount(8) and umount(8) wait on locks and on the daemon: bounded, so that
# a stuck one fails its test instead of holding up the whole run.
mount() { timeout 120 /usr/bin/mount "$@"; }
umount() { timeout 120 /usr/bin/umount "$@"; }

# Holders are bats processes; one that died without teardown_file holds
# nothing.
prune_holders()
{
	local h

	for h in "$STATE"/holders/*; do
		[[ -e $h ]] || continue
		kill -0 "${h##*/}" 2>/dev/null || rm -f -- "$h"
	done
}

have_holders()
{
	compgen -G "$STATE/holders/*" >/dev/null
}

ours() { [[ -f $STATE/installed && -f $TARGET && $(sum "$TARGET") == "$(cat "$STATE/installed")" ]]; }

place_copy()
{
	cp -- "$KEYFS_BIN" "$TARGET.keyfs-test.$$" &&
	chmod 755 "$TARGET.keyfs-test.$$" &&
	mv -f -- "$TARGET.keyfs-test.$$" "$TARGET" &&
	sum "$TARGET" > "$STATE/installed"
}

install_locked()
{
	prune_holders
	if [[ ! -e $TARGET ]]; then
		place_copy || return 1
	elif ours; then
		if ! cmp -s "$TARGET" "$KEYFS_BIN"; then
			if have_holders; then
				echo "$TARGET is another build, in use by a parallel run"
				return 0
			fi
			place_copy || return 1
		fi
	elif ! cmp -s "$TARGET" "$KEYFS_BIN"; then
		echo "$TARGET exists and is not this build; not replacing it"
		return 0
	fi
	touch "$STATE/holders/$$"
}

uninstall_locked()
{
	rm -f -- "$STATE/holders/$$"
	prune_holders
	if ! have_holders && ours; then
		rm -f -- "$TARGET" "$STATE/installed"
	fi
}

setup_file()
{
	INSTALL_SKIP=
	if ((EUID != 0)); then
		INSTALL_SKIP="mount(8) needs root"
	elif ! command -v mount.fuse3 >/dev/null 2>&1 &&
	     [[ ! -x /sbin/mount.fuse3 && ! -x /usr/sbin/mount.fuse3 ]]; then
		INSTALL_SKIP="no mount.fuse3 (Debian: fuse3)"
	else
		keyfs_require_bin || return 1
		INSTALL_SKIP=$(with_lock install_locked) || return 1
	fi
	export INSTALL_SKIP
}

teardown_file()
{
	((EUID == 0)) || return 0
	with_lock uninstall_locked
}

setup()
{
	[[ -z $INSTALL_SKIP ]] || skip "$INSTALL_SKIP"
	keyfs_new_session
	D=$BATS_TEST_TMPDIR
	mkdir -p "$D/a"
}

# The pid of the keyfs daemon serving DIR, from the command lines of
# keyfs processes; empty when there is none.
daemon_pid()
{
	local p arg

	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/exe" 2>/dev/null) == */keyfs ]] || continue
		while IFS= read -r -d '' arg; do
			if [[ $arg == "$1" ]]; then
				echo "${p##*/}"
				return 0
			fi
		done < "$p/cmdline" 2>/dev/null
	done
	return 0
}

# alive PID: the process runs.  A detached daemon's parent is init, which
# may reap it late: a zombie has exited.
alive()
{
	local state

	[[ -n $1 ]] || return 1
	state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
	[[ -n $state && $state != Z && $state != X ]]
}

# mounted DIR: remember DIR for teardown, and check /proc/mounts shows
# "BACKEND DIR fuse.keyfs".
mounted()
{
	local dir=$1 backend=$2

	MOUNTED+=("$dir")
	DAEMONS+=("$(daemon_pid "$dir")")
	# mount(8) started this daemon, not keyfs_mount: watch it the same way
	[[ -z ${DAEMONS[-1]} ]] ||
		keyfs_watchdog_start "${DAEMONS[-1]}" "$BATS_TEST_TMPDIR/watchdog.log"
	mountpoint -q "$dir" || fail "$dir is not a mount point"
	grep -q "^$backend $dir fuse.keyfs " /proc/mounts ||
		fail "/proc/mounts has no '$backend $dir fuse.keyfs' line:
$(grep " $dir " /proc/mounts)"
}

# Unmount DIR with umount(8) and wait for its daemon to exit.
unmount()
{
	local dir=$1 pid i

	pid=$(daemon_pid "$dir")
	umount "$dir" || return 1
	mountpoint -q "$dir" && fail "$dir is still mounted after umount"
	for ((i = 0; i < 100; i++)); do
		alive "$pid" || return 0
		sleep 0.1
	done
	fail "keyfs ($pid) did not exit after umount $dir"
}

teardown()
{
	local dir pid i _ type

	# A mount that a failed assertion left before mounted() registered it
	# must not outlive its test either.
	while read -r _ dir type _; do
		[[ $type == fuse.keyfs && $dir == "$BATS_TEST_TMPDIR"/* ]] &&
			MOUNTED+=("$dir")
	done </proc/mounts
	for dir in "${MOUNTED[@]}"; do
		mountpoint -q "$dir" 2>/dev/null || continue
		pid=$(daemon_pid "$dir")
		umount "$dir" 2>/dev/null || umount -l "$dir" 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do
			alive "$pid" || break
			sleep 0.1
		done
		# The daemon this test started, by its pid, if it hangs.
		! alive "$pid" || kill -9 "$pid" 2>/dev/null || true
	done
	# A daemon whose unmount succeeded but that never exited (the test
	# failed on it) must not outlive its test either.
	for pid in "${DAEMONS[@]}"; do
		! alive "$pid" || kill -9 "$pid" 2>/dev/null || true
	done
	MOUNTED=()
	DAEMONS=()
	keyfs_watchdog_stop
	if [[ -s $BATS_TEST_TMPDIR/watchdog.log ]]; then
		fail "a keyfs daemon was wedged; the watchdog killed it:
$(cat "$BATS_TEST_TMPDIR/watchdog.log")"
		return 1
	fi
}

@test "mount -t fuse.keyfs BACKEND DIR mounts, and umount unmounts" {
	run mount -t fuse.keyfs "$KEYFS_BACKEND" "$D/a"
	assert_success
	mounted "$D/a" "$KEYFS_BACKEND"
	ls_has "$D/a" session
	ls_has "$D/a" by-id
	ls_has "$D/a/.keyfs" request
	printf 'mounted by mount(8)' | cat > "$D/a/session/k"
	assert_equal "$(cat "$D/a/session/k")" "mounted by mount(8)"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		# The daemon has the session keyring of the process that mounted.
		run keyctl search @s user k
		assert_success
		keyctl unlink "$output" @s
	fi
	unmount "$D/a"
}

@test "mount -t fuse.keyfs passes -o options on: ro" {
	run mount -t fuse.keyfs "$KEYFS_BACKEND" "$D/a" -o ro
	assert_success
	mounted "$D/a" "$KEYFS_BACKEND"
	run grep "^$KEYFS_BACKEND $D/a fuse.keyfs " /proc/mounts
	assert_output --regexp ' ro[, ]'
	run kerrno write "$D/a/session/k" data
	assert_output EROFS
	unmount "$D/a"
}

@test "mount -t fuse.keyfs with a bad option fails and mounts nothing" {
	run mount -t fuse.keyfs "$KEYFS_BACKEND" "$D/a" -o default_type=keyring
	assert_failure
	MOUNTED+=("$D/a")
	run mountpoint -q "$D/a"
	assert_failure
}

@test "mount -t fuse.keyfs memory DIR -o store=FILE keeps keys across umount and mount" {
	skip_unless_memory
	local store=$D/keys.json

	mount -t fuse.keyfs memory "$D/a" -o "store=$store"
	mounted "$D/a" memory
	printf 'kept in the store' | cat > "$D/a/session/k"
	chmod 750 "$D/a/session/k"
	unmount "$D/a"

	[[ -f $store ]] || fail "no store file $store"
	assert_equal "$(stat -c %a "$store")" 600
	mount -t fuse.keyfs memory "$D/a" -o "store=$store"
	mounted "$D/a" memory
	assert_equal "$(cat "$D/a/session/k")" "kept in the store"
	run getfattr --absolute-names --only-values -n user.keyfs.perm "$D/a/session/k"
	assert_output 0x3f0f0a00
	unmount "$D/a"
}

@test "an fstab line mounts with mount DIR (memory, store=): keys survive umount and mount" {
	skip_unless_memory
	local store=$D/keys.json fstab=$D/fstab

	echo "memory $D/a fuse.keyfs store=$store 0 0" > "$fstab"
	mount -T "$fstab" "$D/a"
	mounted "$D/a" memory
	printf 'from fstab' | cat > "$D/a/session/k"
	unmount "$D/a"

	mount -T "$fstab" "$D/a"
	mounted "$D/a" memory
	assert_equal "$(cat "$D/a/session/k")" "from fstab"
	unmount "$D/a"
}

@test "an fstab line mounts with mount DIR (kernel, allow_other)" {
	skip_unless_kernel
	local fstab=$D/fstab

	echo "kernel $D/a fuse.keyfs allow_other 0 0" > "$fstab"
	mount -T "$fstab" "$D/a"
	mounted "$D/a" kernel
	run grep "^kernel $D/a fuse.keyfs " /proc/mounts
	assert_output --partial allow_other
	ls_has "$D/a" session
	unmount "$D/a"
}

@test "an fstab line with options for the backend: root=@s" {
	local fstab=$D/fstab

	echo "$KEYFS_BACKEND $D/a fuse.keyfs root=@s,default_type=logon 0 0" > "$fstab"
	mount -T "$fstab" "$D/a"
	mounted "$D/a" "$KEYFS_BACKEND"
	ls_has "$D/a" .keyfs
	ls_lacks "$D/a" by-id
	printf 'pw' | cat > "$D/a/cifs:alice"
	run getfattr --absolute-names --only-values -n user.keyfs.type "$D/a/%logon:cifs:alice"
	assert_output logon
	rm "$D/a/%logon:cifs:alice"
	unmount "$D/a"
}

@test "keyfs detaching with root= forks while no other thread runs" {
	# root= is checked before detaching, which starts the kernel
	# backend's /proc/keys thread; a thread running at the fork leaves
	# its locks held in the daemon (a hang, once in a while).
	! keyfs_has_tsan || skip "ThreadSanitizer runs a thread of its own"
	run "$KEYFS_BIN" "$KEYFS_BACKEND" "$D/a" -o root=@s
	assert_success
	refute_output --partial "threads run at the fork"
	mounted "$D/a" "$KEYFS_BACKEND"
	ls_has "$D/a" .keyfs
	unmount "$D/a"
}
