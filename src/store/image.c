/* image.c: checking a store image, JSON-free, for both load and save; freeing and comparing images. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "grow.h"
#include "store-int.h"

/* A kernel key's permission holds six bits in each of four classes. */
#define PERM_VALID_BITS		0x3f3f3f3fu

const char *const store_special_names[STORE_NSPECIALS] = {
	"session", "user", "user_session", "persistent"
};

kserial_t store_special_get(const struct store_image *img, size_t i)
{
	const kserial_t serials[STORE_NSPECIALS] = {
		img->session, img->user, img->user_session, img->persistent
	};

	return serials[i];
}

bool store_utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i - 1 < n)
			return false;
		for (size_t j = 1; j <= n; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

void store_key_free(struct store_key *k)
{
	if (k->payload) {
		explicit_bzero(k->payload, k->len);
		free(k->payload);
	}
	free(k->type);
	free(k->desc);
	free(k->links);
	free(k->restrict_type);
	free(k->restriction);
	memset(k, 0, sizeof(*k));
}

void store_image_free(struct store_image *img)
{
	if (!img)
		return;
	for (size_t i = 0; i < img->nkeys; i++)
		store_key_free(&img->keys[i]);
	free(img->keys);
	memset(img, 0, sizeof(*img));
}

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

bool store_key_same_but_links(const struct store_key *a,
			      const struct store_key *b)
{
	return a->serial == b->serial && str_same(a->type, b->type) &&
	       str_same(a->desc, b->desc) && a->uid == b->uid &&
	       a->gid == b->gid && a->perm == b->perm &&
	       a->state == b->state && a->expiry == b->expiry &&
	       a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec &&
	       a->len == b->len &&
	       (!a->len || memcmp(a->payload, b->payload, a->len) == 0) &&
	       str_same(a->restrict_type, b->restrict_type) &&
	       str_same(a->restriction, b->restriction) &&
	       a->restricted == b->restricted;
}

static bool key_same(const struct store_key *a, const struct store_key *b)
{
	return store_key_same_but_links(a, b) && a->nlinks == b->nlinks &&
	       (!a->nlinks ||
		memcmp(a->links, b->links, a->nlinks * sizeof(*a->links)) == 0);
}

/* The next key of img to be written, from *i on, or NULL. */
static const struct store_key *next_saved(const struct store_image *img,
					  size_t *i)
{
	while (*i < img->nkeys && img->keys[*i].unsaved)
		(*i)++;
	return *i < img->nkeys ? &img->keys[(*i)++] : NULL;
}

bool store_image_same_file(const struct store_image *a,
			   const struct store_image *b)
{
	size_t i = 0, j = 0;

	if (a->session != b->session || a->user != b->user ||
	    a->user_session != b->user_session ||
	    a->persistent != b->persistent)
		return false;
	for (;;) {
		const struct store_key *x = next_saved(a, &i);
		const struct store_key *y = next_saved(b, &j);

		if (!x || !y)
			return x == y;
		if (!key_same(x, y))
			return false;
	}
}

/* ---- checking an image: shared by load (with messages) and save ---- */

struct by_serial {
	kserial_t serial;
	size_t i;
};

static int cmp_by_serial(const void *a, const void *b)
{
	const struct by_serial *x = a, *y = b;

	return (x->serial > y->serial) - (x->serial < y->serial);
}

/* The index into img->keys of serial, or -1. */
static ssize_t find_key(const struct by_serial *idx, size_t n, kserial_t serial)
{
	struct by_serial want = { .serial = serial };
	const struct by_serial *hit;

	hit = bsearch(&want, idx, n, sizeof(*idx), cmp_by_serial);
	return hit ? (ssize_t)hit->i : -1;
}

static bool is_keyring(const struct store_key *k)
{
	return keyfs_is_keyring_type(k->type);
}

static int check_times(struct store_ctx *c, const char *name,
		       const struct timespec *ts)
{
	if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L)
		return store_fail(c, "\"%s\" is not a time since the epoch", name);
	return 0;
}

/* The checks on one key that need no other key. */
static int check_key(struct store_ctx *c, const struct store_key *k)
{
	size_t tlen;
	int ret;

	if (!k->type || !k->desc)
		return store_fail(c, "no type or description");
	tlen = strlen(k->type);
	if (tlen == 0 || tlen > KEYFS_TYPE_MAX || !store_utf8_valid(k->type, tlen))
		return store_fail(c, "type is not 1 to %d bytes of UTF-8",
				  KEYFS_TYPE_MAX);
	if (strlen(k->desc) > KEYFS_DESC_MAX)
		return store_fail(c, "description is longer than %d bytes",
				  KEYFS_DESC_MAX);
	if (k->uid == (uid_t)-1 || k->gid == (gid_t)-1)
		return store_fail(c, "uid or gid is -1");
	if (k->perm & ~PERM_VALID_BITS)
		return store_fail(c, "perm 0x%08x sets bits outside 0x%08x",
				  k->perm, PERM_VALID_BITS);
	if ((unsigned)k->state > KEY_STATE_INVALIDATED)
		return store_fail(c, "bad state %d", (int)k->state);
	if (k->state == KEY_STATE_PENDING)
		return store_fail(c, "state \"pending\" is never stored");
	if (k->expiry < 0)
		return store_fail(c, "\"expiry\" is negative");
	ret = check_times(c, "mtime", &k->mtime);
	if (ret == 0)
		ret = check_times(c, "ctime", &k->ctime);
	if (ret < 0)
		return ret;
	if (is_keyring(k)) {
		if (k->len)
			return store_fail(c, "a keyring has no payload");
		if (k->nlinks && !k->links)
			return store_fail(c, "links missing");
		if (k->restriction && !k->restrict_type)
			return store_fail(c, "a restriction without a type");
		if (k->restrict_type &&
		    !store_utf8_valid(k->restrict_type, strlen(k->restrict_type)))
			return store_fail(c, "restriction type is not UTF-8");
		if (k->restriction &&
		    !store_utf8_valid(k->restriction, strlen(k->restriction)))
			return store_fail(c, "restriction is not UTF-8");
		return 0;
	}
	if (k->nlinks)
		return store_fail(c, "only keyrings link keys");
	if (k->restrict_type || k->restriction || k->restricted)
		return store_fail(c, "only keyrings have restrictions");
	if (k->len > KEYFS_BIG_PAYLOAD_MAX)
		return store_fail(c, "payload of %zu bytes is over the limit of %d",
				  k->len, KEYFS_BIG_PAYLOAD_MAX);
	if (k->len && !k->payload)
		return store_fail(c, "payload missing");
	return 0;
}

static size_t hash_type_desc(const struct store_key *k)
{
	size_t h = 14695981039346656037ull;

	for (const char *p = k->type; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ 0xff) * 1099511628211ull;
	for (const char *p = k->desc; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

/* One keyring's links: to keys that exist, not itself, each (type,
 * description) once, as the kernel's keyrings hold them.  scratch holds
 * a hash table of cap (a power of two, at least twice k->nlinks) slots,
 * so a keyring of 100,000 keys is checked in linear time. */
static int check_links(struct store_ctx *c, const struct store_image *img,
		       const struct by_serial *idx, const struct store_key *k,
		       const struct store_key **scratch, size_t cap)
{
	memset(scratch, 0, cap * sizeof(*scratch));
	for (size_t j = 0; j < k->nlinks; j++) {
		ssize_t t = find_key(idx, img->nkeys, k->links[j]);
		const struct store_key *l, *a, *b;
		size_t h;

		if (t < 0) {
			c->where[0] = '\0';
			return store_fail(c, "key %d links %d which is not in the store",
					  (int)k->serial, (int)k->links[j]);
		}
		if (k->links[j] == k->serial)
			return store_fail(c, "the keyring links itself");
		l = &img->keys[t];
		for (h = hash_type_desc(l) & (cap - 1); scratch[h];
		     h = (h + 1) & (cap - 1)) {
			a = scratch[h]->serial < l->serial ? scratch[h] : l;
			b = a == l ? scratch[h] : l;
			if (a->serial == b->serial)
				return store_fail(c, "links key %d twice", (int)a->serial);
			if (strcmp(a->type, b->type) == 0 &&
			    strcmp(a->desc, b->desc) == 0)
				return store_fail(c, "links keys %d and %d, which share type and description",
						  (int)a->serial, (int)b->serial);
		}
		scratch[h] = l;
	}
	return 0;
}

/* Keyrings must form no cycle.  Depth-first, with an explicit stack so a
 * long chain in a hostile file cannot overflow the C stack. */
static int check_cycles(struct store_ctx *c, const struct store_image *img,
			const struct by_serial *idx)
{
	struct frame {
		size_t i, next;
	} *stack;
	unsigned char *colour;	/* 0 unseen, 1 on the stack, 2 done */
	int ret = 0;

	stack = calloc(img->nkeys ? img->nkeys : 1, sizeof(*stack));
	colour = calloc(img->nkeys ? img->nkeys : 1, 1);
	if (!stack || !colour) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t r = 0; r < img->nkeys && ret == 0; r++) {
		size_t top = 0;

		if (colour[r] || !is_keyring(&img->keys[r]))
			continue;
		stack[top++] = (struct frame){ r, 0 };
		colour[r] = 1;
		while (top && ret == 0) {
			struct frame *f = &stack[top - 1];
			const struct store_key *k = &img->keys[f->i];
			ssize_t t;

			if (f->next == k->nlinks) {
				colour[f->i] = 2;
				top--;
				continue;
			}
			t = find_key(idx, img->nkeys, k->links[f->next++]);
			if (t < 0 || colour[t] == 2 ||
			    !is_keyring(&img->keys[t]))
				continue;
			if (colour[t] == 1) {
				c->where[0] = '\0';
				ret = store_fail(c, "keyring %d links keyring %d, which links back to it",
						 (int)k->serial, (int)img->keys[t].serial);
				break;
			}
			colour[t] = 1;
			stack[top++] = (struct frame){ (size_t)t, 0 };
		}
	}
out:
	free(colour);
	free(stack);
	return ret;
}

static int check_special(struct store_ctx *c, const struct store_image *img,
			 const struct by_serial *idx, const char *name,
			 kserial_t serial)
{
	ssize_t t;

	if (serial == 0)
		return 0;
	t = find_key(idx, img->nkeys, serial);
	if (t < 0)
		return store_fail(c, "\"%s\" is key %d which is not in the store",
				  name, (int)serial);
	if (!is_keyring(&img->keys[t]))
		return store_fail(c, "\"%s\" is key %d which is not a keyring",
				  name, (int)serial);
	return 0;
}

/* Each key on its own, and its serial: positive, below next_serial, once.
 * idx gets every key's serial, sorted; *maxlinks the longest keyring's
 * link count. */
static int check_serials(struct store_ctx *c, const struct store_image *img,
			 struct by_serial *idx, size_t *maxlinks)
{
	struct store_ctx quiet = *c;

	/* Said only for a key that fails (formatting "key N: " for each of
	 * 100,000 keys costs more than checking them). */
	quiet.err = NULL;
	for (size_t i = 0; i < img->nkeys; i++) {
		const struct store_key *k = &img->keys[i];
		int ret;

		if (k->serial > 0 && k->serial < img->next_serial &&
		    check_key(&quiet, k) == 0)
			goto good;
		store_where_key(c, k->serial);
		if (k->serial <= 0)
			return store_fail(c, "serial is not positive");
		if (k->serial >= img->next_serial) {
			c->where[0] = '\0';
			return store_fail(c, "\"next_serial\" %d is not greater than serial %d",
					  (int)img->next_serial, (int)k->serial);
		}
		ret = check_key(c, k);
		if (ret < 0)
			return ret;
good:
		idx[i] = (struct by_serial){ k->serial, i };
		if (is_keyring(k) && k->nlinks > *maxlinks)
			*maxlinks = k->nlinks;
	}
	qsort(idx, img->nkeys, sizeof(*idx), cmp_by_serial);
	c->where[0] = '\0';
	for (size_t i = 1; i < img->nkeys; i++)
		if (idx[i].serial == idx[i - 1].serial)
			return store_fail(c, "two keys have serial %d",
					  (int)idx[i].serial);
	return 0;
}

/* The links of every keyring, then the special keyrings. */
static int check_graph(struct store_ctx *c, const struct store_image *img,
		       const struct by_serial *idx, size_t maxlinks)
{
	const struct store_key **scratch;
	int ret = 0;

	scratch = calloc(grow_pow2(2 * maxlinks, 2), sizeof(*scratch));
	if (!scratch)
		return -ENOMEM;
	for (size_t i = 0; i < img->nkeys && ret == 0; i++) {
		const struct store_key *k = &img->keys[i];

		if (!is_keyring(k))
			continue;
		store_where_key(c, k->serial);
		/* Each keyring clears a table of its own size, not the
		 * largest keyring's: a session of 20,000 keyrings, each
		 * linking a key, cleared 512 KB for each of them. */
		ret = check_links(c, img, idx, k, scratch,
				  k->nlinks ? grow_pow2(2 * k->nlinks, 2) : 0);
	}
	free(scratch);
	c->where[0] = '\0';
	for (size_t s = 0; s < STORE_NSPECIALS && ret == 0; s++)
		ret = check_special(c, img, idx, store_special_names[s],
				    store_special_get(img, s));
	return ret;
}

int store_image_check(struct store_ctx *c, const struct store_image *img)
{
	struct by_serial *idx;
	size_t maxlinks = 0;
	int ret;

	c->where[0] = '\0';
	if (img->next_serial < 0)
		return store_fail(c, "\"next_serial\" is negative");
	if (img->nkeys && !img->keys)
		return store_fail(c, "keys missing");
	idx = calloc(img->nkeys ? img->nkeys : 1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	ret = check_serials(c, img, idx, &maxlinks);
	if (ret == 0)
		ret = check_graph(c, img, idx, maxlinks);
	if (ret == 0)
		ret = check_cycles(c, img, idx);
	free(idx);
	return ret;
}
