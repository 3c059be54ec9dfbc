/* fs.c: the FUSE ops table (its handlers in fs-entry.c, fs-rename.c, fs-file.c, fs-dir.c) and starting the session. */
#define FUSE_USE_VERSION 314
#include <stdio.h>
#include <string.h>

#include "attr.h"
#include "fs-ops.h"
#include "tree.h"

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* O_TRUNC arrives with open, so "echo x > key" is one update. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/* The only links are @s @u @us @p, whose targets never change: the
	 * kernel may keep them, or every path through @s costs a READLINK. */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* keyfs drops a key's pages itself, at every change it makes and at
	 * an open that finds the payload changed (pagecache.c).  The kernel's
	 * own drop at an mtime it had not seen (libfuse asks for it by
	 * default) came late: a stat answered after keyfs had handed a new
	 * payload's pages over at open dropped them again. */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
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
	.fallocate = fs_fallocate,
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

/* Whether the mount lets in callers of other uids (allow_other, or
 * allow_root, which libfuse mounts as allow_other): only then may a name
 * the kernel caches for one caller be walked by another. */
static bool lets_others_in(const struct fuse_args *args)
{
	for (int i = 0; i < args->argc; i++) {
		const char *a = args->argv[i];
		size_t n;

		if (strncmp(a, "-o", 2) == 0)
			a += 2;
		for (; *a; a += n + (a[n] == ',')) {
			n = strcspn(a, ",");
			if ((n == 11 && strncmp(a, "allow_other", n) == 0) ||
			    (n == 10 && strncmp(a, "allow_root", n) == 0))
				return true;
		}
	}
	return false;
}

int fs_run(struct keyfs_ctx *ctx, struct fuse_args *args,
	   int (*after_daemon)(struct keyfs_ctx *ctx))
{
	ctx->multi_user = lets_others_in(args);
	/* The files the glue drives tell it of changes through these. */
	ctx->events.key_changed = fs_key_changed;
	ctx->events.forget_name = fs_forget_name;
	ctx->events.forget_wait = fs_forget_wait;
	return fs_loop_run(ctx, args, &keyfs_ll_ops, after_daemon);
}
