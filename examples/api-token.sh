#!/bin/sh
# api-token.sh: keep an API token in keyfs with an expiry, and call an HTTP API with it.
#
# put:  the token is read from standard input (trailing newlines dropped)
#       and kept as the key NAME, a path relative to the mount, such as
#       session/api-token; it expires SECONDS from now (default 3600).
# call: curl URL with "Authorization: Bearer TOKEN".  The header goes to
#       curl on a pipe (-H @-), never on a command line, where every user
#       could read it in /proc.
#
#   api-token.sh put /run/keys session/api-token < token.txt
#   api-token.sh call /run/keys session/api-token https://api.example/v1/me
set -eu

prog=${0##*/}

usage()
{
	echo "usage: $prog put MOUNTPOINT NAME [SECONDS] < TOKEN" >&2
	echo "       $prog call MOUNTPOINT NAME URL [CURL-OPTION...]" >&2
	exit 2
}

die()
{
	echo "$prog: $*" >&2
	exit 1
}

put()
{
	key=$1/$2
	secs=${3:-3600}
	case $secs in
	'' | *[!0-9]*) die "SECONDS must be a number of seconds" ;;
	esac
	token=$(cat)
	[ -n "$token" ] || die "no token on standard input"
	# cat, not a shell redirection alone: keyfs reports a failed commit
	# at close(2), which cat checks and the shell does not.
	# umask 077: the mode sets the key's permission; the token is the
	# owner's alone whatever the caller's umask.
	(umask 077 && printf '%s' "$token" | cat > "$key")
	# A token that cannot be given its expiry is not kept at all.
	if ! setfattr -n user.keyfs.expiry -v "+$secs" "$key"; then
		rm -f "$key"
		die "$key: cannot set the expiry; the token was removed"
	fi
}

call()
{
	key=$1/$2
	url=$3
	shift 3
	# Read before curl starts: an expired or revoked token stops here,
	# with the key's error (EKEYEXPIRED, EKEYREVOKED).
	token=$(cat "$key")
	[ -n "$token" ] || die "$key: empty token"
	printf 'Authorization: Bearer %s\n' "$token" |
		curl --fail --silent --show-error -H @- "$@" --url "$url"
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
put)
	[ $# -eq 2 ] || [ $# -eq 3 ] || usage
	[ -d "$1" ] || die "$1: not a directory"
	put "$@"
	;;
call)
	[ $# -ge 3 ] || usage
	[ -d "$1" ] || die "$1: not a directory"
	call "$@"
	;;
*)
	usage
	;;
esac
