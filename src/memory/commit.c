/* commit.c: the frame of every operation: gc on entry, reap on exit, a journal record of what it touched in the store or undo; opening and closing the store. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

/* ---- operations: begin, end ---- */

void mem_begin(struct keyfs_backend *b)
{
	mem_gc(b);
}

void mem_end(struct keyfs_backend *b)
{
	mem_reap(b);
}

void mem_end_read(struct keyfs_backend *b)
{
	mem_reap(b);
}

/* ---- the record of one change ---- */

static bool is_top(const struct keyfs_backend *b, const struct mkey *k)
{
	return k == b->session || k == b->user || k == b->user_session ||
	       k == b->persistent;
}

/* Does a special keyring other than the process keyring reach k?  Walks
 * up k's parents, so it costs k's ancestors, not the store. */
static bool reachable(struct keyfs_backend *b, struct mkey *k)
{
	uint32_t stamp = mem_stamp(b);
	struct mkey *tail = k;

	k->walk_stamp = stamp;
	k->qnext = NULL;
	for (struct mkey *q = k; q; q = q->qnext) {
		if (is_top(b, q))
			return true;
		for (size_t i = 0; i < q->nparents; i++) {
			struct mkey *p = mkey_parents(q)[i];

			if (p->walk_stamp == stamp)
				continue;
			p->walk_stamp = stamp;
			p->qnext = NULL;
			tail->qnext = p;
			tail = p;
		}
	}
	return false;
}

/* Would a and b be written the same, links and times aside?  A link
 * changes a keyring's times; those are written with the keyring at the
 * next snapshot (keyfs-store(5)). */
static bool same_but_times(const struct store_key *a,
			   const struct store_key *b)
{
	struct store_key t = *a;

	t.mtime = b->mtime;
	t.ctime = b->ctime;
	return store_key_same_but_links(&t, b);
}

/* What the store must learn of one tracked key. */
static int record_key(struct store_record *r, const struct mtrack *e)
{
	struct store_key sk;
	bool put;
	int ret;

	if (!e->now_stored)
		return e->was_stored ? store_record_del(r, e->serial) : 0;
	ret = mem_key_image(e->key, &sk, e->full || !e->was_stored);
	if (ret < 0)
		goto out;
	if (!e->was_stored) {
		put = true;
	} else if (e->full) {
		put = !store_key_same_but_links(&e->old, &sk) ||
		      e->old.nlinks != sk.nlinks ||
		      (sk.nlinks && memcmp(e->old.links, sk.links,
					   sk.nlinks * sizeof(*sk.links)));
	} else if (e->nlog && same_but_times(&e->old, &sk)) {
		ret = store_record_links(r, e->serial, e->log, e->nlog);
		goto out;
	} else {
		put = e->nlog || !store_key_same_but_links(&e->old, &sk);
	}
	if (put && !sk.links && e->key->ring) {
		store_key_free(&sk);
		ret = mem_key_image(e->key, &sk, true);
	}
	if (ret == 0 && put)
		ret = store_record_put(r, &sk);
out:
	store_key_free(&sk);
	return ret;
}

/* A keyring the store starts or stops holding takes the keys it links
 * along (those no other kept keyring reaches): they are decided too. */
static void track_children(struct keyfs_backend *b, struct mkey *k, bool now)
{
	struct mkey *ch;

	if (!k->ring)
		return;
	mring_for_each(k->ring, j, ch) {
		if (!ch->tracked && ch->stored != now)
			mem_track(b, ch);
	}
}

static int record_build(struct keyfs_backend *b, struct store_record *r)
{
	struct mkey *tops[] = { b->session, b->user, b->user_session,
				b->persistent };
	int ret = 0;

	for (size_t s = 0; s < 4; s++) {
		kserial_t now = tops[s] ? tops[s]->serial : 0;
		struct mkey *was = mem_key_get(b, b->file_special[s]);

		if (now == b->file_special[s])
			continue;
		if (was)
			mem_track(b, was);
		if (tops[s])
			mem_track(b, tops[s]);
		ret = store_record_special(r, s, now);
		if (ret < 0)
			return ret;
	}
	/* b->track grows as keyrings take their keys along. */
	for (size_t i = 0; i < b->ntrack && ret == 0; i++) {
		struct mtrack *e = &b->track[i];

		e->now_stored = e->key && reachable(b, e->key);
		if (e->key && e->now_stored != e->was_stored) {
			track_children(b, e->key, e->now_stored);
			e = &b->track[i];
		}
		ret = b->track_oom ? -ENOMEM : record_key(r, e);
	}
	return ret;
}

/* The save went through: what is tracked is what the store holds. */
static void record_done(struct keyfs_backend *b)
{
	for (size_t i = 0; i < b->ntrack; i++)
		if (b->track[i].key)
			b->track[i].key->stored = b->track[i].now_stored;
	b->file_special[0] = b->session ? b->session->serial : 0;
	b->file_special[1] = b->user ? b->user->serial : 0;
	b->file_special[2] = b->user_session ? b->user_session->serial : 0;
	b->file_special[3] = b->persistent ? b->persistent->serial : 0;
	b->saved_process = b->process ? b->process->serial : 0;
	mem_track_forget(b);
}

/* Rewrite the snapshot from the whole model: O(keys), but only once the
 * journal has grown by half the snapshot, and at unmount. */
static int snapshot(struct keyfs_backend *b)
{
	struct store_image img;
	int ret = mem_image_build(b, &img);

	if (ret == 0)
		ret = store_flush(b->sf, &img);
	store_image_free(&img);
	/* The image was as big as the model: give its pages back. */
	malloc_trim(0);
	return ret;
}

/* Save what was tracked since the last save as one journal record. */
static int save_tracked(struct keyfs_backend *b)
{
	struct store_record *r;
	int ret;

	if (!b->sf)
		return 0;
	/* One journal record of what the change touched; a change only to
	 * what is never written (the process keyring and what only it
	 * links) writes nothing. */
	r = store_record_new();
	ret = r ? (b->track_oom ? -ENOMEM : record_build(b, r)) : -ENOMEM;
	if (ret == 0)
		ret = store_commit(b->sf, r, b->next_serial);
	store_record_free(r);
	if (ret < 0) {
		/* The change was not saved, so it must not be seen either.
		 * The undo can only fail for memory; then the model stays
		 * ahead of the file, and that is said once per failure. */
		if (mem_model_revert(b) < 0)
			fprintf(stderr, "keyfs: %s: a change that could not be saved could not be undone either: %s\n",
				b->store, strerror(ENOMEM));
		return ret;
	}
	record_done(b);
	if (store_wants_compaction(b->sf)) {
		int r2 = snapshot(b);

		/* The change is on disk in the journal: a failed rewrite
		 * costs only a longer replay, and is tried again later. */
		if (r2 < 0)
			fprintf(stderr, "keyfs: %s: cannot compact the journal: %s\n",
				b->store, strerror(-r2));
	}
	return 0;
}

int mem_commit(struct keyfs_backend *b)
{
	mem_end(b);
	/* In a batch the tracking goes on: batch_end saves it all at once. */
	return b->batching ? 0 : save_tracked(b);
}

void mem_batch_begin(struct keyfs_backend *b)
{
	b->batching++;
}

int mem_batch_end(struct keyfs_backend *b)
{
	if (b->batching && --b->batching)
		return 0;
	return save_tracked(b);
}

/* ---- the store: open, first save, close ---- */

int mem_store_open(struct keyfs_backend *b, char *err, size_t errlen)
{
	struct store_image img = { 0 };
	int ret;

	ret = store_open(b->store, b->store_key, &img, &b->sf, err, errlen);
	if (ret == 0)
		ret = mem_model_load(b, &img, 0, err, errlen);
	store_image_free(&img);
	/* The file's text and its parse were freed in many small blocks:
	 * give them back, so a store costs its keys, not its file. */
	malloc_trim(0);
	return ret;
}

int mem_store_save(struct keyfs_backend *b, bool created)
{
	int ret = 0;

	/* A new store's special keyrings, and the keys load dropped (the
	 * invalidated), go to the snapshot now; the journal starts empty. */
	if (created)
		ret = snapshot(b);
	if (ret == 0) {
		mem_stored_reset(b);
		b->tracking = true;
	}
	return ret;
}

void mem_store_close(struct keyfs_backend *b, bool flush)
{
	if (!b->sf)
		return;
	b->tracking = false;
	if (flush && store_pending(b->sf)) {
		int ret = snapshot(b);

		if (ret < 0)
			fprintf(stderr, "keyfs: %s: cannot write the snapshot at unmount (the journal keeps every change): %s\n",
				b->store, strerror(-ret));
	}
	mem_track_forget(b);
	free(b->track);
	b->track = NULL;
	b->trackcap = 0;
	store_close(b->sf);
	b->sf = NULL;
}
