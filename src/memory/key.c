/* key.c: the memory backend's keys: the serial table, owners and quotas, allocation, reaping, creation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "memory.h"

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
		struct muser *nu = grow_room(b->users, b->nusers, &b->ucap, 4,
					     SIZE_MAX, sizeof(*nu));

		if (!nu)
			return -ENOMEM;
		b->users = nu;
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
int mem_quota_room(const struct keyfs_backend *b, uid_t uid, long dkeys,
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

void mem_limits_read(struct keyfs_backend *b)
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

uint32_t mem_stamp(struct keyfs_backend *b)
{
	if (++b->stamp == 0) {
		for (size_t i = 0; i < b->tcap; i++)
			for (struct mkey *k = b->table[i]; k; k = k->hnext)
				k->walk_stamp = 0;
		b->stamp = 1;
	}
	return b->stamp;
}

void mem_key_free(struct mkey *k)
{
	if (k->par_many)
		free(k->par.many);
	free(k);
}

struct mkey *mem_key_alloc(const struct mkey_type *type, const char *desc)
{
	size_t dlen = strlen(desc) + 1;
	struct mkey *k = calloc(1, sizeof(*k) + dlen);

	if (!k)
		return NULL;
	memcpy(k->desc, desc, dlen);
	k->type = type;
	return k;
}

void mem_key_register(struct keyfs_backend *b, struct mkey *k)
{
	struct muser *u = mem_user_find(b, k->uid);

	table_insert(b, k);
	mem_track_new(b, k);
	u->nkeys++;
	u->nikeys++;
	if (k->in_quota)
		u->qnkeys++;
	mem_charge_sync(b, k);
	mem_gc_schedule(b, k);
}

static void key_destroy(struct keyfs_backend *b, struct mkey *k)
{
	struct muser *u = mem_user_find(b, k->uid);

	mem_track_gone(b, k);
	mem_gc_unqueue(b, k);
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

void mem_key_touch(struct mkey *k, bool payload)
{
	k->ctime_ns = keyfs_now_ns();
	if (payload)
		k->mtime_ns = k->ctime_ns;
}

/* ---- making keys ---- */

int mem_key_new(struct keyfs_backend *b, const struct mkey_type *type,
		const char *desc, uid_t uid, gid_t gid, uint32_t perm,
		struct mkey **out)
{
	kserial_t serial;
	struct muser *u;
	struct mkey *k;
	int ret;

	if (mem_table_reserve(b) < 0 || mem_user_get(b, uid, &u) < 0)
		return -ENOMEM;
	ret = serial_alloc(b, &serial);
	if (ret < 0)
		return ret;
	k = mem_key_alloc(type, desc);
	if (!k)
		return -ENOMEM;
	k->serial = serial;
	k->uid = uid;
	k->gid = gid;
	k->perm = perm;
	k->mtime_ns = k->ctime_ns = keyfs_now_ns();
	*out = k;
	return 0;
}

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

int mem_key_quota(struct keyfs_backend *b, uid_t uid, const char *desc,
		  size_t datalen, struct mkey *dest,
		  const struct mkey_type *type)
{
	long bytes = (long)(strlen(desc) + 1 + datalen);

	if (dest && dest->in_quota && dest->uid == uid &&
	    !mring_find(dest, type, desc))
		bytes += MEM_LINK_BYTES;
	return mem_quota_room(b, uid, 1, bytes);
}

int mem_key_create(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const struct mkey_type *type, const char *desc,
		   struct mkey_prep *prep, struct mkey *dest,
		   struct mkey **out)
{
	struct mkey_prep neg = { 0 };
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
	ret = mem_key_new(b, type, desc, c->uid, c->gid, type->perm, &k);
	if (ret < 0)
		goto out;
	k->in_quota = true;
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
