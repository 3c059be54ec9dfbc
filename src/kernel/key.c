/* key.c: what keyfs remembers per serial, and the key types the kernel knows. */
#include <errno.h>
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
	k->mtime = k->ctime = real_now();
	i = hash_serial(s, b->nslots);
	k->next = b->slots[i];
	b->slots[i] = k;
	b->n++;
	return k;
}

void kkey_free(struct kkey *k)
{
	kidx_free(k->idx);
	free(k->parents);
	free(k->desc);
	free(k);
}

/* Forget a key the kernel no longer has. */
void kkey_drop(struct keyfs_backend *b, kserial_t s)
{
	struct kkey **pp, *k;

	if (!b->nslots)
		return;
	for (pp = &b->slots[hash_serial(s, b->nslots)]; (k = *pp);
	     pp = &k->next)
		if (k->serial == s) {
			*pp = k->next;
			kkey_free(k);
			b->n--;
			return;
		}
}

void kkey_touch_payload(struct kkey *k)
{
	if (k)
		k->mtime = k->ctime = real_now();
}

void kkey_touch_change(struct kkey *k)
{
	if (k)
		k->ctime = real_now();
}

int kkey_parent_add(struct kkey *k, kserial_t ring)
{
	kserial_t *p;

	for (size_t i = 0; i < k->nparents; i++)
		if (k->parents[i] == ring)
			return 0;
	if (k->nparents == k->aparents) {
		size_t n = k->aparents ? k->aparents * 2 : 4;

		p = realloc(k->parents, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		k->parents = p;
		k->aparents = n;
	}
	k->parents[k->nparents++] = ring;
	return 0;
}

void kkey_parent_del(struct kkey *k, kserial_t ring)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nparents; i++)
		if (k->parents[i] == ring) {
			k->parents[i] = k->parents[--k->nparents];
			return;
		}
}

/* Set what a description says.  A serial reused by a new key starts anew;
 * a change of uid, gid or perm seen here is a change of the key. */
int kkey_note(struct kkey *k, const char *type, const char *desc)
{
	char *copy;

	if (k->desc && strcmp(k->type, type) == 0 && strcmp(k->desc, desc) == 0)
		return 0;
	if (strlen(type) > KEYFS_TYPE_MAX)
		return -EINVAL;
	copy = strdup(desc);
	if (!copy)
		return -ENOMEM;
	if (k->desc) {
		k->have_attr = false;
		k->exact_expiry = false;
		k->nparents = 0;
		k->mtime = k->ctime = real_now();
		kidx_free(k->idx);
		k->idx = NULL;
	}
	free(k->desc);
	k->desc = copy;
	strcpy(k->type, type);
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

/* keyctl describe as keyfs; where keyfs may not view the key, as the
 * caller (whose own right to view is checked by perm_check afterwards). */
static int describe_text(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key, char **text_alloc)
{
	int ret;

	ret = kerr(keyctl_describe_alloc(key, text_alloc));
	if (ret != -EACCES || is_mounter(b, c))
		return ret;
	return ktext_as(b, c, keyctl_describe_alloc, key, text_alloc);
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
	*kp = k;
out:
	free(text);
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

	if (!k || !k->desc)
		if (kkey_learn(b, c, key, &k) < 0)
			k = kkey_make(b, key);
	return k;
}

int ktype_payload_check(const char *type, size_t len)
{
	if ((strcmp(type, "user") == 0 || strcmp(type, "logon") == 0) &&
	    len > KEYFS_USER_PAYLOAD_MAX)
		return -EFBIG;
	if (strcmp(type, "big_key") == 0 && len > KEYFS_BIG_PAYLOAD_MAX)
		return -EFBIG;
	return 0;
}

/* The types add_key(2) may know: the keys subsystem's own, and those
 * modules add (which may be absent; their add then fails at close).  The
 * kernel cannot be asked without making a key. */
static const char *const kernel_types[] = {
	"user", "logon", "big_key", "keyring", "asymmetric", "encrypted",
	"trusted", "dns_resolver", "rxrpc", "rxrpc_s", "ceph", "id_resolver",
	"id_legacy", "cifs.spnego", "cifs.idmap", "pkcs7_test",
};

int kernel_check_new(struct keyfs_backend *b, const char *type,
		     const char *desc)
{
	unsigned char bits[2] = { 0, 0 };
	const char *colon;
	bool known = false;

	(void)b;
	if (!*type || strlen(type) > KEYFS_TYPE_MAX || !*desc ||
	    strlen(desc) > KEYFS_DESC_MAX)
		return -EINVAL;
	if (type[0] == '.')
		return -EPERM;
	for (size_t i = 0; i < sizeof(kernel_types) / sizeof(kernel_types[0]); i++)
		known = known || strcmp(type, kernel_types[i]) == 0;
	if (!known)
		return -ENODEV;
	/* a kernel that cannot tell its capabilities leaves it to add */
	if (strcmp(type, "big_key") == 0 &&
	    keyctl_capabilities(bits, sizeof(bits)) >= 0 &&
	    !(bits[0] & KEYCTL_CAPS0_BIG_KEY))
		return -ENODEV;
	/* logon_vet_description(): "subtype:rest", the subtype not empty */
	colon = strchr(desc, ':');
	if (strcmp(type, "logon") == 0 && (!colon || colon == desc))
		return -EINVAL;
	return 0;
}
