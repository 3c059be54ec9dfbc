/* kernel.c: the kernel backend: real keyrings through libkeyutils. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <keyutils.h>

#include "backend.h"
#include "hash.h"
#include "perm.h"

#define PROC_KEYS		"/proc/keys"
#define PROC_KEY_USERS		"/proc/key-users"
#define SYSCTL_KEYS		"/proc/sys/kernel/keys/"
#define SLOTS_MIN		16	/* a hash table's first size, a power of 2 */
#define SLURP_MIN		4096	/* first buffer for a /proc file */

/* setgroups with 32-bit gids: the plain number on 64-bit kernels */
#ifdef SYS_setgroups32
#define SYS_SETGROUPS		SYS_setgroups32
#else
#define SYS_SETGROUPS		SYS_setgroups
#endif

/*
 * What keyfs knows and the kernel does not keep.  The kernel shows no times
 * and no parent links, describes no revoked key and shows a timeout only
 * rounded in /proc/keys; so this backend remembers, per serial, the type and
 * description (fixed for a key's life), the times keyfs made or saw changes,
 * an expiry it set itself, the keyrings it saw linking the key, and for a
 * keyring an index of its links by name.  All of it is touched from the one
 * FUSE thread only.
 */

/* One link of a keyring's index, chained by serial and by name. */
struct ient {
	struct ient *serial_next;
	struct ient *name_next;
	kserial_t serial;
	uint32_t hash;		/* of type and description, when named */
	bool named;		/* type and description known: findable */
	bool keyring;
};

/* What one listing of a keyring showed, with keyfs's own changes since. */
struct kidx {
	struct ient **by_serial;
	struct ient **by_name;
	size_t nslots;		/* of each table, a power of 2 */
	size_t n;
	unsigned nkeyrings;
	struct timespec built;	/* CLOCK_MONOTONIC */
};

/* What keyfs knows of one serial. */
struct kkey {
	struct kkey *next;		/* hash chain */
	kserial_t serial;
	char type[KEYFS_TYPE_MAX + 1];
	char *desc;			/* NULL until the key is described */
	bool have_attr;			/* uid, gid, perm as last described */
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	struct timespec mtime, ctime;	/* CLOCK_REALTIME */
	bool exact_expiry;		/* expiry was set through keyfs */
	time_t expiry;
	struct timespec expiry_set;	/* CLOCK_MONOTONIC, when it was */
	kserial_t *parents;		/* keyrings seen linking it */
	size_t nparents, aparents;
	struct kidx *idx;		/* keyring: its index, or NULL */
};

enum proc_timeout { TMO_NONE, TMO_EXPIRED, TMO_SET };

/* One line of /proc/keys. */
struct pent {
	struct pent *next;
	kserial_t serial;
	char flags[8];			/* I R D Q U N i, '-' where unset */
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	enum proc_timeout tmo;
	time_t lo, hi;			/* TMO_SET: the expiry lies in [lo, hi) */
};

/* The last parse of /proc/keys. */
struct pcache {
	struct pent *ents;
	size_t n;
	struct pent **slots;
	size_t nslots;
	struct timespec when;		/* CLOCK_MONOTONIC */
	bool valid;
};

struct keyfs_backend {
	uid_t uid;			/* the mounter */
	gid_t gid;
	double cache_timeout;
	uid_t own_fsuid;		/* the daemon's, restored after a caller's call */
	gid_t own_fsgid;
	gid_t *own_groups;
	int own_ngroups;
	struct kkey **slots;
	size_t nslots, n;
	struct pcache proc;
};

/* ---- small helpers ---- */

static struct timespec mono_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t;
}

static struct timespec real_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return t;
}

static double age_of(const struct timespec *t)
{
	struct timespec now = mono_now();

	return (double)(now.tv_sec - t->tv_sec) +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static bool after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* 0 from a keyctl call that succeeded, -errno from one that failed. */
static int kerr(long r)
{
	return r < 0 ? -errno : 0;
}

static bool is_mounter(const struct keyfs_backend *b,
		       const struct keyfs_cred *c)
{
	return !c || c->uid == b->uid;
}

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

/* ---- acting as the caller ---- */

/*
 * Run the next keyctl call with the caller's fsuid, fsgid and groups, so the
 * kernel checks permission itself, makes new keys the caller's and charges
 * the caller's quota.  Only this thread may change: setfsuid and setfsgid
 * are per thread in the kernel, and glibc's setgroups() would change every
 * thread, hence the raw syscall.  Each op reads "check; caller_begin;
 * keyctl; caller_end", and caller_end always runs once begin succeeded.
 */
static void caller_end(struct keyfs_backend *b, bool switched)
{
	if (!switched)
		return;
	setfsuid(b->own_fsuid);
	setfsgid(b->own_fsgid);
	syscall(SYS_SETGROUPS, (size_t)b->own_ngroups, b->own_groups);
}

static int caller_begin(struct keyfs_backend *b, const struct keyfs_cred *c,
			bool *switched)
{
	const gid_t *groups;
	int ngroups;

	*switched = false;
	if (is_mounter(b, c))
		return 0;
	ngroups = cred_groups(c, &groups);
	/* keyfs not root: it cannot act for others, so refuses them */
	if (syscall(SYS_SETGROUPS, (size_t)ngroups, groups) < 0)
		return -EACCES;
	setfsgid(c->gid);
	setfsuid(c->uid);
	/* setfsuid reports no failure: ask for an invalid id to read it */
	if ((uid_t)setfsuid((uid_t)-1) != c->uid ||
	    (gid_t)setfsgid((gid_t)-1) != c->gid) {
		caller_end(b, true);
		return -EACCES;
	}
	*switched = true;
	return 0;
}

/* ---- acting without keyfs's possession ---- */

/*
 * keyfs's thread, process and session keyrings make it a possessor of
 * every key it reaches from them, and setfsuid does not change that: a
 * keyctl call made for another user would grant that user the possessor
 * bits (SPEC 5: only the mounter possesses).  Where the kernel itself must
 * choose the key a call acts on (the key a search finds, the key add_key
 * updates), keyfs cannot check that key first, so the call runs in a child
 * process that holds none of keyfs's keyrings: a fork keeps neither the
 * thread nor the process keyring, the child joins a new, empty session
 * keyring and takes the caller's ids, and the kernel then checks the
 * caller alone, on the key it acts on, before it changes anything.
 */
enum stranger_op {
	ST_ADD,		/* add_key(type, desc, payload, len, ring) */
	ST_REQUEST,	/* search tops; link what is found into ring; else
			 * with a callout, request_key(2) into ring */
};

#define ST_TOPS	3	/* keyfs's thread, process and session keyrings */

struct stranger {
	enum stranger_op op;
	const char *type, *desc, *callout;
	const void *payload;
	size_t len;
	kserial_t ring;
	kserial_t tops[ST_TOPS];	/* 0: none */
};

struct stranger_result {
	long ret;	/* a serial, or -errno */
};

/* In the child: keyctl_search() on each of keyfs's keyrings in the order
 * request_key(2) searches them.  "No key" wins over other errors, as in
 * search_process_keyrings_rcu(). */
static long stranger_search(const struct stranger *st)
{
	long r, err = 0;
	bool none = false;

	for (int i = 0; i < ST_TOPS; i++) {
		if (!st->tops[i])
			continue;
		r = keyctl_search(st->tops[i], st->type, st->desc, 0);
		if (r >= 0)
			return r;
		if (errno == ENOKEY || errno == EAGAIN)
			none = true;
		else
			err = -errno;
	}
	return none || !err ? -ENOKEY : err;
}

/* In the child, after the switch: the one call.  Only system calls. */
static long stranger_run(const struct stranger *st)
{
	long r;

	switch (st->op) {
	case ST_ADD:
		r = add_key(st->type, st->desc, st->payload, st->len,
			    st->ring);
		return r < 0 ? -errno : r;
	case ST_REQUEST:
		r = stranger_search(st);
		if (r >= 0 && st->ring && keyctl_link(r, st->ring) < 0)
			return -errno;
		if (r != -ENOKEY || !st->callout)
			return r;
		r = request_key(st->type, st->desc, st->callout, st->ring);
		return r < 0 ? -errno : r;
	}
	return -EINVAL;
}

/* Run st for caller c in a child without keyfs's keyrings (see above).
 * A serial or -errno. */
static long stranger_call(const struct keyfs_cred *c, const struct stranger *st)
{
	struct stranger_result res = { -EIO };
	const gid_t *groups;
	int ngroups, fds[2], status;
	ssize_t n;
	pid_t pid;

	/* before the fork: loading groups may allocate */
	ngroups = cred_groups(c, &groups);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		res.ret = -errno;
		close(fds[0]);
		close(fds[1]);
		return res.ret;
	}
	if (pid == 0) {
		/* the new session keyring is made while still keyfs's ids */
		if (keyctl_join_session_keyring(NULL) < 0)
			res.ret = -errno;
		else if (syscall(SYS_SETGROUPS, (size_t)ngroups, groups) < 0)
			res.ret = -EACCES;
		else {
			setfsgid(c->gid);
			setfsuid(c->uid);
			if ((uid_t)setfsuid((uid_t)-1) != c->uid ||
			    (gid_t)setfsgid((gid_t)-1) != c->gid)
				res.ret = -EACCES;
			else
				res.ret = stranger_run(st);
		}
		n = write(fds[1], &res, sizeof(res));
		_exit(n == (ssize_t)sizeof(res) ? 0 : 1);
	}
	close(fds[1]);
	do
		n = read(fds[0], &res, sizeof(res));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(res))
		res.ret = -EIO;
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return res.ret;
}

/* ---- the cache by serial ---- */

static struct kkey *kkey_get(struct keyfs_backend *b, kserial_t s)
{
	struct kkey *k;

	if (!b->nslots)
		return NULL;
	for (k = b->slots[hash_serial(s, b->nslots)]; k; k = k->next)
		if (k->serial == s)
			return k;
	return NULL;
}

static int kkey_grow(struct keyfs_backend *b)
{
	size_t nslots = b->nslots ? b->nslots * 2 : SLOTS_MIN;
	struct kkey **slots, *k, *next;

	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < b->nslots; i++)
		for (k = b->slots[i]; k; k = next) {
			size_t j = hash_serial(k->serial, nslots);

			next = k->next;
			k->next = slots[j];
			slots[j] = k;
		}
	free(b->slots);
	b->slots = slots;
	b->nslots = nslots;
	return 0;
}

/* The entry for s, made (first seen now) when there is none; NULL: ENOMEM. */
static struct kkey *kkey_make(struct keyfs_backend *b, kserial_t s)
{
	struct kkey *k = kkey_get(b, s);
	size_t i;

	if (k)
		return k;
	if (b->n >= b->nslots && kkey_grow(b) < 0)
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->serial = s;
	k->mtime = k->ctime = real_now();
	i = hash_serial(s, b->nslots);
	k->next = b->slots[i];
	b->slots[i] = k;
	b->n++;
	return k;
}

static void idx_free(struct kidx *x)
{
	struct ient *e, *next;

	if (!x)
		return;
	for (size_t i = 0; i < x->nslots; i++)
		for (e = x->by_serial[i]; e; e = next) {
			next = e->serial_next;
			free(e);
		}
	free(x->by_serial);
	free(x->by_name);
	free(x);
}

static void kkey_free(struct kkey *k)
{
	idx_free(k->idx);
	free(k->parents);
	free(k->desc);
	free(k);
}

/* Forget a key the kernel no longer has. */
static void kkey_drop(struct keyfs_backend *b, kserial_t s)
{
	struct kkey **pp, *k;

	if (!b->nslots)
		return;
	for (pp = &b->slots[hash_serial(s, b->nslots)]; (k = *pp);
	     pp = &k->next)
		if (k->serial == s) {
			*pp = k->next;
			kkey_free(k);
			b->n--;
			return;
		}
}

static void touch_payload(struct kkey *k)
{
	if (k)
		k->mtime = k->ctime = real_now();
}

static void touch_change(struct kkey *k)
{
	if (k)
		k->ctime = real_now();
}

static int parent_add(struct kkey *k, kserial_t ring)
{
	kserial_t *p;

	for (size_t i = 0; i < k->nparents; i++)
		if (k->parents[i] == ring)
			return 0;
	if (k->nparents == k->aparents) {
		size_t n = k->aparents ? k->aparents * 2 : 4;

		p = realloc(k->parents, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		k->parents = p;
		k->aparents = n;
	}
	k->parents[k->nparents++] = ring;
	return 0;
}

static void parent_del(struct kkey *k, kserial_t ring)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nparents; i++)
		if (k->parents[i] == ring) {
			k->parents[i] = k->parents[--k->nparents];
			return;
		}
}

/* Set what a description says.  A serial reused by a new key starts anew;
 * a change of uid, gid or perm seen here is a change of the key. */
static int kkey_note(struct kkey *k, const char *type, const char *desc)
{
	char *copy;

	if (k->desc && strcmp(k->type, type) == 0 && strcmp(k->desc, desc) == 0)
		return 0;
	if (strlen(type) > KEYFS_TYPE_MAX)
		return -EINVAL;
	copy = strdup(desc);
	if (!copy)
		return -ENOMEM;
	if (k->desc) {
		k->have_attr = false;
		k->exact_expiry = false;
		k->nparents = 0;
		k->mtime = k->ctime = real_now();
		idx_free(k->idx);
		k->idx = NULL;
	}
	free(k->desc);
	k->desc = copy;
	strcpy(k->type, type);
	return 0;
}

static void kkey_note_attr(struct kkey *k, uid_t uid, gid_t gid, uint32_t perm)
{
	if (k->have_attr &&
	    (k->uid != uid || k->gid != gid || k->perm != perm))
		touch_change(k);
	k->uid = uid;
	k->gid = gid;
	k->perm = perm;
	k->have_attr = true;
}

/* ---- describing ---- */

struct kdesc {
	const char *type;
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	const char *desc;
};

/* Split "type;uid;gid;perm;description" in place; the description may
 * itself hold ';'. */
static int parse_describe(char *text, struct kdesc *d)
{
	char *f[4], *p = text, *end;

	for (int i = 0; i < 4; i++) {
		f[i] = p;
		p = strchr(p, ';');
		if (!p)
			return -EIO;
		*p++ = '\0';
	}
	d->type = f[0];
	d->uid = (uid_t)strtol(f[1], &end, 10);
	if (*end)
		return -EIO;
	d->gid = (gid_t)strtol(f[2], &end, 10);
	if (*end)
		return -EIO;
	d->perm = (uint32_t)strtoul(f[3], &end, 16);
	if (*end)
		return -EIO;
	d->desc = p;
	return 0;
}

/* keyctl describe as keyfs; where keyfs may not view the key, as the
 * caller (whose own right to view is checked by perm_check afterwards). */
static int describe_text(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key, char **text_alloc)
{
	bool sw;
	int ret;

	ret = kerr(keyctl_describe_alloc(key, text_alloc));
	if (ret != -EACCES || is_mounter(b, c))
		return ret;
	ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return -EACCES;
	ret = kerr(keyctl_describe_alloc(key, text_alloc));
	caller_end(b, sw);
	return ret;
}

/* Describe key into the cache; *kp is its entry.  -errno as keyctl gives
 * it when the key cannot be described now. */
static int kkey_learn(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, struct kkey **kp)
{
	struct kdesc d;
	struct kkey *k;
	char *text;
	int ret;

	ret = describe_text(b, c, key, &text);
	if (ret < 0)
		return ret;
	ret = parse_describe(text, &d);
	if (ret < 0)
		goto out;
	k = kkey_make(b, key);
	if (!k) {
		ret = -ENOMEM;
		goto out;
	}
	ret = kkey_note(k, d.type, d.desc);
	if (ret < 0)
		goto out;
	kkey_note_attr(k, d.uid, d.gid, d.perm);
	*kp = k;
out:
	free(text);
	return ret;
}

/* ---- keyfs's own permission check for callers other than the mounter ---- */

/* keyfs's check, before the kernel's, for a caller other than the mounter:
 * the key's perm as freshly described, without possession (perm.h).  A key
 * that cannot be described gives keyctl's error, as the kernel checks
 * validity before permission. */
static int check_key(struct keyfs_backend *b, const struct keyfs_cred *c,
		     kserial_t key, unsigned want, unsigned or_want)
{
	struct kkey *k;
	int ret;

	if (is_mounter(b, c))
		return 0;
	ret = kkey_learn(b, c, key, &k);
	if (ret < 0)
		return ret;
	ret = perm_check(c, k->uid, k->gid, k->perm, false, want);
	if (ret < 0 && or_want)
		ret = perm_check(c, k->uid, k->gid, k->perm, false, or_want);
	return ret;
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

/* "serial flags usage timeout perm uid gid type description" */
static int parse_proc_line(const char *line, time_t now, struct pent *pe)
{
	unsigned serial, perm;
	char flags[8], tmo[8];
	int usage, uid, gid;

	if (sscanf(line, "%x %7s %d %7s %x %d %d", &serial, flags, &usage,
		   tmo, &perm, &uid, &gid) != 7)
		return -EIO;
	pe->serial = (kserial_t)serial;
	memcpy(pe->flags, flags, sizeof(pe->flags));
	pe->uid = (uid_t)uid;
	pe->gid = (gid_t)gid;
	pe->perm = perm;
	return parse_timeout(tmo, now, pe);
}

static void pcache_free(struct pcache *pc)
{
	free(pc->ents);
	free(pc->slots);
	memset(pc, 0, sizeof(*pc));
}

/* Replace the cache with a parse of text. */
static int pcache_fill(struct pcache *pc, const char *text)
{
	struct pcache n = { 0 };
	size_t lines = 0, cap;
	time_t now = time(NULL);
	const char *p;

	for (p = text; *p; p++)
		lines += *p == '\n';
	cap = lines + 1;
	n.ents = calloc(cap, sizeof(*n.ents));
	for (n.nslots = SLOTS_MIN; n.nslots < cap; n.nslots *= 2)
		;
	n.slots = calloc(n.nslots, sizeof(*n.slots));
	if (!n.ents || !n.slots) {
		pcache_free(&n);
		return -ENOMEM;
	}
	for (p = text; *p && n.n < cap; p = next_line(p))
		if (parse_proc_line(p, now, &n.ents[n.n]) == 0)
			n.n++;
	for (size_t i = 0; i < n.n; i++) {
		size_t j = hash_serial(n.ents[i].serial, n.nslots);

		n.ents[i].next = n.slots[j];
		n.slots[j] = &n.ents[i];
	}
	n.when = mono_now();
	n.valid = true;
	pcache_free(pc);
	*pc = n;
	return 0;
}

static int proc_read(struct keyfs_backend *b, char **text_alloc)
{
	char *text;
	int ret;

	ret = slurp(PROC_KEYS, &text, NULL);
	if (ret < 0)
		return ret;
	ret = pcache_fill(&b->proc, text);
	if (ret < 0 || !text_alloc)
		free(text);
	else
		*text_alloc = text;
	return ret;
}

/*
 * /proc/keys is dear: the kernel formats every key on the system and works
 * out possession for each.  It only tells what keyctl does not (expiry,
 * negative and pending states), so it is read again at most every
 * PROC_KEYS_MIN_AGE seconds even when the cache timeout is shorter; a key
 * that died is looked up in a fresh read (force).
 */
#define PROC_KEYS_MIN_AGE	1.0

static int proc_fresh(struct keyfs_backend *b, bool force)
{
	double max_age = b->cache_timeout > PROC_KEYS_MIN_AGE ?
			 b->cache_timeout : PROC_KEYS_MIN_AGE;

	if (!force && b->proc.valid && age_of(&b->proc.when) < max_age)
		return 0;
	return proc_read(b, NULL);
}

static struct pent *proc_find(struct keyfs_backend *b, kserial_t s)
{
	struct pent *pe;

	if (!b->proc.valid)
		return NULL;
	for (pe = b->proc.slots[hash_serial(s, b->proc.nslots)]; pe;
	     pe = pe->next)
		if (pe->serial == s)
			return pe;
	return NULL;
}

/* ---- keyring indexes ---- */

static struct kidx *idx_new(size_t hint)
{
	struct kidx *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	for (x->nslots = SLOTS_MIN; x->nslots < hint; x->nslots *= 2)
		;
	x->by_serial = calloc(x->nslots, sizeof(*x->by_serial));
	x->by_name = calloc(x->nslots, sizeof(*x->by_name));
	if (!x->by_serial || !x->by_name) {
		idx_free(x);
		return NULL;
	}
	x->built = mono_now();
	return x;
}

static struct ient *idx_by_serial(struct kidx *x, kserial_t s)
{
	struct ient *e;

	for (e = x->by_serial[hash_serial(s, x->nslots)]; e;
	     e = e->serial_next)
		if (e->serial == s)
			return e;
	return NULL;
}

static struct ient *idx_by_name(struct keyfs_backend *b, struct kidx *x,
				const char *type, const char *desc)
{
	uint32_t h = hash_name(type, desc);
	struct ient *e;
	struct kkey *k;

	for (e = x->by_name[h & (x->nslots - 1)]; e; e = e->name_next) {
		if (!e->named || e->hash != h)
			continue;
		k = kkey_get(b, e->serial);
		if (k && k->desc && strcmp(k->type, type) == 0 &&
		    strcmp(k->desc, desc) == 0)
			return e;
	}
	return NULL;
}

static void idx_chain(struct kidx *x, struct ient *e)
{
	size_t i = hash_serial(e->serial, x->nslots);

	e->serial_next = x->by_serial[i];
	x->by_serial[i] = e;
	if (e->named) {
		i = e->hash & (x->nslots - 1);
		e->name_next = x->by_name[i];
		x->by_name[i] = e;
	}
}

static int idx_grow(struct kidx *x)
{
	struct kidx n = *x;
	struct ient *e, *next;

	n.nslots = x->nslots * 2;
	n.by_serial = calloc(n.nslots, sizeof(*n.by_serial));
	n.by_name = calloc(n.nslots, sizeof(*n.by_name));
	if (!n.by_serial || !n.by_name) {
		free(n.by_serial);
		free(n.by_name);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->nslots; i++)
		for (e = x->by_serial[i]; e; e = next) {
			next = e->serial_next;
			idx_chain(&n, e);
		}
	free(x->by_serial);
	free(x->by_name);
	*x = n;
	return 0;
}

/* Add serial s (whose entry k may be NULL or undescribed) to the index. */
static int idx_insert(struct kidx *x, kserial_t s, const struct kkey *k)
{
	struct ient *e;

	if (idx_by_serial(x, s))
		return 0;
	if (x->n >= x->nslots && idx_grow(x) < 0)
		return -ENOMEM;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->serial = s;
	e->named = k && k->desc;
	if (e->named) {
		e->hash = hash_name(k->type, k->desc);
		e->keyring = keyfs_is_keyring_type(k->type);
	}
	idx_chain(x, e);
	x->n++;
	x->nkeyrings += e->keyring;
	return 0;
}

static void idx_remove(struct kidx *x, kserial_t s)
{
	struct ient **pp, *e = NULL;

	for (pp = &x->by_serial[hash_serial(s, x->nslots)]; *pp;
	     pp = &(*pp)->serial_next)
		if ((*pp)->serial == s) {
			e = *pp;
			*pp = e->serial_next;
			break;
		}
	if (!e)
		return;
	if (e->named)
		for (pp = &x->by_name[e->hash & (x->nslots - 1)]; *pp;
		     pp = &(*pp)->name_next)
			if (*pp == e) {
				*pp = e->name_next;
				break;
			}
	x->n--;
	x->nkeyrings -= e->keyring;
	free(e);
}

/* keyfs linked k into ring: the index (if built) follows, displacing the
 * key of the same type and description as the kernel does. */
static void note_link(struct keyfs_backend *b, kserial_t ring, struct kkey *k)
{
	struct kkey *r = kkey_get(b, ring);
	struct ient *old;

	if (!k)
		return;
	parent_add(k, ring);	/* on ENOMEM nlink is merely low */
	if (!r || !r->idx || idx_by_serial(r->idx, k->serial))
		return;
	if (k->desc) {
		old = idx_by_name(b, r->idx, k->type, k->desc);
		if (old) {
			parent_del(kkey_get(b, old->serial), ring);
			idx_remove(r->idx, old->serial);
		}
	}
	if (idx_insert(r->idx, k->serial, k) < 0) {
		/* an index missing a key would hide it: list anew next time */
		idx_free(r->idx);
		r->idx = NULL;
	}
}

/* ring changed in a way keyfs cannot follow: list it anew next time. */
static void note_unknown(struct keyfs_backend *b, kserial_t ring)
{
	struct kkey *r = kkey_get(b, ring);

	if (r && r->idx)
		r->idx->built = (struct timespec){ 0, 0 };
}

static void note_unlink(struct keyfs_backend *b, kserial_t ring, kserial_t s)
{
	struct kkey *r = kkey_get(b, ring);

	parent_del(kkey_get(b, s), ring);
	if (r && r->idx)
		idx_remove(r->idx, s);
}

/* Build ring's index anew from a listing: serials keyfs has described
 * before cost nothing, new ones are described once. */
static int idx_refresh(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t ring, const kserial_t *list, size_t n)
{
	struct kidx *x, *old;
	struct kkey *r, *k;
	bool changed;
	int ret;

	r = kkey_make(b, ring);
	x = idx_new(n);
	if (!r || !x) {
		idx_free(x);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		k = kkey_get(b, list[i]);
		if (!k || !k->desc)
			if (kkey_learn(b, c, list[i], &k) < 0)
				k = kkey_get(b, list[i]);
		ret = idx_insert(x, list[i], k);
		if (ret == 0 && k)
			ret = parent_add(k, ring);
		if (ret < 0) {
			idx_free(x);
			return ret;
		}
	}
	old = r->idx;
	changed = old && old->n != x->n;
	for (size_t i = 0; old && i < old->nslots; i++)
		for (struct ient *e = old->by_serial[i]; e; e = e->serial_next)
			if (!idx_by_serial(x, e->serial)) {
				parent_del(kkey_get(b, e->serial), ring);
				changed = true;
			}
	if (changed)
		touch_payload(r);
	idx_free(old);
	r->idx = x;
	return 0;
}

/* ---- payloads ---- */

/* keyctl read with the size-probe protocol: ask the length, allocate,
 * read, and again if it grew meanwhile.  The buffer is the caller's, to
 * wipe and free; NULL when empty. */
static int read_payload(kserial_t key, void **buf_alloc, size_t *lenp)
{
	void *buf = NULL;
	long len, got;

	len = keyctl_read(key, NULL, 0);
	for (;;) {
		if (len < 0)
			return -errno;
		if (len == 0) {
			*buf_alloc = NULL;
			*lenp = 0;
			return 0;
		}
		buf = malloc((size_t)len);
		if (!buf)
			return -ENOMEM;
		got = keyctl_read(key, buf, (size_t)len);
		if (got >= 0 && got <= len)
			break;
		explicit_bzero(buf, (size_t)len);
		free(buf);
		len = got;
	}
	*buf_alloc = buf;
	*lenp = (size_t)got;
	return 0;
}

/* A keyring's links, read as the caller; the index follows the listing. */
static int read_keyring(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t ring, kserial_t **out, size_t *n)
{
	void *buf = NULL;
	size_t len = 0;
	bool sw;
	int ret;

	ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = read_payload(ring, &buf, &len);
	caller_end(b, sw);
	if (ret < 0)
		return ret;
	ret = idx_refresh(b, c, ring, buf, len / sizeof(kserial_t));
	if (ret < 0) {
		free(buf);
		return ret;
	}
	*out = buf;
	*n = len / sizeof(kserial_t);
	return 0;
}

/* ring's index, listed anew when older than the cache timeout. */
static int idx_get(struct keyfs_backend *b, const struct keyfs_cred *c,
		   kserial_t ring, struct kidx **xp)
{
	struct kkey *r = kkey_get(b, ring);
	kserial_t *list;
	size_t n;
	int ret;

	if (!r || !r->idx || age_of(&r->idx->built) >= b->cache_timeout) {
		ret = read_keyring(b, c, ring, &list, &n);
		if (ret < 0)
			return ret;
		free(list);
		r = kkey_get(b, ring);
	}
	*xp = r->idx;
	return 0;
}

static int payload_limit(const char *type, size_t len)
{
	if ((strcmp(type, "user") == 0 || strcmp(type, "logon") == 0) &&
	    len > KEYFS_USER_PAYLOAD_MAX)
		return -EFBIG;
	if (strcmp(type, "big_key") == 0 && len > KEYFS_BIG_PAYLOAD_MAX)
		return -EFBIG;
	return 0;
}

/* ---- init and destroy ---- */

static int kernel_init(struct keyfs_backend **bp,
		       const struct backend_config *cfg, char *err,
		       size_t errlen)
{
	struct keyfs_backend *b;
	int n, ret;

	/* a daemon may have no process keyring yet: ENOKEY still answers */
	if (keyctl_get_keyring_ID(KEY_SPEC_PROCESS_KEYRING, 0) < 0 &&
	    errno != ENOKEY) {
		ret = -errno;
		if (ret == -ENOSYS)
			snprintf(err, errlen, "the kernel has no key retention "
				 "service (CONFIG_KEYS): use -o backend=memory");
		else if (ret == -EPERM || ret == -EACCES)
			snprintf(err, errlen, "keyctl is refused (%s), likely "
				 "by a seccomp filter: use -o backend=memory",
				 strerror(-ret));
		else
			snprintf(err, errlen, "keyctl fails: %s: use -o "
				 "backend=memory", strerror(-ret));
		return ret;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		goto nomem;
	b->uid = cfg->uid;
	b->gid = cfg->gid;
	b->cache_timeout = cfg->cache_timeout;
	b->own_fsuid = (uid_t)setfsuid((uid_t)-1);
	b->own_fsgid = (gid_t)setfsgid((gid_t)-1);
	n = getgroups(0, NULL);
	if (n > 0) {
		b->own_groups = calloc((size_t)n, sizeof(gid_t));
		if (!b->own_groups)
			goto nomem;
		n = getgroups(n, b->own_groups);
	}
	b->own_ngroups = n > 0 ? n : 0;
	*bp = b;
	return 0;
nomem:
	free(b);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

static void kernel_destroy(struct keyfs_backend *b)
{
	struct kkey *k, *next;

	if (!b)
		return;
	for (size_t i = 0; i < b->nslots; i++)
		for (k = b->slots[i]; k; k = next) {
			next = k->next;
			kkey_free(k);
		}
	free(b->slots);
	pcache_free(&b->proc);
	free(b->own_groups);
	free(b);
}

/* ---- special keyrings ---- */

static int kernel_special(struct keyfs_backend *b, const struct keyfs_cred *c,
			  int which, bool create, kserial_t *out)
{
	key_serial_t s;

	(void)b;
	(void)c;
	if (which < KEYFS_SPEC_USER_SESSION || which > KEYFS_SPEC_THREAD)
		return -EINVAL;
	s = keyctl_get_keyring_ID(which, create);
	if (s < 0)
		return -errno;
	*out = s;
	return 0;
}

/* Linked into keyfs's own process keyring, so nothing of the user's is
 * touched. */
static int kernel_persistent(struct keyfs_backend *b,
			     const struct keyfs_cred *c, kserial_t *out)
{
	long s;

	s = keyctl_get_persistent(c ? c->uid : b->uid,
				  KEY_SPEC_PROCESS_KEYRING);
	if (s < 0)
		return -errno;
	*out = (kserial_t)s;
	return 0;
}

/* ---- describe ---- */

/* The expiry keyfs set is exact; /proc/keys' rounded value stands where
 * keyfs set none, or where a later /proc/keys shows someone else set
 * another one. */
static time_t key_expiry(struct keyfs_backend *b, struct kkey *k,
			 const struct pent *pe, enum key_state state)
{
	if (k->exact_expiry && pe && after(&b->proc.when, &k->expiry_set)) {
		bool same;

		switch (pe->tmo) {
		case TMO_NONE:
			same = k->expiry == 0;
			break;
		case TMO_EXPIRED:
			same = k->expiry != 0 && k->expiry <= pe->lo + 1;
			break;
		default:
			same = k->expiry >= pe->lo - 1 &&
			       k->expiry <= pe->hi + 1;
			break;
		}
		if (!same && state != KEY_STATE_REVOKED)
			k->exact_expiry = false;
	}
	if (k->exact_expiry)
		return k->expiry;
	if (!pe || state == KEY_STATE_REVOKED)
		return 0;
	return pe->hi;	/* rounded up: never earlier than the kernel will expire it */
}

/* A key keyctl no longer describes (revoked, expired, negative,
 * invalidated): what keyfs remembers, with /proc/keys' ids and perm. */
static int describe_dead(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key, int err, struct key_info *out)
{
	struct kkey *k = kkey_get(b, key);
	struct pent *pe;
	enum key_state state;
	int ret;

	if (err != -EKEYREVOKED && err != -EKEYEXPIRED && err != -ENOKEY)
		return err;
	/* The key died since the last parse (ENOKEY may even mean gone):
	 * only a fresh /proc/keys tells.  Dead keys are few, so it is cheap. */
	ret = proc_fresh(b, true);
	if (ret < 0)
		return err;
	pe = proc_find(b, key);
	if (err == -ENOKEY && !pe) {
		kkey_drop(b, key);
		return err;
	}
	if (!k || !k->desc)
		return err;
	if (pe && pe->flags[6] == 'i')
		state = KEY_STATE_INVALIDATED;
	else if (err == -EKEYREVOKED)
		state = KEY_STATE_REVOKED;
	else if (err == -EKEYEXPIRED)
		state = KEY_STATE_EXPIRED;
	else if (pe && pe->flags[5] == 'N')
		state = KEY_STATE_NEGATIVE;
	else
		return err;
	if (pe)
		kkey_note_attr(k, pe->uid, pe->gid, pe->perm);
	if (!k->have_attr)
		return err;
	if (!is_mounter(b, c) &&
	    perm_check(c, k->uid, k->gid, k->perm, false, KEYFS_PERM_VIEW) < 0)
		return -EACCES;
	memset(out, 0, sizeof(*out));
	out->state = state;
	out->expiry = key_expiry(b, k, pe, state);
	return 0;
}

/* The payload length as the caller may read it, or -errno (EACCES where
 * keyfs does not let it read). */
static long key_size(struct keyfs_backend *b, const struct keyfs_cred *c,
		     const struct kkey *k)
{
	bool sw;
	long len;

	if (!is_mounter(b, c) &&
	    perm_check(c, k->uid, k->gid, k->perm, false, KEYFS_PERM_READ) < 0)
		return -EACCES;
	if (caller_begin(b, c, &sw) < 0)
		return -EACCES;
	len = keyctl_read(k->serial, NULL, 0);
	if (len < 0)
		len = -errno;
	caller_end(b, sw);
	return len;
}

static int describe_live(struct keyfs_backend *b, const struct keyfs_cred *c,
			 struct kkey *k, struct key_info *out)
{
	kserial_t serial = k->serial;
	struct pent *pe;
	struct kidx *x;
	long size;

	if (!is_mounter(b, c) &&
	    perm_check(c, k->uid, k->gid, k->perm, false, KEYFS_PERM_VIEW) < 0)
		return -EACCES;
	memset(out, 0, sizeof(*out));
	out->state = KEY_STATE_VALID;
	if (proc_fresh(b, false) == 0 && (pe = proc_find(b, serial))) {
		if (pe->flags[5] == 'N')
			out->state = KEY_STATE_NEGATIVE;
		else if (pe->flags[0] != 'I')
			out->state = KEY_STATE_PENDING;
	} else {
		pe = NULL;
	}
	/* keyctl describes a negative key but does not read it: that tells
	 * a key newer than the last /proc/keys */
	size = out->state == KEY_STATE_PENDING ? 0 : key_size(b, c, k);
	if (size == -ENOKEY)
		out->state = KEY_STATE_NEGATIVE;
	out->expiry = key_expiry(b, k, pe, out->state);
	if (keyfs_is_keyring_type(k->type)) {
		out->nlink = 2;
		/* listing a keyring may describe its keys: k may move */
		if (idx_get(b, c, serial, &x) == 0)
			out->nlink += x->nkeyrings;
	}
	k = kkey_get(b, serial);
	if (!k)
		return -ENOKEY;
	if (!keyfs_is_keyring_type(k->type))
		out->nlink = k->nparents ? (unsigned)k->nparents : 1;
	out->size = size < 0 ? 0 : (size_t)size;
	return 0;
}

static int kernel_describe(struct keyfs_backend *b, const struct keyfs_cred *c,
			   kserial_t key, struct key_info *out)
{
	struct key_info info;
	struct kkey *k = NULL;
	int ret;

	ret = kkey_learn(b, c, key, &k);
	if (ret == 0)
		ret = describe_live(b, c, k, &info);
	else
		ret = describe_dead(b, c, key, ret, &info);
	if (ret < 0)
		return ret;
	k = kkey_get(b, key);
	if (!k)
		return -ENOKEY;
	info.serial = key;
	strcpy(info.type, k->type);
	snprintf(info.desc, sizeof(info.desc), "%s", k->desc);
	info.uid = k->uid;
	info.gid = k->gid;
	info.perm = k->perm;
	if (!info.nlink)
		info.nlink = keyfs_is_keyring_type(k->type) ? 2 :
			     k->nparents ? (unsigned)k->nparents : 1;
	info.possessed = is_mounter(b, c);
	info.mtime = k->mtime;
	info.ctime = k->ctime;
	*out = info;
	return 0;
}

/* ---- reading and listing ---- */

static int kernel_read(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t key, void **buf_alloc, size_t *len)
{
	bool sw;
	int ret;

	ret = check_key(b, c, key, KEYFS_PERM_READ, 0);
	if (ret < 0)
		return ret;
	ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = read_payload(key, buf_alloc, len);
	caller_end(b, sw);
	return ret;
}

static int kernel_list(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t keyring, kserial_t **out_alloc, size_t *n)
{
	kserial_t *list;
	size_t cnt;
	int ret;

	ret = check_key(b, c, keyring, KEYFS_PERM_READ, 0);
	if (ret < 0)
		return ret;
	ret = read_keyring(b, c, keyring, &list, &cnt);
	if (ret < 0)
		return ret;
	*out_alloc = list;
	*n = cnt;
	return 0;
}

static int kernel_find(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t keyring, const char *type, const char *desc,
		       kserial_t *out)
{
	struct ient *e;
	struct kidx *x;
	int ret;

	ret = check_key(b, c, keyring, KEYFS_PERM_SEARCH, KEYFS_PERM_READ);
	if (ret < 0)
		return ret;
	ret = idx_get(b, c, keyring, &x);
	/* search alone lets the kernel find a key by name, though not read
	 * the keyring: keyfs lists it for the caller its check let in */
	if (ret == -EACCES && !is_mounter(b, c))
		ret = idx_get(b, NULL, keyring, &x);
	if (ret < 0)
		return ret;
	e = idx_by_name(b, x, type, desc);
	if (!e)
		return -ENOKEY;
	*out = e->serial;
	return 0;
}

static int kernel_list_all(struct keyfs_backend *b, const struct keyfs_cred *c,
			   kserial_t **out_alloc, size_t *n)
{
	kserial_t *out = NULL;
	size_t cnt = 0;
	int ret;

	ret = proc_read(b, NULL);
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

/* ---- changing keys ---- */

/* The key's cache entry with its type and description, for the index. */
static struct kkey *kkey_known(struct keyfs_backend *b,
			       const struct keyfs_cred *c, kserial_t key)
{
	struct kkey *k = kkey_get(b, key);

	if (!k || !k->desc)
		if (kkey_learn(b, c, key, &k) < 0)
			k = kkey_make(b, key);
	return k;
}

/* keyfs made serial s in ring through add_key, or updated it: add_key's
 * match is exact, so the key has this type and description. */
static void note_added(struct keyfs_backend *b, kserial_t ring, kserial_t s,
		       const char *type, const char *desc)
{
	struct kkey *k = kkey_get(b, s);
	bool known = k && k->desc && strcmp(k->type, type) == 0 &&
		     strcmp(k->desc, desc) == 0;

	if (!k)
		k = kkey_make(b, s);
	if (!k || kkey_note(k, type, desc) < 0)
		return;
	if (known)
		touch_payload(k);
	touch_payload(kkey_get(b, ring));
	note_link(b, ring, k);
}

/* add_key(2) updates the key of that type and description already in the
 * keyring, and takes write on it.  For a caller other than the mounter that
 * key is the one in the keyring at the moment of the call, which no index
 * of keyfs's can tell: the kernel checks it, without keyfs's possession. */
static int kernel_add(struct keyfs_backend *b, const struct keyfs_cred *c,
		      const char *type, const char *desc, const void *payload,
		      size_t len, kserial_t keyring, kserial_t *out)
{
	struct stranger st = {
		.op = ST_ADD, .type = type, .desc = desc, .payload = payload,
		.len = len, .ring = keyring,
	};
	long s;
	int ret;

	ret = payload_limit(type, len);
	if (ret == 0)
		ret = check_key(b, c, keyring, KEYFS_PERM_WRITE, 0);
	if (ret < 0)
		return ret;
	if (is_mounter(b, c)) {
		s = add_key(type, desc, payload, len, keyring);
		if (s < 0)
			s = -errno;
	} else {
		s = stranger_call(c, &st);
	}
	if (s < 0)
		return (int)s;
	note_added(b, keyring, (kserial_t)s, type, desc);
	*out = (kserial_t)s;
	return 0;
}

/* Does ring link key now?  Read as keyfs, else as the caller; the index
 * follows the listing. */
static bool links_now(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t ring, kserial_t key)
{
	kserial_t *list = NULL;
	size_t n = 0;
	bool found = false;

	if (read_keyring(b, NULL, ring, &list, &n) < 0 &&
	    (is_mounter(b, c) || read_keyring(b, c, ring, &list, &n) < 0))
		return false;
	for (size_t i = 0; i < n; i++)
		found |= list[i] == key;
	free(list);
	return found;
}

/*
 * KEYCTL_UPDATE takes at most a page.  `keyctl padd` takes the type's
 * whole limit: add_key(2) into a keyring that links the key updates it in
 * place, and needs write on that keyring and on the key, nothing more (no
 * link permission, no keyring of keyfs's).  keyfs does the same, as the
 * caller, in a keyring it has just seen linking the key: a keyring holds
 * one key per type and description, so add_key finds this key there.
 * Should another process relink that name in between, add_key acts on
 * the key it then finds (or makes one), with the kernel's check for the
 * caller, and the write fails with EIO.
 */
static int update_large(struct keyfs_backend *b, const struct keyfs_cred *c,
			const struct kkey *k, const void *payload, size_t len)
{
	struct stranger st = {
		.op = ST_ADD, .payload = payload, .len = len,
	};
	char type[KEYFS_TYPE_MAX + 1], *desc;
	kserial_t key = k->serial, *rings;
	size_t nrings = k->nparents;
	int ret = -EINVAL;	/* no keyring: what KEYCTL_UPDATE says */
	long got;

	if (!nrings)
		return ret;
	/* listing keyrings changes k's entry: work on copies */
	strcpy(type, k->type);
	desc = strdup(k->desc);
	rings = malloc(nrings * sizeof(*rings));
	if (!rings || !desc) {
		free(rings);
		free(desc);
		return -ENOMEM;
	}
	memcpy(rings, k->parents, nrings * sizeof(*rings));
	st.type = type;
	st.desc = desc;
	for (size_t i = 0; i < nrings; i++) {
		st.ring = rings[i];
		if (!links_now(b, c, st.ring, key))
			continue;
		ret = check_key(b, c, st.ring, KEYFS_PERM_WRITE, 0);
		if (ret < 0)
			continue;
		if (is_mounter(b, c)) {
			got = add_key(type, desc, payload, len, st.ring);
			if (got < 0)
				got = -errno;
		} else {
			got = stranger_call(c, &st);
		}
		if (got == key) {
			ret = 0;
			break;
		}
		ret = got < 0 ? (int)got : -EIO;
		if (got >= 0) {
			/* someone relinked the name in between: which key
			 * add_key found or made cannot be told, so nothing is
			 * undone (the kernel let the caller write it) */
			note_unknown(b, st.ring);
			break;
		}
	}
	free(rings);
	free(desc);
	return ret;
}

static int kernel_update(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key, const void *payload, size_t len)
{
	struct kkey *k;
	bool sw;
	int ret;

	ret = check_key(b, c, key, KEYFS_PERM_WRITE, 0);
	if (ret < 0)
		return ret;
	k = kkey_get(b, key);
	if (!k || !k->desc)
		kkey_learn(b, c, key, &k);
	k = kkey_get(b, key);
	if (k && k->desc) {
		ret = payload_limit(k->type, len);
		if (ret < 0)
			return ret;
	}
	if (len > (size_t)sysconf(_SC_PAGESIZE) && k && k->desc) {
		ret = update_large(b, c, k, payload, len);
	} else {
		ret = caller_begin(b, c, &sw);
		if (ret < 0)
			return ret;
		ret = kerr(keyctl_update(key, payload, len));
		caller_end(b, sw);
	}
	if (ret == 0)
		touch_payload(kkey_get(b, key));
	return ret;
}

static int kernel_link(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t key, kserial_t keyring)
{
	bool sw;
	int ret;

	ret = check_key(b, c, key, KEYFS_PERM_LINK, 0);
	if (ret == 0)
		ret = check_key(b, c, keyring, KEYFS_PERM_WRITE, 0);
	if (ret == 0)
		ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = kerr(keyctl_link(key, keyring));
	caller_end(b, sw);
	if (ret < 0)
		return ret;
	touch_payload(kkey_get(b, keyring));
	touch_change(kkey_get(b, key));
	note_link(b, keyring, kkey_known(b, c, key));
	return 0;
}

static int kernel_unlink(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key, kserial_t keyring)
{
	bool sw;
	int ret;

	ret = check_key(b, c, keyring, KEYFS_PERM_WRITE, 0);
	if (ret == 0)
		ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = kerr(keyctl_unlink(key, keyring));
	caller_end(b, sw);
	if (ret < 0)
		return ret;
	touch_payload(kkey_get(b, keyring));
	touch_change(kkey_get(b, key));
	note_unlink(b, keyring, key);
	return 0;
}

static int kernel_move(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t key, kserial_t from, kserial_t to,
		       unsigned flags)
{
	unsigned kflags = flags & KEYFS_MOVE_EXCL ? KEYCTL_MOVE_EXCL : 0;
	bool sw;
	int ret;

	ret = check_key(b, c, key, KEYFS_PERM_LINK, 0);
	if (ret == 0)
		ret = check_key(b, c, from, KEYFS_PERM_WRITE, 0);
	if (ret == 0)
		ret = check_key(b, c, to, KEYFS_PERM_WRITE, 0);
	if (ret == 0)
		ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = kerr(keyctl_move(key, from, to, kflags));
	caller_end(b, sw);
	if (ret < 0)
		return ret;
	touch_payload(kkey_get(b, from));
	touch_payload(kkey_get(b, to));
	touch_change(kkey_get(b, key));
	note_unlink(b, from, key);
	note_link(b, to, kkey_known(b, c, key));
	return 0;
}

/* The shape of the one-key operations: keyfs's own check, then the call
 * with the caller's ids. */
static int keyctl_as(struct keyfs_backend *b, const struct keyfs_cred *c,
		     kserial_t key, unsigned want, unsigned or_want,
		     long (*op)(key_serial_t))
{
	bool sw;
	int ret = check_key(b, c, key, want, or_want);

	if (ret == 0)
		ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = kerr(op(key));
	caller_end(b, sw);
	return ret;
}

static int kernel_revoke(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key)
{
	int ret;

	/* the kernel takes setattr where write is missing */
	ret = keyctl_as(b, c, key, KEYFS_PERM_WRITE, KEYFS_PERM_SETATTR,
			keyctl_revoke);
	if (ret == 0)
		touch_change(kkey_get(b, key));
	return ret;
}

static int kernel_invalidate(struct keyfs_backend *b,
			     const struct keyfs_cred *c, kserial_t key)
{
	struct kkey *k;
	int ret;

	ret = keyctl_as(b, c, key, KEYFS_PERM_SEARCH, 0, keyctl_invalidate);
	if (ret < 0)
		return ret;
	/* the kernel's collector unlinks it from every keyring at once */
	k = kkey_get(b, key);
	if (!k)
		return 0;
	touch_change(k);
	while (k->nparents) {
		kserial_t ring = k->parents[0];

		touch_payload(kkey_get(b, ring));
		note_unlink(b, ring, key);
	}
	return 0;
}

static int kernel_clear(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t keyring)
{
	struct kkey *r;
	int ret;

	ret = keyctl_as(b, c, keyring, KEYFS_PERM_WRITE, 0, keyctl_clear);
	if (ret < 0)
		return ret;
	r = kkey_get(b, keyring);
	if (!r)
		return 0;
	touch_payload(r);
	if (!r->idx)
		return 0;
	for (size_t i = 0; i < r->idx->nslots; i++)
		for (struct ient *e = r->idx->by_serial[i]; e;
		     e = e->serial_next)
			parent_del(kkey_get(b, e->serial), keyring);
	idx_free(r->idx);
	r->idx = idx_new(0);	/* empty and fresh; NULL: list anew */
	return 0;
}

static int kernel_setperm(struct keyfs_backend *b, const struct keyfs_cred *c,
			  kserial_t key, uint32_t perm)
{
	struct kkey *k;
	bool sw;
	int ret;

	if (perm & ~(uint32_t)0x3f3f3f3f)
		return -EINVAL;
	ret = check_key(b, c, key, KEYFS_PERM_SETATTR, 0);
	/* keyfs may be root: the owner rule must be keyfs's own */
	if (ret == 0)
		ret = perm_setperm_allowed(c, kkey_get(b, key)->uid, is_mounter(b, c));
	if (ret == 0)
		ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = kerr(keyctl_setperm(key, perm));
	caller_end(b, sw);
	k = kkey_get(b, key);
	if (ret == 0 && k) {
		if (k->have_attr)
			k->perm = perm;
		touch_change(k);
	}
	return ret;
}

static int kernel_chown(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t key, uid_t uid, gid_t gid)
{
	struct kkey *k;
	bool sw;
	int ret;

	if (uid == (uid_t)-1 && gid == (gid_t)-1)
		return 0;
	ret = check_key(b, c, key, KEYFS_PERM_SETATTR, 0);
	/* keyfs may hold CAP_SYS_ADMIN: only the mounter acts with it */
	if (ret == 0)
		ret = perm_chown_allowed(c, kkey_get(b, key)->uid,
					 kkey_get(b, key)->gid, uid, gid,
					 is_mounter(b, c));
	if (ret == 0)
		ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = kerr(keyctl_chown(key, uid, gid));
	caller_end(b, sw);
	k = kkey_get(b, key);
	if (ret == 0 && k) {
		if (k->have_attr && uid != (uid_t)-1)
			k->uid = uid;
		if (k->have_attr && gid != (gid_t)-1)
			k->gid = gid;
		touch_change(k);
	}
	return ret;
}

static int kernel_set_timeout(struct keyfs_backend *b,
			      const struct keyfs_cred *c, kserial_t key,
			      unsigned secs)
{
	struct kkey *k;
	bool sw;
	int ret;

	ret = check_key(b, c, key, KEYFS_PERM_SETATTR, 0);
	if (ret == 0)
		ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = kerr(keyctl_set_timeout(key, secs));
	caller_end(b, sw);
	if (ret < 0)
		return ret;
	/* the kernel counts from the same real-time second */
	k = kkey_make(b, key);
	if (k) {
		k->exact_expiry = true;
		k->expiry = secs ? time(NULL) + (time_t)secs : 0;
		k->expiry_set = mono_now();
		touch_change(k);
	}
	return 0;
}

static int kernel_restrict(struct keyfs_backend *b, const struct keyfs_cred *c,
			   kserial_t keyring, const char *type,
			   const char *restriction)
{
	bool sw;
	int ret;

	ret = check_key(b, c, keyring, KEYFS_PERM_SETATTR, 0);
	if (ret == 0)
		ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = kerr(keyctl_restrict_keyring(keyring, type, restriction));
	caller_end(b, sw);
	if (ret == 0)
		touch_change(kkey_get(b, keyring));
	return ret;
}

/* keyfs's thread, process and session keyrings, the ones request_key(2)
 * searches for keyfs; 0 where there is none. */
static void search_tops(kserial_t tops[ST_TOPS])
{
	static const int which[ST_TOPS] = {
		KEY_SPEC_THREAD_KEYRING, KEY_SPEC_PROCESS_KEYRING,
		KEY_SPEC_SESSION_KEYRING,
	};

	for (int i = 0; i < ST_TOPS; i++) {
		key_serial_t s = keyctl_get_keyring_ID(which[i], 0);

		tops[i] = s < 0 ? 0 : s;
	}
}

/*
 * request_key(2) searches keyfs's own keyrings.  The mounter possesses
 * them and makes the call as keyfs.  Any other caller possesses nothing:
 * the search, the link into dest and a callout's construction run without
 * keyfs's possession (stranger_call), so the kernel finds only keys the
 * caller may search by its own ids, and refuses the link (link permission
 * on the key, write on dest) before it makes it.
 */
static int request_common(struct keyfs_backend *b, const struct keyfs_cred *c,
			  const char *type, const char *desc,
			  const char *callout, kserial_t dest, kserial_t *out)
{
	struct stranger st = {
		.op = ST_REQUEST, .type = type, .desc = desc,
		.callout = callout, .ring = dest,
	};
	long s;
	struct kkey *k;
	int ret = 0;

	if (dest)
		ret = check_key(b, c, dest, KEYFS_PERM_WRITE, 0);
	if (ret < 0)
		return ret;
	if (is_mounter(b, c)) {
		s = request_key(type, desc, callout, dest);
		if (s < 0)
			s = -errno;
	} else {
		search_tops(st.tops);
		s = stranger_call(c, &st);
	}
	ret = s < 0 ? (int)s : 0;
	/* a failed construction may still link a negative key into dest */
	if (ret < 0 && dest)
		note_unknown(b, dest);
	if (ret < 0)
		return ret;
	/* the match may be inexact for some types: describe what was found */
	k = kkey_known(b, c, (kserial_t)s);
	if (dest) {
		touch_payload(kkey_get(b, dest));
		note_link(b, dest, k);
	}
	*out = (kserial_t)s;
	return 0;
}

static int kernel_request(struct keyfs_backend *b, const struct keyfs_cred *c,
			  const char *type, const char *desc,
			  const char *callout, kserial_t dest, kserial_t *out)
{
	return request_common(b, c, type, desc, callout, dest, out);
}

static int kernel_search(struct keyfs_backend *b, const struct keyfs_cred *c,
			 const char *type, const char *desc, kserial_t *out)
{
	return request_common(b, c, type, desc, NULL, 0, out);
}

static int kernel_security(struct keyfs_backend *b, const struct keyfs_cred *c,
			   kserial_t key, char **label_alloc)
{
	bool sw;
	int ret;

	ret = check_key(b, c, key, KEYFS_PERM_VIEW, 0);
	if (ret == 0)
		ret = caller_begin(b, c, &sw);
	if (ret < 0)
		return ret;
	ret = kerr(keyctl_get_security_alloc(key, label_alloc));
	caller_end(b, sw);
	return ret;
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
		if (parse_proc_line(p, now, &pe) < 0 ||
		    perm_check(c, pe.uid, pe.gid, pe.perm, false,
			       KEYFS_PERM_VIEW) < 0)
			continue;
		memmove(w, p, (size_t)(next - p));
		w += next - p;
	}
	*w = '\0';
}

static int kernel_proc_keys(struct keyfs_backend *b,
			    const struct keyfs_cred *c, char **text_alloc)
{
	char *text;
	int ret;

	ret = proc_read(b, &text);
	if (ret < 0)
		return ret;
	if (!is_mounter(b, c))
		filter_proc_keys(c, text);
	*text_alloc = text;
	return 0;
}

static int kernel_proc_key_users(struct keyfs_backend *b,
				 const struct keyfs_cred *c, char **text_alloc)
{
	(void)b;
	(void)c;
	return slurp(PROC_KEY_USERS, text_alloc, NULL);
}

/* Names as `keyctl supports` prints them, by capability byte and bit. */
static const struct {
	const char *name;
	unsigned byte;
	unsigned bit;
} caps[] = {
	{ "have_capabilities", 0, KEYCTL_CAPS0_CAPABILITIES },
	{ "have_persistent_keyrings", 0, KEYCTL_CAPS0_PERSISTENT_KEYRINGS },
	{ "have_dh_compute", 0, KEYCTL_CAPS0_DIFFIE_HELLMAN },
	{ "have_public_key", 0, KEYCTL_CAPS0_PUBLIC_KEY },
	{ "have_big_key_type", 0, KEYCTL_CAPS0_BIG_KEY },
	{ "have_key_invalidate", 0, KEYCTL_CAPS0_INVALIDATE },
	{ "have_restrict_keyring", 0, KEYCTL_CAPS0_RESTRICT_KEYRING },
	{ "have_move_key", 0, KEYCTL_CAPS0_MOVE },
	{ "have_ns_keyring_name", 1, KEYCTL_CAPS1_NS_KEYRING_NAME },
	{ "have_ns_key_tag", 1, KEYCTL_CAPS1_NS_KEY_TAG },
	{ "have_notify", 1, KEYCTL_CAPS1_NOTIFICATIONS },
};

static int kernel_supports(struct keyfs_backend *b, char **text_alloc)
{
	unsigned char bits[2] = { 0, 0 };
	size_t len = 0, cap = 0;
	char *text;

	(void)b;
	if (keyctl_capabilities(bits, sizeof(bits)) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		cap += strlen(caps[i].name) + 3;
	text = malloc(cap + 1);
	if (!text)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		len += (size_t)snprintf(text + len, cap + 1 - len, "%s=%d\n",
					caps[i].name,
					!!(bits[caps[i].byte] & caps[i].bit));
	*text_alloc = text;
	return 0;
}

/* The types add_key(2) may know: the keys subsystem's own, and those
 * modules add (which may be absent; their add then fails at close).  The
 * kernel cannot be asked without making a key. */
static const char *const kernel_types[] = {
	"user", "logon", "big_key", "keyring", "asymmetric", "encrypted",
	"trusted", "dns_resolver", "rxrpc", "rxrpc_s", "ceph", "id_resolver",
	"id_legacy", "cifs.spnego", "cifs.idmap", "pkcs7_test",
};

static int kernel_check_new(struct keyfs_backend *b, const char *type,
			    const char *desc)
{
	unsigned char bits[2] = { 0, 0 };
	const char *colon;
	bool known = false;

	(void)b;
	if (!*type || strlen(type) > KEYFS_TYPE_MAX || !*desc ||
	    strlen(desc) > KEYFS_DESC_MAX)
		return -EINVAL;
	if (type[0] == '.')
		return -EPERM;
	for (size_t i = 0; i < sizeof(kernel_types) / sizeof(kernel_types[0]); i++)
		known = known || strcmp(type, kernel_types[i]) == 0;
	if (!known)
		return -ENODEV;
	/* a kernel that cannot tell its capabilities leaves it to add */
	if (strcmp(type, "big_key") == 0 &&
	    keyctl_capabilities(bits, sizeof(bits)) >= 0 &&
	    !(bits[0] & KEYCTL_CAPS0_BIG_KEY))
		return -ENODEV;
	/* logon_vet_description(): "subtype:rest", the subtype not empty */
	colon = strchr(desc, ':');
	if (strcmp(type, "logon") == 0 && (!colon || colon == desc))
		return -EINVAL;
	return 0;
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
static int kernel_quota(struct keyfs_backend *b, const struct keyfs_cred *c,
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

const struct keyfs_backend_ops backend_kernel_ops = {
	.name			= "kernel",
	.init			= kernel_init,
	.destroy		= kernel_destroy,
	.special		= kernel_special,
	.persistent		= kernel_persistent,
	.describe		= kernel_describe,
	.read			= kernel_read,
	.list			= kernel_list,
	.find			= kernel_find,
	.list_all		= kernel_list_all,
	.add			= kernel_add,
	.update			= kernel_update,
	.link			= kernel_link,
	.unlink			= kernel_unlink,
	.move			= kernel_move,
	.revoke			= kernel_revoke,
	.invalidate		= kernel_invalidate,
	.clear			= kernel_clear,
	.setperm		= kernel_setperm,
	.chown			= kernel_chown,
	.set_timeout		= kernel_set_timeout,
	.restrict_keyring	= kernel_restrict,
	.request		= kernel_request,
	.search			= kernel_search,
	.security		= kernel_security,
	.proc_keys		= kernel_proc_keys,
	.proc_key_users		= kernel_proc_key_users,
	.supports		= kernel_supports,
	.quota			= kernel_quota,
	.check_new		= kernel_check_new,
};
