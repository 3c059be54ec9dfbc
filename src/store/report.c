/* report.c: the one line naming the store file, and where in it, that says why it cannot be read or written. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store-int.h"

void store_where_key(struct store_ctx *c, kserial_t serial)
{
	snprintf(c->where, sizeof(c->where), "key %d: ", (int)serial);
}

void store_where_index(struct store_ctx *c, size_t i)
{
	snprintf(c->where, sizeof(c->where), "keys[%zu]: ", i);
}

__attribute__((format(printf, 2, 0)))
static void vreport(struct store_ctx *c, const char *fmt, va_list ap)
{
	int n;

	if (!c->err || c->errlen == 0)
		return;
	n = snprintf(c->err, c->errlen, "keyfs: %s: %s", c->path, c->where);
	if (n >= 0 && (size_t)n < c->errlen)
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
}

int store_fail(struct store_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(c, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int store_fail_errno(struct store_ctx *c, const char *what, int err)
{
	c->where[0] = '\0';
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "keyfs: %s: %s: %s", c->path, what,
			 strerror(-err));
	return err;
}
