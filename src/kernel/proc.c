/* proc.c: /proc/keys and /proc/key-users: parsing, the parse cache, quotas, by-id listings. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "kernel.h"

#define PROC_KEYS		"/proc/keys"
#define PROC_KEY_USERS		"/proc/key-users"
#define SYSCTL_KEYS		"/proc/sys/kernel/keys/"

/* A whole /proc file; *text_alloc is malloc'd and NUL-terminated. */
static int slurp(const char *path, char **text_alloc, size_t *lenp)
{
	size_t cap = SLURP_MIN, len = 0;
	char *buf = NULL, *nbuf;
	int fd, ret = 0;
	ssize_t r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (len + 1 >= cap) {
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nbuf;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	*text_alloc = buf;
	if (lenp)
		*lenp = len;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}

/* The start of the line after p's, or the terminating NUL. */
static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');

	return nl ? nl + 1 : p + strlen(p);
}

/* ---- /proc/keys ---- */

static int parse_timeout(const char *s, time_t now, struct pent *pe)
{
	unsigned long n, unit;
	char *end;

	pe->lo = pe->hi = 0;
	if (strcmp(s, "perm") == 0) {
		pe->tmo = TMO_NONE;
		return 0;
	}
	if (strcmp(s, "expd") == 0) {
		pe->tmo = TMO_EXPIRED;
		pe->lo = pe->hi = now;
		return 0;
	}
	n = strtoul(s, &end, 10);
	switch (*end) {
	case 's': unit = 1; break;
	case 'm': unit = 60; break;
	case 'h': unit = 60 * 60; break;
	case 'd': unit = 24 * 60 * 60; break;
	case 'w': unit = 7 * 24 * 60 * 60; break;
	default: return -EIO;
	}
	pe->tmo = TMO_SET;
	pe->lo = now + (time_t)(n * unit);
	pe->hi = now + (time_t)((n + 1) * unit);
	return 0;
}

/* A /proc/keys line's fields before the type fit in this. */
#define LINE_HEAD_MAX	128

/* Line's text up to its newline, cut to fit buf, which it NUL-terminates:
 * sscanf(3) of a pointer into the whole file would measure the rest of
 * the file at each call, a parse quadratic in the number of keys. */
static void line_head(const char *line, char *buf, size_t size)
{
	size_t n = 0;

	while (n + 1 < size && line[n] && line[n] != '\n') {
		buf[n] = line[n];
		n++;
	}
	buf[n] = '\0';
}

/* "serial flags usage timeout perm uid gid type description" */
static int kproc_parse_line(const char *line, time_t now, struct pent *pe)
{
	unsigned serial, perm;
	char flags[8], tmo[8], head[LINE_HEAD_MAX];
	int usage, uid, gid;

	line_head(line, head, sizeof(head));
	if (sscanf(head, "%x %7s %d %7s %x %d %d", &serial, flags, &usage,
		   tmo, &perm, &uid, &gid) != 7)
		return -EIO;
	pe->serial = (kserial_t)serial;
	pe->flags = 0;
	for (int i = 0; i < 7 && flags[i]; i++)
		if (flags[i] != '-')
			pe->flags |= (uint8_t)(1u << i);
	pe->uid = (uid_t)uid;
	pe->gid = (gid_t)gid;
	pe->perm = perm;
	return parse_timeout(tmo, now, pe);
}

void pcache_free(struct pcache *pc)
{
	free(pc->ents);
	free(pc->slots);
	memset(pc, 0, sizeof(*pc));
}

/* Replace the cache with a parse of text read at when. */
static int pcache_fill(struct pcache *pc, const char *text,
		       int64_t when)
{
	struct pcache n = { 0 };
	size_t lines = 0, cap;
	time_t now = time(NULL);
	const char *p;

	for (p = text; *p; p++)
		lines += *p == '\n';
	cap = lines + 1;
	n.ents = calloc(cap, sizeof(*n.ents));
	n.nslots = grow_pow2(cap, SLOTS_MIN);
	n.slots = calloc(n.nslots, sizeof(*n.slots));
	if (!n.ents || !n.slots) {
		pcache_free(&n);
		return -ENOMEM;
	}
	for (p = text; *p && n.n < cap; p = next_line(p))
		if (kproc_parse_line(p, now, &n.ents[n.n]) == 0)
			n.n++;
	for (size_t i = 0; i < n.n; i++) {
		size_t j = hash_serial(n.ents[i].serial, n.nslots);

		n.ents[i].next = n.slots[j];
		n.slots[j] = (uint32_t)i + 1;
	}
	n.when_ns = when;
	n.cost = age_of(when);	/* the reading and this parse */
	n.valid = true;
	pcache_free(pc);
	*pc = n;
	return 0;
}

static int kproc_read(struct keyfs_backend *b, char **text_alloc)
{
	int64_t when = keyfs_mono_ns();
	char *text;
	int ret;

	ret = slurp(PROC_KEYS, &text, NULL);
	if (ret < 0)
		return ret;
	ret = pcache_fill(&b->proc, text, when);
	if (ret < 0 || !text_alloc)
		free(text);
	else
		*text_alloc = text;
	return ret;
}

/*
 * /proc/keys is dear: the kernel formats every key on the system (400 ms
 * with 20,000 keys) and works out possession for each.  It only tells what
 * keyctl does not: a timeout set outside keyfs, and why a dead key died.
 * So no request waits for it but one about a key that just died (force):
 * live keys take the last parse as it is, and a parse older than
 * PROC_KEYS_MIN_AGE (or the cache timeout, if longer) asks a thread of the
 * backend's own to read the file anew, off the request path.
 */
#define PROC_KEYS_MIN_AGE	1.0
/* ... and a parse is kept at least this many times as long as it took to
 * make, so that the thread takes at most a twentieth of one CPU however
 * many keys the system has (10,000 keys: about 15 ms, so once a second;
 * 100,000: every few seconds). */
#define PROC_KEYS_COST_FACTOR	20.0

struct prefresh {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool want, stop;
	bool have_next;
	struct pcache next;	/* a parse the thread made, not yet taken */
	pid_t pid;		/* the process the thread runs in */
};

/* keyfs stops the thread before it forks into the background
 * (before_fork: a thread running at the fork would leave the allocator's
 * locks held in the child).  Should a fork come without that, the child
 * has no such thread and its copy of the mutex may be held for good: it
 * drops the copy untouched, and starts its own. */
static bool refresh_lost(struct keyfs_backend *b)
{
	if (!b->refresh || b->refresh->pid == getpid())
		return false;
	free(b->refresh);
	b->refresh = NULL;
	return true;
}

static void *refresh_run(void *arg)
{
	struct prefresh *r = arg;
	struct pcache pc;
	int64_t when;
	char *text;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->want && !r->stop)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->stop)
			break;
		pthread_mutex_unlock(&r->mu);
		memset(&pc, 0, sizeof(pc));
		when = keyfs_mono_ns();
		if (slurp(PROC_KEYS, &text, NULL) == 0) {
			pcache_fill(&pc, text, when);
			free(text);
		}
		pthread_mutex_lock(&r->mu);
		pcache_free(&r->next);
		r->next = pc;
		__atomic_store_n(&r->have_next, pc.valid, __ATOMIC_RELEASE);
		r->want = false;
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* Started at the first need, not at init: the daemon may fork after. */
static struct prefresh *refresh_start(void)
{
	struct prefresh *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->pid = getpid();
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if (pthread_create(&r->thread, NULL, refresh_run, r) == 0) {
		/* named so that one can tell it from the request threads */
		pthread_setname_np(r->thread, "keyfs-prockeys");
	} else {
		pthread_mutex_destroy(&r->mu);
		pthread_cond_destroy(&r->cv);
		free(r);
		return NULL;
	}
	return r;
}

void kproc_stop(struct keyfs_backend *b)
{
	struct prefresh *r;

	refresh_lost(b);
	r = b->refresh;
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	pcache_free(&r->next);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
	b->refresh = NULL;
}

static double proc_max_age(const struct keyfs_backend *b)
{
	double age = b->cache_timeout > PROC_KEYS_MIN_AGE ?
		     b->cache_timeout : PROC_KEYS_MIN_AGE;
	double dear = b->proc.cost * PROC_KEYS_COST_FACTOR;

	return dear > age ? dear : age;
}

/* The parse kept is there and young enough to answer from. */
static bool proc_young(const struct keyfs_backend *b)
{
	return b->proc.valid && age_of(b->proc.when_ns) < proc_max_age(b);
}

/* Take the thread's latest parse, if newer; ask for another when the one
 * kept is old.  Never waits for the file. */
void kproc_peek(struct keyfs_backend *b)
{
	struct prefresh *r = b->refresh;

	/* The common case, once for every key a listing describes: no new
	 * parse to take, and the one kept is young.  Neither the mutex nor
	 * getpid(2) then (glibc does not cache the pid: a system call per
	 * key).  An old parse always takes the way below, so a process
	 * forked without before_fork still finds its thread lost. */
	if (r && !__atomic_load_n(&r->have_next, __ATOMIC_ACQUIRE) &&
	    proc_young(b))
		return;
	refresh_lost(b);
	if (!b->refresh)
		b->refresh = refresh_start();
	r = b->refresh;
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	if (r->have_next) {
		if (!b->proc.valid || r->next.when_ns > b->proc.when_ns) {
			pcache_free(&b->proc);
			b->proc = r->next;
			memset(&r->next, 0, sizeof(r->next));
		} else {
			pcache_free(&r->next);
		}
		__atomic_store_n(&r->have_next, false, __ATOMIC_RELEASE);
	}
	if (!r->want && !proc_young(b)) {
		r->want = true;
		pthread_cond_signal(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
}

int kproc_fresh(struct keyfs_backend *b, bool force)
{
	if (!force && proc_young(b))
		return 0;
	return kproc_read(b, NULL);
}

/* ---- keys under construction, from /proc/key-users ---- */

/* Read which uids have keys under construction (nkeys above ninstantiated). */
static int kusers_read(struct keyfs_backend *b)
{
	unsigned long u, usage, nk, ni;
	uid_t *list = NULL, *nl;
	size_t n = 0;
	const char *p;
	char *text;
	int ret;

	b->kusers_gen++;	/* before the read: it tells of keys seen before */
	ret = slurp(PROC_KEY_USERS, &text, NULL);
	if (ret < 0)
		return ret;
	for (p = text; *p; p = next_line(p))
		if (sscanf(p, " %lu: %lu %lu/%lu", &u, &usage, &nk, &ni) == 4 &&
		    nk > ni) {
			nl = realloc(list, (n + 1) * sizeof(*list));
			if (!nl) {
				ret = -ENOMEM;
				break;
			}
			list = nl;
			list[n++] = (uid_t)u;
		}
	free(text);
	if (ret < 0) {
		free(list);
		b->kusers_gen = 0;	/* no answer: read again next time */
		return ret;
	}
	free(b->kusers_pending);
	b->kusers_pending = list;
	b->nkusers_pending = n;
	return 0;
}

/*
 * Whether k may be under construction, where keyctl read would wait for
 * it.  The kernel counts, per owner, keys and instantiated keys
 * (/proc/key-users, one short line per user): an owner with equal counts
 * has no key under construction, and a key once instantiated never is
 * again.  One read tells of every key seen before it, so a listing's keys
 * cost one read together.  0: not pending; 1: maybe; -errno.
 */
int kproc_maybe_pending(struct keyfs_backend *b, const struct kkey *k)
{
	int ret;

	if (k->positive)
		return 0;
	if (!b->kusers_gen || k->seen_gen >= b->kusers_gen) {
		ret = kusers_read(b);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; i < b->nkusers_pending; i++)
		if (b->kusers_pending[i] == k->uid)
			return 1;
	return 0;
}

enum key_state kproc_construction(struct keyfs_backend *b,
				  const struct kkey *k, struct pent **pe)
{
	if (kproc_maybe_pending(b, k) == 0)
		return KEY_STATE_VALID;
	/* only /proc/keys tells (rare: a request_key callout runs) */
	if (kproc_fresh(b, false) == 0 && !kproc_find(b, k->serial))
		kproc_fresh(b, true);	/* newer than the last parse */
	*pe = kproc_find(b, k->serial);
	if (!*pe)
		return KEY_STATE_PENDING;
	if ((*pe)->flags & PENT_NEGATIVE)
		return KEY_STATE_NEGATIVE;
	if (!((*pe)->flags & PENT_INSTANTIATED))
		return KEY_STATE_PENDING;
	return KEY_STATE_VALID;
}

/*
 * A key under construction (its request-key(8) still runs): the kernel
 * has read, update, link, move, revoke and invalidate wait for the end of
 * the construction, for as long as the callout takes.  keyfs would wait
 * holding its one lock, every other request and the caller with it (the
 * kernel holds a FUSE caller until answered, killed or not), so those
 * calls answer EAGAIN instead.  A key keyfs has not met is not checked:
 * every path to these calls describes the key first.
 */
int kproc_ready(struct keyfs_backend *b, kserial_t key)
{
	struct kkey *k = kkey_get(b, key);
	struct pent *pe = NULL;

	if (!k)
		return 0;
	return kproc_construction(b, k, &pe) == KEY_STATE_PENDING ? -EAGAIN : 0;
}

struct pent *kproc_find(struct keyfs_backend *b, kserial_t s)
{
	uint32_t i;

	if (!b->proc.valid)
		return NULL;
	for (i = b->proc.slots[hash_serial(s, b->proc.nslots)]; i;
	     i = b->proc.ents[i - 1].next)
		if (b->proc.ents[i - 1].serial == s)
			return &b->proc.ents[i - 1];
	return NULL;
}

int kernel_list_all(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t **out_alloc, size_t *n)
{
	kserial_t *out = NULL;
	size_t cnt = 0;
	int ret;

	ret = kproc_read(b, NULL);
	if (ret < 0)
		return ret;
	if (b->proc.n) {
		out = malloc(b->proc.n * sizeof(*out));
		if (!out)
			return -ENOMEM;
	}
	for (size_t i = 0; i < b->proc.n; i++) {
		const struct pent *pe = &b->proc.ents[i];

		if (is_mounter(b, c) ||
		    perm_check(c, pe->uid, pe->gid, pe->perm, false,
			       KEYFS_PERM_VIEW) == 0)
			out[cnt++] = pe->serial;
	}
	if (!cnt) {
		free(out);
		out = NULL;
	}
	*out_alloc = out;
	*n = cnt;
	return 0;
}

/* ---- /proc text and quotas ---- */

/* The lines of /proc/keys text naming keys the caller may view without
 * possessing them, moved to the front of text. */
static void filter_proc_keys(const struct keyfs_cred *c, char *text)
{
	time_t now = time(NULL);
	char *w = text;
	const char *p, *next;
	struct pent pe;

	for (p = text; *p; p = next) {
		next = next_line(p);
		if (kproc_parse_line(p, now, &pe) < 0 ||
		    perm_check(c, pe.uid, pe.gid, pe.perm, false,
			       KEYFS_PERM_VIEW) < 0)
			continue;
		memmove(w, p, (size_t)(next - p));
		w += next - p;
	}
	*w = '\0';
}

int kernel_proc_keys(struct keyfs_backend *b,
		     const struct keyfs_cred *c, char **text_alloc)
{
	char *text;
	int ret;

	ret = kproc_read(b, &text);
	if (ret < 0)
		return ret;
	if (!is_mounter(b, c))
		filter_proc_keys(c, text);
	*text_alloc = text;
	return 0;
}

int kernel_proc_key_users(struct keyfs_backend *b,
			  const struct keyfs_cred *c, char **text_alloc)
{
	(void)b;
	(void)c;
	return slurp(PROC_KEY_USERS, text_alloc, NULL);
}

static int read_sysctl(const char *name, unsigned long *val)
{
	char path[64], *text, *end;
	int ret;

	snprintf(path, sizeof(path), SYSCTL_KEYS "%s", name);
	ret = slurp(path, &text, NULL);
	if (ret < 0)
		return ret;
	*val = strtoul(text, &end, 10);
	if (end == text)
		ret = -EIO;
	free(text);
	return ret;
}

/* "  UID: usage nkeys/ninstantiated qnkeys/maxkeys qnbytes/maxbytes";
 * a uid with no keys has no line: the limits then come from sysctl. */
int kernel_quota(struct keyfs_backend *b, const struct keyfs_cred *c,
		 struct key_quota *q)
{
	uid_t uid = c ? c->uid : b->uid;
	unsigned long u, usage, nk, ni, qk, mk, qb, mb;
	const char *p;
	char *text;
	int ret;

	ret = slurp(PROC_KEY_USERS, &text, NULL);
	if (ret < 0)
		return ret;
	for (p = text; *p; p = next_line(p))
		if (sscanf(p, " %lu: %lu %lu/%lu %lu/%lu %lu/%lu", &u, &usage,
			   &nk, &ni, &qk, &mk, &qb, &mb) == 8 && u == uid) {
			q->keys = qk;
			q->maxkeys = mk;
			q->bytes = qb;
			q->maxbytes = mb;
			goto out;
		}
	ret = read_sysctl(uid ? "maxkeys" : "root_maxkeys", &mk);
	if (ret == 0)
		ret = read_sysctl(uid ? "maxbytes" : "root_maxbytes", &mb);
	if (ret == 0) {
		q->keys = q->bytes = 0;
		q->maxkeys = mk;
		q->maxbytes = mb;
	}
out:
	free(text);
	return ret;
}
