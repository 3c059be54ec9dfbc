#!/usr/bin/env bats
# names.bats: entry names <-> descriptions (SPEC §3): escapes, %TYPE:NAME, length limits.

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

# The description the kernel holds for the key behind PATH.
kernel_desc_is()
{
	local want=$1 path=$2
	[[ $KEYFS_BACKEND == kernel ]] || return 0
	assert_equal "$(kdesc "$(ino "$path")")" "$want"
}

@test "a '/' in a description is written %2F" {
	echo x >"$MNT/session/a%2Fb"
	run ls -A "$MNT/session"
	assert_line "a%2Fb"
	assert_equal "$(cat "$MNT/session/a%2Fb")" x
	kernel_desc_is "a/b" "$MNT/session/a%2Fb"
}

@test "a '%' in a description is written %25" {
	echo x >"$MNT/session/50%25"
	run ls -A "$MNT/session"
	assert_line "50%25"
	assert_equal "$(cat "$MNT/session/50%25")" x
	kernel_desc_is "50%" "$MNT/session/50%25"
}

@test "a description '.' is written %2E" {
	echo dot >"$MNT/session/%2E"
	run ls -A "$MNT/session"
	assert_line "%2E"
	assert_equal "$(cat "$MNT/session/%2E")" dot
	kernel_desc_is "." "$MNT/session/%2E"
}

@test "a description '..' is written %2E%2E" {
	echo dotdot >"$MNT/session/%2E%2E"
	run ls -A "$MNT/session"
	assert_line "%2E%2E"
	assert_equal "$(cat "$MNT/session/%2E%2E")" dotdot
	kernel_desc_is ".." "$MNT/session/%2E%2E"
}

@test "other escapes in a name are unescaped: %20 is a space" {
	echo sp >"$MNT/session/a%20b"
	run ls -A "$MNT/session"
	assert_line "a b"
	assert_equal "$(cat "$MNT/session/a b")" sp
	kernel_desc_is "a b" "$MNT/session/a b"
}

@test "a malformed escape in a new name is EINVAL" {
	run kerrno write "$MNT/session/bad%G1" x
	assert_output EINVAL
	run kerrno write "$MNT/session/nul%00" x
	assert_output EINVAL
}

@test "kernel: descriptions with '/', '%', '.' and '..' made by keyctl are listed escaped" {
	skip_unless_kernel
	keyctl add user "a/b" 1 @s >/dev/null
	keyctl add user "100%" 2 @s >/dev/null
	keyctl add user "." 3 @s >/dev/null
	keyctl add user ".." 4 @s >/dev/null
	eventually ls_has "$MNT/session" "%2E%2E"
	run ls -A "$MNT/session"
	assert_line "a%2Fb"
	assert_line "100%25"
	assert_line "%2E"
	assert_line "%2E%2E"
	assert_equal "$(cat "$MNT/session/a%2Fb")" 1
	assert_equal "$(cat "$MNT/session/100%25")" 2
	assert_equal "$(cat "$MNT/session/%2E")" 3
	assert_equal "$(cat "$MNT/session/%2E%2E")" 4
}

@test "a logon key is listed as %logon:DESC" {
	echo -n pw >"$MNT/session/%logon:cifs:alice"
	run ls -A "$MNT/session"
	assert_line "%logon:cifs:alice"
	refute_line "cifs:alice"
	[ -f "$MNT/session/%logon:cifs:alice" ]
}

@test "kernel: a logon key made through keyfs has type logon" {
	skip_unless_kernel
	echo -n pw >"$MNT/session/%logon:cifs:alice"
	local s
	s=$(keyctl search @s logon cifs:alice)
	assert_equal "$(ino "$MNT/session/%logon:cifs:alice")" "$s"
	assert_equal "$(ktype "$s")" logon
}

@test "kernel: a logon key added by keyctl is listed as %logon:DESC" {
	skip_unless_kernel
	keyctl add logon "cifs:bob" pw @s >/dev/null
	eventually ls_has "$MNT/session" "%logon:cifs:bob"
}

@test "every key opens as %TYPE:NAME too" {
	echo foo-payload >"$MNT/session/foo"
	assert_equal "$(cat "$MNT/session/%user:foo")" foo-payload
	assert_equal "$(ino "$MNT/session/%user:foo")" "$(ino "$MNT/session/foo")"
}

@test "a keyring opens as %keyring:NAME too" {
	mkdir "$MNT/session/ring"
	run stat -c '%F %i' "$MNT/session/%keyring:ring"
	assert_success
	assert_output "directory $(ino "$MNT/session/ring")"
}

@test "%user:NAME creates a user key listed under the plain name" {
	echo v >"$MNT/session/%user:plain"
	run ls -A "$MNT/session"
	assert_line plain
	refute_line "%user:plain"
	assert_equal "$(cat "$MNT/session/plain")" v
}

@test "a keyring and a user key with one description: the keyring lists as %keyring:NAME" {
	echo v >"$MNT/session/dup"
	mkdir "$MNT/session/%keyring:dup"
	run ls -A "$MNT/session"
	assert_line dup
	assert_line "%keyring:dup"
	[ -f "$MNT/session/dup" ]
	[ -d "$MNT/session/%keyring:dup" ]
	assert_equal "$(cat "$MNT/session/dup")" v
}

@test "a keyring made first, then a user key of its name: the keyring lists as %keyring:NAME" {
	mkdir "$MNT/session/dup"
	echo v >"$MNT/session/%user:dup"
	run ls -A "$MNT/session"
	assert_line dup
	assert_line "%keyring:dup"
	[ -f "$MNT/session/dup" ]
	[ -d "$MNT/session/%keyring:dup" ]
}

@test "kernel: a keyring and a user key of one description made by keyctl" {
	skip_unless_kernel
	keyctl add user dup v @s >/dev/null
	keyctl newring dup @s >/dev/null
	eventually ls_has "$MNT/session" "%keyring:dup"
	[ -f "$MNT/session/dup" ]
	[ -d "$MNT/session/%keyring:dup" ]
}

@test "a 255-byte name works" {
	local n
	n=$(printf 'n%.0s' {1..255})
	echo long >"$MNT/session/$n"
	eventually ls_has "$MNT/session" "$n"
	assert_equal "$(cat "$MNT/session/$n")" long
}

@test "a name over 255 bytes is ENAMETOOLONG" {
	local n
	n=$(printf 'n%.0s' {1..256})
	run kerrno write "$MNT/session/$n" x
	assert_output ENAMETOOLONG
	run kerrno mkdir "$MNT/session/$n"
	assert_output ENAMETOOLONG
	run kerrno stat "$MNT/session/$n"
	assert_output ENAMETOOLONG
}

@test "kernel: a description over 255 escaped bytes is not listed but is in by-id" {
	skip_unless_kernel
	local d s
	d=$(printf 'd%.0s' {1..300})
	s=$(keyctl add user "$d" far @s)
	eventually ls_has "$MNT/by-id" "$s"
	run ls -A "$MNT/session"
	refute_line "$d"
	assert_equal "$(cat "$MNT/by-id/$s")" far
}

@test "kernel: a short description that escapes past 255 bytes is not listed but is in by-id" {
	skip_unless_kernel
	local d s
	d=$(printf '/%.0s' {1..100})
	s=$(keyctl add user "$d" slashes @s)
	eventually ls_has "$MNT/by-id" "$s"
	run bash -c 'ls -A "$MNT/session" | grep -c "%2F%2F"'
	assert_output 0
	assert_equal "$(cat "$MNT/by-id/$s")" slashes
}

@test "a keyring whose %keyring: name would pass 255 bytes is only in by-id" {
	local d s
	# %user:NAME fits in 255 bytes, %keyring:NAME does not.
	d=$(printf 'r%.0s' {1..248})
	mkdir "$MNT/session/$d"
	s=$(ino "$MNT/session/$d")
	echo v >"$MNT/session/%user:$d"
	run ls -A "$MNT/session"
	assert_line "$d"
	refute_line --partial "%keyring:"
	[ -f "$MNT/session/$d" ]
	run stat -c '%F %i' "$MNT/by-id/$s"
	assert_output "directory $s"
}

@test "memory: a description over 255 escaped bytes is not listed but is in by-id (store)" {
	skip_unless_memory
	local f=$BATS_TEST_TMPDIR/keys.json s1 s2
	keyfs_unmount
	keyfs_mount -o "store=$f"
	echo far >"$MNT/session/long1"
	echo slashes >"$MNT/session/long2"
	s1=$(ino "$MNT/session/long1")
	s2=$(ino "$MNT/session/long2")
	keyfs_unmount
	# Descriptions that no entry name can make: rewrite them in the store.
	"$KEYFS_PY" - "$f" <<'PY'
import json, sys
path = sys.argv[1]
with open(path) as f:
	img = json.load(f)
for k in img["keys"]:
	if k.get("description") == "long1":
		k["description"] = "d" * 300
	elif k.get("description") == "long2":
		k["description"] = "/" * 100
with open(path, "w") as f:
	json.dump(img, f)
PY
	keyfs_mount -o "store=$f"
	run ls -A "$MNT/session"
	refute_output --partial ddddd
	refute_output --partial "%2F%2F"
	assert_equal "$(cat "$MNT/by-id/$s1")" far
	assert_equal "$(cat "$MNT/by-id/$s2")" slashes
}
