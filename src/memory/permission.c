/* permission.c: possession, permission and key state checks, as the kernel's permission.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "perm.h"

/* ---- possession ---- */

/* A keyring a possession path may pass through: searchable (as possessed,
 * since the path makes it so) and still holding its links. */
static bool poss_passable(const struct keyfs_cred *c, const struct mkey *k)
{
	return !k->revoked && k->ring && mem_search_ok(c, k, true);
}

/* The keyrings met on the way up, level by level; most walks fit in buf. */
#define POSS_BUF	32
struct poss_set {
	struct mkey *buf[POSS_BUF];
	struct mkey **keys;
	size_t n, cap;
	bool failed;
};

/* Has set[0..n) k already? */
static bool poss_seen(struct mkey *const *set, size_t n, const struct mkey *k)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == k)
			return true;
	return false;
}

/* Add from's passable parents not yet in the set; true when one is a top
 * (the search ends), false also when memory runs out (not possessed, which
 * only ever refuses). */
static bool poss_climb(struct keyfs_backend *b, const struct keyfs_cred *c,
		       const struct mkey *from, struct poss_set *s)
{
	for (size_t p = 0; p < from->nparents; p++) {
		struct mkey *up = mkey_parents(from)[p];

		if (!poss_passable(c, up) || poss_seen(s->keys, s->n, up))
			continue;
		if (up == b->process || up == b->session)
			return true;
		if (s->n == s->cap) {
			struct mkey **more = malloc(2 * s->cap * sizeof(*more));

			if (!more) {
				s->failed = true;
				return false;
			}
			memcpy(more, s->keys, s->n * sizeof(*more));
			if (s->keys != s->buf)
				free(s->keys);
			s->keys = more;
			s->cap *= 2;
		}
		s->keys[s->n++] = up;
	}
	return false;
}

/*
 * Does the caller possess key, as search_process_keyrings() would find it?
 * The kernel walks down from the process and session keyrings through
 * searchable, unrevoked keyrings, no more than KEYFS_NEST_MAX levels, and
 * every key with search permission it meets is possessed.  Walking that
 * down for every request costs every reachable key, and a cache of the
 * result goes stale with every change (each create re-walked 100,000 keys)
 * and serves one caller at a time.  So the same question is asked upwards:
 * breadth first from key through its parents (a handful: keys are rarely
 * linked far from a top) to a top within KEYFS_NEST_MAX + 1 links.  The
 * shortest such path is the one the kernel's breadth-first walk takes, so
 * the answers are the same; nothing is kept, so nothing goes stale, any
 * number of callers can ask, and the walk writes nothing in the model.
 */
bool mem_possessed(struct keyfs_backend *b, const struct keyfs_cred *c,
		   struct mkey *key)
{
	struct poss_set s = { .cap = POSS_BUF };
	bool found;
	size_t lo = 0;

	if (c->uid != b->uid || !mem_search_ok(c, key, true))
		return false;
	if (key == b->process || key == b->session)
		return true;
	s.keys = s.buf;
	/* A top among key's parents is depth 0; one reached from the set's
	 * level d is d + 1 above key's parent, and must be <= NEST_MAX. */
	found = poss_climb(b, c, key, &s);
	for (int depth = 1; depth <= KEYFS_NEST_MAX && !found && !s.failed &&
	     lo < s.n; depth++) {
		size_t hi = s.n;

		for (size_t i = lo; i < hi && !found && !s.failed; i++)
			found = poss_climb(b, c, s.keys[i], &s);
		lo = hi;
	}
	if (s.keys != s.buf)
		free(s.keys);
	return found;
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
