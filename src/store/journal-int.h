/* journal-int.h: what journal.c and journal-record.c share: the line buffer and record decoding. */
#ifndef KEYFS_JOURNAL_INT_H
#define KEYFS_JOURNAL_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "journal.h"

#define JOURNAL_VERSION		1
#define JOURNAL_LINE_MAX	((size_t)64 << 20)	/* a 1 MiB payload in base64,
							 * sealed, with room */

/* A growable text buffer, NUL-terminated, wiped when it grows or is freed;
 * the owner frees it with buf_free. */
struct buf {
	char *p;
	size_t len, cap;
};

int buf_grow(struct buf *b, const void *s, size_t n, size_t max);
/* Append n bytes, within JOURNAL_LINE_MAX. */
int buf_add(struct buf *b, const void *s, size_t n);
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);

/* rec as its JSON line, without the '\n', appended to b. */
int journal_encode_record(struct buf *b, const struct journal_record *rec);

/* A parsed record line: check it (seq must follow last_seq, unless 0),
 * decode it and hand it to cb; *seq_out gets its seq on success.  lineerr
 * gets the reason, without the file name. */
int journal_apply_record(json_t *root, uint64_t last_seq, uint64_t *seq_out,
			 journal_record_cb cb, void *arg,
			 char *lineerr, size_t errlen);

#endif
