/* prefetch.c: many keys described at once, on helper threads, for a listing or an index. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

/*
 * A listing of 10,000 keys is 20,000 keyctl calls (a describe and a size
 * probe a key), and keyfs made them one after another while the reader
 * waited: two thirds of the daemon's time in `ls -l` (issue 10).  The
 * calls are independent system calls that touch nothing of keyfs's, so
 * helper threads make them for a part of the listing at once, the thread
 * that holds keyfs's lock making its share too; the answers wait here
 * until the describe or the size probe that would have made the call
 * takes them, in the same locked section, and whatever is not taken is
 * dropped at its end.  Only calls made as keyfs are made here (every
 * describe, the mounter's size probes, and anyone's first probe of a key
 * not yet seen instantiated): a call for another caller needs that
 * caller's ids, which are the calling thread's own (cred.c).
 */

/* A describe longer than this is made again when it is used ("user;0;0;
 * 3f010000;" leaves over a hundred bytes for the description). */
#define KPRE_DESC_MAX	128
/* helpers at most, besides the thread that holds the lock */
#define KPRE_HELPERS_MAX	3

struct kpre_item {
	kserial_t serial;
	bool want_desc, want_size;
	bool desc_taken, size_taken;
	int desc_len;		/* > 0: desc holds it with its NUL; 0: not held; -errno */
	long size;		/* the payload length, or -errno */
	char desc[KPRE_DESC_MAX];
};

struct kpre {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	pthread_t threads[KPRE_HELPERS_MAX];
	int nthreads;
	pid_t pid;		/* the process the threads run in */
	unsigned gen;		/* batches handed out so far */
	unsigned busy;		/* helpers working on the open batch */
	bool open;		/* helpers may still join the batch */
	bool stop;
	struct kpre_item *items;	/* sorted by serial once made; kpre_drop frees */
	size_t n, cap;
	size_t next;		/* the next item to take up (atomic) */
};

static void kpre_stop_threads(struct kpre *p);

static void item_run(struct kpre_item *it)
{
	long r;

	if (it->want_desc) {
		r = keyctl_describe(it->serial, it->desc, sizeof(it->desc));
		if (r < 0)
			it->desc_len = -errno;
		else
			it->desc_len = (size_t)r <= sizeof(it->desc) ? (int)r : 0;
	}
	if (it->want_size) {
		r = keyctl_read(it->serial, NULL, 0);
		it->size = r < 0 ? -errno : r;
	}
}

static void batch_work(struct kpre *p)
{
	size_t i;

	while ((i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->n)
		item_run(&p->items[i]);
}

static void *helper_run(void *arg)
{
	struct kpre *p = arg;
	unsigned seen = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && !(p->open && p->gen != seen))
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop)
			break;
		seen = p->gen;
		p->busy++;
		pthread_mutex_unlock(&p->mu);
		batch_work(p);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* As many helpers as there are other CPUs (at most KPRE_HELPERS_MAX);
 * none on one CPU, where the calls are made as they are needed.  Started
 * at the first need, as /proc/keys' reader: the daemon may fork after. */
static struct kpre *kpre_start(struct keyfs_backend *b)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct kpre *p;
	sigset_t all, old;

	if (cpus < 2) {
		b->pre_none = true;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = getpid();
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	/* the daemon's signals are for its main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	while (p->nthreads < KPRE_HELPERS_MAX && p->nthreads < cpus - 1 &&
	       pthread_create(&p->threads[p->nthreads], NULL, helper_run, p) == 0)
		pthread_setname_np(p->threads[p->nthreads++], "keyfs-describe");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!p->nthreads) {
		kpre_stop_threads(p);
		return NULL;
	}
	return p;
}

/* Should a fork come without before_fork, the child has no helpers and
 * its copy of the mutex may be held for good: it drops the copy
 * untouched (as proc.c's reader). */
static void kpre_lost(struct keyfs_backend *b)
{
	if (b->pre && b->pre->pid != getpid()) {
		free(b->pre->items);
		free(b->pre);
		b->pre = NULL;
	}
}

static void kpre_stop_threads(struct kpre *p)
{
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	free(p->items);
	free(p);
}

void kpre_stop(struct keyfs_backend *b)
{
	kpre_lost(b);
	if (b->pre)
		kpre_stop_threads(b->pre);
	b->pre = NULL;
}

/* The items go too: a part of 256 keys is 40 KB, which a daemon that
 * keeps some hundred bytes a key should not hold between listings. */
void kpre_drop(struct keyfs_backend *b)
{
	if (b->pre) {
		free(b->pre->items);
		b->pre->items = NULL;
		b->pre->n = b->pre->cap = 0;
	}
}

static int item_cmp(const void *x, const void *y)
{
	const struct kpre_item *a = x, *b = y;

	return a->serial < b->serial ? -1 : a->serial > b->serial;
}

static struct kpre_item *kpre_find(struct keyfs_backend *b, kserial_t key)
{
	struct kpre_item probe = { .serial = key };

	if (!b->pre || !b->pre->n)
		return NULL;
	return bsearch(&probe, b->pre->items, b->pre->n, sizeof(probe),
		       item_cmp);
}

/* Whether a size probe of k as keyfs cannot wait on a construction: k was
 * seen instantiated, or nobody had a key under construction since k was
 * first seen (kproc_construction). */
static bool size_cannot_wait(struct keyfs_backend *b, const struct kkey *k)
{
	return k->positive || kproc_maybe_pending(b, k) == 0;
}

static bool want_item(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, unsigned parts, struct kpre_item *it)
{
	/* kkey_recent's entry is kkey_get's: one lookup where it is recent */
	struct kkey *recent = (parts & KEY_INFO_RECENT) ? kkey_recent(b, c, key) : NULL;
	struct kkey *k = recent ? recent : kkey_get(b, key);

	memset(it, 0, offsetof(struct kpre_item, desc));
	it->serial = key;
	it->want_desc = !recent;
	/* the size probe describe_live makes as keyfs: the mounter's, and
	 * anyone's first of a key not yet seen instantiated */
	it->want_size = (parts & KEY_INFO_SIZE) && k && k->named &&
			(is_mounter(b, c) || !k->positive) &&
			size_cannot_wait(b, k);
	return it->want_desc || it->want_size;
}

void kpre_run(struct keyfs_backend *b, const struct keyfs_cred *c,
	      const kserial_t *keys, size_t n, unsigned parts)
{
	struct kpre *p;

	kpre_lost(b);
	if (!b->pre && !b->pre_none)
		b->pre = kpre_start(b);
	p = b->pre;
	if (!p)
		return;
	p->n = 0;
	if (n < 2)
		return;		/* nothing to share */
	if (n > p->cap) {
		struct kpre_item *v = realloc(p->items, n * sizeof(*v));

		if (!v)
			return;
		p->items = v;
		p->cap = n;
	}
	for (size_t i = 0; i < n; i++)
		if (want_item(b, c, keys[i], parts, &p->items[p->n]))
			p->n++;
	__atomic_store_n(&p->next, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&p->mu);
	p->gen++;
	p->open = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	batch_work(p);
	/* a helper that has not woken by now finds the batch closed: no
	 * waiting for a thread that had nothing left to do */
	pthread_mutex_lock(&p->mu);
	p->open = false;
	while (p->busy)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	qsort(p->items, p->n, sizeof(*p->items), item_cmp);
}

int kpre_describe(struct keyfs_backend *b, kserial_t key, char **text_alloc)
{
	struct kpre_item *it = kpre_find(b, key);

	if (!it || !it->want_desc || it->desc_taken || it->desc_len == 0)
		return 1;
	it->desc_taken = true;
	if (it->desc_len < 0)
		return it->desc_len;
	*text_alloc = malloc((size_t)it->desc_len);
	if (!*text_alloc)
		return -ENOMEM;
	memcpy(*text_alloc, it->desc, (size_t)it->desc_len);
	return 0;
}

long kpre_size(struct keyfs_backend *b, kserial_t key)
{
	struct kpre_item *it = kpre_find(b, key);
	long r;

	if (it && it->want_size && !it->size_taken) {
		it->size_taken = true;
		return it->size;
	}
	r = keyctl_read(key, NULL, 0);
	return r < 0 ? -errno : r;
}
