/* node.c: the table of nodes keyfs invents, by inode number. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

#define NODE_BUCKETS 256	/* pending entries are few; a small table is plenty */
#define KEYREF_BUCKETS 1024	/* one per key inode the kernel holds */

/* The kernel's lookup count of one key's inode.  Counted so that, after a
 * rename, the inode can stand for the key that took its payload for
 * exactly as long as the kernel may still use it. */
struct keyref {
	uint64_t ino;
	uint64_t nlookup;
	struct keyref *next;
};

struct node_table {
	struct node *bucket[NODE_BUCKETS];
	struct keyref *keyref[KEYREF_BUCKETS];
	struct node *all;	/* every node, for the per-keyring walks */
	/* The pending nodes that may still be live, so that looking a name up
	 * does not walk every node: an instantiated entry stays in the table
	 * as long as the kernel holds its inode (100,000 creates leave 100,000
	 * of them).  A node leaves this list once it is no longer live, which
	 * it never becomes again; the walks below drop such nodes. */
	struct node *pending;
	uint64_t next_ino;
};

static unsigned bucket_of(uint64_t ino)
{
	return (unsigned)(ino ^ (ino >> 17)) % NODE_BUCKETS;
}

struct node_table *node_table_new(void)
{
	struct node_table *t = calloc(1, sizeof(*t));

	if (t)
		t->next_ino = INO_DYN_FIRST;
	return t;
}

static void node_free(struct node *n)
{
	free(n->type);
	free(n->desc);
	free(n->creator_groups);
	free(n);
}

void node_table_free(struct node_table *t)
{
	struct node *n, *next;

	if (!t)
		return;
	for (n = t->all; n; n = next) {
		next = n->lnext;
		node_free(n);
	}
	for (size_t i = 0; i < KEYREF_BUCKETS; i++)
		for (struct keyref *r = t->keyref[i], *rnext; r; r = rnext) {
			rnext = r->next;
			free(r);
		}
	free(t);
}

struct node *node_get(struct node_table *t, uint64_t ino)
{
	struct node *n;

	for (n = t->bucket[bucket_of(ino)]; n; n = n->hnext)
		if (n->ino == ino)
			return n;
	return NULL;
}

static void node_hash(struct node_table *t, struct node *n)
{
	unsigned b = bucket_of(n->ino);

	n->hnext = t->bucket[b];
	t->bucket[b] = n;
	n->lnext = t->all;
	t->all = n;
}

struct node *node_new(struct node_table *t, enum node_kind kind,
		      const char *type, const char *desc)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->kind = kind;
	n->type = type ? strdup(type) : NULL;
	n->desc = desc ? strdup(desc) : NULL;
	if ((type && !n->type) || (desc && !n->desc)) {
		node_free(n);
		return NULL;
	}
	n->ino = t->next_ino++;
	node_hash(t, n);
	if (kind == NODE_PENDING) {
		n->pnext = t->pending;
		t->pending = n;
	}
	return n;
}

static struct keyref **keyref_slot(struct node_table *t, uint64_t ino)
{
	struct keyref **pp = &t->keyref[(ino ^ (ino >> 13)) % KEYREF_BUCKETS];

	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->next;
	return pp;
}

void node_key_ref(struct node_table *t, uint64_t ino)
{
	struct node *n = node_get(t, ino);
	struct keyref **pp;

	if (n) {
		n->nlookup++;	/* an alias the kernel looked up again */
		return;
	}
	pp = keyref_slot(t, ino);
	if (!*pp) {
		/* Out of memory the count is lost: such an inode, renamed
		 * away, then stands for nothing (ENOKEY), as before counts. */
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return;
		(*pp)->ino = ino;
	}
	(*pp)->nlookup++;
}

static void keyref_forget(struct node_table *t, uint64_t ino, uint64_t count)
{
	struct keyref **pp = keyref_slot(t, ino), *r = *pp;

	if (!r)
		return;
	if (count < r->nlookup) {
		r->nlookup -= count;
		return;
	}
	*pp = r->next;
	free(r);
}

void node_renamed(struct node_table *t, uint64_t ino, kserial_t from,
		  kserial_t to, bool gone)
{
	struct keyref **pp;
	struct node *n;

	/* Inodes that stood for from (earlier renames onto it) follow its
	 * payload: the kernel moved their names along with it. */
	for (n = t->all; n; n = n->lnext)
		if (n->kind == NODE_ALIAS && n->serial == from)
			n->serial = to;
	if (!gone)
		return;
	n = node_get(t, ino);
	if (n) {
		n->serial = to;
		return;
	}
	pp = keyref_slot(t, ino);
	if (!*pp)
		return;		/* the kernel holds no such inode */
	n = calloc(1, sizeof(*n));
	if (!n)
		return;
	n->kind = NODE_ALIAS;
	n->ino = ino;
	n->serial = to;
	n->nlookup = (*pp)->nlookup;	/* the count moves to the alias */
	keyref_forget(t, ino, n->nlookup);
	node_hash(t, n);
}

struct node *node_find_pending(struct node_table *t, kserial_t parent,
			       const char *type, const char *desc)
{
	for (struct node **pp = &t->pending, *n; (n = *pp);) {
		if (!node_pending_live(n)) {
			*pp = n->pnext;		/* instantiated or unlinked */
			continue;
		}
		if (n->parent == parent && strcmp(n->type, type) == 0 &&
		    strcmp(n->desc, desc) == 0)
			return n;
		pp = &n->pnext;
	}
	return NULL;
}

struct node *node_find_searchtype(struct node_table *t, const char *type)
{
	for (struct node *n = t->all; n; n = n->lnext)
		if (n->kind == NODE_SEARCHTYPE && strcmp(n->type, type) == 0)
			return n;
	return NULL;
}

void node_for_each_pending(struct node_table *t, kserial_t parent,
			   void (*fn)(struct node *n, void *arg), void *arg)
{
	for (struct node *n = t->pending; n; n = n->pnext)
		if (node_pending_live(n) && n->parent == parent)
			fn(n, arg);
}

static void node_unhash(struct node_table *t, struct node *n)
{
	struct node **pp;

	for (pp = &t->bucket[bucket_of(n->ino)]; *pp; pp = &(*pp)->hnext)
		if (*pp == n) {
			*pp = n->hnext;
			break;
		}
	for (pp = &t->all; *pp; pp = &(*pp)->lnext)
		if (*pp == n) {
			*pp = n->lnext;
			break;
		}
	for (pp = &t->pending; n->kind == NODE_PENDING && *pp;
	     pp = &(*pp)->pnext)
		if (*pp == n) {
			*pp = n->pnext;
			break;
		}
}

void node_forget(struct node_table *t, uint64_t ino, uint64_t count)
{
	struct node *n = node_get(t, ino);

	if (!n) {
		keyref_forget(t, ino, count);
		return;
	}
	n->nlookup = count >= n->nlookup ? 0 : n->nlookup - count;
	/* A live pending entry is listed with no reference from the kernel,
	 * so it stays until it is instantiated, unlinked or unmounted. */
	if (n->nlookup == 0 && !node_pending_live(n)) {
		node_unhash(t, n);
		node_free(n);
	}
}
