/* parse.c: strict number parsing shared by control files and xattr values. */
#include <errno.h>

#include "parse.h"

int parse_dec(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v = 0;

	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (*s < '0' || *s > '9' || v > (max - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int parse_hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int parse_hex32(const char *s, uint32_t *out)
{
	unsigned long long v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		int d = parse_hexdigit(*s);

		if (d < 0)
			return -EINVAL;
		v = v * 16 + (unsigned)d;
		if (v > UINT32_MAX)
			return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}
