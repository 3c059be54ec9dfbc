/* test-parse.c: TAP tests of the strict number and state parsers (src/parse.c). */
#include <errno.h>
#include <limits.h>

#include "parse.h"
#include "tap.h"

static void dec(const char *s, unsigned long long max, int want_ret,
		unsigned long long want)
{
	unsigned long long v = 12345;
	int ret = parse_dec(s, max, &v);

	is_int(ret, want_ret, "parse_dec '%s' max %llu", s, max);
	if (want_ret == 0 && ret == 0)
		ok(v == want, "... is %llu (got %llu)", want, v);
}

static void hex(const char *s, int want_ret, uint32_t want)
{
	uint32_t v = 12345;
	int ret = parse_hex32(s, &v);

	is_int(ret, want_ret, "parse_hex32 '%s'", s);
	if (want_ret == 0 && ret == 0)
		is_int(v, want, "... is 0x%x", (unsigned)want);
}

int main(void)
{
	dec("0", 0, 0, 0);
	dec("42", UINT_MAX, 0, 42);
	dec("007", 9, 0, 7);
	dec("4294967295", UINT_MAX, 0, 4294967295ULL);
	dec("4294967296", UINT_MAX, -EINVAL, 0);
	dec("18446744073709551615", ULLONG_MAX, 0, ULLONG_MAX);
	dec("18446744073709551616", ULLONG_MAX, -EINVAL, 0);
	dec("", 10, -EINVAL, 0);
	dec("-1", 10, -EINVAL, 0);
	dec("+1", 10, -EINVAL, 0);
	dec(" 1", 10, -EINVAL, 0);
	dec("1 ", 10, -EINVAL, 0);
	/* Found by tests/fuzz/fuzz-parse: a limit below one digit's value
	 * wrapped the overflow check, so values over it were taken. */
	dec("123", 0, -EINVAL, 0);
	dec("5", 4, -EINVAL, 0);
	dec("10", 9, -EINVAL, 0);
	dec("4", 4, 0, 4);
	dec("10", 10, 0, 10);
	dec("11", 10, -EINVAL, 0);

	hex("0x3f010000", 0, 0x3f010000);
	hex("3F3F3F3F", 0, 0x3f3f3f3f);
	hex("0XfFfFfFfF", 0, 0xffffffff);
	hex("100000000", -EINVAL, 0);
	hex("0x", -EINVAL, 0);
	hex("", -EINVAL, 0);
	hex("0xg", -EINVAL, 0);
	hex("-1", -EINVAL, 0);

	for (int s = KEY_STATE_VALID; s <= KEY_STATE_INVALIDATED; s++) {
		enum key_state got;

		is_int(key_state_parse(key_state_name((enum key_state)s), &got), 0,
		       "state '%s' parses", key_state_name((enum key_state)s));
		is_int(got, s, "... as itself");
	}
	{
		enum key_state got;

		is_int(key_state_parse("Valid", &got), -EINVAL, "state names are exact");
	}
	return done_testing();
}
