/* control-parse.c: parsing of one command written to a .keyfs/ control file. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "control-parse.h"
#include "specials.h"
#include "parse.h"
#include "names.h"

#define CTL_FIELDS_MAX	4	/* request has the most */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const char *const ctl_names[] = {
	[CTL_REVOKE]	 = "revoke",
	[CTL_INVALIDATE] = "invalidate",
	[CTL_LINK]	 = "link",
	[CTL_UNLINK]	 = "unlink",
	[CTL_SETPERM]	 = "setperm",
	[CTL_CHOWN]	 = "chown",
	[CTL_TIMEOUT]	 = "timeout",
	[CTL_CLEAR]	 = "clear",
	[CTL_REQUEST]	 = "request",
	[CTL_RESTRICT]	 = "restrict",
};

/* How many fields each command takes, at least and at most. */
static const struct {
	unsigned char min, max;
} ctl_arity[] = {
	[CTL_REVOKE]	 = { 1, 1 },
	[CTL_INVALIDATE] = { 1, 1 },
	[CTL_LINK]	 = { 2, 2 },
	[CTL_UNLINK]	 = { 2, 2 },
	[CTL_SETPERM]	 = { 2, 2 },
	[CTL_CHOWN]	 = { 2, 2 },
	[CTL_TIMEOUT]	 = { 2, 2 },
	[CTL_CLEAR]	 = { 1, 1 },
	[CTL_REQUEST]	 = { 2, 4 },
	[CTL_RESTRICT]	 = { 1, 3 },
};

int ctl_cmd_from_name(const char *name, enum ctl_cmd *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(ctl_names); i++)
		if (strcmp(name, ctl_names[i]) == 0) {
			*out = (enum ctl_cmd)i;
			return 0;
		}
	return -ENOENT;
}

void ctl_command_free(struct ctl_command *c)
{
	free(c->key.path);
	free(c->keyring.path);
	free(c->type);
	free(c->desc);
	free(c->callout);
	free(c->restriction);
	memset(c, 0, sizeof(*c));
}

/* The write as a C string without its trailing newline, in *out to be
 * freed by the caller.  A command is one line of text: a NUL byte or a
 * newline anywhere but at the very end is refused rather than cut off, so
 * a write never means less than it says. */
static int line_alloc(const char *buf, size_t len, char **out)
{
	char *line;

	if (len == 0 || len > CTL_LINE_MAX || memchr(buf, '\0', len))
		return -EINVAL;
	if (buf[len - 1] == '\n')
		len--;
	if (memchr(buf, '\n', len))
		return -EINVAL;
	line = malloc(len + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, buf, len);
	line[len] = '\0';
	*out = line;
	return 0;
}

/* Cut line into fields in place.  Only ' ' separates: a run of spaces is
 * one separator and spaces before the first or after the last field are
 * ignored, so no field is ever empty.  A tab is part of a field (a space
 * inside one is written %20).  The field count, or -EINVAL if over max. */
static int split_fields(char *line, char **fields, int max)
{
	char *p = line;
	int n = 0;

	for (;;) {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			return n;
		if (n == max)
			return -EINVAL;
		fields[n++] = p;
		while (*p != '\0' && *p != ' ')
			p++;
		if (*p != '\0')
			*p++ = '\0';
	}
}

/* A permission as keyctl prints it (0x3f010000), or decimal, or octal
 * with a leading 0: strtoul's base 0, without its sign or spaces. */
static int parse_perm(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* UID[:GID]; -1 (which keyctl_chown reads as "leave it") is not a uid
 * one can write here, and a missing gid is (gid_t)-1. */
static int parse_owner(const char *s, uid_t *uid, gid_t *gid)
{
	const char *colon = strchr(s, ':');
	unsigned long long v;
	char buf[24];
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	int ret;

	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	ret = parse_dec(buf, (uid_t)-1 - 1, &v);
	if (ret < 0)
		return ret;
	*uid = (uid_t)v;
	*gid = (gid_t)-1;
	if (!colon)
		return 0;
	ret = parse_dec(colon + 1, (gid_t)-1 - 1, &v);
	if (ret < 0)
		return ret;
	*gid = (gid_t)v;
	return 0;
}

/* The components of path joined by single '/', without "." components
 * or a leading or trailing '/', in *out_alloc.  ".." is -EINVAL: a
 * command names keys inside the mount only, and the tree has no parent
 * links to follow. */
static int path_normalise(const char *path, char **out_alloc)
{
	char *out = malloc(strlen(path) + 1);
	size_t o = 0;

	if (!out)
		return -ENOMEM;
	for (;;) {
		size_t n;

		while (*path == '/')
			path++;
		n = strcspn(path, "/");
		if (n == 0)
			break;
		if (n == 2 && path[0] == '.' && path[1] == '.') {
			free(out);
			return -EINVAL;
		}
		if (!(n == 1 && path[0] == '.')) {
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, path, n);
			o += n;
		}
		path += n;
	}
	out[o] = '\0';
	*out_alloc = out;
	return 0;
}

/* An absolute path inside the mount, as a path relative to its root.
 * Both are normalised first, so "/mnt//k/./x" is inside "/mnt/k"; the
 * mountpoint must be followed by a component boundary, so "/mnt/kx" is
 * not inside "/mnt/k". */
static int path_in_mount(const char *path, const char *mountpoint,
			 char **out_alloc)
{
	char *full = NULL, *mp = NULL;
	size_t mpl;
	int ret;

	if (!mountpoint || mountpoint[0] != '/')
		return -EINVAL;
	ret = path_normalise(path, &full);
	if (ret < 0)
		goto out;
	ret = path_normalise(mountpoint, &mp);
	if (ret < 0)
		goto out;
	mpl = strlen(mp);
	if (mpl > 0) {
		if (strncmp(full, mp, mpl) != 0 ||
		    (full[mpl] != '\0' && full[mpl] != '/')) {
			ret = -EINVAL;
			goto out;
		}
		if (full[mpl] == '/')
			mpl++;
		memmove(full, full + mpl, strlen(full + mpl) + 1);
	}
	*out_alloc = full;
	full = NULL;
out:
	free(mp);
	free(full);
	return ret;
}

static int parse_special(const char *s, int *special)
{
	const struct keyfs_special_name *sp = keyfs_special_by_name(s);

	if (!sp)
		return -EINVAL;
	*special = sp->which;
	return 0;
}

/*
 * A KEY or KEYRING field.  A field starting with '#' must be a serial and
 * one starting with '@' a special keyring: a key whose name starts with
 * either is written "./#name".  An empty path (".", "/MOUNT") is the mount
 * root, which only a KEYRING field may name (root_ok).
 */
static int parse_ref(const char *s, const char *mountpoint, bool root_ok,
		     struct ctl_ref *ref)
{
	unsigned long long v;
	int ret;

	if (s[0] == '#') {
		ret = parse_dec(s + 1, INT32_MAX, &v);
		if (ret < 0 || v == 0)
			return -EINVAL;
		ref->kind = CTL_REF_SERIAL;
		ref->serial = (kserial_t)v;
		return 0;
	}
	if (s[0] == '@') {
		ret = parse_special(s, &ref->special);
		if (ret == 0)
			ref->kind = CTL_REF_SPECIAL;
		return ret;
	}
	if (s[0] == '/')
		ret = path_in_mount(s, mountpoint, &ref->path);
	else
		ret = path_normalise(s, &ref->path);
	if (ret < 0)
		return ret;
	ref->kind = CTL_REF_PATH;
	if (!root_ok && ref->path[0] == '\0')
		return -EINVAL;	/* the caller frees ref->path */
	return 0;
}

/* A %-escaped text field, unescaped into a new string of at most max
 * bytes; any failure, a length one included, is bad syntax. */
static int text_alloc(const char *s, size_t max, char **out_alloc)
{
	size_t len = strlen(s);
	char *out;
	int ret;

	/* Unescaping never lengthens, so len + 1 always holds the result
	 * and a limit below it is the only one that can be hit. */
	if (max > len)
		max = len;
	out = malloc(max + 1);
	if (!out)
		return -ENOMEM;
	ret = name_unescape(s, out, max + 1);
	if (ret < 0) {
		free(out);
		return -EINVAL;
	}
	*out_alloc = out;
	return 0;
}

static int parse_request(char **f, int n, const char *mountpoint,
			 struct ctl_command *c)
{
	int ret;

	ret = text_alloc(f[0], KEYFS_TYPE_MAX, &c->type);
	if (ret < 0)
		return ret;
	ret = text_alloc(f[1], KEYFS_DESC_MAX, &c->desc);
	if (ret < 0)
		return ret;
	/* "-" is keyctl's "no callout"; %2D is a literal "-". */
	if (n > 2 && strcmp(f[2], "-") != 0) {
		ret = text_alloc(f[2], CTL_LINE_MAX, &c->callout);
		if (ret < 0)
			return ret;
	}
	if (n > 3)
		return parse_ref(f[3], mountpoint, true, &c->keyring);
	c->keyring.kind = CTL_REF_SPECIAL;
	c->keyring.special = KEYFS_SPEC_SESSION;
	return 0;
}

static int parse_restrict(char **f, int n, const char *mountpoint,
			  struct ctl_command *c)
{
	int ret;

	ret = parse_ref(f[0], mountpoint, true, &c->key);
	if (ret < 0 || n < 2)
		return ret;
	ret = text_alloc(f[1], KEYFS_TYPE_MAX, &c->type);
	if (ret < 0 || n < 3)
		return ret;
	return text_alloc(f[2], CTL_LINE_MAX, &c->restriction);
}

static int parse_fields(enum ctl_cmd cmd, char **f, int n,
			const char *mountpoint, struct ctl_command *c)
{
	unsigned long long v;
	int ret;

	switch (cmd) {
	case CTL_REVOKE:
	case CTL_INVALIDATE:
		return parse_ref(f[0], mountpoint, false, &c->key);
	case CTL_CLEAR:
		return parse_ref(f[0], mountpoint, true, &c->key);
	case CTL_LINK:
	case CTL_UNLINK:
		ret = parse_ref(f[0], mountpoint, false, &c->key);
		if (ret < 0)
			return ret;
		return parse_ref(f[1], mountpoint, true, &c->keyring);
	case CTL_SETPERM:
		ret = parse_ref(f[0], mountpoint, false, &c->key);
		if (ret < 0)
			return ret;
		return parse_perm(f[1], &c->perm);
	case CTL_CHOWN:
		ret = parse_ref(f[0], mountpoint, false, &c->key);
		if (ret < 0)
			return ret;
		return parse_owner(f[1], &c->uid, &c->gid);
	case CTL_TIMEOUT:
		ret = parse_ref(f[0], mountpoint, false, &c->key);
		if (ret < 0)
			return ret;
		ret = parse_dec(f[1], UINT_MAX, &v);
		if (ret == 0)
			c->timeout = (unsigned)v;
		return ret;
	case CTL_REQUEST:
		return parse_request(f, n, mountpoint, c);
	case CTL_RESTRICT:
		return parse_restrict(f, n, mountpoint, c);
	}
	return -EINVAL;
}

/*
 * Leading and trailing spaces are accepted and ignored (echo-style
 * writers and hand-typed commands differ there); empty fields cannot
 * be written at all.  A KEY field may not name the mount root; a KEYRING
 * field may.  For clear and restrict the KEYRING is in c->key; request's
 * KEYRING, @s when not given, is in c->keyring.
 */
int ctl_parse(enum ctl_cmd cmd, const char *buf, size_t len,
	      const char *mountpoint, struct ctl_command *out)
{
	char *line = NULL, *fields[CTL_FIELDS_MAX];
	int n, ret;

	memset(out, 0, sizeof(*out));
	if ((size_t)cmd >= ARRAY_SIZE(ctl_arity))
		return -EINVAL;
	ret = line_alloc(buf, len, &line);
	if (ret < 0)
		return ret;
	n = split_fields(line, fields, ctl_arity[cmd].max);
	if (n < ctl_arity[cmd].min) {
		ret = -EINVAL;
		goto out;
	}
	out->cmd = cmd;
	ret = parse_fields(cmd, fields, n, mountpoint, out);
out:
	free(line);
	if (ret < 0)
		ctl_command_free(out);
	return ret;
}
