/* fs-dir.c: directory listings, statfs, extended attributes and access(2). */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attr.h"
#include "fs-ops.h"
#include "handle.h"
#include "perm.h"
#include "timens.h"

/* Entries described ahead of the reader: at least one reply's worth (a
 * readdirplus entry of a key is some 160 bytes), described after a reply
 * while the kernel takes that reply in. */
#define LISTING_AHEAD_MIN 32
/* Entries described before opendir replies: a listing this long is made
 * whole there, as before listings were made as they are read, with no
 * copy of the opener's groups (a read of /proc) and no part ahead. */
#define LISTING_AT_OPEN 256

static void describe_ahead(struct keyfs_ctx *ctx, struct handle *h,
			   size_t upto)
{
	/* An error here is met again, and answered, by the next readdir. */
	if (!tree_listing_whole(h->list))
		(void)tree_listing_fill(ctx, &h->opener, h->list, upto);
}

void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct handle *h = handle_new(ctx, H_DIR, ino);
	int ret = h ? tree_listing_open(ctx, c, ino, &h->list) : -ENOMEM;

	if (ret == 0)
		ret = tree_listing_fill(ctx, c, h->list, LISTING_AT_OPEN);
	if (ret < 0) {
		handle_free(h);
		fuse_reply_err(req, -stale_if_gone(ctx, ino, ret));
		return;
	}
	/* The rest is described for the opener, as the whole listing was
	 * made at opendir before it was made as it is read: its groups are
	 * read now, while the request that has them is there. */
	if (!tree_listing_whole(h->list))
		handle_set_opener(h, c, true);
	fi->fh = (uintptr_t)h;
	if (fuse_reply_open(req, fi) != 0) {
		handle_free(h);
		return;
	}
	describe_ahead(ctx, h, 2 * LISTING_AT_OPEN);
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

/* The kernel caches a listed key's attributes for attr_timeout counted
 * from when they were described, not from when the listing is read (an
 * open directory may be read much later, and the description may be a
 * moment older than the listing: key_info's described_ns). */
static double attr_timeout_since(double timeout, int64_t described_ns,
				 int64_t now_ns)
{
	double age;

	if (!described_ns || timeout <= 0)
		return timeout;
	age = (double)(now_ns - described_ns) / 1e9;
	return age >= timeout ? 0 : timeout - age;
}

/* One readdir(plus) reply from the listing, described as far as it
 * reaches.  Offsets are indexes into the listing, so it is one pass
 * however it is read. */
static void do_readdir(fuse_req_t req, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	char *buf = calloc(1, size);
	size_t used = 0, i = off < 0 ? SIZE_MAX : (size_t)off, emitted = 0;
	bool cache = !plus || names_cacheable(ctx, h->ino);
	int64_t now_ns = keyfs_mono_ns();
	int ret = buf ? 0 : -ENOMEM;

	for (; ret == 0 && off >= 0; i++) {
		struct tree_dirent d;
		bool dot = i < 2;
		struct tnode tn;
		size_t n;

		if (!tree_listing_entry(h->list, i, &d)) {
			if (tree_listing_whole(h->list))
				break;
			ret = tree_listing_fill(ctx, &h->opener, h->list,
						i + LISTING_AHEAD_MIN);
			if (ret < 0 || !tree_listing_entry(h->list, i, &d))
				break;
			now_ns = keyfs_mono_ns();
		}
		if (!dirent_now(ctx, &d, &tn))
			continue;
		if (plus) {
			struct fuse_entry_param e;

			if (!dot)
				place_entry(ctx, h->ino, &tn, &d.st);
			fill_entry(ctx, &tn, &d.st, &e);
			if (!cache)
				e.entry_timeout = 0;
			e.attr_timeout = attr_timeout_since(e.attr_timeout,
							    d.described_ns, now_ns);
			if (dot)
				e.ino = 0;	/* the kernel takes no reference for . and .. */
			n = fuse_add_direntry_plus(req, buf + used, size - used,
						   d.name, &e, (off_t)i + 1);
		} else {
			n = fuse_add_direntry(req, buf + used, size - used,
					      d.name, &d.st, (off_t)i + 1);
		}
		if (n > size - used)
			break;
		if (plus && !dot)
			took_ref(ctx, &tn);
		used += n;
		emitted++;
	}
	/* An error with entries to give: those now, the error at the next. */
	if (ret < 0 && used == 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
	if (ret == 0 && off >= 0)
		describe_ahead(ctx, h, i + (emitted > LISTING_AHEAD_MIN ?
					    emitted : LISTING_AHEAD_MIN));
}

void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, false);
}

void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
		    off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	do_readdir(req, size, off, fi, true);
}

void fs_releasedir(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi)
{
	(void)ino;
	handle_free((struct handle *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

void fs_statfs(fuse_req_t req, fuse_ino_t ino)
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
	/* The quota is the total, the keys charged to it are used, so that
	 * df -i adds up. */
	sv.f_files = q.maxkeys > q.keys ? q.maxkeys : q.keys;
	sv.f_ffree = sv.f_files - q.keys;
	sv.f_favail = sv.f_ffree;
	sv.f_namemax = KEYFS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	/* perm changes the mode the kernel has cached */
	if (ret == 0)
		fs_key_changing(ctx, tn.serial);
	if (ret == 0)
		ret = xattr_set(ctx, req_cred(req, &rc), &tn, name, value, size, flags);
	if (ret == 0)
		fs_forget_wait(ctx);
	fuse_reply_err(req, ret < 0 ? -stale_if_gone(ctx, ino, ret) : 0);
}

/* getxattr (name) and listxattr (name NULL): a size probe, or the value
 * into a buffer. */
static void reply_xattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	char *buf = size ? malloc(size) : NULL;
	struct tnode tn;
	int ret = size && !buf ? -ENOMEM : tree_node(ctx, ino, &tn);

	if (ret == 0 && name)
		ret = xattr_get(ctx, req_cred(req, &rc), &tn, name, buf, size);
	else if (ret == 0)
		ret = xattr_list(ctx, req_cred(req, &rc), &tn, buf, size);
	if (ret < 0)
		fuse_reply_err(req, -stale_if_gone(ctx, ino, ret));
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
	free(buf);
}

void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 size_t size)
{
	reply_xattr(req, ino, name, size);
}

void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	reply_xattr(req, ino, NULL, size);
}

void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	if (ret == 0)
		ret = xattr_remove(ctx, req_cred(req, &rc), &tn, name);
	fuse_reply_err(req, ret < 0 ? -stale_if_gone(ctx, ino, ret) : 0);
}

/* access(2) answered with the kernel's key rules, so "test -r" tells the
 * truth without default_permissions. */
static int access_key(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      const struct tnode *tn, int mask)
{
	struct key_info ki;
	unsigned want = 0, granted;
	/* the owner, the permission and possession: no size, no expiry */
	int ret = attr_key_info_part(ctx, c, tn, 0, &ki);

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

void fs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct stat st;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);

	if (ret == 0 && (tn.kind == T_KEY || tn.kind == T_PENDING)) {
		ret = stale_if_gone(ctx, ino, access_key(ctx, c, &tn, mask));
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
