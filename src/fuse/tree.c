/* tree.c: the directory tree: what each inode is, lookup of names, paths. */
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

const char *tree_root_dir(const struct keyfs_ctx *ctx, size_t i,
			  kserial_t *serial)
{
	if (i >= NELEM(root_dirs))
		return NULL;
	*serial = root_dir_serial(ctx, &root_dirs[i]);
	return root_dirs[i].name;
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

void tree_set_key(const struct keyfs_ctx *ctx, struct tnode *out,
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
			tree_set_key(ctx, out, ctx->root_key);
		else
			set_virt(out, T_ROOT, ino);
		return 0;
	}
	if (ino < INO_VIRT || ino == INO_SERIAL1) {
		if ((ino > INT32_MAX && ino != INO_SERIAL1) || ino == 0)
			return -ESTALE;
		n = node_get(ctx->nodes, ino);
		tree_set_key(ctx, out, n && n->kind == NODE_ALIAS ? n->serial :
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
	if (n->kind == NODE_PLACE) {	/* a keyring in another place */
		tree_set_key(ctx, out, n->serial);
		out->ino = ino;
		return 0;
	}
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
		tree_set_key(ctx, out, serial);
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
			tree_set_key(ctx, out, s);
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
		tree_set_key(ctx, out, serial);
	free(desc);
	return ret;
}

bool tree_key_gone(struct keyfs_ctx *ctx, kserial_t serial)
{
	struct key_info *ki = malloc(sizeof(*ki));
	bool gone;

	if (!ki)
		return false;
	gone = ctx_describe(ctx, &ctx->mounter, serial, 0, ki) == -ENOKEY;
	free(ki);
	return gone;
}

int tree_key_is_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			kserial_t serial)
{
	struct key_info *ki = malloc(sizeof(*ki));
	int ret;

	if (!ki)
		return -ENOMEM;
	ret = ctx_describe(ctx, c, serial, KEY_INFO_RECENT, ki);	/* the type only */
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
		if (parent == INO_ROOT && strcmp(name, ".keyfs") == 0)
			return tree_node(ctx, INO_CTLDIR, out);
		/* The find says whether it is a keyring (ENOTDIR) and
		 * whether it may be searched (search without view is enough,
		 * as for keyctl search): no describe of it first, which on
		 * the kernel backend was two keyctl calls per lookup. */
		return lookup_in_keyring(ctx, c, pt.serial, name, out);
	case T_BYID:
		if (ctx->root_key)
			return -ENOENT;
		ret = parse_serial(name, &serial);
		if (ret == 0)
			ret = tree_key_is_keyring(ctx, c, serial);
		if (ret < 0 && ret != -ENOTDIR)
			return ret == -ENOKEY ? -ENOENT : ret;
		tree_set_key(ctx, out, serial);
		return 0;
	case T_CTLDIR:
		return lookup_ctldir(ctx, name, out);
	case T_SEARCHDIR:
		return lookup_searchtype(ctx, name, out);
	case T_SEARCHTYPE:
		return lookup_search(ctx, c, pt.node->pk->type, name, out);
	default:
		return -ENOTDIR;
	}
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
