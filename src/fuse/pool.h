/* pool.h: keyfs's worker threads, which read requests from /dev/fuse and run them. */
#ifndef KEYFS_POOL_H
#define KEYFS_POOL_H

#include <stdbool.h>

struct fuse_session;
struct pool;

/*
 * Serve se on at most max_threads threads until it ends (unmount, a
 * signal, an error).  Every handler runs under keyfs's one lock, so the
 * thread that answered the last request reads the next one itself: no
 * sleeping thread has to be woken for it (libfuse's pool wakes the thread
 * idle the longest, which on a machine of two CPUs more than doubled a
 * repeated cat's time).  Another thread reads only while a handler waits
 * without the lock (pool_may_block).
 * *poolp is set while the pool runs (for pool_may_block) and NULL after.
 * 0 when unmounted, 1 when ended by a signal, -1 on an error.
 */
int pool_run(struct fuse_session *se, unsigned max_threads,
	     struct pool **poolp);

/* The calling handler is about to wait on something outside keyfs (a
 * callout): if it holds the right to read the next request, another
 * thread takes it, so that requests go on being read meanwhile.  False
 * when no thread is left to read (every one of max_threads runs a
 * handler): nothing is read until a handler ends.  pool may be NULL
 * (libfuse's loop, -s): true, as nothing is known. */
bool pool_may_block(struct pool *pool);

#endif
