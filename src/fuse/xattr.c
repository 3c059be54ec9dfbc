/* xattr.c: the user.keyfs.* extended attributes of keys, keyrings and pending entries. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>

#include "attr.h"
#include "parse.h"
#include "pending.h"

#define XATTR_PREFIX		"user.keyfs."
/* The longest value a writable attribute takes: a 32-bit hex number or a
 * time.  Anything longer is refused before it is looked at. */
#define XATTR_VALUE_MAX		32

enum xattr_id {
	XA_TYPE,
	XA_DESCRIPTION,
	XA_SERIAL,
	XA_PERM,
	XA_EXPIRY,
	XA_SECURITY,
	XA_STATE,
	XA_COUNT,
};

static const struct {
	const char *name;	/* the full name, prefix included */
	bool writable;
} xattrs[XA_COUNT] = {
	[XA_TYPE]	 = { XATTR_PREFIX "type", false },
	[XA_DESCRIPTION] = { XATTR_PREFIX "description", false },
	[XA_SERIAL]	 = { XATTR_PREFIX "serial", false },
	[XA_PERM]	 = { XATTR_PREFIX "perm", true },
	[XA_EXPIRY]	 = { XATTR_PREFIX "expiry", true },
	[XA_SECURITY]	 = { XATTR_PREFIX "security", false },
	[XA_STATE]	 = { XATTR_PREFIX "state", false },
};

/* Which attribute a name is; -1 for none of ours. */
static int xattr_lookup(const char *name)
{
	for (int i = 0; i < XA_COUNT; i++)
		if (strcmp(name, xattrs[i].name) == 0)
			return i;
	return -1;
}

/* Keys, keyrings and pending entries carry attributes; the nodes keyfs
 * makes up (root, by-id, .keyfs and its files, symlinks) carry none. */
static bool has_xattrs(const struct tnode *tn)
{
	return tn->kind == T_KEY || tn->kind == T_PENDING;
}

/* The LSM label in *label_alloc, or NULL when the key has none (no LSM,
 * an empty label, or a backend that cannot tell). */
static int security_alloc(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  kserial_t serial, char **label_alloc)
{
	char *label = NULL;
	int ret;

	ret = BACKEND_CALL(ctx, security, c, serial, &label);
	if (ret == -EOPNOTSUPP || ret == -ENODATA)
		ret = 0;
	if (ret < 0)
		return ret;
	if (label && label[0] == '\0') {
		free(label);
		label = NULL;
	}
	*label_alloc = label;
	return 0;
}

/* Put len bytes of val into buf as getxattr(2) does: size 0 asks for the
 * length only. */
static int copy_out(char *buf, size_t size, const char *val, size_t len)
{
	if (len > INT_MAX)
		return -E2BIG;
	if (size == 0)
		return (int)len;
	if (len > size)
		return -ERANGE;
	memcpy(buf, val, len);
	return (int)len;
}

/* The value of attribute id, in *val_alloc (NUL-terminated for
 * convenience; the attribute's value is the text without the NUL). */
static int value_alloc(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       const struct key_info *ki, enum xattr_id id,
		       char **val_alloc)
{
	bool pending = ki->state == KEY_STATE_PENDING;
	char num[32], *val = NULL;
	int ret;

	switch (id) {
	case XA_TYPE:
		val = strdup(ki->type);
		break;
	case XA_DESCRIPTION:
		val = strdup(ki->desc);
		break;
	case XA_SERIAL:
		if (pending)
			return -ENODATA;
		snprintf(num, sizeof(num), "%d", (int)ki->serial);
		val = strdup(num);
		break;
	case XA_PERM:
		snprintf(num, sizeof(num), "0x%08x", (unsigned)ki->perm);
		val = strdup(num);
		break;
	case XA_EXPIRY:
		snprintf(num, sizeof(num), "%lld", (long long)ki->expiry);
		val = strdup(num);
		break;
	case XA_SECURITY:
		if (pending)
			return -ENODATA;
		ret = security_alloc(ctx, c, ki->serial, &val);
		if (ret < 0)
			return ret;
		if (!val)
			return -ENODATA;
		break;
	case XA_STATE:
		val = strdup(key_state_name(ki->state));
		break;
	case XA_COUNT:
		return -ENODATA;
	}
	if (!val)
		return -ENOMEM;
	*val_alloc = val;
	return 0;
}

/* keyfs has attributes in the user namespace only.  A name in another
 * (security.selinux, system.posix_acl_access) is EOPNOTSUPP, as on any
 * file system without that namespace: ls -l and cp -a then stop asking
 * for the whole mount after the first, where ENODATA would cost two
 * uncached FUSE round trips for every entry listed. */
static bool in_user_namespace(const char *name)
{
	return strncmp(name, "user.", 5) == 0;
}

int xattr_get(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
	      const struct tnode *tn, const char *name, char *buf, size_t size)
{
	struct key_info ki;
	char *val = NULL;
	int id = xattr_lookup(name), ret;

	if (!in_user_namespace(name))
		return -EOPNOTSUPP;
	if (id < 0 || !has_xattrs(tn))
		return -ENODATA;
	ret = attr_key_info(ctx, c, tn, &ki);
	if (ret < 0)
		return ret;
	ret = value_alloc(ctx, c, &ki, (enum xattr_id)id, &val);
	if (ret < 0)
		return ret;
	ret = copy_out(buf, size, val, strlen(val));
	free(val);
	return ret;
}

int xattr_list(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
	       const struct tnode *tn, char *buf, size_t size)
{
	char names[512];	/* every name, each with its NUL */
	struct key_info ki;
	size_t len = 0;
	int ret;

	if (!has_xattrs(tn))
		return 0;
	ret = attr_key_info(ctx, c, tn, &ki);
	if (ret < 0)
		return ret;
	for (int i = 0; i < XA_COUNT; i++) {
		size_t n = strlen(xattrs[i].name) + 1;

		/* Only what getxattr answers: a pending entry has no serial
		 * and no label yet, and most keys have no label at all. */
		if (ki.state == KEY_STATE_PENDING &&
		    (i == XA_SERIAL || i == XA_SECURITY))
			continue;
		if (i == XA_SECURITY) {
			char *label = NULL;

			if (security_alloc(ctx, c, ki.serial, &label) < 0 ||
			    !label)
				continue;
			free(label);
		}
		memcpy(names + len, xattrs[i].name, n);
		len += n;
	}
	return copy_out(buf, size, names, len);
}

/* "+N": N seconds from now; "0": no expiry; "T": at time T, which must be
 * in the future.  *secs is the timeout from now, 0 to clear. */
static int parse_expiry(const char *s, time_t now, unsigned *secs)
{
	unsigned long long v;
	int ret;

	if (s[0] == '+')
		ret = parse_dec(s + 1, UINT_MAX, &v);
	else
		ret = parse_dec(s, LLONG_MAX, &v);
	if (ret < 0)
		return ret;
	if (s[0] != '+' && v != 0) {
		if (v <= (unsigned long long)now ||
		    v - (unsigned long long)now > UINT_MAX)
			return -EINVAL;
		v -= (unsigned long long)now;
	}
	*secs = (unsigned)v;
	return 0;
}

/* Setting a read-only attribute to the value it has changes nothing and
 * succeeds, so that copies (mv across file systems, rsync -X, tar) that
 * set every attribute they read go through; any other value is EPERM. */
static int set_readonly(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			const struct tnode *tn, enum xattr_id id,
			const char *value, size_t size)
{
	struct key_info ki;
	char *val = NULL;
	int ret = attr_key_info(ctx, c, tn, &ki);

	if (ret == 0)
		ret = value_alloc(ctx, c, &ki, id, &val);
	if (ret == 0)
		ret = strlen(val) == size && memcmp(val, value, size) == 0 ? 0 : -EPERM;
	free(val);
	return ret == -ENODATA ? -EPERM : ret;
}

/* setfattr sends a value typed as 0x... as the bytes it spells, so a
 * number may come as n big-endian bytes.  Text is a number's digits and
 * never holds a NUL or a control character, so such a value of exactly n
 * bytes is binary; one that reads as text is text. */
static bool is_binary(const char *value, size_t size, size_t n)
{
	if (size != n)
		return false;
	for (size_t i = 0; i < size; i++)
		if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] >= 0x7f)
			return true;
	return false;
}

static uint64_t be_value(const char *value, size_t size)
{
	uint64_t v = 0;

	for (size_t i = 0; i < size; i++)
		v = v << 8 | (unsigned char)value[i];
	return v;
}

/* A value of perm or expiry: text, or the binary form is_binary names
 * (perm: 4 bytes, the mask; expiry: 8 bytes, a time as "T" means it). */
static int parse_value(enum xattr_id id, const char *value, size_t size,
		       time_t now, uint32_t *perm, unsigned *secs)
{
	char text[XATTR_VALUE_MAX + 1];
	int ret;

	if (id == XA_PERM && is_binary(value, size, 4)) {
		*perm = (uint32_t)be_value(value, size);
		return 0;
	}
	if (id == XA_EXPIRY && is_binary(value, size, 8)) {
		uint64_t v = be_value(value, size);

		if (v > LLONG_MAX)
			return -EINVAL;
		snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
		return parse_expiry(text, now, secs);
	}
	if (size == 0 || size > XATTR_VALUE_MAX || memchr(value, '\0', size))
		return -EINVAL;
	memcpy(text, value, size);
	text[size] = '\0';
	if (id != XA_PERM)
		return parse_expiry(text, now, secs);
	/* A mask whose four bytes are all printable (every class with
	 * setattr: 0x3f3f3f3f is "????") reads as text, but not as a
	 * number: binary then. */
	ret = parse_hex32(text, perm);
	if (ret < 0 && size == 4) {
		*perm = (uint32_t)be_value(value, size);
		ret = 0;
	}
	return ret;
}

int xattr_set(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
	      const struct tnode *tn, const char *name, const char *value,
	      size_t size, int flags)
{
	time_t now = time(NULL);
	uint32_t perm = 0;
	unsigned secs = 0;
	kserial_t serial;
	int id = xattr_lookup(name), ret;

	if (id < 0)
		return -EOPNOTSUPP;
	if (!has_xattrs(tn) || (!xattrs[id].writable && (flags & XATTR_CREATE)))
		return -EPERM;
	if (!xattrs[id].writable)
		return set_readonly(ctx, c, tn, (enum xattr_id)id, value, size);
	/* perm and expiry always exist on a key, so they can only be
	 * replaced. */
	if (flags & XATTR_CREATE)
		return -EEXIST;
	ret = parse_value((enum xattr_id)id, value, size, now, &perm, &secs);
	if (ret < 0)
		return ret;

	/* A pending entry keeps what is set on it until the key is made. */
	if (tn->kind == T_PENDING && node_pending_live(tn->node))
		return id == XA_PERM ? pending_setperm(ctx, c, tn->node, perm) :
		       pending_set_expiry(ctx, c, tn->node,
					  secs ? now + (time_t)secs : 0);
	serial = tn->serial;
	if (serial == 0 && tn->kind == T_PENDING)
		serial = tn->node->serial;
	if (serial == 0)
		return -ENOENT;
	if (id == XA_PERM)
		return BACKEND_CALL(ctx, setperm, c, serial, perm);
	return BACKEND_CALL(ctx, set_timeout, c, serial, secs);
}

int xattr_remove(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		 const struct tnode *tn, const char *name)
{
	int ret;

	/* The attributes are the key's own properties: none can go, but
	 * one the node does not show (any on a virtual node, a pending
	 * entry's serial) is simply absent. */
	ret = xattr_get(ctx, c, tn, name, NULL, 0);
	return ret < 0 ? ret : -EPERM;
}
