/* keyring.c: links between keys, the cycle and restriction checks, and the request_key search. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

/* ---- unlinking ---- */

void mem_unlink_one(struct keyfs_backend *b, struct mkey *keyring,
		    struct mkey *key)
{
	mem_track_unlink(b, keyring, key);
	if (!mring_unlink(keyring, key))
		return;
	mem_charge_sync(b, keyring);
	mem_key_touch(keyring, true);
	mem_key_touch(key, false);
	mem_key_unref(b, key);
}

/* Unlink key from every keyring at once (invalidation, gc). */
void mem_unlink_all(struct keyfs_backend *b, struct mkey *key)
{
	while (key->nparents)
		mem_unlink_one(b, mkey_parents(key)[key->nparents - 1], key);
}

/* ---- linking ---- */

/*
 * keyring_detect_cycle(): would linking keyring K into target close a
 * cycle?  Walks K's subtree as search_nested_keyrings() does with
 * KEYRING_SEARCH_DETECT_TOO_DEEP: -EDEADLK when target is found, -ELOOP
 * when a keyring would be entered below KEYFS_NEST_MAX levels.  A keyring
 * already walked to completion from at least this deep is not walked again
 * (it can hold neither), which keeps dense graphs linear.
 */
static int cycle_walk(struct keyfs_backend *b, struct mkey *k,
		      struct mkey *target, int sp, uint32_t stamp)
{
	struct mring *r = k->ring;
	struct mkey *ch;
	int ret;

	if (k->revoked || !r)
		return 0;
	if (mring_find(k, target->type, target->desc) == target)
		return -EDEADLK;
	mring_for_each_ring(r, i, ch) {
		if (sp >= KEYFS_NEST_MAX)
			return -ELOOP;
		if (ch->walk_stamp == stamp && ch->walk_depth >= sp + 1)
			continue;
		ret = cycle_walk(b, ch, target, sp + 1, stamp);
		if (ret < 0)
			return ret;
		if (ch->walk_stamp != stamp || ch->walk_depth < sp + 1) {
			ch->walk_stamp = stamp;
			ch->walk_depth = sp + 1;
		}
	}
	return 0;
}

int mem_restriction_check(const struct mkey *keyring)
{
	const struct mring *r = keyring->ring;

	/* restrict_link_reject(); a restriction kept from a store that this
	 * backend cannot evaluate refuses as well. */
	return r->restricted || r->restrict_type ? -EPERM : 0;
}

int mem_link_prepare(struct keyfs_backend *b, struct mkey *keyring,
		     struct mkey *key)
{
	int ret;

	if (!mem_is_keyring(keyring))
		return -ENOTDIR;
	/* __key_link_begin(): only a new link (not one displacing a key of
	 * the same type and description) costs quota. */
	if (keyring->in_quota && !mring_find(keyring, key->type, key->desc)) {
		ret = mem_quota_room(b, keyring->uid, 0, MEM_LINK_BYTES);
		if (ret < 0)
			return ret;
	}
	ret = mem_restriction_check(keyring);
	if (ret < 0)
		return ret;
	if (mem_is_keyring(key)) {
		if (key == keyring)
			return -EDEADLK;
		ret = cycle_walk(b, key, keyring, 0, mem_stamp(b));
		if (ret < 0)
			return ret;
	}
	return mring_reserve(keyring, key);
}

void mem_link_commit(struct keyfs_backend *b, struct mkey *keyring,
		     struct mkey *key)
{
	struct mkey *old;

	if (mring_find(keyring, key->type, key->desc) == key)
		return;
	mem_track_link(b, keyring, key, mring_find(keyring, key->type,
						   key->desc));
	old = mring_link(keyring, key);
	mem_charge_sync(b, keyring);
	mem_key_touch(keyring, true);
	mem_key_touch(key, false);
	if (old) {
		mem_key_touch(old, false);
		mem_key_unref(b, old);
	}
}

/* ---- searching ---- */

struct msearch {
	const struct keyfs_cred *c;
	const struct mkey_type *type;
	const char *desc;
	time_t now;
	bool possessed;
	uint32_t stamp;
	int err;		/* why the last candidate was skipped */
	struct mkey *found;
};

/* keyring_search_iterator() with KEYRING_SEARCH_DO_STATE_CHECK and
 * KEYRING_SEARCH_SKIP_EXPIRED, as request_key() searches. */
static bool search_candidate(struct msearch *s, struct mkey *k)
{
	if (k->revoked) {
		s->err = -EKEYREVOKED;
		return false;
	}
	if (mem_key_expired(k, s->now))
		return false;
	if (!mem_search_ok(s->c, k, s->possessed)) {
		s->err = -EACCES;
		return false;
	}
	if (k->negative) {
		s->err = -k->reject_error;
		return false;
	}
	s->found = k;
	return true;
}

/* Depth first through searchable keyrings, as search_nested_keyrings().
 * A keyring already searched from this depth or shallower cannot hold
 * anything new and is skipped. */
static bool search_keyring(struct msearch *s, struct mkey *kr, int sp)
{
	struct mkey *k, *ch;

	if (kr->revoked || !kr->ring)
		return false;
	if (kr->walk_stamp == s->stamp && kr->walk_depth <= sp)
		return false;
	kr->walk_stamp = s->stamp;
	kr->walk_depth = sp;
	k = mring_find(kr, s->type, s->desc);
	if (k && search_candidate(s, k))
		return true;
	if (sp >= KEYFS_NEST_MAX)
		return false;
	mring_for_each_ring(kr->ring, i, ch) {
		if (!mem_search_ok(s->c, ch, s->possessed))
			continue;
		if (search_keyring(s, ch, sp + 1))
			return true;
	}
	return false;
}

/* keyring_search_rcu() on one of the process keyrings. */
static int search_top(struct keyfs_backend *b, struct msearch *s,
		      struct mkey *top)
{
	if (!mem_search_ok(s->c, top, s->possessed))
		return -EACCES;
	s->err = -EAGAIN;
	s->stamp = mem_stamp(b);
	/* The keyring itself is a candidate; skipped, it ends the search. */
	if (top->type == s->type && top->type->match(top, s->desc))
		return search_candidate(s, top) ? 0 : s->err;
	return search_keyring(s, top, 0) ? 0 : s->err;
}

int mem_search_process(struct keyfs_backend *b, const struct keyfs_cred *c,
		       const struct mkey_type *type, const char *desc,
		       struct mkey **out)
{
	struct mkey *tops[] = { b->process, b->session };
	struct msearch s = {
		.c = c, .type = type, .desc = desc, .now = time(NULL),
		.possessed = c->uid == b->uid,
	};
	int none = 0, err = -EAGAIN;

	for (size_t i = 0; i < 2; i++) {
		int ret;

		if (!tops[i])
			continue;
		ret = search_top(b, &s, tops[i]);
		if (ret == 0) {
			*out = s.found;
			return 0;
		}
		/* search_process_keyrings_rcu(): "no key" and "negative key"
		 * win over other errors, a negative key over "no key". */
		if (ret == -ENOKEY || (ret == -EAGAIN && !none))
			none = ret;
		else if (ret != -EAGAIN)
			err = ret;
	}
	return none ? none : err;
}
