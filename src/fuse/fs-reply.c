/* fs-reply.c: what every handler starts and replies with: the request's context and caller, entry replies, and finding the keyring an entry is in. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <string.h>

#include <fuse_lowlevel.h>

#include "attr.h"
#include "fs-ops.h"
#include "pagecache.h"

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
 * not cache their attributes; nor those of a key whose readers from the
 * page cache hold a replaced payload, whose size stays theirs meanwhile
 * (pagecache.h).  Everything else follows attr_timeout. */
double attr_for_kernel(struct keyfs_ctx *ctx, const struct tnode *tn,
		       struct stat *st)
{
	if (tn->kind == T_PENDING)
		return 0;
	if (tn->kind == T_KEY && pagecache_size(ctx, tn->ino, &st->st_size))
		return 0;
	return ctx->opts.attr_timeout;
}

void fill_entry(struct keyfs_ctx *ctx, const struct tnode *tn,
		const struct stat *st, struct fuse_entry_param *e)
{
	bool volatile_node = tn->kind == T_PENDING;

	memset(e, 0, sizeof(*e));
	e->ino = tn->ino;
	e->attr = *st;
	e->attr_timeout = attr_for_kernel(ctx, tn, &e->attr);
	e->entry_timeout = volatile_node ? 0 : ctx->opts.entry_timeout;
}

void place_entry(struct keyfs_ctx *ctx, fuse_ino_t parent, struct tnode *tn,
		 const struct stat *st)
{
	if (tn->kind == T_KEY && tn->serial && S_ISDIR(st->st_mode) &&
	    tn->ino == tree_ino(ctx, tn->serial))
		tn->ino = node_place(ctx->nodes, tn->serial, tn->ino, parent);
}

/* The kernel now holds one more reference to this inode. */
void took_ref(struct keyfs_ctx *ctx, const struct tnode *tn)
{
	if (tn->node)
		tn->node->nlookup++;
	else if (tn->kind == T_KEY)
		node_key_ref(ctx->nodes, tn->ino);
}

/*
 * A name the kernel caches is walked without asking keyfs, by any caller:
 * the search permission its lookup checked on the keyring would go
 * unchecked for the next one.  So when other uids may come in, names in
 * keyrings are not cached, and each walk looks them up (and is checked)
 * afresh.  Caching names in keyrings every class may search would need
 * every later change of their permission to drop the names cached under
 * them, before it returns; a lookup is cheap enough not to.
 */
bool names_cacheable(struct keyfs_ctx *ctx, fuse_ino_t parent)
{
	struct tnode pt;

	return !ctx->multi_user || tree_node(ctx, parent, &pt) < 0 ||
	       pt.kind != T_KEY;
}

void entry_in(struct keyfs_ctx *ctx, fuse_ino_t parent,
	      struct fuse_entry_param *e)
{
	if (!names_cacheable(ctx, parent))
		e->entry_timeout = 0;
}

void reply_entry(fuse_req_t req, struct keyfs_ctx *ctx,
		 const struct keyfs_cred *c, fuse_ino_t parent,
		 const struct tnode *tn)
{
	struct fuse_entry_param e;
	struct tnode placed = *tn;
	struct stat st;
	int ret = attr_get(ctx, c, tn, &st);

	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	place_entry(ctx, parent, &placed, &st);
	fill_entry(ctx, &placed, &st, &e);
	entry_in(ctx, parent, &e);
	if (fuse_reply_entry(req, &e) == 0)
		took_ref(ctx, &placed);
}

/* Sent by the notifier (see fs-notify.c), and waited for briefly: the
 * caller's next stat should not meet the old attributes.  A control
 * command may have left the payload unreadable (revoke, invalidate), so
 * its pages go too. */
void fs_key_changed(struct keyfs_ctx *ctx, kserial_t serial)
{
	if (!ctx->se || !serial)
		return;
	fs_key_changing(ctx, serial);
	pagecache_changed(ctx, tree_ino(ctx, serial));
	fs_forget_wait(ctx);
}

void fs_key_changing(struct keyfs_ctx *ctx, kserial_t serial)
{
	if (ctx->se && serial)
		fs_forget_key_attrs(ctx, serial);
}

/*
 * The kernel reaches a key's inode through a name it cached (for up to
 * entry_timeout), and that name may since have come to stand for another
 * key, or for nothing: keyctl unlinked the key and maybe added a new one
 * under its name.  ESTALE makes the VFS look the whole path up again
 * (LOOKUP_REVAL: keyfs is asked for every name in it) and retry the call
 * once, as it does for NFS: a key replaced behind keyfs's back then opens
 * as the new key, and a removed one answers ENOENT, where the old inode
 * answered ENOENT, ENOKEY or EACCES by timing.  Gone means the backend
 * answers for the key that no keyring keyfs knows links it any more
 * (ENOENT: unlinked behind keyfs's back, src/kernel/keyring.c) or that
 * there is no such key (ENOKEY where a describe says so too: a negative
 * or an invalidated key still describes, and its ENOKEY stands).  The
 * mount's root is never stale: there is no name to look up again.
 */
int stale_if_gone(struct keyfs_ctx *ctx, fuse_ino_t ino, int err)
{
	struct tnode tn;

	if ((err != -ENOENT && err != -ENOKEY) || ino == INO_ROOT ||
	    tree_node(ctx, ino, &tn) < 0 || tn.kind != T_KEY)
		return err;
	if (err == -ENOENT || tree_key_gone(ctx, tn.serial))
		return -ESTALE;
	return err;
}

/* The keyring a directory inode is; -EPERM for keyfs's own directories,
 * where nothing can be made or removed. */
int parent_keyring(struct keyfs_ctx *ctx, fuse_ino_t parent,
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

/* Find an entry of a keyring for removal or renaming. */
int entry_of(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
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

bool is_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		const struct tnode *tn)
{
	struct key_info ki;

	/* A key's type never changes: no size, no expiry, no fresh look. */
	if (tn->kind == T_KEY)
		return tree_key_is_keyring(ctx, c, tn->serial) == 0;
	return attr_key_info(ctx, c, tn, &ki) == 0 && keyfs_is_keyring_type(ki.type);
}
