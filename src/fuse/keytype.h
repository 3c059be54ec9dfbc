/* keytype.h: the facts of a key type the FUSE layer needs (payload limit, a new key's permission), asked of the backend. */
#ifndef KEYFS_KEYTYPE_H
#define KEYFS_KEYTYPE_H

#include "ctx.h"

/* The backend's type_info for type; 0 or -errno (ENODEV: no such type). */
int keytype_info(struct keyfs_ctx *ctx, const char *type,
		 struct key_type_info *out);

/* The permission a new key of type made by uid starts from (before any
 * creation mode): the type's default, and for a maker of another uid than
 * the mounter's, which will not possess the key (SPEC 5), its owner class
 * also gets the possessor's share.  0 or -errno. */
int keytype_new_perm(struct keyfs_ctx *ctx, uid_t uid, const char *type,
		     uint32_t *out);

/* The perm argument of the backend's add for a new key of type made by c:
 * buf, filled by keytype_new_perm, for a maker that will not possess the
 * key (only its maker can give it that perm); NULL for the mounter, whose
 * new keys start from the type's default as add_key(2) makes them. */
const uint32_t *keytype_add_perm(struct keyfs_ctx *ctx,
				 const struct keyfs_cred *c, const char *type,
				 uint32_t *buf);

#endif
