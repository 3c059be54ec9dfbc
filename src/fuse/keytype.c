/* keytype.c: the one place the FUSE layer learns a key type's facts: the backend's type_info slot. */
#include <errno.h>
#include <string.h>

#include "keytype.h"
#include "perm.h"

/*
 * What keyfs assumed of every type before the type_info slot existed:
 * user and logon take 32767 bytes, anything else (big_key) 1 MiB; a new
 * key gets possessor all and user view, less possessor read for logon,
 * which cannot be read.  Used only while a backend leaves the slot NULL;
 * it goes once both backends implement type_info.
 */
static void fallback_info(const char *type, struct key_type_info *out)
{
	bool logon = strcmp(type, "logon") == 0;

	out->max_payload = logon || strcmp(type, "user") == 0 ?
			   KEYFS_USER_PAYLOAD_MAX : KEYFS_BIG_PAYLOAD_MAX;
	out->default_perm = logon ? 0x3d010000 : 0x3f010000;
	out->readable = !logon;
}

int keytype_info(struct keyfs_ctx *ctx, const char *type,
		 struct key_type_info *out)
{
	int ret = BACKEND_CALL(ctx, type_info, type, out);

	if (ret == -EOPNOTSUPP) {
		fallback_info(type, out);
		ret = 0;
	}
	return ret;
}

/*
 * The kernel gives a new key's possessor every right and its owning user
 * view only: the maker possesses what it adds to its own keyrings.  keyfs
 * possesses keys for the mounter's uid alone, so a key another user makes
 * through an allow_other mount is possessed by nobody of that user's: with
 * the kernel's default its maker could not even read it back, nor chmod
 * it.  Its owner class takes the possessor's share instead, which is what
 * that user gets with keyctl by adding the key to a keyring of its own,
 * setting the permission and moving it where it belongs.
 */
int keytype_new_perm(struct keyfs_ctx *ctx, uid_t uid, const char *type,
		     uint32_t *out)
{
	struct key_type_info ti;
	int ret = keytype_info(ctx, type, &ti);

	if (ret < 0)
		return ret;
	*out = uid == ctx->mounter.uid ? ti.default_perm :
	       perm_owner_as_possessor(ti.default_perm);
	return 0;
}

const uint32_t *keytype_add_perm(struct keyfs_ctx *ctx,
				 const struct keyfs_cred *c, const char *type,
				 uint32_t *buf)
{
	if (c->uid == ctx->mounter.uid ||
	    keytype_new_perm(ctx, c->uid, type, buf) < 0)
		return NULL;
	return buf;
}
