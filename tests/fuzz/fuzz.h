/* fuzz.h: what the libFuzzer targets share: a NUL-terminated copy of the input and a loud check. */
#ifndef KEYFS_FUZZ_H
#define KEYFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property that does not hold is a finding like a crash: abort, so that
 * libFuzzer saves the input. */
#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: check failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

/* data as a C string, cut at its first NUL (the parsers take C strings). */
static inline char *fuzz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
