/* fuzz-names.c: libFuzzer target for entry-name escaping, unescaping and parsing (src/names.c), with round trips. */
#include <errno.h>

#include "fuzz.h"
#include "names.h"

#define BIG	(3 * (KEYFS_DESC_MAX + 1) + 64)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char esc[BIG], un[BIG], esc2[BIG], un2[BIG];
	static char type[KEYFS_TYPE_MAX + 1], desc[KEYFS_DESC_MAX + 1];
	static char type2[KEYFS_TYPE_MAX + 1], desc2[KEYFS_DESC_MAX + 1];
	char small[KEYFS_NAME_MAX + 1];
	bool typed, typed2;
	char *s = fuzz_strdup(data, size);
	size_t outlen;
	int r;

	/* Escape, then unescape: the description comes back. */
	r = name_escape(s, esc, sizeof(esc));
	if (r == 0) {
		CHECK(strchr(esc, '/') == NULL);
		CHECK(strcmp(esc, ".") != 0 && strcmp(esc, "..") != 0);
		CHECK(name_unescape(esc, un, sizeof(un)) == 0);
		CHECK(strcmp(un, s) == 0);
		/* Into an entry-name buffer: fits exactly when short enough. */
		r = name_escape(s, small, sizeof(small));
		CHECK(r == (strlen(esc) <= KEYFS_NAME_MAX ? 0 : -ENAMETOOLONG));
		if (r == 0)
			CHECK(strcmp(small, esc) == 0);
	}

	/* Unescape any input into a buffer of a size the input picks; what
	 * it gives escapes and unescapes back to itself. */
	outlen = size ? data[0] : 0;
	r = name_unescape(s, un, outlen);
	CHECK(r == 0 || r == -EINVAL || r == -ENAMETOOLONG);
	if (r == 0) {
		CHECK(strlen(un) < outlen);
		CHECK(name_escape(un, esc2, sizeof(esc2)) == 0);
		CHECK(name_unescape(esc2, un2, sizeof(un2)) == 0);
		CHECK(strcmp(un, un2) == 0);
	}

	/* Parse an entry name, format it again, parse that: same key. */
	r = name_parse(s, type, desc, &typed);
	CHECK(r == 0 || r == -EINVAL || r == -ENAMETOOLONG);
	if (r == 0) {
		CHECK(strlen(type) <= KEYFS_TYPE_MAX && strlen(desc) <= KEYFS_DESC_MAX);
		CHECK(typed == (type[0] != '\0'));
		if (typed)
			r = name_for_key(type, desc, true, small, sizeof(small));
		else
			r = name_escape(desc, small, sizeof(small));
		CHECK(r == 0 || r == -ENAMETOOLONG);
		if (r == 0) {
			CHECK(name_parse(small, type2, desc2, &typed2) == 0);
			CHECK(typed2 == typed);
			CHECK(strcmp(type2, type) == 0 && strcmp(desc2, desc) == 0);
		}
	}
	free(s);
	return 0;
}
