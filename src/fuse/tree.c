/* tree.c: the directory tree: what each inode is, lookup of names, listings, paths. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "names.h"
#include "specials.h"
#include "tree.h"

/* The directories of the tree root that are keyrings. */
static const struct root_dir {
	const char *name;
	size_t field;		/* offset of the serial in struct keyfs_ctx */
} root_dirs[] = {
	{ "session", offsetof(struct keyfs_ctx, session) },
	{ "user", offsetof(struct keyfs_ctx, user) },
	{ "user-session", offsetof(struct keyfs_ctx, user_session) },
	{ "process", offsetof(struct keyfs_ctx, process) },
	{ "persistent", offsetof(struct keyfs_ctx, persistent) },
};

/* The root's links @s @u @us @p: keyfs_specials[i] is inode
 * INO_LINK_S + i, a link to its directory. */

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static kserial_t root_dir_serial(const struct keyfs_ctx *ctx,
				 const struct root_dir *d)
{
	return *(const kserial_t *)((const char *)ctx + d->field);
}

int tree_special(const struct keyfs_ctx *ctx, int which, kserial_t *out)
{
	for (size_t i = 0; i < keyfs_nspecials; i++) {
		if (keyfs_specials[i].which != which)
			continue;
		for (size_t j = 0; j < NELEM(root_dirs); j++) {
			kserial_t s;

			if (strcmp(root_dirs[j].name, keyfs_specials[i].dir) != 0)
				continue;
			s = root_dir_serial(ctx, &root_dirs[j]);
			if (s == 0)
				return -ENOKEY;
			*out = s;
			return 0;
		}
	}
	return -EINVAL;
}

uint64_t tree_ino(const struct keyfs_ctx *ctx, kserial_t serial)
{
	if (ctx->root_key && serial == ctx->root_key)
		return INO_ROOT;
	return ino_of_serial(serial);
}

static void set_key(const struct keyfs_ctx *ctx, struct tnode *out,
		    kserial_t serial)
{
	memset(out, 0, sizeof(*out));
	out->kind = T_KEY;
	out->serial = serial;
	out->ino = tree_ino(ctx, serial);
}

static void set_virt(struct tnode *out, enum tkind kind, uint64_t ino)
{
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->ino = ino;
}

static void set_node(struct tnode *out, struct node *n)
{
	memset(out, 0, sizeof(*out));
	out->kind = n->kind == NODE_PENDING ? T_PENDING : T_SEARCHTYPE;
	out->ino = n->ino;
	out->node = n;
	out->serial = n->kind == NODE_PENDING ? n->serial : 0;
}

int tree_node(struct keyfs_ctx *ctx, uint64_t ino, struct tnode *out)
{
	struct node *n;
	kserial_t serial;

	if (ino == INO_ROOT) {
		if (ctx->root_key)
			set_key(ctx, out, ctx->root_key);
		else
			set_virt(out, T_ROOT, ino);
		return 0;
	}
	if (ino < INO_VIRT || ino == INO_SERIAL1) {
		if ((ino > INT32_MAX && ino != INO_SERIAL1) || ino == 0)
			return -ESTALE;
		n = node_get(ctx->nodes, ino);
		set_key(ctx, out, n && n->kind == NODE_ALIAS ? n->serial :
			ino == INO_SERIAL1 ? 1 : (kserial_t)ino);
		out->ino = ino;
		return 0;
	}
	switch (ino) {
	case INO_BYID:
		set_virt(out, T_BYID, ino);
		return 0;
	case INO_CTLDIR:
		set_virt(out, T_CTLDIR, ino);
		return 0;
	case INO_SEARCHDIR:
		set_virt(out, T_SEARCHDIR, ino);
		return 0;
	}
	if (ino >= INO_LINK_S && ino < INO_LINK_S + keyfs_nspecials) {
		set_virt(out, T_LINK, ino);
		out->target = keyfs_specials[ino - INO_LINK_S].dir;
		return 0;
	}
	if (ino >= INO_CTL_FIRST && ino < INO_CTL_FIRST + CTLF_COUNT) {
		set_virt(out, T_CTLFILE, ino);
		out->ctl = (int)(ino - INO_CTL_FIRST);
		return 0;
	}
	if (unviewable_ino(ino, &serial)) {
		unviewable_set(serial, out);
		return 0;
	}
	n = node_get(ctx->nodes, ino);
	if (!n)
		return -ESTALE;
	set_node(out, n);
	return 0;
}

/* ENOKEY from a backend's find means "no such name" to a directory. */
static int find_one(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    kserial_t keyring, const char *type, const char *desc,
		    kserial_t *out)
{
	int ret = BACKEND_CALL(ctx, find, c, keyring, type, desc, out);

	return ret == -ENOKEY ? -ENOENT : ret;
}

/* Resolve a parsed name in a keyring: a typed name means that type; a
 * plain one a user key, else a keyring, else a key of default_type. */
static int find_parsed(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       kserial_t keyring, const char *type, const char *desc,
		       bool typed, kserial_t *out)
{
	int ret;

	if (typed)
		return find_one(ctx, c, keyring, type, desc, out);
	ret = find_one(ctx, c, keyring, "user", desc, out);
	if (ret == -ENOENT)
		ret = find_one(ctx, c, keyring, "keyring", desc, out);
	if (ret == -ENOENT && strcmp(ctx->opts.default_type, "user") != 0)
		ret = find_one(ctx, c, keyring, ctx->opts.default_type, desc, out);
	return ret;
}

int tree_find_key(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		  kserial_t keyring, const char *name, kserial_t *out)
{
	char type[KEYFS_TYPE_MAX + 1];
	char *desc = malloc(KEYFS_DESC_MAX + 1);
	bool typed;
	int ret;

	if (!desc)
		return -ENOMEM;
	ret = name_parse(name, type, desc, &typed);
	if (ret == 0)
		ret = find_parsed(ctx, c, keyring, type, desc, typed, out);
	free(desc);
	return ret;
}

/* A name in a keyring: a key it links, or a pending entry keyfs holds. */
static int lookup_in_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			     kserial_t keyring, const char *name,
			     struct tnode *out)
{
	char type[KEYFS_TYPE_MAX + 1];
	char *desc = malloc(KEYFS_DESC_MAX + 1);
	struct node *n;
	kserial_t serial;
	bool typed;
	int ret;

	if (!desc)
		return -ENOMEM;
	if (name_serial(name, &serial) == 0) {
		ret = unviewable_lookup(ctx, c, keyring, serial, out);
		goto out;
	}
	ret = name_parse(name, type, desc, &typed);
	if (ret < 0)
		goto out;
	ret = find_parsed(ctx, c, keyring, type, desc, typed, &serial);
	if (ret == 0) {
		set_key(ctx, out, serial);
		goto out;
	}
	if (ret != -ENOENT)
		goto out;
	n = node_find_pending(ctx->nodes, keyring,
			      typed ? type : ctx->opts.default_type, desc);
	if (n)
		set_node(out, n);
	else
		ret = -ENOENT;
	if (n)
		ret = 0;
out:
	free(desc);
	return ret;
}

static int parse_serial(const char *s, kserial_t *out)
{
	char *end;
	long v;

	if (s[0] < '1' || s[0] > '9')
		return -ENOENT;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v > INT32_MAX)
		return -ENOENT;
	*out = (kserial_t)v;
	return 0;
}

static int lookup_root(struct keyfs_ctx *ctx, const char *name,
		       struct tnode *out)
{
	for (size_t i = 0; i < NELEM(root_dirs); i++)
		if (strcmp(name, root_dirs[i].name) == 0) {
			kserial_t s = root_dir_serial(ctx, &root_dirs[i]);

			if (!s)
				return -ENOENT;
			set_key(ctx, out, s);
			return 0;
		}
	for (size_t i = 0; i < keyfs_nspecials; i++)
		if (strcmp(name, keyfs_specials[i].name) == 0)
			return tree_node(ctx, INO_LINK_S + i, out);
	if (strcmp(name, "by-id") == 0)
		return tree_node(ctx, INO_BYID, out);
	if (strcmp(name, ".keyfs") == 0)
		return tree_node(ctx, INO_CTLDIR, out);
	return -ENOENT;
}

static int lookup_ctldir(struct keyfs_ctx *ctx, const char *name,
			 struct tnode *out)
{
	if (strcmp(name, "search") == 0)
		return tree_node(ctx, INO_SEARCHDIR, out);
	for (int i = 0; i < CTLF_COUNT; i++)
		if (strcmp(name, ctl_files[i].name) == 0)
			return tree_node(ctx, INO_CTL_FIRST + (uint64_t)i, out);
	return -ENOENT;
}

static int lookup_searchtype(struct keyfs_ctx *ctx, const char *name,
			     struct tnode *out)
{
	char type[KEYFS_TYPE_MAX + 1];
	struct node *n;
	int ret = name_unescape(name, type, sizeof(type));

	if (ret < 0)
		return ret == -ENAMETOOLONG ? -ENOENT : ret;
	n = node_find_searchtype(ctx->nodes, type);
	if (!n)
		n = node_new(ctx->nodes, NODE_SEARCHTYPE, type, NULL);
	if (!n)
		return -ENOMEM;
	set_node(out, n);
	return 0;
}

/* .keyfs/search/TYPE/NAME: what request_key(2) without a callout finds. */
static int lookup_search(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			 const char *type, const char *name, struct tnode *out)
{
	char *desc = malloc(KEYFS_DESC_MAX + 1);
	kserial_t serial;
	int ret;

	if (!desc)
		return -ENOMEM;
	ret = name_unescape(name, desc, KEYFS_DESC_MAX + 1);
	if (ret == 0)
		ret = BACKEND_CALL(ctx, search, c, type, desc, &serial);
	if (ret == 0)
		set_key(ctx, out, serial);
	free(desc);
	return ret;
}

static int key_is_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  kserial_t serial)
{
	struct key_info *ki = malloc(sizeof(*ki));
	int ret;

	if (!ki)
		return -ENOMEM;
	ret = BACKEND_CALL(ctx, describe, c, serial, ki);
	if (ret == 0)
		ret = keyfs_is_keyring_type(ki->type) ? 0 : -ENOTDIR;
	free(ki);
	return ret;
}

int tree_lookup(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		uint64_t parent, const char *name, struct tnode *out)
{
	struct tnode pt;
	kserial_t serial;
	int ret;

	if (strlen(name) > KEYFS_NAME_MAX)
		return -ENAMETOOLONG;
	ret = tree_node(ctx, parent, &pt);
	if (ret < 0)
		return ret;
	switch (pt.kind) {
	case T_ROOT:
		return lookup_root(ctx, name, out);
	case T_KEY:
		if (pt.serial == ctx->root_key && strcmp(name, ".keyfs") == 0)
			return tree_node(ctx, INO_CTLDIR, out);
		ret = key_is_keyring(ctx, c, pt.serial);
		/* search without view is enough to look in a keyring, as for
		 * keyctl search: the find says whether it is one */
		if (ret < 0 && ret != -EACCES)
			return ret;
		return lookup_in_keyring(ctx, c, pt.serial, name, out);
	case T_BYID:
		if (ctx->root_key)
			return -ENOENT;
		ret = parse_serial(name, &serial);
		if (ret == 0)
			ret = key_is_keyring(ctx, c, serial);
		if (ret < 0 && ret != -ENOTDIR)
			return ret == -ENOKEY ? -ENOENT : ret;
		set_key(ctx, out, serial);
		return 0;
	case T_CTLDIR:
		return lookup_ctldir(ctx, name, out);
	case T_SEARCHDIR:
		return lookup_searchtype(ctx, name, out);
	case T_SEARCHTYPE:
		return lookup_search(ctx, c, pt.node->type, name, out);
	default:
		return -ENOTDIR;
	}
}

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

	for (size_t i = 0; i < NELEM(root_dirs) && ret == 0; i++) {
		kserial_t s = root_dir_serial(ctx, &root_dirs[i]);

		if (s)
			ret = dl_add_node(ctx, c, dl, root_dirs[i].name, tree_ino(ctx, s));
	}
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

static size_t hash_str(const char *s)
{
	size_t h = 14695981039346656037ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

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
	    name_for_key(n->type, n->desc, false, name, sizeof(name)) == 0)
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
	int ret = BACKEND_CALL(ctx, describe, c, serial, ki);

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
	set_key(ctx, &d->tn, serial);
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
		ret = key_is_keyring(ctx, c, tn.serial);
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

int tree_resolve(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		 const char *path, kserial_t *out, struct tree_entry *where)
{
	struct tree_entry last = { 0 };
	struct tnode tn;
	char *copy = strdup(path), *save = NULL, *comp;
	int ret;

	if (!copy)
		return -ENOMEM;
	ret = tree_node(ctx, INO_ROOT, &tn);
	for (comp = strtok_r(copy, "/", &save); comp && ret == 0;
	     comp = strtok_r(NULL, "/", &save)) {
		last.parent = tn.ino;
		/* Longer names fail the lookup below. */
		snprintf(last.name, sizeof(last.name), "%s", comp);
		ret = tree_lookup(ctx, c, tn.ino, comp, &tn);
	}
	free(copy);
	if (where)
		*where = last;
	if (ret < 0)
		return ret;
	if (tn.kind != T_KEY && !(tn.kind == T_PENDING && tn.serial))
		return tn.kind == T_PENDING ? -ENOKEY : -EINVAL;
	*out = tn.serial;
	return 0;
}
