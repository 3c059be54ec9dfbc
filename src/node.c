/* node.c: the table of nodes keyfs invents, by inode number. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

#define NODE_BUCKETS 256	/* pending entries are few; a small table is plenty */

struct node_table {
	struct node *bucket[NODE_BUCKETS];
	struct node *all;	/* every node, for the per-keyring walks */
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
	return n;
}

struct node *node_add_alias(struct node_table *t, uint64_t ino, kserial_t target)
{
	struct node *n = node_get(t, ino);

	if (n) {
		n->serial = target;	/* renamed over twice: the latest wins */
		return n;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->kind = NODE_ALIAS;
	n->ino = ino;
	n->serial = target;
	/* Lives until the kernel's forget, whatever count it carries. */
	n->nlookup = 1;
	node_hash(t, n);
	return n;
}

struct node *node_find_pending(struct node_table *t, kserial_t parent,
			       const char *type, const char *desc)
{
	for (struct node *n = t->all; n; n = n->lnext)
		if (node_pending_live(n) && n->parent == parent &&
		    strcmp(n->type, type) == 0 && strcmp(n->desc, desc) == 0)
			return n;
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
	for (struct node *n = t->all; n; n = n->lnext)
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
}

void node_forget(struct node_table *t, uint64_t ino, uint64_t count)
{
	struct node *n = node_get(t, ino);

	if (!n)
		return;
	n->nlookup = count >= n->nlookup || n->kind == NODE_ALIAS ? 0 : n->nlookup - count;
	/* A live pending entry is listed with no reference from the kernel,
	 * so it stays until it is instantiated, unlinked or unmounted. */
	if (n->nlookup == 0 && !node_pending_live(n)) {
		node_unhash(t, n);
		node_free(n);
	}
}
