/* node.h: inode numbers, and the nodes keyfs invents (virtual files, pending keys). */
#ifndef KEYFS_NODE_H
#define KEYFS_NODE_H

#include <stdint.h>
#include "keyfs.h"
#include "ctlfiles.h"

/*
 * A key's inode number is its serial (positive int32), except serial 1:
 * inode 1 is the mount root (FUSE fixes it), so key 1 takes INO_SERIAL1.
 * Everything keyfs invents lives from 2^32 up, so it never meets a
 * serial: fixed virtual nodes first, then dynamic ones.
 */
#define INO_ROOT	1ULL
#define INO_VIRT	(1ULL << 32)

enum {
	INO_BYID = INO_VIRT + 1,
	INO_SERIAL1 = INO_VIRT + 2,	/* the key with serial 1 (a memory store's) */
	INO_CTLDIR,
	INO_SEARCHDIR,
	INO_LINK_S,		/* @s -> session; @u @us @p follow, numbered
				 * by their place in keyfs_specials */
	INO_CTL_FIRST = INO_VIRT + 64,	/* + enum ctl_file */
	INO_DYN_FIRST = INO_VIRT + 4096,
};

/* INO_UNVIEWABLE + serial: a key listed as %#SERIAL to a caller who may
 * not view it (unviewable.c).  Dynamic nodes count up from INO_DYN_FIRST
 * and never reach it. */
#define INO_UNVIEWABLE	(1ULL << 33)

/* The inode number of key serial, root_key aside (tree_ino). */
static inline uint64_t ino_of_serial(kserial_t serial)
{
	return serial == 1 ? INO_SERIAL1 : (uint64_t)serial;
}

enum node_kind {
	NODE_PENDING,		/* a created key with no payload yet */
	NODE_SEARCHTYPE,	/* .keyfs/search/TYPE */
	NODE_ALIAS,		/* a gone key's inode that stands for another key */
	NODE_PLACE,		/* a keyring's directory inode in one directory */
};

/* What a pending entry will be, kept until it is instantiated (then
 * freed: 100,000 creates must not keep 100,000 of these, issue 10); a
 * NODE_SEARCHTYPE node keeps only its type here.  Owned by its node. */
struct pending_key {
	struct node *pnext;	/* NODE_PENDING: the table's list of them */
	char *type;		/* owned */
	char *desc;		/* owned; NODE_PENDING only */
	kserial_t parent;	/* the keyring it will be linked into */
	uid_t uid;
	gid_t gid;
	uint32_t perm;		/* applied at instantiation when perm_set */
	bool perm_set;
	bool perm_from_mode;	/* perm is the create mode's: kept only where it can be set */
	time_t expiry;		/* absolute; applied at instantiation when nonzero */
	struct timespec mtime, ctime;
	/* Who made it (pending.c).  The key is made with these credentials,
	 * whoever writes it; taken counts removals and moves by anyone
	 * else, which make the creator's open files fail at close. */
	struct keyfs_cred creator;
	gid_t *creator_groups;	/* owned (malloc'd, creator.ngroups of them) */
	unsigned taken;
};

/* A node keyfs made up.  Owned by the node table.  Small (40 bytes): an
 * instantiated entry stays as long as the kernel holds its inode. */
struct node {
	uint64_t ino;
	uint64_t nlookup;	/* the kernel's references (lookup counts) */
	struct node *hnext;	/* hash chain */
	/* NODE_PENDING until instantiated, and NODE_SEARCHTYPE; else NULL */
	struct pending_key *pk;
	/* NODE_PENDING: the key, once instantiated; 0 before.  NODE_ALIAS:
	 * the key it stands for */
	kserial_t serial;
	uint8_t kind;		/* enum node_kind */
	bool unlinked;		/* NODE_PENDING: removed before instantiation */
	/* NODE_PENDING: the kernel knows it by the name it is listed under
	 * (not a typed or otherwise spelled one), so that name can be
	 * dropped once it is instantiated (pending_instantiate) */
	bool listed_name;
};

struct node_table;

struct node_table *node_table_new(void);
void node_table_free(struct node_table *t);

struct node *node_get(struct node_table *t, uint64_t ino);
/* A new node with a fresh inode number and nlookup 0; NULL on ENOMEM.
 * type and desc are copied. */
struct node *node_new(struct node_table *t, enum node_kind kind,
		      const char *type, const char *desc);
/* The kernel took one more reference on key inode ino (a lookup, a
 * readdirplus entry); node_forget gives it back. */
void node_key_ref(struct node_table *t, uint64_t ino);
/* The kernel's references to key inode ino counted by node_key_ref (0:
 * none, or an alias node holds them). */
uint64_t node_key_nlookup(struct node_table *t, uint64_t ino);
/* A rename gave key from's payload to key to and unlinked from (ino is
 * from's inode): every inode standing for from now stands for to, and when
 * from is gone (it was linked nowhere else) so does ino, for as long as the
 * kernel holds it, since the kernel keeps ino under the new name. */
void node_renamed(struct node_table *t, uint64_t ino, kserial_t from,
		  kserial_t to, bool gone);

/*
 * The kernel keeps one parent for a directory inode: handed a keyring's
 * inode under a second directory while it caches it under a first (by-id
 * and the keyring that links it; two keyrings linking one; the user
 * keyring under user-session), it moves its cached entry across, which
 * takes the first directory's lock without waiting and fails with ESTALE
 * when that is held (by a create there, or a rename anywhere in the
 * mount).  So a keyring is a directory inode of its own in each directory
 * the kernel holds it in: its own inode (own: its serial's, or the mount
 * root's) in the first, and one of keyfs's in every other, each a
 * NODE_PLACE node that lives as long as the kernel holds it.  The inode
 * to give the kernel for keyring serial in directory parent; own when no
 * memory is left.  The mount root is nobody's child: own INO_ROOT is
 * never given.
 */
uint64_t node_place(struct node_table *t, kserial_t serial, uint64_t own,
		    uint64_t parent);
/* The kernel moved its entry for keyring serial from directory from to
 * directory to (a rename). */
void node_place_moved(struct node_table *t, kserial_t serial, uint64_t from,
		      uint64_t to);
/* Calls fn for the inode of every place of keyring serial. */
void node_for_each_place(struct node_table *t, kserial_t serial,
			 void (*fn)(uint64_t ino, void *arg), void *arg);

/* The live pending entry of this type and description in keyring parent. */
struct node *node_find_pending(struct node_table *t, kserial_t parent,
			       const char *type, const char *desc);
/* The NODE_SEARCHTYPE node for type, if one exists. */
struct node *node_find_searchtype(struct node_table *t, const char *type);
/* Calls fn for every live pending entry of keyring parent. */
void node_for_each_pending(struct node_table *t, kserial_t parent,
			   void (*fn)(struct node *n, void *arg), void *arg);
/* Drop n references; frees the node when none are left and it is no
 * longer needed (a pending entry that was instantiated or unlinked). */
void node_forget(struct node_table *t, uint64_t ino, uint64_t n);
/* An instantiated entry's pending_key goes: only the key is left. */
void node_instantiated(struct node_table *t, struct node *n, kserial_t serial);
/* The removals and moves by others a pending entry has seen (0 once
 * instantiated). */
static inline unsigned pending_taken(const struct node *n)
{
	return n->pk ? n->pk->taken : 0;
}
/* Whether a pending node still stands for an entry of its own. */
static inline bool node_pending_live(const struct node *n)
{
	return n->kind == NODE_PENDING && n->serial == 0 && !n->unlinked;
}

#endif
