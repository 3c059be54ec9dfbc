/* commit.c: the frame of every operation: gc on entry, reap on exit, a journal record in the store or undo; opening and closing the store. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

/* ---- operations: begin, end, save ---- */

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

int mem_commit(struct keyfs_backend *b)
{
	struct store_image img = { 0 };
	int ret;

	mem_end(b);
	if (!b->sf)
		return 0;
	ret = mem_image_build(b, &img);
	/* One journal record of what differs from what the store holds; a
	 * change only to what is never written (the process keyring and what
	 * only it links) writes nothing. */
	if (ret == 0)
		ret = store_commit(b->sf, &b->snap, &img);
	if (ret < 0) {
		store_image_free(&img);
		/* The change was not saved, so it must not be seen either.
		 * The undo can only fail for memory; then the model stays
		 * ahead of the file, and that is said once per failure. */
		if (mem_model_revert(b) < 0)
			fprintf(stderr, "keyfs: %s: a change that could not be saved could not be undone either: %s\n",
				b->store, strerror(ENOMEM));
		return ret;
	}
	store_image_free(&b->snap);
	b->snap = img;
	return 0;
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
	return ret;
}

int mem_store_save(struct keyfs_backend *b, bool created)
{
	int ret = mem_image_build(b, &b->snap);

	/* A new store's special keyrings, and the keys load dropped (the
	 * invalidated), go to the snapshot now; the journal starts empty. */
	if (ret == 0 && created)
		ret = store_flush(b->sf, &b->snap);
	return ret;
}

void mem_store_close(struct keyfs_backend *b, bool flush)
{
	if (!b->sf)
		return;
	if (flush && store_pending(b->sf)) {
		int ret = store_flush(b->sf, &b->snap);

		if (ret < 0)
			fprintf(stderr, "keyfs: %s: cannot write the snapshot at unmount (the journal keeps every change): %s\n",
				b->store, strerror(-ret));
	}
	store_close(b->sf);
	b->sf = NULL;
	store_image_free(&b->snap);
}
