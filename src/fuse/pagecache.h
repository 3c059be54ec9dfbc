/* pagecache.h: which key payloads the kernel may keep in its page cache, and when that cache must go. */
#ifndef KEYFS_PAGECACHE_H
#define KEYFS_PAGECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct keyfs_ctx;

/*
 * A read-only open of a key normally reads from the kernel's page cache
 * (keep_cache): a repeated cat is one OPEN, no READ.  This is safe while
 * every page the kernel holds of the key is the payload the opener would
 * have read itself, which keyfs knows by a hash of the payload read at
 * open: the page cache holds one version of a key, filled only by
 * readers of that version.  An open that finds a different payload reads
 * past the page cache (direct I/O) and has the kernel drop the pages and
 * the attributes; once the kernel has done so, later opens of that
 * version use the cache again.  Readers holding an older version keep
 * reading it (their reads come to their own snapshot), and the size keyfs
 * gives the kernel for the inode stays theirs until the last of them
 * closes (pagecache_size).
 *
 * The first cached open of a version, with no other open file of the key,
 * hands the kernel the pages itself (fill): the reader then reads them
 * without a READ request.  Alone, no READ of the inode can be in flight,
 * whose locked page would make the hand-over wait on keyfs.
 *
 * Every function runs under the daemon's lock (fs-loop.c).
 */
struct pagecache;

/* The table; NULL without memory (then nothing is cached). */
struct pagecache *pagecache_new(void);
void pagecache_free(struct pagecache *pc);

enum pagecache_mode {
	PC_DIRECT,	/* direct I/O; not counted (no table, or not a key) */
	PC_CACHED,	/* reads from the page cache */
	PC_ASIDE,	/* direct I/O, of the payload the pages are for, while
			 * the pages are on their way out: counted, as a
			 * private mmap(2) of it reads pages through keyfs */
	PC_FOREIGN,	/* direct I/O of another payload, or a writer: a
			 * private mmap(2) of it would put its pages in the
			 * cache, so no cached open starts until it closes */
};

/* A read-only open of key inode ino with this snapshot: how it reads.
 * Until pagecache_release, every open but a PC_DIRECT one counts.  *fill:
 * the opener should give the kernel the pages of its snapshot now
 * (fs_fill_pages), before its open is answered. */
enum pagecache_mode pagecache_open(struct keyfs_ctx *ctx, uint64_t ino,
				   const void *buf, size_t len, bool *fill);
/* An open of ino for writing (always direct): PC_FOREIGN, or PC_DIRECT
 * without a page cache table. */
enum pagecache_mode pagecache_writer(struct keyfs_ctx *ctx, uint64_t ino);
/* An open of ino, opened in mode, was closed. */
void pagecache_release(struct keyfs_ctx *ctx, uint64_t ino,
		       enum pagecache_mode mode);
/* keyfs changed ino's payload, or found it gone: drop its pages. */
void pagecache_changed(struct keyfs_ctx *ctx, uint64_t ino);
/* The size to tell the kernel for ino, given what the caller would be
 * told (*size).  While readers read ino from the page cache, the kernel's
 * one size for the inode must stay theirs until they close, or their
 * reads would end early or run into zeros; reads of opens after a change
 * are direct and do not use it.  True when the payload was replaced
 * under them: the attributes must then not be cached. */
bool pagecache_size(struct keyfs_ctx *ctx, uint64_t ino, off_t *size);

#endif
