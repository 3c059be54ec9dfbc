/* process_keys.c: the special keyrings (session, user, process, persistent) and lookup by id. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

/* The kernel's special keyrings, with the permissions it gives them. */
#define PERM_SESSION	(POS(KEYFS_PERM_ALL) | USR(KEYFS_PERM_VIEW | KEYFS_PERM_READ))
#define PERM_PROCESS	(POS(KEYFS_PERM_ALL) | USR(KEYFS_PERM_VIEW))
/* look_up_user_keyrings(): (KEY_POS_ALL & ~KEY_POS_SETATTR) | KEY_USR_ALL */
#define PERM_USER	(POS(KEYFS_PERM_ALL & ~KEYFS_PERM_SETATTR) | USR(KEYFS_PERM_ALL))
/* key_create_persistent(): as the user keyring, but the user may only view
 * and read. */
#define PERM_PERSISTENT	(POS(KEYFS_PERM_ALL & ~KEYFS_PERM_SETATTR) | \
			 USR(KEYFS_PERM_VIEW | KEYFS_PERM_READ))

/* ---- special keyrings ---- */

/* A keyring held by keyfs, owned by the mounter, allowed past the quota
 * (KEY_ALLOC_QUOTA_OVERRUN) or outside it (KEY_ALLOC_NOT_IN_QUOTA). */
static int special_new(struct keyfs_backend *b, const char *desc, uint32_t perm,
		       bool in_quota, struct mkey **out)
{
	struct mkey_prep prep = { 0 };
	struct mkey *k;
	int ret;

	ret = mtype_keyring.preparse(&prep, NULL, 0);
	if (ret < 0)
		return ret;
	ret = mem_key_new(b, &mtype_keyring, desc, b->uid, b->gid, perm, &k);
	if (ret < 0)
		goto out;
	k->in_quota = in_quota;
	k->special = true;
	mtype_keyring.instantiate(k, &prep);
	mem_key_register(b, k);
	*out = k;
	ret = 0;
out:
	mtype_keyring.free_preparse(&prep);
	return ret;
}

/* Link within keyfs's own keyrings: no permission, quota may overrun. */
static int special_link(struct keyfs_backend *b, struct mkey *keyring,
			struct mkey *key)
{
	int ret = mring_reserve(keyring, key);

	if (ret == 0)
		mem_link_commit(b, keyring, key);
	return ret;
}

/* Create the special keyrings the store does not have yet.  The session
 * keyring starts empty, as a fresh `keyctl session -` one does (a login's
 * pam_keyinit links the user keyring into it; keyfs does not log in).
 * *created says whether anything was made. */
int mem_specials_create(struct keyfs_backend *b, bool *created)
{
	char desc[64];
	int ret = 0;

	*created = false;
	if (!b->user) {
		snprintf(desc, sizeof(desc), "_uid.%u", (unsigned)b->uid);
		ret = special_new(b, desc, PERM_USER, false, &b->user);
		*created = true;
	}
	if (ret == 0 && !b->user_session) {
		snprintf(desc, sizeof(desc), "_uid_ses.%u", (unsigned)b->uid);
		ret = special_new(b, desc, PERM_USER, false, &b->user_session);
		if (ret == 0)
			ret = special_link(b, b->user_session, b->user);
		*created = true;
	}
	if (ret == 0 && !b->session) {
		ret = special_new(b, "_ses", PERM_SESSION, true, &b->session);
		*created = true;
	}
	if (ret == 0 && !b->persistent) {
		snprintf(desc, sizeof(desc), "_persistent.%u", (unsigned)b->uid);
		ret = special_new(b, desc, PERM_PERSISTENT, false,
				  &b->persistent);
		if (ret == 0) {
			b->persistent->expiry = time(NULL) + b->persistent_expiry;
			mem_gc_schedule(b, b->persistent);
		}
		*created = true;
	}
	return ret;
}

/* The process keyring, made on demand as the kernel's
 * install_process_keyring(); kept in the store like any keyring, so a
 * failed save can be undone, but held only while keyfs runs. */
static int process_keyring(struct keyfs_backend *b, bool create,
			   struct mkey **out)
{
	int ret;

	if (!b->process) {
		if (!create)
			return -ENOKEY;
		ret = special_new(b, "_pid", PERM_PROCESS, true, &b->process);
		if (ret == 0)
			ret = mem_commit(b);
		if (ret < 0)
			return ret;
	}
	*out = b->process;
	return 0;
}

static int special_key(struct keyfs_backend *b, int which, bool create,
		       struct mkey **out)
{
	struct mkey *k;

	switch (which) {
	case KEYFS_SPEC_THREAD:
	case KEYFS_SPEC_PROCESS:
		return process_keyring(b, create, out);
	case KEYFS_SPEC_SESSION:
		k = b->session;
		break;
	case KEYFS_SPEC_USER:
		k = b->user;
		break;
	case KEYFS_SPEC_USER_SESSION:
		k = b->user_session;
		break;
	default:
		return -EINVAL;
	}
	if (!k)
		return -ENOKEY;
	*out = k;
	return 0;
}

/* ---- lookup ---- */
int mem_lookup(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t id, unsigned flags, unsigned want, struct mkey **out)
{
	struct mkey *k;
	int ret;

	if (id < 0) {
		ret = special_key(b, id, flags & MEM_LOOKUP_CREATE, &k);
		if (ret < 0)
			return ret;
	} else if (id == 0) {
		return -EINVAL;
	} else {
		k = mem_key_get(b, id);
		if (!k)
			return -ENOKEY;
	}
	/* As lookup_user_key(): the state first, then the permission; a
	 * lookup that wants nothing takes the key in any state. */
	if (want) {
		ret = mem_key_validate(k, flags & MEM_LOOKUP_PARTIAL);
		if (ret < 0)
			return ret;
		ret = mem_key_perm(b, c, k, want);
		if (ret < 0)
			return ret;
	}
	*out = k;
	return 0;
}

int mem_lookup_keyring(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t id, unsigned flags, unsigned want,
		       struct mkey **out)
{
	int ret = mem_lookup(b, c, id, flags, want, out);

	if (ret == 0 && !mem_is_keyring(*out))
		ret = -ENOTDIR;
	return ret;
}

/* ---- the slots ---- */

int mem_special(struct keyfs_backend *b, const struct keyfs_cred *c,
		int which, bool create, kserial_t *out)
{
	struct mkey *k;
	int ret;

	(void)c;
	mem_begin(b);
	ret = special_key(b, which, create, &k);
	if (ret == 0)
		*out = k->serial;
	mem_end(b);
	return ret;
}

/* keyctl_get_persistent(): the mounter's, made anew if the gc took it;
 * each call pushes its expiry persistent_keyring_expiry seconds ahead. */
int mem_persistent(struct keyfs_backend *b, const struct keyfs_cred *c,
		   kserial_t *out)
{
	time_t expiry = time(NULL) + b->persistent_expiry;
	bool created;
	int ret;

	(void)c;
	mem_begin(b);
	ret = mem_specials_create(b, &created);
	if (ret == 0 && b->persistent->expiry != expiry) {
		mem_track(b, b->persistent);
		b->persistent->expiry = expiry;
		mem_gc_schedule(b, b->persistent);
		created = true;
	}
	if (ret < 0) {
		mem_end(b);
		return ret;
	}
	if (created) {
		ret = mem_commit(b);
		if (ret < 0)
			return ret;
	} else {
		mem_end(b);
	}
	*out = b->persistent->serial;
	return 0;
}
