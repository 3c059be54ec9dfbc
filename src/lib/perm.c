/* perm.c: the kernel's key permission rules as pure functions. */
#include <errno.h>

#include "perm.h"

#define CLASS(perm, shift)	(((perm) >> (shift)) & KEYFS_PERM_ALL)

int cred_groups(const struct keyfs_cred *c, const gid_t **out)
{
	struct keyfs_lazy_groups *g = c->lazy;

	if (!g) {
		*out = c->groups;
		return c->groups ? c->ngroups : 0;
	}
	if (!g->loaded) {
		g->n = 0;
		g->load(g);
		g->loaded = true;
	}
	*out = g->v;
	return g->n;
}

bool perm_in_group(const struct keyfs_cred *c, gid_t kgid)
{
	const gid_t *groups;
	int n;

	if (kgid == c->gid)
		return true;
	n = cred_groups(c, &groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == kgid)
			return true;
	return false;
}

unsigned perm_granted(const struct keyfs_cred *c, uid_t kuid, gid_t kgid,
		      uint32_t perm, bool possessed)
{
	unsigned granted;

	/*
	 * First match wins, as key_task_permission(): the owner gets the user
	 * class even when the group or other class grants more.  The group
	 * class is skipped when it grants nothing at all, and a key without a
	 * valid group ((gid_t)-1, the kernel's INVALID_GID) has none.
	 */
	if (kuid == c->uid)
		granted = CLASS(perm, KEYFS_USR_SHIFT);
	else if (kgid != (gid_t)-1 && CLASS(perm, KEYFS_GRP_SHIFT) &&
		 perm_in_group(c, kgid))
		granted = CLASS(perm, KEYFS_GRP_SHIFT);
	else
		granted = CLASS(perm, KEYFS_OTH_SHIFT);
	if (possessed)
		granted |= CLASS(perm, KEYFS_POS_SHIFT);
	return granted;
}

int perm_check(const struct keyfs_cred *c, uid_t kuid, gid_t kgid,
	       uint32_t perm, bool possessed, unsigned want)
{
	unsigned granted = perm_granted(c, kuid, kgid, perm, possessed);

	want &= KEYFS_PERM_ALL;
	return (granted & want) == want ? 0 : -EACCES;
}

int perm_setperm_allowed(const struct keyfs_cred *c, uid_t kuid,
			 bool privileged)
{
	return privileged || kuid == c->uid ? 0 : -EACCES;
}

int perm_chown_allowed(const struct keyfs_cred *c, uid_t kuid, gid_t kgid,
		       uid_t uid, gid_t gid, bool privileged)
{
	if (privileged)
		return 0;
	if (uid != (uid_t)-1 && uid != kuid)
		return -EACCES;
	if (gid != (gid_t)-1 && gid != kgid && !perm_in_group(c, gid))
		return -EACCES;
	return 0;
}

/* r, w, x of one class as mode bits shifted into place. */
static mode_t class_to_mode(unsigned bits, int mode_shift)
{
	mode_t m = 0;

	if (bits & KEYFS_PERM_READ)
		m |= 4;
	if (bits & KEYFS_PERM_WRITE)
		m |= 2;
	if (bits & KEYFS_PERM_SEARCH)
		m |= 1;
	return m << mode_shift;
}

static uint32_t mode_to_class(mode_t mode, int mode_shift)
{
	unsigned m = (mode >> mode_shift) & 7;
	uint32_t bits = 0;

	if (m & 4)
		bits |= KEYFS_PERM_READ;
	if (m & 2)
		bits |= KEYFS_PERM_WRITE;
	if (m & 1)
		bits |= KEYFS_PERM_SEARCH;
	return bits;
}

mode_t perm_to_mode(uint32_t perm)
{
	/*
	 * The owner class shows a bit when EITHER the possessor or the user
	 * class grants it: the mounter usually reaches its keys as possessor
	 * (a user key is 0x3f010000: the user class alone grants only view),
	 * and a mode of --- on keys it can read would mislead.  The exact
	 * split is in the user.keyfs.perm xattr.
	 */
	unsigned owner = CLASS(perm, KEYFS_POS_SHIFT) | CLASS(perm, KEYFS_USR_SHIFT);

	return class_to_mode(owner, 6) |
	       class_to_mode(CLASS(perm, KEYFS_GRP_SHIFT), 3) |
	       class_to_mode(CLASS(perm, KEYFS_OTH_SHIFT), 0);
}

uint32_t perm_from_mode(uint32_t perm, mode_t mode)
{
	const uint32_t rws = KEYFS_PERM_READ | KEYFS_PERM_WRITE | KEYFS_PERM_SEARCH;
	const uint32_t rw = KEYFS_PERM_READ | KEYFS_PERM_WRITE;
	uint32_t owner = mode_to_class(mode, 6);
	/*
	 * The possessor's search is never taken away: it is what makes the
	 * key possessed (the kernel's possession search needs it), and a
	 * possessor that loses it loses setattr with it, so `chmod 600`
	 * would lock the key for good.  Mode bits say who may read and
	 * write; x adds the possessor's search but never removes it.
	 */
	uint32_t keep = ~(rw << KEYFS_POS_SHIFT | rws << KEYFS_USR_SHIFT |
			  rws << KEYFS_GRP_SHIFT | rws << KEYFS_OTH_SHIFT);

	return (perm & keep) |
	       owner << KEYFS_POS_SHIFT | owner << KEYFS_USR_SHIFT |
	       mode_to_class(mode, 3) << KEYFS_GRP_SHIFT |
	       mode_to_class(mode, 0) << KEYFS_OTH_SHIFT;
}

uint32_t perm_owner_as_possessor(uint32_t perm)
{
	return perm | CLASS(perm, KEYFS_POS_SHIFT) << KEYFS_USR_SHIFT;
}

bool perm_add_ok(uint32_t perm)
{
	return !(perm & ~(uint32_t)0x3f3f3f3f) &&
	       (CLASS(perm, KEYFS_POS_SHIFT) & KEYFS_PERM_LINK);
}
