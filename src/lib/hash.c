/* hash.c: the string hashes of keyfs's name indexes (hash.h). */
#include "hash.h"

static uint32_t fnv1a(uint32_t h, const char *s)
{
	for (const char *p = s; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}

uint32_t hash_str(const char *s)
{
	return fnv1a(2166136261u, s);
}

uint32_t hash_name(const char *type, const char *desc)
{
	/* 0xff cannot occur in a type name, so "ab"+"c" and "a"+"bc" differ. */
	uint32_t h = fnv1a(2166136261u, type);

	h = (h ^ 0xff) * 16777619u;
	return fnv1a(h, desc);
}
