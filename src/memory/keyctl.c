/* keyctl.c: the memory backend's mutating operations, as the kernel's keyctl.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "perm.h"

/* An existing key of the type and description, found for add_key to
 * update: write permission, possessed as the keyring is (the kernel's
 * find_key_to_update() hands the keyring's possession on), room in the
 * owner's quota for a longer payload.  Then the update, which cannot
 * fail; a negative key becomes positive. */
static int add_update(struct keyfs_backend *b, const struct keyfs_cred *c,
		      struct mkey *kr, struct mkey *old, struct mkey_prep *prep)
{
	int ret;

	ret = perm_check(c, old->uid, old->gid, old->perm,
			 mem_possessed(b, c, kr), KEYFS_PERM_WRITE);
	if (ret == 0 && old->in_quota && prep->datalen > old->datalen)
		ret = mem_quota_room(b, old->uid, 0,
				 (long)(prep->datalen - old->datalen));
	if (ret < 0)
		return ret;
	mem_track(b, old);
	old->type->update(old, prep);
	old->negative = false;
	mem_charge_sync(b, old);
	mem_key_touch(old, true);
	mem_gc_schedule(b, old);
	return 0;
}

/* A new key of the caller's, linked into kr (displacing a key of the same
 * type and description). */
static int add_new(struct keyfs_backend *b, const struct keyfs_cred *c,
		   struct mkey *kr, const struct mkey_type *t, const char *desc,
		   struct mkey_prep *prep, struct mkey **out)
{
	struct mkey *k;
	int ret;

	ret = mem_key_create(b, c, t, desc, prep, kr, &k);
	if (ret < 0)
		return ret;
	ret = mem_link_prepare(b, kr, k);
	if (ret < 0) {
		mem_key_unref(b, k);
		return ret;
	}
	mem_link_commit(b, kr, k);
	*out = k;
	return 0;
}

/* key_create_or_update(): add_key(2) checks its arguments' syntax, then
 * the keyring (write), then the type (ENODEV), the description and the
 * payload, the keyring's restriction; a live key of an updatable type
 * with this description in the keyring is updated in place, else a new
 * key displaces whatever had the name.  A new key takes perm, given by
 * its maker (backend.h). */
int mem_add(struct keyfs_backend *b, const struct keyfs_cred *c,
	    const char *type, const char *desc, const void *payload,
	    size_t len, kserial_t keyring, const uint32_t *perm,
	    kserial_t *out)
{
	const struct mkey_type *t = NULL;
	struct mkey_prep prep = { 0 };
	struct mkey *kr, *old, *k;
	int ret;

	if (!type || !*type || strlen(type) > KEYFS_TYPE_MAX ||
	    !desc || !*desc || strlen(desc) > KEYFS_DESC_MAX)
		return -EINVAL;
	if (type[0] == '.' || (keyfs_is_keyring_type(type) && desc[0] == '.'))
		return -EPERM;
	if (perm && !perm_add_ok(*perm))
		return -EINVAL;
	mem_begin(b);
	ret = mem_lookup_keyring(b, c, keyring, MEM_LOOKUP_CREATE,
				 KEYFS_PERM_WRITE, &kr);
	if (ret == 0)
		ret = mem_check_type(type, -ENODEV, &t);
	if (ret == 0)
		ret = mem_check_desc(t, desc);
	if (ret == 0)
		ret = t->preparse(&prep, payload, len);
	if (ret == 0)
		ret = mem_restriction_check(kr);
	if (ret < 0)
		goto fail;
	old = mring_find(kr, t, desc);
	if (old && t->update && !old->revoked) {
		ret = add_update(b, c, kr, old, &prep);
		k = old;
	} else {
		ret = add_new(b, c, kr, t, desc, &prep, &k);
		if (ret == 0 && perm)
			k->perm = *perm;
	}
	if (ret < 0)
		goto fail;
	ret = mem_commit(b);
	if (ret == 0)
		*out = k->serial;
	goto out;
fail:
	mem_end(b);
out:
	if (t)
		t->free_preparse(&prep);
	return ret;
}

/* add_key(2)'s checks of type and description, making nothing. */
int mem_check_new(struct keyfs_backend *b, const char *type,
		  const char *desc)
{
	const struct mkey_type *t = NULL;
	int ret;

	(void)b;
	if (!*desc || strlen(desc) > KEYFS_DESC_MAX)
		return -EINVAL;
	ret = mem_check_type(type, -ENODEV, &t);
	if (ret == 0)
		ret = mem_check_desc(t, desc);
	return ret;
}

/* keyctl_update_key(): needs write on a valid key of an updatable type.
 * The kernel's keyctl_update refuses payloads over a page (EINVAL); the
 * type's own limit applies here, as backend.h promises. */
int mem_update(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key, const void *payload, size_t len)
{
	struct mkey_prep prep = { 0 };
	const struct mkey_type *t = NULL;
	struct mkey *k = NULL;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, 0, KEYFS_PERM_WRITE, &k);
	if (ret < 0)
		goto out;
	/* Kept apart from k: a failed save swaps the model, freeing k. */
	t = k->type;
	if (!k->type->update) {
		ret = -EOPNOTSUPP;
		goto out;
	}
	ret = k->type->preparse(&prep, payload, len);
	if (ret == 0 && prep.datalen > k->datalen)
		ret = mem_quota_room(b, k->uid, 0, (long)(prep.datalen - k->datalen));
	if (ret < 0)
		goto out;
	mem_track(b, k);
	k->type->update(k, &prep);
	mem_charge_sync(b, k);
	mem_key_touch(k, true);
	mem_gc_schedule(b, k);	/* an update clears the timeout */
	ret = mem_commit(b);
	goto done;
out:
	mem_end(b);
done:
	if (t)
		t->free_preparse(&prep);
	return ret;
}

/* keyctl_keyring_link(): write on the keyring, link on the key. */
int mem_link(struct keyfs_backend *b, const struct keyfs_cred *c,
	     kserial_t key, kserial_t keyring)
{
	struct mkey *kr, *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, keyring, MEM_LOOKUP_CREATE, KEYFS_PERM_WRITE, &kr);
	if (ret == 0)
		ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE, KEYFS_PERM_LINK, &k);
	if (ret == 0)
		ret = mem_link_prepare(b, kr, k);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	mem_link_commit(b, kr, k);
	return mem_commit(b);
}

/* keyctl_keyring_unlink(): write on the keyring; the key in any state. */
int mem_unlink(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key, kserial_t keyring)
{
	struct mkey *kr, *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup_keyring(b, c, keyring, 0, KEYFS_PERM_WRITE, &kr);
	if (ret == 0)
		ret = mem_lookup(b, c, key, MEM_LOOKUP_PARTIAL, 0, &k);
	if (ret == 0 && mring_find(kr, k->type, k->desc) != k)
		ret = -ENOENT;
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	mem_unlink_one(b, kr, k);
	return mem_commit(b);
}

/* keyctl_keyring_move(): link on the key, write on both keyrings. */
int mem_move(struct keyfs_backend *b, const struct keyfs_cred *c,
	     kserial_t key, kserial_t from, kserial_t to, unsigned flags)
{
	struct mkey *k, *kf, *kt, *there;
	int ret;

	if (flags & ~KEYFS_MOVE_EXCL)
		return -EINVAL;
	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE, KEYFS_PERM_LINK, &k);
	if (ret == 0)
		ret = mem_lookup(b, c, from, 0, KEYFS_PERM_WRITE, &kf);
	if (ret == 0)
		ret = mem_lookup(b, c, to, MEM_LOOKUP_CREATE, KEYFS_PERM_WRITE, &kt);
	if (ret < 0 || kf == kt)
		goto out;
	if (!mem_is_keyring(kf) || !mem_is_keyring(kt)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (mring_find(kf, k->type, k->desc) != k) {
		ret = -ENOENT;
		goto out;
	}
	there = mring_find(kt, k->type, k->desc);
	if (there && (flags & KEYFS_MOVE_EXCL)) {
		ret = -EEXIST;
		goto out;
	}
	ret = mem_link_prepare(b, kt, k);
	if (ret < 0)
		goto out;
	/* Link first so the key never looks unreferenced. */
	mem_link_commit(b, kt, k);
	mem_unlink_one(b, kf, k);
	return mem_commit(b);
out:
	mem_end(b);
	return ret;
}

/* keyctl_revoke_key(): write, or else setattr. */
int mem_revoke(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key)
{
	time_t now = time(NULL);
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, 0, KEYFS_PERM_WRITE, &k);
	if (ret == -EACCES)
		ret = mem_lookup(b, c, key, 0, KEYFS_PERM_SETATTR, &k);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	mem_track(b, k);
	mem_track_clear(b, k);
	k->revoked = true;
	k->type->revoke(b, k);
	mem_charge_sync(b, k);
	/* key_revoke(): the gc takes a revoked key gc_delay from now. */
	if (!k->expiry || k->expiry > now) {
		k->expiry = now;
		mem_gc_schedule(b, k);
	}
	mem_key_touch(k, true);
	return mem_commit(b);
}

/*
 * keyctl_invalidate_key(): search permission; the key is unlinked from
 * every keyring at once and goes, nothing can reach it any more.  The
 * session, user and user-session keyrings are the roots of keyfs's tree
 * and are kept as the kernel keeps KEY_FLAG_KEEP keys: EPERM.  The process
 * and persistent keyrings go, and are made anew when next asked for.
 */
int mem_invalidate(struct keyfs_backend *b, const struct keyfs_cred *c,
		   kserial_t key)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, 0, KEYFS_PERM_SEARCH, &k);
	if (ret == 0 && (k == b->session || k == b->user ||
			 k == b->user_session))
		ret = -EPERM;
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	if (k == b->persistent)
		b->persistent = NULL;
	if (k == b->process)
		b->process = NULL;
	k->special = false;
	mem_unlink_all(b, k);
	mem_key_unref(b, k);
	return mem_commit(b);
}

int mem_clear(struct keyfs_backend *b, const struct keyfs_cred *c,
	      kserial_t keyring)
{
	struct mkey *kr, *ch;
	int ret;

	mem_begin(b);
	ret = mem_lookup_keyring(b, c, keyring, MEM_LOOKUP_CREATE,
				 KEYFS_PERM_WRITE, &kr);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	mem_track_clear(b, kr);
	mring_for_each(kr->ring, i, ch)
		mem_key_touch(ch, false);
	mring_clear(b, kr);
	mem_charge_sync(b, kr);
	mem_key_touch(kr, true);
	return mem_commit(b);
}

/* keyctl_setperm_key(): setattr, and the caller owns the key (or is root,
 * standing for CAP_SYS_ADMIN). */
int mem_setperm(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t key, uint32_t perm)
{
	struct mkey *k;
	int ret;

	if (perm & ~MEM_PERM_VALID)
		return -EINVAL;
	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE | MEM_LOOKUP_PARTIAL,
			 KEYFS_PERM_SETATTR, &k);
	if (ret == 0)
		ret = perm_setperm_allowed(c, k->uid, c->uid == 0);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	mem_track(b, k);
	k->perm = perm;
	mem_key_touch(k, false);
	return mem_commit(b);
}

/* keyctl_chown_key(): setattr; giving the key to another uid, or to a
 * group the caller is not in, takes root (CAP_SYS_ADMIN).  The new owner
 * takes over the quota charge and must have room for it. */
int mem_chown(struct keyfs_backend *b, const struct keyfs_cred *c,
	      kserial_t key, uid_t uid, gid_t gid)
{
	struct muser *from, *to = NULL;
	struct mkey *k;
	int ret;

	if (uid == (uid_t)-1 && gid == (gid_t)-1)
		return 0;
	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE | MEM_LOOKUP_PARTIAL,
			 KEYFS_PERM_SETATTR, &k);
	if (ret < 0)
		goto out;
	ret = perm_chown_allowed(c, k->uid, k->gid, uid, gid, c->uid == 0);
	if (ret < 0)
		goto out;
	mem_track(b, k);
	if (uid != (uid_t)-1 && uid != k->uid) {
		if (k->in_quota)
			ret = mem_quota_room(b, uid, 1, (long)k->charged);
		if (ret == 0)
			ret = mem_user_get(b, uid, &to);
		if (ret < 0)
			goto out;
		from = mem_user_find(b, k->uid);
		from->nkeys--;
		from->nikeys--;
		to->nkeys++;
		to->nikeys++;
		if (k->in_quota) {
			from->qnkeys--;
			from->qnbytes -= k->charged;
			to->qnkeys++;
			to->qnbytes += k->charged;
		}
		k->uid = uid;
	}
	if (gid != (gid_t)-1)
		k->gid = gid;
	mem_key_touch(k, false);
	return mem_commit(b);
out:
	mem_end(b);
	return ret;
}

int mem_set_timeout(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, unsigned secs)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_CREATE | MEM_LOOKUP_PARTIAL,
			 KEYFS_PERM_SETATTR, &k);
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	mem_track(b, k);
	k->expiry = secs ? time(NULL) + (time_t)secs : 0;
	mem_gc_schedule(b, k);
	mem_key_touch(k, false);
	return mem_commit(b);
}

/*
 * keyctl_restrict_keyring(): setattr on the keyring.  Only "refuse every
 * link" (no type) can be set: none of this backend's types offers a
 * restriction scheme (the kernel's asymmetric type does), so a type with a
 * restriction answers ENOENT as the kernel does for such types, an
 * unknown type ENOKEY, a type without a restriction EINVAL.
 */
int mem_restrict(struct keyfs_backend *b, const struct keyfs_cred *c,
		 kserial_t keyring, const char *type,
		 const char *restriction)
{
	struct mkey *kr;
	int ret;

	if (type && !restriction)
		return -EINVAL;
	mem_begin(b);
	ret = mem_lookup_keyring(b, c, keyring, 0, KEYFS_PERM_SETATTR, &kr);
	if (ret == 0 && type)
		ret = mtype_lookup(type) ? -ENOENT : -ENOKEY;
	if (ret == 0 && (kr->ring->restricted || kr->ring->restrict_type))
		ret = -EEXIST;
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	mem_track(b, kr);
	kr->ring->restricted = true;
	mem_key_touch(kr, false);
	return mem_commit(b);
}
