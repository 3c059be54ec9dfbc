/* node.c: the table of nodes keyfs invents, by inode number. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "node.h"

/* Both tables start small and grow (the nodes' doubles when it holds as
 * many nodes as slots, the keyrefs' below): every key looked up leaves a
 * keyref for as long as the kernel holds its inode, so either may hold
 * 100,000 entries, or 10. */
#define TABLE_MIN_SLOTS 64

/* The kernel's lookup count of one key's inode.  Counted so that, after a
 * rename, the inode can stand for the key that took its payload for
 * exactly as long as the kernel may still use it.  One slot of an
 * open-addressed table (linear probing), 16 bytes: an `ls -l` of 10,000
 * keys makes 10,000 of them, which as list cells with a bucket each cost
 * about 45 bytes a key (issue 10). */
struct keyref {
	uint64_t ino;		/* 0: a free slot */
	uint64_t nlookup;
};

/* The keyref table grows by half when it is this full (in eighths), so it
 * is between about half and four fifths full: a power-of-two table would
 * sit half empty just past each doubling. */
#define KEYREF_FULL_EIGHTHS 6

/* A NODE_PLACE node (node_place): where the kernel holds a keyring's
 * directory inode.  Freed as a node (n comes first). */
struct place {
	struct node n;		/* n.serial: the keyring */
	uint64_t parent;	/* the directory the kernel holds it in */
	struct place *snext;	/* the next place in its serial's chain */
};

struct node_table {
	struct node **bucket;
	size_t nbucket, nnode;
	struct keyref *keyref;
	size_t nkeyref_slot, nkeyref;
	/* The NODE_ALIAS and NODE_SEARCHTYPE nodes: few, walked by renames
	 * and searches; unordered. */
	struct node **others;
	size_t nothers, othcap;
	/* The places, chained by their keyring's serial: an `ls -l` of
	 * by-id may make one for every keyring. */
	struct place **place;
	size_t nplace_slot, nplace;
	/* The pending nodes that may still be live (linked through their
	 * pending_key), so that looking a name up does not walk every node:
	 * an instantiated entry stays in the table as long as the kernel
	 * holds its inode (until the file is closed, once its name is
	 * dropped: pending_instantiate), and leaves this list when it is
	 * instantiated; an unlinked one is dropped by the walks below. */
	struct node *pending;
	uint64_t next_ino;
};

/* Inode numbers are sequential (keyfs's own) or serials: both must
 * spread over either table. */
static uint64_t spread(uint64_t ino)
{
	return ino * 0x9E3779B97F4A7C15ULL;
}

/* The slot of ino in a table of nslots (a power of two) slots. */
static size_t slot_of(uint64_t ino, size_t nslots)
{
	return (size_t)(spread(ino) >> 29) & (nslots - 1);
}

/* The home slot of ino in the keyref table, of any size (not a power of
 * two): the top bits of the spread hash, scaled. */
static size_t keyref_home(uint64_t ino, size_t nslots)
{
	return (size_t)(((unsigned __int128)spread(ino) * nslots) >> 64);
}

struct node_table *node_table_new(void)
{
	struct node_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->bucket = calloc(TABLE_MIN_SLOTS, sizeof(*t->bucket));
	t->keyref = calloc(TABLE_MIN_SLOTS, sizeof(*t->keyref));
	t->place = calloc(TABLE_MIN_SLOTS, sizeof(*t->place));
	if (!t->bucket || !t->keyref || !t->place) {
		free(t->bucket);
		free(t->keyref);
		free(t->place);
		free(t);
		return NULL;
	}
	t->nbucket = t->nkeyref_slot = t->nplace_slot = TABLE_MIN_SLOTS;
	t->next_ino = INO_DYN_FIRST;
	return t;
}

/* Double the node table when it is full.  Out of memory it stays as it
 * is: slower, never wrong. */
static void nodes_grow(struct node_table *t)
{
	size_t n = t->nbucket * 2;
	struct node **b, *e, *next;

	if (t->nnode < t->nbucket || !(b = calloc(n, sizeof(*b))))
		return;
	for (size_t i = 0; i < t->nbucket; i++)
		for (e = t->bucket[i]; e; e = next) {
			next = e->hnext;
			e->hnext = b[slot_of(e->ino, n)];
			b[slot_of(e->ino, n)] = e;
		}
	free(t->bucket);
	t->bucket = b;
	t->nbucket = n;
}

static void pending_key_free(struct pending_key *pk)
{
	if (!pk)
		return;
	free(pk->type);
	free(pk->desc);
	free(pk->creator_groups);
	free(pk);
}

static void node_free(struct node *n)
{
	pending_key_free(n->pk);
	free(n);
}

/* Take n off the pending list (it links through n->pk). */
static void pending_unlist(struct node_table *t, struct node *n)
{
	for (struct node **pp = &t->pending; *pp; pp = &(*pp)->pk->pnext)
		if (*pp == n) {
			*pp = n->pk->pnext;
			return;
		}
}

void node_instantiated(struct node_table *t, struct node *n, kserial_t serial)
{
	pending_unlist(t, n);
	n->serial = serial;
	pending_key_free(n->pk);
	n->pk = NULL;
}

void node_table_free(struct node_table *t)
{
	struct node *n, *next;

	if (!t)
		return;
	for (size_t i = 0; i < t->nbucket; i++)
		for (n = t->bucket[i]; n; n = next) {
			next = n->hnext;
			node_free(n);
		}
	free(t->bucket);
	free(t->keyref);
	free(t->others);
	free(t->place);
	free(t);
}

struct node *node_get(struct node_table *t, uint64_t ino)
{
	struct node *n;

	for (n = t->bucket[slot_of(ino, t->nbucket)]; n; n = n->hnext)
		if (n->ino == ino)
			return n;
	return NULL;
}

/* Double the place index when it holds as many places as slots; out of
 * memory it stays as it is. */
static void places_grow(struct node_table *t)
{
	size_t n = t->nplace_slot * 2;
	struct place **v, *p, *next;

	if (t->nplace < t->nplace_slot || !(v = calloc(n, sizeof(*v))))
		return;
	for (size_t i = 0; i < t->nplace_slot; i++)
		for (p = t->place[i]; p; p = next) {
			next = p->snext;
			p->snext = v[slot_of((uint64_t)p->n.serial, n)];
			v[slot_of((uint64_t)p->n.serial, n)] = p;
		}
	free(t->place);
	t->place = v;
	t->nplace_slot = n;
}

static struct place **place_chain(struct node_table *t, kserial_t serial)
{
	return &t->place[slot_of((uint64_t)serial, t->nplace_slot)];
}

/* Into the table, and into the pending list, the place index or the
 * others; -ENOMEM. */
static int node_hash(struct node_table *t, struct node *n)
{
	size_t b;

	if (n->kind == NODE_PLACE) {
		struct place *p = (struct place *)n, **chain;

		places_grow(t);
		chain = place_chain(t, n->serial);
		p->snext = *chain;
		*chain = p;
		t->nplace++;
	} else if (n->kind != NODE_PENDING) {
		struct node **v = grow_room(t->others, t->nothers, &t->othcap,
					    16, SIZE_MAX, sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->others = v;
	}
	nodes_grow(t);
	b = slot_of(n->ino, t->nbucket);
	n->hnext = t->bucket[b];
	t->bucket[b] = n;
	t->nnode++;
	if (n->kind == NODE_PENDING) {
		n->pk->pnext = t->pending;
		t->pending = n;
	} else if (n->kind != NODE_PLACE) {
		t->others[t->nothers++] = n;
	}
	return 0;
}

struct node *node_new(struct node_table *t, enum node_kind kind,
		      const char *type, const char *desc)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->kind = (uint8_t)kind;
	if (type) {
		n->pk = calloc(1, sizeof(*n->pk));
		if (!n->pk || !(n->pk->type = strdup(type)) ||
		    (desc && !(n->pk->desc = strdup(desc)))) {
			node_free(n);
			return NULL;
		}
	}
	n->ino = t->next_ino++;
	if (node_hash(t, n) < 0) {
		node_free(n);
		return NULL;
	}
	return n;
}

/* The slot holding ino, or the free slot where it would go. */
static struct keyref *keyref_slot(struct node_table *t, uint64_t ino)
{
	size_t i = keyref_home(ino, t->nkeyref_slot);

	while (t->keyref[i].ino && t->keyref[i].ino != ino)
		if (++i == t->nkeyref_slot)
			i = 0;
	return &t->keyref[i];
}

/* Grow the keyref table by half when it is full enough.  Out of memory it
 * stays as it is (it always keeps a free slot: see node_key_ref). */
static void keyrefs_grow(struct node_table *t)
{
	size_t n = t->nkeyref_slot + t->nkeyref_slot / 2;
	struct keyref *old = t->keyref, *v;
	size_t nold = t->nkeyref_slot;

	if ((t->nkeyref + 1) * 8 < t->nkeyref_slot * KEYREF_FULL_EIGHTHS ||
	    !(v = calloc(n, sizeof(*v))))
		return;
	t->keyref = v;
	t->nkeyref_slot = n;
	for (size_t i = 0; i < nold; i++)
		if (old[i].ino)
			*keyref_slot(t, old[i].ino) = old[i];
	free(old);
}

void node_key_ref(struct node_table *t, uint64_t ino)
{
	struct node *n = node_get(t, ino);
	struct keyref *r;

	if (n) {
		n->nlookup++;	/* an alias the kernel looked up again */
		return;
	}
	r = keyref_slot(t, ino);
	if (!r->ino) {
		keyrefs_grow(t);
		/* Out of memory, a table with one free slot left keeps it, so
		 * that every probe ends: the count is lost, and such an
		 * inode, renamed away, then stands for nothing (ENOKEY), as
		 * before counts were kept. */
		if (t->nkeyref + 2 > t->nkeyref_slot)
			return;
		r = keyref_slot(t, ino);
		r->ino = ino;
		t->nkeyref++;
	}
	r->nlookup++;
}

uint64_t node_key_nlookup(struct node_table *t, uint64_t ino)
{
	return keyref_slot(t, ino)->nlookup;
}

/* Whether slot j lies cyclically in (i, k]: an entry at k whose home is
 * there may not move back to the hole at i. */
static bool keyref_between(size_t i, size_t j, size_t k)
{
	return i <= k ? i < j && j <= k : i < j || j <= k;
}

/* Empty slot i, moving back the entries of the run after it that would
 * no longer be found past the hole (linear probing's deletion). */
static void keyref_remove(struct node_table *t, struct keyref *r)
{
	size_t i = (size_t)(r - t->keyref), k = i;

	for (;;) {
		if (++k == t->nkeyref_slot)
			k = 0;
		if (!t->keyref[k].ino)
			break;
		if (keyref_between(i, keyref_home(t->keyref[k].ino, t->nkeyref_slot), k))
			continue;
		t->keyref[i] = t->keyref[k];
		i = k;
	}
	memset(&t->keyref[i], 0, sizeof(t->keyref[i]));
	t->nkeyref--;
}

static void keyref_forget(struct node_table *t, uint64_t ino, uint64_t count)
{
	struct keyref *r = keyref_slot(t, ino);

	if (!r->ino)
		return;
	if (count < r->nlookup) {
		r->nlookup -= count;
		return;
	}
	keyref_remove(t, r);
}

void node_renamed(struct node_table *t, uint64_t ino, kserial_t from,
		  kserial_t to, bool gone)
{
	struct keyref *r;
	struct node *n;

	/* Inodes that stood for from (earlier renames onto it) follow its
	 * payload: the kernel moved their names along with it. */
	for (size_t i = 0; i < t->nothers; i++)
		if (t->others[i]->kind == NODE_ALIAS && t->others[i]->serial == from)
			t->others[i]->serial = to;
	if (!gone)
		return;
	n = node_get(t, ino);
	if (n) {
		n->serial = to;
		return;
	}
	r = keyref_slot(t, ino);
	if (!r->ino)
		return;		/* the kernel holds no such inode */
	n = calloc(1, sizeof(*n));
	if (!n)
		return;
	n->kind = NODE_ALIAS;
	n->ino = ino;
	n->serial = to;
	n->nlookup = r->nlookup;	/* the count moves to the alias */
	if (node_hash(t, n) < 0) {
		free(n);	/* the keyref keeps the count */
		return;
	}
	keyref_forget(t, ino, n->nlookup);
}

static void place_unchain(struct node_table *t, struct place *p)
{
	for (struct place **pp = place_chain(t, p->n.serial); *pp; pp = &(*pp)->snext)
		if (*pp == p) {
			*pp = p->snext;
			t->nplace--;
			return;
		}
}

/* A new place of keyring serial in directory parent, as inode ino (0:
 * one of keyfs's own); NULL out of memory. */
static struct place *place_new(struct node_table *t, kserial_t serial,
			       uint64_t ino, uint64_t parent)
{
	struct place *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->n.kind = NODE_PLACE;
	p->n.serial = serial;
	p->n.ino = ino ? ino : t->next_ino++;
	p->parent = parent;
	if (node_hash(t, &p->n) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

uint64_t node_place(struct node_table *t, kserial_t serial, uint64_t own,
		    uint64_t parent)
{
	struct place *p, *home = NULL;

	for (p = *place_chain(t, serial); p; p = p->snext) {
		if (p->n.serial != serial)
			continue;
		if (p->parent == parent)
			return p->n.ino;
		if (p->n.ino == own)
			home = p;
	}
	/* The own inode goes where the kernel holds it nowhere else: not
	 * counted (a reply that never reached it) or not held at all (nor
	 * as another node: a serial the kernel gave again after a renamed
	 * key's alias took it). */
	if (home && home->n.nlookup == 0) {
		home->parent = parent;
		return own;
	}
	if (!home && own != INO_ROOT && !keyref_slot(t, own)->ino &&
	    !node_get(t, own))
		p = place_new(t, serial, own, parent);
	else
		p = place_new(t, serial, 0, parent);
	return p ? p->n.ino : own;
}

void node_place_moved(struct node_table *t, kserial_t serial, uint64_t from,
		      uint64_t to)
{
	for (struct place *p = *place_chain(t, serial); p; p = p->snext)
		if (p->n.serial == serial && p->parent == from) {
			p->parent = to;
			return;
		}
}

void node_for_each_place(struct node_table *t, kserial_t serial,
			 void (*fn)(uint64_t ino, void *arg), void *arg)
{
	for (struct place *p = *place_chain(t, serial), *next; p; p = next) {
		next = p->snext;
		if (p->n.serial == serial)
			fn(p->n.ino, arg);
	}
}

struct node *node_find_pending(struct node_table *t, kserial_t parent,
			       const char *type, const char *desc)
{
	for (struct node **pp = &t->pending, *n; (n = *pp);) {
		if (!node_pending_live(n)) {
			*pp = n->pk->pnext;	/* unlinked */
			continue;
		}
		if (n->pk->parent == parent && strcmp(n->pk->type, type) == 0 &&
		    strcmp(n->pk->desc, desc) == 0)
			return n;
		pp = &n->pk->pnext;
	}
	return NULL;
}

struct node *node_find_searchtype(struct node_table *t, const char *type)
{
	for (size_t i = 0; i < t->nothers; i++)
		if (t->others[i]->kind == NODE_SEARCHTYPE &&
		    strcmp(t->others[i]->pk->type, type) == 0)
			return t->others[i];
	return NULL;
}

void node_for_each_pending(struct node_table *t, kserial_t parent,
			   void (*fn)(struct node *n, void *arg), void *arg)
{
	for (struct node *n = t->pending; n; n = n->pk->pnext)
		if (node_pending_live(n) && n->pk->parent == parent)
			fn(n, arg);
}

static void node_unhash(struct node_table *t, struct node *n)
{
	struct node **pp;

	for (pp = &t->bucket[slot_of(n->ino, t->nbucket)]; *pp; pp = &(*pp)->hnext)
		if (*pp == n) {
			*pp = n->hnext;
			t->nnode--;
			break;
		}
	if (n->kind == NODE_PENDING) {
		if (n->pk)
			pending_unlist(t, n);
		return;
	}
	if (n->kind == NODE_PLACE) {
		place_unchain(t, (struct place *)n);
		return;
	}
	for (size_t i = 0; i < t->nothers; i++)
		if (t->others[i] == n) {
			t->others[i] = t->others[--t->nothers];
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
