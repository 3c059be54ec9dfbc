/* attr.c: stat attributes of keys and of the nodes keyfs invents. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "attr.h"
#include "ctlfiles.h"
#include "pending.h"
#include "perm.h"

int attr_key_info_part(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       const struct tnode *tn, unsigned parts,
		       struct key_info *ki)
{
	kserial_t serial = tn->kind == T_KEY ? tn->serial :
			   tn->kind == T_PENDING ? tn->node->serial : 0;

	if (tn->kind == T_KEY || serial)
		return ctx_describe(ctx, c, serial, parts, ki);
	if (tn->kind != T_PENDING)
		return -EINVAL;
	return pending_info(ctx, c, tn->node, ki);
}

int attr_key_info(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		  const struct tnode *tn, struct key_info *ki)
{
	return attr_key_info_part(ctx, c, tn, KEY_INFO_SIZE | KEY_INFO_EXPIRY, ki);
}

void attr_from_key(const struct key_info *ki, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)ino_of_serial(ki->serial);
	st->st_mode = (keyfs_is_keyring_type(ki->type) ? S_IFDIR : S_IFREG) |
		      perm_to_mode(ki->perm);
	st->st_nlink = ki->nlink ? ki->nlink : 1;
	st->st_uid = ki->uid;
	st->st_gid = ki->gid;
	st->st_size = (off_t)ki->size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((ki->size + 511) / 512);
	st->st_atim = ki->mtime;
	st->st_mtim = ki->mtime;
	st->st_ctim = ki->ctime;
}

static void attr_virtual(const struct keyfs_ctx *ctx, const struct tnode *tn,
			 mode_t mode, nlink_t nlink, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)tn->ino;
	st->st_mode = mode;
	st->st_nlink = nlink;
	st->st_uid = ctx->mounter.uid;
	st->st_gid = ctx->mounter.gid;
	st->st_blksize = 4096;
	st->st_atim = ctx->started;
	st->st_mtim = ctx->started;
	st->st_ctim = ctx->started;
}

int attr_get(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
	     const struct tnode *tn, struct stat *st)
{
	struct key_info ki;
	int ret;

	switch (tn->kind) {
	case T_KEY:
	case T_PENDING:
		if (tn->unviewable) {	/* %#SERIAL: no describe without view */
			unviewable_attr(tn, st);
			return 0;
		}
		/* stat shows no expiry (an xattr does) */
		ret = attr_key_info_part(ctx, c, tn, KEY_INFO_SIZE, &ki);
		if (ret < 0)
			return ret;
		attr_from_key(&ki, st);
		if (tn->kind == T_PENDING && !tn->serial)
			st->st_ino = (ino_t)tn->ino;
		/* removed while its creator has it open: linked nowhere, as
		 * fstat of an unlinked file says */
		if (tn->kind == T_PENDING && tn->node && tn->node->unlinked)
			st->st_nlink = 0;
		return 0;
	case T_ROOT:
		/* session, user, user-session, process, persistent, by-id, .keyfs */
		attr_virtual(ctx, tn, S_IFDIR | 0755, 9, st);
		return 0;
	case T_BYID:
	case T_SEARCHDIR:
	case T_SEARCHTYPE:
		attr_virtual(ctx, tn, S_IFDIR | 0555, 2, st);
		return 0;
	case T_CTLDIR:
		attr_virtual(ctx, tn, S_IFDIR | 0555, 3, st);
		return 0;
	case T_LINK:
		attr_virtual(ctx, tn, S_IFLNK | 0777, 1, st);
		st->st_size = (off_t)strlen(tn->target);
		return 0;
	case T_CTLFILE:
		attr_virtual(ctx, tn, S_IFREG | (ctl_files[tn->ctl].writable ? 0222 : 0444), 1, st);
		return 0;
	}
	return -EINVAL;
}
