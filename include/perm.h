/* perm.h: the kernel's key permission rules as pure functions, shared by both backends. */
#ifndef KEYFS_PERM_H
#define KEYFS_PERM_H

#include <sys/stat.h>
#include "keyfs.h"

/* As security/keys/permission.c: the user class if the caller's fsuid owns
 * the key, else the group class if the key's group is the caller's fsgid or
 * one of its groups (and the group class grants anything at all), else the
 * other class; the possessor class is added when possessed.  want is a mask
 * of KEYFS_PERM_* bits, all of which must be granted.  0 or -EACCES. */
int perm_check(const struct keyfs_cred *c, uid_t kuid, gid_t kgid,
	       uint32_t perm, bool possessed, unsigned want);

/* The caller's supplementary groups (loading them on first use); the
 * count, with *out pointing at them. */
int cred_groups(const struct keyfs_cred *c, const gid_t **out);

/* Whether gid is the caller's fsgid or one of its supplementary groups. */
bool perm_in_group(const struct keyfs_cred *c, gid_t gid);

/* The class bits (KEYFS_PERM_*) the caller holds on a key. */
unsigned perm_granted(const struct keyfs_cred *c, uid_t kuid, gid_t kgid,
		      uint32_t perm, bool possessed);

/* The owner rules keyctl_setperm_key() and keyctl_chown_key() apply after
 * the setattr check, in one place for both backends and for pending
 * entries.  privileged stands for CAP_SYS_ADMIN (each caller says who
 * holds it).  setperm: only the key's owner.  chown: the uid stays, the
 * gid becomes one of the caller's groups ((uid_t)-1/(gid_t)-1: unchanged).
 * 0 or -EACCES. */
int perm_setperm_allowed(const struct keyfs_cred *c, uid_t kuid,
			 bool privileged);
int perm_chown_allowed(const struct keyfs_cred *c, uid_t kuid, gid_t kgid,
		       uid_t uid, gid_t gid, bool privileged);

/* Mode bits (0777) shown for a key: owner = possessor | user, group =
 * group, other = other; r = read, w = write, x = search. */
mode_t perm_to_mode(uint32_t perm);

/* chmod: set read/write/search of each class from mode (the owner class
 * sets both possessor and user), keeping view, link and setattr; the
 * possessor's search is added by x but never removed, so the key stays
 * possessed. */
uint32_t perm_from_mode(uint32_t perm, mode_t mode);

/* perm with the user class given the possessor's bits as well: what the
 * owner of a key it will not possess needs to use it as its maker would. */
uint32_t perm_owner_as_possessor(uint32_t perm);

/* Whether perm may be given to a new key as add makes it (backend.h): no
 * bits beyond 0x3f3f3f3f, and the possessor's link kept. */
bool perm_add_ok(uint32_t perm);

#endif
