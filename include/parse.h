/* parse.h: strict parsing of what users and store files write, and the names of key states. */
#ifndef KEYFS_PARSE_H
#define KEYFS_PARSE_H

#include <stdint.h>
#include "keyfs.h"

/* Decimal digits only (no sign, spaces or empty string; strtoul would
 * take them and overflow quietly), at most max.  0 or -EINVAL. */
int parse_dec(const char *s, unsigned long long max, unsigned long long *out);

/* The value of one hex digit, or -1. */
int parse_hexdigit(char c);

/* Hex digits with or without 0x, fitting 32 bits.  0 or -EINVAL. */
int parse_hex32(const char *s, uint32_t *out);

/* The word for a state, as the state xattr and the store write it. */
const char *key_state_name(enum key_state state);

/* The state a word names.  0 or -EINVAL. */
/* What an operation on a key in this state answers, as keyctl does: a
 * dead key is described and listed but not used (0 for a live key). */
int key_state_errno(enum key_state state);
int key_state_parse(const char *s, enum key_state *out);

#endif
