/* journal.h: the store's append-only journal of changes, one JSON record a line, beside the snapshot. */
#ifndef KEYFS_JOURNAL_H
#define KEYFS_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "keyfs.h"

/*
 * The file.  Its first line is a header, {"keyfs_journal":1} (with
 * "check":"..." when the lines are sealed, see struct journal_codec).
 * Every further line is one record: one change of the store, complete, as
 * one JSON object ended by '\n':
 *
 *   {"seq":7,"next_serial":12,"ops":[OP,...]}
 *
 * seq goes up by exactly one from line to line (a missing or repeated line
 * is corruption, not a crash); next_serial is optional.  An OP is one of
 *
 *   {"put":KEY}                  key KEY.serial is now exactly KEY: the key
 *                                object of keyfs-store(5), links included
 *                                for a keyring
 *   {"del":S}                    key S is gone, and so is every link to it
 *   {"link":[R,K]}               keyring R links K: K is appended, unless R
 *                                links it already
 *   {"link":[R,K,OLD]}           the same, but K takes OLD's place in R's
 *                                list and OLD is unlinked (the kernel's
 *                                displacement of a key with the same type
 *                                and description)
 *   {"unlink":[R,K]}             keyring R no longer links K
 *   {"special":{"session":S,...}}  special keyrings, with the names and
 *                                meaning of the snapshot's top-level fields
 *
 * Why these records.  Each states what IS after the change, never a
 * difference to compute from what was: put, del and special are
 * assignments, and link/unlink are "is linked"/"is not linked", so every op
 * is idempotent, and replaying a whole sequence on a store that already
 * holds its effect changes nothing.  That makes compaction safe without
 * tying the journal to a snapshot generation: a crash after the new
 * snapshot is renamed in but before the journal is reset replays records
 * the snapshot already holds, harmlessly.  The record of a whole key
 * covers every change of a key's fields (payload, perm, owner, expiry,
 * state, restriction, times) with one op whose parser is the snapshot's
 * own; link/unlink exist only so that linking one key into a keyring of
 * 100,000 does not write 100,000 serials.  One line is one change, however
 * many ops it has (a create is a put, a link and a next_serial), so a torn
 * append loses the whole change, never half of it.
 */

/* One op of a record, as journal_replay hands it out and
 * journal_record_encode takes it. */
enum journal_op_kind {
	JOURNAL_PUT,		/* key_json: the key object, compact JSON */
	JOURNAL_DEL,		/* serial */
	JOURNAL_LINK,		/* keyring, serial, replace (0: append) */
	JOURNAL_UNLINK,		/* keyring, serial */
	JOURNAL_SPECIAL,	/* special[], has_special[] */
};

enum journal_special { JOURNAL_SESSION, JOURNAL_USER, JOURNAL_USER_SESSION,
		       JOURNAL_PERSISTENT, JOURNAL_NSPECIAL };

struct journal_op {
	enum journal_op_kind kind;
	kserial_t serial;
	kserial_t keyring;
	kserial_t replace;
	const char *key_json;	/* PUT: NUL-terminated, one line; may hold a
				 * payload: the journal wipes its copies */
	size_t key_len;
	kserial_t special[JOURNAL_NSPECIAL];
	bool has_special[JOURNAL_NSPECIAL];
};

struct journal_record {
	uint64_t seq;		/* set by journal_append; ignored on input */
	kserial_t next_serial;	/* 0: unchanged */
	const struct journal_op *ops;
	size_t nops;
};

/* Sealing each line (encryption at rest; crypto.h provides these).  All
 * optional together: a NULL codec is a plain journal.  seal and open
 * return a malloc'd buffer the journal wipes and frees; open returns
 * -EBADMSG for a line that does not authenticate.  check_make gives the
 * header's key check value (text, malloc'd), check_verify says 0, or
 * -EKEYREJECTED for another key, or -EBADMSG for a damaged value. */
struct journal_codec {
	int (*seal)(void *arg, const void *in, size_t len, char **out, size_t *outlen);
	int (*open)(void *arg, const char *in, size_t len, void **out, size_t *outlen);
	int (*check_make)(void *arg, char **out);
	int (*check_verify)(void *arg, const char *text);
	void *arg;
};

/* What journal_replay found, for journal_open to carry on from. */
struct journal_state {
	off_t valid_end;	/* bytes of whole, valid lines */
	off_t file_size;	/* bytes in the file; more: a torn tail */
	uint64_t last_seq;	/* 0: no record */
	bool has_header;
};

struct journal;

/* Called once per record, in order; return 0 or -errno with one line in
 * err (without the file name: the journal adds file and line). */
typedef int (*journal_record_cb)(void *arg, const struct journal_record *rec,
				 char *err, size_t errlen);

/* Read the journal at path and call cb for each record.  A missing file is
 * an empty journal (0).  A torn last line (no '\n', or, unsealed, a last
 * line that is not JSON: a crash in the middle of an append) is dropped:
 * 0, and warn holds one line naming the file and the byte offset where the
 * torn record starts (warn[0] is '\0' otherwise).  Anything else that is
 * wrong (a bad line that is not the last, a gap in seq, an unknown op, a
 * sealed line that does not authenticate) is -EINVAL (-EKEYREJECTED for a
 * wrong key) with one line in err naming the file and line.  The file is
 * only read.  st (may be NULL) says where journal_open carries on. */
int journal_replay(const char *path, const struct journal_codec *codec,
		   journal_record_cb cb, void *arg, struct journal_state *st,
		   char *warn, size_t warnlen, char *err, size_t errlen);

/* Open path for appending (O_APPEND, created 0600), carrying on from st as
 * journal_replay left it (NULL: the file must be missing or empty).  A torn
 * tail is cut off first, so the next record starts on a line of its own;
 * a missing header is written.  codec is kept (not copied); it must
 * outlive the journal.  *jp is freed by journal_close. */
int journal_open(const char *path, const struct journal_codec *codec,
		 const struct journal_state *st, struct journal **jp);

/* Encode rec as the next record, append it in one write(2) and fsync(2).
 * Returns once the record is on disk (0), or -errno; on failure the file is
 * cut back to where it was, and the record does not count. */
int journal_append(struct journal *j, const struct journal_record *rec);

/* The journal's size in bytes, header included. */
off_t journal_size(const struct journal *j);

/* Start an empty journal (after the snapshot has been rewritten with
 * everything in it): a new file with the header alone replaces the old one
 * atomically (temporary file, fsync, rename, fsync of the directory).  seq
 * goes on from where it was.  0 or -errno; on failure the old journal is
 * kept and still appended to. */
int journal_reset(struct journal *j);

/* Close and free j; NULL is nothing. */
void journal_close(struct journal *j);

/* Remove the journal at path (closed, every record of it in the snapshot)
 * and fsync(2) the directory: a missing journal is an empty one, whatever
 * key the next one is sealed with.  A missing file is 0. */
int journal_remove(const char *path);

/* The compaction rule: rewrite the snapshot (then journal_reset) when the
 * journal has grown past max(JOURNAL_COMPACT_MIN, snapshot_bytes / 2).
 * Relative to the snapshot so that the cost of rewriting it is paid once
 * per half a snapshot of changes (amortised O(size of a change)), and
 * loading reads at most 1.5 snapshots; the floor keeps a small store from
 * being rewritten at every few changes. */
#define JOURNAL_COMPACT_MIN	(64 * 1024)
bool journal_needs_compaction(uint64_t journal_bytes, uint64_t snapshot_bytes);

/* Encode rec (its seq included) as one line with its '\n', in a malloc'd
 * buffer; *line is to be freed with journal_line_free.  -EINVAL for an op
 * that cannot be written (a key_json that is not one line of JSON object,
 * a serial out of range), -ENOMEM. */
int journal_record_encode(const struct journal_record *rec, char **line,
			  size_t *len);
/* Wipe (it may hold payloads) and free a line. */
void journal_line_free(char *line, size_t len);

#endif
