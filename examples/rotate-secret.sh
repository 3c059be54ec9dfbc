#!/bin/sh
# rotate-secret.sh: replace a secret in keyfs atomically, by write and rename.
#
# The new secret is read from standard input (as it is: no newline is
# added or dropped) and written to a temporary key in the same keyring,
# which is then renamed over NAME.  In keyfs a rename in one keyring gives
# the payload to the target key in one update, so readers see the old
# secret or the new one, never a mix; the key keeps its serial, its
# permission and its expiry, and everything linking it sees the change.
# A logon key's payload cannot be read back, so keyfs cannot hand it from
# one key to another: a logon key is overwritten in place instead, which
# keyfs also commits as one update when the file is closed.
#
#   rotate-secret.sh /run/keys session/db-password < new-password
set -eu

prog=${0##*/}

usage()
{
	echo "usage: $prog MOUNTPOINT NAME < NEW-SECRET" >&2
	exit 2
}

die()
{
	echo "$prog: $*" >&2
	exit 1
}

[ $# -eq 2 ] || usage
mnt=$1
name=$2
[ -d "$mnt" ] || die "$mnt: not a directory"
case $name in
'' | */ | /*) die "NAME is a key's path relative to $mnt" ;;
esac

target=$mnt/$name
dir=${target%/*}
base=${target##*/}
[ -d "$dir" ] || die "$dir: no such keyring"

# The temporary key must be of the target's type, so a %TYPE:NAME keeps
# its prefix: %big_key:db rotates through %big_key:.db.rotate.PID.
case $base in
%[A-Za-z_]*:*)
	prefix=${base%%:*}:
	desc=${base#*:}
	;;
*)
	prefix=
	desc=$base
	;;
esac
if [ -e "$target" ]; then
	type=$(getfattr --absolute-names --only-values -n user.keyfs.type "$target")
else
	type=${prefix#%}
	type=${type%:}
fi

# cat, not a shell redirection alone: keyfs reports a failed commit at
# close(2), which cat checks and the shell does not.
if [ "$type" = logon ]; then
	cat > "$target"
	exit 0
fi

tmp=$dir/$prefix.$desc.rotate.$$
trap 'rm -f "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
cat > "$tmp"
# A key with nothing written is still pending (see keyfs(1)).
state=$(getfattr --absolute-names --only-values -n user.keyfs.state "$tmp")
[ "$state" = valid ] || die "no secret on standard input"
mv -f "$tmp" "$target"
trap - EXIT
