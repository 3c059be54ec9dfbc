/* keytype.c: the one place the FUSE layer learns a key type's facts: the backend's type_info slot. */
#include <errno.h>
#include <string.h>

#include "keytype.h"

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
