/* test-names.c: TAP tests of entry-name escaping and parsing (src/names.c). */
#include <errno.h>

#include "names.h"
#include "tap.h"

#define NAME_BUF	(KEYFS_NAME_MAX + 1)

/* A string of n copies of c, in a buffer of the caller's. */
static char *fill(char *buf, char c, size_t n)
{
	memset(buf, c, n);
	buf[n] = '\0';
	return buf;
}

/* s with control bytes shown as \xNN, so a TAP line stays one line. */
static const char *shown(const char *s, char *buf, size_t n)
{
	size_t o = 0;

	for (; *s && o + 5 < n; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < ' ' || c == 0x7f)
			o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
		else
			buf[o++] = *s;
	}
	buf[o] = '\0';
	return buf;
}

static void escapes(const char *desc, const char *want)
{
	char out[NAME_BUF];

	is_int(name_escape(desc, out, sizeof(out)), 0, "escape '%s'", desc);
	is_str(out, want, "... is '%s'", want);
}

static void unescapes(const char *name, const char *want)
{
	char out[KEYFS_DESC_MAX + 1], show[64];

	is_int(name_unescape(name, out, sizeof(out)), 0, "unescape '%s'", name);
	is_str(out, want, "... is '%s'", shown(want, show, sizeof(show)));
}

static void unescape_fails(const char *name, int err)
{
	char out[KEYFS_DESC_MAX + 1];

	is_int(name_unescape(name, out, sizeof(out)), err,
	       "unescape '%s' fails", name);
}

static void test_escape(void)
{
	char desc[KEYFS_DESC_MAX + 1], out[NAME_BUF];

	escapes("foo", "foo");
	escapes("a%b", "a%25b");
	escapes("%", "%25");
	escapes("%%", "%25%25");
	escapes("%25", "%2525");
	escapes("a/b", "a%2Fb");
	escapes("/", "%2F");
	escapes("a/b/c%d", "a%2Fb%2Fc%25d");
	escapes(".", "%2E");
	escapes("..", "%2E%2E");
	escapes("...", "...");
	escapes("./", ".%2F");
	escapes("a.b", "a.b");
	escapes(".hidden", ".hidden");
	escapes("my key", "my key");
	escapes(" lead and trail ", " lead and trail ");
	escapes("cifs:alice", "cifs:alice");
	escapes("%logon:x", "%25logon:x");
	escapes("caf\xc3\xa9", "caf\xc3\xa9");
	escapes("", "");

	/* Length: at most outlen - 1 bytes, counted after escaping. */
	is_int(name_escape(fill(desc, 'a', 255), out, sizeof(out)), 0,
	       "a 255-byte description fits");
	is_int(strlen(out), 255, "... whole");
	is_int(name_escape(fill(desc, 'a', 256), out, sizeof(out)),
	       -ENAMETOOLONG, "a 256-byte description does not");
	is_int(name_escape(fill(desc, '/', 85), out, sizeof(out)), 0,
	       "85 '/' escape to 255 bytes");
	is_int(strlen(out), 255, "... whole");
	is_int(name_escape(fill(desc, '/', 86), out, sizeof(out)),
	       -ENAMETOOLONG, "86 '/' escape to 258 bytes");
	fill(desc, 'a', 253);
	desc[252] = '%';
	is_int(name_escape(desc, out, sizeof(out)), 0,
	       "252 bytes and a '%%' escape to 255");
	fill(desc, 'a', 254);
	desc[253] = '%';
	is_int(name_escape(desc, out, sizeof(out)), -ENAMETOOLONG,
	       "253 bytes and a '%%' escape to 256");
	fill(desc, 'a', 100);
	memset(desc, '%', 78);
	is_int(name_escape(desc, out, sizeof(out)), -ENAMETOOLONG,
	       "a 100-byte description with 78 '%%' escapes to 256");
	desc[77] = 'a';
	is_int(name_escape(desc, out, sizeof(out)), 0,
	       "a 100-byte description with 77 '%%' escapes to 254");
	is_int(name_escape(fill(desc, 'd', KEYFS_DESC_MAX), out, sizeof(out)),
	       -ENAMETOOLONG, "a 4095-byte description");
	is_int(name_escape("a", out, 0), -ENAMETOOLONG, "no room at all");
	is_int(name_escape("", out, 1), 0, "'' in one byte");
	is_int(name_escape("a", out, 1), -ENAMETOOLONG, "'a' in one byte");
	is_int(name_escape("%", out, 3), -ENAMETOOLONG, "'%%' in three bytes");
	is_int(name_escape("%", out, 4), 0, "'%%' in four bytes");
	is_int(name_escape("..", out, 6), -ENAMETOOLONG, "'..' in six bytes");
	is_int(name_escape("..", out, 7), 0, "'..' in seven bytes");
}

static void test_unescape(void)
{
	char out[8];

	unescapes("plain", "plain");
	unescapes("a%25b", "a%b");
	unescapes("%2F", "/");
	unescapes("%2f", "/");
	unescapes("%2Fa", "/a");
	unescapes("%20", " ");
	unescapes("my%20key", "my key");
	unescapes("%2E", ".");
	unescapes("%2E%2E", "..");
	unescapes("%41%62", "Ab");
	unescapes("%C3%A9", "\xc3\xa9");
	unescapes("%FF", "\xff");
	unescapes("%0A", "\n");
	unescapes("%01", "\x01");
	unescapes("", "");
	unescapes("a:b", "a:b");

	unescape_fails("%", -EINVAL);
	unescape_fails("a%", -EINVAL);
	unescape_fails("%2", -EINVAL);
	unescape_fails("a%2", -EINVAL);
	unescape_fails("%zz", -EINVAL);
	unescape_fails("%g0", -EINVAL);
	unescape_fails("%0g", -EINVAL);
	unescape_fails("% 1", -EINVAL);
	unescape_fails("%-1", -EINVAL);
	unescape_fails("%00", -EINVAL);
	unescape_fails("a%00b", -EINVAL);
	unescape_fails("ok%2Fthen%x", -EINVAL);

	is_int(name_unescape("1234567", out, sizeof(out)), 0,
	       "7 bytes fit in 8");
	is_int(name_unescape("12345678", out, sizeof(out)), -ENAMETOOLONG,
	       "8 bytes do not fit in 8");
	is_int(name_unescape("%20%20%20%20%20%20%20", out, sizeof(out)), 0,
	       "7 escapes fit in 8");
	is_str(out, "       ", "... seven spaces");
	is_int(name_unescape("", out, 0), -ENAMETOOLONG, "'' in no room");
	is_int(name_unescape("", out, 1), 0, "'' in one byte");
}

static void for_key(const char *type, const char *desc, bool typed,
		    const char *want)
{
	char out[NAME_BUF];

	is_int(name_for_key(type, desc, typed, out, sizeof(out)), 0,
	       "name of %s '%s'%s", type, desc, typed ? " (typed)" : "");
	is_str(out, want, "... is '%s'", want);
}

static void test_for_key(void)
{
	char desc[KEYFS_DESC_MAX + 1], out[NAME_BUF];

	for_key("user", "foo", false, "foo");
	for_key("user", "a/b%c", false, "a%2Fb%25c");
	for_key("user", ".", false, "%2E");
	for_key("user", "my key", false, "my key");
	for_key("user", "x", true, "%user:x");
	for_key("keyring", "_ses", false, "_ses");
	for_key("keyring", "foo", false, "foo");
	for_key("keyring", "foo", true, "%keyring:foo");
	for_key("keyring", "..", true, "%keyring:%2E%2E");
	for_key("logon", "cifs:alice", false, "%logon:cifs:alice");
	for_key("logon", "cifs:alice", true, "%logon:cifs:alice");
	for_key("logon", "a%b/c", false, "%logon:a%25b%2Fc");
	for_key("big_key", ".", false, "%big_key:%2E");
	for_key("asymmetric", "my cert", false, "%asymmetric:my cert");

	/* "%logon:" is 7 bytes, so 248 of description are left. */
	is_int(name_for_key("logon", fill(desc, 'd', 248), false, out,
			    sizeof(out)), 0, "logon with 248 bytes fits");
	is_int(strlen(out), 255, "... in 255");
	is_int(name_for_key("logon", fill(desc, 'd', 249), false, out,
			    sizeof(out)), -ENAMETOOLONG,
	       "logon with 249 bytes does not");
	is_int(name_for_key("logon", fill(desc, '/', 83), false, out,
			    sizeof(out)), -ENAMETOOLONG,
	       "logon with 83 '/' (256 escaped) does not");
	is_int(name_for_key("user", fill(desc, 'd', 256), false, out,
			    sizeof(out)), -ENAMETOOLONG,
	       "user with 256 bytes does not");
	is_int(name_for_key("keyring", fill(desc, 'd', 4095), true, out,
			    sizeof(out)), -ENAMETOOLONG,
	       "typed keyring with 4095 bytes does not");
	is_int(name_for_key("logon", "x", false, out, 7), -ENAMETOOLONG,
	       "no room for the type");
	is_int(name_for_key("logon", "x", false, out, 8), -ENAMETOOLONG,
	       "no room for the description");
	is_int(name_for_key("logon", "x", false, out, 9), 0,
	       "just room for both");
	is_str(out, "%logon:x", "... '%%logon:x'");
}

static void parses(const char *name, const char *type, const char *desc,
		   bool typed)
{
	char t[KEYFS_TYPE_MAX + 1], d[KEYFS_DESC_MAX + 1];
	bool ty = !typed;

	is_int(name_parse(name, t, d, &ty), 0, "parse '%s'", name);
	is_str(t, type, "... type '%s'", type);
	is_str(d, desc, "... description '%s'", desc);
	is_int(ty, typed, "... %s", typed ? "typed" : "plain");
}

static void parse_fails(const char *name, int err)
{
	char t[KEYFS_TYPE_MAX + 1], d[KEYFS_DESC_MAX + 1];
	bool ty;

	is_int(name_parse(name, t, d, &ty), err, "parse '%s' fails", name);
}

static void test_parse(void)
{
	char name[KEYFS_NAME_MAX + 8], want[KEYFS_NAME_MAX + 1];

	parses("foo", "", "foo", false);
	parses("my key", "", "my key", false);
	parses("a:b", "", "a:b", false);
	parses("a%20b", "", "a b", false);
	parses("%2Fa", "", "/a", false);
	parses("%2E", "", ".", false);
	parses("%2E%2E", "", "..", false);
	parses("%25foo:bar", "", "%foo:bar", false);
	parses("%25", "", "%", false);
	parses("%41:x", "", "A:x", false);
	parses("%logon:cifs:alice", "logon", "cifs:alice", true);
	parses("%keyring:foo", "keyring", "foo", true);
	parses("%user:foo", "user", "foo", true);
	parses("%big_key:x", "big_key", "x", true);
	parses("%logon:a%25b%2Fc", "logon", "a%b/c", true);
	parses("%logon:%2E", "logon", ".", true);
	parses("%logon:%25logon:x", "logon", "%logon:x", true);
	/* The type is what precedes the first ':'. */
	parses("%logon:a:b:c", "logon", "a:b:c", true);
	/* A name that could be either is typed: escapes of plain names that
	 * names.c writes all start with a digit (%25 %2F %2E). */
	parses("%ab:c", "ab", "c", true);

	parse_fails("", -EINVAL);
	parse_fails("%", -EINVAL);
	parse_fails("%zz", -EINVAL);
	parse_fails("a%", -EINVAL);
	parse_fails("a%2", -EINVAL);
	parse_fails("%00", -EINVAL);
	parse_fails("%logon:", -EINVAL);
	parse_fails("%logon:%zz", -EINVAL);
	parse_fails("%logon:a%00", -EINVAL);
	parse_fails("%:foo", -EINVAL);
	parse_fails("%9p:x", -EINVAL);
	parse_fails("%a b:c", -EINVAL);
	parse_fails("%x/y:z", -EINVAL);

	/* Type length: 31 bytes is a type, 32 is not (and "%xx" is then a
	 * bad escape). */
	fill(want, 'x', KEYFS_TYPE_MAX);
	snprintf(name, sizeof(name), "%%%s:d", want);
	parses(name, want, "d", true);
	fill(want, 'x', KEYFS_TYPE_MAX + 1);
	snprintf(name, sizeof(name), "%%%s:d", want);
	parse_fails(name, -EINVAL);

	/* Name length. */
	parses(fill(name, 'n', 255), "", fill(want, 'n', 255), false);
	parse_fails(fill(name, 'n', 256), -ENAMETOOLONG);
	memcpy(name, "%logon:", 7);
	fill(name + 7, 'n', 248);
	parses(name, "logon", fill(want, 'n', 248), true);
	fill(name + 7, 'n', 249);
	parse_fails(name, -ENAMETOOLONG);
	fill(name, 'n', 256);
	memcpy(name, "%2E", 3);
	parse_fails(name, -ENAMETOOLONG);
}

/* name_for_key, then name_parse, gives the key back. */
static void round_trip(const char *type, const char *desc, bool typed)
{
	char name[NAME_BUF], t[KEYFS_TYPE_MAX + 1], d[KEYFS_DESC_MAX + 1];
	char show[64];
	bool plain = !typed && (strcmp(type, "user") == 0 ||
				strcmp(type, "keyring") == 0);
	bool ty;
	int ret;

	ret = name_for_key(type, desc, typed, name, sizeof(name));
	if (ret == 0)
		ret = name_parse(name, t, d, &ty);
	is_int(ret, 0, "round trip of %s '%s'%s", type,
	       shown(desc, show, sizeof(show)), typed ? " (typed)" : "");
	if (ret < 0)
		return;
	is_str(d, desc, "... description back");
	is_str(t, plain ? "" : type, "... type back");
	is_int(ty, !plain, "... %s", plain ? "plain" : "typed");
}

static void test_round_trips(void)
{
	static const char *const descs[] = {
		"foo", "a/b", "%", "%25", "%2F", "%2E", ".", "..", "...", "./",
		"a b", " ", "%logon:x", "%user:x", "cifs:alice", ":", "-",
		"caf\xc3\xa9", "a\nb", "a\tb", "%%//..", "%ab:c", "%41",
	};
	static const struct {
		const char *type;
		bool typed;
	} types[] = {
		{ "user", false }, { "user", true }, { "keyring", false },
		{ "keyring", true }, { "logon", false }, { "big_key", false },
	};
	char desc[KEYFS_DESC_MAX + 1];

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		for (size_t j = 0; j < sizeof(descs) / sizeof(descs[0]); j++)
			round_trip(types[i].type, descs[j], types[i].typed);

	/* Every byte but NUL, in a name of its own. */
	for (int c = 1; c < 256; c++) {
		char one[2] = { (char)c, '\0' };
		char name[NAME_BUF], t[KEYFS_TYPE_MAX + 1];
		char d[KEYFS_DESC_MAX + 1];
		bool ty;

		if (name_for_key("user", one, false, name, sizeof(name)) < 0 ||
		    name_parse(name, t, d, &ty) < 0 || strcmp(d, one) != 0 ||
		    ty) {
			ok(0, "round trip of byte %d", c);
			break;
		}
		if (c == 255)
			ok(1, "round trip of every single byte");
	}

	round_trip("user", fill(desc, 'd', 255), false);
	round_trip("user", fill(desc, '/', 85), false);
	round_trip("logon", fill(desc, 'd', 248), false);
}

/* %#SERIAL: the name of a key the caller may not view (issue 16.5). */
static void test_serial_names(void)
{
	char buf[KEYFS_NAME_MAX + 1];
	kserial_t s = 0;

	is_int(name_of_serial(123456789, buf, sizeof(buf)), 0, "name of a serial");
	is_str(buf, "%#123456789", "... is %%#SERIAL");
	is_int(name_serial(buf, &s), 0, "read back");
	is_int(s, 123456789, "... the same serial");
	is_int(name_serial("%#2147483647", &s), 0, "the largest serial");
	is_int(name_serial("%#2147483648", &s), -EINVAL, "past int32: refused");
	is_int(name_serial("%#0", &s), -EINVAL, "serial 0: refused");
	is_int(name_serial("%#012", &s), -EINVAL, "a leading zero: refused");
	is_int(name_serial("%#12a", &s), -EINVAL, "not all digits: refused");
	is_int(name_serial("%#", &s), -EINVAL, "no digits: refused");
	is_int(name_serial("12", &s), -EINVAL, "a plain name: not a serial");
	is_int(name_serial("%23123", &s), -EINVAL, "the escape %%23: not a serial");
	/* no key's name has that form, and none can be made with it */
	parse_fails("%#123", -EINVAL);
	is_int(name_escape("#1", buf, sizeof(buf)), 0, "escape '#1'");
	is_str(buf, "#1", "... no '%%' before it");
}

int main(void)
{
	test_escape();
	test_unescape();
	test_for_key();
	test_parse();
	test_round_trips();
	test_serial_names();
	return done_testing();
}
