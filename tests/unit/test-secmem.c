/* test-secmem.c: unit tests for the payload allocator: zeroed blocks, wiped reuse, pages kept out of core dumps. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "secmem.h"
#include "tap.h"

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Whether the mapping holding p carries the "dd" (do not dump) flag. */
static bool not_dumped(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false, dd = false;
	uintptr_t a = (uintptr_t)p;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		/* a mapping's first line is "lo-hi perms ..."; field lines
		 * never parse as two hex numbers joined by '-' */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = a >= lo && a < hi;
		else if (in && strncmp(line, "VmFlags:", 8) == 0)
			dd = strstr(line, " dd") != NULL;
	}
	fclose(f);
	return dd;
}

int main(void)
{
	static const size_t sizes[] = { 1, 15, 16, 17, 100, 4000, 4081, 5000, 32767, 1 << 20 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		unsigned char *p = secmem_alloc(n);

		ok(p != NULL, "%zu bytes allocated", n);
		if (!p)
			continue;
		ok(all_zero(p, n), "%zu bytes come zeroed", n);
		ok(((uintptr_t)p & 15) == 0, "%zu bytes are 16-byte aligned", n);
		ok(not_dumped(p), "%zu bytes sit in pages marked not to dump", n);
		memset(p, 0xa5, n);
		secmem_free(p);
		p = secmem_alloc(n);
		ok(p && all_zero(p, n), "%zu bytes again: no trace of the last secret", n);
		secmem_free(p);
	}
	{
		/* Blocks carry no header: a class's blocks sit side by side. */
		unsigned char *a = secmem_alloc(32), *b = secmem_alloc(32);
		uintptr_t d = a > b ? (uintptr_t)(a - b) : (uintptr_t)(b - a);

		ok(a && b && d == 32, "two 32-byte blocks sit 32 bytes apart (no per-block header)");
		secmem_free(a);
		secmem_free(b);
	}
	{
		/* Many slabs of one class, all given back and taken again. */
		enum { N = 10000 };
		static unsigned char *v[N];
		bool all = true;

		for (size_t i = 0; i < N; i++) {
			v[i] = secmem_alloc(24);
			all = all && v[i] && all_zero(v[i], 24);
			if (v[i])
				memset(v[i], 0x5a, 24);
		}
		for (size_t i = 0; i < N; i++)
			secmem_free(v[i]);
		for (size_t i = 0; i < N; i++) {
			v[i] = secmem_alloc(24);
			all = all && v[i] && all_zero(v[i], 24);
		}
		ok(all, "%d blocks over several slabs come zeroed, again after being freed", N);
		for (size_t i = 0; i < N; i++)
			secmem_free(v[i]);
	}
	ok(secmem_alloc(0) == NULL, "0 bytes is refused");
	ok(secmem_alloc(SIZE_MAX) == NULL, "SIZE_MAX bytes is refused");
	secmem_free(NULL);
	ok(1, "freeing NULL does nothing");
	return done_testing();
}
