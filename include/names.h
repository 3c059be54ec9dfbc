/* names.h: a key's type and description <-> the entry name a directory shows. */
#ifndef KEYFS_NAMES_H
#define KEYFS_NAMES_H

#include "keyfs.h"

/*
 * An entry name is the description with '%' written %25 and '/' written
 * %2F, and a description "." or ".." written %2E, %2E%2E.  Keys of types
 * other than user and keyring are named %TYPE:NAME, as keyctl writes them;
 * so is a keyring that shares its description with a user key in the same
 * keyring.  Unescaping accepts any %XX, so "%20" names a space too.
 */

/* The escaped description; -ENAMETOOLONG if it needs more than outlen - 1
 * bytes (out is KEYFS_NAME_MAX + 1 for an entry name). */
int name_escape(const char *desc, char *out, size_t outlen);

/* Undo %XX escapes.  -EINVAL for a malformed escape or one that makes a
 * NUL byte; -ENAMETOOLONG if the result does not fit. */
int name_unescape(const char *name, char *out, size_t outlen);

/* The name a key is listed under.  typed forces the %TYPE:NAME form (the
 * keyring that shares a user key's description). */
int name_for_key(const char *type, const char *desc, bool typed,
		 char *out, size_t outlen);

/* Split an entry name: "%TYPE:NAME" gives that type (typed = true); a
 * plain name gives type "" (typed = false).  desc is unescaped; type is
 * KEYFS_TYPE_MAX + 1 bytes, desc KEYFS_DESC_MAX + 1.  -EINVAL for a
 * malformed name, -ENAMETOOLONG for one over KEYFS_NAME_MAX. */
int name_parse(const char *name, char *type, char *desc, bool *typed);

/* A key the caller may not view (the kernel describes it to no one
 * without view) is listed as "%#SERIAL", a name no key can have: it has
 * neither a %XX escape nor the %TYPE:NAME form, so name_parse refuses it.
 * name_of_serial writes it; name_serial reads it back (-EINVAL for any
 * other name).  It names that key in lookup and removal only. */
int name_of_serial(kserial_t serial, char *out, size_t outlen);
int name_serial(const char *name, kserial_t *out);

#endif
