/* fs.c: the FUSE low-level operations: the only place that talks to libfuse and replies. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "attr.h"
#include "control.h"
#include "fs.h"
#include "handle.h"
#include "names.h"
#include "pending.h"
#include "perm.h"
#include "tree.h"

/* The caller of one request, as keyfs's access checks see it. */
struct req_cred {
	struct keyfs_cred c;
	struct keyfs_lazy_groups groups;
};

static struct keyfs_ctx *req_ctx(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void load_groups(struct keyfs_lazy_groups *g)
{
	int n = fuse_req_getgroups(g->arg, KEYFS_GROUPS_MAX, g->v);

	g->n = n < 0 ? 0 : n > KEYFS_GROUPS_MAX ? KEYFS_GROUPS_MAX : n;
}

static const struct keyfs_cred *req_cred(fuse_req_t req, struct req_cred *rc)
{
	const struct fuse_ctx *fc = fuse_req_ctx(req);

	memset(&rc->c, 0, sizeof(rc->c));
	rc->c.uid = fc->uid;
	rc->c.gid = fc->gid;
	rc->c.pid = fc->pid;
	/* Supplementary groups come from /proc: only when a check needs them. */
	rc->groups.loaded = false;
	rc->groups.load = load_groups;
	rc->groups.arg = req;
	rc->c.lazy = &rc->groups;
	return &rc->c;
}

/* Pending entries change identity when instantiated, so the kernel must
 * not cache them; everything else follows the timeout options. */
static void fill_entry(struct keyfs_ctx *ctx, const struct tnode *tn,
		       const struct stat *st, struct fuse_entry_param *e)
{
	bool volatile_node = tn->kind == T_PENDING;

	memset(e, 0, sizeof(*e));
	e->ino = tn->ino;
	e->attr = *st;
	e->attr_timeout = volatile_node ? 0 : ctx->opts.attr_timeout;
	e->entry_timeout = volatile_node ? 0 : ctx->opts.entry_timeout;
}

/* The kernel now holds one more reference to this inode. */
static void took_ref(struct keyfs_ctx *ctx, const struct tnode *tn)
{
	if (tn->node)
		tn->node->nlookup++;
	else if (tn->kind == T_KEY)
		node_key_ref(ctx->nodes, tn->ino);
}

static void reply_entry(fuse_req_t req, struct keyfs_ctx *ctx,
			const struct keyfs_cred *c, const struct tnode *tn)
{
	struct fuse_entry_param e;
	struct stat st;
	int ret = attr_get(ctx, c, tn, &st);

	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	fill_entry(ctx, tn, &st, &e);
	if (fuse_reply_entry(req, &e) == 0)
		took_ref(ctx, tn);
}

void fs_key_changed(struct keyfs_ctx *ctx, kserial_t serial)
{
	/* Offset -1: attributes only, no page-cache work that could wait on a
	 * request this thread has yet to answer. */
	if (ctx->se && serial)
		fuse_lowlevel_notify_inval_inode(ctx->se, tree_ino(ctx, serial), -1, 0);
}

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* O_TRUNC arrives with open, so "echo x > key" is one update. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct tnode tn;
	int ret = tree_lookup(ctx, c, parent, name, &tn);

	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		reply_entry(req, ctx, c, &tn);
}

static void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(req_ctx(req)->nodes, ino, nlookup);
	fuse_reply_none(req);
}

static void fs_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		node_forget(req_ctx(req)->nodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	struct handle *h;
	struct stat st;

	(void)fi;	/* fstat(2) comes without it: open files are found by inode */
	if (ret == 0)
		ret = attr_get(ctx, c, &tn, &st);
	/* An open file outlives its key, as an unlinked file does. */
	if (ret < 0 && (h = handle_find_open(ctx, ino)) != NULL) {
		st = h->st;
		st.st_nlink = 0;
		st.st_size = (off_t)h->len;
		ret = 0;
	}
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, tn.kind == T_PENDING ? 0 : ctx->opts.attr_timeout);
}

static int set_mode(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    const struct tnode *tn, mode_t mode)
{
	struct key_info ki;
	int ret = attr_key_info(ctx, c, tn, &ki);

	if (ret < 0)
		return ret == -EINVAL ? -EPERM : ret;
	if (tn->kind == T_PENDING && !tn->serial)
		return pending_setperm(ctx, c, tn->node, perm_from_mode(ki.perm, mode));
	return BACKEND_CALL(ctx, setperm, c, tn->serial, perm_from_mode(ki.perm, mode));
}

static int set_owner(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		     const struct tnode *tn, uid_t uid, gid_t gid)
{
	if (tn->kind == T_PENDING && !tn->serial)
		return pending_chown(ctx, c, tn->node, uid, gid);
	if (tn->kind != T_KEY && tn->kind != T_PENDING)
		return -EPERM;
	return BACKEND_CALL(ctx, chown, c, tn->serial, uid, gid);
}

/* truncate(2) with no open file: one update of the cut payload. */
static int truncate_key(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			const struct tnode *tn, off_t size)
{
	struct handle *h = NULL;
	int ret;

	if (tn->kind != T_KEY && tn->kind != T_PENDING)
		return -EPERM;
	ret = handle_open_key(ctx, c, tn, O_RDWR, &h);
	if (ret < 0)
		return ret;
	ret = handle_truncate(h, size);
	if (ret == 0)
		ret = handle_commit(ctx, h);
	handle_free(h);
	return ret;
}

static void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct handle *h = fi ? (struct handle *)(uintptr_t)fi->fh : NULL;
	struct stat st;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	if (ret == 0 && (to_set & FUSE_SET_ATTR_MODE))
		ret = set_mode(ctx, c, &tn, attr->st_mode);
	if (ret == 0 && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		ret = set_owner(ctx, c, &tn,
				to_set & FUSE_SET_ATTR_UID ? attr->st_uid : (uid_t)-1,
				to_set & FUSE_SET_ATTR_GID ? attr->st_gid : (gid_t)-1);
	if (ret == 0 && (to_set & FUSE_SET_ATTR_SIZE)) {
		if (h && h->kind == H_KEY)
			ret = handle_truncate(h, attr->st_size);
		else
			ret = truncate_key(ctx, c, &tn, attr->st_size);
	}
	/* Times are accepted: keys keep no times the kernel would take; a
	 * pending entry still says who may touch it. */
	if (ret == 0 && tn.kind == T_PENDING && !tn.serial &&
	    (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
		       FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW)))
		ret = pending_set_times(ctx, c, tn.node);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	ret = attr_get(ctx, c, &tn, &st);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	/* An open file's size is its buffer's until the commit at close. */
	if (h && h->kind == H_KEY)
		st.st_size = (off_t)h->len;
	fuse_reply_attr(req, &st, tn.kind == T_PENDING ? 0 : ctx->opts.attr_timeout);
}

static void fs_readlink(fuse_req_t req, fuse_ino_t ino)
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

static void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	(void)parent; (void)name; (void)mode; (void)rdev;
	fuse_reply_err(req, EPERM);
}

static void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	(void)link; (void)parent; (void)name;
	fuse_reply_err(req, EPERM);
}

/* The keyring a directory inode is; -EPERM for keyfs's own directories,
 * where nothing can be made or removed. */
static int parent_keyring(struct keyfs_ctx *ctx, fuse_ino_t parent,
			  kserial_t *out)
{
	struct tnode pt;
	int ret = tree_node(ctx, parent, &pt);

	if (ret < 0)
		return ret;
	if (pt.kind != T_KEY)
		return -EPERM;
	*out = pt.serial;
	return 0;
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

static void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
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

	(void)mode;	/* a keyring gets the kernel's default permission */
	ret = desc ? parent_keyring(ctx, parent, &keyring) : -ENOMEM;
	if (ret == 0)
		ret = new_name(ctx, name, "keyring", type, desc);
	if (ret == 0 && !keyfs_is_keyring_type(type))
		ret = -EINVAL;
	if (ret == 0 && tree_find_key(ctx, c, keyring, name, &serial) == 0)
		ret = -EEXIST;
	if (ret == 0)
		ret = BACKEND_CALL(ctx, add, c, "keyring", desc, NULL, 0, keyring, &serial);
	free(desc);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	tree_node(ctx, tree_ino(ctx, serial), &tn);
	reply_entry(req, ctx, c, &tn);
}

/* Find an entry of a keyring for removal or renaming. */
static int entry_of(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    fuse_ino_t parent, const char *name, kserial_t *keyring,
		    struct tnode *tn)
{
	int ret = parent_keyring(ctx, parent, keyring);

	if (ret == 0)
		ret = tree_lookup(ctx, c, parent, name, tn);
	if (ret == 0 && tn->kind != T_KEY && tn->kind != T_PENDING)
		ret = -EPERM;
	return ret;
}

static bool is_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       const struct tnode *tn)
{
	struct key_info ki;

	return attr_key_info(ctx, c, tn, &ki) == 0 && keyfs_is_keyring_type(ki.type);
}

static void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
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
	}
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

static void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	kserial_t keyring, *links = NULL;
	size_t n = 0;
	struct tnode tn;
	int ret = entry_of(ctx, c, parent, name, &keyring, &tn);

	if (ret == 0 && !is_keyring(ctx, c, &tn))
		ret = -ENOTDIR;
	if (ret == 0)
		ret = BACKEND_CALL(ctx, list, c, tn.serial, &links, &n);
	free(links);
	if (ret == 0 && n > 0)
		ret = -ENOTEMPTY;
	if (ret == 0)
		ret = BACKEND_CALL(ctx, unlink, c, tn.serial, keyring);
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

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
	ret = attr_key_info(ctx, c, tn, &ki);
	if (ret == 0)
		ret = name_parse(newname, type, desc, &typed);
	if (ret == 0 && (strcmp(desc, ki.desc) != 0 ||
			 (typed && strcmp(type, ki.type) != 0) ||
			 (!typed && !plain_name_fits(ctx, ki.type))))
		ret = mismatch;
	free(desc);
	return ret;
}

/* Give a key a rename made what the source had: expiry, owner (as far as
 * the caller may: like mv(1), a caller who may not chown keeps the key as
 * its own) and, last, since it may take the caller's own rights away, the
 * permission. */
static int carry_attrs(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       kserial_t key, const struct key_info *from)
{
	time_t now = time(NULL);
	int ret = 0;

	if (from->expiry)
		ret = BACKEND_CALL(ctx, set_timeout, c, key,
				   from->expiry > now ? (unsigned)(from->expiry - now) : 1);
	if (ret == 0 && (from->uid != c->uid || from->gid != c->gid)) {
		ret = BACKEND_CALL(ctx, chown, c, key, from->uid, from->gid);
		if ((ret == -EACCES || ret == -EPERM) && from->gid != c->gid)
			ret = BACKEND_CALL(ctx, chown, c, key, (uid_t)-1, from->gid);
		if (ret == -EACCES || ret == -EPERM)
			ret = 0;
	}
	if (ret == 0)
		ret = BACKEND_CALL(ctx, setperm, c, key, from->perm);
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
	struct handle *h = NULL;
	struct key_info ki, ti;
	kserial_t target;
	bool typed, made = false;
	int ret;

	if (is_keyring(ctx, c, src))
		return -EPERM;	/* a keyring's description never changes */
	ret = attr_key_info(ctx, c, src, &ki);
	if (ret < 0)
		return ret;
	desc = malloc(KEYFS_DESC_MAX + 1);
	if (!desc)
		return -ENOMEM;
	ret = name_parse(newname, type, desc, &typed);
	if (ret == 0 && !typed)
		snprintf(type, sizeof(type), "%s", ki.type);
	/* A plain name must find the new key again as lookup reads it. */
	if (ret == 0 && (strcmp(type, ki.type) != 0 ||
			 (!typed && !plain_name_fits(ctx, ki.type))))
		ret = -EINVAL;
	if (ret < 0)
		goto out;
	ret = tree_find_key(ctx, c, keyring, newname, &target);
	if (ret == 0 && (flags & RENAME_NOREPLACE))
		ret = -EEXIST;
	else if (ret == -ENOENT)
		ret = 0, target = 0;
	/* A plain name can find a key of another type (a user key before
	 * one of default_type): that would be a change of type. */
	if (ret == 0 && target && target != src->serial) {
		ret = BACKEND_CALL(ctx, describe, c, target, &ti);
		if (ret == 0 && strcmp(ti.type, ki.type) != 0)
			ret = -EINVAL;
	}
	if (ret < 0)
		goto out;
	if (src->kind == T_PENDING && !src->serial) {
		if (target) {
			ret = -EINVAL;	/* no payload to give it */
		} else {
			free(src->node->desc);
			src->node->desc = desc;
			desc = NULL;
		}
		goto out;
	}
	ret = handle_open_key(ctx, c, src, O_RDONLY, &h);
	if (ret < 0)
		goto out;
	if (target) {
		ret = handle_update_payload(ctx, c, target, h->buf, h->len);
	} else {
		ret = BACKEND_CALL(ctx, add, c, type, desc, h->buf, h->len, keyring, &target);
		made = ret == 0;
		if (ret == 0)
			ret = carry_attrs(ctx, c, target, &ki);
	}
	if (ret == 0 && target != src->serial)
		ret = BACKEND_CALL(ctx, unlink, c, src->serial, keyring);
	/* All or nothing: a key made for newname goes again (unlinking needs
	 * write on the keyring only, which the caller had to make it). */
	if (ret < 0 && made)
		BACKEND_CALL(ctx, unlink, c, target, keyring);
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
	handle_free(h);
	free(desc);
	return ret;
}

static void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned flags)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	kserial_t from, to;
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
			tn.node->parent = to;
		else
			ret = BACKEND_CALL(ctx, move, c, tn.serial, from, to,
					   flags & RENAME_NOREPLACE ? KEYFS_MOVE_EXCL : 0);
	}
	if (ret == 0 && tn.kind == T_PENDING && !tn.serial)
		pending_renamed(c, tn.node);
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

static void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
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
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		reply_entry(req, ctx, c, &tn);
}

static int open_control(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			const struct tnode *tn, int flags, struct handle **out)
{
	bool writable = control_is_writable(tn->ctl);
	int acc = flags & O_ACCMODE;
	struct handle *h;
	int ret;

	if (writable ? acc == O_RDONLY : acc != O_RDONLY)
		return -EACCES;
	h = handle_new(writable ? H_CONTROL : H_TEXT, tn->ino);
	if (!h)
		return -ENOMEM;
	h->ctl = tn->ctl;
	if (!writable) {
		char *text = NULL;
		size_t len = 0;

		ret = control_read_alloc(ctx, c, tn->ctl, &text, &len);
		if (ret < 0) {
			handle_free(h);
			return ret;
		}
		h->buf = (unsigned char *)text;
		h->len = h->cap = len;
	}
	*out = h;
	return 0;
}

static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct handle *h = NULL;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	if (ret == 0) {
		if (tn.kind == T_KEY || tn.kind == T_PENDING)
			ret = handle_open_key(ctx, c, &tn, fi->flags, &h);
		else if (tn.kind == T_CTLFILE)
			ret = open_control(ctx, c, &tn, fi->flags, &h);
		else
			ret = -EISDIR;
	}
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uintptr_t)h;
	/* Reads come to keyfs every time: keys change behind the kernel's back. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->nonseekable = 0;
	if (fuse_reply_open(req, fi) != 0)
		handle_free(h);
}

static void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	const void *data;
	size_t n;

	(void)ino;
	if (h->kind != H_KEY && h->kind != H_TEXT) {
		fuse_reply_err(req, EBADF);
		return;
	}
	n = handle_read(h, off, size, &data);
	fuse_reply_buf(req, data, n);
}

static void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	struct req_cred rc;
	ssize_t ret;

	(void)ino;
	if (h->kind == H_KEY) {
		ret = handle_write(h, off, buf, size);
	} else if (h->kind == H_CONTROL) {
		ret = control_write(ctx, req_cred(req, &rc), h->ctl, buf, size);
		if (ret == 0)
			ret = (ssize_t)size;
	} else {
		ret = -EBADF;
	}
	if (ret < 0)
		fuse_reply_err(req, (int)-ret);
	else
		fuse_reply_write(req, (size_t)ret);
}

/* Every write comes here (libfuse prefers write_buf to write): unlike
 * write's const buffer, the bufvec is ours to change, so the payload libfuse
 * read into its request buffer is wiped once fs_write has taken its copy. */
static void fs_write_buf(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_bufvec *bufv, off_t off,
			 struct fuse_file_info *fi)
{
	size_t size = fuse_buf_size(bufv);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	char *mem = NULL;
	ssize_t n;

	if (bufv->count == 1 && bufv->idx == 0 && bufv->off == 0 &&
	    !(bufv->buf[0].flags & FUSE_BUF_IS_FD)) {
		fs_write(req, ino, bufv->buf[0].mem, size, off, fi);
		goto wipe;
	}
	/* Spliced or in pieces: one flat copy of our own, wiped too. */
	mem = malloc(size ? size : 1);
	if (!mem) {
		fuse_reply_err(req, ENOMEM);
		goto wipe;
	}
	dst.buf[0].mem = mem;
	n = fuse_buf_copy(&dst, bufv, 0);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fs_write(req, ino, mem, (size_t)n, off, fi);
	explicit_bzero(mem, size);
	free(mem);
wipe:
	for (size_t i = 0; i < bufv->count; i++)
		if (!(bufv->buf[i].flags & FUSE_BUF_IS_FD) && bufv->buf[i].mem)
			explicit_bzero(bufv->buf[i].mem, bufv->buf[i].size);
}

/* Commit an open key file; the kernel's cached size is stale after. */
static int commit(fuse_req_t req, struct handle *h)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	bool dirty = h->dirty;
	int ret = handle_commit(ctx, h);

	if (ret == 0 && dirty)
		fs_key_changed(ctx, h->serial);
	return ret;
}

static void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int ret = commit(req, (struct handle *)(uintptr_t)fi->fh);

	(void)ino;
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

static void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)datasync;
	fs_flush(req, ino, fi);
}

static void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	(void)ino;
	/* Normally flush committed already; nobody hears an error here. */
	commit(req, h);
	handle_free(h);
	fuse_reply_err(req, 0);
}

static void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct handle *h = handle_new(H_DIR, ino);
	int ret = h ? tree_readdir(ctx, c, ino, &h->ents, &h->nents) : -ENOMEM;

	if (ret < 0) {
		handle_free(h);
		fuse_reply_err(req, -ret);
		return;
	}
	/* The listing keeps inode numbers, never nodes: a node may be removed
	 * and forgotten while the directory is open. */
	for (size_t i = 0; i < h->nents; i++)
		h->ents[i].tn.node = NULL;
	fi->fh = (uintptr_t)h;
	if (fuse_reply_open(req, fi) != 0)
		handle_free(h);
}

/* The node of a listed entry as it is now; false when it is gone or was
 * removed since opendir (it is then left out). */
static bool dirent_now(struct keyfs_ctx *ctx, const struct tree_dirent *d,
		       struct tnode *tn)
{
	struct node *n;

	*tn = d->tn;
	if (tn->kind != T_PENDING && tn->kind != T_SEARCHTYPE)
		return true;
	n = node_get(ctx->nodes, tn->ino);
	if (!n || (n->kind == NODE_PENDING && n->unlinked))
		return false;
	tn->node = n;
	return true;
}

/* One readdir(plus) reply from the listing made at opendir.  Offsets are
 * indexes into it, so the listing is one pass however it is read. */
static void do_readdir(fuse_req_t req, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	char *buf = calloc(1, size);
	size_t used = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = (size_t)off; off >= 0 && i < h->nents; i++) {
		struct tree_dirent *d = &h->ents[i];
		bool dot = i < 2;
		struct tnode tn;
		size_t n;

		if (!dirent_now(ctx, d, &tn))
			continue;
		if (plus) {
			struct fuse_entry_param e;

			fill_entry(ctx, &tn, &d->st, &e);
			if (dot)
				e.ino = 0;	/* the kernel takes no reference for . and .. */
			n = fuse_add_direntry_plus(req, buf + used, size - used,
						   d->name, &e, (off_t)i + 1);
		} else {
			n = fuse_add_direntry(req, buf + used, size - used,
					      d->name, &d->st, (off_t)i + 1);
		}
		if (n > size - used)
			break;
		if (plus && !dot)
			took_ref(ctx, &tn);
		used += n;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, false);
}

static void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, true);
}

static void fs_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	handle_free((struct handle *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct key_quota q = { 0 };
	struct statvfs sv;
	int ret = BACKEND_CALL(ctx, quota, c, &q);

	(void)ino;
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	/* Blocks are bytes of the caller's key quota; files are keys. */
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 1;
	sv.f_frsize = 1;
	sv.f_blocks = q.maxbytes;
	sv.f_bfree = q.maxbytes > q.bytes ? q.maxbytes - q.bytes : 0;
	sv.f_bavail = sv.f_bfree;
	sv.f_files = q.keys;
	sv.f_ffree = q.maxkeys > q.keys ? q.maxkeys - q.keys : 0;
	sv.f_favail = sv.f_ffree;
	sv.f_namemax = KEYFS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

static void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	if (ret == 0)
		ret = xattr_set(ctx, req_cred(req, &rc), &tn, name, value, size, flags);
	/* perm changes the mode the kernel has cached */
	if (ret == 0)
		fs_key_changed(ctx, tn.serial);
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

/* getxattr and listxattr: a size probe, or the value into a buffer. */
static void reply_xattr_value(fuse_req_t req, int ret, const char *buf,
			      size_t size)
{
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
}

static void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	char *buf = size ? malloc(size) : NULL;
	struct tnode tn;
	int ret = size && !buf ? -ENOMEM : tree_node(ctx, ino, &tn);

	if (ret == 0)
		ret = xattr_get(ctx, req_cred(req, &rc), &tn, name, buf, size);
	reply_xattr_value(req, ret, buf, size);
	free(buf);
}

static void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	char *buf = size ? malloc(size) : NULL;
	struct tnode tn;
	int ret = size && !buf ? -ENOMEM : tree_node(ctx, ino, &tn);

	if (ret == 0)
		ret = xattr_list(ctx, req_cred(req, &rc), &tn, buf, size);
	reply_xattr_value(req, ret, buf, size);
	free(buf);
}

static void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	if (ret == 0)
		ret = xattr_remove(ctx, req_cred(req, &rc), &tn, name);
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

/* access(2) answered with the kernel's key rules, so "test -r" tells the
 * truth without default_permissions. */
static int access_key(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      const struct tnode *tn, int mask)
{
	struct key_info ki;
	unsigned want = 0, granted;
	int ret = attr_key_info(ctx, c, tn, &ki);

	if (ret < 0)
		return ret;
	if (mask & R_OK)
		want |= KEYFS_PERM_READ;
	if (mask & W_OK)
		want |= KEYFS_PERM_WRITE;
	if (mask & X_OK)
		want |= KEYFS_PERM_SEARCH;
	granted = perm_granted(c, ki.uid, ki.gid, ki.perm, ki.possessed);
	return (want & ~granted) ? -EACCES : 0;
}

static void fs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct stat st;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	if (ret == 0 && (tn.kind == T_KEY || tn.kind == T_PENDING)) {
		ret = access_key(ctx, c, &tn, mask);
	} else if (ret == 0 && mask != F_OK) {
		/* keyfs's own nodes: what their mode says, for everyone. */
		attr_get(ctx, c, &tn, &st);
		if (((mask & R_OK) && !(st.st_mode & S_IROTH)) ||
		    ((mask & W_OK) && !(st.st_mode & S_IWOTH)) ||
		    ((mask & X_OK) && !(st.st_mode & S_IXOTH)))
			ret = -EACCES;
	}
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

static int create_pending(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  kserial_t keyring, const char *name, int flags,
			  struct tnode *tn)
{
	char type[KEYFS_TYPE_MAX + 1];
	char *desc = malloc(KEYFS_DESC_MAX + 1);
	int ret = desc ? new_name(ctx, name, NULL, type, desc) : -ENOMEM;

	if (ret == 0 && keyfs_is_keyring_type(type))
		ret = -EISDIR;
	if (ret == 0)
		ret = pending_create(ctx, c, keyring, type, desc, flags, tn);
	free(desc);
	return ret;
}

static void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
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

	/* The mode is not applied: a new key gets the kernel's default
	 * permission, so a umask of 022 does not hand a secret to others. */
	(void)mode;
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
			ret = create_pending(ctx, c, keyring, name, fi->flags, &tn);
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
	fill_entry(ctx, &tn, &st, &e);
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	if (fuse_reply_create(req, &e, fi) == 0)
		took_ref(ctx, &tn);
	else
		handle_free(h);
}

static const struct fuse_lowlevel_ops keyfs_ll_ops = {
	.init = fs_init,
	.lookup = fs_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.getattr = fs_getattr,
	.setattr = fs_setattr,
	.readlink = fs_readlink,
	.mknod = fs_mknod,
	.mkdir = fs_mkdir,
	.unlink = fs_unlink,
	.rmdir = fs_rmdir,
	.symlink = fs_symlink,
	.rename = fs_rename,
	.link = fs_link,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.write_buf = fs_write_buf,
	.flush = fs_flush,
	.release = fs_release,
	.fsync = fs_fsync,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
	.releasedir = fs_releasedir,
	.statfs = fs_statfs,
	.setxattr = fs_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = fs_removexattr,
	.access = fs_access,
	.create = fs_create,
};

void fs_print_help(void)
{
	printf("libfuse options:\n");
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

void fs_print_version(void)
{
	printf("keyfs version %s\n", KEYFS_VERSION);
	printf("FUSE library version %s\n", fuse_pkgversion());
}

int fs_run(struct keyfs_ctx *ctx, struct fuse_args *args,
	   int (*after_daemon)(struct keyfs_ctx *ctx))
{
	return fs_loop_run(ctx, args, &keyfs_ll_ops, after_daemon);
}
