/* grow.h: room for one more element at the end of an array that doubles, and table sizes that double. */
#ifndef KEYFS_GROW_H
#define KEYFS_GROW_H

#include <stddef.h>

/*
 * Room for one more in the array v of n elements of size bytes, *cap of
 * them allocated: the capacity doubles, from first, up to max elements.
 * Returns the array, moved or not (the caller stores it back), or NULL
 * when there is no memory or the array is at max, with v and *cap left
 * as they were.
 */
void *grow_room(void *v, size_t n, size_t *cap, size_t first, size_t max,
		size_t size);

/* The size of a table that must hold n: min (a power of two) doubled
 * until it is at least n. */
size_t grow_pow2(size_t n, size_t min);

#endif
