/* json-read.c: a store file's JSON text into an image, checked (with jansson, as json-write.c). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base64.h"
#include "parse.h"
#include "store-int.h"

/* (uid_t)-1 means "no id" to the kernel, so no key has it. */
#define ID_MAX			((json_int_t)UINT32_MAX - 1)

static const char *const top_fields[] = {
	"format", "next_serial", "session", "user", "user_session",
	"persistent", "keys", NULL
};

static const char *const key_fields[] = {
	"serial", "type", "description", "uid", "gid", "perm", "state",
	"expiry", "mtime", "ctime", "payload", "links", "restrict", NULL
};

static const char *const restrict_fields[] = { "type", "restriction", NULL };

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


/* ---- JSON -> image ---- */

static bool in_list(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(name, *list) == 0)
			return true;
	return false;
}

static int check_fields(struct store_ctx *c, json_t *obj, const char *const *names)
{
	const char *name;
	json_t *v;
	char tmp[40];

	json_object_foreach(obj, name, v) {
		if (!in_list(name, names))
			return store_fail(c, "unknown field \"%s\"",
					  shown(name, tmp, sizeof(tmp)));
	}
	return 0;
}

/* An integer field in [min, max]; an absent one leaves *out as it is, or
 * is an error where required. */
static int get_int(struct store_ctx *c, json_t *obj, const char *name,
		   bool required, json_int_t min, json_int_t max,
		   json_int_t *out)
{
	json_t *v = json_object_get(obj, name);
	json_int_t n;

	if (!v)
		return required ? store_fail(c, "no \"%s\" field", name) : 0;
	if (!json_is_integer(v))
		return store_fail(c, "\"%s\" is not an integer", name);
	n = json_integer_value(v);
	if (n < min || n > max)
		return store_fail(c, "\"%s\" is out of range: %" JSON_INTEGER_FORMAT,
				  name, n);
	*out = n;
	return 0;
}

/* A string field; *s stays NULL when an optional one is absent. */
static int get_str(struct store_ctx *c, json_t *obj, const char *name,
		   bool required, const char **s, size_t *len)
{
	json_t *v = json_object_get(obj, name);

	*s = NULL;
	*len = 0;
	if (!v)
		return required ? store_fail(c, "no \"%s\" field", name) : 0;
	if (!json_is_string(v))
		return store_fail(c, "\"%s\" is not a string", name);
	*s = json_string_value(v);
	*len = json_string_length(v);
	return 0;
}

/* An array field: *arr is it, or NULL when it is absent (an error where
 * required) or empty; *mem, for a non-empty one, room for its elements,
 * each size bytes, zeroed. */
static int get_array(struct store_ctx *c, json_t *obj, const char *name,
		     bool required, size_t size, json_t **arr, void **mem)
{
	json_t *v = json_object_get(obj, name);

	*arr = NULL;
	if (!v)
		return required ? store_fail(c, "no \"%s\" field", name) : 0;
	if (!json_is_array(v))
		return store_fail(c, "\"%s\" is not an array", name);
	if (json_array_size(v) == 0)
		return 0;
	*mem = calloc(json_array_size(v), size);
	if (!*mem)
		return -ENOMEM;
	*arr = v;
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

static int get_dup(struct store_ctx *c, json_t *obj, const char *name,
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
static int get_desc(struct store_ctx *c, json_t *o, struct store_key *k)
{
	json_t *v = json_object_get(o, "description"), *b;
	unsigned char *raw;
	size_t len;
	int ret;

	if (!v)
		return store_fail(c, "no \"description\" field");
	if (json_is_string(v))
		return dup_str(json_string_value(v), json_string_length(v),
			       &k->desc);
	if (!json_is_object(v) || json_object_size(v) != 1 ||
	    !(b = json_object_get(v, "base64")) || !json_is_string(b))
		return store_fail(c, "\"description\" is not a string or {\"base64\": STRING}");
	ret = decode_alloc(json_string_value(b), json_string_length(b),
			   KEYFS_DESC_MAX, &raw, &len);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0 || memchr(raw, '\0', len)) {
		free(raw);
		return store_fail(c, "bad base64 description");
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

static int get_time(struct store_ctx *c, json_t *o, const char *name,
		    struct timespec *ts)
{
	const char *s;
	size_t len;
	int ret = get_str(c, o, name, false, &s, &len);

	if (ret < 0 || !s)
		return ret;
	if (parse_time(s, ts) < 0)
		return store_fail(c, "\"%s\" is not \"SECONDS.NANOSECONDS\"", name);
	return 0;
}

static int get_state(struct store_ctx *c, json_t *o, enum key_state *state)
{
	const char *s;
	size_t len;
	char tmp[40];
	int ret = get_str(c, o, "state", true, &s, &len);

	if (ret < 0)
		return ret;
	if (key_state_parse(s, state) < 0)
		return store_fail(c, "bad state \"%s\"", shown(s, tmp, sizeof(tmp)));
	if (*state == KEY_STATE_PENDING)
		return store_fail(c, "state \"pending\" is never stored");
	return 0;
}

static int get_links(struct store_ctx *c, json_t *o, struct store_key *k)
{
	json_t *v, *e;
	void *mem = NULL;
	size_t i;
	int ret = get_array(c, o, "links", false, sizeof(*k->links), &v, &mem);

	k->links = mem;
	if (ret < 0 || !v)
		return ret;
	json_array_foreach(v, i, e) {
		if (!json_is_integer(e) || json_integer_value(e) <= 0 ||
		    json_integer_value(e) > INT32_MAX)
			return store_fail(c, "\"links\" holds something not a serial");
		k->links[i] = (kserial_t)json_integer_value(e);
		k->nlinks = i + 1;
	}
	return 0;
}

static int get_restrict(struct store_ctx *c, json_t *o, struct store_key *k)
{
	json_t *v = json_object_get(o, "restrict");
	int ret;

	if (!v)
		return 0;
	if (!json_is_object(v))
		return store_fail(c, "\"restrict\" is not an object");
	ret = check_fields(c, v, restrict_fields);
	if (ret == 0)
		ret = get_dup(c, v, "type", false, &k->restrict_type);
	if (ret == 0)
		ret = get_dup(c, v, "restriction", false, &k->restriction);
	if (ret == 0 && k->restriction && !k->restrict_type)
		ret = store_fail(c, "\"restrict\" has a restriction but no type");
	k->restricted = !k->restrict_type;
	return ret;
}

static int get_payload(struct store_ctx *c, json_t *o, struct store_key *k)
{
	const char *s;
	size_t len;
	int ret = get_str(c, o, "payload", false, &s, &len);

	if (ret < 0 || !s)
		return ret;
	ret = decode_alloc(s, len, KEYFS_BIG_PAYLOAD_MAX, &k->payload, &k->len);
	if (ret == -EFBIG)
		return store_fail(c, "payload is over the limit of %d bytes",
				  KEYFS_BIG_PAYLOAD_MAX);
	if (ret == -EINVAL)
		return store_fail(c, "bad base64 payload");
	return ret;
}

static int key_from_json(struct store_ctx *c, json_t *o, size_t i,
			 struct store_key *k)
{
	json_int_t n = 0;
	const char *perm;
	size_t len;
	int ret;

	store_where_index(c, i);
	if (!json_is_object(o))
		return store_fail(c, "not a JSON object");
	ret = get_int(c, o, "serial", true, 1, INT32_MAX, &n);
	if (ret < 0)
		return ret;
	k->serial = (kserial_t)n;
	store_where_key(c, k->serial);
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
		ret = store_fail(c, "\"perm\" is not a hex string like \"0x3f010000\"");
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
	if (keyfs_is_keyring_type(k->type)) {
		if (json_object_get(o, "payload"))
			return store_fail(c, "a keyring has no payload");
		ret = get_links(c, o, k);
		if (ret == 0)
			ret = get_restrict(c, o, k);
		return ret;
	}
	if (json_object_get(o, "links"))
		return store_fail(c, "only keyrings link keys");
	if (json_object_get(o, "restrict"))
		return store_fail(c, "only keyrings have restrictions");
	return get_payload(c, o, k);
}

static int image_from_json(struct store_ctx *c, json_t *root, struct store_image *img)
{
	json_int_t n = 0;
	json_t *keys, *o;
	void *mem = NULL;
	size_t i;
	int ret;

	if (!json_is_object(root))
		return store_fail(c, "not a keyfs store: not a JSON object");
	if (!json_object_get(root, "format"))
		return store_fail(c, "not a keyfs store: no \"format\" field");
	if (!json_is_integer(json_object_get(root, "format")))
		return store_fail(c, "\"format\" is not an integer");
	n = json_integer_value(json_object_get(root, "format"));
	if (n != STORE_FORMAT_VERSION)
		return store_fail(c, "unknown format version %" JSON_INTEGER_FORMAT, n);
	ret = check_fields(c, root, top_fields);
	if (ret == 0)
		ret = get_int(c, root, "next_serial", true, 0, INT32_MAX, &n);
	img->next_serial = (kserial_t)n;
	for (size_t s = 0; s < STORE_NSPECIALS && ret == 0; s++) {
		kserial_t *slot[STORE_NSPECIALS] = {
			&img->session, &img->user, &img->user_session,
			&img->persistent
		};

		n = 0;
		ret = get_int(c, root, store_special_names[s], false, 0,
			      INT32_MAX, &n);
		*slot[s] = (kserial_t)n;
	}
	if (ret < 0)
		return ret;
	ret = get_array(c, root, "keys", true, sizeof(*img->keys), &keys, &mem);
	img->keys = mem;
	if (ret < 0 || !keys)
		return ret;
	json_array_foreach(keys, i, o) {
		img->nkeys = i + 1;
		ret = key_from_json(c, o, i, &img->keys[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* jansson's message, without the "near '...'" it may add: that quotes the
 * text at the error, which may be part of a payload. */
static int json_fail(struct store_ctx *c, const json_error_t *jerr)
{
	char text[JSON_ERROR_TEXT_LENGTH];
	char *near;

#if JANSSON_VERSION_HEX >= 0x020b00
	if (json_error_code(jerr) == json_error_out_of_memory)
		return store_fail_errno(c, "cannot parse", -ENOMEM);
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

int store_json_parse(struct store_ctx *c, const char *text, size_t len,
		     struct store_image *img)
{
	struct store_image tmp = { 0 };
	json_t *root;
	json_error_t jerr;
	int ret;

	struct store_json_arena arena;
	bool spilled;

	memset(img, 0, sizeof(*img));
	store_json_init();
	/* The tree is about ten times the text; more is only reserved. */
	store_json_arena_open(&arena, len < SIZE_MAX / 32 - (1 << 20) ?
			      len * 32 + (1 << 20) : len);
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		store_json_arena_close(&arena);
		return json_fail(c, &jerr);
	}
	ret = image_from_json(c, root, &tmp);
	/* A tree wholly in the region goes with it, at once. */
	spilled = !arena.base || arena.spilled;
	if (spilled)
		json_decref(root);
	store_json_arena_close(&arena);
	if (ret == -ENOMEM)
		store_fail_errno(c, "cannot load", ret);
	if (ret == 0)
		*img = tmp;
	else
		store_image_free(&tmp);
	return ret;
}

int store_key_json_decode(struct store_ctx *c, const char *text, size_t len,
			  struct store_key *k)
{
	json_t *o;
	json_error_t jerr;
	int ret;

	memset(k, 0, sizeof(*k));
	store_json_init();
	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o)
		return store_fail(c, "a key that is not JSON");
	ret = key_from_json(c, o, 0, k);
	json_decref(o);
	return ret;
}

int store_json_load(const char *path, struct store_image *img,
		    char *err, size_t errlen)
{
	struct store_ctx c = { .path = path, .err = err, .errlen = errlen };
	struct store_image tmp = { 0 };
	struct store_buf b = { 0 };
	int ret;

	memset(img, 0, sizeof(*img));
	if (err && errlen)
		err[0] = '\0';
	ret = store_file_read(&c, &b);
	if (ret == -ENOENT)
		return 0;
	if (ret == 0)
		ret = store_json_parse(&c, b.p, b.len, &tmp);
	store_buf_free(&b);
	if (ret == 0)
		ret = store_image_check(&c, &tmp);
	if (ret == -ENOMEM)
		store_fail_errno(&c, "cannot load", ret);
	if (ret == 0) {
		*img = tmp;
		memset(&tmp, 0, sizeof(tmp));
	}
	store_image_free(&tmp);
	return ret;
}
