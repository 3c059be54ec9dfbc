/* pagecache.c: which key payloads the kernel may keep in its page cache, and when that cache must go (see pagecache.h). */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fs.h"
#include "hash.h"
#include "pagecache.h"

#define PC_HASH		16	/* bytes of a payload's hash */
#define PC_BUCKETS	1024
/* Keys remembered at most: past this, keys no one has open are forgotten
 * (their next open reads directly once, and has the pages dropped). */
#define PC_MAX		16384

struct pc_entry {
	struct pc_entry *next;
	uint64_t ino;
	uint64_t seq;		/* the notification that dropped older pages */
	unsigned opens;		/* cached readers open now */
	unsigned foreign;	/* other opens whose pages (a private mmap of
				 * a direct open) may not be hash's payload */
	unsigned aside;		/* PC_ASIDE opens */
	size_t len;		/* the payload's length, with hash */
	bool valid;		/* hash says what the page cache may hold */
	bool stale;		/* cached readers hold a payload since replaced */
	bool filled;		/* pages given or read since the last drop */
	unsigned char hash[PC_HASH];
};

/* Owned by the daemon context (ctx->pagecache). */
struct pagecache {
	struct pc_entry *b[PC_BUCKETS];
	size_t n;
	/* Every inode ever opened has had an entry unless a sweep forgot
	 * it: until then, an inode with no entry has no pages. */
	bool swept;
	/* Keyed, so the daemon holds no plain digest of a secret. */
	unsigned char key[crypto_generichash_KEYBYTES];
};

struct pagecache *pagecache_new(void)
{
	struct pagecache *pc;

	if (sodium_init() < 0)
		return NULL;
	pc = calloc(1, sizeof(*pc));
	if (pc)
		randombytes_buf(pc->key, sizeof(pc->key));
	return pc;
}

void pagecache_free(struct pagecache *pc)
{
	if (!pc)
		return;
	for (size_t i = 0; i < PC_BUCKETS; i++)
		while (pc->b[i]) {
			struct pc_entry *e = pc->b[i];

			pc->b[i] = e->next;
			free(e);
		}
	sodium_memzero(pc->key, sizeof(pc->key));
	free(pc);
}

static struct pc_entry **slot(struct pagecache *pc, uint64_t ino)
{
	/* A key's inode is its serial (serial 1's aside: a collision). */
	struct pc_entry **p = &pc->b[hash_serial((kserial_t)ino, PC_BUCKETS)];

	while (*p && (*p)->ino != ino)
		p = &(*p)->next;
	return p;
}

/* Forget every key no one reads from the cache now. */
static void sweep(struct pagecache *pc)
{
	for (size_t i = 0; i < PC_BUCKETS; i++)
		for (struct pc_entry **p = &pc->b[i]; *p;) {
			struct pc_entry *e = *p;

			if (e->opens || e->foreign || e->aside) {
				p = &e->next;
				continue;
			}
			*p = e->next;
			free(e);
			pc->n--;
		}
	pc->swept = true;
}

/* ino's entry; with make, a new one if it has none, and *clean says
 * whether the kernel can hold no page of it (never opened since mount). */
static struct pc_entry *get(struct pagecache *pc, uint64_t ino, bool make,
			    bool *clean)
{
	struct pc_entry **p = slot(pc, ino);

	if (clean)
		*clean = false;
	if (*p || !make)
		return *p;
	if (pc->n >= PC_MAX) {
		sweep(pc);
		p = slot(pc, ino);
	}
	*p = calloc(1, sizeof(**p));
	if (*p) {
		(*p)->ino = ino;
		pc->n++;
		if (clean)
			*clean = !pc->swept;
	}
	return *p;
}

/* Drop the pages the kernel holds of e's key; they are for one payload
 * (hash, which may be e's own) again once the kernel has done it. */
static void drop_pages(struct keyfs_ctx *ctx, struct pc_entry *e,
		       const unsigned char *hash, size_t len)
{
	e->seq = fs_forget_pages(ctx, e->ino);
	e->filled = false;
	e->valid = hash != NULL && e->seq != 0;
	if (e->valid && hash != e->hash)
		memcpy(e->hash, hash, PC_HASH);
	e->len = len;
}

enum pagecache_mode pagecache_open(struct keyfs_ctx *ctx, uint64_t ino,
				   const void *buf, size_t len, bool *fill)
{
	struct pagecache *pc = ctx->pagecache;
	unsigned char hash[PC_HASH];
	bool same, clean;
	struct pc_entry *e = pc ? get(pc, ino, true, &clean) : NULL;

	*fill = false;
	if (!e)
		return PC_DIRECT;
	crypto_generichash(hash, sizeof(hash), buf, len, pc->key, sizeof(pc->key));
	if (clean) {
		/* The first open of an inode: no pages to drop, nothing to
		 * wait for (seq 0), so even the first cat is served from
		 * the cache it fills. */
		memcpy(e->hash, hash, PC_HASH);
		e->len = len;
		e->valid = true;
	}
	same = e->valid && sodium_memcmp(hash, e->hash, PC_HASH) == 0;
	if (e->opens && !same) {
		/* Others read one version from the cache: a different one
		 * reads directly, and any page it maps privately is not
		 * theirs, so no one starts reading from the cache until it
		 * has closed and its pages are gone. */
		e->stale = true;
		e->foreign++;
		return PC_FOREIGN;
	}
	if (same && !e->stale && !e->foreign &&
	    (!e->seq || fs_notify_sent(ctx, e->seq))) {
		*fill = !e->filled && !e->opens && !e->aside;
		e->filled = true;
		e->opens++;
		return PC_CACHED;
	}
	if (!same && !e->opens)
		drop_pages(ctx, e, hash, len);
	e->aside++;
	return PC_ASIDE;	/* the pages are on their way out */
}

enum pagecache_mode pagecache_writer(struct keyfs_ctx *ctx, uint64_t ino)
{
	struct pc_entry *e = ctx->pagecache ? get(ctx->pagecache, ino, true, NULL) : NULL;

	if (!e)
		return PC_DIRECT;
	e->foreign++;
	return PC_FOREIGN;
}

void pagecache_release(struct keyfs_ctx *ctx, uint64_t ino,
		       enum pagecache_mode mode)
{
	struct pc_entry *e = ctx->pagecache ? get(ctx->pagecache, ino, false, NULL) : NULL;

	if (!e || mode == PC_DIRECT)
		return;
	if (mode == PC_ASIDE) {
		if (e->aside)
			e->aside--;
		return;
	}
	if (mode == PC_FOREIGN && e->foreign && --e->foreign == 0) {
		/* Pages it may have put there go; cached readers of the
		 * version the hash names re-read theirs. */
		if (e->valid)
			drop_pages(ctx, e, e->hash, e->len);
		return;
	}
	/* The last reader of a replaced payload: its pages go now, and the
	 * next open starts again from what it reads. */
	if (mode == PC_CACHED && e->opens && --e->opens == 0 && e->stale) {
		drop_pages(ctx, e, NULL, 0);
		e->stale = false;
	}
}

void pagecache_changed(struct keyfs_ctx *ctx, uint64_t ino)
{
	struct pc_entry *e = ctx->pagecache ? get(ctx->pagecache, ino, false, NULL) : NULL;

	if (!e)
		return;
	if (e->opens) {
		/* Its readers keep their snapshot: their reads come to keyfs
		 * once the pages are gone, and the size they see is theirs. */
		fs_forget_pages(ctx, ino);
		e->stale = true;
		return;
	}
	drop_pages(ctx, e, NULL, 0);
}

bool pagecache_size(struct keyfs_ctx *ctx, uint64_t ino, off_t *size)
{
	struct pc_entry *e = ctx->pagecache ? get(ctx->pagecache, ino, false, NULL) : NULL;

	if (!e || !e->opens)
		return false;
	/* Another size: changed behind keyfs's back (or a caller who may
	 * not read it, told 0; /proc/keys shows the length to anyone who
	 * may view the key, so telling it the cached length gives nothing
	 * away).  New opens read directly until the readers close. */
	if ((size_t)*size != e->len)
		e->stale = true;
	*size = (off_t)e->len;
	return e->stale;
}
