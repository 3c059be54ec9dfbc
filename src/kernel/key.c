/* key.c: what keyfs remembers per serial, and the key types the kernel knows. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

/* ---- the cache by serial ---- */

struct kkey *kkey_get(struct keyfs_backend *b, kserial_t s)
{
	struct kkey *k;

	if (!b->nslots)
		return NULL;
	for (k = b->slots[hash_serial(s, b->nslots)]; k; k = k->next)
		if (k->serial == s)
			return k;
	return NULL;
}

static int kkey_grow(struct keyfs_backend *b)
{
	size_t nslots = b->nslots ? b->nslots * 2 : SLOTS_MIN;
	struct kkey **slots, *k, *next;

	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < b->nslots; i++)
		for (k = b->slots[i]; k; k = next) {
			size_t j = hash_serial(k->serial, nslots);

			next = k->next;
			k->next = slots[j];
			slots[j] = k;
		}
	free(b->slots);
	b->slots = slots;
	b->nslots = nslots;
	return 0;
}

/* The entry for s, made (first seen now) when there is none; NULL: ENOMEM. */
struct kkey *kkey_make(struct keyfs_backend *b, kserial_t s)
{
	struct kkey *k = kkey_get(b, s);
	size_t i;

	if (k)
		return k;
	if (b->n >= b->nslots && kkey_grow(b) < 0)
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->serial = s;
	k->seen_gen = b->kusers_gen;
	k->mtime_ns = k->ctime_ns = keyfs_now_ns();
	k->type = "";
	k->parents = &k->parent1;
	k->aparents = 1;
	i = hash_serial(s, b->nslots);
	k->next = b->slots[i];
	b->slots[i] = k;
	b->n++;
	return k;
}

void kkey_free(struct kkey *k)
{
	kidx_free(k->idx);
	if (k->parents != &k->parent1)
		free(k->parents);
	if (k->named)
		free((char *)k->type);
	free(k);
}

/* Forget a key the kernel no longer has.  The keyrings keyfs saw linking
 * it lost it behind keyfs's back, and may link another key under its name
 * by now: each is listed anew at its next lookup (fs-reply.c's
 * stale_if_gone has the kernel look the name up again). */
void kkey_drop(struct keyfs_backend *b, kserial_t s)
{
	struct kkey **pp, *k;

	if (!b->nslots)
		return;
	for (pp = &b->slots[hash_serial(s, b->nslots)]; (k = *pp);
	     pp = &k->next)
		if (k->serial == s) {
			*pp = k->next;
			for (uint32_t i = 0; i < k->nparents; i++)
				kring_note_unknown(b, k->parents[i]);
			kkey_free(k);
			b->n--;
			return;
		}
}

/* A change keyfs made ends the trust in the description before it
 * (kkey_recent). */
void kkey_touch_payload(struct kkey *k)
{
	if (k) {
		k->mtime_ns = k->ctime_ns = keyfs_now_ns();
		k->learned_ns = 0;
	}
}

void kkey_touch_change(struct kkey *k)
{
	if (k) {
		k->ctime_ns = keyfs_now_ns();
		k->learned_ns = 0;
	}
}

int kkey_parent_add(struct kkey *k, kserial_t ring)
{
	kserial_t *p;

	for (size_t i = 0; i < k->nparents; i++)
		if (k->parents[i] == ring)
			return 0;
	if (k->nparents == k->aparents) {
		bool inline1 = k->parents == &k->parent1;
		uint32_t n = inline1 ? 4 : k->aparents * 2;

		p = realloc(inline1 ? NULL : k->parents, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		if (inline1)
			p[0] = k->parent1;
		k->parents = p;
		k->aparents = n;
	}
	k->parents[k->nparents++] = ring;
	k->orphaned = false;
	return 0;
}

void kkey_parent_del(struct kkey *k, kserial_t ring)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nparents; i++)
		if (k->parents[i] == ring) {
			k->parents[i] = k->parents[--k->nparents];
			k->orphaned = k->nparents == 0;
			return;
		}
}

/* Set what a description says.  A serial reused by a new key starts anew;
 * a change of uid, gid or perm seen here is a change of the key. */
int kkey_note(struct kkey *k, const char *type, const char *desc)
{
	size_t tlen = strlen(type), dlen = strlen(desc);
	char *copy;

	if (kkey_is(k, type, desc))
		return 0;
	if (tlen > KEYFS_TYPE_MAX)
		return -EINVAL;
	copy = malloc(tlen + dlen + 2);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, type, tlen + 1);
	memcpy(copy + tlen + 1, desc, dlen + 1);
	if (k->named) {
		k->have_attr = false;
		k->exact_expiry = false;
		k->positive = false;
		k->dead = KEY_STATE_VALID;
		k->nparents = 0;
		k->mtime_ns = k->ctime_ns = keyfs_now_ns();
		k->learned_ns = 0;
		kidx_free(k->idx);
		k->idx = NULL;
		free((char *)k->type);
	}
	k->type = copy;
	k->named = true;
	return 0;
}

void kkey_note_attr(struct kkey *k, uid_t uid, gid_t gid, uint32_t perm)
{
	if (k->have_attr &&
	    (k->uid != uid || k->gid != gid || k->perm != perm))
		kkey_touch_change(k);
	k->uid = uid;
	k->gid = gid;
	k->perm = perm;
	k->have_attr = true;
}

/* ---- describing ---- */

struct kdesc {
	const char *type;
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	const char *desc;
};

/* Split "type;uid;gid;perm;description" in place; the description may
 * itself hold ';'. */
static int parse_describe(char *text, struct kdesc *d)
{
	char *f[4], *p = text, *end;

	for (int i = 0; i < 4; i++) {
		f[i] = p;
		p = strchr(p, ';');
		if (!p)
			return -EIO;
		*p++ = '\0';
	}
	d->type = f[0];
	d->uid = (uid_t)strtol(f[1], &end, 10);
	if (*end)
		return -EIO;
	d->gid = (gid_t)strtol(f[2], &end, 10);
	if (*end)
		return -EIO;
	d->perm = (uint32_t)strtoul(f[3], &end, 16);
	if (*end)
		return -EIO;
	d->desc = p;
	return 0;
}

/* keyctl_describe_alloc, in one call when the description is short (the
 * library's asks the length first): a stat or an open describes a key. */
static int describe_alloc(key_serial_t key, char **text_alloc)
{
	size_t cap = 128;
	long n;

	for (;;) {
		char *buf = malloc(cap);

		if (!buf)
			return -1;
		n = keyctl_describe(key, buf, cap);
		if (n >= 0 && (size_t)n <= cap) {
			*text_alloc = buf;
			return (int)n;
		}
		free(buf);
		if (n < 0)
			return -1;
		cap = (size_t)n;
	}
}

/* keyctl describe as keyfs; where keyfs may not view the key, as the
 * caller (whose own right to view is checked by perm_check afterwards). */
static int describe_text(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key, char **text_alloc)
{
	int ret = kpre_describe(b, key, text_alloc);

	if (ret == 1)
		ret = kerr(describe_alloc(key, text_alloc));
	if (ret != -EACCES || is_mounter(b, c))
		return ret;
	return ktext_as(b, c, describe_alloc, key, text_alloc);
}

/* Describe key into the cache; *kp is its entry.  -errno as keyctl gives
 * it when the key cannot be described now. */
int kkey_learn(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key, struct kkey **kp)
{
	struct kdesc d;
	struct kkey *k;
	char *text;
	int ret;

	ret = describe_text(b, c, key, &text);
	if (ret < 0)
		return ret;
	ret = parse_describe(text, &d);
	if (ret < 0)
		goto out;
	k = kkey_make(b, key);
	if (!k) {
		ret = -ENOMEM;
		goto out;
	}
	ret = kkey_note(k, d.type, d.desc);
	if (ret < 0)
		goto out;
	kkey_note_attr(k, d.uid, d.gid, d.perm);
	k->learned_ns = keyfs_mono_ns();
	*kp = k;
out:
	free(text);
	return ret;
}

/*
 * An open describes the key its lookup described a moment before, and a
 * repeated cat describes it at every open: a keyctl call each time
 * (issue 10: a tenth of a repeated cat).  A listing describes every key
 * the lookup of its keyring described a moment before to build its index
 * (a third of the first ls -l of a large keyring).  Where a keyctl read
 * of the key comes next - the open's read, the size probe of a stat or a
 * listing - the mounter may take the description keyfs made less than
 * cache_timeout (entry_timeout) ago instead.  The kernel checks that read
 * itself (keyfs checks nothing of its own for the mounter), and a key
 * revoked, expired, invalidated or gone meanwhile fails it: the size
 * probe then describes the key again (describe_live), the open fails.
 * What a recent description may miss is only a change of owner or
 * permission made with keyctl, which then shows within entry_timeout, as
 * keyfs's other caches of the kernel's keys do.  A change keyfs made
 * itself ends the trust (kkey_touch_*), and so does a description that
 * granted view only as possessor (the kernel's describe is the view
 * check).  Other callers are described every time: keyfs checks their
 * permission itself.
 */
struct kkey *kkey_recent(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key)
{
	struct kkey *k;

	if (!is_mounter(b, c) || (k = kkey_get(b, key)) == NULL ||
	    !k->learned_ns || !k->named || !k->have_attr || k->dead)
		return NULL;
	if ((double)(keyfs_mono_ns() - k->learned_ns) / 1e9 >= b->cache_timeout)
		return NULL;
	if (perm_check(c, k->uid, k->gid, k->perm, false, KEYFS_PERM_VIEW) < 0)
		return NULL;
	return k;
}

int kkey_learn_recent(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, struct kkey **kp)
{
	struct kkey *k = kkey_recent(b, c, key);

	if (k) {
		*kp = k;
		return 0;
	}
	return kkey_learn(b, c, key, kp);
}

/*
 * The description of a key keyctl no longer describes (revoked or expired
 * before keyfs ever saw it) from its /proc/keys line, "serial flags usage
 * timeout perm uid gid type description: summary".  The summary is the
 * type's: ": N" (user, logon, a keyring), ": empty" (a keyring), ": N
 * [..]" (big_key); only those types are taken, where it can be cut off.
 */
static int dead_name(const char *line, kserial_t key, char *type,
		     const char **desc)
{
	unsigned serial;
	int off = 0;
	char *colon, *p;

	_Static_assert(KEYFS_TYPE_MAX == 31, "the %31s below");
	if (sscanf(line, "%x %*s %*d %*s %*x %*d %*d %31s %n",
		   &serial, type, &off) != 2 || off == 0 ||
	    (kserial_t)serial != key)
		return -ENOENT;
	if (strcmp(type, "user") && strcmp(type, "logon") &&
	    strcmp(type, "keyring") && strcmp(type, "big_key"))
		return -EINVAL;
	colon = strrchr(line + off, ':');
	if (!colon || colon[1] != ' ')
		return -EINVAL;
	p = colon + 2;
	if (strncmp(p, "empty", 5) == 0) {
		p += 5;
	} else {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		while (isdigit((unsigned char)*p))
			p++;
		if (*p == ' ' && p[1] == '[')
			p += strcspn(p, "\n");
	}
	if (*p != '\n' && *p != '\0')
		return -EINVAL;
	*colon = '\0';
	*desc = line + off;
	return 0;
}

int kkey_learn_dead(struct kkey *k)
{
	char type[KEYFS_TYPE_MAX + 1], *line = NULL;
	const char *desc;
	size_t cap = 0;
	int ret = -ENOKEY;
	FILE *f = fopen("/proc/keys", "re");

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		ret = dead_name(line, k->serial, type, &desc);
		if (ret == -ENOENT) {
			ret = -ENOKEY;
			continue;
		}
		if (ret == 0)
			ret = kkey_note(k, type, desc);
		break;
	}
	free(line);
	fclose(f);
	return ret;
}

/* ---- keyfs's own permission check for callers other than the mounter ---- */

/* keyfs's check, before the kernel's, for a caller other than the mounter:
 * the key's perm as freshly described, without possession (perm.h).  A key
 * that cannot be described gives keyctl's error, as the kernel checks
 * validity before permission. */
int kkey_check(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key, unsigned want, unsigned or_want)
{
	struct kkey *k;
	int ret;

	if (is_mounter(b, c))
		return 0;
	ret = kkey_learn(b, c, key, &k);
	if (ret < 0)
		return ret;
	ret = perm_check(c, k->uid, k->gid, k->perm, false, want);
	if (ret < 0 && or_want)
		ret = perm_check(c, k->uid, k->gid, k->perm, false, or_want);
	return ret;
}

/* The key's cache entry with its type and description, for the index. */
struct kkey *kkey_known(struct keyfs_backend *b,
			       const struct keyfs_cred *c, kserial_t key)
{
	struct kkey *k = kkey_get(b, key);

	if (!k || !k->named)
		if (kkey_learn(b, c, key, &k) < 0)
			k = kkey_make(b, key);
	return k;
}

/* ---- the key types ---- */

/*
 * The types add_key(2) may know: the keys subsystem's own, and those modules
 * add (which may be absent; their add then fails at close).  The kernel
 * cannot be asked without making a key, so their facts live here, once, for
 * check_new, type_info and keyfs's own payload check.  max_payload is the
 * kernel's limit where keyfs knows it (user, logon, big_key; 0 for a keyring,
 * which takes no payload), else add_key(2)'s own bound.
 */
static const struct ktype {
	const char *name;
	size_t max_payload;
	bool readable;		/* the type has a read method */
} ktypes[] = {
	{ "user",		KEYFS_USER_PAYLOAD_MAX,	true },
	{ "logon",		KEYFS_USER_PAYLOAD_MAX,	false },
	{ "big_key",		KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "keyring",		0,			true },
	{ "asymmetric",		KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "encrypted",		KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "trusted",		KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "dns_resolver",	KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "rxrpc",		KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "rxrpc_s",		KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "ceph",		KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "id_resolver",	KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "id_legacy",		KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "cifs.spnego",	KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "cifs.idmap",		KEYFS_BIG_PAYLOAD_MAX,	true },
	{ "pkcs7_test",		KEYFS_BIG_PAYLOAD_MAX,	true },
};

static const struct ktype *ktype_lookup(const char *type)
{
	for (size_t i = 0; i < sizeof(ktypes) / sizeof(ktypes[0]); i++)
		if (strcmp(type, ktypes[i].name) == 0)
			return &ktypes[i];
	return NULL;
}

int ktype_payload_check(const char *type, size_t len)
{
	const struct ktype *t = ktype_lookup(type);

	if (!t || len <= t->max_payload)
		return 0;
	/* keyring_preparse() refuses any payload */
	return t->max_payload ? -EFBIG : -EINVAL;
}

/* Whether the running kernel has t (big_key is a module option).  A kernel
 * that cannot tell its capabilities leaves it to add. */
static bool ktype_present(const struct ktype *t)
{
	unsigned char bits[2] = { 0, 0 };

	return strcmp(t->name, "big_key") != 0 ||
	       keyctl_capabilities(bits, sizeof(bits)) < 0 ||
	       (bits[0] & KEYCTL_CAPS0_BIG_KEY);
}

/* A new key's permission as key_create_or_update() gives it: the possessor
 * all but read where the type cannot read, the owner view. */
static uint32_t ktype_default_perm(const struct ktype *t)
{
	uint32_t pos = KEYFS_PERM_ALL;

	if (!t->readable)
		pos &= ~(uint32_t)KEYFS_PERM_READ;
	return pos << 24 | (uint32_t)KEYFS_PERM_VIEW << 16;
}

int kernel_type_info(struct keyfs_backend *b, const char *type,
		     struct key_type_info *out)
{
	const struct ktype *t = ktype_lookup(type);

	(void)b;
	if (!t || !ktype_present(t))
		return -ENODEV;
	out->max_payload = t->max_payload;
	out->default_perm = ktype_default_perm(t);
	out->readable = t->readable;
	return 0;
}

int kernel_check_new(struct keyfs_backend *b, const char *type,
		     const char *desc)
{
	const struct ktype *t;
	const char *colon;

	(void)b;
	if (!*type || strlen(type) > KEYFS_TYPE_MAX || !*desc ||
	    strlen(desc) > KEYFS_DESC_MAX)
		return -EINVAL;
	if (type[0] == '.')
		return -EPERM;
	t = ktype_lookup(type);
	if (!t || !ktype_present(t))
		return -ENODEV;
	/* logon_vet_description(): "subtype:rest", the subtype not empty */
	colon = strchr(desc, ':');
	if (strcmp(type, "logon") == 0 && (!colon || colon == desc))
		return -EINVAL;
	return 0;
}
