#!/bin/sh
# request-key-helper.sh: a request_key= callout for keyfs's memory backend, serving secrets from files.
#
# keyfs runs it as PROGRAM TYPE DESCRIPTION CALLOUT-INFO UID GID when a
# request (.keyfs/request) finds no key; what it prints on standard output
# becomes the key's payload, and a failure makes the key negative.
#
# The secret for DESCRIPTION is the file $KEYFS_SECRETS_DIR/DESCRIPTION
# (default directory /etc/keyfs/secrets).  keyfs runs the callout with its
# own rights while anyone allowed to write .keyfs/request chooses the
# arguments, so the helper trusts none of them: the description must be a
# plain file name, the file must be a regular file owned by the requesting
# UID and closed to group and others.  CALLOUT-INFO is the requester's
# free text; this helper only requires it to be there.  Types: user, logon.
#
#   keyfs memory /run/keys -o request_key=/usr/local/libexec/keyfs/request-key-helper.sh
#   install -m 600 -o alice db-password /etc/keyfs/secrets/db-password
#   echo 'user db-password app=web' > /run/keys/.keyfs/request   (as alice)
set -eu

prog=${0##*/}

usage()
{
	echo "usage: $prog TYPE DESCRIPTION CALLOUT-INFO UID GID" >&2
	echo "(run by keyfs: mount with -o request_key=$0)" >&2
	exit 2
}

refuse()
{
	echo "$prog: $*" >&2
	exit 1
}

[ $# -eq 5 ] || usage
type=$1
desc=$2
info=$3
uid=$4
dir=${KEYFS_SECRETS_DIR:-/etc/keyfs/secrets}

case $type in
user | logon) ;;
*) refuse "type $type is not served" ;;
esac
case $desc in
'' | .* | */*) refuse "description is not a plain file name" ;;
esac
[ -n "$info" ] || refuse "no callout information"
case $uid in
'' | *[!0-9]*) refuse "UID is not a number" ;;
esac

file=$dir/$desc
if [ ! -f "$file" ] || [ -L "$file" ]; then
	refuse "no secret for this description"
fi
[ "$(stat -c %u -- "$file")" = "$uid" ] ||
	refuse "the secret is not owned by the requester"
[ -z "$(find "$file" -prune -perm /077)" ] ||
	refuse "the secret is open to group or others"
[ -s "$file" ] || refuse "the secret is empty"
exec cat -- "$file"
