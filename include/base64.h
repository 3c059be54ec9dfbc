/* base64.h: RFC 4648 base64 with padding; decoding is strict. */
#ifndef KEYFS_BASE64_H
#define KEYFS_BASE64_H

#include <stddef.h>

/* The longest input base64_encoded_len() can size without overflow. */
#define BASE64_RAW_MAX	((((size_t)-1) / 4 - 1) * 3)

/* Characters the encoding of len bytes takes, without the NUL;
 * len <= BASE64_RAW_MAX. */
size_t base64_encoded_len(size_t len);

/* Encode len bytes of in into out, which holds base64_encoded_len(len) + 1
 * bytes; out is NUL-terminated. */
void base64_encode(const void *in, size_t len, char *out);

/* An upper bound of the bytes inlen characters decode to. */
size_t base64_decoded_max(size_t inlen);

/* Decode inlen characters of in into out (base64_decoded_max(inlen) bytes)
 * and set *outlen.  Strict: the length is a multiple of 4, only the
 * alphabet A-Z a-z 0-9 + / appears, '=' only as the last one or two
 * characters, the bits padding leaves unused are zero, and no whitespace.
 * Anything else is -EINVAL, and out may then hold part of the result (the
 * caller wipes it where it is secret).  Returns 0 on success. */
int base64_decode(const char *in, size_t inlen, void *out, size_t *outlen);

#endif
