/* names.c: escaping of descriptions into entry names and back. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "names.h"
#include "parse.h"

static int put(char *out, size_t outlen, size_t *o, const char *s, size_t n)
{
	if (*o + n >= outlen)
		return -ENAMETOOLONG;
	memcpy(out + *o, s, n);
	*o += n;
	return 0;
}

int name_escape(const char *desc, char *out, size_t outlen)
{
	size_t o = 0;
	int ret = 0;

	if (outlen == 0)
		return -ENAMETOOLONG;
	if (strcmp(desc, ".") == 0)
		ret = put(out, outlen, &o, "%2E", 3);
	else if (strcmp(desc, "..") == 0)
		ret = put(out, outlen, &o, "%2E%2E", 6);
	else
		for (const char *p = desc; *p && ret == 0; p++) {
			if (*p == '%')
				ret = put(out, outlen, &o, "%25", 3);
			else if (*p == '/')
				ret = put(out, outlen, &o, "%2F", 3);
			else
				ret = put(out, outlen, &o, p, 1);
		}
	if (ret < 0)
		return ret;
	out[o] = '\0';
	return 0;
}

int name_unescape(const char *name, char *out, size_t outlen)
{
	size_t o = 0;

	for (const char *p = name; *p; p++) {
		char c = *p;

		if (c == '%') {
			int hi = parse_hexdigit(p[1]), lo = hi < 0 ? -1 : parse_hexdigit(p[2]);

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -EINVAL;
			c = (char)(hi << 4 | lo);
			p += 2;
		}
		if (o + 1 >= outlen)
			return -ENAMETOOLONG;
		out[o++] = c;
	}
	if (outlen == 0)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return 0;
}

int name_for_key(const char *type, const char *desc, bool typed,
		 char *out, size_t outlen)
{
	size_t tl = strlen(type);

	if (!typed && (strcmp(type, "user") == 0 || keyfs_is_keyring_type(type)))
		return name_escape(desc, out, outlen);
	if (tl + 2 >= outlen)
		return -ENAMETOOLONG;
	out[0] = '%';
	memcpy(out + 1, type, tl);
	out[tl + 1] = ':';
	return name_escape(desc, out + tl + 2, outlen - tl - 2);
}

/* A type name: printable, no ':', '/' or '%'.  It may not start with a
 * digit, so that "%25..." and "%2F..." stay escapes of a plain name. */
static bool type_ok(const char *t, size_t n)
{
	if (n == 0 || n > KEYFS_TYPE_MAX || (t[0] >= '0' && t[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (t[i] <= ' ' || t[i] > '~' || t[i] == '/' || t[i] == '%')
			return false;
	return true;
}

int name_parse(const char *name, char *type, char *desc, bool *typed)
{
	const char *colon;

	if (strlen(name) > KEYFS_NAME_MAX)
		return -ENAMETOOLONG;
	*typed = false;
	type[0] = '\0';
	if (name[0] == '%' && (colon = strchr(name, ':')) != NULL &&
	    type_ok(name + 1, (size_t)(colon - name - 1))) {
		memcpy(type, name + 1, (size_t)(colon - name - 1));
		type[colon - name - 1] = '\0';
		*typed = true;
		name = colon + 1;
	}
	if (name[0] == '\0')
		return -EINVAL;
	return name_unescape(name, desc, KEYFS_DESC_MAX + 1);
}

/* "%#" is neither a %XX escape ('#' is no hex digit) nor a %TYPE:NAME
 * prefix (no ':'), so no key's name is ever of this form. */
int name_of_serial(kserial_t serial, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%%#%d", (int)serial);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int name_serial(const char *name, kserial_t *out)
{
	long v = 0;
	const char *p = name + 2;

	if (name[0] != '%' || name[1] != '#' || *p < '1' || *p > '9')
		return -EINVAL;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (*p - '0');
		if (v > INT32_MAX)
			return -EINVAL;
	}
	*out = (kserial_t)v;
	return 0;
}
