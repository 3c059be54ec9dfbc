# users.bash: a second user for a test file, and running commands as it.
#
# A file that needs one does `load lib/users` after `load lib/keyfs`, then
#	setup_file()    { second_user_create PREFIX; }
#	teardown_file() { second_user_remove; }
# and mounts with allow_other, calling mount_reachable after keyfs_mount.
# Each file makes its own user (PREFIX plus the pid): kernel key quotas are
# per uid, so files that run at once never share one.

# second_user_create PREFIX: set and export U2, U2UID, U2GID; U2 stays
# empty where no user can be made (not root, no useradd or setpriv).
second_user_create()
{
	U2=
	if [[ $(id -u) -eq 0 ]] && command -v useradd >/dev/null 2>&1 &&
	   command -v setpriv >/dev/null 2>&1; then
		U2=$1$$
		useradd --system --user-group --no-create-home \
			--shell /usr/sbin/nologin "$U2" >/dev/null 2>&1 || U2=
	fi
	if [[ -n $U2 ]]; then
		U2UID=$(id -u "$U2")
		U2GID=$(id -g "$U2")
	fi
	export U2 U2UID U2GID
}

second_user_remove()
{
	if [[ -n ${U2:-} ]]; then
		userdel "$U2" >/dev/null 2>&1 || true
		groupdel "$U2" >/dev/null 2>&1 || true
	fi
}

# The second user must reach the mount point through the test's own
# temporary directories (mktemp makes them 0700).
mount_reachable()
{
	local d
	d=$(dirname "$MNT")
	while [[ $d != / && $d != "${TMPDIR:-/tmp}" && $d != /tmp ]]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
}

need_u2() { [[ -n $U2 ]] || skip "cannot create a second user (needs root, useradd, setpriv)"; }

# as2 CMD...: run CMD as the second user, no supplementary groups.
as2() { setpriv --reuid="$U2UID" --regid="$U2GID" --clear-groups -- "$@"; }

# as2_errno OP ARGS...: kerrno as the second user.
as2_errno() { as2 "$KEYFS_PY" -c "$KEYFS_ERRNO_PY" "$@"; }
