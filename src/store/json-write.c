/* json-write.c: an image, checked, into a store file's JSON text, written atomically (with jansson, as json-read.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base64.h"
#include "parse.h"
#include "store-int.h"

#define JSON_FLAGS_OUT		(JSON_INDENT(2) | JSON_PRESERVE_ORDER)

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

	if (store_utf8_valid(desc, len))
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
	if (keyfs_is_keyring_type(k->type))
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
	for (size_t s = 0; s < STORE_NSPECIALS; s++)
		put(root, store_special_names[s],
		    json_integer(store_special_get(img, s)), &ret);
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
	return store_buf_append(data, s, n) < 0 ? -1 : 0;
}


int store_json_dump(const struct store_image *img, struct store_buf *b)
{
	struct store_ctx c = { .path = "" };
	json_t *root = NULL;
	int ret;

	store_json_init();
	ret = store_image_check(&c, img);
	if (ret < 0)
		return ret;
	ret = image_to_json(img, &root);
	if (ret < 0)
		return ret;
	/* Dumped into a buffer of ours rather than by json_dumps(), so that
	 * the one whole copy of the file's text is wiped when it is freed. */
	if (json_dump_callback(root, dump_cb, b, JSON_FLAGS_OUT) < 0 ||
	    store_buf_append(b, "\n", 1) < 0)
		ret = -ENOMEM;
	json_decref(root);
	return ret;
}

int store_key_json_encode(const struct store_key *k, struct store_buf *b)
{
	json_t *o;
	int ret = 0;

	store_json_init();
	o = key_json(k);
	if (!o)
		return -ENOMEM;
	if (json_dump_callback(o, dump_cb, b, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0 ||
	    store_buf_append(b, "", 1) < 0)
		ret = -ENOMEM;
	json_decref(o);
	return ret;
}

int store_json_save(const char *path, const struct store_image *img)
{
	struct store_buf b = { 0 };
	int ret;

	ret = store_json_dump(img, &b);
	if (ret == 0)
		ret = store_file_write(path, &b);
	store_buf_free(&b);
	return ret;
}
