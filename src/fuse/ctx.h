/* ctx.h: the one daemon context every part of keyfs reaches its state through. */
#ifndef KEYFS_CTX_H
#define KEYFS_CTX_H

#include <pthread.h>

#include "backend.h"
#include "opts.h"

struct node_table;
struct fuse_session;
struct notifier;
struct handle;
struct fuse_lowlevel_ops;

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
	struct handle *open_keys;	/* handle.c: open key files, to outlive their keys */
	int store_lock;			/* store=: the lock file (store-lock.c), or -1 */

	/* fs-loop.c: every request handler runs holding this lock, so the
	 * model, the node table and the open handles see one request at a
	 * time even with many worker threads.  Only a backend's long wait on
	 * something outside keyfs gives it up (backend_config.unlock). */
	pthread_mutex_t lock;
	const struct fuse_lowlevel_ops *ll_ops;	/* the handlers it wraps */
};

/* Call a backend slot, answering -EOPNOTSUPP for a NULL one. */
#define BACKEND_CALL(ctx, slot, ...) \
	((ctx)->ops->slot ? (ctx)->ops->slot((ctx)->be, __VA_ARGS__) : -EOPNOTSUPP)

#endif
