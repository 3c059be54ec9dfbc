/* attr.h: a node's stat attributes and its user.keyfs.* extended attributes. */
#ifndef KEYFS_ATTR_H
#define KEYFS_ATTR_H

#include <sys/stat.h>
#include "tree.h"

/* What the node's key is (a pending entry answers from its node: state
 * pending, size 0, the perm and expiry set on it).  -EINVAL for nodes that
 * are not keys. */
int attr_key_info(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		  const struct tnode *tn, struct key_info *ki);
/* As attr_key_info, the size and the expiry only where parts asks for
 * them (KEY_INFO_*, backend.h) or they cost nothing; else 0.  An open
 * asks for neither: it reads the payload, which tells the size and fails
 * on an expired key. */
int attr_key_info_part(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       const struct tnode *tn, unsigned parts,
		       struct key_info *ki);

/* stat of any node. */
int attr_get(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
	     const struct tnode *tn, struct stat *st);

/* A key's attributes from its info: mode from the permission (perm.h),
 * S_IFDIR for keyrings, st_ino the serial. */
void attr_from_key(const struct key_info *ki, struct stat *st);

/* Extended attributes (xattr.c).  get and list follow getxattr(2): with
 * size 0 they return the length needed; a buffer too small is -ERANGE.
 * They return the length, or -errno.  Names outside user.keyfs.* answer
 * -ENODATA (get), -EOPNOTSUPP (set); read-only names -EPERM on set;
 * bad values -EINVAL, changing nothing. */
int xattr_get(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
	      const struct tnode *tn, const char *name, char *buf, size_t size);
int xattr_set(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
	      const struct tnode *tn, const char *name, const char *value,
	      size_t size, int flags);
int xattr_list(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
	       const struct tnode *tn, char *buf, size_t size);
int xattr_remove(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		 const struct tnode *tn, const char *name);

#endif
