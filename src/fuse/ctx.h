/* ctx.h: the one daemon context every part of keyfs reaches its state through. */
#ifndef KEYFS_CTX_H
#define KEYFS_CTX_H

#include <errno.h>
#include <pthread.h>

#include "backend.h"
#include "opts.h"

struct node_table;
struct fuse_session;
struct notifier;
struct handle;
struct fuse_lowlevel_ops;
struct keyfs_ctx;

/* What the FUSE glue (fs.c, fs-notify.c) wants to hear from the files it
 * drives (control.c, ...), which never call it by name: fs_run fills
 * these in before the first request.  NULL: nobody listens (no session). */
struct fs_events {
	/* keyfs changed this key in a way the kernel did not see: drop its
	 * cached attributes.  Safe from a request: takes no inode locks. */
	void (*key_changed)(struct keyfs_ctx *ctx, kserial_t serial);
	/* The kernel's cached name in directory parent may be stale. */
	void (*forget_name)(struct keyfs_ctx *ctx, uint64_t parent,
			    const char *name);
	/* Wait, briefly, until the names forgotten so far are gone. */
	void (*forget_wait)(struct keyfs_ctx *ctx);
};

struct keyfs_ctx {
	struct keyfs_opts opts;
	const struct keyfs_backend_ops *ops;
	struct keyfs_backend *be;
	struct keyfs_cred mounter;	/* keyfs's own work runs as the mounter */
	char *mountpoint;		/* absolute; owned */

	/* Resolved once the daemon runs (the process keyring is per process,
	 * so after daemonising). */
	kserial_t root_key;		/* root=: the keyring shown as the mount root; 0: the whole tree */
	kserial_t session, user, user_session, process, persistent;

	struct node_table *nodes;	/* inodes keyfs invents: pending keys, search/TYPE */
	struct timespec started;	/* the times of keyfs's own directories and files */
	struct fuse_session *se;	/* for telling the kernel what changed */
	struct notifier *notifier;	/* fs-notify.c: names to drop from the kernel's cache */
	/* handle.c: every open file and directory: an open key's attributes
	 * outlive the key, and what the session's end leaves open is freed */
	struct handle *open_handles;
	struct pagecache *pagecache;	/* pagecache.c: payloads the page cache may hold */
	struct fs_events events;	/* the glue's callbacks (see above) */
	int store_lock;			/* store=: the lock file (store-lock.c), or -1 */
	bool multi_user;		/* allow_other/allow_root: callers of other uids */

	/* fs-loop.c: every request handler runs holding this lock, so the
	 * model, the node table and the open handles see one request at a
	 * time even with many worker threads.  Only a backend's long wait on
	 * something outside keyfs gives it up (backend_config.unlock). */
	pthread_mutex_t lock;
	const struct fuse_lowlevel_ops *ll_ops;	/* the handlers it wraps */
	struct pool *pool;		/* pool.c, while it serves; else NULL */
	bool one_thread;		/* -s: no other thread ever reads a request */
};

/* Call a backend slot, answering -EOPNOTSUPP for a NULL one. */
#define BACKEND_CALL(ctx, slot, ...) \
	((ctx)->ops->slot ? (ctx)->ops->slot((ctx)->be, __VA_ARGS__) : -EOPNOTSUPP)

/* A key's describe with only the parts its caller needs (KEY_INFO_*,
 * backend.h); backends without describe_part describe in full. */
static inline int ctx_describe(struct keyfs_ctx *ctx,
			       const struct keyfs_cred *c, kserial_t key,
			       unsigned parts, struct key_info *ki)
{
	if (ctx->ops->describe_part &&
	    parts != (KEY_INFO_SIZE | KEY_INFO_EXPIRY))
		return ctx->ops->describe_part(ctx->be, c, key, parts, ki);
	return BACKEND_CALL(ctx, describe, c, key, ki);
}

/* The describes of keys[0, n) with parts come next, in this locked
 * section (backend.h's prefetch); n 0 ends the section. */
static inline void ctx_prefetch(struct keyfs_ctx *ctx,
				const struct keyfs_cred *c,
				const kserial_t *keys, size_t n, unsigned parts)
{
	if (ctx->ops->prefetch)
		ctx->ops->prefetch(ctx->be, c, keys, n, parts);
}

/* Several backend calls as one change of the store (backend.h). */
static inline void ctx_batch_begin(struct keyfs_ctx *ctx)
{
	if (ctx->ops->batch_begin)
		ctx->ops->batch_begin(ctx->be);
}

/* End it, saving what it did whatever ret says: ret, or the save's
 * -errno when ret is 0. */
static inline int ctx_batch_end(struct keyfs_ctx *ctx, int ret)
{
	int saved = ctx->ops->batch_end ? ctx->ops->batch_end(ctx->be) : 0;

	return ret < 0 ? ret : saved;
}

/* Tell the glue through ctx->events, when it listens. */
static inline void ctx_key_changed(struct keyfs_ctx *ctx, kserial_t serial)
{
	if (ctx->events.key_changed)
		ctx->events.key_changed(ctx, serial);
}

static inline void ctx_forget_name(struct keyfs_ctx *ctx, uint64_t parent,
				   const char *name)
{
	if (ctx->events.forget_name)
		ctx->events.forget_name(ctx, parent, name);
}

static inline void ctx_forget_wait(struct keyfs_ctx *ctx)
{
	if (ctx->events.forget_wait)
		ctx->events.forget_wait(ctx);
}

#endif
