/* hash.h: the serial, type/description and string hashes keyfs indexes by. */
#ifndef KEYFS_HASH_H
#define KEYFS_HASH_H

#include <stddef.h>
#include <stdint.h>
#include "keyfs.h"

/* The slot of a serial in a table of nslots entries (a power of two). */
static inline size_t hash_serial(kserial_t serial, size_t nslots)
{
	/* Fibonacci hashing: serials are random in the kernel but sequential
	 * in the memory backend, and both must spread. */
	return ((uint32_t)serial * 2654435761u) & (nslots - 1);
}

/* FNV-1a over a key's type and description, as a keyring indexes its
 * links by name; mask the result with the table size. */
uint32_t hash_name(const char *type, const char *desc);
/* FNV-1a over one string. */
uint32_t hash_str(const char *s);

#endif
