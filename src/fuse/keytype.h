/* keytype.h: the facts of a key type the FUSE layer needs (payload limit, a new key's permission), asked of the backend. */
#ifndef KEYFS_KEYTYPE_H
#define KEYFS_KEYTYPE_H

#include "ctx.h"

/* The backend's type_info for type; 0 or -errno (ENODEV: no such type). */
int keytype_info(struct keyfs_ctx *ctx, const char *type,
		 struct key_type_info *out);

#endif
