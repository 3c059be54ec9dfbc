/* fuzz-control-parse.c: libFuzzer target for the control-file line parser (src/control-parse.c): parse, format, parse again. */
#include <errno.h>

#include "control-parse.h"
#include "fuzz.h"

#define NCMDS	(CTL_RESTRICT + 1)

static const char *const mountpoints[] = {
	"/mnt/keys", "/", "/tmp//k/./x/", "/a", NULL, "relative",
};

struct out {
	char *p;
	size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		o->cap = (o->len + n + 1) * 2;
		o->p = realloc(o->p, o->cap);
		if (!o->p)
			abort();
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* A text field: every byte but letters and digits as %XX, so spaces,
 * '%', '-' and any byte at all survive the parser's unescaping. */
static void put_text(struct out *o, const char *s)
{
	char b[4];

	puts_(o, " ");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9'))
			put(o, (const char *)&c, 1);
		else {
			snprintf(b, sizeof(b), "%%%02X", c);
			put(o, b, 3);
		}
	}
}

static const char *special_name(int special)
{
	switch (special) {
	case KEYFS_SPEC_SESSION:
		return "@s";
	case KEYFS_SPEC_USER:
		return "@u";
	case KEYFS_SPEC_USER_SESSION:
		return "@us";
	case KEYFS_SPEC_PROCESS:
		return "@p";
	}
	return NULL;
}

static void put_ref(struct out *o, const struct ctl_ref *r)
{
	const char *name;
	char b[32];

	switch (r->kind) {
	case CTL_REF_SERIAL:
		CHECK(r->serial > 0);
		snprintf(b, sizeof(b), " #%d", (int)r->serial);
		puts_(o, b);
		break;
	case CTL_REF_SPECIAL:
		name = special_name(r->special);
		CHECK(name != NULL);
		puts_(o, " ");
		puts_(o, name);
		break;
	case CTL_REF_PATH:
		/* "./" keeps a name starting with '#' or '@' a path. */
		puts_(o, " ./");
		puts_(o, r->path);
		break;
	}
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_ref(const struct ctl_ref *a, const struct ctl_ref *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case CTL_REF_SERIAL:
		return a->serial == b->serial;
	case CTL_REF_SPECIAL:
		return a->special == b->special;
	case CTL_REF_PATH:
		return same_str(a->path, b->path);
	}
	return false;
}

/* A path the parser gave: relative, normalised, no "." or "..".  A
 * field the command does not have is all zero: a path kind, no path. */
static void check_path(const struct ctl_ref *r)
{
	const char *p = r->path;

	if (r->kind != CTL_REF_PATH || !p)
		return;
	CHECK(p[0] != '/' && strstr(p, "//") == NULL);
	if (p[0])
		CHECK(p[strlen(p) - 1] != '/');
	for (const char *c = p; *c; ) {
		size_t n = strcspn(c, "/");

		CHECK(!(n == 1 && c[0] == '.'));
		CHECK(!(n == 2 && c[0] == '.' && c[1] == '.'));
		c += n;
		if (*c == '/')
			c++;
	}
}

static void check_zero(const struct ctl_command *c)
{
	static const struct ctl_command zero;

	CHECK(memcmp(c, &zero, sizeof(zero)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_command c, c2;
	struct out o = { 0 };
	enum ctl_cmd cmd;
	const char *mp;
	char b[64];
	int r;

	if (size < 2)
		return 0;
	/* One value past the last command: a bad one is refused too. */
	cmd = (enum ctl_cmd)(data[0] % (NCMDS + 1));
	mp = mountpoints[data[1] % (sizeof(mountpoints) / sizeof(mountpoints[0]))];
	data += 2;
	size -= 2;

	r = ctl_parse(cmd, (const char *)data, size, mp, &c);
	CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r < 0) {
		check_zero(&c);
		return 0;
	}
	CHECK(c.cmd == cmd && (unsigned)cmd < NCMDS);
	check_path(&c.key);
	check_path(&c.keyring);
	CHECK(cmd == CTL_REQUEST || c.key.kind != CTL_REF_PATH || c.key.path);
	if (cmd == CTL_LINK || cmd == CTL_UNLINK)
		CHECK(c.keyring.kind != CTL_REF_PATH || c.keyring.path);
	if (c.type)
		CHECK(strlen(c.type) <= KEYFS_TYPE_MAX);
	if (c.desc)
		CHECK(strlen(c.desc) <= KEYFS_DESC_MAX);

	/* Write the command back as a line and parse that: the same command. */
	switch (cmd) {
	case CTL_REVOKE:
	case CTL_INVALIDATE:
	case CTL_CLEAR:
		put_ref(&o, &c.key);
		break;
	case CTL_LINK:
	case CTL_UNLINK:
		put_ref(&o, &c.key);
		put_ref(&o, &c.keyring);
		break;
	case CTL_SETPERM:
		put_ref(&o, &c.key);
		snprintf(b, sizeof(b), " 0x%x", c.perm);
		puts_(&o, b);
		break;
	case CTL_CHOWN:
		put_ref(&o, &c.key);
		if (c.gid == (gid_t)-1)
			snprintf(b, sizeof(b), " %u", (unsigned)c.uid);
		else
			snprintf(b, sizeof(b), " %u:%u", (unsigned)c.uid, (unsigned)c.gid);
		puts_(&o, b);
		break;
	case CTL_TIMEOUT:
		put_ref(&o, &c.key);
		snprintf(b, sizeof(b), " %u", c.timeout);
		puts_(&o, b);
		break;
	case CTL_REQUEST:
		CHECK(c.type && c.desc);
		put_text(&o, c.type);
		put_text(&o, c.desc);
		if (c.callout)
			put_text(&o, c.callout);
		else
			puts_(&o, " -");
		put_ref(&o, &c.keyring);
		break;
	case CTL_RESTRICT:
		put_ref(&o, &c.key);
		if (c.type)
			put_text(&o, c.type);
		if (c.restriction) {
			CHECK(c.type);
			put_text(&o, c.restriction);
		}
		break;
	}
	puts_(&o, "\n");

	/* Escaping may take a line past the limit; that is no finding. */
	if (o.len <= CTL_LINE_MAX) {
		r = ctl_parse(cmd, o.p, o.len, mp, &c2);
		CHECK(r == 0);
		CHECK(c2.cmd == c.cmd);
		CHECK(same_ref(&c.key, &c2.key));
		CHECK(same_ref(&c.keyring, &c2.keyring));
		CHECK(c.perm == c2.perm && c.uid == c2.uid && c.gid == c2.gid);
		CHECK(c.timeout == c2.timeout);
		CHECK(same_str(c.type, c2.type) && same_str(c.desc, c2.desc));
		CHECK(same_str(c.callout, c2.callout));
		CHECK(same_str(c.restriction, c2.restriction));
		ctl_command_free(&c2);
	}
	free(o.p);
	ctl_command_free(&c);
	return 0;
}
