/* keyring.c: a keyring's links: the per-keyring index by serial and name, listing and find. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "kernel.h"

/* ---- keyring indexes ---- */

struct kidx *kidx_new(size_t hint)
{
	struct kidx *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->nslots = grow_pow2(hint, SLOTS_MIN);
	x->cap = hint ? hint : 4;
	x->ents = malloc(x->cap * sizeof(*x->ents));
	x->by_serial = calloc(x->nslots, sizeof(*x->by_serial));
	x->by_name = calloc(x->nslots, sizeof(*x->by_name));
	if (!x->ents || !x->by_serial || !x->by_name) {
		kidx_free(x);
		return NULL;
	}
	x->built_ns = keyfs_mono_ns();
	return x;
}

void kidx_free(struct kidx *x)
{
	if (!x)
		return;
	free(x->ents);
	free(x->by_serial);
	free(x->by_name);
	free(x);
}

/* keyfs changed the index itself: it no longer matches its listing. */
static void kidx_unlist(struct kidx *x)
{
	x->listed = false;
}

/* The entry of serial s, or NULL; valid until the next insert. */
static struct ient *kidx_by_serial(struct kidx *x, kserial_t s)
{
	uint32_t i;

	for (i = x->by_serial[hash_serial(s, x->nslots)]; i;
	     i = x->ents[i - 1].serial_next)
		if (x->ents[i - 1].serial == s)
			return &x->ents[i - 1];
	return NULL;
}

static struct ient *kidx_by_name(struct keyfs_backend *b, struct kidx *x,
				const char *type, const char *desc)
{
	uint32_t h = hash_name(type, desc);
	struct ient *e;
	struct kkey *k;

	for (uint32_t i = x->by_name[h & (x->nslots - 1)]; i; i = e->name_next) {
		e = &x->ents[i - 1];
		if (!e->named || e->hash != h)
			continue;
		k = kkey_get(b, e->serial);
		if (kkey_is(k, type, desc))
			return e;
	}
	return NULL;
}

/* Chain entry i (its place) into x's tables. */
static void kidx_chain(struct kidx *x, uint32_t i)
{
	struct ient *e = &x->ents[i];
	size_t j = hash_serial(e->serial, x->nslots);

	e->serial_next = x->by_serial[j];
	x->by_serial[j] = i + 1;
	e->name_next = 0;
	if (e->named) {
		j = e->hash & (x->nslots - 1);
		e->name_next = x->by_name[j];
		x->by_name[j] = i + 1;
	}
}

static int kidx_grow(struct kidx *x)
{
	size_t nslots = x->nslots * 2;
	uint32_t *bs = calloc(nslots, sizeof(*bs));
	uint32_t *bn = calloc(nslots, sizeof(*bn));

	if (!bs || !bn) {
		free(bs);
		free(bn);
		return -ENOMEM;
	}
	free(x->by_serial);
	free(x->by_name);
	x->by_serial = bs;
	x->by_name = bn;
	x->nslots = nslots;
	for (size_t i = 0; i < x->nents; i++)
		if (x->ents[i].serial)
			kidx_chain(x, (uint32_t)i);
	return 0;
}

/* A place for one more entry: a free one, else one past the end. */
static int kidx_place(struct kidx *x, uint32_t *out)
{
	struct ient *v;
	size_t cap;

	if (x->free) {
		*out = x->free - 1;
		x->free = x->ents[*out].serial_next;
		return 0;
	}
	if (x->nents == UINT32_MAX - 1)
		return -ENOMEM;
	if (x->nents == x->cap) {
		cap = x->cap + x->cap / 2 + 4;
		v = realloc(x->ents, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		x->ents = v;
		x->cap = cap;
	}
	*out = (uint32_t)x->nents++;
	return 0;
}

/* Add serial s (whose entry k may be NULL or undescribed) to the index. */
static int kidx_insert(struct kidx *x, kserial_t s, const struct kkey *k)
{
	struct ient *e;
	uint32_t i;

	if (kidx_by_serial(x, s))
		return 0;
	if (x->n >= x->nslots && kidx_grow(x) < 0)
		return -ENOMEM;
	if (kidx_place(x, &i) < 0)
		return -ENOMEM;
	e = &x->ents[i];
	memset(e, 0, sizeof(*e));
	e->serial = s;
	e->named = k && k->named;
	if (e->named) {
		e->hash = hash_name(k->type, kkey_desc(k));
		e->keyring = keyfs_is_keyring_type(k->type);
	}
	kidx_chain(x, i);
	x->n++;
	x->nkeyrings += e->keyring;
	return 0;
}

/* The link after entry i (1 + its place) in its chain by name or serial. */
static uint32_t *kidx_next(struct kidx *x, uint32_t i, bool by_name)
{
	return by_name ? &x->ents[i - 1].name_next : &x->ents[i - 1].serial_next;
}

/* Take entry i (1 + its place) out of the chain starting at *head. */
static void kidx_unchain(struct kidx *x, uint32_t *head, uint32_t i, bool by_name)
{
	for (uint32_t *pp = head; *pp; pp = kidx_next(x, *pp, by_name))
		if (*pp == i) {
			*pp = *kidx_next(x, i, by_name);
			return;
		}
}

static void kidx_remove(struct kidx *x, kserial_t s)
{
	struct ient *e = kidx_by_serial(x, s);
	uint32_t i;

	if (!e)
		return;
	i = (uint32_t)(e - x->ents) + 1;
	kidx_unchain(x, &x->by_serial[hash_serial(s, x->nslots)], i, false);
	if (e->named)
		kidx_unchain(x, &x->by_name[e->hash & (x->nslots - 1)], i, true);
	x->n--;
	x->nkeyrings -= e->keyring;
	memset(e, 0, sizeof(*e));	/* serial 0: free */
	e->serial_next = x->free;
	x->free = i;
	kidx_unlist(x);
}

/* Whether x was built from exactly this listing and not changed since. */
static bool kidx_is_listing(const struct kidx *x, const kserial_t *list,
			    size_t n)
{
	if (!x->listed || x->nents != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (x->ents[i].serial != list[i])
			return false;
	return true;
}

/* keyfs linked k into ring: the index (if built) follows, displacing the
 * key of the same type and description as the kernel does. */
void kring_note_link(struct keyfs_backend *b, kserial_t ring, struct kkey *k)
{
	struct kkey *r = kkey_get(b, ring);
	struct ient *old;

	if (!k)
		return;
	kkey_parent_add(k, ring);	/* on ENOMEM nlink is merely low */
	if (!r || !r->idx || kidx_by_serial(r->idx, k->serial))
		return;
	kidx_unlist(r->idx);
	if (k->named) {
		old = kidx_by_name(b, r->idx, k->type, kkey_desc(k));
		if (old) {
			kkey_parent_del(kkey_get(b, old->serial), ring);
			kidx_remove(r->idx, old->serial);
		}
	}
	if (kidx_insert(r->idx, k->serial, k) < 0) {
		/* an index missing a key would hide it: list anew next time */
		kidx_free(r->idx);
		r->idx = NULL;
	}
}

/* ring changed in a way keyfs cannot follow: list it anew next time. */
void kring_note_unknown(struct keyfs_backend *b, kserial_t ring)
{
	struct kkey *r = kkey_get(b, ring);

	if (r && r->idx) {
		r->idx->built_ns = 0;
		r->idx->unknown = true;
		kidx_unlist(r->idx);
	}
}

void kring_note_unlink(struct keyfs_backend *b, kserial_t ring, kserial_t s)
{
	struct kkey *r = kkey_get(b, ring);

	kkey_parent_del(kkey_get(b, s), ring);
	if (r && r->idx) {
		kidx_unlist(r->idx);
		kidx_remove(r->idx, s);
	}
}

/* Build ring's index anew from a listing: serials keyfs has described
 * before cost nothing, new ones are described once. */
/* A listed key keyfs has not described: keyctl describes it, or, for one
 * revoked or expired before keyfs saw it, /proc/keys names it (rarely:
 * only keys never seen alive are looked up there). */
static struct kkey *learn_listed(struct keyfs_backend *b,
				 const struct keyfs_cred *c, kserial_t s)
{
	struct kkey *k;
	int ret = kkey_learn(b, c, s, &k);

	if (ret == 0)
		return k;
	k = kkey_get(b, s);
	if ((ret == -EKEYREVOKED || ret == -EKEYEXPIRED) && (!k || !k->named)) {
		k = kkey_make(b, s);
		if (k)
			kkey_learn_dead(k);
	}
	return k;
}

/* Links of a new index described at once (prefetch.c), a part at a time:
 * the helpers wait for the next part while the last answers of one are
 * taken in, so parts are long. */
#define REFRESH_PART	4096

/* The keys of list[0, n) keyfs has not described, described at once;
 * whether that was done.  Where it was not, the answers made for a
 * listing this index is built in (for a keyring among its keys) stay. */
static bool describe_ahead(struct keyfs_backend *b, const struct keyfs_cred *c,
			   const kserial_t *list, size_t n)
{
	kserial_t unnamed[REFRESH_PART];
	size_t m = 0;
	struct kkey *k;

	for (size_t i = 0; i < n; i++)
		if (!(k = kkey_get(b, list[i])) || !k->named)
			unnamed[m++] = list[i];
	if (m < 2)
		return false;	/* nothing to share */
	kpre_run(b, c, unnamed, m, 0);
	return true;
}

static int kidx_refresh(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t ring, const kserial_t *list, size_t n)
{
	struct kidx *x, *old;
	struct kkey *r, *k;
	bool changed, ahead = false;
	int ret = 0;

	r = kkey_make(b, ring);
	if (!r)
		return -ENOMEM;
	/* The same listing as last time: the index stands as it is (keys
	 * behind its serials are described when used, not here). */
	if (r->idx && kidx_is_listing(r->idx, list, n)) {
		r->idx->built_ns = keyfs_mono_ns();
		return 0;
	}
	x = kidx_new(n);
	if (!r || !x) {
		kidx_free(x);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (i % REFRESH_PART == 0 &&
		    describe_ahead(b, c, list + i, n - i < REFRESH_PART ?
						   n - i : REFRESH_PART))
			ahead = true;
		k = kkey_get(b, list[i]);
		if (!k || !k->named)
			k = learn_listed(b, c, list[i]);
		ret = kidx_insert(x, list[i], k);
		if (ret == 0 && k)
			ret = kkey_parent_add(k, ring);
		if (ret < 0)
			break;
	}
	if (ahead)
		kpre_drop(b);
	if (ret < 0) {
		kidx_free(x);
		return ret;
	}
	old = r->idx;
	changed = old && old->n != x->n;
	for (size_t i = 0; old && i < old->nents; i++)
		if (old->ents[i].serial && !kidx_by_serial(x, old->ents[i].serial)) {
			kkey_parent_del(kkey_get(b, old->ents[i].serial), ring);
			changed = true;
		}
	if (changed)
		kkey_touch_payload(r);
	kidx_free(old);
	r->idx = x;
	/* entries were made in the listing's order, one per serial */
	x->listed = x->nents == n;
	return 0;
}

/* ---- payloads ---- */

/* A first read's buffer: most payloads (passwords, tokens) fit, so an
 * open costs one keyctl read, not a size probe and a read. */
#define READ_GUESS	256

/* keyctl read: into a buffer of READ_GUESS bytes, then, if the payload is
 * longer, with the size-probe protocol: allocate what the kernel said,
 * read, and again if it grew meanwhile.  The buffer is the caller's, to
 * wipe and free; NULL when empty. */
static int read_payload(kserial_t key, void **buf_alloc, size_t *lenp)
{
	void *buf = malloc(READ_GUESS);
	long len, got;

	if (!buf)
		return -ENOMEM;
	len = keyctl_read(key, buf, READ_GUESS);
	if (len >= 0 && len <= READ_GUESS) {
		if (len == 0) {
			free(buf);
			buf = NULL;
		}
		*buf_alloc = buf;
		*lenp = (size_t)len;
		return 0;
	}
	explicit_bzero(buf, READ_GUESS);
	free(buf);
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

struct kread {
	kserial_t key;
	void **buf_alloc;
	size_t *lenp;
};

static int read_run(void *arg)
{
	struct kread *r = arg;

	return read_payload(r->key, r->buf_alloc, r->lenp);
}

int kpayload_read_as(struct keyfs_backend *b, const struct keyfs_cred *c,
		     kserial_t key, void **buf_alloc, size_t *lenp)
{
	struct kread r = { key, buf_alloc, lenp };

	return as_caller(b, c, read_run, &r);
}

/* A keyring's links, read as the caller; the index follows the listing. */
int kring_read(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t ring, kserial_t **out, size_t *n)
{
	void *buf = NULL;
	size_t len = 0;
	int ret;

	ret = kpayload_read_as(b, c, ring, &buf, &len);
	if (ret < 0)
		return ret;
	ret = kidx_refresh(b, c, ring, buf, len / sizeof(kserial_t));
	if (ret < 0) {
		free(buf);
		return ret;
	}
	*out = buf;
	*n = len / sizeof(kserial_t);
	return 0;
}

/* Whether a keyring keyfs saw linking key still links it, each listed
 * anew as keyfs.  After keyctl unlink behind keyfs's back the key is no
 * longer possessed, so the kernel refuses to read it until its garbage
 * collector takes it: a refusal for a key no keyring keyfs knows links any
 * more is a name gone (ENOENT), not a permission.  A key whose last
 * known keyring was listed without it stays so (orphaned): asked again,
 * the answer is the same.  True where keyfs cannot tell (no keyring ever
 * seen linking it, a keyring it cannot list). */
bool kring_still_linked(struct keyfs_backend *b, kserial_t key)
{
	struct kkey *k = kkey_get(b, key);
	kserial_t *rings, *list;
	size_t nrings, n;
	bool linked = false;

	if (!k || !k->nparents)
		return !k || !k->orphaned;
	nrings = k->nparents;
	rings = malloc(nrings * sizeof(*rings));
	if (!rings)
		return true;
	/* listing a keyring edits k->parents: walk a copy */
	memcpy(rings, k->parents, nrings * sizeof(*rings));
	for (size_t i = 0; i < nrings && !linked; i++) {
		if (kring_read(b, NULL, rings[i], &list, &n) < 0) {
			linked = true;
			break;
		}
		for (size_t j = 0; j < n && !linked; j++)
			linked = list[j] == key;
		free(list);
	}
	free(rings);
	return linked;
}

/* A refusal (EACCES) or ENOKEY for key, made unlinked behind keyfs's
 * back: no keyring keyfs knows links it any more, so the name it was
 * reached by is gone (ENOENT), whatever the call. */
int kring_gone_if_unlinked(struct keyfs_backend *b, kserial_t key, int ret)
{
	if ((ret == -EACCES || ret == -ENOKEY) && !kring_still_linked(b, key))
		return -ENOENT;
	return ret;
}

/* ring's index, listed anew when older than the cache timeout. */
int kring_index(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t ring, struct kidx **xp)
{
	struct kkey *r = kkey_get(b, ring);
	kserial_t *list;
	size_t n;
	int ret;

	if (!r || !r->idx || age_of(r->idx->built_ns) >= b->cache_timeout) {
		ret = kring_read(b, c, ring, &list, &n);
		if (ret < 0)
			return ret;
		free(list);
		r = kkey_get(b, ring);
	}
	*xp = r->idx;
	return 0;
}

int kernel_list(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t keyring, kserial_t **out_alloc, size_t *n)
{
	kserial_t *list;
	size_t cnt;
	int ret;

	ret = kkey_check(b, c, keyring, KEYFS_PERM_READ, 0);
	if (ret < 0)
		return ret;
	ret = kring_gone_if_unlinked(b, keyring, kring_read(b, c, keyring, &list, &cnt));
	if (ret < 0)
		return ret;
	*out_alloc = list;
	*n = cnt;
	return 0;
}

/* The name in keyring's listing, made anew.  Search alone lets the kernel
 * find a key by name, though not read the keyring: keyfs lists it for the
 * caller its check let in. */
static int find_listed(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t keyring, const char *type, const char *desc,
		       kserial_t *out)
{
	struct kidx *x;
	struct ient *e;
	int ret = kring_index(b, c, keyring, &x);

	if (ret == -EACCES && !is_mounter(b, c))
		ret = kring_index(b, NULL, keyring, &x);
	if (ret < 0)
		return ret;
	e = kidx_by_name(b, x, type, desc);
	if (!e)
		return -ENOKEY;
	*out = e->serial;
	return 0;
}

/*
 * An index older than the cache timeout is not listed anew for one name:
 * that would cost the whole keyring per lookup.  keyctl search asks the
 * kernel by name, which looks in the keyring itself first (a hash lookup)
 * and only then in keyrings it links.  Its answer checks the index:
 * - the key it finds is in the index: that is the answer;
 * - it finds a key the index lacks: the keyring changed, list it anew;
 * - it finds nothing (ENOKEY) and the index has nothing: no such name;
 * - otherwise (a dead key, one without search permission, an error): the
 *   index's key if it is still there, else list anew.
 * What this misses until the next listing of the keyring: a key unlinked
 * behind keyfs's back that is still reachable through another keyring
 * linked in this one, and a negative key linked behind keyfs's back
 * (search answers ENOKEY for it).  After keyfs's own changes that it
 * cannot follow (a request), the keyring is listed anew.
 */
static int find_stale(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t keyring, struct kidx *x, const char *type,
		      const char *desc, kserial_t *out)
{
	struct ient *e = kidx_by_name(b, x, type, desc);
	struct kkey *k;
	long s;

	s = keyctl_search(keyring, type, desc, 0);
	if (s > 0 && kidx_by_serial(x, (kserial_t)s)) {
		*out = (kserial_t)s;
		return 0;
	}
	if (s < 0 && errno == ENOKEY && !e)
		return -ENOKEY;
	if (s < 0 && e && kkey_learn(b, NULL, e->serial, &k) != -ENOKEY) {
		*out = e->serial;
		return 0;
	}
	return find_listed(b, c, keyring, type, desc, out);
}

/*
 * keyring_search()'s rule for every caller, the mounter included: the
 * keyring must be valid (EKEYREVOKED, EKEYEXPIRED as keyctl gives them)
 * and grant search, the mounter holding the possessor class as it does
 * for every key it reaches.  Read is no substitute: the kernel finds by
 * search alone.  keyfs then looks the name up in its listing.  For the
 * mounter, a description of the keyring made less than cache_timeout ago
 * serves (kkey_learn_recent), as the kernel's cache of the names already
 * found in it does: a first cat of each key in turn was five keyctl calls
 * with the keyring's describe, now four (issue 10).
 */
int kernel_find(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t keyring, const char *type, const char *desc,
		kserial_t *out)
{
	struct kkey *r;
	int ret;

	ret = kkey_learn_recent(b, c, keyring, &r);
	if (ret == -EACCES) {
		/* no view: the perm last seen still says who may search */
		r = kkey_get(b, keyring);
		ret = r && r->have_attr ? 0 : -EACCES;
	}
	if (ret < 0)
		return ret;
	if (!keyfs_is_keyring_type(r->type))
		return -ENOTDIR;
	ret = perm_check(c, r->uid, r->gid, r->perm, is_mounter(b, c),
			 KEYFS_PERM_SEARCH);
	if (ret < 0)
		return ret;
	r = kkey_get(b, keyring);
	if (r && r->idx && !r->idx->unknown &&
	    age_of(r->idx->built_ns) >= b->cache_timeout)
		return find_stale(b, c, keyring, r->idx, type, desc, out);
	return find_listed(b, c, keyring, type, desc, out);
}

/* ring's index as it is, listed only when there is none: a keyring's
 * link count may lag changes made behind keyfs's back until its next
 * listing. */
int kring_index_any(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t ring, struct kidx **xp)
{
	struct kkey *r = kkey_get(b, ring);

	if (r && r->idx) {
		*xp = r->idx;
		return 0;
	}
	return kring_index(b, c, ring, xp);
}

/* keyfs cleared ring: its keys lose this parent, its index is empty. */
void kring_note_cleared(struct keyfs_backend *b, kserial_t ring)
{
	struct kkey *r = kkey_get(b, ring);

	if (!r)
		return;
	kkey_touch_payload(r);
	if (!r->idx)
		return;
	for (size_t i = 0; i < r->idx->nents; i++)
		if (r->idx->ents[i].serial)
			kkey_parent_del(kkey_get(b, r->idx->ents[i].serial), ring);
	kidx_free(r->idx);
	r->idx = kidx_new(0);	/* empty and fresh; NULL: list anew */
}
