/* fs-rename.c: rename and link: moving and linking keys between keyrings, and renaming within one. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attr.h"
#include "fs-ops.h"
#include "handle.h"
#include "keytype.h"
#include "names.h"
#include "pending.h"

/* Whether a plain entry name (no %TYPE:) can stand for a key of type. */
static bool plain_name_fits(const struct keyfs_ctx *ctx, const char *type)
{
	return strcmp(type, "user") == 0 || keyfs_is_keyring_type(type) ||
	       strcmp(type, ctx->opts.default_type) == 0;
}

/* A key keeps its own name in every keyring: ln and mv across keyrings
 * may not give it another, and answer mismatch (-EINVAL, -EXDEV) when
 * newname is not the key's own. */
static int check_own_name(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  const struct tnode *tn, const char *newname,
			  int mismatch)
{
	char type[KEYFS_TYPE_MAX + 1];
	char *desc = malloc(KEYFS_DESC_MAX + 1);
	struct key_info ki;
	bool typed;
	int ret;

	if (!desc)
		return -ENOMEM;
	ret = attr_key_info_part(ctx, c, tn, 0, &ki);	/* type, description */
	if (ret == 0)
		ret = name_parse(newname, type, desc, &typed);
	if (ret == 0 && (strcmp(desc, ki.desc) != 0 ||
			 (typed && strcmp(type, ki.type) != 0) ||
			 (!typed && !plain_name_fits(ctx, ki.type))))
		ret = mismatch;
	free(desc);
	return ret;
}

/* A change the caller may not make (no setattr on the new key: a
 * non-possessor owner holds only the user class) is left out, as mv(1)
 * leaves out what it may not copy. */
static int unless_refused(int ret)
{
	return ret == -EACCES || ret == -EPERM ? 0 : ret;
}

/* Give a key a rename made what the source had, as far as the caller may
 * set it: expiry, owner (like mv(1), a caller who may not chown keeps the
 * key as its own) and, last, since it may take the caller's own rights
 * away, the permission.  What the caller may not set stays as add_key(2)
 * made it. */
static int carry_attrs(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       kserial_t key, const struct key_info *from)
{
	time_t now = time(NULL);
	int ret = 0;

	if (from->expiry)
		ret = unless_refused(BACKEND_CALL(ctx, set_timeout, c, key,
				   from->expiry > now ? (unsigned)(from->expiry - now) : 1));
	if (ret == 0 && (from->uid != c->uid || from->gid != c->gid)) {
		ret = BACKEND_CALL(ctx, chown, c, key, from->uid, from->gid);
		if ((ret == -EACCES || ret == -EPERM) && from->gid != c->gid)
			ret = BACKEND_CALL(ctx, chown, c, key, (uid_t)-1, from->gid);
		ret = unless_refused(ret);
	}
	if (ret == 0)
		ret = unless_refused(BACKEND_CALL(ctx, setperm, c, key, from->perm));
	return ret;
}

/* The key a rename in one keyring replaces (*target, 0 for none), and
 * the type and description newname gives (self: the source's serial); the new name must keep the
 * source's type, and a plain one must find the key again as lookup reads
 * it. */
static int rename_target(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			 kserial_t keyring, kserial_t self,
			 const struct key_info *ki, const char *newname,
			 unsigned flags, char *type, char *desc,
			 kserial_t *target)
{
	struct key_info ti;
	bool typed;
	int ret = name_parse(newname, type, desc, &typed);

	if (ret == 0 && !typed)
		snprintf(type, KEYFS_TYPE_MAX + 1, "%s", ki->type);
	if (ret == 0 && (strcmp(type, ki->type) != 0 ||
			 (!typed && !plain_name_fits(ctx, ki->type))))
		ret = -EINVAL;
	if (ret < 0)
		return ret;
	ret = tree_find_key(ctx, c, keyring, newname, target);
	if (ret == 0 && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (ret == -ENOENT)
		ret = 0, *target = 0;
	/* A plain name can find a key of another type (a user key before
	 * one of default_type): that would be a change of type. */
	if (ret == 0 && *target && *target != self) {
		ret = BACKEND_CALL(ctx, describe, c, *target, &ti);
		if (ret == 0 && strcmp(ti.type, ki->type) != 0)
			ret = -EINVAL;
	}
	return ret;
}

/* Give the source key's payload to target, or to a new key of type and
 * desc made with the source's attributes, and unlink the source; all or
 * nothing. */
static int rename_payload(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  kserial_t keyring, const struct tnode *src,
			  const struct key_info *ki, const char *type,
			  const char *desc, kserial_t *target)
{
	struct handle *h = NULL;
	bool made = false;
	uint32_t perm;
	int ret = handle_open_key(ctx, c, src, O_RDONLY, &h);

	if (ret < 0)
		return ret;
	ctx_batch_begin(ctx);	/* one change of a store */
	if (*target) {
		ret = handle_update_payload(ctx, c, *target, h->buf, h->len);
	} else {
		ret = BACKEND_CALL(ctx, add, c, type, desc, h->buf, h->len, keyring,
				   keytype_add_perm(ctx, c, type, &perm), target);
		made = ret == 0;
		if (ret == 0)
			ret = carry_attrs(ctx, c, *target, ki);
	}
	if (ret == 0 && *target != src->serial)
		ret = BACKEND_CALL(ctx, unlink, c, src->serial, keyring);
	/* A key made for newname goes again (unlinking needs write on the
	 * keyring only, which the caller had to make it). */
	if (ret < 0 && made)
		BACKEND_CALL(ctx, unlink, c, *target, keyring);
	ret = ctx_batch_end(ctx, ret);
	handle_free(h);
	return ret;
}

/* Rename in one keyring: the target takes the source's payload and the
 * source goes, which is what save-by-rename (editors, sed -i) needs.  A
 * new name gets a new key (the kernel cannot rename one) with the
 * source's attributes. */
static int rename_in_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			     kserial_t keyring, const struct tnode *src,
			     const char *newname, unsigned flags, kserial_t *out)
{
	char type[KEYFS_TYPE_MAX + 1];
	char *desc = NULL;
	struct key_info ki;
	kserial_t target;
	int ret;

	if (is_keyring(ctx, c, src))
		return -EPERM;	/* a keyring's description never changes */
	ret = attr_key_info(ctx, c, src, &ki);
	if (ret < 0)
		return ret;
	desc = malloc(KEYFS_DESC_MAX + 1);
	if (!desc)
		return -ENOMEM;
	ret = rename_target(ctx, c, keyring, src->serial, &ki, newname, flags,
			    type, desc, &target);
	if (ret == 0 && src->kind == T_PENDING && !src->serial) {
		if (target) {
			ret = -EINVAL;	/* no payload to give it */
		} else {
			free(src->node->pk->desc);
			src->node->pk->desc = desc;
			src->node->listed_name = false;	/* newname may be typed */
			desc = NULL;
		}
		goto out;
	}
	if (ret == 0)
		ret = rename_payload(ctx, c, keyring, src, &ki, type, desc, &target);
	/* The kernel now keeps the source's inode under newname, but the
	 * target key kept its own serial.  As long as the kernel holds that
	 * inode it stands for the target, so a reader that found newname
	 * before the kernel looks it up again never meets a vanished key. */
	if (ret == 0 && target != src->serial)
		node_renamed(ctx->nodes, src->ino, src->serial, target,
			     ki.nlink <= 1);
	if (ret == 0)
		*out = target;
out:
	free(desc);
	return ret;
}

/* The kernel moves its entry along with a rename: a keyring's place
 * moves with it (node_place), and the other places of both keyrings
 * forget both names.  Queued only: a wait would meet the rename's own
 * locks where both directories are places of one keyring. */
static void renamed_elsewhere(struct keyfs_ctx *ctx, const struct tnode *tn,
			      fuse_ino_t parent, const char *name,
			      fuse_ino_t newparent, const char *newname)
{
	if (tn->kind == T_KEY && parent != newparent)
		node_place_moved(ctx->nodes, tn->serial, parent, newparent);
	fs_name_changed_elsewhere(ctx, parent, name);
	fs_name_changed_elsewhere(ctx, newparent, newname);
}

/* The pending entry newname stands for, other than the one renamed, or
 * 0.  A rename replaces its target, and a pending entry is keyfs's alone
 * (the backend's rename cannot see it), so it is removed once the rename
 * is done, as unlink would (a writer that has it open then commits
 * nothing).  One a key of its name hides is not looked for: the key is
 * the target. */
static fuse_ino_t pending_target(struct keyfs_ctx *ctx,
				 const struct keyfs_cred *c, fuse_ino_t newparent,
				 const char *newname, const struct tnode *src)
{
	struct tnode tt;

	if (tree_lookup(ctx, c, newparent, newname, &tt) < 0 ||
	    tt.kind != T_PENDING || tt.serial || tt.ino == src->ino)
		return 0;
	return tt.ino;
}

static void drop_pending_target(struct keyfs_ctx *ctx,
				const struct keyfs_cred *c, fuse_ino_t ino)
{
	struct node *n = ino ? node_get(ctx->nodes, ino) : NULL;

	/* The rename needed write on this keyring as well: nothing is left
	 * to refuse. */
	if (n && n->kind == NODE_PENDING)
		(void)pending_unlink(ctx, c, n);
}

void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned flags)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	kserial_t from, to;
	fuse_ino_t replaced = 0;
	struct tnode tn;
	int ret;

	if (flags & ~RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	ret = entry_of(ctx, c, parent, name, &from, &tn);
	if (ret == 0)
		ret = parent_keyring(ctx, newparent, &to);
	/* A pending entry moves by the rules of the key it will be. */
	if (ret == 0 && tn.kind == T_PENDING && !tn.serial)
		ret = pending_may_rename(ctx, c, tn.node, from, to);
	if (ret == 0)
		replaced = pending_target(ctx, c, newparent, newname, &tn);
	if (ret == 0 && from == to) {
		kserial_t target = 0;

		ret = strcmp(name, newname) == 0 ? 0 :
		      rename_in_keyring(ctx, c, from, &tn, newname, flags, &target);
		if (ret == 0 && target)
			fs_forget_name(ctx, newparent, newname);
	}
	else if (ret == 0)
		/* Another name in another keyring is no one kernel operation:
		 * EXDEV makes mv(1) and file managers copy and delete. */
		ret = check_own_name(ctx, c, &tn, newname, -EXDEV);
	if (ret == 0 && from != to) {
		if (tn.kind == T_PENDING && !tn.serial)
			tn.node->pk->parent = to;
		else
			ret = BACKEND_CALL(ctx, move, c, tn.serial, from, to,
					   flags & RENAME_NOREPLACE ? KEYFS_MOVE_EXCL : 0);
	}
	if (ret == 0 && tn.kind == T_PENDING && !tn.serial)
		pending_renamed(c, tn.node);
	if (ret == 0)
		drop_pending_target(ctx, c, replaced);
	if (ret == 0)
		renamed_elsewhere(ctx, &tn, parent, name, newparent, newname);
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	     const char *newname)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	kserial_t keyring;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	if (ret == 0 && (tn.kind != T_KEY || !tn.serial))
		ret = -EPERM;
	if (ret == 0)
		ret = parent_keyring(ctx, newparent, &keyring);
	if (ret == 0)
		ret = check_own_name(ctx, c, &tn, newname, -EINVAL);
	if (ret == 0)
		ret = BACKEND_CALL(ctx, link, c, tn.serial, keyring);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (fs_name_changed_elsewhere(ctx, newparent, newname))
		fs_forget_wait(ctx);
	reply_entry(req, ctx, c, newparent, &tn);
}
