/* storekey.h: the store's key from -o store_key=SPEC, with kernel keys read through libkeyutils (for keyfs and keyfs-store). */
#ifndef KEYFS_STOREKEY_H
#define KEYFS_STOREKEY_H

#include <stddef.h>

struct crypto_key;

/* crypto_read_kernel_key_fn (crypto.h) on the caller's own keyrings:
 * request_key(2) without a callout (thread, process, session keyrings),
 * then the user keyring; keyctl_read for the payload.  A logon key is
 * found but cannot be read (-EOPNOTSUPP): the kernel gives no program its
 * payload. */
int storekey_read_kernel(const char *type, const char *desc, void *buf, size_t *len);

/* Load spec for the calling user: 0 and *keyp, or -errno after printing
 * one line on stderr, prefixed by what (e.g. "store_key"). */
int storekey_load(const char *what, const char *spec, struct crypto_key **keyp);

#endif
