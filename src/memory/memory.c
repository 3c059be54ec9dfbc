/* backend-memory.c: the memory backend, an in-process model of the kernel's keyrings. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "memory.h"
#include "perm.h"

#define POS(bits)	((uint32_t)(bits) << KEYFS_POS_SHIFT)
#define USR(bits)	((uint32_t)(bits) << KEYFS_USR_SHIFT)

/* The kernel's special keyrings, with the permissions it gives them. */
#define PERM_SESSION	(POS(KEYFS_PERM_ALL) | USR(KEYFS_PERM_VIEW | KEYFS_PERM_READ))
#define PERM_PROCESS	(POS(KEYFS_PERM_ALL) | USR(KEYFS_PERM_VIEW))
/* look_up_user_keyrings(): (KEY_POS_ALL & ~KEY_POS_SETATTR) | KEY_USR_ALL */
#define PERM_USER	(POS(KEYFS_PERM_ALL & ~KEYFS_PERM_SETATTR) | USR(KEYFS_PERM_ALL))
/* key_create_persistent(): as the user keyring, but the user may only view
 * and read. */
#define PERM_PERSISTENT	(POS(KEYFS_PERM_ALL & ~KEYFS_PERM_SETATTR) | \
			 USR(KEYFS_PERM_VIEW | KEYFS_PERM_READ))

static struct timespec now_ts(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

static bool key_expired(const struct mkey *k, time_t now)
{
	return k->expiry && now >= k->expiry;
}

static bool is_keyring(const struct mkey *k)
{
	return k->type == &mtype_keyring;
}

/* ---- the serial table ---- */

struct mkey *mem_key_get(const struct keyfs_backend *b, kserial_t serial)
{
	if (!b->tcap)
		return NULL;
	for (struct mkey *k = b->table[hash_serial(serial, b->tcap)]; k; k = k->hnext)
		if (k->serial == serial)
			return k;
	return NULL;
}

int mem_table_reserve(struct keyfs_backend *b)
{
	size_t ncap = b->tcap ? b->tcap : 64;
	struct mkey **old = b->table, **nt;
	size_t oldcap = b->tcap;

	while (b->nkeys + 1 > ncap)
		ncap *= 2;
	if (ncap == b->tcap)
		return 0;
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	b->table = nt;
	b->tcap = ncap;
	for (size_t i = 0; i < oldcap; i++)
		for (struct mkey *k = old[i], *next; k; k = next) {
			size_t s = hash_serial(k->serial, b->tcap);

			next = k->hnext;
			k->hnext = nt[s];
			nt[s] = k;
		}
	free(old);
	return 0;
}

static void table_insert(struct keyfs_backend *b, struct mkey *k)
{
	size_t s = hash_serial(k->serial, b->tcap);

	k->hnext = b->table[s];
	b->table[s] = k;
	b->nkeys++;
}

static void table_remove(struct keyfs_backend *b, struct mkey *k)
{
	for (struct mkey **p = &b->table[hash_serial(k->serial, b->tcap)]; *p;
	     p = &(*p)->hnext)
		if (*p == k) {
			*p = k->hnext;
			b->nkeys--;
			return;
		}
}

static int cmp_key_serial(const void *x, const void *y)
{
	const struct mkey *a = *(struct mkey *const *)x;
	const struct mkey *c = *(struct mkey *const *)y;

	return (a->serial > c->serial) - (a->serial < c->serial);
}

int mem_keys_sorted(const struct keyfs_backend *b, struct mkey ***out_alloc)
{
	struct mkey **v = malloc((b->nkeys ? b->nkeys : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i]; k; k = k->hnext)
			v[n++] = k;
	qsort(v, n, sizeof(*v), cmp_key_serial);
	*out_alloc = v;
	return 0;
}

/* ---- owners and quotas ---- */

struct muser *mem_user_find(const struct keyfs_backend *b, uid_t uid)
{
	for (size_t i = 0; i < b->nusers; i++)
		if (b->users[i].uid == uid)
			return &b->users[i];
	return NULL;
}

int mem_user_get(struct keyfs_backend *b, uid_t uid, struct muser **out)
{
	struct muser *u = mem_user_find(b, uid);

	if (!u) {
		if (b->nusers == b->ucap) {
			size_t cap = b->ucap ? b->ucap * 2 : 4;
			struct muser *nu = realloc(b->users, cap * sizeof(*nu));

			if (!nu)
				return -ENOMEM;
			b->users = nu;
			b->ucap = cap;
		}
		u = &b->users[b->nusers++];
		*u = (struct muser){ .uid = uid };
	}
	*out = u;
	return 0;
}

void mem_quota_limits(const struct keyfs_backend *b, uid_t uid,
		      unsigned long *maxkeys, unsigned long *maxbytes)
{
	*maxkeys = uid == 0 ? b->root_maxkeys : b->maxkeys;
	*maxbytes = uid == 0 ? b->root_maxbytes : b->maxbytes;
}

/* Would uid stay within its quota with dkeys more keys and dbytes more
 * bytes?  As key_alloc() and key_payload_reserve(): only growth is
 * checked. */
static int quota_room(const struct keyfs_backend *b, uid_t uid, long dkeys,
		      long dbytes)
{
	const struct muser *u = mem_user_find(b, uid);
	unsigned long qnkeys = u ? u->qnkeys : 0, qnbytes = u ? u->qnbytes : 0;
	unsigned long maxkeys, maxbytes;

	mem_quota_limits(b, uid, &maxkeys, &maxbytes);
	if (dkeys > 0 && qnkeys + (unsigned long)dkeys > maxkeys)
		return -EDQUOT;
	if (dbytes > 0 && qnbytes + (unsigned long)dbytes > maxbytes)
		return -EDQUOT;
	return 0;
}

/* The bytes a key charges: its description with the NUL, and its
 * payload (keyrings: MEM_LINK_BYTES a link), as the kernel's quotalen. */
static size_t key_charge(const struct mkey *k, size_t datalen)
{
	return k->in_quota ? strlen(k->desc) + 1 + datalen : 0;
}

void mem_charge_sync(struct keyfs_backend *b, struct mkey *key)
{
	struct muser *u = mem_user_find(b, key->uid);
	size_t charge = key_charge(key, key->datalen);

	if (u)
		u->qnbytes = u->qnbytes - key->charged + charge;
	key->charged = charge;
}

static unsigned long read_ulong(const char *path, unsigned long fallback)
{
	FILE *f = fopen(path, "re");
	unsigned long v;

	if (!f)
		return fallback;
	if (fscanf(f, "%lu", &v) != 1)
		v = fallback;
	fclose(f);
	return v;
}

static void limits_read(struct keyfs_backend *b)
{
	const char *dir = "/proc/sys/kernel/keys";
	char path[64];

	snprintf(path, sizeof(path), "%s/root_maxkeys", dir);
	b->root_maxkeys = read_ulong(path, MEM_ROOT_MAXKEYS);
	snprintf(path, sizeof(path), "%s/root_maxbytes", dir);
	b->root_maxbytes = read_ulong(path, MEM_ROOT_MAXBYTES);
	snprintf(path, sizeof(path), "%s/maxkeys", dir);
	b->maxkeys = read_ulong(path, MEM_MAXKEYS);
	snprintf(path, sizeof(path), "%s/maxbytes", dir);
	b->maxbytes = read_ulong(path, MEM_MAXBYTES);
	snprintf(path, sizeof(path), "%s/gc_delay", dir);
	b->gc_delay = (unsigned)read_ulong(path, MEM_GC_DELAY);
	snprintf(path, sizeof(path), "%s/persistent_keyring_expiry", dir);
	b->persistent_expiry = (unsigned)read_ulong(path, MEM_PERSISTENT_EXPIRY);
}

/* ---- key lifetime ---- */

static void gc_schedule(struct keyfs_backend *b, time_t expiry)
{
	time_t due;

	if (!expiry)
		return;
	due = expiry + b->gc_delay;
	if (!b->gc_next || due < b->gc_next)
		b->gc_next = due;
}

/* The next serial: increasing, never one in use, never reused. */
static int serial_alloc(struct keyfs_backend *b, kserial_t *out)
{
	while (b->next_serial > 0 && b->next_serial < INT32_MAX &&
	       mem_key_get(b, b->next_serial))
		b->next_serial++;
	if (b->next_serial <= 0 || b->next_serial >= INT32_MAX)
		return -ENOSPC;
	*out = b->next_serial++;
	return 0;
}

void mem_key_free(struct mkey *k)
{
	free(k->desc);
	free(k->parents);
	free(k);
}

struct mkey *mem_key_alloc(const struct mkey_type *type, const char *desc)
{
	struct mkey *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->desc = strdup(desc);
	if (!k->desc) {
		free(k);
		return NULL;
	}
	k->type = type;
	return k;
}

void mem_key_register(struct keyfs_backend *b, struct mkey *k)
{
	struct muser *u = mem_user_find(b, k->uid);

	table_insert(b, k);
	u->nkeys++;
	u->nikeys++;
	if (k->in_quota)
		u->qnkeys++;
	mem_charge_sync(b, k);
	gc_schedule(b, k->expiry);
}

static void key_destroy(struct keyfs_backend *b, struct mkey *k)
{
	struct muser *u = mem_user_find(b, k->uid);

	k->type->destroy(b, k);
	table_remove(b, k);
	if (u) {
		u->nkeys--;
		u->nikeys--;
		if (k->in_quota)
			u->qnkeys--;
		u->qnbytes -= k->charged;
	}
	mem_key_free(k);
}

void mem_key_unref(struct keyfs_backend *b, struct mkey *key)
{
	if (key->nparents || key->special || key->on_dead)
		return;
	key->on_dead = true;
	key->dead_next = b->dead;
	b->dead = key;
}

void mem_reap(struct keyfs_backend *b)
{
	struct mkey *k;

	while ((k = b->dead)) {
		b->dead = k->dead_next;
		k->on_dead = false;
		if (!k->nparents && !k->special)
			key_destroy(b, k);
	}
}

static void touch(struct mkey *k, bool payload)
{
	k->ctime = now_ts();
	if (payload)
		k->mtime = k->ctime;
}

static void unlink_one(struct keyfs_backend *b, struct mkey *keyring,
		       struct mkey *key)
{
	if (!mring_unlink(keyring, key))
		return;
	mem_charge_sync(b, keyring);
	touch(keyring, true);
	touch(key, false);
	mem_key_unref(b, key);
}

/* Unlink key from every keyring at once (invalidation, gc). */
static void unlink_all(struct keyfs_backend *b, struct mkey *key)
{
	while (key->nparents)
		unlink_one(b, key->parents[key->nparents - 1], key);
}

/* The kernel's gc: a key expired (or revoked) gc_delay seconds ago is
 * unlinked from every keyring and freed; the held keyrings stay, except
 * the persistent one, which only the kernel's register held. */
static void gc(struct keyfs_backend *b)
{
	time_t now = time(NULL), next = 0;
	unsigned long mark;
	bool any = false;

	if (!b->gc_next || now < b->gc_next)
		return;
	mark = ++b->stamp;
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i]; k; k = k->hnext) {
			time_t due = k->expiry + b->gc_delay;

			if (!k->expiry)
				continue;
			if (now >= due) {
				k->walk_stamp = mark;
				any = true;
			} else if (!next || due < next) {
				next = due;
			}
		}
	b->gc_next = next;
	if (!any)
		return;
	/* Unlinking changes no chain of the table; reaping does, after. */
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i]; k; k = k->hnext) {
			if (k->walk_stamp != mark)
				continue;
			if (k == b->persistent) {
				b->persistent = NULL;
				k->special = false;
			}
			unlink_all(b, k);
			mem_key_unref(b, k);
		}
	mem_reap(b);
	b->gen++;
}

/* ---- possession ---- */

static bool search_ok(const struct keyfs_cred *c, const struct mkey *k,
		      bool possessed)
{
	return perm_check(c, k->uid, k->gid, k->perm, possessed,
			  KEYFS_PERM_SEARCH) == 0;
}

static void enqueue(struct mkey **head, struct mkey **tail, struct mkey *k,
		    unsigned long stamp, int depth)
{
	k->walk_stamp = stamp;
	k->walk_depth = depth;
	k->qnext = NULL;
	if (*tail)
		(*tail)->qnext = k;
	else
		*head = k;
	*tail = k;
}

/*
 * Mark what the caller possesses, as search_process_keyrings() would find
 * it: the process and session keyrings if searchable, and every key with
 * search permission in a keyring reached through searchable, unrevoked
 * keyrings, no more than KEYFS_NEST_MAX levels down.  Breadth first, so a
 * keyring is expanded at the shallowest depth it is reached.
 */
static void possession_mark(struct keyfs_backend *b, const struct keyfs_cred *c)
{
	struct mkey *tops[] = { b->process, b->session };
	struct mkey *head = NULL, *tail = NULL;
	unsigned long stamp = ++b->stamp;

	b->poss_gen = b->gen;
	b->poss_gid = c->gid;
	b->poss_pid = c->pid;
	b->poss_stamp = stamp;
	if (c->uid != b->uid)
		return;
	for (size_t i = 0; i < 2; i++) {
		struct mkey *t = tops[i];

		if (!t || !search_ok(c, t, true) || t->walk_stamp == stamp)
			continue;
		t->poss_stamp = stamp;
		enqueue(&head, &tail, t, stamp, 0);
	}
	while (head) {
		struct mkey *k = head;

		head = k->qnext;
		if (!head)
			tail = NULL;
		if (k->revoked || !k->ring)
			continue;
		for (size_t i = 0; i < k->ring->nlinks; i++) {
			struct mkey *ch = k->ring->links[i];

			if (!search_ok(c, ch, true))
				continue;
			ch->poss_stamp = stamp;
			if (is_keyring(ch) && k->walk_depth < KEYFS_NEST_MAX &&
			    ch->walk_stamp != stamp)
				enqueue(&head, &tail, ch, stamp, k->walk_depth + 1);
		}
	}
}

bool mem_possessed(struct keyfs_backend *b, const struct keyfs_cred *c,
		   struct mkey *key)
{
	if (c->uid != b->uid)
		return false;
	/* Marks hold until the graph or permissions change, for one process:
	 * recomputing them for every operation made each lookup walk every
	 * reachable key.  A process's groups (which a search through the group
	 * class depends on) are taken as fixed while it keeps calling; reading
	 * them for every request would cost as much as the request. */
	if (b->poss_gen != b->gen || b->poss_gid != c->gid ||
	    b->poss_pid != c->pid)
		possession_mark(b, c);
	return key->poss_stamp == b->poss_stamp;
}

int mem_key_perm(struct keyfs_backend *b, const struct keyfs_cred *c,
		 struct mkey *key, unsigned want)
{
	want &= KEYFS_PERM_ALL;
	if (!want)
		return 0;
	return perm_check(c, key->uid, key->gid, key->perm,
			  mem_possessed(b, c, key), want);
}

/* ---- operations: begin, end, save ---- */

void mem_begin(struct keyfs_backend *b)
{
	gc(b);
}

void mem_end(struct keyfs_backend *b)
{
	mem_reap(b);
	b->gen++;	/* the graph may have changed: possession is stale */
}

void mem_end_read(struct keyfs_backend *b)
{
	mem_reap(b);
}

int mem_commit(struct keyfs_backend *b)
{
	struct store_image img = { 0 };
	int ret;

	mem_end(b);
	if (!b->store)
		return 0;
	ret = mem_image_build(b, &img);
	/* A change only to what is never written (the process keyring and
	 * what only it links) leaves the file as it is. */
	if (ret == 0 && !store_image_same_file(&img, &b->snap))
		ret = store_json_save(b->store, &img);
	if (ret < 0) {
		store_image_free(&img);
		/* The change was not saved, so it must not be seen either.
		 * The undo can only fail for memory; then the model stays
		 * ahead of the file, and that is said once per failure. */
		if (mem_model_revert(b) < 0)
			fprintf(stderr, "keyfs: %s: a change that could not be saved could not be undone either: %s\n",
				b->store, strerror(ENOMEM));
		return ret;
	}
	store_image_free(&b->snap);
	b->snap = img;
	return 0;
}

/* ---- special keyrings ---- */

/* A keyring held by keyfs, owned by the mounter, allowed past the quota
 * (KEY_ALLOC_QUOTA_OVERRUN) or outside it (KEY_ALLOC_NOT_IN_QUOTA). */
static int special_new(struct keyfs_backend *b, const char *desc, uint32_t perm,
		       bool in_quota, struct mkey **out)
{
	struct mkey_prep prep = { 0 };
	kserial_t serial;
	struct muser *u;
	struct mkey *k;
	int ret;

	ret = mtype_keyring.preparse(&prep, NULL, 0);
	if (ret < 0)
		return ret;
	ret = -ENOMEM;
	if (mem_table_reserve(b) < 0 || mem_user_get(b, b->uid, &u) < 0)
		goto out;
	ret = serial_alloc(b, &serial);
	if (ret < 0)
		goto out;
	ret = -ENOMEM;
	k = mem_key_alloc(&mtype_keyring, desc);
	if (!k)
		goto out;
	k->serial = serial;
	k->uid = b->uid;
	k->gid = b->gid;
	k->perm = perm;
	k->in_quota = in_quota;
	k->special = true;
	k->mtime = k->ctime = now_ts();
	mtype_keyring.instantiate(k, &prep);
	mem_key_register(b, k);
	*out = k;
	ret = 0;
out:
	mtype_keyring.free_preparse(&prep);
	return ret;
}

/* Link within keyfs's own keyrings: no permission, quota may overrun. */
static int special_link(struct keyfs_backend *b, struct mkey *keyring,
			struct mkey *key)
{
	int ret = mring_reserve(keyring, key);

	if (ret == 0)
		mem_link_commit(b, keyring, key);
	return ret;
}

/* Create the special keyrings the store does not have yet, as a login
 * would (pam_keyinit links the user keyring into the session keyring).
 * *created says whether anything was made. */
static int specials_create(struct keyfs_backend *b, bool *created)
{
	char desc[64];
	int ret = 0;

	*created = false;
	if (!b->user) {
		snprintf(desc, sizeof(desc), "_uid.%u", (unsigned)b->uid);
		ret = special_new(b, desc, PERM_USER, false, &b->user);
		*created = true;
	}
	if (ret == 0 && !b->user_session) {
		snprintf(desc, sizeof(desc), "_uid_ses.%u", (unsigned)b->uid);
		ret = special_new(b, desc, PERM_USER, false, &b->user_session);
		if (ret == 0)
			ret = special_link(b, b->user_session, b->user);
		*created = true;
	}
	if (ret == 0 && !b->session) {
		ret = special_new(b, "_ses", PERM_SESSION, true, &b->session);
		if (ret == 0)
			ret = special_link(b, b->session, b->user);
		*created = true;
	}
	if (ret == 0 && !b->persistent) {
		snprintf(desc, sizeof(desc), "_persistent.%u", (unsigned)b->uid);
		ret = special_new(b, desc, PERM_PERSISTENT, false,
				  &b->persistent);
		if (ret == 0) {
			b->persistent->expiry = time(NULL) + b->persistent_expiry;
			gc_schedule(b, b->persistent->expiry);
		}
		*created = true;
	}
	return ret;
}

/* The process keyring, made on demand as the kernel's
 * install_process_keyring(); kept in the store like any keyring, so a
 * failed save can be undone, but held only while keyfs runs. */
static int process_keyring(struct keyfs_backend *b, bool create,
			   struct mkey **out)
{
	int ret;

	if (!b->process) {
		if (!create)
			return -ENOKEY;
		ret = special_new(b, "_pid", PERM_PROCESS, true, &b->process);
		if (ret == 0)
			ret = mem_commit(b);
		if (ret < 0)
			return ret;
	}
	*out = b->process;
	return 0;
}

static int special_key(struct keyfs_backend *b, int which, bool create,
		       struct mkey **out)
{
	struct mkey *k;

	switch (which) {
	case KEYFS_SPEC_THREAD:
	case KEYFS_SPEC_PROCESS:
		return process_keyring(b, create, out);
	case KEYFS_SPEC_SESSION:
		k = b->session;
		break;
	case KEYFS_SPEC_USER:
		k = b->user;
		break;
	case KEYFS_SPEC_USER_SESSION:
		k = b->user_session;
		break;
	default:
		return -EINVAL;
	}
	if (!k)
		return -ENOKEY;
	*out = k;
	return 0;
}

/* ---- lookup ---- */

/* key_validate(), and the negative check of wait_for_key_construction(). */
static int key_state_check(const struct mkey *k, bool partial)
{
	if (!partial && k->negative)
		return -k->reject_error;
	if (k->revoked)
		return -EKEYREVOKED;
	if (key_expired(k, time(NULL)))
		return -EKEYEXPIRED;
	return 0;
}

int mem_lookup(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t id, unsigned flags, unsigned want, struct mkey **out)
{
	struct mkey *k;
	int ret;

	if (id < 0) {
		ret = special_key(b, id, flags & MEM_LOOKUP_CREATE, &k);
		if (ret < 0)
			return ret;
	} else if (id == 0) {
		return -EINVAL;
	} else {
		k = mem_key_get(b, id);
		if (!k)
			return -ENOKEY;
	}
	/* As lookup_user_key(): the state first, then the permission; a
	 * lookup that wants nothing takes the key in any state. */
	if (want) {
		ret = key_state_check(k, flags & MEM_LOOKUP_PARTIAL);
		if (ret < 0)
			return ret;
		ret = mem_key_perm(b, c, k, want);
		if (ret < 0)
			return ret;
	}
	*out = k;
	return 0;
}

static int lookup_keyring(struct keyfs_backend *b, const struct keyfs_cred *c,
			  kserial_t id, unsigned flags, unsigned want,
			  struct mkey **out)
{
	int ret = mem_lookup(b, c, id, flags, want, out);

	if (ret == 0 && !is_keyring(*out))
		ret = -ENOTDIR;
	return ret;
}

/* ---- linking ---- */

/*
 * keyring_detect_cycle(): would linking keyring K into target close a
 * cycle?  Walks K's subtree as search_nested_keyrings() does with
 * KEYRING_SEARCH_DETECT_TOO_DEEP: -EDEADLK when target is found, -ELOOP
 * when a keyring would be entered below KEYFS_NEST_MAX levels.  A keyring
 * already walked to completion from at least this deep is not walked again
 * (it can hold neither), which keeps dense graphs linear.
 */
static int cycle_walk(struct keyfs_backend *b, struct mkey *k,
		      struct mkey *target, int sp, unsigned long stamp)
{
	struct mring *r = k->ring;
	int ret;

	if (k->revoked || !r)
		return 0;
	for (size_t i = 0; i < r->nlinks; i++)
		if (r->links[i] == target)
			return -EDEADLK;
	for (size_t i = 0; i < r->nlinks; i++) {
		struct mkey *ch = r->links[i];

		if (!is_keyring(ch))
			continue;
		if (sp >= KEYFS_NEST_MAX)
			return -ELOOP;
		if (ch->walk_stamp == stamp && ch->walk_depth >= sp + 1)
			continue;
		ret = cycle_walk(b, ch, target, sp + 1, stamp);
		if (ret < 0)
			return ret;
		if (ch->walk_stamp != stamp || ch->walk_depth < sp + 1) {
			ch->walk_stamp = stamp;
			ch->walk_depth = sp + 1;
		}
	}
	return 0;
}

static int restriction_check(const struct mkey *keyring)
{
	const struct mring *r = keyring->ring;

	/* restrict_link_reject(); a restriction kept from a store that this
	 * backend cannot evaluate refuses as well. */
	return r->restricted || r->restrict_type ? -EPERM : 0;
}

int mem_link_prepare(struct keyfs_backend *b, struct mkey *keyring,
		     struct mkey *key)
{
	int ret;

	if (!is_keyring(keyring))
		return -ENOTDIR;
	/* __key_link_begin(): only a new link (not one displacing a key of
	 * the same type and description) costs quota. */
	if (keyring->in_quota && !mring_find(keyring, key->type, key->desc)) {
		ret = quota_room(b, keyring->uid, 0, MEM_LINK_BYTES);
		if (ret < 0)
			return ret;
	}
	ret = restriction_check(keyring);
	if (ret < 0)
		return ret;
	if (is_keyring(key)) {
		if (key == keyring)
			return -EDEADLK;
		ret = cycle_walk(b, key, keyring, 0, ++b->stamp);
		if (ret < 0)
			return ret;
	}
	return mring_reserve(keyring, key);
}

void mem_link_commit(struct keyfs_backend *b, struct mkey *keyring,
		     struct mkey *key)
{
	struct mkey *old;

	if (mring_find(keyring, key->type, key->desc) == key)
		return;
	old = mring_link(keyring, key);
	mem_charge_sync(b, keyring);
	touch(keyring, true);
	touch(key, false);
	if (old) {
		touch(old, false);
		mem_key_unref(b, old);
	}
}

/* ---- searching ---- */

struct msearch {
	const struct keyfs_cred *c;
	const struct mkey_type *type;
	const char *desc;
	time_t now;
	bool possessed;
	unsigned long stamp;
	int err;		/* why the last candidate was skipped */
	struct mkey *found;
};

/* keyring_search_iterator() with KEYRING_SEARCH_DO_STATE_CHECK and
 * KEYRING_SEARCH_SKIP_EXPIRED, as request_key() searches. */
static bool search_candidate(struct msearch *s, struct mkey *k)
{
	if (k->revoked) {
		s->err = -EKEYREVOKED;
		return false;
	}
	if (key_expired(k, s->now))
		return false;
	if (!search_ok(s->c, k, s->possessed)) {
		s->err = -EACCES;
		return false;
	}
	if (k->negative) {
		s->err = -k->reject_error;
		return false;
	}
	s->found = k;
	return true;
}

/* Depth first through searchable keyrings, as search_nested_keyrings().
 * A keyring already searched from this depth or shallower cannot hold
 * anything new and is skipped. */
static bool search_keyring(struct msearch *s, struct mkey *kr, int sp)
{
	struct mkey *k;

	if (kr->revoked || !kr->ring)
		return false;
	if (kr->walk_stamp == s->stamp && kr->walk_depth <= sp)
		return false;
	kr->walk_stamp = s->stamp;
	kr->walk_depth = sp;
	k = mring_find(kr, s->type, s->desc);
	if (k && search_candidate(s, k))
		return true;
	if (sp >= KEYFS_NEST_MAX)
		return false;
	for (size_t i = 0; i < kr->ring->nlinks; i++) {
		struct mkey *ch = kr->ring->links[i];

		if (!is_keyring(ch) || !search_ok(s->c, ch, s->possessed))
			continue;
		if (search_keyring(s, ch, sp + 1))
			return true;
	}
	return false;
}

/* keyring_search_rcu() on one of the process keyrings. */
static int search_top(struct keyfs_backend *b, struct msearch *s,
		      struct mkey *top)
{
	if (!search_ok(s->c, top, s->possessed))
		return -EACCES;
	s->err = -EAGAIN;
	s->stamp = ++b->stamp;
	/* The keyring itself is a candidate; skipped, it ends the search. */
	if (top->type == s->type && top->type->match(top, s->desc))
		return search_candidate(s, top) ? 0 : s->err;
	return search_keyring(s, top, 0) ? 0 : s->err;
}

int mem_search_process(struct keyfs_backend *b, const struct keyfs_cred *c,
		       const struct mkey_type *type, const char *desc,
		       struct mkey **out)
{
	struct mkey *tops[] = { b->process, b->session };
	struct msearch s = {
		.c = c, .type = type, .desc = desc, .now = time(NULL),
		.possessed = c->uid == b->uid,
	};
	int none = 0, err = -EAGAIN;

	for (size_t i = 0; i < 2; i++) {
		int ret;

		if (!tops[i])
			continue;
		ret = search_top(b, &s, tops[i]);
		if (ret == 0) {
			*out = s.found;
			return 0;
		}
		/* search_process_keyrings_rcu(): "no key" and "negative key"
		 * win over other errors, a negative key over "no key". */
		if (ret == -ENOKEY || (ret == -EAGAIN && !none))
			none = ret;
		else if (ret != -EAGAIN)
			err = ret;
	}
	return none ? none : err;
}

/* ---- making keys ---- */

int mem_check_type(const char *type, int unknown,
		   const struct mkey_type **out)
{
	const struct mkey_type *t;
	size_t tlen = type ? strlen(type) : 0;

	if (tlen == 0 || tlen > KEYFS_TYPE_MAX)
		return -EINVAL;
	/* Types whose names start with a dot are the kernel's own. */
	if (type[0] == '.')
		return -EPERM;
	t = mtype_lookup(type);
	if (!t)
		return unknown;
	*out = t;
	return 0;
}

int mem_check_desc(const struct mkey_type *t, const char *desc)
{
	if (!desc || !*desc || strlen(desc) > KEYFS_DESC_MAX)
		return -EINVAL;
	if (t == &mtype_keyring && desc[0] == '.')
		return -EPERM;
	if (t->vet_description && t->vet_description(desc) < 0)
		return -EINVAL;
	return 0;
}

static uint32_t default_perm(const struct mkey_type *type)
{
	uint32_t pos = KEYFS_PERM_VIEW | KEYFS_PERM_SEARCH | KEYFS_PERM_LINK |
		       KEYFS_PERM_SETATTR;

	if (type->read)
		pos |= KEYFS_PERM_READ;
	if (type == &mtype_keyring || type->update)
		pos |= KEYFS_PERM_WRITE;
	return POS(pos) | USR(KEYFS_PERM_VIEW);
}

int mem_key_quota(struct keyfs_backend *b, uid_t uid, const char *desc,
		  size_t datalen, struct mkey *dest,
		  const struct mkey_type *type)
{
	long bytes = (long)(strlen(desc) + 1 + datalen);

	if (dest && dest->in_quota && dest->uid == uid &&
	    !mring_find(dest, type, desc))
		bytes += MEM_LINK_BYTES;
	return quota_room(b, uid, 1, bytes);
}

int mem_key_create(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const struct mkey_type *type, const char *desc,
		   struct mkey_prep *prep, struct mkey *dest,
		   struct mkey **out)
{
	struct mkey_prep neg = { 0 };
	kserial_t serial;
	struct muser *u;
	struct mkey *k;
	int ret;

	ret = mem_key_quota(b, c->uid, desc, prep ? prep->datalen : 0, dest,
			    type);
	if (ret < 0)
		return ret;
	/* A negative keyring still gets an (empty) link table. */
	if (!prep && type == &mtype_keyring) {
		ret = type->preparse(&neg, NULL, 0);
		if (ret < 0)
			return ret;
	}
	ret = -ENOMEM;
	if (mem_table_reserve(b) < 0 || mem_user_get(b, c->uid, &u) < 0)
		goto out;
	ret = serial_alloc(b, &serial);
	if (ret < 0)
		goto out;
	ret = -ENOMEM;
	k = mem_key_alloc(type, desc);
	if (!k)
		goto out;
	k->serial = serial;
	k->uid = c->uid;
	k->gid = c->gid;
	k->perm = default_perm(type);
	k->in_quota = true;
	k->mtime = k->ctime = now_ts();
	if (prep) {
		type->instantiate(k, prep);
	} else {
		k->negative = true;
		k->reject_error = ENOKEY;
		k->expiry = time(NULL) + KEYFS_NEGATIVE_TIMEOUT;
		if (neg.ring)
			type->instantiate(k, &neg);
	}
	mem_key_register(b, k);
	*out = k;
	ret = 0;
out:
	if (neg.ring)
		type->free_preparse(&neg);
	return ret;
}

const char *mem_callout_program(struct keyfs_backend *b)
{
	return b->request_key;
}

/* ---- the operations ---- */

static int mem_init(struct keyfs_backend **bp, const struct backend_config *cfg,
		    char *err, size_t errlen)
{
	struct store_image img = { 0 };
	struct keyfs_backend *b;
	bool created;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "keyfs: out of memory");
		return -ENOMEM;
	}
	b->store = cfg->store;
	b->request_key = cfg->request_key;
	b->request_timeout = cfg->request_timeout ? cfg->request_timeout :
			     MEM_CALLOUT_TIMEOUT;
	b->unlock = cfg->unlock;
	b->relock = cfg->relock;
	b->lock_arg = cfg->lock_arg;
	b->uid = cfg->uid;
	b->gid = cfg->gid;
	b->next_serial = MEM_FIRST_SERIAL;
	limits_read(b);
	if (b->store) {
		ret = store_json_load(b->store, &img, err, errlen);
		if (ret == 0)
			ret = mem_model_load(b, &img, 0, err, errlen);
		store_image_free(&img);
		if (ret < 0)
			goto fail;
	}
	ret = specials_create(b, &created);
	if (ret < 0)
		goto fail;
	gc(b);
	mem_reap(b);
	if (b->store) {
		ret = mem_image_build(b, &b->snap);
		if (ret == 0 && created)
			ret = store_json_save(b->store, &b->snap);
		if (ret < 0) {
			snprintf(err, errlen, "keyfs: cannot write %s: %s",
				 b->store, strerror(-ret));
			goto fail;
		}
	}
	*bp = b;
	return 0;
fail:
	if (err && errlen && !err[0])
		snprintf(err, errlen, "keyfs: memory backend: %s",
			 strerror(-ret));
	store_image_free(&b->snap);
	mem_model_free(b);
	free(b);
	return ret;
}

static void mem_destroy(struct keyfs_backend *b)
{
	if (!b)
		return;
	store_image_free(&b->snap);
	mem_model_free(b);
	free(b);
}

static int mem_special(struct keyfs_backend *b, const struct keyfs_cred *c,
		       int which, bool create, kserial_t *out)
{
	struct mkey *k;
	int ret;

	(void)c;
	mem_begin(b);
	ret = special_key(b, which, create, &k);
	if (ret == 0)
		*out = k->serial;
	mem_end(b);
	return ret;
}

/* keyctl_get_persistent(): the mounter's, made anew if the gc took it;
 * each call pushes its expiry persistent_keyring_expiry seconds ahead. */
static int mem_persistent(struct keyfs_backend *b, const struct keyfs_cred *c,
			  kserial_t *out)
{
	time_t expiry = time(NULL) + b->persistent_expiry;
	bool created;
	int ret;

	(void)c;
	mem_begin(b);
	ret = specials_create(b, &created);
	if (ret == 0 && b->persistent->expiry != expiry) {
		b->persistent->expiry = expiry;
		gc_schedule(b, expiry);
		created = true;
	}
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	if (created) {
		ret = mem_commit(b);
		if (ret < 0)
			return ret;
	} else {
		mem_end(b);
	}
	*out = b->persistent->serial;
	return 0;
}

static enum key_state key_state(const struct mkey *k)
{
	if (k->negative)
		return KEY_STATE_NEGATIVE;
	if (k->revoked)
		return KEY_STATE_REVOKED;
	if (key_expired(k, time(NULL)))
		return KEY_STATE_EXPIRED;
	return KEY_STATE_VALID;
}

static void key_info_fill(struct keyfs_backend *b, const struct keyfs_cred *c,
			  struct mkey *k, struct key_info *ki)
{
	memset(ki, 0, sizeof(*ki));
	ki->serial = k->serial;
	snprintf(ki->type, sizeof(ki->type), "%s", k->type->name);
	snprintf(ki->desc, sizeof(ki->desc), "%s", k->desc);
	ki->uid = k->uid;
	ki->gid = k->gid;
	ki->perm = k->perm;
	ki->state = key_state(k);
	ki->expiry = k->expiry;
	/* What a read would return: keyrings read as 4 bytes a link. */
	ki->size = !k->type->read ? 0 : k->ring ?
		   k->ring->nlinks * sizeof(kserial_t) : k->len;
	if (k->ring) {
		ki->nlink = 2;
		for (size_t i = 0; i < k->ring->nlinks; i++)
			ki->nlink += is_keyring(k->ring->links[i]);
	} else {
		ki->nlink = k->nparents ? (unsigned)k->nparents : 1;
	}
	ki->possessed = mem_possessed(b, c, k);
	ki->mtime = k->mtime;
	ki->ctime = k->ctime;
}

/*
 * keyctl_describe_key() needs view on the key.  Unlike the kernel, which
 * answers EKEYREVOKED or EKEYEXPIRED here, a revoked, expired or negative
 * key is described, with its state: keyfs lists such keys and shows the
 * state in an xattr.
 */
static int mem_describe(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t key, struct key_info *out)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_PARTIAL, 0, &k);
	if (ret == 0)
		ret = mem_key_perm(b, c, k, KEYFS_PERM_VIEW);
	if (ret == 0)
		key_info_fill(b, c, k, out);
	mem_end_read(b);
	return ret;
}

/* keyctl_read_key(): the state, then read permission, or possession. */
static int read_check(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, bool keyring, struct mkey **out)
{
	struct mkey *k;
	int ret;

	ret = mem_lookup(b, c, key, 0, MEM_NEED_DEFER, &k);
	if (ret < 0)
		return ret;
	if (keyring && !is_keyring(k))
		return -ENOTDIR;
	ret = mem_key_perm(b, c, k, KEYFS_PERM_READ);
	if (ret == -EACCES && mem_possessed(b, c, k))
		ret = 0;
	if (ret < 0)
		return ret;
	if (!k->type->read)
		return -EOPNOTSUPP;
	*out = k;
	return 0;
}

static int mem_read(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, void **buf_alloc, size_t *len)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = read_check(b, c, key, false, &k);
	if (ret == 0)
		ret = k->type->read(k, buf_alloc, len);
	mem_end_read(b);
	return ret;
}

static int mem_list(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t keyring, kserial_t **out_alloc, size_t *n)
{
	kserial_t *v = NULL;
	struct mkey *k;
	size_t nl;
	int ret;

	mem_begin(b);
	ret = read_check(b, c, keyring, true, &k);
	if (ret < 0)
		goto out;
	nl = k->ring->nlinks;
	if (nl) {
		v = malloc(nl * sizeof(*v));
		if (!v) {
			ret = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < nl; i++)
			v[i] = k->ring->links[i]->serial;
	}
	*out_alloc = v;
	*n = nl;
out:
	mem_end_read(b);
	return ret;
}

/*
 * A direct lookup in one keyring, through its index.  As keyring_search()
 * the keyring must be valid and grant search (a directory's x), but the
 * key found is returned in whatever state it is, without a search check
 * of its own: a name listed in a keyring can always be looked up, and what
 * the key allows is checked by the operation that follows.
 */
static int mem_find(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t keyring, const char *type, const char *desc,
		    kserial_t *out)
{
	const struct mkey_type *t;
	struct mkey *kr, *k;
	int ret;

	mem_begin(b);
	ret = lookup_keyring(b, c, keyring, 0, KEYFS_PERM_SEARCH, &kr);
	if (ret < 0)
		goto out;
	t = mtype_lookup(type);
	k = t ? mring_find(kr, t, desc) : NULL;
	if (!k)
		ret = -ENOKEY;
	else
		*out = k->serial;
out:
	mem_end_read(b);
	return ret;
}

int mem_viewable_keys(struct keyfs_backend *b, const struct keyfs_cred *c,
		      struct mkey ***out_alloc, size_t *n)
{
	struct mkey **keys;
	size_t m = 0;
	int ret = mem_keys_sorted(b, &keys);

	if (ret < 0)
		return ret;
	for (size_t i = 0; i < b->nkeys; i++)
		if (mem_key_perm(b, c, keys[i], KEYFS_PERM_VIEW) == 0)
			keys[m++] = keys[i];
	*out_alloc = keys;
	*n = m;
	return 0;
}

static int mem_list_all(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t **out_alloc, size_t *n)
{
	struct mkey **keys;
	kserial_t *v = NULL;
	size_t m;
	int ret;

	mem_begin(b);
	ret = mem_viewable_keys(b, c, &keys, &m);
	if (ret < 0)
		goto out;
	if (m) {
		v = malloc(m * sizeof(*v));
		if (!v)
			ret = -ENOMEM;
		for (size_t i = 0; v && i < m; i++)
			v[i] = keys[i]->serial;
	}
	free(keys);
	if (ret == 0) {
		*out_alloc = v;
		*n = m;
	}
out:
	mem_end_read(b);
	return ret;
}

/* An existing key of the type and description, found for add_key to
 * update: write permission, possessed as the keyring is (the kernel's
 * find_key_to_update() hands the keyring's possession on), room in the
 * owner's quota for a longer payload.  Then the update, which cannot
 * fail; a negative key becomes positive. */
static int add_update(struct keyfs_backend *b, const struct keyfs_cred *c,
		      struct mkey *kr, struct mkey *old, struct mkey_prep *prep)
{
	int ret;

	ret = perm_check(c, old->uid, old->gid, old->perm,
			 mem_possessed(b, c, kr), KEYFS_PERM_WRITE);
	if (ret == 0 && old->in_quota && prep->datalen > old->datalen)
		ret = quota_room(b, old->uid, 0,
				 (long)(prep->datalen - old->datalen));
	if (ret < 0)
		return ret;
	old->type->update(old, prep);
	old->negative = false;
	mem_charge_sync(b, old);
	touch(old, true);
	gc_schedule(b, old->expiry);
	return 0;
}

/* A new key of the caller's, linked into kr (displacing a key of the same
 * type and description). */
static int add_new(struct keyfs_backend *b, const struct keyfs_cred *c,
		   struct mkey *kr, const struct mkey_type *t, const char *desc,
		   struct mkey_prep *prep, struct mkey **out)
{
	struct mkey *k;
	int ret;

	ret = mem_key_create(b, c, t, desc, prep, kr, &k);
	if (ret < 0)
		return ret;
	ret = mem_link_prepare(b, kr, k);
	if (ret < 0) {
		mem_key_unref(b, k);
		return ret;
	}
	mem_link_commit(b, kr, k);
	*out = k;
	return 0;
}

/* key_create_or_update(): add_key(2) checks its arguments' syntax, then
 * the keyring (write), then the type (ENODEV), the description and the
 * payload, the keyring's restriction; a live key of an updatable type
 * with this description in the keyring is updated in place, else a new
 * key displaces whatever had the name. */
static int mem_add(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const char *type, const char *desc, const void *payload,
		   size_t len, kserial_t keyring, kserial_t *out)
{
	const struct mkey_type *t = NULL;
	struct mkey_prep prep = { 0 };
	struct mkey *kr, *old, *k;
	int ret;

	if (!type || !*type || strlen(type) > KEYFS_TYPE_MAX ||
	    !desc || !*desc || strlen(desc) > KEYFS_DESC_MAX)
		return -EINVAL;
	if (type[0] == '.' || (keyfs_is_keyring_type(type) && desc[0] == '.'))
		return -EPERM;
	mem_begin(b);
	ret = lookup_keyring(b, c, keyring, MEM_LOOKUP_CREATE, KEYFS_PERM_WRITE,
			     &kr);
	if (ret == 0)
		ret = mem_check_type(type, -ENODEV, &t);
	if (ret == 0)
		ret = mem_check_desc(t, desc);
	if (ret == 0)
		ret = t->preparse(&prep, payload, len);
	if (ret == 0)
		ret = restriction_check(kr);
	if (ret < 0)
		goto fail;
	old = mring_find(kr, t, desc);
	if (old && t->update && !old->revoked) {
		ret = add_update(b, c, kr, old, &prep);
		k = old;
	} else {
		ret = add_new(b, c, kr, t, desc, &prep, &k);
	}
	if (ret < 0)
		goto fail;
	ret = mem_commit(b);
	if (ret == 0)
		*out = k->serial;
	goto out;
fail:
	mem_end(b);
out:
	if (t)
		t->free_preparse(&prep);
	return ret;
}

/* add_key(2)'s checks of type and description, making nothing. */
static int mem_check_new(struct keyfs_backend *b, const char *type,
			 const char *desc)
{
	const struct mkey_type *t = NULL;
	int ret;

	(void)b;
	if (!*desc || strlen(desc) > KEYFS_DESC_MAX)
		return -EINVAL;
	ret = mem_check_type(type, -ENODEV, &t);
	if (ret == 0)
		ret = mem_check_desc(t, desc);
	return ret;
}

/* keyctl_update_key(): needs write on a valid key of an updatable type.
 * The kernel's keyctl_update refuses payloads over a page (EINVAL); the
 * type's own limit applies here, as backend.h promises. */
static int mem_update(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, const void *payload, size_t len)
{
	struct mkey_prep prep = { 0 };
	const struct mkey_type *t = NULL;
	struct mkey *k = NULL;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, 0, KEYFS_PERM_WRITE, &k);
	if (ret < 0)
		goto out;
	/* Kept apart from k: a failed save swaps the model, freeing k. */
	t = k->type;
	if (!k->type->update) {
		ret = -EOPNOTSUPP;
		goto out;
	}
	ret = k->type->preparse(&prep, payload, len);
	if (ret == 0 && prep.datalen > k->datalen)
		ret = quota_room(b, k->uid, 0, (long)(prep.datalen - k->datalen));
	if (ret < 0)
		goto out;
	k->type->update(k, &prep);
	mem_charge_sync(b, k);
	touch(k, true);
	ret = mem_commit(b);
	goto done;
out:
	mem_end(b);
done:
	if (t)
		t->free_preparse(&prep);
	return ret;
}

/* keyctl_keyring_link(): write on the keyring, link on the key. */
static int mem_link(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, kserial_t keyring)
{
	struct mkey *kr, *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, keyring, MEM_LOOKUP_CREATE, KEYFS_PERM_WRITE, &kr);
	if (ret == 0)
		ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE, KEYFS_PERM_LINK, &k);
	if (ret == 0)
		ret = mem_link_prepare(b, kr, k);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	mem_link_commit(b, kr, k);
	return mem_commit(b);
}

/* keyctl_keyring_unlink(): write on the keyring; the key in any state. */
static int mem_unlink(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, kserial_t keyring)
{
	struct mkey *kr, *k;
	int ret;

	mem_begin(b);
	ret = lookup_keyring(b, c, keyring, 0, KEYFS_PERM_WRITE, &kr);
	if (ret == 0)
		ret = mem_lookup(b, c, key, MEM_LOOKUP_PARTIAL, 0, &k);
	if (ret == 0 && mring_find(kr, k->type, k->desc) != k)
		ret = -ENOENT;
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	unlink_one(b, kr, k);
	return mem_commit(b);
}

/* keyctl_keyring_move(): link on the key, write on both keyrings. */
static int mem_move(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, kserial_t from, kserial_t to, unsigned flags)
{
	struct mkey *k, *kf, *kt, *there;
	int ret;

	if (flags & ~KEYFS_MOVE_EXCL)
		return -EINVAL;
	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE, KEYFS_PERM_LINK, &k);
	if (ret == 0)
		ret = mem_lookup(b, c, from, 0, KEYFS_PERM_WRITE, &kf);
	if (ret == 0)
		ret = mem_lookup(b, c, to, MEM_LOOKUP_CREATE, KEYFS_PERM_WRITE, &kt);
	if (ret < 0 || kf == kt)
		goto out;
	if (!is_keyring(kf) || !is_keyring(kt)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (mring_find(kf, k->type, k->desc) != k) {
		ret = -ENOENT;
		goto out;
	}
	there = mring_find(kt, k->type, k->desc);
	if (there && (flags & KEYFS_MOVE_EXCL)) {
		ret = -EEXIST;
		goto out;
	}
	ret = mem_link_prepare(b, kt, k);
	if (ret < 0)
		goto out;
	/* Link first so the key never looks unreferenced. */
	mem_link_commit(b, kt, k);
	unlink_one(b, kf, k);
	return mem_commit(b);
out:
	mem_end(b);
	return ret;
}

/* keyctl_revoke_key(): write, or else setattr. */
static int mem_revoke(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key)
{
	time_t now = time(NULL);
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, 0, KEYFS_PERM_WRITE, &k);
	if (ret == -EACCES)
		ret = mem_lookup(b, c, key, 0, KEYFS_PERM_SETATTR, &k);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	k->revoked = true;
	k->type->revoke(b, k);
	mem_charge_sync(b, k);
	/* key_revoke(): the gc takes a revoked key gc_delay from now. */
	if (!k->expiry || k->expiry > now) {
		k->expiry = now;
		gc_schedule(b, now);
	}
	touch(k, true);
	return mem_commit(b);
}

/*
 * keyctl_invalidate_key(): search permission; the key is unlinked from
 * every keyring at once and goes, nothing can reach it any more.  The
 * session, user and user-session keyrings are the roots of keyfs's tree
 * and are kept as the kernel keeps KEY_FLAG_KEEP keys: EPERM.  The process
 * and persistent keyrings go, and are made anew when next asked for.
 */
static int mem_invalidate(struct keyfs_backend *b, const struct keyfs_cred *c,
			  kserial_t key)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, 0, KEYFS_PERM_SEARCH, &k);
	if (ret == 0 && (k == b->session || k == b->user ||
			 k == b->user_session))
		ret = -EPERM;
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	if (k == b->persistent)
		b->persistent = NULL;
	if (k == b->process)
		b->process = NULL;
	k->special = false;
	unlink_all(b, k);
	mem_key_unref(b, k);
	return mem_commit(b);
}

static int mem_clear(struct keyfs_backend *b, const struct keyfs_cred *c,
		     kserial_t keyring)
{
	struct mkey *kr;
	int ret;

	mem_begin(b);
	ret = lookup_keyring(b, c, keyring, MEM_LOOKUP_CREATE, KEYFS_PERM_WRITE,
			     &kr);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	for (size_t i = 0; i < kr->ring->nlinks; i++)
		touch(kr->ring->links[i], false);
	mring_clear(b, kr);
	mem_charge_sync(b, kr);
	touch(kr, true);
	return mem_commit(b);
}

/* keyctl_setperm_key(): setattr, and the caller owns the key (or is root,
 * standing for CAP_SYS_ADMIN). */
static int mem_setperm(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t key, uint32_t perm)
{
	struct mkey *k;
	int ret;

	if (perm & ~MEM_PERM_VALID)
		return -EINVAL;
	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE | MEM_LOOKUP_PARTIAL,
			 KEYFS_PERM_SETATTR, &k);
	if (ret == 0)
		ret = perm_setperm_allowed(c, k->uid, c->uid == 0);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	k->perm = perm;
	touch(k, false);
	return mem_commit(b);
}

/* keyctl_chown_key(): setattr; giving the key to another uid, or to a
 * group the caller is not in, takes root (CAP_SYS_ADMIN).  The new owner
 * takes over the quota charge and must have room for it. */
static int mem_chown(struct keyfs_backend *b, const struct keyfs_cred *c,
		     kserial_t key, uid_t uid, gid_t gid)
{
	struct muser *from, *to = NULL;
	struct mkey *k;
	int ret;

	if (uid == (uid_t)-1 && gid == (gid_t)-1)
		return 0;
	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE | MEM_LOOKUP_PARTIAL,
			 KEYFS_PERM_SETATTR, &k);
	if (ret < 0)
		goto out;
	ret = perm_chown_allowed(c, k->uid, k->gid, uid, gid, c->uid == 0);
	if (ret < 0)
		goto out;
	if (uid != (uid_t)-1 && uid != k->uid) {
		if (k->in_quota)
			ret = quota_room(b, uid, 1, (long)k->charged);
		if (ret == 0)
			ret = mem_user_get(b, uid, &to);
		if (ret < 0)
			goto out;
		from = mem_user_find(b, k->uid);
		from->nkeys--;
		from->nikeys--;
		to->nkeys++;
		to->nikeys++;
		if (k->in_quota) {
			from->qnkeys--;
			from->qnbytes -= k->charged;
			to->qnkeys++;
			to->qnbytes += k->charged;
		}
		k->uid = uid;
	}
	if (gid != (gid_t)-1)
		k->gid = gid;
	touch(k, false);
	return mem_commit(b);
out:
	mem_end(b);
	return ret;
}

static int mem_set_timeout(struct keyfs_backend *b, const struct keyfs_cred *c,
			   kserial_t key, unsigned secs)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE | MEM_LOOKUP_PARTIAL,
			 KEYFS_PERM_SETATTR, &k);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	k->expiry = secs ? time(NULL) + (time_t)secs : 0;
	gc_schedule(b, k->expiry);
	touch(k, false);
	return mem_commit(b);
}

/*
 * keyctl_restrict_keyring(): setattr on the keyring.  Only "refuse every
 * link" (no type) can be set: none of this backend's types offers a
 * restriction scheme (the kernel's asymmetric type does), so a type with a
 * restriction answers ENOENT as the kernel does for such types, an
 * unknown type ENOKEY, a type without a restriction EINVAL.
 */
static int mem_restrict(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t keyring, const char *type,
			const char *restriction)
{
	struct mkey *kr;
	int ret;

	if (type && !restriction)
		return -EINVAL;
	mem_begin(b);
	ret = lookup_keyring(b, c, keyring, 0, KEYFS_PERM_SETATTR, &kr);
	if (ret == 0 && type)
		ret = mtype_lookup(type) ? -ENOENT : -ENOKEY;
	if (ret == 0 && (kr->ring->restricted || kr->ring->restrict_type))
		ret = -EEXIST;
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	kr->ring->restricted = true;
	touch(kr, false);
	return mem_commit(b);
}

static int mem_security(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t key, char **label_alloc)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_PARTIAL, KEYFS_PERM_VIEW, &k);
	mem_end_read(b);
	if (ret < 0)
		return ret;
	/* No LSM here: keyctl_get_security() gives an empty string. */
	*label_alloc = strdup("");
	return *label_alloc ? 0 : -ENOMEM;
}

static int mem_quota(struct keyfs_backend *b, const struct keyfs_cred *c,
		     struct key_quota *q)
{
	const struct muser *u;

	mem_begin(b);
	mem_end(b);
	u = mem_user_find(b, c->uid);
	q->keys = u ? u->qnkeys : 0;
	q->bytes = u ? u->qnbytes : 0;
	mem_quota_limits(b, c->uid, &q->maxkeys, &q->maxbytes);
	return 0;
}

const struct keyfs_backend_ops backend_memory_ops = {
	.name = "memory",
	.init = mem_init,
	.destroy = mem_destroy,
	.special = mem_special,
	.persistent = mem_persistent,
	.describe = mem_describe,
	.read = mem_read,
	.list = mem_list,
	.find = mem_find,
	.list_all = mem_list_all,
	.add = mem_add,
	.update = mem_update,
	.link = mem_link,
	.unlink = mem_unlink,
	.move = mem_move,
	.revoke = mem_revoke,
	.invalidate = mem_invalidate,
	.clear = mem_clear,
	.setperm = mem_setperm,
	.chown = mem_chown,
	.set_timeout = mem_set_timeout,
	.restrict_keyring = mem_restrict,
	.request = memory_request,
	.search = memory_search,
	.security = mem_security,
	.proc_keys = mem_proc_keys,
	.proc_key_users = mem_proc_key_users,
	.supports = mem_supports,
	.quota = mem_quota,
	.check_new = mem_check_new,
};
