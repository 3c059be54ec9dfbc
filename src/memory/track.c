/* track.c: with store=, what each change touched (keys made, changed, freed; links added and removed), as it was before, for the save and its undo. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "memory.h"

/* A keyring up to this many links keeps a copy of its old links; a bigger
 * one a log of its link changes, so linking into a keyring of 100,000
 * keys costs one entry, not 100,000 serials.  A log past this many
 * changes is turned into the copy (the change is as big as that anyway). */
#define TRACK_SMALL	64

int mem_key_image(const struct mkey *k, struct store_key *sk, bool links)
{
	memset(sk, 0, sizeof(*sk));
	sk->serial = k->serial;
	sk->uid = k->uid;
	sk->gid = k->gid;
	sk->perm = k->perm;
	sk->state = k->negative ? KEY_STATE_NEGATIVE :
		    k->revoked ? KEY_STATE_REVOKED : KEY_STATE_VALID;
	sk->expiry = k->expiry;
	sk->mtime = keyfs_ts(k->mtime_ns);
	sk->ctime = keyfs_ts(k->ctime_ns);
	sk->type = strdup(k->type->name);
	sk->desc = strdup(k->desc);
	if (!sk->type || !sk->desc)
		return -ENOMEM;
	if (k->len) {
		sk->payload = malloc(k->len);
		if (!sk->payload)
			return -ENOMEM;
		memcpy(sk->payload, k->payload, k->len);
		sk->len = k->len;
	}
	if (!k->ring)
		return 0;
	sk->restricted = k->ring->restricted;
	if (k->ring->restrict_type &&
	    !(sk->restrict_type = strdup(k->ring->restrict_type)))
		return -ENOMEM;
	if (k->ring->restriction &&
	    !(sk->restriction = strdup(k->ring->restriction)))
		return -ENOMEM;
	if (links && k->ring->nlinks) {
		sk->links = malloc(k->ring->nlinks * sizeof(*sk->links));
		if (!sk->links)
			return -ENOMEM;
		mring_serials(k->ring, sk->links);
		sk->nlinks = k->ring->nlinks;
	}
	return 0;
}

/* k's entry, made (with its state as it is now) if it has none; NULL when
 * there is no store or no memory. */
static struct mtrack *entry(struct keyfs_backend *b, struct mkey *k,
			    bool existed)
{
	struct mtrack *e;

	if (!b->tracking)
		return NULL;
	if (k->tracked)
		return &b->track[k->track_idx];
	e = grow_room(b->track, b->ntrack, &b->trackcap, 16, SIZE_MAX,
		      sizeof(*e));
	if (!e) {
		b->track_oom = true;
		return NULL;
	}
	b->track = e;
	e = &b->track[b->ntrack];
	memset(e, 0, sizeof(*e));
	e->key = k;
	e->serial = k->serial;
	e->existed = existed;
	e->was_stored = existed && k->stored;
	if (existed) {
		bool small = !k->ring || k->ring->nlinks <= TRACK_SMALL;

		if (mem_key_image(k, &e->old, small) < 0) {
			store_key_free(&e->old);
			b->track_oom = true;
			return NULL;
		}
		e->full = small;
	}
	k->tracked = true;
	k->track_idx = (unsigned)b->ntrack++;
	return e;
}

void mem_track(struct keyfs_backend *b, struct mkey *k)
{
	entry(b, k, true);
}

void mem_track_new(struct keyfs_backend *b, struct mkey *k)
{
	if (b->tracking)
		k->stored = false;
	entry(b, k, false);
}

/* Turn e's log into the copy of the old links, from keyring's links now. */
static int materialize(struct mtrack *e, const struct mkey *keyring)
{
	const struct mring *r = keyring->ring;
	size_t n = r ? r->nlinks : 0;
	kserial_t *v = malloc((n ? n : 1) * sizeof(*v));
	int ret;

	if (!v)
		return -ENOMEM;
	if (r)
		mring_serials(r, v);
	ret = store_links_undo(&v, &n, e->log, e->nlog);
	if (ret < 0) {
		free(v);
		return ret;
	}
	free(e->old.links);
	e->old.links = v;
	e->old.nlinks = n;
	free(e->log);
	e->log = NULL;
	e->nlog = e->logcap = 0;
	e->full = true;
	return 0;
}

static void log_change(struct keyfs_backend *b, struct mkey *keyring,
		       enum store_link_kind kind, kserial_t serial,
		       kserial_t old, size_t at)
{
	struct mtrack *e = entry(b, keyring, true);
	struct store_link_change *l;

	if (!e || e->full || !e->existed)
		return;
	if (e->nlog == TRACK_SMALL) {
		if (materialize(e, keyring) < 0)
			b->track_oom = true;
		return;
	}
	l = grow_room(e->log, e->nlog, &e->logcap, 4, SIZE_MAX, sizeof(*l));
	if (!l) {
		b->track_oom = true;
		return;
	}
	e->log = l;
	e->log[e->nlog++] = (struct store_link_change){
		.kind = kind, .serial = serial, .old = old, .at = at
	};
}

void mem_track_link(struct keyfs_backend *b, struct mkey *keyring,
		    struct mkey *child, struct mkey *old)
{
	if (!b->tracking)
		return;
	entry(b, child, true);
	if (old) {
		entry(b, old, true);
		log_change(b, keyring, STORE_LINK_REPLACE, child->serial,
			   old->serial, mring_position(keyring, old));
	} else {
		log_change(b, keyring, STORE_LINK_APPEND, child->serial, 0,
			   keyring->ring->nlinks);
	}
}

void mem_track_unlink(struct keyfs_backend *b, struct mkey *keyring,
		      struct mkey *child)
{
	size_t at;

	if (!b->tracking || !keyring->ring)
		return;
	at = mring_position(keyring, child);
	if (at == keyring->ring->nlinks)
		return;
	entry(b, child, true);
	log_change(b, keyring, STORE_LINK_REMOVE, child->serial, 0, at);
}

void mem_track_clear(struct keyfs_backend *b, struct mkey *keyring)
{
	struct mtrack *e;
	struct mkey *ch;

	if (!b->tracking || !keyring->ring)
		return;
	e = entry(b, keyring, true);
	if (e && e->existed && !e->full && materialize(e, keyring) < 0)
		b->track_oom = true;
	/* The keys it links lose a parent: whether the store keeps them is
	 * decided again at the save. */
	mring_for_each(keyring->ring, i, ch)
		entry(b, ch, true);
}

void mem_track_gone(struct keyfs_backend *b, struct mkey *k)
{
	if (!b->tracking)
		return;
	if (k->ring)
		mem_track_clear(b, k);
	else
		entry(b, k, true);
	if (k->tracked)
		b->track[k->track_idx].key = NULL;
}

void mem_track_forget(struct keyfs_backend *b)
{
	for (size_t i = 0; i < b->ntrack; i++) {
		struct mtrack *e = &b->track[i];

		if (e->key)
			e->key->tracked = false;
		store_key_free(&e->old);
		free(e->log);
	}
	b->ntrack = 0;
	b->track_oom = false;
	/* A burst (a clear of a big keyring) does not keep its table. */
	if (b->trackcap > 1024) {
		free(b->track);
		b->track = NULL;
		b->trackcap = 0;
	}
}
