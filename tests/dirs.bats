#!/usr/bin/env bats
# dirs.bats: keyrings as directories (SPEC §4): mkdir, rmdir, links, link counts, readdir.

load lib/keyfs

setup() { keyfs_mount; }
teardown() { keyfs_unmount; }

@test "mkdir makes a keyring" {
	mkdir "$MNT/session/ring"
	[ -d "$MNT/session/ring" ]
	run ls -A "$MNT/session"
	assert_line ring
	assert_equal "$(ino "$MNT/session/%keyring:ring")" "$(ino "$MNT/session/ring")"
	if [[ $KEYFS_BACKEND == kernel ]]; then
		local s
		s=$(ino "$MNT/session/ring")
		assert_equal "$(ktype "$s")" keyring
		assert_equal "$(kdesc "$s")" ring
		klinks @s "$s"
	fi
}

@test "a new keyring is empty and owned by the caller" {
	mkdir "$MNT/session/ring"
	run ls -A "$MNT/session/ring"
	assert_success
	assert_output ""
	assert_equal "$(stat -c %u:%g "$MNT/session/ring")" "$(id -u):$(id -g)"
}

@test "keys and keyrings nest inside a new keyring" {
	mkdir -p "$MNT/session/a/b"
	echo deep >"$MNT/session/a/b/k"
	assert_equal "$(cat "$MNT/session/a/b/k")" deep
	run ls -A "$MNT/session/a"
	assert_output b
}

@test "mkdir of an existing name is EEXIST" {
	mkdir "$MNT/session/ring"
	run kerrno mkdir "$MNT/session/ring"
	assert_output EEXIST
}

@test "rmdir of an empty keyring unlinks it" {
	mkdir "$MNT/session/ring"
	local s
	s=$(ino "$MNT/session/ring")
	rmdir "$MNT/session/ring"
	ls_lacks "$MNT/session" ring
	run kerrno stat "$MNT/session/ring"
	assert_output ENOENT
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run klinks @s "$s"
		assert_failure
	fi
}

@test "rmdir of a keyring that links a key is ENOTEMPTY" {
	mkdir "$MNT/session/ring"
	echo x >"$MNT/session/ring/k"
	run kerrno rmdir "$MNT/session/ring"
	assert_output ENOTEMPTY
	[ -d "$MNT/session/ring" ]
	assert_equal "$(cat "$MNT/session/ring/k")" x
}

@test "rmdir of a keyring that links a keyring is ENOTEMPTY" {
	mkdir -p "$MNT/session/ring/sub"
	run kerrno rmdir "$MNT/session/ring"
	assert_output ENOTEMPTY
	[ -d "$MNT/session/ring/sub" ]
}

@test "rmdir after emptying the keyring works" {
	mkdir "$MNT/session/ring"
	echo x >"$MNT/session/ring/k"
	rm "$MNT/session/ring/k"
	rmdir "$MNT/session/ring"
	[ ! -e "$MNT/session/ring" ]
}

@test "rmdir of a key is ENOTDIR and rm of a keyring is EISDIR" {
	echo x >"$MNT/session/k"
	mkdir "$MNT/session/ring"
	run kerrno rmdir "$MNT/session/k"
	assert_output ENOTDIR
	run kerrno unlink "$MNT/session/ring"
	assert_output EISDIR
}

@test "st_nlink of a keyring is 2 plus its child keyrings" {
	mkdir "$MNT/session/ring"
	assert_equal "$(nlink "$MNT/session/ring")" 2
	mkdir "$MNT/session/ring/a" "$MNT/session/ring/b"
	echo x >"$MNT/session/ring/k"
	assert_equal "$(nlink "$MNT/session/ring")" 4
	rmdir "$MNT/session/ring/a"
	assert_equal "$(nlink "$MNT/session/ring")" 3
}

@test "a key linked into two keyrings (ln) is one inode with st_nlink 2" {
	mkdir "$MNT/session/a" "$MNT/session/b"
	echo shared >"$MNT/session/a/k"
	assert_equal "$(nlink "$MNT/session/a/k")" 1
	ln "$MNT/session/a/k" "$MNT/session/b/k"
	assert_equal "$(ino "$MNT/session/b/k")" "$(ino "$MNT/session/a/k")"
	assert_equal "$(nlink "$MNT/session/a/k")" 2
	assert_equal "$(nlink "$MNT/session/b/k")" 2
	assert_equal "$(cat "$MNT/session/b/k")" shared
	if [[ $KEYFS_BACKEND == kernel ]]; then
		klinks "$(ino "$MNT/session/b")" "$(ino "$MNT/session/a/k")"
	fi
}

@test "a write through one link shows through the other" {
	mkdir "$MNT/session/a" "$MNT/session/b"
	echo one >"$MNT/session/a/k"
	ln "$MNT/session/a/k" "$MNT/session/b/k"
	echo two >"$MNT/session/b/k"
	assert_equal "$(cat "$MNT/session/a/k")" two
}

@test "rm of one link leaves the key in the other keyring" {
	mkdir "$MNT/session/a" "$MNT/session/b"
	echo shared >"$MNT/session/a/k"
	ln "$MNT/session/a/k" "$MNT/session/b/k"
	rm "$MNT/session/a/k"
	[ ! -e "$MNT/session/a/k" ]
	assert_equal "$(cat "$MNT/session/b/k")" shared
	assert_equal "$(nlink "$MNT/session/b/k")" 1
}

@test "ln with another name is EINVAL" {
	mkdir "$MNT/session/a" "$MNT/session/b"
	echo x >"$MNT/session/a/k"
	run kerrno link "$MNT/session/a/k" "$MNT/session/b/other"
	assert_output EINVAL
	run kerrno link "$MNT/session/a/k" "$MNT/session/a/other"
	assert_output EINVAL
	run ls -A "$MNT/session/b"
	assert_output ""
}

@test "ln of a key under its %TYPE:NAME name works" {
	mkdir "$MNT/session/a" "$MNT/session/b"
	echo x >"$MNT/session/a/k"
	ln "$MNT/session/a/k" "$MNT/session/b/%user:k"
	assert_equal "$(ino "$MNT/session/b/k")" "$(ino "$MNT/session/a/k")"
}

@test "ln onto an existing name is EEXIST and keeps that key" {
	mkdir "$MNT/session/a" "$MNT/session/b"
	echo new >"$MNT/session/a/k"
	echo old >"$MNT/session/b/k"
	run kerrno link "$MNT/session/a/k" "$MNT/session/b/k"
	assert_output EEXIST
	assert_equal "$(cat "$MNT/session/b/k")" old
}

@test "readdir of a key is ENOTDIR" {
	echo x >"$MNT/session/k"
	run kerrno listdir "$MNT/session/k"
	assert_output ENOTDIR
	run kerrno open "$MNT/session/k" rd
	assert_output ENOTDIR
}

@test "ls -la of a keyring with 100 keys lists them all" {
	local i
	mkdir "$MNT/session/many"
	for ((i = 0; i < 100; i++)); do
		echo "$i" >"$MNT/session/many/key$i"
	done
	run bash -c 'ls -A "$MNT/session/many" | wc -l'
	assert_output 100
	run bash -c 'ls -la "$MNT/session/many" | grep -c " key[0-9]*$"'
	assert_output 100
	assert_equal "$(cat "$MNT/session/many/key42")" 42
	if [[ $KEYFS_BACKEND == kernel ]]; then
		run bash -c 'keyctl rlist "$(stat -c %i "$MNT/session/many")" | wc -w'
		assert_output 100
	fi
}

@test "mv of a keyring into another keyring moves it" {
	mkdir "$MNT/session/src" "$MNT/session/dst"
	echo x >"$MNT/session/src/k"
	local s
	s=$(ino "$MNT/session/src")
	mv "$MNT/session/src" "$MNT/session/dst/src"
	[ ! -e "$MNT/session/src" ]
	assert_equal "$(ino "$MNT/session/dst/src")" "$s"
	assert_equal "$(cat "$MNT/session/dst/src/k")" x
	assert_equal "$(nlink "$MNT/session/dst")" 3
	if [[ $KEYFS_BACKEND == kernel ]]; then
		klinks "$(ino "$MNT/session/dst")" "$s"
		run klinks @s "$s"
		assert_failure
	fi
}

@test "mv of a keyring into its own child is refused" {
	mkdir -p "$MNT/session/top/child"
	run kerrno rename "$MNT/session/top" "$MNT/session/top/child/top"
	refute_output OK
	[ -d "$MNT/session/top/child" ]
}

@test "kernel: a keyring made by keyctl newring is listed as a directory" {
	skip_unless_kernel
	local r
	r=$(keyctl newring kring @s)
	keyctl add user inside v "$r" >/dev/null
	eventually ls_has "$MNT/session" kring
	[ -d "$MNT/session/kring" ]
	assert_equal "$(ino "$MNT/session/kring")" "$r"
	assert_equal "$(cat "$MNT/session/kring/inside")" v
}

@test "kernel: keyctl link shows the key in the second keyring" {
	skip_unless_kernel
	mkdir "$MNT/session/a" "$MNT/session/b"
	echo x >"$MNT/session/a/k"
	keyctl link "$(ino "$MNT/session/a/k")" "$(ino "$MNT/session/b")"
	eventually ls_has "$MNT/session/b" k
	assert_equal "$(ino "$MNT/session/b/k")" "$(ino "$MNT/session/a/k")"
}

@test "kernel: keyctl clear empties the directory" {
	skip_unless_kernel
	mkdir "$MNT/session/ring"
	echo x >"$MNT/session/ring/k1"
	echo y >"$MNT/session/ring/k2"
	keyctl clear "$(ino "$MNT/session/ring")"
	eventually output_is "" ls -A "$MNT/session/ring"
}
