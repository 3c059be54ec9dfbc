/* tree.h: what each inode is, and names in directories: lookup, listing, paths. */
#ifndef KEYFS_TREE_H
#define KEYFS_TREE_H

#include <sys/stat.h>
#include "ctx.h"
#include "node.h"

enum tkind {
	T_ROOT,		/* the tree of SPEC §2 (without root=) */
	T_KEY,		/* a key or keyring: serial */
	T_BYID,
	T_CTLDIR,	/* .keyfs/ */
	T_SEARCHDIR,	/* .keyfs/search/ */
	T_SEARCHTYPE,	/* .keyfs/search/TYPE/: node */
	T_LINK,		/* @s @u @us @p: target */
	T_CTLFILE,	/* .keyfs/NAME: ctl */
	T_PENDING,	/* a created key not yet instantiated: node */
};

/* One inode, classified.  Pointers borrow from the context. */
struct tnode {
	enum tkind kind;
	uint64_t ino;
	kserial_t serial;	/* T_KEY; T_PENDING once instantiated */
	struct node *node;	/* T_PENDING, T_SEARCHTYPE */
	int ctl;		/* T_CTLFILE: enum ctl_file */
	const char *target;	/* T_LINK */
	bool unviewable;	/* T_KEY: listed as %#SERIAL (unviewable.c) */
};

/* The inode of a key (1 for the root= keyring). */
/* The serial of the mount's keyring for @s @u @us @p (enum
 * keyfs_special): the one its tree shows.  -ENOKEY when there is none,
 * -EINVAL for any other which. */
int tree_special(const struct keyfs_ctx *ctx, int which, kserial_t *out);

uint64_t tree_ino(const struct keyfs_ctx *ctx, kserial_t serial);


/* For listing.c: out is key serial; the root's keyring directories, by
 * index (NULL past the last; *serial 0 where the keyring is missing);
 * 0 if serial is a keyring the caller may describe, else -ENOTDIR or the
 * describe's error. */
void tree_set_key(const struct keyfs_ctx *ctx, struct tnode *out,
		  kserial_t serial);
const char *tree_root_dir(const struct keyfs_ctx *ctx, size_t i,
			  kserial_t *serial);
/* Whether no key has this serial any more, as keyfs (the mounter) sees
 * it: a negative or an invalidated key still describes. */
bool tree_key_gone(struct keyfs_ctx *ctx, kserial_t serial);
int tree_key_is_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			kserial_t serial);

/* Classify an inode number.  -ESTALE for one keyfs does not know. */
int tree_node(struct keyfs_ctx *ctx, uint64_t ino, struct tnode *out);

/* Look name up in directory parent.  A pending node found or made is
 * returned in out; the caller takes a lookup reference on it by replying. */
int tree_lookup(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		uint64_t parent, const char *name, struct tnode *out);

/* The serial a directory entry name stands for in keyring, as tree_lookup
 * finds it (user, then keyring, then default_type for plain names). */
int tree_find_key(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		  kserial_t keyring, const char *name, kserial_t *out);

struct tree_dirent {
	const char *name;	/* in the listing's own block */
	struct tnode tn;
	struct stat st;
	/* A key's: CLOCK_MONOTONIC, when its attributes were described (at
	 * the listing, or a moment before it: key_info's); 0: other nodes */
	int64_t described_ns;
};

/* All entries of directory ino, "." and ".." first, with attributes, in
 * one pass (listing.c).  *out_alloc belongs to the caller (free()). */
int tree_readdir(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		 uint64_t ino, struct tree_dirent **out_alloc, size_t *n);

/* A directory's listing as it is read (listing.c): "." and ".." first,
 * a keyring's links listed at open and described by tree_listing_fill.
 * Owned by the opener; tree_listing_free. */
struct tree_listing;
int tree_listing_open(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      uint64_t ino, struct tree_listing **out);
/* Describe links until entry want is final, or the listing is whole. */
int tree_listing_fill(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      struct tree_listing *l, size_t want);
/* Entry i if it is final (name valid until the next fill), else false. */
bool tree_listing_entry(const struct tree_listing *l, size_t i,
			struct tree_dirent *out);
/* Whether every entry is final (no fill will add one). */
bool tree_listing_whole(const struct tree_listing *l);
void tree_listing_free(struct tree_listing *l);

/* Where a path's last name was found, for telling the kernel to forget it. */
struct tree_entry {
	uint64_t parent;		/* 0: the path named the root */
	char name[KEYFS_NAME_MAX + 1];
};

/* Resolve a path relative to the mount root (entry names, '/'-separated,
 * as control files take them) to a key.  "" is the root keyring (root=);
 * a path to something that is not a key is -EINVAL.  where may be NULL. */
int tree_resolve(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		 const char *path, kserial_t *out, struct tree_entry *where);

/* Keys the caller may not view (unviewable.c): their inode numbers, the
 * node for one, its stat, and the lookup of "%#SERIAL" in keyring. */
bool unviewable_ino(uint64_t ino, kserial_t *serial);
void unviewable_set(kserial_t serial, struct tnode *out);
void unviewable_attr(const struct tnode *tn, struct stat *st);
int unviewable_lookup(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      kserial_t keyring, kserial_t serial, struct tnode *out);

#endif
