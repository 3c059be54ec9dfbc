/* fs-file.c: the operations on open files and attributes: getattr, setattr, open, read, write, flush, release. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "attr.h"
#include "control.h"
#include "ctlfiles.h"
#include "fs-ops.h"
#include "handle.h"
#include "pagecache.h"
#include "pending.h"
#include "perm.h"

/* An open file outlives its key, as an unlinked file does: its attributes
 * are then the handle's (h, or any open key file of ino), its size its
 * buffer's.  False when none is open. */
static bool open_file_attr(struct keyfs_ctx *ctx, fuse_ino_t ino,
			   struct handle *h, struct stat *st)
{
	if (!h || h->kind != H_KEY)
		h = handle_find_open(ctx, ino);
	if (!h)
		return false;
	*st = h->st;
	st->st_nlink = 0;
	st->st_size = (off_t)h->len;
	return true;
}

void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);
	double timeout = 0;
	struct handle *h;
	struct stat st;

	(void)fi;	/* fstat(2) comes without it: open files are found by inode */
	if (ret == 0)
		ret = attr_get(ctx, c, &tn, &st);
	if (ret == 0)
		timeout = attr_for_kernel(ctx, &tn, &st);
	/* Written data not yet committed is the file's size, as on any file
	 * system: fstat and lseek(SEEK_END) must see it. */
	for (h = ctx->open_handles; ret == 0 && h; h = h->next_open)
		if (h->ino == ino && h->kind == H_KEY && h->dirty)
			st.st_size = (off_t)h->len;
	if (ret < 0 && open_file_attr(ctx, ino, NULL, &st))
		ret = 0;
	if (ret < 0)
		fuse_reply_err(req, -stale_if_gone(ctx, ino, ret));
	else
		fuse_reply_attr(req, &st, timeout);
}

/* chmod(2) and chown(2) answer EPERM where the kernel's rules refuse the
 * change, as they do on every file system for a caller who does not own
 * the file, and tools rely on it: cp -p, tar and rsync run as a user skip
 * an ownership they cannot keep on EPERM alone, and fail on keyctl
 * chown's EACCES.  The perm attribute and the control commands keep
 * keyctl's EACCES. */
static int set_mode(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    const struct tnode *tn, mode_t mode)
{
	struct key_info ki;
	int ret = attr_key_info_part(ctx, c, tn, 0, &ki);	/* the perm only */

	if (ret == -EINVAL)	/* not a key: keyfs's own files */
		return -EPERM;
	if (ret == 0 && tn->kind == T_PENDING && !tn->serial)
		ret = pending_setperm(ctx, c, tn->node, perm_from_mode(ki.perm, mode));
	else if (ret == 0)
		ret = BACKEND_CALL(ctx, setperm, c, tn->serial, perm_from_mode(ki.perm, mode));
	return ret == -EACCES ? -EPERM : ret;
}

static int set_owner(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		     const struct tnode *tn, uid_t uid, gid_t gid)
{
	int ret;

	if (tn->kind == T_PENDING && !tn->serial)
		ret = pending_chown(ctx, c, tn->node, uid, gid);
	else if (tn->kind != T_KEY && tn->kind != T_PENDING)
		ret = -EPERM;
	else
		ret = BACKEND_CALL(ctx, chown, c, tn->serial, uid, gid);
	return ret == -EACCES ? -EPERM : ret;
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

/* What a setattr asked for, put into attributes read before it. */
static void setattr_applied(struct stat *st, const struct stat *attr, int to_set)
{
	if (to_set & FUSE_SET_ATTR_MODE)
		st->st_mode = (st->st_mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		st->st_uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		st->st_gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_SIZE)
		st->st_size = attr->st_size;
}

void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		int to_set, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct handle *h = fi ? (struct handle *)(uintptr_t)fi->fh : NULL;
	struct stat st, before;
	struct tnode tn;
	int ret = tree_node(ctx, ino, &tn);
	bool known = ret == 0 && attr_get(ctx, c, &tn, &before) == 0;
	bool guessed = false;
	double timeout;

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
		fuse_reply_err(req, -stale_if_gone(ctx, ino, ret));
		return;
	}
	ret = attr_get(ctx, c, &tn, &st);
	/* The change is made: a caller it took the view from is still told
	 * so, with the attributes it asked for on what it saw before; an
	 * ftruncate of an open file whose key is gone, with the file's. */
	if (ret < 0 && known) {
		setattr_applied(&before, attr, to_set);
		st = before;
		guessed = true;
		ret = 0;
	} else if (ret < 0 && open_file_attr(ctx, ino, h, &st)) {
		guessed = true;
		ret = 0;
	}
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	timeout = attr_for_kernel(ctx, &tn, &st);
	if (guessed)
		timeout = 0;
	/* An open file's size is its buffer's until the commit at close. */
	if (h && h->kind == H_KEY)
		st.st_size = (off_t)h->len;
	fuse_reply_attr(req, &st, timeout);
}

static int open_control(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			const struct tnode *tn, int flags, struct handle **out)
{
	bool writable = ctl_files[tn->ctl].writable;
	int acc = flags & O_ACCMODE;
	struct handle *h;
	int ret;

	if (writable ? acc == O_RDONLY : acc != O_RDONLY)
		return -EACCES;
	h = handle_new(ctx, writable ? H_CONTROL : H_TEXT, tn->ino);
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

/* How an open key file reads (pagecache.h).  Only reading opens of a real
 * key's own inode may read from the page cache; writes go to keyfs's
 * buffer, so they must not meet cached pages, and O_DIRECT asks for a
 * strict snapshot. */
static int page_mode(struct keyfs_ctx *ctx, const struct tnode *tn,
		     const struct handle *h, int flags, bool *fill)
{
	*fill = false;
	if (!ctx->pagecache || h->kind != H_KEY || tn->kind != T_KEY ||
	    tn->ino != tree_ino(ctx, tn->serial))
		return PC_DIRECT;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_DIRECT | O_TRUNC)))
		return pagecache_writer(ctx, tn->ino);
	return pagecache_open(ctx, tn->ino, h->buf, h->len, fill);
}

/* A key that can no longer be read (revoked, expired, gone) leaves no
 * payload in the kernel's page cache. */
static void open_failed(struct keyfs_ctx *ctx, const struct tnode *tn, int err)
{
	if (tn->kind == T_KEY && (err == -EKEYREVOKED || err == -EKEYEXPIRED ||
				  err == -ENOKEY || err == -ENOENT))
		pagecache_changed(ctx, tn->ino);
}

void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	struct handle *h = NULL;
	struct tnode tn = { .kind = T_ROOT };
	bool fill;
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
		open_failed(ctx, &tn, ret);
		fuse_reply_err(req, -stale_if_gone(ctx, ino, ret));
		return;
	}
	fi->fh = (uintptr_t)h;
	h->pagemode = page_mode(ctx, &tn, h, fi->flags, &fill);
	/* Before the answer, so the reader's first read finds the pages:
	 * one READ request fewer for a first cat. */
	if (fill)
		fs_fill_pages(ctx, ino, h->buf, h->len);
	/* Pages are dropped by keyfs (pagecache.c), never by an open: other
	 * readers may be reading them. */
	fi->direct_io = h->pagemode != PC_CACHED;
	fi->keep_cache = 1;
	fi->nonseekable = 0;
	/* A read-only file has nothing to commit: close(2) need not wait for
	 * a FLUSH (release still comes, without anyone waiting on it). */
	fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
	if (fuse_reply_open(req, fi) != 0)
		handle_free(h);
}

void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
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

/* libfuse calls this, on the thread that read the FUSE interrupt, when
 * the writer of a request command got a signal: the wait on its callout
 * polls the descriptor and ends. */
static void wake_cancel(fuse_req_t req, void *data)
{
	const uint64_t one = 1;

	(void)req;
	if (write(*(const int *)data, &one, sizeof(one)) < 0)
		return;	/* the counter is full: it is readable already */
}

/*
 * A request command may wait on a callout for as long as it runs
 * (request_timeout, or request-key(8) without one), and the kernel makes
 * a caller whose request keyfs holds wait for the answer even when killed.
 * So a signal to the writer (Ctrl-C, kill) ends the wait: the command
 * fails with EINTR at once.  Other control commands never wait.
 */
static int control_write_interruptible(fuse_req_t req, struct handle *h,
				       const char *buf, size_t size)
{
	struct keyfs_ctx *ctx = req_ctx(req);
	struct req_cred rc;
	const struct keyfs_cred *c = req_cred(req, &rc);
	int cancel = -1, ret;

	if (h->ctl == CTLF_REQUEST)
		cancel = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cancel >= 0) {
		rc.c.cancel_fd = &cancel;
		fuse_req_interrupt_func(req, wake_cancel, &cancel);
	}
	ret = control_write(ctx, c, h->ctl, buf, size);
	if (cancel >= 0) {
		/* after this wake_cancel neither runs nor will run */
		fuse_req_interrupt_func(req, NULL, NULL);
		close(cancel);
	}
	return ret;
}

void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
	      size_t size, off_t off, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	ssize_t ret;

	(void)ino;
	if (h->kind == H_KEY) {
		ret = handle_write(h, off, buf, size);
	} else if (h->kind == H_CONTROL) {
		ret = control_write_interruptible(req, h, buf, size);
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

void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		  off_t length, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	int ret = h->kind == H_KEY ? handle_allocate(h, mode, offset, length) :
		  -EOPNOTSUPP;

	(void)ino;
	fuse_reply_err(req, -ret);
}

/* Every write comes here (libfuse prefers write_buf to write): unlike
 * write's const buffer, the bufvec is ours to change, so the payload libfuse
 * read into its request buffer is wiped once fs_write has taken its copy. */
void fs_write_buf(fuse_req_t req, fuse_ino_t ino,
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
	kserial_t early = dirty && h->kind == H_KEY ? h->serial : 0;
	int ret;

	fs_key_changing(ctx, early);
	ret = handle_commit(ctx, h);
	if (ret == 0 && dirty && early)
		fs_forget_wait(ctx);	/* its pages went with the old payload */
	else if (ret == 0 && dirty)
		fs_key_changed(ctx, h->serial);	/* a pending entry made now */
	return ret;
}

void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int ret = commit(req, (struct handle *)(uintptr_t)fi->fh);

	(void)ino;
	fuse_reply_err(req, ret < 0 ? -ret : 0);
}

void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi)
{
	(void)datasync;
	fs_flush(req, ino, fi);
}

void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	/* Normally flush committed already; nobody hears an error here. */
	commit(req, h);
	pagecache_release(req_ctx(req), ino, h->pagemode);
	handle_free(h);
	fuse_reply_err(req, 0);
}
