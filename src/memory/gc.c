/* gc.c: the garbage collector, taking keys expired or revoked gc_delay seconds ago. */
#include <time.h>

#include "memory.h"

/* The kernel's gc: a key expired (or revoked) gc_delay seconds ago is
 * unlinked from every keyring and freed; the held keyrings stay, except
 * the persistent one, which only the kernel's register held. */
void mem_gc(struct keyfs_backend *b)
{
	time_t now = time(NULL), next = 0;
	uint32_t mark;
	bool any = false;

	if (!b->gc_next || now < b->gc_next)
		return;
	mark = mem_stamp(b);
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i]; k; k = k->hnext) {
			time_t due = k->expiry + b->gc_delay;

			if (!k->expiry)
				continue;
			if (now >= due) {
				k->walk_stamp = mark;
				any = true;
			} else if (!next || due < next) {
				next = due;
			}
		}
	b->gc_next = next;
	if (!any)
		return;
	/* Unlinking changes no chain of the table; reaping does, after. */
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i]; k; k = k->hnext) {
			if (k->walk_stamp != mark)
				continue;
			if (k == b->persistent) {
				b->persistent = NULL;
				k->special = false;
			}
			mem_unlink_all(b, k);
			mem_key_unref(b, k);
		}
	mem_reap(b);
}
