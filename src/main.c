/* main.c: keyfs's entry point: options, the backend, the FUSE session, cleanup. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fuse_opt.h>

#include "crypto.h"
#include "ctx.h"
#include "secmem.h"
#include "fs.h"
#include "node.h"
#include "specials.h"
#include "store.h"
#include "storekey.h"
#include "tree.h"

/* root=SPEC: @s @u @us @p, a serial, or %:NAME (a named keyring, looked
 * up as request_key would find it). */
static int resolve_root(struct keyfs_ctx *ctx, const char *spec, kserial_t *out)
{
	const struct keyfs_special_name *sp = keyfs_special_by_name(spec);
	char *end;
	long v;

	if (sp)
		return BACKEND_CALL(ctx, special, &ctx->mounter, sp->which,
				    true, out);
	if (strncmp(spec, "%:", 2) == 0)
		return BACKEND_CALL(ctx, search, &ctx->mounter, "keyring", spec + 2, out);
	errno = 0;
	v = strtol(spec, &end, 0);
	if (errno || *end || v <= 0 || v > INT32_MAX)
		return -EINVAL;
	*out = (kserial_t)v;
	return 0;
}

/* root= must name a keyring the mounter may view. */
static int check_root(struct keyfs_ctx *ctx)
{
	struct key_info ki;
	int ret = resolve_root(ctx, ctx->opts.root, &ctx->root_key);

	if (ret == 0)
		ret = BACKEND_CALL(ctx, describe, &ctx->mounter, ctx->root_key, &ki);
	if (ret == 0 && !keyfs_is_keyring_type(ki.type))
		ret = -ENOTDIR;
	if (ret < 0)
		fprintf(stderr, "keyfs: root=%s: %s\n", ctx->opts.root, strerror(-ret));
	return ret;
}

/* What belongs to the running daemon: its process keyring, and the
 * keyrings of the tree, looked up once it has its final pid. */
static int resolve_keyrings(struct keyfs_ctx *ctx)
{
	clock_gettime(CLOCK_REALTIME, &ctx->started);
	/* The lock file names the daemon, not the parent that has exited. */
	if (ctx->store_lock >= 0)
		store_lock_mark(ctx->store_lock);
	BACKEND_CALL(ctx, special, &ctx->mounter, KEYFS_SPEC_SESSION, true, &ctx->session);
	BACKEND_CALL(ctx, special, &ctx->mounter, KEYFS_SPEC_USER, true, &ctx->user);
	BACKEND_CALL(ctx, special, &ctx->mounter, KEYFS_SPEC_USER_SESSION, true, &ctx->user_session);
	BACKEND_CALL(ctx, special, &ctx->mounter, KEYFS_SPEC_PROCESS, true, &ctx->process);
	BACKEND_CALL(ctx, persistent, &ctx->mounter, &ctx->persistent);
	return ctx->opts.root ? check_root(ctx) : 0;
}

/* store=: one keyfs per store, and nothing left of a keyfs killed while
 * saving (its temporary file holds every key). */
static int take_store(struct keyfs_ctx *ctx)
{
	char err[PATH_MAX + 128] = "";
	int ret;

	if (!ctx->opts.store)
		return 0;
	ret = store_lock(ctx->opts.store, &ctx->store_lock, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s\n", err);
		return ret;
	}
	store_clean_temps(ctx->opts.store, getuid());
	return 0;
}

static int start_backend(struct keyfs_ctx *ctx, const struct crypto_key *key)
{
	struct backend_config cfg = {
		.store = ctx->opts.store,
		.store_key = key,
		.request_key = ctx->opts.request_key,
		.uid = getuid(),
		.gid = getgid(),
		.cache_timeout = ctx->opts.entry_timeout,
		.request_timeout = ctx->opts.request_timeout,
		.unlock = fs_lock_wait_outside, .relock = fs_lock_take, .lock_arg = ctx,
	};
	char err[512] = "";
	int ret;

	ctx->ops = backend_by_name(ctx->opts.backend);
	if (!ctx->ops) {
		fprintf(stderr, "keyfs: unknown backend '%s'\n", ctx->opts.backend);
		return -EINVAL;
	}
	ret = ctx->ops->init(&ctx->be, &cfg, err, sizeof(err));
	if (ret < 0)
		fprintf(stderr, "%s%s\n", strncmp(err, "keyfs:", 6) ? "keyfs: " : "",
			err[0] ? err : strerror(-ret));
	/* Once, at mount: whoever reads the store file reads every secret. */
	else if (ctx->opts.store && !key)
		fprintf(stderr, "keyfs: %s: the store is not encrypted (see store_key= in keyfs(1))\n",
			ctx->opts.store);
	return ret;
}

/* /proc/mounts shows "BACKEND MOUNTPOINT fuse.keyfs". */
static int add_mount_names(struct fuse_args *args, const struct keyfs_opts *o)
{
	char opt[64];

	snprintf(opt, sizeof(opt), "-osubtype=keyfs,fsname=%s", o->backend);
	return fuse_opt_add_arg(args, opt) == 0 ? 0 : -ENOMEM;
}

/* Payload memory (secmem.h) is locked against swap where RLIMIT_MEMLOCK
 * allows; say so once when it does not. */
static void warn_unlocked_payloads(void)
{
	void *probe = secmem_alloc(1);

	if (probe && !secmem_all_locked())
		fprintf(stderr, "keyfs: warning: payload memory cannot be locked "
			"against swap (RLIMIT_MEMLOCK): secrets may be written to swap\n");
	secmem_free(probe);
}

/* Descriptors the caller left open - its shell's pipe, say - would stay
 * open for as long as the daemon runs, and whoever reads the pipe's other
 * end would wait for the daemon to exit.  Keep 0-2, and a /dev/fd/N mount
 * point (the way mount.fuse3 can hand over /dev/fuse). */
static void close_inherited_fds(int argc, char *argv[])
{
	int keep = -1;

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "/dev/fd/", 8) == 0)
			keep = atoi(argv[i] + 8);
	if (keep < 3) {
		close_range(3, ~0U, 0);
		return;
	}
	if (keep > 3)
		close_range(3, (unsigned)keep - 1, 0);
	close_range((unsigned)keep + 1, ~0U, 0);
}

/*
 * A listing of a large keyring is a few large blocks, made and freed by
 * whichever worker thread serves the OPENDIR.  By default glibc raises its
 * mmap threshold to the largest block freed, so from the second listing on
 * such blocks come from the thread's own arena and stay there once freed:
 * each worker kept a listing's worth, and four `ls -l` of 10,000 keys grew
 * the daemon from 8 to 27 MB (issue 10).  A fixed threshold keeps large
 * blocks in mappings of their own, returned at free.
 */
static void keep_heap_small(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct keyfs_ctx ctx;
	struct crypto_key *store_key = NULL;
	int status = 1;

	/* No core dump and no ptrace by other users: the daemon's memory
	 * holds payloads.  First, before any is read. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	keep_heap_small();
	close_inherited_fds(argc, argv);
	warn_unlocked_payloads();
	memset(&ctx, 0, sizeof(ctx));
	ctx.store_lock = -1;
	ctx.mounter.uid = getuid();
	ctx.mounter.gid = getgid();
	if (opts_parse(&args, &ctx.opts) < 0)
		goto out_args;
	if (ctx.opts.show_help) {
		opts_usage(argv[0]);
		fs_print_help();
		status = 0;
		goto out_args;
	}
	if (ctx.opts.show_version) {
		fs_print_version();
		status = 0;
		goto out_args;
	}
	if (add_mount_names(&args, &ctx.opts) < 0)
		goto out_args;
	ctx.nodes = node_table_new();
	if (!ctx.nodes)
		goto out_args;
	if (ctx.opts.store_key && storekey_load("store_key", ctx.opts.store_key, &store_key) < 0)
		goto out_nodes;
	if (take_store(&ctx) < 0)
		goto out_nodes;
	if (start_backend(&ctx, store_key) < 0)
		goto out_store;
	/* A bad root= fails here, on the terminal, not after detaching.  @p
	 * waits: the process keyring is the daemon's, made after the fork. */
	if (ctx.opts.root && strcmp(ctx.opts.root, "@p") != 0 && check_root(&ctx) < 0)
		goto out_backend;
	/* Nothing touches the backend between here and the fork. */
	if (ctx.ops->before_fork)
		ctx.ops->before_fork(ctx.be);
	status = fs_run(&ctx, &args, resolve_keyrings);
	/* Unmounted: a mount of the store from now on waits for us. */
	store_lock_closing(ctx.store_lock);
out_backend:
	ctx.ops->destroy(ctx.be);
out_store:
	store_unlock(ctx.opts.store, ctx.store_lock);
out_nodes:
	crypto_key_free(store_key);
	node_table_free(ctx.nodes);
	free(ctx.mountpoint);
out_args:
	opts_free(&ctx.opts);
	fuse_opt_free_args(&args);
	return status;
}
