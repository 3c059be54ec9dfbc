/* prefetch.c: many keys described at once, on helper threads, for a listing or an index. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "kernel.h"

/*
 * A listing of 10,000 keys is 20,000 keyctl calls (a describe and a size
 * probe a key), and keyfs made them one after another while the reader
 * waited: two thirds of the daemon's time in `ls -l` (issue 10).  The
 * calls are independent system calls that touch nothing of keyfs's, so
 * helper threads make them for a part of the listing at once.  The thread
 * that holds keyfs's lock does not wait for the whole part: it takes each
 * answer as soon as it is made, in the part's order, and makes the next
 * call itself where no helper has got to it, so that its own work on the
 * answers (parsing, the index, the reply) overlaps the helpers' calls.
 * The answers wait here until the describe or the size probe that would
 * have made the call takes them, in the same locked section, and whatever
 * is not taken is dropped at its end.  Only calls made as keyfs are made
 * here (every describe, the mounter's size probes, and anyone's first
 * probe of a key not yet seen instantiated): a call for another caller
 * needs that caller's ids, which are the calling thread's own (cred.c).
 */

/* A describe longer than this is made again when it is used ("user;0;0;
 * 3f010000;" leaves over a hundred bytes for the description). */
#define KPRE_DESC_MAX	128
/* helpers at most, besides the thread that holds the lock */
#define KPRE_HELPERS_MAX	3

/* An item's state: nobody's, a thread's making its calls, made. */
enum { ITEM_FREE, ITEM_CLAIMED, ITEM_MADE };

struct kpre_item {
	kserial_t serial;
	int state;		/* ITEM_* (atomic) */
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
	struct kpre_item *items;	/* in the order given; kpre_drop frees */
	uint32_t *slots;	/* items by serial: index + 1, 0 empty; nslots a power of 2 */
	size_t n, cap, nslots;
	size_t next;		/* the next item to take up (atomic) */
	size_t hint;		/* the item last asked for */
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

/* Make item i's calls unless another thread has taken it up. */
static bool item_claim_run(struct kpre *p, size_t i)
{
	struct kpre_item *it = &p->items[i];
	int free_ = ITEM_FREE;

	if (!__atomic_compare_exchange_n(&it->state, &free_, ITEM_CLAIMED, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	item_run(it);
	__atomic_store_n(&it->state, ITEM_MADE, __ATOMIC_RELEASE);
	return true;
}

/* Take up the next item nobody has; false when none is left. */
static bool batch_step(struct kpre *p)
{
	size_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);

	if (i >= p->n)
		return false;
	(void)item_claim_run(p, i);
	return true;
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
		while (batch_step(p))
			;
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Item i made, by whichever thread: the holder of the lock makes it, or
 * the next ones nobody has, while a helper is at it; it yields the CPU to
 * a helper that shares it only when nothing is left to take up. */
static void item_wait(struct kpre *p, size_t i)
{
	struct kpre_item *it = &p->items[i];

	if (item_claim_run(p, i))
		return;
	while (__atomic_load_n(&it->state, __ATOMIC_ACQUIRE) != ITEM_MADE)
		if (!batch_step(p))
			sched_yield();
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

static void items_free(struct kpre *p)
{
	free(p->items);
	free(p->slots);
	p->items = NULL;
	p->slots = NULL;
	p->n = p->cap = p->nslots = 0;
}

/* Should a fork come without before_fork, the child has no helpers and
 * its copy of the mutex may be held for good: it drops the copy
 * untouched (as proc.c's reader). */
static void kpre_lost(struct keyfs_backend *b)
{
	if (b->pre && b->pre->pid != getpid()) {
		items_free(b->pre);
		free(b->pre);
		b->pre = NULL;
	}
}

/* No helper takes up an item of the open batch after this. */
static void batch_close(struct kpre *p)
{
	__atomic_store_n(&p->next, p->n, __ATOMIC_RELAXED);
	pthread_mutex_lock(&p->mu);
	p->open = false;
	while (p->busy)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

static void kpre_stop_threads(struct kpre *p)
{
	batch_close(p);
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	items_free(p);
	free(p);
}

void kpre_stop(struct keyfs_backend *b)
{
	kpre_lost(b);
	if (b->pre)
		kpre_stop_threads(b->pre);
	b->pre = NULL;
}

/* The items go too: a part of 4,096 keys is 600 KB, which a daemon that
 * keeps some hundred bytes a key should not hold between listings. */
void kpre_drop(struct keyfs_backend *b)
{
	kpre_lost(b);
	if (b->pre) {
		batch_close(b->pre);
		items_free(b->pre);
	}
}

static void slots_fill(struct kpre *p)
{
	for (size_t i = 0; i < p->n; i++) {
		size_t s = hash_serial(p->items[i].serial, p->nslots);

		while (p->slots[s])
			s = (s + 1) & (p->nslots - 1);
		p->slots[s] = (uint32_t)(i + 1);
	}
}

/* The index of key's item, or -1.  Items are asked for in their order,
 * mostly, each for its describe and then its size: the last one asked
 * for and the one after it are tried first. */
static ssize_t kpre_find(struct keyfs_backend *b, kserial_t key)
{
	struct kpre *p = b->pre;
	size_t s;

	if (!p || !p->n)
		return -1;
	for (s = p->hint; s < p->n && s < p->hint + 2; s++)
		if (p->items[s].serial == key)
			return (ssize_t)(p->hint = s);
	for (s = hash_serial(key, p->nslots); p->slots[s]; s = (s + 1) & (p->nslots - 1))
		if (p->items[p->slots[s] - 1].serial == key) {
			p->hint = p->slots[s] - 1;
			return (ssize_t)p->hint;
		}
	return -1;
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

static bool items_room(struct kpre *p, size_t n)
{
	size_t nslots = 16;

	while (nslots < 2 * n)
		nslots *= 2;
	if (n > p->cap) {
		struct kpre_item *v = realloc(p->items, n * sizeof(*v));

		if (!v)
			return false;
		p->items = v;
		p->cap = n;
	}
	if (nslots > p->nslots) {
		free(p->slots);
		p->slots = malloc(nslots * sizeof(*p->slots));
		if (!p->slots) {
			p->nslots = 0;
			return false;
		}
		p->nslots = nslots;
	}
	memset(p->slots, 0, p->nslots * sizeof(*p->slots));
	return true;
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
	batch_close(p);
	p->n = p->hint = 0;
	if (n < 2 || n > UINT32_MAX / 2)
		return;		/* nothing to share */
	if (!items_room(p, n))
		return;
	for (size_t i = 0; i < n; i++)
		if (want_item(b, c, keys[i], parts, &p->items[p->n]))
			p->n++;
	__atomic_store_n(&p->next, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&p->mu);
	p->gen++;
	p->open = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	/* the helpers are at it meanwhile */
	slots_fill(p);
}

int kpre_describe(struct keyfs_backend *b, kserial_t key, char **text_alloc)
{
	ssize_t i = kpre_find(b, key);
	struct kpre_item *it;

	if (i < 0)
		return 1;
	it = &b->pre->items[i];
	if (!it->want_desc || it->desc_taken)
		return 1;
	item_wait(b->pre, (size_t)i);
	if (it->desc_len == 0)
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
	ssize_t i = kpre_find(b, key);
	struct kpre_item *it = i < 0 ? NULL : &b->pre->items[i];
	long r;

	if (it && it->want_size && !it->size_taken) {
		item_wait(b->pre, (size_t)i);
		it->size_taken = true;
		return it->size;
	}
	r = keyctl_read(key, NULL, 0);
	return r < 0 ? -errno : r;
}
