/* listing.c: directory listings: every entry of a directory with its attributes, a keyring's made as it is read. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "grow.h"
#include "hash.h"
#include "names.h"
#include "specials.h"
#include "timens.h"
#include "tree.h"

/* An entry while a listing is made: its name is an offset into the
 * listing's names, which grow. */
struct dl_ent {
	size_t name;		/* DL_NONAME: left out of the listing */
	struct tnode tn;
	struct stat st;
	int64_t described_ns;	/* as tree_dirent's */
};

#define DL_NONAME SIZE_MAX

/*
 * A listing while it is made: the entries, and their names one after
 * another, each as long as it is.  A name buffer in every entry made a
 * listing of 10,000 keys touch 4.5 MB of fresh memory where it now
 * touches 2 (issue 10: a tenth of the daemon's time in ls -l).
 */
struct dirlist {
	struct dl_ent *v;
	size_t n, cap;
	char *names;
	size_t used, names_cap;
};

static const char *dl_name(const struct dirlist *dl, size_t i)
{
	return dl->names + dl->v[i].name;
}

/* The finished listing as one block: the entries, then the names as they
 * were made; an open directory keeps it for as long as it is open, so a
 * keyring of 100,000 keys costs about 20 MB there. */
static struct tree_dirent *dl_compact(const struct dirlist *dl)
{
	struct tree_dirent *out = malloc(dl->n * sizeof(*out) + dl->used + 1);
	char *names;

	if (!out)
		return NULL;
	names = (char *)(out + dl->n);
	if (dl->used)
		memcpy(names, dl->names, dl->used);
	for (size_t i = 0; i < dl->n; i++) {
		out[i].name = names + dl->v[i].name;
		out[i].tn = dl->v[i].tn;
		out[i].st = dl->v[i].st;
		out[i].described_ns = dl->v[i].described_ns;
	}
	return out;
}

static void dl_free(struct dirlist *dl)
{
	free(dl->v);
	free(dl->names);
}

/* Keep name (cut at KEYFS_NAME_MAX) with the listing's names: its offset,
 * or DL_NONAME when memory is short. */
static size_t dl_keep_name(struct dirlist *dl, const char *name)
{
	size_t len = strnlen(name, KEYFS_NAME_MAX), off = dl->used;

	if (dl->used + len + 1 > dl->names_cap) {
		size_t cap = dl->names_cap ? dl->names_cap * 2 : 4096;
		char *p;

		while (cap < dl->used + len + 1)
			cap *= 2;
		p = realloc(dl->names, cap);
		if (!p)
			return DL_NONAME;
		dl->names = p;
		dl->names_cap = cap;
	}
	memcpy(dl->names + off, name, len);
	dl->names[off + len] = '\0';
	dl->used += len + 1;
	return off;
}

static struct dl_ent *dl_add(struct dirlist *dl, const char *name)
{
	struct dl_ent *d;
	size_t off;

	d = grow_room(dl->v, dl->n, &dl->cap, 32, SIZE_MAX, sizeof(*d));
	if (!d)
		return NULL;
	dl->v = d;
	off = dl_keep_name(dl, name);
	if (off == DL_NONAME)
		return NULL;
	d = &dl->v[dl->n++];
	d->name = off;
	memset(&d->tn, 0, sizeof(d->tn));
	memset(&d->st, 0, sizeof(d->st));
	d->described_ns = 0;
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

/* "." and ".." of directory ino, numbered st_ino: a keyring by its serial
 * in every place (node_place); the mount root keeps inode 1 as before. */
static int dl_dots(struct dirlist *dl, uint64_t ino, uint64_t st_ino)
{
	struct dl_ent *d;

	for (int i = 0; i < 2; i++) {
		d = dl_add(dl, i ? ".." : ".");
		if (!d)
			return -ENOMEM;
		d->tn.ino = ino;
		d->st.st_ino = st_ino;
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

/* A set of the listing's names, each kept as its offset into the names:
 * offsets stay valid as names are added (the block may move). */
struct nameset {
	const struct dirlist *dl;
	size_t *slot;		/* 1 + a name's offset; 0: free */
	size_t size;
};

static int ns_init(struct nameset *ns, const struct dirlist *dl, size_t n)
{
	ns->dl = dl;
	ns->size = n * 2 + 1;
	ns->slot = calloc(ns->size, sizeof(*ns->slot));
	return ns->slot ? 0 : -ENOMEM;
}

static const char *ns_name(const struct nameset *ns, size_t i)
{
	return ns->dl->names + ns->slot[i] - 1;
}

/* Add entry i's name; a set holds at most the n names it was made for. */
static void ns_add(struct nameset *ns, size_t i)
{
	const char *s = dl_name(ns->dl, i);
	size_t j = hash_str(s) % ns->size;

	while (ns->slot[j] && strcmp(ns_name(ns, j), s) != 0)
		j = (j + 1) % ns->size;
	ns->slot[j] = ns->dl->v[i].name + 1;
}

static bool ns_has(const struct nameset *ns, const char *s)
{
	size_t j = hash_str(s) % ns->size;

	for (; ns->slot[j]; j = (j + 1) % ns->size)
		if (strcmp(ns_name(ns, j), s) == 0)
			return true;
	return false;
}

struct pending_walk {
	struct keyfs_ctx *ctx;
	const struct keyfs_cred *c;
	struct dirlist *dl;
	size_t first, n;	/* the links' entries: [first, n) */
	struct nameset taken;	/* their names, made at the first pending entry */
	int ret;
};

/* A pending entry is listed under the name the key will have once
 * instantiated, unless a key has that name now (linked with .keyfs/link
 * or added with keyctl since the entry was made): a lookup finds that key
 * first (lookup_in_keyring), so the listing shows the name once, as the
 * key.  The set of names taken is made only for a keyring that has a
 * pending entry. */
static void add_pending(struct node *n, void *arg)
{
	struct pending_walk *w = arg;
	char name[KEYFS_NAME_MAX + 1];

	if (w->ret == 0 && !w->taken.slot) {
		w->ret = ns_init(&w->taken, w->dl, w->n - w->first);
		for (size_t i = w->first; w->ret == 0 && i < w->n; i++)
			ns_add(&w->taken, i);
	}
	if (w->ret == 0 &&
	    name_for_key(n->pk->type, n->pk->desc, false, name, sizeof(name)) == 0 &&
	    !ns_has(&w->taken, name))
		w->ret = dl_add_node(w->ctx, w->c, w->dl, name, n->ino);
}

/* The keyring's pending entries after its links (entries [first, n)). */
static int add_pendings(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			struct dirlist *dl, size_t first, kserial_t keyring)
{
	struct pending_walk w = { .ctx = ctx, .c = c, .dl = dl,
				  .first = first, .n = dl->n };

	node_for_each_pending(ctx->nodes, keyring, add_pending, &w);
	free(w.taken.slot);
	return w.ret;
}

enum link_class { LC_NAMED, LC_USER, LC_KEYRING };

/* A listing shows no expiry; the lookup of the keyring just before
 * described every key in it (kkey_recent). */
#define LINK_PARTS	(KEY_INFO_SIZE | KEY_INFO_RECENT)

/* Describe one link into the list under its plain or typed name; class
 * says whether the name may still have to change.  A key the caller may
 * not view is listed as %#SERIAL (unviewable.c); keys that cannot be
 * described otherwise (gone meanwhile), or whose name passes
 * KEYFS_NAME_MAX, are not listed. */
static int add_link(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    struct dirlist *dl, kserial_t serial, struct key_info *ki,
		    unsigned char *cls)
{
	char name[KEYFS_NAME_MAX + 1];
	struct dl_ent *d;
	bool plain;
	int ret = ctx_describe(ctx, c, serial, LINK_PARTS, ki);

	if (ret < 0 && ret != -EACCES)
		return 0;
	if (ret == -EACCES) {
		name_of_serial(serial, name, sizeof(name));
		d = dl_add(dl, name);
		if (!d)
			return -ENOMEM;
		unviewable_set(serial, &d->tn);
		unviewable_attr(&d->tn, &d->st);
		*cls = LC_NAMED;
		return 0;
	}
	plain = strcmp(ki->type, "user") == 0 || keyfs_is_keyring_type(ki->type);
	/* an empty description has no name to list */
	if (name_for_key(ki->type, ki->desc, false, name, sizeof(name)) < 0 ||
	    !name[0])
		return 0;
	d = dl_add(dl, name);
	if (!d)
		return -ENOMEM;
	tree_set_key(ctx, &d->tn, serial);
	attr_from_key(ki, &d->st);
	/* each its own: a listing of a million keys takes seconds to make */
	d->described_ns = ki->described_ns ? ki->described_ns : keyfs_mono_ns();
	*cls = !plain ? LC_NAMED : keyfs_is_keyring_type(ki->type) ? LC_KEYRING : LC_USER;
	return 0;
}

/* A keyring sharing its description with a user key in the same keyring
 * is listed as %keyring:NAME, and left out when that does not fit.
 * 0 or -ENOMEM. */
static int name_shadowed_keyrings(struct dirlist *dl, size_t first,
				  const unsigned char *cls)
{
	static const char prefix[] = "%keyring:";
	char name[KEYFS_NAME_MAX + 1];
	struct nameset users;
	size_t n = dl->n - first;
	int ret = 0;

	if (ns_init(&users, dl, n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (cls[i] == LC_USER)
			ns_add(&users, first + i);
	for (size_t i = 0; i < n; i++) {
		struct dl_ent *d = &dl->v[first + i];
		const char *old = dl_name(dl, first + i);

		if (cls[i] != LC_KEYRING || !ns_has(&users, old))
			continue;
		if (strlen(old) + sizeof(prefix) - 1 > KEYFS_NAME_MAX) {
			d->name = DL_NONAME;
			continue;
		}
		snprintf(name, sizeof(name), "%s%s", prefix, old);
		d->name = dl_keep_name(dl, name);
		if (d->name == DL_NONAME) {
			ret = -ENOMEM;
			break;
		}
	}
	free(users.slot);
	return ret;
}

static void drop_unnamed(struct dirlist *dl, size_t first)
{
	size_t j = first;

	for (size_t i = first; i < dl->n; i++)
		if (dl->v[i].name != DL_NONAME)
			dl->v[j++] = dl->v[i];
	dl->n = j;
}

/*
 * A directory's listing, made as it is read.  A keyring's links are
 * listed at opendir and described a part at a time as readdir asks for
 * them (and a part ahead, after each reply: fs-dir.c), so that the
 * kernel takes in one part while keyfs describes the next; the listing of
 * 10,000 keys on the kernel backend is 20,000 keyctl calls.  Every other
 * directory is made whole at opendir.  Entries [0, ready) are final:
 * their names and places never change, so offsets stay indexes into the
 * one listing.  Only a keyring's name depends on the other entries (a
 * user key of its name makes it %keyring:NAME), so from the first
 * keyring on nothing is ready until every link is described.
 */
struct tree_listing {
	struct dirlist dl;
	uint64_t ino;
	kserial_t keyring;	/* 0: made whole at open */
	kserial_t *links;
	size_t nlinks, next;	/* described so far: links[0, next) */
	unsigned char *cls;	/* enum link_class of the entries from first on */
	size_t first;
	size_t ready;
	bool keyring_seen;
	bool done;
	int err;	/* a finish that failed half way: the listing is lost */
};

/* Every link described: name the keyrings, then keyfs's pending entries
 * (and under root=, .keyfs). */
static int keyring_finish(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  struct tree_listing *l)
{
	int ret = name_shadowed_keyrings(&l->dl, l->first, l->cls);

	if (ret < 0)
		return ret;
	drop_unnamed(&l->dl, l->first);
	ret = add_pendings(ctx, c, &l->dl, l->first, l->keyring);
	/* root=: the mount root's, not the keyring's in other places */
	if (ret == 0 && l->ino == INO_ROOT)
		ret = dl_add_node(ctx, c, &l->dl, ".keyfs", INO_CTLDIR);
	return ret;
}

/* Links described at once (backend.h's prefetch): about as many as the
 * entries wanted, within these bounds. */
#define PREFETCH_MIN	16
#define PREFETCH_MAX	256

/* Hand the backend the next links to describe; the end of those. */
static size_t prefetch_links(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			     const struct tree_listing *l, size_t want)
{
	size_t m = want > l->ready ? want - l->ready : 0;

	if (m < PREFETCH_MIN)
		m = PREFETCH_MIN;
	if (m > PREFETCH_MAX)
		m = PREFETCH_MAX;
	if (m > l->nlinks - l->next)
		m = l->nlinks - l->next;
	ctx_prefetch(ctx, c, l->links + l->next, m, LINK_PARTS);
	return l->next + m;
}

int tree_listing_fill(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      struct tree_listing *l, size_t want)
{
	struct key_info ki;
	size_t at, prefetched = l->next;
	int ret = 0;

	while (!l->done && !l->err && l->ready < want) {
		if (l->next == l->nlinks) {
			/* names and entries made by half a finish cannot be
			 * told apart from the rest: no second try */
			l->err = keyring_finish(ctx, c, l);
			l->done = l->err == 0;
			if (l->done)
				l->ready = l->dl.n;
			break;
		}
		if (l->next >= prefetched)
			prefetched = prefetch_links(ctx, c, l, want);
		at = l->dl.n;
		ret = add_link(ctx, c, &l->dl, l->links[l->next], &ki,
			       &l->cls[at - l->first]);
		if (ret < 0)
			break;	/* nothing added: the next fill tries again */
		l->next++;
		if (l->dl.n > at && l->cls[at - l->first] == LC_KEYRING)
			l->keyring_seen = true;
		if (!l->keyring_seen)
			l->ready = l->dl.n;
	}
	ctx_prefetch(ctx, c, NULL, 0, 0);
	return ret < 0 ? ret : l->err;
}

/* A keyring's listing: its links now, described later. */
static int keyring_open(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			struct tree_listing *l, kserial_t keyring)
{
	int ret = BACKEND_CALL(ctx, list, c, keyring, &l->links, &l->nlinks);

	if (ret < 0)
		return ret;
	l->cls = malloc(l->nlinks + 1);
	if (!l->cls)
		return -ENOMEM;
	l->keyring = keyring;
	l->first = l->dl.n;
	return 0;
}

void tree_listing_free(struct tree_listing *l)
{
	if (!l)
		return;
	dl_free(&l->dl);
	free(l->links);
	free(l->cls);
	free(l);
}

int tree_listing_open(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      uint64_t ino, struct tree_listing **out)
{
	struct tree_listing *l = calloc(1, sizeof(*l));
	struct tnode tn;
	int ret = l ? tree_node(ctx, ino, &tn) : -ENOMEM;

	if (ret < 0)
		goto fail;
	l->ino = ino;
	ret = dl_dots(&l->dl, ino, tn.kind == T_KEY && ino != INO_ROOT ?
			  ino_of_serial(tn.serial) : ino);
	if (ret < 0)
		goto fail;
	switch (tn.kind) {
	case T_ROOT:
		ret = readdir_root(ctx, c, &l->dl);
		break;
	case T_KEY:
		ret = tree_key_is_keyring(ctx, c, tn.serial);
		if (ret == 0)
			ret = keyring_open(ctx, c, l, tn.serial);
		break;
	case T_BYID:
		ret = readdir_byid(ctx, c, &l->dl);
		break;
	case T_CTLDIR:
		ret = readdir_ctldir(ctx, c, &l->dl);
		break;
	case T_SEARCHDIR:
	case T_SEARCHTYPE:
		break;
	default:
		ret = -ENOTDIR;
	}
	if (ret < 0)
		goto fail;
	l->done = !l->keyring;
	l->ready = l->dl.n;
	*out = l;
	return 0;
fail:
	tree_listing_free(l);
	return ret;
}

bool tree_listing_entry(const struct tree_listing *l, size_t i,
			struct tree_dirent *out)
{
	const struct dl_ent *d;

	if (i >= l->ready)	/* i may be any offset a seekdir gave */
		return false;
	d = &l->dl.v[i];
	out->name = dl_name(&l->dl, i);
	out->tn = d->tn;
	/* a listing keeps inode numbers, never nodes: a node may be removed
	 * and forgotten while the directory is open */
	out->tn.node = NULL;
	out->st = d->st;
	out->described_ns = d->described_ns;
	return true;
}

bool tree_listing_whole(const struct tree_listing *l)
{
	return l->done;
}

int tree_readdir(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		 uint64_t ino, struct tree_dirent **out_alloc, size_t *n)
{
	struct tree_listing *l = NULL;
	int ret = tree_listing_open(ctx, c, ino, &l);

	if (ret == 0)
		ret = tree_listing_fill(ctx, c, l, SIZE_MAX);
	if (ret == 0) {
		*out_alloc = dl_compact(&l->dl);
		*n = l->dl.n;
		ret = *out_alloc ? 0 : -ENOMEM;
	}
	tree_listing_free(l);
	return ret;
}
