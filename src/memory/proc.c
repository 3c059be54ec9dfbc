/* proc.c: the memory backend's /proc/keys, /proc/key-users and supports texts. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "memory.h"

struct text {
	char *p;
	size_t len, cap;
	int err;
};

static void text_printf(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void text_printf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->p ? t->p + t->len : NULL,
			      t->p ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = -EINVAL;
			return;
		}
		if (t->p && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap : 1024;
		while (cap <= t->len + (size_t)n)
			cap *= 2;
		char *np = realloc(t->p, cap);
		if (!np) {
			t->err = -ENOMEM;
			return;
		}
		t->p = np;
		t->cap = cap;
	}
}

static int text_finish(struct text *t, char **text_alloc)
{
	if (!t->err && !t->p)
		text_printf(t, "%s", "");
	if (t->err) {
		free(t->p);
		return t->err;
	}
	*text_alloc = t->p;
	return 0;
}

/* proc_keys_show()'s timeout column. */
static void timeout_str(const struct mkey *k, time_t now, char *buf, size_t len)
{
	time_t t;

	if (!k->expiry) {
		snprintf(buf, len, "perm");
		return;
	}
	if (now >= k->expiry) {
		snprintf(buf, len, "expd");
		return;
	}
	t = k->expiry - now;
	if (t < 60)
		snprintf(buf, len, "%llds", (long long)t);
	else if (t < 60 * 60)
		snprintf(buf, len, "%lldm", (long long)(t / 60));
	else if (t < 60 * 60 * 24)
		snprintf(buf, len, "%lldh", (long long)(t / (60 * 60)));
	else if (t < 60 * 60 * 24 * 7)
		snprintf(buf, len, "%lldd", (long long)(t / (60 * 60 * 24)));
	else
		snprintf(buf, len, "%lldw", (long long)(t / (60 * 60 * 24 * 7)));
}

int mem_proc_keys(struct keyfs_backend *b, const struct keyfs_cred *c,
		  char **text_alloc)
{
	struct text t = { 0 };
	time_t now = time(NULL);
	struct mkey **keys;
	char *summary;
	size_t n;
	int ret;

	summary = malloc(KEYFS_DESC_MAX + 64);
	if (!summary)
		return -ENOMEM;
	mem_begin(b);
	ret = mem_viewable_keys(b, c, &keys, &n);
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct mkey *k = keys[i];
		char timeo[32];
		int usage = (int)k->nparents + (k->special ? 1 : 0);

		timeout_str(k, now, timeo, sizeof(timeo));
		k->type->describe(k, summary, KEYFS_DESC_MAX + 64);
		text_printf(&t, "%08x %c%c%c%c%c%c%c %5d %4s %08x %5d %5d %-9.9s %s\n",
			    (unsigned)k->serial, 'I', k->revoked ? 'R' : '-',
			    '-', k->in_quota ? 'Q' : '-', '-',
			    k->negative ? 'N' : '-', '-', usage ? usage : 1,
			    timeo, (unsigned)k->perm, (int)k->uid, (int)k->gid,
			    k->type->name, summary);
	}
	free(keys);
	ret = text_finish(&t, text_alloc);
out:
	mem_end_read(b);
	free(summary);
	return ret;
}

static int cmp_user(const void *x, const void *y)
{
	const struct muser *a = x, *c = y;

	return (a->uid > c->uid) - (a->uid < c->uid);
}

int mem_proc_key_users(struct keyfs_backend *b,
		       const struct keyfs_cred *c, char **text_alloc)
{
	struct text t = { 0 };
	struct muser *v;
	size_t n = 0;

	(void)c;
	mem_begin(b);
	mem_end_read(b);
	v = malloc((b->nusers ? b->nusers : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < b->nusers; i++)
		if (b->users[i].nkeys)
			v[n++] = b->users[i];
	qsort(v, n, sizeof(*v), cmp_user);
	for (size_t i = 0; i < n; i++) {
		unsigned long maxkeys, maxbytes;

		mem_quota_limits(b, v[i].uid, &maxkeys, &maxbytes);
		text_printf(&t, "%5u: %5lu %lu/%lu %lu/%lu %lu/%lu\n",
			    (unsigned)v[i].uid, v[i].nkeys + 1, v[i].nkeys,
			    v[i].nikeys, v[i].qnkeys, maxkeys, v[i].qnbytes,
			    maxbytes);
	}
	free(v);
	return text_finish(&t, text_alloc);
}

int mem_supports(struct keyfs_backend *b, char **text_alloc)
{
	struct text t = { 0 };

	(void)b;
	text_printf(&t, "have_capabilities=1\n"
			"have_persistent_keyrings=1\n"
			"have_dh_compute=0\n"
			"have_public_key=0\n"
			"have_big_key_type=1\n"
			"have_key_invalidate=1\n"
			"have_restrict_keyring=1\n"
			"have_move_key=1\n"
			"have_ns_keyring_name=0\n"
			"have_ns_key_tag=0\n"
			"have_notify=0\n");
	return text_finish(&t, text_alloc);
}
