/* secmem.h: memory for secrets, kept out of core dumps and, where allowed, out of swap. */
#ifndef KEYFS_SECMEM_H
#define KEYFS_SECMEM_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Payloads live in pages marked MADV_DONTDUMP (never in a core file, even
 * where the daemon is made dumpable) and mlock'd while RLIMIT_MEMLOCK
 * allows.  Small blocks come from shared slabs by size class, large ones
 * from pages of their own.  Thread-safe.
 */

/* n zeroed bytes (n > 0), or NULL on ENOMEM.  The caller owns the block
 * and gives it back with secmem_free. */
void *secmem_alloc(size_t n);
/* Wipe and give back a block from secmem_alloc; NULL is ignored. */
void secmem_free(void *p);
/* Whether every page handed out so far is locked against swap. */
bool secmem_all_locked(void);

#endif
