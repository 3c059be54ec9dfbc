/* types.c: the memory backend's key types and the keyring link table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "secmem.h"
#include "memory.h"

/* ---- payload types: user, logon, big_key ---- */

static int payload_preparse(struct mkey_prep *prep, const void *data,
			    size_t len, size_t max)
{
	if (len == 0 || !data)
		return -EINVAL;
	if (len > max)
		return -EFBIG;
	prep->data = secmem_alloc(len);	/* becomes key->payload */
	if (!prep->data)
		return -ENOMEM;
	memcpy(prep->data, data, len);
	prep->len = len;
	prep->datalen = len;
	return 0;
}

static int user_preparse(struct mkey_prep *prep, const void *data, size_t len)
{
	return payload_preparse(prep, data, len, KEYFS_USER_PAYLOAD_MAX);
}

static int big_key_preparse(struct mkey_prep *prep, const void *data,
			    size_t len)
{
	return payload_preparse(prep, data, len, KEYFS_BIG_PAYLOAD_MAX);
}

static void payload_free_preparse(struct mkey_prep *prep)
{
	secmem_free(prep->data);	/* wipes */
	prep->data = NULL;
	prep->len = 0;
}

static void payload_wipe(struct mkey *key)
{
	secmem_free(key->payload);	/* wipes */
	key->payload = NULL;
	key->len = 0;
	key->datalen = 0;
}

static void payload_instantiate(struct mkey *key, struct mkey_prep *prep)
{
	key->payload = prep->data;
	key->len = prep->len;
	key->datalen = prep->datalen;
	prep->data = NULL;
	prep->len = 0;
}

/* user_update(): the new payload displaces the old and, as in the kernel,
 * the key's timeout is cleared (the update sets the preparsed expiry,
 * which is "none"). */
static void user_update(struct mkey *key, struct mkey_prep *prep)
{
	payload_wipe(key);
	payload_instantiate(key, prep);
	key->expiry = 0;
}

/* big_key_update() keeps the timeout. */
static void big_key_update(struct mkey *key, struct mkey_prep *prep)
{
	payload_wipe(key);
	payload_instantiate(key, prep);
}

static bool desc_match(const struct mkey *key, const char *desc)
{
	return strcmp(key->desc, desc) == 0;
}

static void payload_revoke(struct keyfs_backend *b, struct mkey *key)
{
	(void)b;
	payload_wipe(key);
}

static void payload_destroy(struct keyfs_backend *b, struct mkey *key)
{
	(void)b;
	payload_wipe(key);
}

static void user_describe(const struct mkey *key, char *buf, size_t len)
{
	if (key->negative)
		snprintf(buf, len, "%s", key->desc);
	else
		snprintf(buf, len, "%s: %u", key->desc, key->datalen);
}

static void big_key_describe(const struct mkey *key, char *buf, size_t len)
{
	if (key->negative)
		snprintf(buf, len, "%s", key->desc);
	else
		snprintf(buf, len, "%s: %u [%s]", key->desc, key->datalen,
			 key->datalen > MEM_BIG_KEY_FILE_THRESHOLD ?
			 "file" : "buff");
}

static int payload_read(const struct mkey *key, void **buf_alloc, size_t *len)
{
	void *buf = NULL;

	if (key->len) {
		buf = malloc(key->len);
		if (!buf)
			return -ENOMEM;
		memcpy(buf, key->payload, key->len);
	}
	*buf_alloc = buf;
	*len = key->len;
	return 0;
}

/* logon_vet_description(): "subtype:rest", the subtype not empty. */
static int logon_vet_description(const char *desc)
{
	const char *colon = strchr(desc, ':');

	return colon && colon != desc ? 0 : -EINVAL;
}

/* The slots the types with a plain payload (not keyrings) share. */
#define PAYLOAD_SLOTS \
	.free_preparse = payload_free_preparse, \
	.instantiate = payload_instantiate, \
	.match = desc_match, \
	.revoke = payload_revoke, \
	.destroy = payload_destroy

static const struct mkey_type mtype_user = {
	.name = "user",
	.perm = POS(KEYFS_PERM_ALL) | USR(KEYFS_PERM_VIEW),
	.max_payload = KEYFS_USER_PAYLOAD_MAX,
	.preparse = user_preparse,
	.update = user_update,
	PAYLOAD_SLOTS,
	.describe = user_describe,
	.read = payload_read,
};

/* As user, but the payload can never be read back from user space. */
static const struct mkey_type mtype_logon = {
	.name = "logon",
	.perm = POS(KEYFS_PERM_ALL & ~KEYFS_PERM_READ) | USR(KEYFS_PERM_VIEW),
	.max_payload = KEYFS_USER_PAYLOAD_MAX,
	.vet_description = logon_vet_description,
	.preparse = user_preparse,
	.update = user_update,
	PAYLOAD_SLOTS,
	.describe = user_describe,
};

static const struct mkey_type mtype_big_key = {
	.name = "big_key",
	.perm = POS(KEYFS_PERM_ALL) | USR(KEYFS_PERM_VIEW),
	.max_payload = KEYFS_BIG_PAYLOAD_MAX,
	.preparse = big_key_preparse,
	.update = big_key_update,
	PAYLOAD_SLOTS,
	.describe = big_key_describe,
	.read = payload_read,
};

/* ---- the keyring link table ---- */

struct mring *mring_alloc(void)
{
	return calloc(1, sizeof(struct mring));
}

void mring_free(struct mring *r)
{
	if (!r)
		return;
	free(r->links);
	free(r->rings);
	free(r->index);
	free(r->holes);
	free(r->restrict_type);
	free(r->restriction);
	free(r);
}

/* The key an occupied index slot points at. */
static struct mkey *slot_key(const struct mring *r, size_t slot)
{
	return r->links[r->index[slot] - 1];
}

static size_t index_slot(const struct mring *r, const struct mkey_type *type,
			 const char *desc)
{
	size_t mask = r->icap - 1;
	size_t i = hash_name(type->name, desc) & mask;

	while (r->index[i]) {
		struct mkey *k = slot_key(r, i);

		if (k->type == type && k->type->match(k, desc))
			break;
		i = (i + 1) & mask;
	}
	return i;
}

struct mkey *mring_find(const struct mkey *keyring,
			const struct mkey_type *type, const char *desc)
{
	const struct mring *r = keyring->ring;
	size_t slot;

	if (!r || r->icap == 0)
		return NULL;
	slot = index_slot(r, type, desc);
	return r->index[slot] ? slot_key(r, slot) : NULL;
}

/* Index every link anew (the positions changed, or the table did). */
static void index_fill(struct mring *r)
{
	struct mkey *k;

	memset(r->index, 0, r->icap * sizeof(*r->index));
	mring_for_each(r, i, k)
		r->index[index_slot(r, k->type, k->desc)] = (uint32_t)i + 1;
}

static int index_grow(struct mring *r, size_t want)
{
	size_t icap = grow_pow2(2 * want, r->icap ? r->icap : 8);
	uint32_t *index;

	if (icap == r->icap)
		return 0;
	index = malloc(icap * sizeof(*index));
	if (!index)
		return -ENOMEM;
	free(r->index);
	r->index = index;
	r->icap = icap;
	index_fill(r);
	return 0;
}

/* The Fenwick tree of holes (struct mring): node i covers the slots
 * (i - lowbit(i), i], counted from 1. */
static void holes_add(struct mring *r, size_t slot, int32_t d)
{
	if (!r->holes)
		return;
	for (size_t i = slot + 1; i <= r->hcap; i += i & -i)
		r->holes[i - 1] += (uint32_t)d;
}

static size_t holes_before(const struct mring *r, size_t slot)
{
	size_t n = 0;

	for (size_t i = slot; i > 0; i -= i & -i)
		n += r->holes[i - 1];
	return n;
}

static void holes_drop(struct mring *r)
{
	free(r->holes);
	r->holes = NULL;
	r->hcap = 0;
}

/* One pass: each node adds itself to the node that covers it next. */
static int holes_build(struct mring *r)
{
	r->holes = calloc(r->cap, sizeof(*r->holes));
	if (!r->holes)
		return -ENOMEM;
	r->hcap = r->cap;
	for (size_t i = 1; i <= r->hcap; i++) {
		size_t up = i + (i & -i);

		if (i <= r->nslots && !r->links[i - 1])
			r->holes[i - 1]++;
		if (up <= r->hcap)
			r->holes[up - 1] += r->holes[i - 1];
	}
	return 0;
}

size_t mring_position(struct mkey *keyring, const struct mkey *k)
{
	struct mring *r = keyring->ring;
	size_t slot, at, n = 0;
	const struct mkey *ch;

	if (!r || r->icap == 0)
		return 0;
	slot = index_slot(r, k->type, k->desc);
	if (!r->index[slot] || slot_key(r, slot) != k)
		return r->nlinks;
	at = r->index[slot] - 1;
	if (r->nslots == r->nlinks)
		return at;
	if (r->holes || holes_build(r) == 0)
		return at - holes_before(r, at);
	mring_for_each(r, i, ch) {	/* no memory for the tree: count */
		if (i == at)
			break;
		n++;
	}
	return n;
}

/* Squeeze the holes out of links, keeping the order, and place the
 * keyrings anew. */
static void links_compact(struct mring *r)
{
	size_t n = 0;
	struct mkey *k;

	holes_drop(r);
	r->nrings = 0;
	mring_for_each(r, i, k) {
		if (mem_is_keyring(k))
			r->rings[r->nrings++] = (uint32_t)n;
		r->links[n++] = k;
	}
	r->nslots = n;
	index_fill(r);
}

/* Drop the places of unlinked keyrings from rings, keeping the order. */
static void rings_compact(struct mring *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nrings; i++)
		if (r->links[r->rings[i]])
			r->rings[n++] = r->rings[i];
	r->nrings = n;
}

/* Room for one more parent: the first moves out of place at the second,
 * then the room doubles each time nparents reaches a power of two. */
static int parent_room(struct mkey *child)
{
	uint32_t n = child->nparents, cap;
	struct mkey **p;

	/* par.many's room at the least: the power of two at or above n, 2
	 * at the least (it never shrinks: unlinks may leave it more) */
	if (child->par_many ? n < grow_pow2(n, 2) : n < 1)
		return 0;
	if (n >= UINT32_MAX / 2)
		return -ENOMEM;
	cap = child->par_many ? n * 2 : 2;
	p = realloc(child->par_many ? child->par.many : NULL, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (!child->par_many && n)
		p[0] = child->par.one;
	child->par.many = p;
	child->par_many = true;
	return 0;
}

int mring_reserve(struct mkey *keyring, struct mkey *child)
{
	struct mring *r = keyring->ring;
	struct mkey **links;
	uint32_t *rings;

	if (r->nslots == r->cap && r->nlinks < r->nslots)
		links_compact(r);
	/* index positions and places in rings are 32-bit */
	links = grow_room(r->links, r->nslots, &r->cap, 8, UINT32_MAX - 1,
		     sizeof(*r->links));
	if (!links)
		return -ENOMEM;
	r->links = links;
	if (r->hcap != r->cap)
		holes_drop(r);
	if (index_grow(r, r->nlinks + 1) < 0)
		return -ENOMEM;
	if (mem_is_keyring(child)) {
		rings = grow_room(r->rings, r->nrings, &r->rcap, 4, SIZE_MAX,
			     sizeof(*r->rings));
		if (!rings)
			return -ENOMEM;
		r->rings = rings;
	}
	return parent_room(child);
}

static void parent_remove(struct mkey *child, struct mkey *keyring)
{
	for (size_t i = 0; i < child->nparents; i++)
		if (mkey_parents(child)[i] == keyring) {
			mkey_parents(child)[i] = mkey_parents(child)[--child->nparents];
			return;
		}
}

/* Remove slot i from the index, shifting back the entries of its probe
 * run so that lookups never meet a hole (no tombstones). */
static void index_delete(struct mring *r, size_t i)
{
	size_t mask = r->icap - 1;
	size_t j = i;

	r->index[i] = 0;
	for (;;) {
		const struct mkey *k;
		size_t home;

		j = (j + 1) & mask;
		if (!r->index[j])
			return;
		k = slot_key(r, j);
		home = hash_name(k->type->name, k->desc) & mask;
		/* Move j back into the hole unless its home lies cyclically
		 * in (i, j]. */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			r->index[i] = r->index[j];
			r->index[j] = 0;
			i = j;
		}
	}
}

struct mkey *mring_link(struct mkey *keyring, struct mkey *child)
{
	struct mring *r = keyring->ring;
	size_t slot = index_slot(r, child->type, child->desc);
	struct mkey *old;

	if (!r->index[slot]) {
		r->links[r->nslots++] = child;
		r->index[slot] = (uint32_t)r->nslots;
		r->nlinks++;
		if (mem_is_keyring(child)) {
			r->rings[r->nrings++] = (uint32_t)(r->nslots - 1);
			r->nkeyrings++;
		}
		old = NULL;
	} else {
		old = slot_key(r, slot);
		if (old == child)
			return NULL;
		/* Displace in place, as the kernel's assoc_array replaces
		 * the leaf: the new key takes the old one's position.  The
		 * two have one type: both keyrings or neither, so rings,
		 * which holds places, stays as it is. */
		r->links[r->index[slot] - 1] = child;
		parent_remove(old, keyring);
	}
	mkey_parents(child)[child->nparents++] = keyring;
	keyring->datalen = r->nlinks * MEM_LINK_BYTES;
	return old;
}

bool mring_unlink(struct mkey *keyring, struct mkey *child)
{
	struct mring *r = keyring->ring;
	size_t slot, at;

	if (!r || r->icap == 0)
		return false;
	slot = index_slot(r, child->type, child->desc);
	if (!r->index[slot] || slot_key(r, slot) != child)
		return false;
	at = r->index[slot] - 1;
	index_delete(r, slot);
	r->links[at] = NULL;
	holes_add(r, at, 1);
	r->nlinks--;
	if (mem_is_keyring(child))
		r->nkeyrings--;
	/* a slot past the end is no hole: the next link fills it */
	while (r->nslots && !r->links[r->nslots - 1])
		holes_add(r, --r->nslots, -1);
	/* rings is in link order: the places past the last link are last */
	while (r->nrings && r->rings[r->nrings - 1] >= r->nslots)
		r->nrings--;
	/* Squeezing costs a pass: once the holes outnumber what is left, so
	 * that each unlink pays for about one step of it. */
	if (r->nslots - r->nlinks > r->nlinks + 8)
		links_compact(r);
	else if (r->nrings - r->nkeyrings > r->nkeyrings + 8)
		rings_compact(r);
	parent_remove(child, keyring);
	keyring->datalen = r->nlinks * MEM_LINK_BYTES;
	return true;
}

void mring_clear(struct keyfs_backend *b, struct mkey *keyring)
{
	struct mring *r = keyring->ring;
	struct mkey *k;

	if (!r)
		return;
	mring_for_each(r, i, k) {
		parent_remove(k, keyring);
		mem_key_unref(b, k);
	}
	holes_drop(r);
	r->nslots = 0;
	r->nlinks = 0;
	r->nrings = 0;
	r->nkeyrings = 0;
	if (r->index)
		memset(r->index, 0, r->icap * sizeof(*r->index));
	keyring->datalen = 0;
}

void mring_serials(const struct mring *r, kserial_t *out)
{
	const struct mkey *k;
	size_t n = 0;

	mring_for_each(r, i, k)
		out[n++] = k->serial;
}

/* ---- keyring ---- */

static int keyring_preparse(struct mkey_prep *prep, const void *data,
			    size_t len)
{
	(void)data;
	if (len != 0)
		return -EINVAL;
	prep->ring = mring_alloc();
	return prep->ring ? 0 : -ENOMEM;
}

static void keyring_free_preparse(struct mkey_prep *prep)
{
	mring_free(prep->ring);
	prep->ring = NULL;
}

static void keyring_instantiate(struct mkey *key, struct mkey_prep *prep)
{
	key->ring = prep->ring;
	key->datalen = 0;
	prep->ring = NULL;
}

/* keyring_revoke(): a revoked keyring drops all its links at once. */
static void keyring_revoke(struct keyfs_backend *b, struct mkey *key)
{
	mring_clear(b, key);
}

static void keyring_destroy(struct keyfs_backend *b, struct mkey *key)
{
	mring_clear(b, key);
	mring_free(key->ring);
	key->ring = NULL;
}

static void keyring_describe(const struct mkey *key, char *buf, size_t len)
{
	size_t n = key->ring ? key->ring->nlinks : 0;

	if (key->negative)
		snprintf(buf, len, "%s", key->desc);
	else if (n)
		snprintf(buf, len, "%s: %zu", key->desc, n);
	else
		snprintf(buf, len, "%s: empty", key->desc);
}

/* A keyring reads as the array of the serials it links. */
static int keyring_read(const struct mkey *key, void **buf_alloc, size_t *len)
{
	size_t n = key->ring ? key->ring->nlinks : 0;
	kserial_t *buf = NULL;

	if (n) {
		buf = malloc(n * sizeof(*buf));
		if (!buf)
			return -ENOMEM;
		mring_serials(key->ring, buf);
	}
	*buf_alloc = buf;
	*len = n * sizeof(*buf);
	return 0;
}

const struct mkey_type mtype_keyring = {
	.name = "keyring",
	.perm = POS(KEYFS_PERM_ALL) | USR(KEYFS_PERM_VIEW),
	.max_payload = 0,
	.preparse = keyring_preparse,
	.free_preparse = keyring_free_preparse,
	.instantiate = keyring_instantiate,
	.match = desc_match,
	.revoke = keyring_revoke,
	.destroy = keyring_destroy,
	.describe = keyring_describe,
	.read = keyring_read,
};

static const struct mkey_type *const mtypes[] = {
	&mtype_keyring, &mtype_user, &mtype_logon, &mtype_big_key,
};

const struct mkey_type *mtype_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(mtypes) / sizeof(mtypes[0]); i++)
		if (strcmp(mtypes[i]->name, name) == 0)
			return mtypes[i];
	return NULL;
}
