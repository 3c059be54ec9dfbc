#!/bin/sh
# request-key.sh: request a key through keyfs's .keyfs/request and print where it landed.
#
# Writes "TYPE DESCRIPTION CALLOUT-INFO KEYRING" to MOUNTPOINT/.keyfs/request:
# the key is searched for in keyfs's keyrings and, when it is not there,
# made by the callout (the kernel's request-key(8), or the memory
# backend's request_key= program, such as request-key-helper.sh).  The
# key is linked into KEYRING (a path relative to the mount, default
# session) and its path is printed; the payload is not.
#
#   cat "$(request-key.sh /run/keys user db-password app=web)"
set -eu

prog=${0##*/}

usage()
{
	echo "usage: $prog MOUNTPOINT TYPE DESCRIPTION [CALLOUT-INFO [KEYRING]]" >&2
	exit 2
}

die()
{
	echo "$prog: $*" >&2
	exit 1
}

# A control-file field: % and spaces escaped (keyfs(1), CONTROL FILES).
field()
{
	printf '%s' "$1" | sed -e 's/%/%25/g' -e 's/ /%20/g'
}

# A path field: already made of entry names, so only spaces are escaped.
path_field()
{
	printf '%s' "$1" | sed -e 's/ /%20/g'
}

# An entry name: % and / escaped (keyfs(1), NAMES).
entry()
{
	printf '%s' "$1" | sed -e 's/%/%25/g' -e 's|/|%2F|g'
}

if [ $# -lt 3 ] || [ $# -gt 5 ]; then
	usage
fi
mnt=$1
type=$2
desc=$3
info=${4:--}
ring=${5:-session}
[ -d "$mnt/.keyfs" ] || die "$mnt: not a keyfs mount"
[ -d "$mnt/$ring" ] || die "$mnt/$ring: no such keyring"
case $desc in
*'
'*) die "a description cannot hold a newline here" ;;
esac

cmd="$(field "$type") $(field "$desc") $(field "$info") $(path_field "$ring")"
# One command, one write(2): printf's output is short enough for that;
# cat reports the command's error, which comes with the write.
printf '%s\n' "$cmd" | cat > "$mnt/.keyfs/request"

name=$(entry "$desc")
case $type in
user | keyring) ;;
*) name="%$type:$name" ;;
esac
echo "$mnt/$ring/$name"
