#!/usr/bin/env bats
# xattr.bats: the user.keyfs.* extended attributes of keys, keyrings and pending entries (SPEC §6).

load lib/keyfs

# xa: getxattr with a buffer size of our choosing and setxattr with flags,
# which neither getfattr nor python's os module can do.  Prints the value
# (or, for size 0, the length) or the errno's name.
XA_C='
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static int fail(void)
{
	printf("%s\n", strerrorname_np(errno));
	return 0;
}

int main(int argc, char **argv)
{
	char buf[65536];
	ssize_t n;

	if (argc == 5 && strcmp(argv[1], "get") == 0) {
		size_t size = strtoul(argv[4], NULL, 10);

		n = getxattr(argv[2], argv[3], size ? buf : NULL, size);
		if (n < 0)
			return fail();
		if (size == 0)
			printf("%zd\n", n);
		else
			printf("%.*s\n", (int)n, buf);
		return 0;
	}
	if (argc == 6 && strcmp(argv[1], "set") == 0) {
		int flags = strcmp(argv[5], "create") == 0 ? XATTR_CREATE :
			    strcmp(argv[5], "replace") == 0 ? XATTR_REPLACE : 0;

		if (setxattr(argv[2], argv[3], argv[4], strlen(argv[4]),
			     flags) < 0)
			return fail();
		printf("OK\n");
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "list") == 0) {
		size_t size = strtoul(argv[3], NULL, 10);

		n = listxattr(argv[2], size ? buf : NULL, size);
		if (n < 0)
			return fail();
		printf("%zd\n", n);
		return 0;
	}
	return 2;
}
'

setup_file()
{
	XA=
	if command -v cc >/dev/null 2>&1 &&
	   printf '%s' "$XA_C" | cc -x c -o "$BATS_FILE_TMPDIR/xa" - 2>/dev/null; then
		XA=$BATS_FILE_TMPDIR/xa
	fi
	export XA
}

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

need_xa() { [[ -n $XA ]] || skip "no C compiler for the xattr helper"; }

# xget NAME PATH: the value of user.keyfs.NAME.

# xset NAME VALUE PATH: set it as text (setfattr reads a leading 0x as
# hex-encoded bytes, so the value is quoted).

# xnames PATH: the names listxattr gives, one a line, sorted.
xnames()
{
	"$KEYFS_PY" -c 'import os, sys
print("\n".join(sorted(os.listxattr(sys.argv[1], follow_symlinks=False))))' "$1"
}

# kperm SERIAL: the kernel's perm of a key, as keyctl prints it.
kperm() { keyctl rdescribe "$1" | cut -d';' -f4; }

# near VALUE WANT: VALUE is within 2 s of WANT.
near()
{
	(($1 >= $2 - 2 && $1 <= $2 + 2)) ||
		fail "expected about $2, got $1"
}

ALL_NAMES='user.keyfs.description
user.keyfs.expiry
user.keyfs.perm
user.keyfs.serial
user.keyfs.state
user.keyfs.type'

@test "getfattr -d shows every attribute of a key" {
	echo v >"$MNT/session/k"
	local s
	s=$(ino "$MNT/session/k")
	run getfattr --absolute-names -d -m - "$MNT/session/k"
	assert_success
	assert_line 'user.keyfs.type="user"'
	assert_line 'user.keyfs.description="k"'
	assert_line "user.keyfs.serial=\"$s\""
	assert_line 'user.keyfs.perm="0x3f070202"'
	assert_line 'user.keyfs.expiry="0"'
	assert_line 'user.keyfs.state="valid"'
}

@test "listxattr names exactly the user.keyfs attributes (security only with a label)" {
	echo v >"$MNT/session/k"
	local want=$ALL_NAMES
	if [[ $KEYFS_BACKEND == kernel && -n $(keyctl security "$(ino "$MNT/session/k")") ]]; then
		want=$(printf '%s\nuser.keyfs.security\n' "$ALL_NAMES" | LC_ALL=C sort)
	fi
	run xnames "$MNT/session/k"
	assert_success
	assert_output "$want"
}

@test "a keyring has the attributes too" {
	mkdir "$MNT/session/ring"
	assert_equal "$(xget type "$MNT/session/ring")" keyring
	assert_equal "$(xget description "$MNT/session/ring")" ring
	assert_equal "$(xget serial "$MNT/session/ring")" "$(ino "$MNT/session/ring")"
	assert_equal "$(xget state "$MNT/session/ring")" valid
	run xnames "$MNT/session/ring"
	assert_output --partial user.keyfs.perm
}

@test "the session keyring itself and a by-id entry have the attributes" {
	echo v >"$MNT/session/k"
	local s
	s=$(ino "$MNT/session/k")
	assert_equal "$(xget type "$MNT/session")" keyring
	assert_equal "$(xget serial "$MNT/session")" "$(ino "$MNT/session")"
	assert_equal "$(xget description "$MNT/by-id/$s")" k
}

@test "description is the raw description, not the escaped entry name" {
	echo v >"$MNT/session/a%25b%2Fc d"
	run xget description "$MNT/session/a%25b%2Fc d"
	assert_success
	assert_output "a%b/c d"
}

@test "type of a key of another type" {
	printf secret >"$MNT/session/%logon:svc:x"
	assert_equal "$(xget type "$MNT/session/%logon:svc:x")" logon
	assert_equal "$(xget description "$MNT/session/%logon:svc:x")" svc:x
}

@test "values carry no newline and no NUL" {
	echo v >"$MNT/session/k"
	local n
	for n in type description serial perm expiry state; do
		run "$KEYFS_PY" -c 'import os, sys
v = os.getxattr(sys.argv[1], sys.argv[2])
print("bad" if b"\n" in v or b"\0" in v else "good")' "$MNT/session/k" "user.keyfs.$n"
		assert_output good
	done
	run "$KEYFS_PY" -c 'import os, sys
print(os.getxattr(sys.argv[1], "user.keyfs.perm"))' "$MNT/session/k"
	assert_output "b'0x3f070202'"
}

@test "kernel: serial and perm agree with keyctl" {
	skip_unless_kernel
	echo v >"$MNT/session/k"
	local s
	s=$(keyctl search @s user k)
	assert_equal "$(xget serial "$MNT/session/k")" "$s"
	assert_equal "$(xget perm "$MNT/session/k")" "0x$(kperm "$s")"
}

@test "setting perm changes the key's permission" {
	echo v >"$MNT/session/k"
	xset perm 0x3f1f0a00 "$MNT/session/k"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f1f0a00
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(kperm "$(ino "$MNT/session/k")")" 3f1f0a00
	fi
	# the mode bits follow: owner rwx from possessor|user, group r-x
	eventually output_is 750 stat -c %a "$MNT/session/k"
}

@test "perm takes hex without 0x too, and capital letters" {
	echo v >"$MNT/session/k"
	setfattr -n user.keyfs.perm -v 3f0b0000 "$MNT/session/k"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f0b0000
	xset perm 0X3F030000 "$MNT/session/k"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f030000
}

@test "setfattr -v 0x3f3f3f3f works as typed: four printable bytes that are no number are the mask" {
	mkdir "$MNT/session/r"
	setfattr -n user.keyfs.perm -v 0x3f3f3f3f "$MNT/session/r"
	assert_equal "$(xget perm "$MNT/session/r")" 0x3f3f3f3f
	echo v >"$MNT/session/k"
	setfattr -n user.keyfs.perm -v 0x3f3b3f3f "$MNT/session/k"	# "?;??"
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f3b3f3f
	# four hexadecimal digits stay text
	xset perm 3f3f "$MNT/session/k"
	run kerrno getxattr "$MNT/session/k" user.keyfs.perm
	assert_output EACCES	# 0x00003f3f: the possessor and the owner lost view
}

@test "bad perm values are EINVAL and change nothing" {
	echo v >"$MNT/session/k"
	local v
	for v in '' 0x zz 0x3g010000 '0x3f010000 ' ' 0x3f010000' '0x3f010000
' 0x100000000 -1 +1 0x0000000000000000000000000000000000000001 1.5; do
		run kerrno setxattr "$MNT/session/k" user.keyfs.perm "$v"
		assert_output EINVAL
	done
	# setfattr -v 0x... sends hex-decoded bytes: only 4 of them are a mask
	run setfattr -n user.keyfs.perm -v 0x3f3f000000 "$MNT/session/k"
	assert_failure
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f070202
}

@test "expiry +N sets a timeout N seconds from now; 0 clears it" {
	echo v >"$MNT/session/k"
	local now
	now=$(date +%s)
	xset expiry +100 "$MNT/session/k"
	near "$(xget expiry "$MNT/session/k")" $((now + 100))
	if [[ $KEYFS_BACKEND == kernel ]]; then
		# /proc/keys shows a timeout instead of "perm"
		run grep "^$(printf %08x "$(ino "$MNT/session/k")") " /proc/keys
		assert_success
		refute_output --regexp '^[0-9a-f]{8} [^ ]+ +[0-9]+ perm '
	fi
	xset expiry 0 "$MNT/session/k"
	assert_equal "$(xget expiry "$MNT/session/k")" 0
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run grep "^$(printf %08x "$(ino "$MNT/session/k")") " /proc/keys
		assert_output --regexp '^[0-9a-f]{8} [^ ]+ +[0-9]+ perm '
	fi
	[[ $(cat "$MNT/session/k") == v ]]
}

@test "expiry set to an absolute time in the future" {
	echo v >"$MNT/session/k"
	local t
	t=$(($(date +%s) + 500))
	xset expiry "$t" "$MNT/session/k"
	near "$(xget expiry "$MNT/session/k")" "$t"
}

@test "bad expiry values are EINVAL and change nothing" {
	echo v >"$MNT/session/k"
	xset expiry +300 "$MNT/session/k"
	local before v now
	before=$(xget expiry "$MNT/session/k")
	now=$(date +%s)
	for v in '' + +x -5 abc 1e9 '+10 ' ' 10' '+10
' $((now - 10)) 1 +4294967296 99999999999999999999 \
		 1234567890123456789012345678901234567890; do
		run kerrno setxattr "$MNT/session/k" user.keyfs.expiry "$v"
		assert_output EINVAL
	done
	assert_equal "$(xget expiry "$MNT/session/k")" "$before"
}

@test "a key whose timeout runs out is expired" {
	echo v >"$MNT/session/k"
	xset expiry +1 "$MNT/session/k"
	sleep 2.2
	eventually output_is expired xget state "$MNT/session/k"
	run kerrno read "$MNT/session/k"
	assert_output EKEYEXPIRED
}

@test "kernel: a timeout set with keyctl shows, rounded up to /proc/keys' unit" {
	skip_unless_kernel
	echo v >"$MNT/session/k"
	keyctl timeout "$(ino "$MNT/session/k")" 100
	KEYFS_NOW=$(date +%s)
	# keyfs sees it once its cache of /proc/keys is renewed; /proc/keys
	# says 1m, which rounded up is two minutes from when keyfs read it
	eventually expiry_between "$MNT/session/k" 98 126
}

# expiry_between PATH LO HI: the expiry is KEYFS_NOW + [LO, HI].
expiry_between()
{
	local e
	e=$(xget expiry "$1")
	((e >= KEYFS_NOW + $2 && e <= KEYFS_NOW + $3)) ||
		{ echo "expiry $e, now $KEYFS_NOW" >&2; return 1; }
}

@test "read-only attributes are EPERM to set" {
	echo v >"$MNT/session/k"
	local n
	for n in type description serial security state; do
		run kerrno setxattr "$MNT/session/k" "user.keyfs.$n" x
		assert_output EPERM
	done
	assert_equal "$(xget type "$MNT/session/k")" user
}

@test "no attribute can be removed; others are not there" {
	echo v >"$MNT/session/k"
	local n
	for n in type description serial perm expiry state; do
		run kerrno removexattr "$MNT/session/k" "user.keyfs.$n"
		assert_output EPERM
	done
	run kerrno removexattr "$MNT/session/k" user.other
	assert_output ENODATA
	run kerrno removexattr "$MNT/session/k" user.keyfs.nosuch
	assert_output ENODATA
}

@test "names outside the set are ENODATA to get and EOPNOTSUPP to set" {
	echo v >"$MNT/session/k"
	run kerrno getxattr "$MNT/session/k" user.other
	assert_output ENODATA
	run kerrno getxattr "$MNT/session/k" user.keyfs.nosuch
	assert_output ENODATA
	run kerrno setxattr "$MNT/session/k" user.other x
	assert_output EOPNOTSUPP
	run kerrno setxattr "$MNT/session/k" user.keyfs.nosuch x
	assert_output EOPNOTSUPP
	run kerrno setxattr "$MNT/session/k" trusted.x x
	refute_output OK
}

@test "names outside the user namespace are EOPNOTSUPP, on every node" {
	echo v >"$MNT/session/k"
	local p n
	for p in "$MNT/session/k" "$MNT/session" "$MNT" "$MNT/.keyfs/revoke"; do
		for n in security.selinux system.posix_acl_access \
			 system.posix_acl_default trusted.x; do
			run kerrno getxattr "$p" "$n"
			assert_output EOPNOTSUPP
			# The kernel itself answers removing a default
			# ACL from a non-directory, with success.
			[[ $n == system.posix_acl_default ]] && continue
			run kerrno removexattr "$p" "$n"
			assert_output EOPNOTSUPP
		done
	done
	# What ls -l and cp -a make of it: no label, no ACL, nothing lost.
	run ls -l "$MNT/session/k"
	assert_success
	refute_output --partial '?'
	local out
	out=$(mktemp -d)
	run cp -a "$MNT/session/k" "$out/k"
	assert_success
	assert_equal "$(cat "$out/k")" v
	rm -rf "$out"
}

@test "the security attribute is there only with a label" {
	echo v >"$MNT/session/k"
	local label=
	if [[ $KEYFS_BACKEND == kernel ]]; then
		label=$(keyctl security "$(ino "$MNT/session/k")")
	fi
	if [[ -z $label ]]; then
		run kerrno getxattr "$MNT/session/k" user.keyfs.security
		assert_output ENODATA
	else
		assert_equal "$(xget security "$MNT/session/k")" "$label"
	fi
}

@test "getxattr with size 0 gives the length; a small buffer is ERANGE" {
	need_xa
	echo v >"$MNT/session/k"
	run "$XA" get "$MNT/session/k" user.keyfs.perm 0
	assert_output 10
	run "$XA" get "$MNT/session/k" user.keyfs.perm 9
	assert_output ERANGE
	run "$XA" get "$MNT/session/k" user.keyfs.perm 10
	assert_output 0x3f070202
	run "$XA" get "$MNT/session/k" user.keyfs.description 1
	assert_output k
	run "$XA" list "$MNT/session/k" 0
	assert_output "$(printf '%s\n' "$ALL_NAMES" | awk '{ n += length($0) + 1 } END { print n }')"
	run "$XA" list "$MNT/session/k" 10
	assert_output ERANGE
}

@test "XATTR_CREATE on an existing name is EEXIST; XATTR_REPLACE works" {
	need_xa
	echo v >"$MNT/session/k"
	run "$XA" set "$MNT/session/k" user.keyfs.perm 0x3f030000 create
	assert_output EEXIST
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f070202
	run "$XA" set "$MNT/session/k" user.keyfs.perm 0x3f030000 replace
	assert_output OK
	assert_equal "$(xget perm "$MNT/session/k")" 0x3f030000
}

@test "virtual nodes have no attributes" {
	local p
	for p in "$MNT" "$MNT/by-id" "$MNT/.keyfs" "$MNT/.keyfs/keys" \
		 "$MNT/.keyfs/revoke" "$MNT/.keyfs/search"; do
		run xnames "$p"
		assert_success
		assert_output ''
		run kerrno getxattr "$p" user.keyfs.type
		assert_output ENODATA
	done
	run xnames "$MNT/@s"
	assert_success
	assert_output ''
	run getfattr -h --absolute-names -n user.keyfs.type "$MNT/@s"
	assert_failure
}

@test "a pending entry: state pending, no serial, perm and expiry kept" {
	touch "$MNT/session/p"
	assert_equal "$(xget state "$MNT/session/p")" pending
	assert_equal "$(xget type "$MNT/session/p")" user
	assert_equal "$(xget description "$MNT/session/p")" p
	run kerrno getxattr "$MNT/session/p" user.keyfs.serial
	assert_output ENODATA
	run xnames "$MNT/session/p"
	refute_line user.keyfs.serial
	assert_line user.keyfs.state
	assert_line user.keyfs.perm

	local now
	now=$(date +%s)
	xset perm 0x3f1b0000 "$MNT/session/p"
	xset expiry +600 "$MNT/session/p"
	assert_equal "$(xget perm "$MNT/session/p")" 0x3f1b0000
	near "$(xget expiry "$MNT/session/p")" $((now + 600))
	run kerrno setxattr "$MNT/session/p" user.keyfs.perm nothex
	assert_output EINVAL
	run kerrno setxattr "$MNT/session/p" user.keyfs.state valid
	assert_output EPERM

	# applied when the key is made
	echo payload >"$MNT/session/p"
	assert_equal "$(xget state "$MNT/session/p")" valid
	assert_equal "$(xget perm "$MNT/session/p")" 0x3f1b0000
	near "$(xget expiry "$MNT/session/p")" $((now + 600))
	local s
	s=$(xget serial "$MNT/session/p")
	assert_equal "$s" "$(ino "$MNT/session/p")"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		assert_equal "$(kperm "$s")" 3f1b0000
	fi
}

@test "a revoked key says so, and keeps its other attributes" {
	echo v >"$MNT/session/k"
	local s
	s=$(ino "$MNT/session/k")
	echo session/k >"$MNT/.keyfs/revoke"
	assert_equal "$(xget state "$MNT/session/k")" revoked
	assert_equal "$(xget type "$MNT/session/k")" user
	assert_equal "$(xget description "$MNT/session/k")" k
	assert_equal "$(xget serial "$MNT/session/k")" "$s"
	run kerrno setxattr "$MNT/session/k" user.keyfs.perm 0x3f3f0000
	assert_output EKEYREVOKED
}
