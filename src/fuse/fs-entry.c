/* fs-entry.c: the operations on directory entries: lookup, forget, mkdir, create, unlink, rmdir. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "fs-ops.h"
#include "handle.h"
#include "keytype.h"
#include "names.h"
#include "pagecache.h"
#include "pending.h"
#include "perm.h"

/* Whether name, found in keyring as serial, is a keyring, known without
 * describing it: the keyring's search finds names by type.  0 when it is,
 * -ENOTDIR when not, or another error. */
static int named_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			 kserial_t keyring, const char *name, kserial_t serial)
{
	char type[KEYFS_TYPE_MAX + 1];
	char *desc = malloc(KEYFS_DESC_MAX + 1);
	kserial_t found;
	bool typed;
	int ret = desc ? name_parse(name, type, desc, &typed) : -ENOMEM;

	if (ret == 0 && typed && !keyfs_is_keyring_type(type))
		ret = -ENOTDIR;
	if (ret == 0)
		ret = BACKEND_CALL(ctx, find, c, keyring, "keyring", desc, &found);
	if (ret == 0 && found != serial)
		ret = -ENOTDIR;
	free(desc);
	return ret == -ENOKEY ? -ENOTDIR : ret;
}

/* A key the caller may not view but whose keyring it may search is there
 * all the same (keyctl unlink and rmdir act on it with write on the
 * keyring): its entry says only whether it is a keyring, and is never
 * cached, so stat and open still ask and are refused.  Otherwise err. */
static int hidden_attr(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       fuse_ino_t parent, const char *name,
		       const struct tnode *tn, struct stat *st, int err)
{
	kserial_t keyring;
	int ret = tn->kind == T_KEY && err == -EACCES ?
		  parent_keyring(ctx, parent, &keyring) : err;

	if (ret == 0)
		ret = named_keyring(ctx, c, keyring, name, tn->serial);
	if (ret < 0 && ret != -ENOTDIR)
		return err;
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)tn->ino;
	st->st_mode = ret == 0 ? S_IFDIR : S_IFREG;
	st->st_nlink = 1;
	/* never shown (getattr is refused); the kernel takes no invalid id */
	st->st_uid = ctx->mounter.uid;
	st->st_gid = ctx->mounter.gid;
	return 0;
}

void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct fuse_entry_param e;
	struct stat st;
	struct tnode tn;
	bool hidden = false;
	int ret = tree_lookup(ctx, c, parent, name, &tn);

	if (ret == 0) {
		ret = attr_get(ctx, c, &tn, &st);
		if (ret == -EACCES) {
			ret = hidden_attr(ctx, c, parent, name, &tn, &st, ret);
			hidden = ret == 0;
		}
	}
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	place_entry(ctx, parent, &tn, &st);
	fill_entry(ctx, &tn, &st, &e);
	entry_in(ctx, parent, &e);
	if (hidden)
		e.attr_timeout = e.entry_timeout = 0;
	if (fuse_reply_entry(req, &e) == 0)
		took_ref(ctx, &tn);
}

void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(req_ctx(req)->nodes, ino, nlookup);
	fuse_reply_none(req);
}

void fs_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		node_forget(req_ctx(req)->nodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct tnode tn;
	int ret = tree_node(req_ctx(req), ino, &tn);

	if (ret < 0)
		fuse_reply_err(req, -ret);
	else if (tn.kind != T_LINK)
		fuse_reply_err(req, EINVAL);
	else
		fuse_reply_readlink(req, tn.target);
}

void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		const char *name)
{
	(void)link; (void)parent; (void)name;
	fuse_reply_err(req, EPERM);
}

/* Split a new entry's name into type and description; plain names take
 * default_type (files) or keyring (directories). */
static int new_name(struct keyfs_ctx *ctx, const char *name, const char *plain,
		    char *type, char *desc)
{
	bool typed;
	int ret = name_parse(name, type, desc, &typed);

	if (ret < 0)
		return ret;
	if (!typed)
		snprintf(type, KEYFS_TYPE_MAX + 1, "%s", plain ? plain : ctx->opts.default_type);
	return 0;
}

/*
 * The kernel's possession search descends through 6 nested keyrings below
 * the process keyrings, so a keyring 7 levels down is possessed but what
 * it links is not, and a keyring made there gets add_key's permission
 * with nothing for its creator but view: it could never be read, searched
 * or changed through this path.  Told by searching rather than counting
 * (the depth is over every path, not this one): the parent is found by
 * the possession search and lets possessors search it, yet the new
 * keyring is not found.  A search that finds another key of the same
 * description proves nothing and lets the keyring be.  -ELOOP or 0.
 */
static int mkdir_too_deep(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  kserial_t keyring, const char *desc)
{
	struct key_info *pi = malloc(sizeof(*pi));
	kserial_t found;
	int ret = pi ? BACKEND_CALL(ctx, describe, c, keyring, pi) : -ENOMEM;

	if (ret < 0 || !pi->possessed ||
	    !(pi->perm & (KEYFS_PERM_SEARCH << KEYFS_POS_SHIFT)) ||
	    BACKEND_CALL(ctx, search, c, "keyring", desc, &found) != -ENOKEY)
		ret = 0;
	else if (BACKEND_CALL(ctx, search, c, "keyring", pi->desc, &found) == 0 &&
		 found == keyring)
		ret = -ELOOP;
	else
		ret = 0;
	free(pi);
	return ret;
}

/* The permission a new key of type made by c gets for the mode given at
 * its creation (the caller's umask already applied by the kernel): the
 * one it starts from with the mode mapped as chmod maps it. */
static int mode_perm(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		     const char *type, mode_t mode, uint32_t *out)
{
	uint32_t perm;
	int ret = keytype_new_perm(ctx, c->uid, type, &perm);

	if (ret == 0)
		*out = perm_from_mode(perm, mode & 0777);
	return ret;
}

/* Give a new keyring its mode; one whose creator may not set it (not
 * possessed, so no setattr) keeps add_key's permission.  Other errors
 * undo the mkdir. */
static int mkdir_mode(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      kserial_t keyring, kserial_t serial, mode_t mode)
{
	uint32_t perm;
	int ret = mode_perm(ctx, c, "keyring", mode, &perm);

	if (ret == 0)
		ret = BACKEND_CALL(ctx, setperm, c, serial, perm);
	if (ret == -EACCES)
		ret = 0;
	if (ret < 0)
		BACKEND_CALL(ctx, unlink, c, serial, keyring);
	return ret;
}

/* The keyring of a mkdir with its mode: one change of a store. */
static int make_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			kserial_t keyring, const char *desc, mode_t mode,
			kserial_t *serial)
{
	uint32_t buf;
	const uint32_t *perm = keytype_add_perm(ctx, c, "keyring", &buf);
	int ret;

	ctx_batch_begin(ctx);
	ret = BACKEND_CALL(ctx, add, c, "keyring", desc, NULL, 0, keyring, perm,
			   serial);
	if (ret == 0) {
		ret = mkdir_too_deep(ctx, c, keyring, desc);
		if (ret < 0)
			BACKEND_CALL(ctx, unlink, c, *serial, keyring);
		else
			ret = mkdir_mode(ctx, c, keyring, *serial, mode);
	}
	return ctx_batch_end(ctx, ret);
}

void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	char type[KEYFS_TYPE_MAX + 1];
	char *desc = malloc(KEYFS_DESC_MAX + 1);
	kserial_t keyring, serial;
	struct tnode tn;
	int ret;

	ret = desc ? parent_keyring(ctx, parent, &keyring) : -ENOMEM;
	if (ret == 0)
		ret = new_name(ctx, name, "keyring", type, desc);
	if (ret == 0 && !keyfs_is_keyring_type(type))
		ret = -EINVAL;
	if (ret == 0 && tree_find_key(ctx, c, keyring, name, &serial) == 0)
		ret = -EEXIST;
	if (ret == 0)
		ret = make_keyring(ctx, c, keyring, desc, mode, &serial);
	free(desc);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (fs_name_changed_elsewhere(ctx, parent, name))
		fs_forget_wait(ctx);
	tree_node(ctx, tree_ino(ctx, serial), &tn);
	reply_entry(req, ctx, c, parent, &tn);
}

void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	kserial_t keyring;
	struct tnode tn;
	int ret = entry_of(ctx, c, parent, name, &keyring, &tn);

	if (ret == 0 && tn.kind == T_PENDING && !tn.serial) {
		ret = pending_unlink(ctx, c, tn.node);
	} else if (ret == 0) {
		ret = is_keyring(ctx, c, &tn) ? -EISDIR :
		      BACKEND_CALL(ctx, unlink, c, tn.serial, keyring);
		/* The payload leaves the page cache with the name (open
		 * files keep reading their own). */
		if (ret == 0)
			pagecache_changed(ctx, tn.ino);
	}
	if (ret == 0 && fs_name_changed_elsewhere(ctx, parent, name))
		fs_forget_wait(ctx);
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

static void count_pending(struct node *n, void *arg)
{
	(void)n;
	(*(size_t *)arg)++;
}

/* rmdir's target: a keyring, told by its description when the caller may
 * view it, else by its name (keyctl unlink needs no view of the key).
 * 0, -ENOTDIR or another error. */
static int rmdir_target(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			kserial_t keyring, const char *name,
			const struct tnode *tn)
{
	struct key_info ki;
	int ret = attr_key_info_part(ctx, c, tn, 0, &ki);	/* the type only */

	if (ret == 0)
		return keyfs_is_keyring_type(ki.type) ? 0 : -ENOTDIR;
	if (ret != -EACCES || tn->kind != T_KEY)
		return ret;
	return named_keyring(ctx, c, keyring, name, tn->serial);
}

void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	kserial_t keyring, *links = NULL;
	size_t n = 0;
	struct tnode tn;
	int ret = entry_of(ctx, c, parent, name, &keyring, &tn);

	if (ret == 0)
		ret = rmdir_target(ctx, c, keyring, name, &tn);
	if (ret == 0)
		ret = BACKEND_CALL(ctx, list, c, tn.serial, &links, &n);
	free(links);
	/* A keyring the caller may not read cannot be seen to be empty; the
	 * kernel lets whoever may write the parent unlink it all the same. */
	if (ret == -EACCES)
		ret = 0;
	/* A listed pending entry is an entry too: removing the keyring would
	 * silently drop it. */
	if (ret == 0 && n == 0)
		node_for_each_pending(ctx->nodes, tn.serial, count_pending, &n);
	if (ret == 0 && n > 0)
		ret = -ENOTEMPTY;
	if (ret == 0)
		ret = BACKEND_CALL(ctx, unlink, c, tn.serial, keyring);
	if (ret == 0 && fs_name_changed_elsewhere(ctx, parent, name))
		fs_forget_wait(ctx);
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

/* A new entry takes its creation mode as its permission, set at
 * instantiation; where its creator may not set a permission (it will not
 * possess the key) the key keeps add_key's. */
static void pending_mode(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			 struct node *n, mode_t mode)
{
	uint32_t perm;

	if (mode_perm(ctx, c, n->pk->type, mode, &perm) == 0 &&
	    pending_setperm(ctx, c, n, perm) == 0)
		n->pk->perm_from_mode = true;
}

static int create_pending(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  kserial_t keyring, const char *name, int flags,
			  mode_t mode, struct tnode *tn)
{
	char type[KEYFS_TYPE_MAX + 1];
	char *desc = malloc(KEYFS_DESC_MAX + 1);
	struct node *n = NULL;
	int ret = desc ? new_name(ctx, name, NULL, type, desc) : -ENOMEM;

	if (ret == 0 && keyfs_is_keyring_type(type))
		ret = -EISDIR;
	if (ret == 0)
		ret = pending_create(ctx, c, keyring, type, desc, flags, &n);
	if (ret == 0) {
		pending_mode(ctx, c, n, mode);
		n->listed_name = pending_listed_as(n, name);
	}
	if (ret == 0)
		ret = tree_node(ctx, n->ino, tn);
	free(desc);
	return ret;
}

void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct fuse_entry_param e;
	struct handle *h = NULL;
	kserial_t keyring, serial;
	struct stat st;
	struct tnode tn;
	int ret;

	ret = parent_keyring(ctx, parent, &keyring);
	if (ret == 0 && strlen(name) > KEYFS_NAME_MAX)
		ret = -ENAMETOOLONG;
	if (ret == 0) {
		ret = tree_find_key(ctx, c, keyring, name, &serial);
		if (ret == 0 && (fi->flags & O_EXCL))
			ret = -EEXIST;
		else if (ret == 0)
			ret = tree_node(ctx, tree_ino(ctx, serial), &tn);
		else if (ret == -ENOENT)
			ret = create_pending(ctx, c, keyring, name, fi->flags, mode, &tn);
	}
	if (ret == 0)
		ret = handle_open_key(ctx, c, &tn, fi->flags, &h);
	if (ret == 0)
		ret = attr_get(ctx, c, &tn, &st);
	if (ret < 0) {
		handle_free(h);
		fuse_reply_err(req, -ret);
		return;
	}
	/* Queued only: the reply needs tn's node, which a wait could see go. */
	fs_name_changed_elsewhere(ctx, parent, name);
	fill_entry(ctx, &tn, &st, &e);
	entry_in(ctx, parent, &e);
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	if (fuse_reply_create(req, &e, fi) == 0)
		took_ref(ctx, &tn);
	else
		handle_free(h);
}

/* mknod of a regular file (tar and cp make files so) is a create without
 * an open; keys cannot be devices, fifos or sockets. */
void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	kserial_t keyring, serial;
	struct tnode tn;
	int ret = S_ISREG(mode) ? 0 : -EPERM;

	(void)rdev;
	if (ret == 0)
		ret = parent_keyring(ctx, parent, &keyring);
	if (ret == 0 && strlen(name) > KEYFS_NAME_MAX)
		ret = -ENAMETOOLONG;
	if (ret == 0 && tree_find_key(ctx, c, keyring, name, &serial) == 0)
		ret = -EEXIST;
	if (ret == 0)
		ret = create_pending(ctx, c, keyring, name, O_WRONLY | O_CREAT | O_EXCL,
				     mode, &tn);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	fs_name_changed_elsewhere(ctx, parent, name);	/* as fs_create */
	reply_entry(req, ctx, c, parent, &tn);
}
