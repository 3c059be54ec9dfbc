/* json-alloc.c: jansson allocates through a wiping allocator, so parsed and dumped payloads leave no copies. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <jansson.h>

#include "json-alloc.h"

/*
 * jansson copies every string it parses or is given, and its lexer grows a
 * token buffer as it reads; freed with plain free(), those copies would
 * leave the base64 of payloads in the heap.  So jansson allocates through
 * these, which keep each block's size in a header (aligned as malloc
 * aligns) and wipe the block on free.  The functions are process-wide in
 * jansson; that is sound because the store's json-*.c files are keyfs's
 * only jansson users and install them, once, before their first jansson
 * call.
 */
#define WIPE_HDR	_Alignof(max_align_t)
_Static_assert(WIPE_HDR >= sizeof(size_t), "header holds a size_t");

static __thread struct store_json_arena *arena;

static bool in_arena(const unsigned char *p)
{
	return arena && p >= arena->base && p < arena->base + arena->cap;
}

static void *wipe_malloc(size_t n)
{
	unsigned char *p;

	if (n > SIZE_MAX - 2 * WIPE_HDR)
		return NULL;
	if (arena) {
		size_t need = (WIPE_HDR + n + WIPE_HDR - 1) & ~(WIPE_HDR - 1);

		if (need <= arena->cap - arena->used) {
			p = arena->base + arena->used;
			arena->used += need;
			memcpy(p, &n, sizeof(n));
			return p + WIPE_HDR;
		}
		arena->spilled = true;
	}
	p = malloc(WIPE_HDR + n);
	if (!p)
		return NULL;
	memcpy(p, &n, sizeof(n));
	return p + WIPE_HDR;
}

static void wipe_free(void *ptr)
{
	unsigned char *p;
	size_t n;

	if (!ptr)
		return;
	p = (unsigned char *)ptr - WIPE_HDR;
	memcpy(&n, p, sizeof(n));
	explicit_bzero(ptr, n);
	if (!in_arena(p))
		free(p);
}

int store_json_arena_open(struct store_json_arena *a, size_t size)
{
	memset(a, 0, sizeof(*a));
	/* Reserved, not committed: only the pages the parse touches count. */
	a->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->base == MAP_FAILED) {
		a->base = NULL;
		return -ENOMEM;
	}
	/* It holds the payloads' base64 while it lives: not in a core. */
	(void)madvise(a->base, size, MADV_DONTDUMP);
	a->cap = size;
	arena = a;
	return 0;
}

void store_json_arena_close(struct store_json_arena *a)
{
	if (arena == a)
		arena = NULL;
	if (!a->base)
		return;
	explicit_bzero(a->base, a->used);
	munmap(a->base, a->cap);
	memset(a, 0, sizeof(*a));
}

static void set_alloc_funcs(void)
{
	json_set_alloc_funcs(wipe_malloc, wipe_free);
}

void store_json_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, set_alloc_funcs);
}
