#!/bin/sh
# share-key.sh: share a key with another keyring by linking it there (keyctl link).
#
# KEY and KEYRING are paths relative to the mount.  The key is linked, not
# copied: both keyrings hold the same key (one serial, one inode), so an
# update, a revocation or an expiry reaches both at once, and unlinking it
# from one keyring leaves it in the other.  Whoever can search KEYRING can
# then find the key, within what the key's own permission grants.
#
#   share-key.sh /run/keys session/api-token user
#   share-key.sh /run/keys session/api-token session/team
set -eu

prog=${0##*/}

usage()
{
	echo "usage: $prog MOUNTPOINT KEY KEYRING" >&2
	exit 2
}

die()
{
	echo "$prog: $*" >&2
	exit 1
}

[ $# -eq 3 ] || usage
mnt=$1
key=$mnt/$2
ring=$mnt/$3
[ -d "$mnt" ] || die "$mnt: not a directory"
[ -f "$key" ] || die "$key: no such key"
[ -d "$ring" ] || die "$ring: no such keyring"

# A key keeps its own name in every keyring, so the link has the key's name.
name=${key##*/}
ln "$key" "$ring/$name"
serial=$(getfattr --absolute-names --only-values -n user.keyfs.serial "$ring/$name")
echo "key $serial is now linked in $3 as $name"
