/* gcq.c: the keys with an expiry, by when the gc is due for them: a binary heap, so that the gc finds what is due without looking at every key. */
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"
#include "memory.h"

static void place(struct keyfs_backend *b, size_t i, struct mem_gc_due e)
{
	b->gcq[i] = e;
	e.k->gc_slot = (uint32_t)i + 1;
}

static void sift_up(struct keyfs_backend *b, size_t i)
{
	struct mem_gc_due e = b->gcq[i];

	while (i > 0 && b->gcq[(i - 1) / 2].due > e.due) {
		place(b, i, b->gcq[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	place(b, i, e);
}

static void sift_down(struct keyfs_backend *b, size_t i)
{
	struct mem_gc_due e = b->gcq[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= b->ngcq)
			break;
		if (c + 1 < b->ngcq && b->gcq[c + 1].due < b->gcq[c].due)
			c++;
		if (e.due <= b->gcq[c].due)
			break;
		place(b, i, b->gcq[c]);
		i = c;
	}
	place(b, i, e);
}

/* Move the entry at i to where its due time belongs. */
static void settle(struct keyfs_backend *b, size_t i)
{
	if (i > 0 && b->gcq[(i - 1) / 2].due > b->gcq[i].due)
		sift_up(b, i);
	else
		sift_down(b, i);
}

/* When the gc takes k: gc_delay after it expired or was revoked. */
static time_t gc_due(const struct keyfs_backend *b, const struct mkey *k)
{
	return k->expiry + b->gc_delay;
}

void mem_gc_unqueue(struct keyfs_backend *b, struct mkey *k)
{
	size_t i;

	if (!k->gc_slot)
		return;
	i = k->gc_slot - 1;
	k->gc_slot = 0;
	if (i == --b->ngcq)
		return;
	place(b, i, b->gcq[b->ngcq]);
	settle(b, i);
}

void mem_gc_schedule(struct keyfs_backend *b, struct mkey *k)
{
	struct mem_gc_due *v;

	if (!k->expiry) {
		mem_gc_unqueue(b, k);
		return;
	}
	if (k->gc_slot) {
		b->gcq[k->gc_slot - 1].due = gc_due(b, k);
		settle(b, k->gc_slot - 1);
		return;
	}
	v = grow_room(b->gcq, b->ngcq, &b->gcqcap, 64, UINT32_MAX - 1,
		      sizeof(*v));
	if (!v) {
		/* the key still expires on time; mem_gc_next finds it by a
		 * scan of every key, once memory allows a queue again */
		b->gcq_lost = true;
		return;
	}
	b->gcq = v;
	b->gcq[b->ngcq].due = gc_due(b, k);
	b->gcq[b->ngcq].k = k;
	sift_up(b, b->ngcq++);
}

/* After an allocation failed: queue every key with an expiry again. */
static void requeue_all(struct keyfs_backend *b)
{
	b->gcq_lost = false;
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i]; k; k = k->hnext)
			if (k->expiry && !k->gc_slot)
				mem_gc_schedule(b, k);
}

struct mkey *mem_gc_next(struct keyfs_backend *b, time_t now)
{
	struct mkey *k;

	if (b->gcq_lost)
		requeue_all(b);
	while (b->ngcq && b->gcq[0].due <= now) {
		k = b->gcq[0].k;
		if (k->expiry && gc_due(b, k) <= now) {
			mem_gc_unqueue(b, k);
			return k;
		}
		/* an expiry changed without mem_gc_schedule: where it
		 * belongs now, or out */
		mem_gc_schedule(b, k);
	}
	return NULL;
}

void mem_gc_queue_free(struct keyfs_backend *b)
{
	free(b->gcq);
	b->gcq = NULL;
	b->ngcq = b->gcqcap = 0;
	b->gcq_lost = false;
}
