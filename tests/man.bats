#!/usr/bin/env bats
# man.bats: the manual pages render without a warning and document every option, control file and attribute.

load lib/keyfs

SRCDIR=${KEYFS_SRCDIR:-$BATS_TEST_DIRNAME/..}
PAGES="man/keyfs.1 man/keyfs-store.5"

page()
{
	[[ -f $SRCDIR/$1 ]] || skip "$1 is not written yet"
	PAGE=$SRCDIR/$1
}

need()
{
	command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed${2:+ (Debian: $2)}"
}

@test "keyfs.1 renders with groff -ww without a warning" {
	need groff groff-base
	page man/keyfs.1
	run groff -ww -z -man "$PAGE"
	assert_success
	assert_output ""
}

@test "keyfs-store.5 renders with groff -ww without a warning" {
	need groff groff-base
	page man/keyfs-store.5
	run groff -ww -z -man "$PAGE"
	assert_success
	assert_output ""
}

# man(1) formats for a terminal, where lines can fail to break.  Only its
# warnings (standard error) are wanted.
# shellcheck disable=SC2069
man_warnings()
{
	MANWIDTH=$2 MANPAGER=cat PAGER=cat man -l "$1" 2>&1 >/dev/null
}

@test "man -l shows both pages without a warning, at 80 and 60 columns" {
	need man man-db
	local p

	for p in $PAGES; do
		[[ -f $SRCDIR/$p ]] || continue
		run man_warnings "$SRCDIR/$p" 80
		assert_output ""
		run man_warnings "$SRCDIR/$p" 60
		assert_output ""
	done
}

@test "mandoc -T lint finds nothing above style level in either page" {
	need mandoc mandoc
	local p

	for p in $PAGES; do
		[[ -f $SRCDIR/$p ]] || continue
		run mandoc -T lint -W warning "$SRCDIR/$p"
		assert_output ""
	done
}

# The text of keyfs.1 as a reader sees it (man-db drops the overstrikes
# when its output is not a terminal).
page_text()
{
	MANWIDTH=200 MANPAGER=cat PAGER=cat man -l "$SRCDIR/man/keyfs.1" 2>/dev/null
}

@test "keyfs.1 documents every option of the option table" {
	need man man-db
	page man/keyfs.1
	local text opt opts

	text=$(page_text)
	opts=$(sed -n 's/^[[:space:]]*{ "\([a-z_]*\)=%[a-z]*".*/\1/p' "$SRCDIR/src/opts.c")
	[[ -n $opts ]] || fail "no options found in src/opts.c"
	for opt in $opts; do
		grep -qF -- "$opt=" <<<"$text" || fail "keyfs.1 does not document $opt="
	done
}

@test "keyfs.1 documents every control file and extended attribute" {
	need man man-db
	page man/keyfs.1
	local text name names

	text=$(page_text)
	names=$(sed -n 's/^[[:space:]]*\[CTLF_[A-Z_]*\] = { "\([a-z-]*\)", [a-z]* },$/\1/p' "$SRCDIR/src/fuse/ctlfiles.c")
	[[ -n $names ]] || fail "no control files found in src/fuse/ctlfiles.c"
	for name in $names; do
		grep -qE -- "^ +$name( |$)" <<<"$text" ||
			fail "keyfs.1 has no entry for .keyfs/$name"
	done
	names=$(sed -n 's/.*XATTR_PREFIX "\([a-z]*\)".*/\1/p' "$SRCDIR/src/fuse/xattr.c")
	[[ -n $names ]] || fail "no attributes found in src/fuse/xattr.c"
	for name in $names; do
		grep -qE -- "^ +user\.keyfs\.$name$" <<<"$text" ||
			fail "keyfs.1 has no entry for user.keyfs.$name"
	done
}

@test "keyfs.1 has the sections a manual page needs" {
	need man man-db
	page man/keyfs.1
	local text s

	text=$(page_text)
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS "THE TREE" NAMES \
		 "FILES AND DIRECTORIES" PERMISSIONS "EXTENDED ATTRIBUTES" \
		 "CONTROL FILES" BACKENDS EXAMPLES "EXIT STATUS" ERRORS FILES \
		 "SEE ALSO"; do
		grep -qx -- "$s" <<<"$text" || fail "keyfs.1 has no $s section"
	done
}
