/* grow.c: room for one more element at the end of an array that doubles, and table sizes that double (grow.h). */
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"

void *grow_room(void *v, size_t n, size_t *cap, size_t first, size_t max,
		size_t size)
{
	size_t want = *cap ? *cap * 2 : first;
	void *l;

	if (n < *cap)
		return v;
	if (want > max || want > SIZE_MAX / size)
		return NULL;
	l = realloc(v, want * size);
	if (l)
		*cap = want;
	return l;
}

size_t grow_pow2(size_t n, size_t min)
{
	size_t cap = min;

	while (cap < n)
		cap *= 2;
	return cap;
}
