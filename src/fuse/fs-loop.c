/* fs-loop.c: the session loop: threads and the one lock. */
#define FUSE_USE_VERSION 314
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse_lowlevel.h>

#include "fs.h"
#include "handle.h"
#include "pagecache.h"
#include "pool.h"

/*
 * Requests run on a pool of worker threads (pool.c; libfuse's own with
 * max_idle_threads or clone_fd; one thread with -s).  keyfs's
 * state - the backend's model or caches, the node table, open handles -
 * was written for one request at a time, so every handler runs holding
 * ctx->lock: requests still run one at a time, but a request that waits on
 * something outside keyfs can let the others through
 * (fs_lock_wait_outside: another worker reads requests meanwhile): a
 * request_key callout does, on either backend (backend_config.unlock).
 *
 * What runs outside the lock: libfuse itself, the notifier thread
 * (fs-notify.c: its queue has a lock of its own, taken after this one and
 * never the other way round, and it touches no keyfs state), and a
 * callout while it runs.  The kernel backend switches fsuid, fsgid and
 * groups per thread (raw syscalls, not glibc's process-wide setgroups)
 * and switches back before the handler returns, so a thread never leaves
 * the lock acting as someone else, and a worker started from another
 * worker inherits keyfs's own credentials.  The kernel keeps the
 * process keyring per thread too: keyfs makes it (after_daemon) before
 * the first worker starts, so every worker inherits the same one.
 *
 * Why one mutex and not a lock read-only requests share: no read path is
 * free of writes yet.  The memory backend's every operation starts with
 * its gc and ends with a reap (mem_begin, mem_end_read), and its searches
 * and cycle checks mark keys (walk_stamp) as they go; the FUSE layer's
 * lookup counts the kernel's references in the node table (node_key_ref)
 * and prunes its pending list; open and read fill and move handles.  Each
 * would need a lock of its own first, in both backends and here.  What
 * the lock costs parallel readers today is only the daemon's own share of
 * a request (small next to the round trip, whose kernel and caller sides
 * run in parallel with it), now that the memory backend keeps no
 * possession cache that one caller's request throws away for the next.
 */

void fs_lock_take(void *arg)
{
	struct keyfs_ctx *ctx = arg;

	pthread_mutex_lock(&ctx->lock);
}

void fs_lock_release(void *arg)
{
	struct keyfs_ctx *ctx = arg;

	pthread_mutex_unlock(&ctx->lock);
}

bool fs_lock_hand_over(struct keyfs_ctx *ctx)
{
	bool read = !ctx->one_thread && pool_may_block(ctx->pool);

	pthread_mutex_unlock(&ctx->lock);
	return read;
}

void fs_lock_wait_outside(void *arg)
{
	(void)fs_lock_hand_over(arg);
}

/* A wrapper per handler: take the lock, run it, give the lock back.  The
 * context is read before the handler runs, since its reply frees req. */
#define LOCKED(op, params, ...)						\
static void locked_##op params						\
{									\
	struct keyfs_ctx *ctx = fuse_req_userdata(req);			\
									\
	fs_lock_take(ctx);						\
	ctx->ll_ops->op(__VA_ARGS__);					\
	fs_lock_release(ctx);						\
}

LOCKED(lookup, (fuse_req_t req, fuse_ino_t parent, const char *name),
       req, parent, name)
LOCKED(forget, (fuse_req_t req, fuse_ino_t ino, uint64_t nlookup),
       req, ino, nlookup)
LOCKED(forget_multi, (fuse_req_t req, size_t count,
		      struct fuse_forget_data *forgets), req, count, forgets)
LOCKED(getattr, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
       req, ino, fi)
LOCKED(setattr, (fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		 int to_set, struct fuse_file_info *fi),
       req, ino, attr, to_set, fi)
LOCKED(readlink, (fuse_req_t req, fuse_ino_t ino), req, ino)
LOCKED(mknod, (fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, dev_t rdev), req, parent, name, mode, rdev)
LOCKED(mkdir, (fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode), req, parent, name, mode)
LOCKED(unlink, (fuse_req_t req, fuse_ino_t parent, const char *name),
       req, parent, name)
LOCKED(rmdir, (fuse_req_t req, fuse_ino_t parent, const char *name),
       req, parent, name)
LOCKED(symlink, (fuse_req_t req, const char *link, fuse_ino_t parent,
		 const char *name), req, link, parent, name)
LOCKED(rename, (fuse_req_t req, fuse_ino_t parent, const char *name,
		fuse_ino_t newparent, const char *newname, unsigned int flags),
       req, parent, name, newparent, newname, flags)
LOCKED(link, (fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	      const char *newname), req, ino, newparent, newname)
LOCKED(open, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
       req, ino, fi)
LOCKED(read, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	      struct fuse_file_info *fi), req, ino, size, off, fi)
LOCKED(write, (fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	       off_t off, struct fuse_file_info *fi),
       req, ino, buf, size, off, fi)
LOCKED(write_buf, (fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
		   off_t off, struct fuse_file_info *fi),
       req, ino, bufv, off, fi)
LOCKED(flush, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
       req, ino, fi)
LOCKED(release, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
       req, ino, fi)
LOCKED(fsync, (fuse_req_t req, fuse_ino_t ino, int datasync,
	       struct fuse_file_info *fi), req, ino, datasync, fi)
LOCKED(fallocate, (fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		   off_t length, struct fuse_file_info *fi),
       req, ino, mode, offset, length, fi)
LOCKED(opendir, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
       req, ino, fi)
LOCKED(readdir, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi), req, ino, size, off, fi)
LOCKED(readdirplus, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi), req, ino, size, off, fi)
LOCKED(releasedir, (fuse_req_t req, fuse_ino_t ino,
		    struct fuse_file_info *fi), req, ino, fi)
LOCKED(statfs, (fuse_req_t req, fuse_ino_t ino), req, ino)
LOCKED(setxattr, (fuse_req_t req, fuse_ino_t ino, const char *name,
		  const char *value, size_t size, int flags),
       req, ino, name, value, size, flags)
LOCKED(getxattr, (fuse_req_t req, fuse_ino_t ino, const char *name,
		  size_t size), req, ino, name, size)
LOCKED(listxattr, (fuse_req_t req, fuse_ino_t ino, size_t size),
       req, ino, size)
LOCKED(removexattr, (fuse_req_t req, fuse_ino_t ino, const char *name),
       req, ino, name)
LOCKED(access, (fuse_req_t req, fuse_ino_t ino, int mask), req, ino, mask)
LOCKED(create, (fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, struct fuse_file_info *fi),
       req, parent, name, mode, fi)

static void locked_init(void *userdata, struct fuse_conn_info *conn)
{
	struct keyfs_ctx *ctx = userdata;

	fs_lock_take(ctx);
	ctx->ll_ops->init(userdata, conn);
	fs_lock_release(ctx);
}

/* The table the session runs: a locked wrapper where ops has a handler,
 * NULL where it has none (libfuse's default answer).  A handler added to
 * the table in fs.c (whichever fs-*.c holds it) needs its line here too,
 * or libfuse never calls it. */
static void locked_ops(const struct fuse_lowlevel_ops *ops,
		       struct fuse_lowlevel_ops *out)
{
	memset(out, 0, sizeof(*out));
#define WRAP(op) out->op = ops->op ? locked_##op : NULL
	WRAP(init);
	WRAP(lookup);
	WRAP(forget);
	WRAP(forget_multi);
	WRAP(getattr);
	WRAP(setattr);
	WRAP(readlink);
	WRAP(mknod);
	WRAP(mkdir);
	WRAP(unlink);
	WRAP(rmdir);
	WRAP(symlink);
	WRAP(rename);
	WRAP(link);
	WRAP(open);
	WRAP(read);
	WRAP(write);
	WRAP(write_buf);
	WRAP(flush);
	WRAP(release);
	WRAP(fsync);
	WRAP(fallocate);
	WRAP(opendir);
	WRAP(readdir);
	WRAP(readdirplus);
	WRAP(releasedir);
	WRAP(statfs);
	WRAP(setxattr);
	WRAP(getxattr);
	WRAP(listxattr);
	WRAP(removexattr);
	WRAP(access);
	WRAP(create);
#undef WRAP
}

/* Has every handler of ops a wrapper in locked?  A handler added to fs.c's
 * table without one here would otherwise be dropped without a word.  The table
 * holds nothing but function pointers. */
static bool all_wrapped(const struct fuse_lowlevel_ops *ops,
			const struct fuse_lowlevel_ops *locked)
{
	typedef void (*slot_fn)(void);
	static const slot_fn none;
	const unsigned char *a = (const void *)ops, *b = (const void *)locked;

	for (size_t off = 0; off + sizeof(slot_fn) <= sizeof(*ops);
	     off += sizeof(slot_fn))
		if (memcmp(a + off, &none, sizeof(none)) != 0 &&
		    memcmp(b + off, &none, sizeof(none)) == 0)
			return false;
	return true;
}

/* The threads of this process, from /proc; 0 when unknown. */
static int threads_running(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* fuse_daemonize forks: only the forking thread goes on, and any lock
 * another thread holds at that moment stays held in the daemon for good
 * (the backends stop theirs first: before_fork).  Say so if one runs, so
 * that a test catches it every time rather than as a rare hang. */
static void check_single_threaded(void)
{
	int n = threads_running();

	if (n > 1)
		fprintf(stderr, "keyfs: %d threads run at the fork into the background; "
			"the daemon may hang\n", n);
}

/* Serve until unmounted: one thread with -s; libfuse's pool when
 * max_idle_threads or clone_fd ask for what only it does; else keyfs's
 * (pool.h).  0 when unmounted, > 0 when ended by a signal, < 0 on an
 * error. */
static int serve(struct keyfs_ctx *ctx, struct fuse_session *se,
		 const struct fuse_cmdline_opts *cmd)
{
	struct fuse_loop_config *cfg;
	int ret;

	ctx->one_thread = cmd->singlethread;
	if (cmd->singlethread)
		return fuse_session_loop(se);
	if (!cmd->clone_fd && cmd->max_idle_threads == UINT_MAX)
		return pool_run(se, cmd->max_threads, &ctx->pool);
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)cmd->clone_fd);
	/* UINT_MAX is "not given": libfuse's default, which it would
	 * otherwise log as an invalid value. */
	if (cmd->max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(cfg, cmd->max_idle_threads);
	fuse_loop_cfg_set_max_threads(cfg, cmd->max_threads);
	ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret;
}

int fs_loop_run(struct keyfs_ctx *ctx, struct fuse_args *args,
		const struct fuse_lowlevel_ops *ops,
		int (*after_daemon)(struct keyfs_ctx *ctx))
{
	struct fuse_cmdline_opts cmd = { 0 };
	struct fuse_lowlevel_ops locked;
	struct fuse_session *se = NULL;
	int ret = 1;

	if (fuse_parse_cmdline(args, &cmd) != 0)
		return 1;
	if (!cmd.mountpoint) {
		fprintf(stderr, "keyfs: no mountpoint given (see keyfs --help)\n");
		goto out;
	}
	if (cmd.max_threads < 1) {
		fprintf(stderr, "keyfs: max_threads must be at least 1\n");
		goto out;
	}
	ctx->mountpoint = strdup(cmd.mountpoint);
	if (!ctx->mountpoint)
		goto out;
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->ll_ops = ops;
	locked_ops(ops, &locked);
	if (!all_wrapped(ops, &locked)) {
		fprintf(stderr, "keyfs: a FUSE handler has no lock wrapper in fs-loop.c\n");
		goto out;
	}
	se = fuse_session_new(args, &locked, sizeof(locked), ctx);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, cmd.mountpoint) != 0)
		goto out_signals;
	ctx->se = se;
	if (!cmd.foreground)
		check_single_threaded();
	fuse_daemonize(cmd.foreground);
	/* After daemonising: a thread would not survive the fork. */
	if (fs_notifier_start(ctx, se) < 0)
		goto out_unmount;
	/* Without it (no memory, or -o direct_io) every read is direct. */
	if (!ctx->opts.direct_io)
		ctx->pagecache = pagecache_new();
	if (after_daemon(ctx) < 0)
		goto out_unmount;
	/* A signal (systemctl stop's SIGTERM, ^C) ends keyfs as umount does:
	 * the mount goes, and the exit is 0, which service managers count
	 * as a clean stop. */
	ret = serve(ctx, se, &cmd) < 0;
	/* Files still open when the session ends (a signal, or a forced
	 * unmount) never get their release: their payloads are wiped now. */
	handle_free_all(ctx);
out_unmount:
	fs_notifier_stop(ctx);
	pagecache_free(ctx->pagecache);
	ctx->pagecache = NULL;
	ctx->se = NULL;
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
	pthread_mutex_destroy(&ctx->lock);
out:
	free(cmd.mountpoint);
	return ret;
}
