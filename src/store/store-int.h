/* store-int.h: what the store's own files share (error lines, the image check, wiped buffers, file I/O); not for its users. */
#ifndef KEYFS_STORE_INT_H
#define KEYFS_STORE_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* ---- report.c: the one line that says what is wrong with a store ---- */

/* Where an error is, for the one line that reports it. */
struct store_ctx {
	const char *path;
	char *err;		/* may be NULL: save checks without reporting */
	size_t errlen;
	char where[48];		/* "key 12: ", "keys[3]: " or "" */
};

void store_where_key(struct store_ctx *c, kserial_t serial);
void store_where_index(struct store_ctx *c, size_t i);
/* Report a content error ("keyfs: PATH: WHERE..." ) and return -EINVAL. */
__attribute__((format(printf, 2, 3)))
int store_fail(struct store_ctx *c, const char *fmt, ...);
/* Report err (a -errno) with what was being done, and return it. */
int store_fail_errno(struct store_ctx *c, const char *what, int err);

/* ---- image.c: what every image read or written must be ---- */

/* The special keyrings the file names, in the file's order. */
#define STORE_NSPECIALS	4
extern const char *const store_special_names[STORE_NSPECIALS];

/* The serial of special keyring i (as store_special_names) in img. */
kserial_t store_special_get(const struct store_image *img, size_t i);

/* Strict UTF-8, as JSON strings must be: no overlong forms, no surrogates,
 * nothing past U+10FFFF. */
bool store_utf8_valid(const char *s, size_t len);

/* Everything load promises about an image: serials positive, unique and
 * below next_serial; each key within the kernel's limits; links to keys
 * that are there, each (type, description) once per keyring; special
 * keyrings that are keyrings; no cycle of keyrings.  0, -EINVAL said in c,
 * or -ENOMEM.  Load runs it on what it read, save on what it will write,
 * so no file keyfs writes is one it would refuse to read. */
int store_image_check(struct store_ctx *c, const struct store_image *img);

/* ---- file.c: the bytes of a store's files ---- */

/* A growable byte buffer for a file's text; it holds payloads in base64,
 * so every block it lets go of is wiped first. */
struct store_buf {
	char *p;
	size_t len, cap;
};

void store_buf_free(struct store_buf *b);
int store_buf_reserve(struct store_buf *b, size_t more);
int store_buf_append(struct store_buf *b, const char *s, size_t n);

/* Read the whole of c->path into b; a missing file is -ENOENT without a
 * message, anything else that fails is said in c. */
int store_file_read(struct store_ctx *c, struct store_buf *b);

/* Put b's bytes at path atomically: a temporary file beside it created
 * with O_EXCL and mode 0600, fsync, rename, fsync of the directory.  On
 * failure the old file is left as it was and -errno is returned. */
int store_file_write(const char *path, const struct store_buf *b);

/* ---- json-read.c ---- */

/* store_json_init (json-alloc.h): every jansson user calls it first. */
#include "json-alloc.h"

/* A file's text into img, without store_image_check (a journal may still
 * be replayed on it): 0, or -errno said in c. */
int store_json_parse(struct store_ctx *c, const char *text, size_t len,
		     struct store_image *img);
/* One key object (keyfs-store(5)) into k: 0, or -errno said in c. */
int store_key_json_decode(struct store_ctx *c, const char *text, size_t len,
			  struct store_key *k);

/* ---- json-write.c ---- */

/* img, checked, as the snapshot's text appended to b. */
int store_json_dump(const struct store_image *img, struct store_buf *b);
/* One key as one line of compact JSON, NUL-terminated, appended to b
 * (b->len counts the NUL). */
int store_key_json_encode(const struct store_key *k, struct store_buf *b);

/* image.c: store_key_free and store_key_same_but_links are in store.h. */

/* ---- persist.c, record.c: the open store ---- */

struct journal;

struct store_file {
	char *path;			/* the snapshot */
	char *jpath;			/* the journal */
	const struct crypto_key *key;	/* NULL: plain */
	struct journal_codec *codec;	/* NULL: plain */
	struct journal *journal;	/* NULL: cannot be written, see jerr */
	int jerr;			/* why the journal could not be opened */
	uint64_t snapshot_bytes;	/* the snapshot's size, for compaction */
	unsigned long pending;		/* records since the snapshot */
};

/* Write img as the snapshot (sealed with sf->key), atomically; its size
 * goes to sf->snapshot_bytes. */
int store_snapshot_write(struct store_file *sf, const struct store_image *img);

#endif
