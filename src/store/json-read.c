/* store-json.c: the memory backend's keys kept in a JSON file (the only user of jansson). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base64.h"
#include "parse.h"
#include "store.h"

/* A kernel key's permission holds six bits in each of four classes. */
#define PERM_VALID_BITS		0x3f3f3f3fu
/* (uid_t)-1 means "no id" to the kernel, so no key has it. */
#define ID_MAX			((json_int_t)UINT32_MAX - 1)
#define JSON_FLAGS_OUT		(JSON_INDENT(2) | JSON_PRESERVE_ORDER)

static const char *const top_fields[] = {
	"format", "next_serial", "session", "user", "user_session",
	"persistent", "keys", NULL
};

static const char *const key_fields[] = {
	"serial", "type", "description", "uid", "gid", "perm", "state",
	"expiry", "mtime", "ctime", "payload", "links", "restrict", NULL
};

static const char *const restrict_fields[] = { "type", "restriction", NULL };

/*
 * jansson copies every string it parses or is given, and its lexer grows a
 * token buffer as it reads; freed with plain free(), those copies would
 * leave the base64 of payloads in the heap.  So jansson allocates through
 * these, which keep each block's size in a header (aligned as malloc
 * aligns) and wipe the block on free.  The functions are process-wide in
 * jansson; that is sound because this file is keyfs's only jansson user
 * and installs them, once, before its first jansson call.
 */
#define WIPE_HDR	_Alignof(max_align_t)
_Static_assert(WIPE_HDR >= sizeof(size_t), "header holds a size_t");

static void *wipe_malloc(size_t n)
{
	unsigned char *p;

	if (n > SIZE_MAX - WIPE_HDR)
		return NULL;
	p = malloc(WIPE_HDR + n);
	if (!p)
		return NULL;
	memcpy(p, &n, sizeof(n));
	return p + WIPE_HDR;
}

static void wipe_free(void *ptr)
{
	unsigned char *p;
	size_t n;

	if (!ptr)
		return;
	p = (unsigned char *)ptr - WIPE_HDR;
	memcpy(&n, p, sizeof(n));
	explicit_bzero(ptr, n);
	free(p);
}

static pthread_once_t alloc_once = PTHREAD_ONCE_INIT;

static void set_alloc_funcs(void)
{
	json_set_alloc_funcs(wipe_malloc, wipe_free);
}

/* A growable byte buffer for the file's text; it holds payloads in base64,
 * so every block it lets go of is wiped first. */
struct buf {
	char *p;
	size_t len, cap;
};

static void buf_free(struct buf *b)
{
	if (b->p) {
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	memset(b, 0, sizeof(*b));
}

static int buf_reserve(struct buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (more <= b->cap - b->len)
		return 0;
	while (cap - b->len < more) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	p = malloc(cap);
	if (!p)
		return -ENOMEM;
	if (b->len)
		memcpy(p, b->p, b->len);
	if (b->p) {
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

static int buf_append(struct buf *b, const char *s, size_t n)
{
	int ret = buf_reserve(b, n);

	if (ret < 0)
		return ret;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

/* Where an error is, for the one line that reports it. */
struct ctx {
	const char *path;
	char *err;		/* may be NULL: save checks without reporting */
	size_t errlen;
	char where[48];		/* "key 12: ", "keys[3]: " or "" */
};

static void where_key(struct ctx *c, kserial_t serial)
{
	snprintf(c->where, sizeof(c->where), "key %d: ", (int)serial);
}

static void where_index(struct ctx *c, size_t i)
{
	snprintf(c->where, sizeof(c->where), "keys[%zu]: ", i);
}

__attribute__((format(printf, 2, 0)))
static void vreport(struct ctx *c, const char *fmt, va_list ap)
{
	int n;

	if (!c->err || c->errlen == 0)
		return;
	n = snprintf(c->err, c->errlen, "keyfs: %s: %s", c->path, c->where);
	if (n >= 0 && (size_t)n < c->errlen)
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
}

/* Report a content error and return -EINVAL. */
__attribute__((format(printf, 2, 3)))
static int fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(c, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Report err (a -errno) with what was being done, and return it. */
static int fail_errno(struct ctx *c, const char *what, int err)
{
	c->where[0] = '\0';
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "keyfs: %s: %s: %s", c->path, what,
			 strerror(-err));
	return err;
}

/* Text from the file, made safe for a one-line message: at most 32
 * characters, anything unprintable written '?'. */
static const char *shown(const char *s, char *out, size_t outlen)
{
	size_t i = 0;

	for (; s[i] && i + 1 < outlen && i < 32; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
	return out;
}

/* Strict UTF-8, as JSON strings must be: no overlong forms, no surrogates,
 * nothing past U+10FFFF. */
static bool utf8_valid(const char *str, size_t len)
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

static void key_free(struct store_key *k)
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
		key_free(&img->keys[i]);
	free(img->keys);
	memset(img, 0, sizeof(*img));
}

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool key_same(const struct store_key *a, const struct store_key *b)
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
	       a->nlinks == b->nlinks &&
	       (!a->nlinks ||
		memcmp(a->links, b->links, a->nlinks * sizeof(*a->links)) == 0) &&
	       str_same(a->restrict_type, b->restrict_type) &&
	       str_same(a->restriction, b->restriction) &&
	       a->restricted == b->restricted;
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

static int cmp_type_desc(const void *a, const void *b)
{
	const struct store_key *x = *(const struct store_key *const *)a;
	const struct store_key *y = *(const struct store_key *const *)b;
	int d = strcmp(x->type, y->type);

	if (d == 0)
		d = strcmp(x->desc, y->desc);
	if (d == 0)
		d = (x->serial > y->serial) - (x->serial < y->serial);
	return d;
}

static bool is_keyring(const struct store_key *k)
{
	return keyfs_is_keyring_type(k->type);
}

static int check_times(struct ctx *c, const char *name,
		       const struct timespec *ts)
{
	if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L)
		return fail(c, "\"%s\" is not a time since the epoch", name);
	return 0;
}

/* The checks on one key that need no other key. */
static int check_key(struct ctx *c, const struct store_key *k)
{
	size_t tlen;
	int ret;

	if (!k->type || !k->desc)
		return fail(c, "no type or description");
	tlen = strlen(k->type);
	if (tlen == 0 || tlen > KEYFS_TYPE_MAX || !utf8_valid(k->type, tlen))
		return fail(c, "type is not 1 to %d bytes of UTF-8",
			    KEYFS_TYPE_MAX);
	if (strlen(k->desc) > KEYFS_DESC_MAX)
		return fail(c, "description is longer than %d bytes",
			    KEYFS_DESC_MAX);
	if (k->uid == (uid_t)-1 || k->gid == (gid_t)-1)
		return fail(c, "uid or gid is -1");
	if (k->perm & ~PERM_VALID_BITS)
		return fail(c, "perm 0x%08x sets bits outside 0x%08x",
			    k->perm, PERM_VALID_BITS);
	if ((unsigned)k->state > KEY_STATE_INVALIDATED)
		return fail(c, "bad state %d", (int)k->state);
	if (k->state == KEY_STATE_PENDING)
		return fail(c, "state \"pending\" is never stored");
	if (k->expiry < 0)
		return fail(c, "\"expiry\" is negative");
	ret = check_times(c, "mtime", &k->mtime);
	if (ret == 0)
		ret = check_times(c, "ctime", &k->ctime);
	if (ret < 0)
		return ret;
	if (is_keyring(k)) {
		if (k->len)
			return fail(c, "a keyring has no payload");
		if (k->nlinks && !k->links)
			return fail(c, "links missing");
		if (k->restriction && !k->restrict_type)
			return fail(c, "a restriction without a type");
		if (k->restrict_type &&
		    !utf8_valid(k->restrict_type, strlen(k->restrict_type)))
			return fail(c, "restriction type is not UTF-8");
		if (k->restriction &&
		    !utf8_valid(k->restriction, strlen(k->restriction)))
			return fail(c, "restriction is not UTF-8");
		return 0;
	}
	if (k->nlinks)
		return fail(c, "only keyrings link keys");
	if (k->restrict_type || k->restriction || k->restricted)
		return fail(c, "only keyrings have restrictions");
	if (k->len > KEYFS_BIG_PAYLOAD_MAX)
		return fail(c, "payload of %zu bytes is over the limit of %d",
			    k->len, KEYFS_BIG_PAYLOAD_MAX);
	if (k->len && !k->payload)
		return fail(c, "payload missing");
	return 0;
}

/* One keyring's links: to keys that exist, not itself, each (type,
 * description) once, as the kernel's keyrings hold them.  scratch holds
 * k->nlinks pointers. */
static int check_links(struct ctx *c, const struct store_image *img,
		       const struct by_serial *idx, const struct store_key *k,
		       const struct store_key **scratch)
{
	for (size_t j = 0; j < k->nlinks; j++) {
		ssize_t t = find_key(idx, img->nkeys, k->links[j]);

		if (t < 0) {
			c->where[0] = '\0';
			return fail(c, "key %d links %d which is not in the store",
				    (int)k->serial, (int)k->links[j]);
		}
		if (k->links[j] == k->serial)
			return fail(c, "the keyring links itself");
		scratch[j] = &img->keys[t];
	}
	qsort(scratch, k->nlinks, sizeof(*scratch), cmp_type_desc);
	for (size_t j = 1; j < k->nlinks; j++) {
		const struct store_key *a = scratch[j - 1], *b = scratch[j];

		if (a->serial == b->serial)
			return fail(c, "links key %d twice", (int)a->serial);
		if (strcmp(a->type, b->type) == 0 &&
		    strcmp(a->desc, b->desc) == 0)
			return fail(c, "links keys %d and %d, which share type and description",
				    (int)a->serial, (int)b->serial);
	}
	return 0;
}

/* Keyrings must form no cycle.  Depth-first, with an explicit stack so a
 * long chain in a hostile file cannot overflow the C stack. */
static int check_cycles(struct ctx *c, const struct store_image *img,
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
				ret = fail(c, "keyring %d links keyring %d, which links back to it",
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

static int check_special(struct ctx *c, const struct store_image *img,
			 const struct by_serial *idx, const char *name,
			 kserial_t serial)
{
	ssize_t t;

	if (serial == 0)
		return 0;
	t = find_key(idx, img->nkeys, serial);
	if (t < 0)
		return fail(c, "\"%s\" is key %d which is not in the store",
			    name, (int)serial);
	if (!is_keyring(&img->keys[t]))
		return fail(c, "\"%s\" is key %d which is not a keyring",
			    name, (int)serial);
	return 0;
}

/* Everything load promises about an image; save refuses to write an
 * image load would refuse to read. */
static int image_check(struct ctx *c, const struct store_image *img)
{
	const struct store_key **scratch = NULL;
	struct by_serial *idx;
	size_t maxlinks = 0;
	int ret = 0;

	c->where[0] = '\0';
	if (img->next_serial < 0)
		return fail(c, "\"next_serial\" is negative");
	if (img->nkeys && !img->keys)
		return fail(c, "keys missing");
	idx = calloc(img->nkeys ? img->nkeys : 1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < img->nkeys; i++) {
		const struct store_key *k = &img->keys[i];

		where_key(c, k->serial);
		if (k->serial <= 0) {
			ret = fail(c, "serial is not positive");
			goto out;
		}
		if (k->serial >= img->next_serial) {
			c->where[0] = '\0';
			ret = fail(c, "\"next_serial\" %d is not greater than serial %d",
				   (int)img->next_serial, (int)k->serial);
			goto out;
		}
		ret = check_key(c, k);
		if (ret < 0)
			goto out;
		idx[i] = (struct by_serial){ k->serial, i };
		if (is_keyring(k) && k->nlinks > maxlinks)
			maxlinks = k->nlinks;
	}
	qsort(idx, img->nkeys, sizeof(*idx), cmp_by_serial);
	c->where[0] = '\0';
	for (size_t i = 1; i < img->nkeys; i++)
		if (idx[i].serial == idx[i - 1].serial) {
			ret = fail(c, "two keys have serial %d", (int)idx[i].serial);
			goto out;
		}
	scratch = calloc(maxlinks ? maxlinks : 1, sizeof(*scratch));
	if (!scratch) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < img->nkeys && ret == 0; i++) {
		const struct store_key *k = &img->keys[i];

		where_key(c, k->serial);
		if (is_keyring(k))
			ret = check_links(c, img, idx, k, scratch);
	}
	c->where[0] = '\0';
	if (ret == 0)
		ret = check_special(c, img, idx, "session", img->session);
	if (ret == 0)
		ret = check_special(c, img, idx, "user", img->user);
	if (ret == 0)
		ret = check_special(c, img, idx, "user_session", img->user_session);
	if (ret == 0)
		ret = check_special(c, img, idx, "persistent", img->persistent);
	if (ret == 0)
		ret = check_cycles(c, img, idx);
out:
	free(scratch);
	free(idx);
	return ret;
}

/* ---- JSON -> image ---- */

static bool in_list(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(name, *list) == 0)
			return true;
	return false;
}

static int check_fields(struct ctx *c, json_t *obj, const char *const *names)
{
	const char *name;
	json_t *v;
	char tmp[40];

	json_object_foreach(obj, name, v) {
		if (!in_list(name, names))
			return fail(c, "unknown field \"%s\"",
				    shown(name, tmp, sizeof(tmp)));
	}
	return 0;
}

/* An integer field in [min, max]; an absent one leaves *out as it is, or
 * is an error where required. */
static int get_int(struct ctx *c, json_t *obj, const char *name,
		   bool required, json_int_t min, json_int_t max,
		   json_int_t *out)
{
	json_t *v = json_object_get(obj, name);
	json_int_t n;

	if (!v)
		return required ? fail(c, "no \"%s\" field", name) : 0;
	if (!json_is_integer(v))
		return fail(c, "\"%s\" is not an integer", name);
	n = json_integer_value(v);
	if (n < min || n > max)
		return fail(c, "\"%s\" is out of range: %" JSON_INTEGER_FORMAT,
			    name, n);
	*out = n;
	return 0;
}

/* A string field; *s stays NULL when an optional one is absent. */
static int get_str(struct ctx *c, json_t *obj, const char *name,
		   bool required, const char **s, size_t *len)
{
	json_t *v = json_object_get(obj, name);

	*s = NULL;
	*len = 0;
	if (!v)
		return required ? fail(c, "no \"%s\" field", name) : 0;
	if (!json_is_string(v))
		return fail(c, "\"%s\" is not a string", name);
	*s = json_string_value(v);
	*len = json_string_length(v);
	return 0;
}

static int dup_str(const char *s, size_t len, char **out)
{
	char *p = malloc(len + 1);

	if (!p)
		return -ENOMEM;
	memcpy(p, s, len);
	p[len] = '\0';
	*out = p;
	return 0;
}

static int get_dup(struct ctx *c, json_t *obj, const char *name,
		   bool required, char **out)
{
	const char *s;
	size_t len;
	int ret = get_str(c, obj, name, required, &s, &len);

	if (ret < 0 || !s)
		return ret;
	return dup_str(s, len, out);
}

/* Decode base64 text into a fresh buffer of at most max bytes. */
static int decode_alloc(const char *s, size_t slen, size_t max,
			unsigned char **out, size_t *len)
{
	unsigned char *p;
	int ret;

	*out = NULL;
	*len = 0;
	if (slen > base64_encoded_len(max))
		return -EFBIG;
	if (slen == 0)
		return 0;
	p = malloc(base64_decoded_max(slen));
	if (!p)
		return -ENOMEM;
	ret = base64_decode(s, slen, p, len);
	if (ret < 0 || *len > max) {
		explicit_bzero(p, base64_decoded_max(slen));
		free(p);
		*len = 0;
		return ret < 0 ? ret : -EFBIG;
	}
	*out = p;
	return 0;
}

/* "description" is a string, or {"base64": "..."} for one that is not
 * UTF-8. */
static int get_desc(struct ctx *c, json_t *o, struct store_key *k)
{
	json_t *v = json_object_get(o, "description"), *b;
	unsigned char *raw;
	size_t len;
	int ret;

	if (!v)
		return fail(c, "no \"description\" field");
	if (json_is_string(v))
		return dup_str(json_string_value(v), json_string_length(v),
			       &k->desc);
	if (!json_is_object(v) || json_object_size(v) != 1 ||
	    !(b = json_object_get(v, "base64")) || !json_is_string(b))
		return fail(c, "\"description\" is not a string or {\"base64\": STRING}");
	ret = decode_alloc(json_string_value(b), json_string_length(b),
			   KEYFS_DESC_MAX, &raw, &len);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0 || memchr(raw, '\0', len)) {
		free(raw);
		return fail(c, "bad base64 description");
	}
	ret = dup_str((const char *)raw, len, &k->desc);
	free(raw);
	return ret;
}

/* "0x3f010000": 0x and one to eight hex digits. */
static int parse_perm(const char *s, uint32_t *perm)
{
	uint32_t v = 0;
	size_t n = 0;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return -EINVAL;
	for (s += 2; *s; s++, n++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return -EINVAL;
		if (n == 8)
			return -EINVAL;
		v = v << 4 | (uint32_t)d;
	}
	if (n == 0)
		return -EINVAL;
	*perm = v;
	return 0;
}

/* "SECONDS" or "SECONDS.FRACTION", up to nine fraction digits. */
static int parse_time(const char *s, struct timespec *ts)
{
	long long sec = 0;
	long nsec = 0;
	int digits = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (sec > (LLONG_MAX - 9) / 10)
			return -EINVAL;
		sec = sec * 10 + (*s - '0');
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
			if (digits == 9)
				return -EINVAL;
			nsec = nsec * 10 + (*s - '0');
		}
		if (digits == 0)
			return -EINVAL;
		for (; digits < 9; digits++)
			nsec *= 10;
	}
	if (*s || (time_t)sec != sec)
		return -EINVAL;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = nsec;
	return 0;
}

static int get_time(struct ctx *c, json_t *o, const char *name,
		    struct timespec *ts)
{
	const char *s;
	size_t len;
	int ret = get_str(c, o, name, false, &s, &len);

	if (ret < 0 || !s)
		return ret;
	if (parse_time(s, ts) < 0)
		return fail(c, "\"%s\" is not \"SECONDS.NANOSECONDS\"", name);
	return 0;
}

static int get_state(struct ctx *c, json_t *o, enum key_state *state)
{
	const char *s;
	size_t len;
	char tmp[40];
	int ret = get_str(c, o, "state", true, &s, &len);

	if (ret < 0)
		return ret;
	if (key_state_parse(s, state) < 0)
		return fail(c, "bad state \"%s\"", shown(s, tmp, sizeof(tmp)));
	if (*state == KEY_STATE_PENDING)
		return fail(c, "state \"pending\" is never stored");
	return 0;
}

static int get_links(struct ctx *c, json_t *o, struct store_key *k)
{
	json_t *v = json_object_get(o, "links"), *e;
	size_t i;

	if (!v)
		return 0;
	if (!json_is_array(v))
		return fail(c, "\"links\" is not an array");
	if (json_array_size(v) == 0)
		return 0;
	k->links = calloc(json_array_size(v), sizeof(*k->links));
	if (!k->links)
		return -ENOMEM;
	json_array_foreach(v, i, e) {
		if (!json_is_integer(e) || json_integer_value(e) <= 0 ||
		    json_integer_value(e) > INT32_MAX)
			return fail(c, "\"links\" holds something not a serial");
		k->links[i] = (kserial_t)json_integer_value(e);
		k->nlinks = i + 1;
	}
	return 0;
}

static int get_restrict(struct ctx *c, json_t *o, struct store_key *k)
{
	json_t *v = json_object_get(o, "restrict");
	int ret;

	if (!v)
		return 0;
	if (!json_is_object(v))
		return fail(c, "\"restrict\" is not an object");
	ret = check_fields(c, v, restrict_fields);
	if (ret == 0)
		ret = get_dup(c, v, "type", false, &k->restrict_type);
	if (ret == 0)
		ret = get_dup(c, v, "restriction", false, &k->restriction);
	if (ret == 0 && k->restriction && !k->restrict_type)
		ret = fail(c, "\"restrict\" has a restriction but no type");
	k->restricted = !k->restrict_type;
	return ret;
}

static int get_payload(struct ctx *c, json_t *o, struct store_key *k)
{
	const char *s;
	size_t len;
	int ret = get_str(c, o, "payload", false, &s, &len);

	if (ret < 0 || !s)
		return ret;
	ret = decode_alloc(s, len, KEYFS_BIG_PAYLOAD_MAX, &k->payload, &k->len);
	if (ret == -EFBIG)
		return fail(c, "payload is over the limit of %d bytes",
			    KEYFS_BIG_PAYLOAD_MAX);
	if (ret == -EINVAL)
		return fail(c, "bad base64 payload");
	return ret;
}

static int key_from_json(struct ctx *c, json_t *o, size_t i,
			 struct store_key *k)
{
	json_int_t n = 0;
	const char *perm;
	size_t len;
	int ret;

	where_index(c, i);
	if (!json_is_object(o))
		return fail(c, "not a JSON object");
	ret = get_int(c, o, "serial", true, 1, INT32_MAX, &n);
	if (ret < 0)
		return ret;
	k->serial = (kserial_t)n;
	where_key(c, k->serial);
	ret = check_fields(c, o, key_fields);
	if (ret == 0)
		ret = get_dup(c, o, "type", true, &k->type);
	if (ret == 0)
		ret = get_desc(c, o, k);
	if (ret == 0)
		ret = get_int(c, o, "uid", true, 0, ID_MAX, &n);
	k->uid = (uid_t)n;
	if (ret == 0)
		ret = get_int(c, o, "gid", true, 0, ID_MAX, &n);
	k->gid = (gid_t)n;
	if (ret == 0)
		ret = get_str(c, o, "perm", true, &perm, &len);
	if (ret == 0 && parse_perm(perm, &k->perm) < 0)
		ret = fail(c, "\"perm\" is not a hex string like \"0x3f010000\"");
	if (ret == 0)
		ret = get_state(c, o, &k->state);
	n = 0;
	if (ret == 0)
		ret = get_int(c, o, "expiry", false, 0, INT64_MAX, &n);
	k->expiry = n;
	if (ret == 0)
		ret = get_time(c, o, "mtime", &k->mtime);
	if (ret == 0)
		ret = get_time(c, o, "ctime", &k->ctime);
	if (ret < 0)
		return ret;
	if (is_keyring(k)) {
		if (json_object_get(o, "payload"))
			return fail(c, "a keyring has no payload");
		ret = get_links(c, o, k);
		if (ret == 0)
			ret = get_restrict(c, o, k);
		return ret;
	}
	if (json_object_get(o, "links"))
		return fail(c, "only keyrings link keys");
	if (json_object_get(o, "restrict"))
		return fail(c, "only keyrings have restrictions");
	return get_payload(c, o, k);
}

static int image_from_json(struct ctx *c, json_t *root, struct store_image *img)
{
	json_int_t n = 0;
	json_t *keys, *o;
	size_t i;
	int ret;

	if (!json_is_object(root))
		return fail(c, "not a keyfs store: not a JSON object");
	if (!json_object_get(root, "format"))
		return fail(c, "not a keyfs store: no \"format\" field");
	if (!json_is_integer(json_object_get(root, "format")))
		return fail(c, "\"format\" is not an integer");
	n = json_integer_value(json_object_get(root, "format"));
	if (n != STORE_FORMAT_VERSION)
		return fail(c, "unknown format version %" JSON_INTEGER_FORMAT, n);
	ret = check_fields(c, root, top_fields);
	if (ret == 0)
		ret = get_int(c, root, "next_serial", true, 0, INT32_MAX, &n);
	img->next_serial = (kserial_t)n;
	n = 0;
	if (ret == 0)
		ret = get_int(c, root, "session", false, 0, INT32_MAX, &n);
	img->session = (kserial_t)n;
	n = 0;
	if (ret == 0)
		ret = get_int(c, root, "user", false, 0, INT32_MAX, &n);
	img->user = (kserial_t)n;
	n = 0;
	if (ret == 0)
		ret = get_int(c, root, "user_session", false, 0, INT32_MAX, &n);
	img->user_session = (kserial_t)n;
	n = 0;
	if (ret == 0)
		ret = get_int(c, root, "persistent", false, 0, INT32_MAX, &n);
	img->persistent = (kserial_t)n;
	if (ret < 0)
		return ret;
	keys = json_object_get(root, "keys");
	if (!keys)
		return fail(c, "no \"keys\" field");
	if (!json_is_array(keys))
		return fail(c, "\"keys\" is not an array");
	if (json_array_size(keys) == 0)
		return 0;
	img->keys = calloc(json_array_size(keys), sizeof(*img->keys));
	if (!img->keys)
		return -ENOMEM;
	json_array_foreach(keys, i, o) {
		img->nkeys = i + 1;
		ret = key_from_json(c, o, i, &img->keys[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Read the whole file; a missing file is -ENOENT without a message. */
static int read_file(struct ctx *c, struct buf *b)
{
	struct stat st;
	int fd, ret = 0;

	/* O_NONBLOCK so that a FIFO named as the store cannot hang the mount;
	 * it changes nothing for a regular file. */
	fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT :
			fail_errno(c, "cannot read", -errno);
	if (fstat(fd, &st) < 0) {
		ret = fail_errno(c, "cannot read", -errno);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = fail_errno(c, "cannot read", -EISDIR);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = fail(c, "not a regular file");
		goto out;
	}
	ret = buf_reserve(b, (size_t)st.st_size + 1);
	while (ret == 0) {
		ssize_t n;

		ret = buf_reserve(b, 65536);
		if (ret < 0)
			break;
		n = read(fd, b->p + b->len, b->cap - b->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ret = fail_errno(c, "cannot read", -errno);
		if (n <= 0)
			break;
		b->len += (size_t)n;
	}
	if (ret == -ENOMEM)
		fail_errno(c, "cannot read", ret);
out:
	close(fd);
	return ret;
}

/* jansson's message, without the "near '...'" it may add: that quotes the
 * text at the error, which may be part of a payload. */
static int json_fail(struct ctx *c, const json_error_t *jerr)
{
	char text[JSON_ERROR_TEXT_LENGTH];
	char *near;

#if JANSSON_VERSION_HEX >= 0x020b00
	if (json_error_code(jerr) == json_error_out_of_memory)
		return fail_errno(c, "cannot parse", -ENOMEM);
#endif
	snprintf(text, sizeof(text), "%s", jerr->text);
	near = strstr(text, " near ");
	if (near)
		*near = '\0';
	c->where[0] = '\0';
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "keyfs: %s:%d:%d: JSON error: %s",
			 c->path, jerr->line, jerr->column, text);
	return -EINVAL;
}

int store_json_load(const char *path, struct store_image *img,
		    char *err, size_t errlen)
{
	struct ctx c = { .path = path, .err = err, .errlen = errlen };
	struct store_image tmp = { 0 };
	struct buf b = { 0 };
	json_t *root = NULL;
	json_error_t jerr;
	int ret;

	memset(img, 0, sizeof(*img));
	if (err && errlen)
		err[0] = '\0';
	pthread_once(&alloc_once, set_alloc_funcs);
	ret = read_file(&c, &b);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		goto out;
	root = json_loadb(b.p, b.len, JSON_REJECT_DUPLICATES, &jerr);
	buf_free(&b);
	if (!root) {
		ret = json_fail(&c, &jerr);
		goto out;
	}
	ret = image_from_json(&c, root, &tmp);
	if (ret == 0)
		ret = image_check(&c, &tmp);
	if (ret == -ENOMEM)
		fail_errno(&c, "cannot load", ret);
	if (ret == 0) {
		*img = tmp;
		memset(&tmp, 0, sizeof(tmp));
	}
out:
	json_decref(root);
	store_image_free(&tmp);
	buf_free(&b);
	return ret;
}

/* ---- image -> JSON ---- */

/* Put v into obj as name; v is consumed.  A failure (v NULL included)
 * is out of memory, as the image was checked before. */
static void put(json_t *obj, const char *name, json_t *v, int *ret)
{
	if (json_object_set_new(obj, name, v) < 0)
		*ret = -ENOMEM;
}

static json_t *base64_json(const void *p, size_t len)
{
	size_t n = base64_encoded_len(len);
	char *s = malloc(n + 1);
	json_t *v;

	if (!s)
		return NULL;
	base64_encode(p, len, s);
	v = json_stringn_nocheck(s, n);
	explicit_bzero(s, n + 1);
	free(s);
	return v;
}

static json_t *time_json(const struct timespec *ts)
{
	char s[48];

	snprintf(s, sizeof(s), "%lld.%09ld", (long long)ts->tv_sec,
		 (long)ts->tv_nsec);
	return json_string(s);
}

static json_t *desc_json(const char *desc)
{
	size_t len = strlen(desc);
	json_t *v;

	if (utf8_valid(desc, len))
		return json_stringn(desc, len);
	v = json_object();
	if (v && json_object_set_new(v, "base64", base64_json(desc, len)) < 0) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

static json_t *keyring_parts(json_t *o, const struct store_key *k, int *ret)
{
	json_t *links = json_array(), *r;

	for (size_t i = 0; links && i < k->nlinks; i++)
		if (json_array_append_new(links, json_integer(k->links[i])) < 0)
			*ret = -ENOMEM;
	put(o, "links", links, ret);
	if (!k->restrict_type && !k->restricted)
		return o;
	r = json_object();
	if (r && k->restrict_type)
		put(r, "type", json_string(k->restrict_type), ret);
	if (r && k->restriction)
		put(r, "restriction", json_string(k->restriction), ret);
	put(o, "restrict", r, ret);
	return o;
}

static json_t *key_json(const struct store_key *k)
{
	json_t *o = json_object();
	char perm[16];
	int ret = 0;

	if (!o)
		return NULL;
	snprintf(perm, sizeof(perm), "0x%08x", k->perm);
	put(o, "serial", json_integer(k->serial), &ret);
	put(o, "type", json_string(k->type), &ret);
	put(o, "description", desc_json(k->desc), &ret);
	put(o, "uid", json_integer(k->uid), &ret);
	put(o, "gid", json_integer(k->gid), &ret);
	put(o, "perm", json_string(perm), &ret);
	put(o, "state", json_string(key_state_name(k->state)), &ret);
	put(o, "expiry", json_integer(k->expiry), &ret);
	put(o, "mtime", time_json(&k->mtime), &ret);
	put(o, "ctime", time_json(&k->ctime), &ret);
	if (is_keyring(k))
		keyring_parts(o, k, &ret);
	else
		put(o, "payload", base64_json(k->payload, k->len), &ret);
	if (ret < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int cmp_key_serial(const void *a, const void *b)
{
	const struct store_key *x = *(const struct store_key *const *)a;
	const struct store_key *y = *(const struct store_key *const *)b;

	return (x->serial > y->serial) - (x->serial < y->serial);
}

/* The file's JSON, keys in serial order so that the file diffs well. */
static int image_to_json(const struct store_image *img, json_t **out)
{
	const struct store_key **order;
	json_t *root = json_object(), *keys = json_array();
	size_t n = 0;
	int ret = 0;

	order = calloc(img->nkeys ? img->nkeys : 1, sizeof(*order));
	if (!order || !root || !keys) {
		json_decref(keys);
		ret = -ENOMEM;
		goto out;
	}
	/* Keys in memory only are left out; no saved keyring links them
	 * (they are reachable only through the process keyring). */
	for (size_t i = 0; i < img->nkeys; i++)
		if (!img->keys[i].unsaved)
			order[n++] = &img->keys[i];
	qsort(order, n, sizeof(*order), cmp_key_serial);
	for (size_t i = 0; i < n && ret == 0; i++)
		if (json_array_append_new(keys, key_json(order[i])) < 0)
			ret = -ENOMEM;
	put(root, "format", json_integer(STORE_FORMAT_VERSION), &ret);
	put(root, "next_serial", json_integer(img->next_serial), &ret);
	put(root, "session", json_integer(img->session), &ret);
	put(root, "user", json_integer(img->user), &ret);
	put(root, "user_session", json_integer(img->user_session), &ret);
	put(root, "persistent", json_integer(img->persistent), &ret);
	put(root, "keys", keys, &ret);
out:
	free(order);
	if (ret < 0) {
		json_decref(root);
		root = NULL;
	}
	*out = root;
	return ret;
}

static int dump_cb(const char *s, size_t n, void *data)
{
	return buf_append(data, s, n) < 0 ? -1 : 0;
}

/* ---- the atomic write ---- */

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Split path into a directory to open and the name in it. */
static int split_path(const char *path, char **dir, const char **base)
{
	const char *slash = strrchr(path, '/');

	*base = slash ? slash + 1 : path;
	if (**base == '\0')
		return -EISDIR;
	if (!slash)
		*dir = strdup(".");
	else if (slash == path)
		*dir = strdup("/");
	else
		*dir = strndup(path, (size_t)(slash - path));
	return *dir ? 0 : -ENOMEM;
}

/* Create ".BASE.tmp.PID.N" in dfd with O_EXCL; N counts up past names
 * that exist (left by a crash, or taken by another thread's save). */
static int create_temp(int dfd, const char *base, char *name, size_t namelen)
{
	for (unsigned n = 0; n < 1000; n++) {
		int len = snprintf(name, namelen, ".%s" STORE_TEMP_INFIX "%ld.%u",
				   base, (long)getpid(), n);
		int fd;

		if (len < 0 || (size_t)len >= namelen)
			return -ENAMETOOLONG;
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
			    O_NOFOLLOW, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

static int write_file(const char *path, const struct buf *b)
{
	char tmp[PATH_MAX];
	const char *base;
	char *dir = NULL;
	int dfd = -1, fd = -1, ret;
	bool created = false;

	ret = split_path(path, &dir, &base);
	if (ret < 0)
		goto out;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		ret = -errno;
		goto out;
	}
	fd = create_temp(dfd, base, tmp, sizeof(tmp));
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	created = true;
	/* umask may have taken bits from 0600; the file is exactly 0600. */
	if (fchmod(fd, 0600) < 0) {
		ret = -errno;
		goto out;
	}
	ret = write_all(fd, b->p, b->len);
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	fd = -1;
	if (ret < 0)
		goto out;
	if (renameat(dfd, tmp, dfd, base) < 0) {
		ret = -errno;
		goto out;
	}
	created = false;
	/* The rename is durable only once the directory is; a failure here
	 * is reported though the new file is already in place. */
	if (fsync(dfd) < 0)
		ret = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (created)
		unlinkat(dfd, tmp, 0);
	if (dfd >= 0)
		close(dfd);
	free(dir);
	return ret;
}

int store_json_save(const char *path, const struct store_image *img)
{
	struct ctx c = { .path = path };
	struct buf b = { 0 };
	json_t *root = NULL;
	int ret;

	pthread_once(&alloc_once, set_alloc_funcs);
	ret = image_check(&c, img);
	if (ret < 0)
		return ret;
	ret = image_to_json(img, &root);
	if (ret < 0)
		goto out;
	/* Dumped into a buffer of ours rather than by json_dumps(), so that
	 * the one whole copy of the file's text is wiped when it is freed. */
	if (json_dump_callback(root, dump_cb, &b, JSON_FLAGS_OUT) < 0 ||
	    buf_append(&b, "\n", 1) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	json_decref(root);
	root = NULL;
	ret = write_file(path, &b);
out:
	json_decref(root);
	buf_free(&b);
	return ret;
}
