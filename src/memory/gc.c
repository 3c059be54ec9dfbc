/* gc.c: the garbage collector, taking keys expired or revoked gc_delay seconds ago. */
#include <time.h>

#include "memory.h"

/* The kernel's gc: a key expired (or revoked) gc_delay seconds ago is
 * unlinked from every keyring and freed; the held keyrings stay, except
 * the persistent one, which only the kernel's register held.  The queue
 * (gcq.c) gives the due keys: nothing else is looked at. */
void mem_gc(struct keyfs_backend *b)
{
	time_t now = time(NULL);
	struct mkey *k;
	bool any = false;

	/* Unlinking and unref only put keys on the dead list; they are
	 * freed (and leave the queue) in mem_reap, after. */
	while ((k = mem_gc_next(b, now)) != NULL) {
		if (k == b->persistent) {
			b->persistent = NULL;
			k->special = false;
		}
		mem_unlink_all(b, k);
		mem_key_unref(b, k);
		any = true;
	}
	if (any)
		mem_reap(b);
}
