/* commit.c: the frame of every operation: gc on entry, reap on exit, save to the store or undo. */
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
	if (!b->store)
		return 0;
	ret = mem_image_build(b, &img);
	/* A change only to what is never written (the process keyring and
	 * what only it links) leaves the file as it is. */
	if (ret == 0 && !store_image_same_file(&img, &b->snap))
		ret = store_json_save(b->store, &img);
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
