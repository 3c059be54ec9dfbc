/* permission.c: possession, permission and key state checks, as the kernel's permission.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "perm.h"

/* ---- possession ---- */

static void enqueue(struct mkey **head, struct mkey **tail, struct mkey *k,
		    unsigned long stamp, int depth)
{
	k->walk_stamp = stamp;
	k->walk_depth = depth;
	k->qnext = NULL;
	if (*tail)
		(*tail)->qnext = k;
	else
		*head = k;
	*tail = k;
}

/*
 * Mark what the caller possesses, as search_process_keyrings() would find
 * it: the process and session keyrings if searchable, and every key with
 * search permission in a keyring reached through searchable, unrevoked
 * keyrings, no more than KEYFS_NEST_MAX levels down.  Breadth first, so a
 * keyring is expanded at the shallowest depth it is reached.
 */
static void possession_mark(struct keyfs_backend *b, const struct keyfs_cred *c)
{
	struct mkey *tops[] = { b->process, b->session };
	struct mkey *head = NULL, *tail = NULL;
	unsigned long stamp = ++b->stamp;

	b->poss_gen = b->gen;
	b->poss_gid = c->gid;
	b->poss_pid = c->pid;
	b->poss_stamp = stamp;
	if (c->uid != b->uid)
		return;
	for (size_t i = 0; i < 2; i++) {
		struct mkey *t = tops[i];

		if (!t || !mem_search_ok(c, t, true) || t->walk_stamp == stamp)
			continue;
		t->poss_stamp = stamp;
		enqueue(&head, &tail, t, stamp, 0);
	}
	while (head) {
		struct mkey *k = head;

		head = k->qnext;
		if (!head)
			tail = NULL;
		if (k->revoked || !k->ring)
			continue;
		for (size_t i = 0; i < k->ring->nlinks; i++) {
			struct mkey *ch = k->ring->links[i];

			if (!mem_search_ok(c, ch, true))
				continue;
			ch->poss_stamp = stamp;
			if (mem_is_keyring(ch) && k->walk_depth < KEYFS_NEST_MAX &&
			    ch->walk_stamp != stamp)
				enqueue(&head, &tail, ch, stamp, k->walk_depth + 1);
		}
	}
}

bool mem_possessed(struct keyfs_backend *b, const struct keyfs_cred *c,
		   struct mkey *key)
{
	if (c->uid != b->uid)
		return false;
	/* Marks hold until the graph or permissions change, for one process:
	 * recomputing them for every operation made each lookup walk every
	 * reachable key.  A process's groups (which a search through the group
	 * class depends on) are taken as fixed while it keeps calling; reading
	 * them for every request would cost as much as the request. */
	if (b->poss_gen != b->gen || b->poss_gid != c->gid ||
	    b->poss_pid != c->pid)
		possession_mark(b, c);
	return key->poss_stamp == b->poss_stamp;
}

int mem_key_perm(struct keyfs_backend *b, const struct keyfs_cred *c,
		 struct mkey *key, unsigned want)
{
	want &= KEYFS_PERM_ALL;
	if (!want)
		return 0;
	return perm_check(c, key->uid, key->gid, key->perm,
			  mem_possessed(b, c, key), want);
}

/* key_validate(), and the negative check of wait_for_key_construction(). */
int mem_key_validate(const struct mkey *k, bool partial)
{
	if (!partial && k->negative)
		return -k->reject_error;
	if (k->revoked)
		return -EKEYREVOKED;
	if (mem_key_expired(k, time(NULL)))
		return -EKEYEXPIRED;
	return 0;
}

int mem_viewable_keys(struct keyfs_backend *b, const struct keyfs_cred *c,
		      struct mkey ***out_alloc, size_t *n)
{
	struct mkey **keys;
	size_t m = 0;
	int ret = mem_keys_sorted(b, &keys);

	if (ret < 0)
		return ret;
	for (size_t i = 0; i < b->nkeys; i++)
		if (mem_key_perm(b, c, keys[i], KEYFS_PERM_VIEW) == 0)
			keys[m++] = keys[i];
	*out_alloc = keys;
	*n = m;
	return 0;
}
