/* fs.c: the FUSE ops table, starting the session, and the helpers every handler replies with. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "attr.h"
#include "fs-ops.h"
#include "tree.h"

struct keyfs_ctx *req_ctx(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void load_groups(struct keyfs_lazy_groups *g)
{
	int n = fuse_req_getgroups(g->arg, KEYFS_GROUPS_MAX, g->v);

	g->n = n < 0 ? 0 : n > KEYFS_GROUPS_MAX ? KEYFS_GROUPS_MAX : n;
}

const struct keyfs_cred *req_cred(fuse_req_t req, struct req_cred *rc)
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
void fill_entry(struct keyfs_ctx *ctx, const struct tnode *tn,
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
void took_ref(struct keyfs_ctx *ctx, const struct tnode *tn)
{
	if (tn->node)
		tn->node->nlookup++;
	else if (tn->kind == T_KEY)
		node_key_ref(ctx->nodes, tn->ino);
}

void reply_entry(fuse_req_t req, struct keyfs_ctx *ctx,
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
