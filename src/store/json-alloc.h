/* json-alloc.h: the wiping allocator every jansson user in the store installs first. */
#ifndef KEYFS_JSON_ALLOC_H
#define KEYFS_JSON_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* Install the wiping allocator in jansson, once per process; call before
 * any other jansson call.  Thread-safe. */
void store_json_init(void);

/* A region for one big parse (a snapshot): while it is open in this
 * thread, jansson's blocks are carved from one mapping instead of malloc,
 * so the parse tree of 100,000 keys costs neither a million malloc/free
 * pairs nor a heap that keeps its pages after.  Blocks freed while open
 * are wiped; what the region holds when closed is wiped and unmapped at
 * once (the tree need not be freed first, unless spilled says some of
 * it went to malloc because the region was full). */
struct store_json_arena {
	unsigned char *base;
	size_t cap, used;
	bool spilled;
};

/* Open a region of about size bytes (reserved, not yet used): 0, or
 * -ENOMEM (then jansson just uses malloc). */
int store_json_arena_open(struct store_json_arena *a, size_t size);
/* Wipe and unmap it. */
void store_json_arena_close(struct store_json_arena *a);

#endif
