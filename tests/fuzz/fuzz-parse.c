/* fuzz-parse.c: libFuzzer target for the number and state parsers (src/parse.c), against simple references. */
#include <errno.h>
#include <inttypes.h>

#include "fuzz.h"
#include "parse.h"

/* The limits callers pass, and some small ones a caller could. */
static const unsigned long long limits[] = {
	0, 1, 5, 9, 10, 99, 255, 4294967294ULL, 4294967295ULL,
	2147483647ULL, 9223372036854775807ULL, 18446744073709551615ULL,
};

/* What parse_dec must do: digits only, at least one, value at most max. */
static int ref_dec(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned __int128 v = 0;

	if (*s == '\0')
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > max)
			return -EINVAL;
	}
	*out = (unsigned long long)v;
	return 0;
}

static int ref_hex32(const char *s, uint32_t *out)
{
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (*s == '\0')
		return -EINVAL;
	for (; *s; s++) {
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned long long max, got = 0, want = 0;
	uint32_t h = 0, hw = 0;
	enum key_state st;
	char *s;
	int r1, r2;

	if (size < 1)
		return 0;
	max = limits[data[0] % (sizeof(limits) / sizeof(limits[0]))];
	s = fuzz_strdup(data + 1, size - 1);

	r1 = parse_dec(s, max, &got);
	r2 = ref_dec(s, max, &want);
	CHECK(r1 == r2);
	if (r1 == 0) {
		char buf[32];

		CHECK(got == want && got <= max);
		/* Formatting gives the input back, less its leading zeros. */
		snprintf(buf, sizeof(buf), "%llu", got);
		const char *p = s;
		while (p[0] == '0' && p[1] != '\0')
			p++;
		CHECK(strcmp(buf, p) == 0);
	}

	r1 = parse_hex32(s, &h);
	r2 = ref_hex32(s, &hw);
	CHECK(r1 == r2);
	if (r1 == 0) {
		char buf[16];

		CHECK(h == hw);
		snprintf(buf, sizeof(buf), "%" PRIx32, h);
		CHECK(parse_hex32(buf, &hw) == 0 && hw == h);
	}

	if (key_state_parse(s, &st) == 0)
		CHECK(strcmp(key_state_name(st), s) == 0);
	free(s);
	return 0;
}
