/* base64.c: RFC 4648 base64 encoding and strict decoding of key payloads. */
#include <errno.h>
#include <stdint.h>

#include "base64.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encoded_len(size_t len)
{
	return (len + 2) / 3 * 4;
}

void base64_encode(const void *in, size_t len, char *out)
{
	const unsigned char *p = in;
	size_t i = 0;
	char *o = out;

	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 |
			     p[i + 2];

		*o++ = alphabet[v >> 18 & 0x3f];
		*o++ = alphabet[v >> 12 & 0x3f];
		*o++ = alphabet[v >> 6 & 0x3f];
		*o++ = alphabet[v & 0x3f];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;

		*o++ = alphabet[v >> 18 & 0x3f];
		*o++ = alphabet[v >> 12 & 0x3f];
		*o++ = '=';
		*o++ = '=';
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;

		*o++ = alphabet[v >> 18 & 0x3f];
		*o++ = alphabet[v >> 12 & 0x3f];
		*o++ = alphabet[v >> 6 & 0x3f];
		*o++ = '=';
	}
	*o = '\0';
}

size_t base64_decoded_max(size_t inlen)
{
	return inlen / 4 * 3;
}

/* The 6-bit value of one character, or -1 for anything outside the
 * alphabet (the pad character included). */
static int sextet(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int base64_decode(const char *in, size_t inlen, void *out, size_t *outlen)
{
	unsigned char *o = out;
	size_t n = 0;

	if (inlen % 4 != 0)
		return -EINVAL;
	for (size_t i = 0; i < inlen; i += 4) {
		int last = i + 4 == inlen;
		int a = sextet(in[i]), b = sextet(in[i + 1]);
		int c = sextet(in[i + 2]), d = sextet(in[i + 3]);
		uint32_t v;

		if (a < 0 || b < 0)
			return -EINVAL;
		if (last && in[i + 2] == '=' && in[i + 3] == '=') {
			/* One byte; the low 4 bits of b are padding. */
			if (b & 0x0f)
				return -EINVAL;
			o[n++] = (unsigned char)(a << 2 | b >> 4);
			break;
		}
		if (c < 0)
			return -EINVAL;
		if (last && in[i + 3] == '=') {
			/* Two bytes; the low 2 bits of c are padding. */
			if (c & 0x03)
				return -EINVAL;
			v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6;
			o[n++] = (unsigned char)(v >> 16);
			o[n++] = (unsigned char)(v >> 8);
			break;
		}
		if (d < 0)
			return -EINVAL;
		v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 |
		    (uint32_t)d;
		o[n++] = (unsigned char)(v >> 16);
		o[n++] = (unsigned char)(v >> 8);
		o[n++] = (unsigned char)v;
	}
	*outlen = n;
	return 0;
}
