/* fs.h: the FUSE side of keyfs: running the session, and libfuse's help. */
#ifndef KEYFS_FS_H
#define KEYFS_FS_H

#include "ctx.h"

struct fuse_args;

/* Mount at the mountpoint in args, daemonise unless -f, call after_daemon
 * (which resolves what belongs to the running process), and serve until
 * unmounted.  The exit status for main. */
int fs_run(struct keyfs_ctx *ctx, struct fuse_args *args,
	   int (*after_daemon)(struct keyfs_ctx *ctx));
void fs_print_help(void);

/* fs-loop.c: fs_run with the handlers in ops, each run holding ctx->lock;
 * -s, max_threads, max_idle_threads and clone_fd choose the threads. */
struct fuse_lowlevel_ops;
int fs_loop_run(struct keyfs_ctx *ctx, struct fuse_args *args,
		const struct fuse_lowlevel_ops *ops,
		int (*after_daemon)(struct keyfs_ctx *ctx));
/* Take and give back ctx->lock (a struct keyfs_ctx *): the callbacks a
 * backend gets in backend_config to let other requests run while it
 * waits. */
void fs_lock_take(void *ctx);
void fs_lock_release(void *ctx);
/* fs_lock_release for a handler about to wait on something outside keyfs
 * (a callout): another thread reads requests meanwhile (pool.h). */
void fs_lock_wait_outside(void *ctx);
/* The same, telling whether another thread reads meanwhile: false when
 * every worker runs a handler, or with -s, so that nothing is read until
 * this one ends. */
bool fs_lock_hand_over(struct keyfs_ctx *ctx);

/* Tell the kernel to drop its cached attributes of this key, after keyfs
 * changed it in a way the kernel did not see (a control file, an xattr,
 * a commit at close).  Safe from a request: it takes no inode locks. */
void fs_key_changed(struct keyfs_ctx *ctx, kserial_t serial);
/* Its first half, sent before a change keyfs is about to make, so the
 * invalidation overlaps the change's own work (a store's fsync); a
 * request that would fetch the attributes again waits for the daemon's
 * lock meanwhile, so it meets the change.  The caller waits with
 * fs_forget_wait once the change is made; a payload it replaced drops its
 * pages where it is replaced (handle_update_payload). */
void fs_key_changing(struct keyfs_ctx *ctx, kserial_t serial);

/* Have the kernel forget what it cached for name in directory parent, as
 * soon as the directory is free (fs-notify.c; queued, never blocks). */
void fs_forget_name(struct keyfs_ctx *ctx, uint64_t parent, const char *name);
/* The same for inode ino's attributes (mode, size, link count). */
void fs_forget_attrs(struct keyfs_ctx *ctx, uint64_t ino);
/* The same for a key's attributes in every inode it is (a keyring is one
 * in each directory the kernel holds it in: node_place). */
void fs_forget_key_attrs(struct keyfs_ctx *ctx, kserial_t serial);
/* A request changed name in directory parent, which the kernel saw there:
 * have it forget the name, and the directory's attributes, in the other
 * places of the same keyring.  True when there were any (the caller may
 * then fs_forget_wait). */
bool fs_name_changed_elsewhere(struct keyfs_ctx *ctx, uint64_t parent,
			       const char *name);
/* The same for its attributes and every page of it the kernel cached;
 * returns the notification's number for fs_notify_sent (0: not queued). */
uint64_t fs_forget_pages(struct keyfs_ctx *ctx, uint64_t ino);
/* Give the kernel inode ino's pages: buf, len bytes from offset 0, at
 * most FS_FILL_MAX (a payload over it is read through keyfs).  Sent from
 * the caller's thread, at once: only for an inode no READ can be waiting
 * on (pagecache_open's fill), since the kernel locks its pages for it. */
#define FS_FILL_MAX (64 * 1024)
void fs_fill_pages(struct keyfs_ctx *ctx, uint64_t ino, const void *buf,
		   size_t len);
/* Has the kernel been told notification seq (and all before it)? */
bool fs_notify_sent(struct keyfs_ctx *ctx, uint64_t seq);
/* Wait until what was queued so far is sent, at most a quarter second,
 * giving up ctx->lock meanwhile (and taking it again): a request that
 * holds the directory's lock may be waiting on keyfs.  Only from a
 * request handler, holding no pointer into keyfs's state across it. */
void fs_forget_wait(struct keyfs_ctx *ctx);
int fs_notifier_start(struct keyfs_ctx *ctx, struct fuse_session *se);
void fs_notifier_stop(struct keyfs_ctx *ctx);
void fs_print_version(void);

#endif
