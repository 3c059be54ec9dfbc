/* keyctl.c: the slots that change keys: add, update, link, unlink, move, revoke, setperm, ... */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

/* ---- changing keys ---- */

/* keyfs made serial s in ring through add_key, or updated it: add_key's
 * match is exact, so the key has this type and description. */
static void note_added(struct keyfs_backend *b, kserial_t ring, kserial_t s,
		       const char *type, const char *desc)
{
	struct kkey *k = kkey_get(b, s);
	bool known = kkey_is(k, type, desc);

	if (!k)
		k = kkey_make(b, s);
	if (!k || kkey_note(k, type, desc) < 0)
		return;
	if (known)
		kkey_touch_payload(k);
	kkey_touch_payload(kkey_get(b, ring));
	kring_note_link(b, ring, k);
}

/* add_key(2) updates the key of that type and description already in the
 * keyring, and takes write on it.  For a caller other than the mounter that
 * key is the one in the keyring at the moment of the call, which no index
 * of keyfs's can tell: the kernel checks it, without keyfs's possession.
 * A perm is set in the child too, where the caller possesses the new key
 * (stranger_run); so is the mounter's, should a caller pass one: it may
 * make a key deeper than its own possession reaches. */
int kernel_add(struct keyfs_backend *b, const struct keyfs_cred *c,
	       const char *type, const char *desc, const void *payload,
	       size_t len, kserial_t keyring, const uint32_t *perm,
	       kserial_t *out)
{
	struct stranger st = {
		.op = ST_ADD, .type = type, .desc = desc, .payload = payload,
		.len = len, .ring = keyring, .perm = perm,
	};
	long s;
	int ret;

	ret = ktype_payload_check(type, len);
	if (ret == 0 && perm && !perm_add_ok(*perm))
		ret = -EINVAL;
	if (ret == 0)
		ret = kkey_check(b, c, keyring, KEYFS_PERM_WRITE, 0);
	if (ret < 0)
		return ret;
	if (is_mounter(b, c) && !perm) {
		s = add_key(type, desc, payload, len, keyring);
		if (s < 0)
			s = -errno;
	} else {
		s = stranger_call(b, c, &st);
	}
	if (s < 0)
		return (int)s;
	note_added(b, keyring, (kserial_t)s, type, desc);
	*out = (kserial_t)s;
	return 0;
}

/* Does ring link key now?  Read as keyfs, else as the caller; the index
 * follows the listing. */
static bool links_now(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t ring, kserial_t key)
{
	kserial_t *list = NULL;
	size_t n = 0;
	bool found = false;

	if (kring_read(b, NULL, ring, &list, &n) < 0 &&
	    (is_mounter(b, c) || kring_read(b, c, ring, &list, &n) < 0))
		return false;
	for (size_t i = 0; i < n; i++)
		found |= list[i] == key;
	free(list);
	return found;
}

/* add_key updates no key that is revoked, expired or invalidated: it makes
 * a new one and links it in its place, which a write into such a key
 * must not do.  A describe answers those states before it looks at
 * permission: -EKEYREVOKED, -EKEYEXPIRED, -ENOKEY, or 0. */
static int dead_state(kserial_t key)
{
	int err = kerr(keyctl_describe(key, NULL, 0));

	return kerr_dead(err) ? err : 0;
}

/*
 * KEYCTL_UPDATE takes at most a page.  `keyctl padd` takes the type's
 * whole limit: add_key(2) into a keyring that links the key updates it in
 * place, and needs write on that keyring and on the key, nothing more (no
 * link permission, no keyring of keyfs's).  keyfs does the same, as the
 * caller, in a keyring it has just seen linking the key: a keyring holds
 * one key per type and description, so add_key finds this key there.
 * Should another process relink that name in between, or revoke the key
 * after dead_state looked, add_key acts on the key it then finds (or
 * makes one), with the kernel's check for the caller, and the write fails
 * with EIO.
 */
static int update_large(struct keyfs_backend *b, const struct keyfs_cred *c,
			const struct kkey *k, const void *payload, size_t len)
{
	struct stranger st = {
		.op = ST_ADD, .payload = payload, .len = len,
	};
	char type[KEYFS_TYPE_MAX + 1], *desc;
	kserial_t key = k->serial, *rings;
	size_t nrings = k->nparents;
	int ret = -EINVAL;	/* no keyring: what KEYCTL_UPDATE says */
	long got;

	if (!nrings)
		return ret;
	ret = dead_state(key);
	if (ret < 0)
		return ret;
	ret = -EINVAL;
	/* listing keyrings changes k's entry: work on copies */
	strcpy(type, k->type);
	desc = strdup(kkey_desc(k));
	rings = malloc(nrings * sizeof(*rings));
	if (!rings || !desc) {
		free(rings);
		free(desc);
		return -ENOMEM;
	}
	memcpy(rings, k->parents, nrings * sizeof(*rings));
	st.type = type;
	st.desc = desc;
	for (size_t i = 0; i < nrings; i++) {
		st.ring = rings[i];
		if (!links_now(b, c, st.ring, key))
			continue;
		ret = kkey_check(b, c, st.ring, KEYFS_PERM_WRITE, 0);
		if (ret < 0)
			continue;
		if (is_mounter(b, c)) {
			got = add_key(type, desc, payload, len, st.ring);
			if (got < 0)
				got = -errno;
		} else {
			got = stranger_call(b, c, &st);
		}
		if (got == key) {
			ret = 0;
			break;
		}
		ret = got < 0 ? (int)got : -EIO;
		if (got >= 0) {
			/* someone relinked the name in between: which key
			 * add_key found or made cannot be told, so nothing is
			 * undone (the kernel let the caller write it) */
			kring_note_unknown(b, st.ring);
			break;
		}
	}
	free(rings);
	free(desc);
	return ret;
}

int kernel_update(struct keyfs_backend *b, const struct keyfs_cred *c,
		  kserial_t key, const void *payload, size_t len)
{
	struct kkey *k;
	int ret;

	ret = kkey_check(b, c, key, KEYFS_PERM_WRITE, 0);
	if (ret < 0)
		return kring_gone_if_unlinked(b, key, ret);
	ret = kproc_ready(b, key);
	if (ret < 0)
		return ret;
	k = kkey_get(b, key);
	if (!k || !k->named)
		kkey_learn(b, c, key, &k);
	k = kkey_get(b, key);
	if (k && k->named) {
		ret = ktype_payload_check(k->type, len);
		if (ret < 0)
			return ret;
	}
	if (len > (size_t)sysconf(_SC_PAGESIZE) && k && k->named) {
		ret = update_large(b, c, k, payload, len);
	} else {
		ret = kcall_as(b, c, KCALL(KEYCTL_UPDATE, (unsigned long)key,
					   (unsigned long)payload, len));
	}
	if (ret == 0)
		kkey_touch_payload(kkey_get(b, key));
	return kring_gone_if_unlinked(b, key, ret);
}

/* A link into or out of ring changed ring's payload and key's link count. */
static void touch_link(struct keyfs_backend *b, kserial_t ring, kserial_t key)
{
	kkey_touch_payload(kkey_get(b, ring));
	kkey_touch_change(kkey_get(b, key));
}

int kernel_link(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t key, kserial_t keyring)
{
	int ret;

	ret = kkey_check(b, c, key, KEYFS_PERM_LINK, 0);
	if (ret == 0)
		ret = kproc_ready(b, key);
	if (ret == 0)
		ret = kcall_checked(b, c, keyring, KEYFS_PERM_WRITE, 0,
				    KCALL(KEYCTL_LINK, (unsigned long)key,
					  (unsigned long)keyring));
	if (ret < 0)
		return ret;
	touch_link(b, keyring, key);
	kring_note_link(b, keyring, kkey_known(b, c, key));
	return 0;
}

int kernel_unlink(struct keyfs_backend *b, const struct keyfs_cred *c,
		  kserial_t key, kserial_t keyring)
{
	int ret;

	ret = kcall_checked(b, c, keyring, KEYFS_PERM_WRITE, 0,
			    KCALL(KEYCTL_UNLINK, (unsigned long)key,
				  (unsigned long)keyring));
	if (ret < 0)
		return ret;
	touch_link(b, keyring, key);
	kring_note_unlink(b, keyring, key);
	return 0;
}

int kernel_move(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t key, kserial_t from, kserial_t to, unsigned flags)
{
	unsigned kflags = flags & KEYFS_MOVE_EXCL ? KEYCTL_MOVE_EXCL : 0;
	int ret;

	ret = kkey_check(b, c, key, KEYFS_PERM_LINK, 0);
	if (ret == 0)
		ret = kproc_ready(b, key);
	if (ret == 0)
		ret = kkey_check(b, c, from, KEYFS_PERM_WRITE, 0);
	if (ret == 0)
		ret = kcall_checked(b, c, to, KEYFS_PERM_WRITE, 0,
				    KCALL(KEYCTL_MOVE, (unsigned long)key,
					  (unsigned long)from,
					  (unsigned long)to, kflags));
	if (ret < 0)
		return ret;
	touch_link(b, from, key);
	touch_link(b, to, key);
	kring_note_unlink(b, from, key);
	kring_note_link(b, to, kkey_known(b, c, key));
	return 0;
}

int kernel_revoke(struct keyfs_backend *b, const struct keyfs_cred *c,
		  kserial_t key)
{
	int ret;

	/* the kernel takes setattr where write is missing */
	ret = kproc_ready(b, key);
	if (ret == 0)
		ret = kcall_checked(b, c, key, KEYFS_PERM_WRITE, KEYFS_PERM_SETATTR,
				    KCALL(KEYCTL_REVOKE, (unsigned long)key));
	if (ret == 0)
		kkey_touch_change(kkey_get(b, key));
	return ret;
}

int kernel_invalidate(struct keyfs_backend *b,
		      const struct keyfs_cred *c, kserial_t key)
{
	struct kkey *k;
	int ret;

	ret = kproc_ready(b, key);
	if (ret == 0)
		ret = kcall_checked(b, c, key, KEYFS_PERM_SEARCH, 0,
				    KCALL(KEYCTL_INVALIDATE, (unsigned long)key));
	if (ret < 0)
		return ret;
	/* the kernel's collector unlinks it from every keyring at once */
	k = kkey_get(b, key);
	if (!k)
		return 0;
	kkey_touch_change(k);
	while (k->nparents) {
		kserial_t ring = k->parents[0];

		kkey_touch_payload(kkey_get(b, ring));
		kring_note_unlink(b, ring, key);
	}
	return 0;
}

int kernel_clear(struct keyfs_backend *b, const struct keyfs_cred *c,
		 kserial_t keyring)
{
	int ret;

	ret = kcall_checked(b, c, keyring, KEYFS_PERM_WRITE, 0,
			    KCALL(KEYCTL_CLEAR, (unsigned long)keyring));
	if (ret == 0)
		kring_note_cleared(b, keyring);
	return ret;
}

/* The key's cache entry with its owner, describing it first where keyfs
 * has not (kkey_check lets the mounter through without describing). */
static int kkey_owned(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, struct kkey **kp)
{
	struct kkey *k = kkey_get(b, key);

	if (k && k->have_attr) {
		*kp = k;
		return 0;
	}
	return kkey_learn(b, c, key, kp);
}

int kernel_setperm(struct keyfs_backend *b, const struct keyfs_cred *c,
		   kserial_t key, uint32_t perm)
{
	struct kkey *k;
	int ret;

	if (perm & ~(uint32_t)0x3f3f3f3f)
		return -EINVAL;
	ret = kkey_check(b, c, key, KEYFS_PERM_SETATTR, 0);
	if (ret == 0)
		ret = kkey_owned(b, c, key, &k);
	/* keyfs may be root: the owner rule must be keyfs's own */
	if (ret == 0)
		ret = perm_setperm_allowed(c, k->uid, is_mounter(b, c));
	if (ret == 0)
		ret = kcall_as(b, c, KCALL(KEYCTL_SETPERM, (unsigned long)key,
					   perm));
	k = kkey_get(b, key);
	if (ret == 0 && k) {
		if (k->have_attr)
			k->perm = perm;
		kkey_touch_change(k);
	}
	return kring_gone_if_unlinked(b, key, ret);
}

int kernel_chown(struct keyfs_backend *b, const struct keyfs_cred *c,
		 kserial_t key, uid_t uid, gid_t gid)
{
	struct kkey *k;
	int ret;

	if (uid == (uid_t)-1 && gid == (gid_t)-1)
		return 0;
	ret = kkey_check(b, c, key, KEYFS_PERM_SETATTR, 0);
	if (ret == 0)
		ret = kkey_owned(b, c, key, &k);
	/* keyfs may hold CAP_SYS_ADMIN: only the mounter acts with it */
	if (ret == 0)
		ret = perm_chown_allowed(c, k->uid, k->gid, uid, gid,
					 is_mounter(b, c));
	if (ret == 0)
		ret = kcall_as(b, c, KCALL(KEYCTL_CHOWN, (unsigned long)key,
					   uid, gid));
	k = kkey_get(b, key);
	if (ret == 0 && k) {
		if (k->have_attr && uid != (uid_t)-1)
			k->uid = uid;
		if (k->have_attr && gid != (gid_t)-1)
			k->gid = gid;
		kkey_touch_change(k);
	}
	return kring_gone_if_unlinked(b, key, ret);
}

int kernel_set_timeout(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t key, unsigned secs)
{
	struct kkey *k;
	int ret;

	ret = kcall_checked(b, c, key, KEYFS_PERM_SETATTR, 0,
			    KCALL(KEYCTL_SET_TIMEOUT, (unsigned long)key,
				  secs));
	if (ret < 0)
		return kring_gone_if_unlinked(b, key, ret);
	/* the kernel counts from the same real-time second */
	k = kkey_make(b, key);
	if (k) {
		k->exact_expiry = true;
		k->expiry = secs ? time(NULL) + (time_t)secs : 0;
		k->expiry_set_ns = keyfs_mono_ns();
		kkey_touch_change(k);
	}
	return 0;
}

int kernel_restrict(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t keyring, const char *type,
		    const char *restriction)
{
	int ret;

	ret = kcall_checked(b, c, keyring, KEYFS_PERM_SETATTR, 0,
			    KCALL(KEYCTL_RESTRICT_KEYRING,
				  (unsigned long)keyring, (unsigned long)type,
				  (unsigned long)restriction));
	if (ret == 0)
		kkey_touch_change(kkey_get(b, keyring));
	return ret;
}

int kernel_security(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, char **label_alloc)
{
	int ret = kkey_check(b, c, key, KEYFS_PERM_VIEW, 0);

	if (ret < 0)
		return ret;
	return ktext_as(b, c, keyctl_get_security_alloc, key, label_alloc);
}
