/* crypto.h: encryption at rest for the store: the key, sealing the snapshot and journal lines (libsodium XChaCha20-Poly1305). */
#ifndef KEYFS_CRYPTO_H
#define KEYFS_CRYPTO_H

#include <stddef.h>
#include <sys/types.h>

#define CRYPTO_KEY_BYTES	32

/* The magic first line of a sealed snapshot. */
#define CRYPTO_MAGIC		"keyfs encrypted store v1"

/* A store key, in sodium_malloc'd memory (guarded, kept out of swap and
 * core dumps), wiped by crypto_key_free.  Opaque: it is never printed. */
struct crypto_key;

/* Reads a kernel key of type ("user" or "logon") and description desc
 * from the mounter's keyrings into buf (*len bytes of room; *len is set to
 * the payload's size).  0 or -errno (-ENOKEY: no such key).  Provided by
 * the caller, so that this module does not use libkeyutils. */
typedef int (*crypto_read_kernel_key_fn)(const char *type, const char *desc,
					 void *buf, size_t *len);

/* Load the key spec names (-o store_key=SPEC):
 *   file:PATH   a file of exactly 32 bytes, regular, owned by uid, mode
 *               0600 or 0400 (not a symbolic link)
 *   cred:NAME   $CREDENTIALS_DIRECTORY/NAME (systemd), the same checks
 *   %user:DESC, %logon:DESC   a kernel key of 32 bytes, through rk
 * 0 and *keyp, or -errno with one line in err (never the key):
 * -EINVAL a bad spec, -EPERM a file others could read or that is not
 * uid's, -EBADMSG not 32 bytes, -ENOKEY missing, -errno of the read. */
int crypto_key_load(const char *spec, uid_t uid, crypto_read_kernel_key_fn rk,
		    struct crypto_key **keyp, char *err, size_t errlen);

/* A key from 32 bytes (tests, key rotation); the caller wipes its copy. */
int crypto_key_from_bytes(const void *bytes, size_t len, struct crypto_key **keyp);

/* Wipe and free; NULL is nothing. */
void crypto_key_free(struct crypto_key *key);

/*
 * A sealed snapshot is text, three lines:
 *
 *   keyfs encrypted store v1
 *   check BASE64(check value, 32 bytes || BLAKE2b-8 of it)
 *   BASE64(nonce, 24 bytes || XChaCha20-Poly1305 of the plain file)
 *
 * The check value is a MAC of a constant under a subkey of the store key:
 * another key gives another value ("wrong key"), without trying to open
 * anything.  The unkeyed 8-byte checksum beside it tells a damaged check
 * value ("corrupt") from another key's.  The first two lines are the
 * associated data of the seal, so no byte of the file can change unseen.
 * Sealing uses a subkey of its own; a fresh random nonce each time.
 */

/* Seal len bytes of plain into a malloc'd file image (*out, *outlen). */
int crypto_seal_file(const struct crypto_key *key, const void *plain, size_t len,
		     char **out, size_t *outlen);

/* Open a file image made by crypto_seal_file into a malloc'd buffer (to
 * wipe and free), NUL-terminated beyond *outlen.  Errors, each with its
 * line in err (what is named is the caller's to prefix with the path):
 *   -ENOMSG       not an encrypted store (no magic line)
 *   -EKEYREJECTED "wrong key"
 *   -ENODATA      "truncated"
 *   -EBADMSG      "corrupt" (a changed byte anywhere else) */
int crypto_open_file(const struct crypto_key *key, const char *in, size_t len,
		     void **out, size_t *outlen, char *err, size_t errlen);

/* Does this file image start like a sealed store? */
int crypto_is_sealed(const char *in, size_t len);

/* A journal line: BASE64(nonce || XChaCha20-Poly1305 of the record), with
 * associated data naming the use, so a sealed line cannot be passed off
 * as a snapshot and back.  These match struct journal_codec's slots, with
 * the key as arg. */
int crypto_seal_record(void *key, const void *in, size_t len, char **out, size_t *outlen);
int crypto_open_record(void *key, const char *in, size_t len, void **out, size_t *outlen);
/* The check value as text (malloc'd), and its test: 0, -EKEYREJECTED
 * (another key), -EBADMSG (damaged). */
int crypto_check_make(void *key, char **out);
int crypto_check_verify(void *key, const char *text);

#endif
