/* json-alloc.c: jansson allocates through a wiping allocator, so parsed and dumped payloads leave no copies. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static void *wipe_malloc(size_t n)
{
	unsigned char *p;

	if (n > SIZE_MAX - WIPE_HDR)
		return NULL;
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
	free(p);
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
