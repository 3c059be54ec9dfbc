/* listing.c: directory listings: every entry of a directory with its attributes, made at opendir. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "hash.h"
#include "names.h"
#include "specials.h"
#include "tree.h"

/* An entry while a listing is made, its name in place (names are made
 * and remade in it: escaping, %keyring: prefixes). */
struct dl_ent {
	char name[KEYFS_NAME_MAX + 1];
	struct tnode tn;
	struct stat st;
};

/* Growing array of directory entries. */
struct dirlist {
	struct dl_ent *v;
	size_t n, cap;
};

/* The finished listing as one block: the entries, then their names, each
 * as long as it is; an open directory keeps it for as long as it is open,
 * so a keyring of 100,000 keys costs about 20 MB there, not 45. */
static struct tree_dirent *dl_compact(const struct dirlist *dl)
{
	struct tree_dirent *out;
	size_t names = 0;
	char *p;

	for (size_t i = 0; i < dl->n; i++)
		names += strlen(dl->v[i].name) + 1;
	out = malloc(dl->n * sizeof(*out) + names + 1);
	if (!out)
		return NULL;
	p = (char *)(out + dl->n);
	for (size_t i = 0; i < dl->n; i++) {
		size_t len = strlen(dl->v[i].name) + 1;

		memcpy(p, dl->v[i].name, len);
		out[i].name = p;
		out[i].tn = dl->v[i].tn;
		out[i].st = dl->v[i].st;
		p += len;
	}
	return out;
}

static struct dl_ent *dl_add(struct dirlist *dl, const char *name)
{
	struct dl_ent *d;

	if (dl->n == dl->cap) {
		size_t cap = dl->cap ? dl->cap * 2 : 32;
		void *v = realloc(dl->v, cap * sizeof(*dl->v));

		if (!v)
			return NULL;
		dl->v = v;
		dl->cap = cap;
	}
	d = &dl->v[dl->n++];
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	return d;
}

/* Add a node by inode number, with its attributes; entries whose
 * attributes cannot be had are left out. */
static int dl_add_node(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       struct dirlist *dl, const char *name, uint64_t ino)
{
	struct dl_ent *d = dl_add(dl, name);
	int ret;

	if (!d)
		return -ENOMEM;
	ret = tree_node(ctx, ino, &d->tn);
	if (ret == 0)
		ret = attr_get(ctx, c, &d->tn, &d->st);
	if (ret < 0)
		dl->n--;
	return ret == -ENOMEM ? ret : 0;
}

static int dl_dots(struct dirlist *dl, uint64_t ino)
{
	struct dl_ent *d;

	for (int i = 0; i < 2; i++) {
		d = dl_add(dl, i ? ".." : ".");
		if (!d)
			return -ENOMEM;
		d->tn.ino = ino;
		d->st.st_ino = ino;
		d->st.st_mode = S_IFDIR;
	}
	return 0;
}

static int readdir_root(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			struct dirlist *dl)
{
	int ret = 0;

	const char *name;
	kserial_t s;

	for (size_t i = 0; ret == 0 && (name = tree_root_dir(ctx, i, &s)); i++)
		if (s)
			ret = dl_add_node(ctx, c, dl, name, tree_ino(ctx, s));
	for (size_t i = 0; i < keyfs_nspecials && ret == 0; i++)
		ret = dl_add_node(ctx, c, dl, keyfs_specials[i].name, INO_LINK_S + i);
	if (ret == 0)
		ret = dl_add_node(ctx, c, dl, "by-id", INO_BYID);
	if (ret == 0)
		ret = dl_add_node(ctx, c, dl, ".keyfs", INO_CTLDIR);
	return ret;
}

static int readdir_ctldir(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  struct dirlist *dl)
{
	int ret = dl_add_node(ctx, c, dl, "search", INO_SEARCHDIR);

	for (int i = 0; i < CTLF_COUNT && ret == 0; i++)
		ret = dl_add_node(ctx, c, dl, ctl_files[i].name,
				  INO_CTL_FIRST + (uint64_t)i);
	return ret;
}

static int readdir_byid(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			struct dirlist *dl)
{
	kserial_t *all = NULL;
	size_t n = 0;
	char name[16];
	int ret = BACKEND_CALL(ctx, list_all, c, &all, &n);

	for (size_t i = 0; i < n && ret == 0; i++) {
		snprintf(name, sizeof(name), "%d", all[i]);
		ret = dl_add_node(ctx, c, dl, name, tree_ino(ctx, all[i]));
	}
	free(all);
	return ret;
}

/* A set of descriptions, to find keyrings that share a user key's name. */
struct descset {
	const char **slot;
	size_t size;
};

static int ds_init(struct descset *ds, size_t n)
{
	ds->size = n * 2 + 1;
	ds->slot = calloc(ds->size, sizeof(*ds->slot));
	return ds->slot ? 0 : -ENOMEM;
}

static void ds_add(struct descset *ds, const char *s)
{
	size_t i = hash_str(s) % ds->size;

	while (ds->slot[i] && strcmp(ds->slot[i], s) != 0)
		i = (i + 1) % ds->size;
	ds->slot[i] = s;
}

static bool ds_has(const struct descset *ds, const char *s)
{
	size_t i = hash_str(s) % ds->size;

	for (; ds->slot[i]; i = (i + 1) % ds->size)
		if (strcmp(ds->slot[i], s) == 0)
			return true;
	return false;
}

struct pending_walk {
	struct keyfs_ctx *ctx;
	const struct keyfs_cred *c;
	struct dirlist *dl;
	int ret;
};

static void add_pending(struct node *n, void *arg)
{
	struct pending_walk *w = arg;
	char name[KEYFS_NAME_MAX + 1];

	/* Listed under the name the key will have once instantiated. */
	if (w->ret == 0 &&
	    name_for_key(n->pk->type, n->pk->desc, false, name, sizeof(name)) == 0)
		w->ret = dl_add_node(w->ctx, w->c, w->dl, name, n->ino);
}

enum link_class { LC_NAMED, LC_USER, LC_KEYRING };

/* Describe one link into the list under its plain or typed name; class
 * says whether the name may still have to change.  A key the caller may
 * not view is listed as %#SERIAL (unviewable.c); keys that cannot be
 * described otherwise (gone meanwhile), or whose name passes
 * KEYFS_NAME_MAX, are not listed. */
static int add_link(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    struct dirlist *dl, kserial_t serial, struct key_info *ki,
		    unsigned char *cls)
{
	struct dl_ent *d;
	bool plain;
	/* a listing shows no expiry */
	int ret = ctx_describe(ctx, c, serial, KEY_INFO_SIZE, ki);

	if (ret < 0 && ret != -EACCES)
		return 0;
	d = dl_add(dl, "");
	if (!d)
		return -ENOMEM;
	if (ret == -EACCES) {
		name_of_serial(serial, d->name, sizeof(d->name));
		unviewable_set(serial, &d->tn);
		unviewable_attr(&d->tn, &d->st);
		*cls = LC_NAMED;
		return 0;
	}
	plain = strcmp(ki->type, "user") == 0 || keyfs_is_keyring_type(ki->type);
	if (name_for_key(ki->type, ki->desc, false, d->name, sizeof(d->name)) < 0) {
		dl->n--;
		return 0;
	}
	tree_set_key(ctx, &d->tn, serial);
	attr_from_key(ki, &d->st);
	*cls = !plain ? LC_NAMED : keyfs_is_keyring_type(ki->type) ? LC_KEYRING : LC_USER;
	return 0;
}

/* A keyring sharing its description with a user key in the same keyring
 * is listed as %keyring:NAME; "" when that does not fit. */
static void name_shadowed_keyrings(struct dirlist *dl, size_t first,
				   const unsigned char *cls)
{
	static const char prefix[] = "%keyring:";
	struct descset users;
	size_t n = dl->n - first;

	if (ds_init(&users, n) < 0) {
		for (size_t i = 0; i < n; i++)
			if (cls[i] == LC_KEYRING)
				dl->v[first + i].name[0] = '\0';
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (cls[i] == LC_USER)
			ds_add(&users, dl->v[first + i].name);
	for (size_t i = 0; i < n; i++) {
		char *name = dl->v[first + i].name;
		size_t len = strlen(name);

		if (cls[i] != LC_KEYRING || !ds_has(&users, name))
			continue;
		if (len + sizeof(prefix) - 1 > KEYFS_NAME_MAX) {
			name[0] = '\0';
			continue;
		}
		memmove(name + sizeof(prefix) - 1, name, len + 1);
		memcpy(name, prefix, sizeof(prefix) - 1);
	}
	free(users.slot);
}

static void drop_unnamed(struct dirlist *dl, size_t first)
{
	size_t j = first;

	for (size_t i = first; i < dl->n; i++)
		if (dl->v[i].name[0])
			dl->v[j++] = dl->v[i];
	dl->n = j;
}

/* One pass over the keyring's links, then keyfs's pending entries. */
static int readdir_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			   kserial_t keyring, struct dirlist *dl)
{
	struct pending_walk w = { ctx, c, dl, 0 };
	kserial_t *links = NULL;
	struct key_info *ki = NULL;
	unsigned char *cls = NULL;
	size_t n = 0, first = dl->n;
	int ret;

	ret = BACKEND_CALL(ctx, list, c, keyring, &links, &n);
	if (ret < 0)
		return ret;
	ki = malloc(sizeof(*ki));
	cls = malloc(n + 1);
	if (!ki || !cls) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && ret == 0; i++)
		ret = add_link(ctx, c, dl, links[i], ki, &cls[dl->n - first]);
	if (ret < 0)
		goto out;
	name_shadowed_keyrings(dl, first, cls);
	drop_unnamed(dl, first);
	node_for_each_pending(ctx->nodes, keyring, add_pending, &w);
	ret = w.ret;
	if (ret == 0 && keyring == ctx->root_key)
		ret = dl_add_node(ctx, c, dl, ".keyfs", INO_CTLDIR);
out:
	free(cls);
	free(ki);
	free(links);
	return ret;
}

int tree_readdir(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		 uint64_t ino, struct tree_dirent **out_alloc, size_t *n)
{
	struct dirlist dl = { 0 };
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	if (ret < 0)
		return ret;
	ret = dl_dots(&dl, ino);
	if (ret < 0)
		goto fail;
	switch (tn.kind) {
	case T_ROOT:
		ret = readdir_root(ctx, c, &dl);
		break;
	case T_KEY:
		ret = tree_key_is_keyring(ctx, c, tn.serial);
		if (ret == 0)
			ret = readdir_keyring(ctx, c, tn.serial, &dl);
		break;
	case T_BYID:
		ret = readdir_byid(ctx, c, &dl);
		break;
	case T_CTLDIR:
		ret = readdir_ctldir(ctx, c, &dl);
		break;
	case T_SEARCHDIR:
	case T_SEARCHTYPE:
		break;
	default:
		ret = -ENOTDIR;
	}
	if (ret < 0)
		goto fail;
	*out_alloc = dl_compact(&dl);
	*n = dl.n;
	ret = *out_alloc ? 0 : -ENOMEM;
fail:
	free(dl.v);
	return ret;
}

