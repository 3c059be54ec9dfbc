/* parse.c: strict parsing shared by control files, xattr values and the store. */
#include <errno.h>
#include <string.h>

#include "parse.h"

int parse_dec(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v = 0;

	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		unsigned d = (unsigned)(*s - '0');

		/* d > max first: max - d would wrap and pass anything. */
		if (*s < '0' || *s > '9' || d > max || v > (max - d) / 10)
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

static const char *const state_names[] = {
	[KEY_STATE_VALID]	= "valid",
	[KEY_STATE_PENDING]	= "pending",
	[KEY_STATE_REVOKED]	= "revoked",
	[KEY_STATE_EXPIRED]	= "expired",
	[KEY_STATE_NEGATIVE]	= "negative",
	[KEY_STATE_INVALIDATED]	= "invalidated",
};

#define NSTATES (sizeof(state_names) / sizeof(state_names[0]))

const char *key_state_name(enum key_state state)
{
	return (unsigned)state < NSTATES ? state_names[state] : "unknown";
}

int key_state_parse(const char *s, enum key_state *out)
{
	for (size_t i = 0; i < NSTATES; i++)
		if (strcmp(s, state_names[i]) == 0) {
			*out = (enum key_state)i;
			return 0;
		}
	return -EINVAL;
}

int key_state_errno(enum key_state state)
{
	switch (state) {
	case KEY_STATE_REVOKED:
		return -EKEYREVOKED;
	case KEY_STATE_EXPIRED:
		return -EKEYEXPIRED;
	case KEY_STATE_NEGATIVE:
	case KEY_STATE_INVALIDATED:
		return -ENOKEY;
	default:
		return 0;
	}
}
