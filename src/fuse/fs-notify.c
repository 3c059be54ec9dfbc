/* fs-notify.c: tells the kernel to forget a cached name or attributes, from a thread of its own; hands it a key's pages. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fuse_lowlevel.h>

#include "fs.h"
#include "tree.h"

/*
 * Invalidating a name takes the directory's lock in the kernel.  A request
 * being answered (a rename, say) may hold that lock until keyfs replies, so
 * the notification cannot be sent from the loop that replies: a thread of
 * its own sends it once the lock is free.  Attributes go the same way:
 * the kernel looks the inode up first, and a lookup waits for an inode
 * being evicted, whatever that eviction waits for; a worker holding the
 * daemon's lock must never wait in the kernel on anything that may need
 * another worker's answer.
 */
enum notify_what {
	N_NAME,		/* a name in directory ino */
	N_ATTRS,	/* inode ino's attributes */
	N_PAGES,	/* inode ino's attributes and every page it has cached */
};

struct notify_item {
	struct notify_item *next;
	uint64_t ino;		/* the directory of name; or the inode itself */
	enum notify_what what;
	char name[];
};

struct notifier {
	struct fuse_session *se;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_cond_t idle;	/* signalled when the queue is sent */
	struct notify_item *head, **tail;
	bool busy;		/* an item is being sent */
	bool stop;
	uint64_t queued;	/* items ever queued: the last one's number */
	uint64_t done;		/* items sent (in order), read without the lock */
};

static void *notifier_main(void *arg)
{
	struct notifier *nt = arg;
	struct notify_item *it;

	pthread_mutex_lock(&nt->lock);
	for (;;) {
		while (!nt->head && !nt->stop)
			pthread_cond_wait(&nt->cond, &nt->lock);
		if (nt->stop)
			break;
		it = nt->head;
		nt->head = it->next;
		if (!nt->head)
			nt->tail = &nt->head;
		nt->busy = true;
		pthread_mutex_unlock(&nt->lock);
		/* ENOENT: the kernel had nothing cached; nothing to do.
		 * Offset -1: attributes only; 0 and length 0: every page. */
		if (it->what == N_NAME)
			fuse_lowlevel_notify_inval_entry(nt->se, it->ino, it->name,
							 strlen(it->name));
		else
			fuse_lowlevel_notify_inval_inode(nt->se, it->ino,
							 it->what == N_PAGES ? 0 : -1, 0);
		free(it);
		pthread_mutex_lock(&nt->lock);
		__atomic_add_fetch(&nt->done, 1, __ATOMIC_RELEASE);
		nt->busy = false;
		if (!nt->head)
			pthread_cond_broadcast(&nt->idle);
	}
	pthread_mutex_unlock(&nt->lock);
	return NULL;
}

/* Waits on idle are timed on the monotonic clock: a wall clock set back
 * must not stretch them. */
static void init_idle(pthread_cond_t *idle)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(idle, &a);
	pthread_condattr_destroy(&a);
}

int fs_notifier_start(struct keyfs_ctx *ctx, struct fuse_session *se)
{
	struct notifier *nt = calloc(1, sizeof(*nt));
	int ret;

	if (!nt)
		return -ENOMEM;
	nt->se = se;
	nt->tail = &nt->head;
	pthread_mutex_init(&nt->lock, NULL);
	pthread_cond_init(&nt->cond, NULL);
	init_idle(&nt->idle);
	ret = pthread_create(&nt->thread, NULL, notifier_main, nt);
	if (ret != 0) {
		pthread_cond_destroy(&nt->idle);
		pthread_cond_destroy(&nt->cond);
		pthread_mutex_destroy(&nt->lock);
		free(nt);
		return -ret;
	}
	ctx->notifier = nt;
	return 0;
}

void fs_notifier_stop(struct keyfs_ctx *ctx)
{
	struct notifier *nt = ctx->notifier;
	struct notify_item *it, *next;

	if (!nt)
		return;
	pthread_mutex_lock(&nt->lock);
	nt->stop = true;
	pthread_cond_signal(&nt->cond);
	pthread_mutex_unlock(&nt->lock);
	pthread_join(nt->thread, NULL);
	for (it = nt->head; it; it = next) {
		next = it->next;
		free(it);
	}
	pthread_cond_destroy(&nt->idle);
	pthread_cond_destroy(&nt->cond);
	pthread_mutex_destroy(&nt->lock);
	free(nt);
	ctx->notifier = NULL;
}

/* The item's number, for fs_notify_sent; 0 when it could not be queued. */
static uint64_t enqueue(struct keyfs_ctx *ctx, uint64_t ino,
			enum notify_what what, const char *name)
{
	struct notifier *nt = ctx->notifier;
	size_t len = strlen(name);
	struct notify_item *it;
	uint64_t seq;

	if (!nt)
		return 0;
	it = malloc(sizeof(*it) + len + 1);
	if (!it)
		return 0;	/* the timeouts still bound how stale it gets */
	it->next = NULL;
	it->ino = ino;
	it->what = what;
	memcpy(it->name, name, len + 1);
	pthread_mutex_lock(&nt->lock);
	*nt->tail = it;
	nt->tail = &it->next;
	seq = ++nt->queued;
	pthread_cond_signal(&nt->cond);
	pthread_mutex_unlock(&nt->lock);
	return seq;
}

struct place_item {
	struct keyfs_ctx *ctx;
	uint64_t skip;
	enum notify_what what;
	const char *name;
	unsigned queued;
};

static void queue_in_place(uint64_t ino, void *arg)
{
	struct place_item *pi = arg;

	if (ino != pi->skip && enqueue(pi->ctx, ino, pi->what, pi->name))
		pi->queued++;
}

/* Queue what (about name) for every directory inode keyring serial is in
 * the kernel's places (node_place) but skip; how many were. */
static unsigned queue_in_places(struct keyfs_ctx *ctx, kserial_t serial,
				uint64_t skip, enum notify_what what,
				const char *name)
{
	struct place_item pi = { ctx, skip, what, name, 0 };

	node_for_each_place(ctx->nodes, serial, queue_in_place, &pi);
	return pi.queued;
}

/* The keyring directory inode dir stands for; 0 for any other inode. */
static kserial_t keyring_of(struct keyfs_ctx *ctx, uint64_t dir)
{
	struct tnode tn;

	return tree_node(ctx, dir, &tn) == 0 && tn.kind == T_KEY ? tn.serial : 0;
}

void fs_forget_name(struct keyfs_ctx *ctx, uint64_t parent, const char *name)
{
	kserial_t keyring = keyring_of(ctx, parent);

	enqueue(ctx, parent, N_NAME, name);
	if (keyring)
		queue_in_places(ctx, keyring, parent, N_NAME, name);
}

bool fs_name_changed_elsewhere(struct keyfs_ctx *ctx, uint64_t parent,
			       const char *name)
{
	kserial_t keyring = ctx->notifier ? keyring_of(ctx, parent) : 0;

	if (!keyring || !queue_in_places(ctx, keyring, parent, N_NAME, name))
		return false;
	queue_in_places(ctx, keyring, parent, N_ATTRS, "");
	return true;
}

void fs_forget_attrs(struct keyfs_ctx *ctx, uint64_t ino)
{
	enqueue(ctx, ino, N_ATTRS, "");
}

void fs_forget_key_attrs(struct keyfs_ctx *ctx, kserial_t serial)
{
	uint64_t own = tree_ino(ctx, serial);

	enqueue(ctx, own, N_ATTRS, "");
	queue_in_places(ctx, serial, own, N_ATTRS, "");
}

uint64_t fs_forget_pages(struct keyfs_ctx *ctx, uint64_t ino)
{
	return enqueue(ctx, ino, N_PAGES, "");
}

void fs_fill_pages(struct keyfs_ctx *ctx, uint64_t ino, const void *buf,
		   size_t len)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);

	if (!ctx->se || len == 0 || len > FS_FILL_MAX)
		return;
	bv.buf[0].mem = (void *)buf;
	/* Nothing rests on it: pages the kernel did not take are read
	 * through keyfs, as before. */
	(void)fuse_lowlevel_notify_store(ctx->se, ino, 0, &bv, 0);
}

bool fs_notify_sent(struct keyfs_ctx *ctx, uint64_t seq)
{
	struct notifier *nt = ctx->notifier;

	return nt && seq && __atomic_load_n(&nt->done, __ATOMIC_ACQUIRE) >= seq;
}

/* until = now + ms, on the monotonic clock. */
static void deadline(struct timespec *until, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, until);
	until->tv_sec += ms / 1000;
	until->tv_nsec += (ms % 1000) * 1000 * 1000;
	if (until->tv_nsec >= 1000 * 1000 * 1000) {
		until->tv_sec++;
		until->tv_nsec -= 1000 * 1000 * 1000;
	}
}

/* Something queued is not sent yet; nt->lock held. */
static bool unsent(const struct notifier *nt)
{
	return (nt->head || nt->busy) && !nt->stop;
}

static bool sent_all(struct notifier *nt)
{
	bool idle;

	pthread_mutex_lock(&nt->lock);
	idle = !unsent(nt);
	pthread_mutex_unlock(&nt->lock);
	return idle;
}

/*
 * The wait is made without keyfs's lock.  An invalidation of a name waits
 * in the kernel for the directory's lock, which a request in that
 * directory (another process's lookup or create) holds until keyfs answers
 * it; an invalidation of pages waits for a read in flight.  Holding keyfs's
 * lock meanwhile stopped every request until the timeout (250 ms): four
 * processes making, rewriting and removing keys in one keyring managed
 * under 170 a second between them, where one alone makes 7,000.  Without
 * it, those requests are answered (pool_may_block has another worker read
 * them) and the invalidation goes through at once.  Not even a short wait
 * holding the lock first: one of 200 us or 1 ms made four writers in one
 * keyring a third or a ninth as fast, and a single create no faster (the
 * notifier's thread often takes that long to wake).  Handing the reading
 * on costs a single create 5-13% where the CPUs poll when idle, and saves
 * it 40-50% where they halt at once (this machine's own setting).  The
 * timeout still bounds how stale a name gets.  The caller holds no
 * pointer into keyfs's state across this call.
 */
void fs_forget_wait(struct keyfs_ctx *ctx)
{
	struct notifier *nt = ctx->notifier;
	struct timespec until;

	if (!nt || sent_all(nt))
		return;
	deadline(&until, 250);
	/* With every worker in a handler (more callers changing keys at
	 * once than max_threads, or max_threads=1), the requests the
	 * invalidation waits behind are not read until a handler ends:
	 * waiting could only time out, and did, 250 ms per change (16
	 * processes writing in one keyring made a tenth of what 12 did). */
	if (!fs_lock_hand_over(ctx)) {
		fs_lock_take(ctx);
		return;
	}
	pthread_mutex_lock(&nt->lock);
	while (unsent(nt))
		if (pthread_cond_timedwait(&nt->idle, &nt->lock, &until) != 0)
			break;
	pthread_mutex_unlock(&nt->lock);
	fs_lock_take(ctx);
}
