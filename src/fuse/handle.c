/* handle.c: open key files: snapshot on open, write buffer, one update at close. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attr.h"
#include "handle.h"
#include "keytype.h"
#include "parse.h"
#include "pagecache.h"
#include "pending.h"
#include "secmem.h"
#include "perm.h"

struct handle *handle_new(struct keyfs_ctx *ctx, enum handle_kind kind,
			  uint64_t ino)
{
	struct handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->kind = kind;
	h->ino = ino;
	h->next_open = ctx->open_handles;
	if (h->next_open)
		h->next_open->prev_open = &h->next_open;
	h->prev_open = &ctx->open_handles;
	ctx->open_handles = h;
	return h;
}

void handle_free_all(struct keyfs_ctx *ctx)
{
	while (ctx->open_handles)
		handle_free(ctx->open_handles);
}

/* Take a handle off ctx->open_handles. */
static void handle_close(struct handle *h)
{
	if (h && h->prev_open) {
		*h->prev_open = h->next_open;
		if (h->next_open)
			h->next_open->prev_open = h->prev_open;
		h->prev_open = NULL;
	}
}

static void wipe_buf(struct handle *h)
{
	/* A key's buffer comes from secmem (reserve); a control file's text
	 * from malloc. */
	if (h->buf && h->kind == H_KEY) {
		secmem_free(h->buf);
	} else if (h->buf) {
		explicit_bzero(h->buf, h->cap);
		free(h->buf);
	}
	h->buf = NULL;
	h->len = h->cap = 0;
}

void handle_free(struct handle *h)
{
	if (!h)
		return;
	handle_close(h);
	wipe_buf(h);
	tree_listing_free(h->list);
	free(h);
}

/* Grow the buffer to hold want bytes.  Never realloc: the old bytes are a
 * secret, so they are copied and wiped. */
static int reserve(struct handle *h, size_t want)
{
	unsigned char *nb;
	size_t cap;

	if (want <= h->cap)
		return 0;
	cap = h->cap ? h->cap : 256;
	while (cap < want)
		cap *= 2;
	if (cap > h->max)
		cap = h->max;
	nb = secmem_alloc(cap);
	if (!nb)
		return -ENOMEM;
	if (h->buf) {
		memcpy(nb, h->buf, h->len);
		secmem_free(h->buf);	/* wipes */
	}
	h->buf = nb;
	h->cap = cap;
	return 0;
}

static int load_payload(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			struct handle *h)
{
	void *data = NULL;
	size_t len = 0;
	int ret = BACKEND_CALL(ctx, read, c, h->serial, &data, &len);

	if (ret < 0)
		return ret;
	if (len > h->max)
		h->max = len;
	ret = reserve(h, len);
	if (ret == 0 && len) {
		memcpy(h->buf, data, len);
		h->len = len;
	}
	if (data) {
		explicit_bzero(data, len);
		free(data);
	}
	return ret;
}

int handle_open_key(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    const struct tnode *tn, int flags, struct handle **out)
{
	struct key_info *ki = malloc(sizeof(*ki));
	struct handle *h = handle_new(ctx, H_KEY, tn->ino);
	struct key_type_info ti;
	int acc = flags & O_ACCMODE;
	int ret;

	if (!ki || !h) {
		ret = -ENOMEM;
		goto fail;
	}
	/* A recent description serves only where the payload is read next:
	 * that read is the kernel's check that the key is still there
	 * (kkey_recent).  A truncating open reads nothing, so it asks. */
	ret = attr_key_info_part(ctx, c, tn,
				 (flags & O_TRUNC) && acc != O_RDONLY ? 0 : KEY_INFO_RECENT,
				 ki);
	if (ret < 0)
		goto fail;
	if (keyfs_is_keyring_type(ki->type)) {
		ret = -EISDIR;
		goto fail;
	}
	/* Write permission is checked at open, as for any file; the backend
	 * checks again when the update is made. */
	if (acc != O_RDONLY && tn->serial &&
	    !(perm_granted(c, ki->uid, ki->gid, ki->perm, ki->possessed) & KEYFS_PERM_WRITE)) {
		ret = -EACCES;
		goto fail;
	}
	/* A pending entry by the rules of the key it will be. */
	if (acc != O_RDONLY && !tn->serial && tn->kind == T_PENDING) {
		ret = pending_may_write(ctx, c, tn->node);
		if (ret < 0)
			goto fail;
	}
	handle_set_opener(h, c, acc != O_RDONLY || tn->kind == T_PENDING);
	attr_from_key(ki, &h->st);
	h->st.st_ino = (ino_t)tn->ino;
	h->serial = tn->serial;
	h->node = tn->kind == T_PENDING ? tn->node : NULL;
	h->taken = h->node ? pending_taken(h->node) : 0;
	ret = keytype_info(ctx, ki->type, &ti);
	if (ret < 0)
		goto fail;
	h->max = ti.max_payload;
	h->append = flags & O_APPEND;
	ret = key_state_errno(ki->state);
	/* A key the kernel is still constructing: reading and writing it
	 * would wait for its callout (see the kernel backend's kproc_ready). */
	if (h->serial && ki->state == KEY_STATE_PENDING)
		ret = -EAGAIN;
	/* As keyctl read: an unreadable type (logon) says so before it says
	 * the key is revoked or expired. */
	if (ret < 0 && ret != -ENOKEY && !ti.readable && acc == O_RDONLY)
		ret = -EOPNOTSUPP;
	if (ret < 0)
		goto fail;
	if (h->serial && (flags & O_TRUNC) && acc != O_RDONLY) {
		h->dirty = true;	/* committing nothing would not truncate */
	} else if (h->serial) {
		ret = load_payload(ctx, c, h);
		/* A write-only open of an unreadable type (logon) starts empty:
		 * there is nothing to patch, only to replace. */
		if (ret == -EOPNOTSUPP && acc == O_WRONLY)
			ret = 0;
		if (ret < 0)
			goto fail;
	}
	free(ki);
	*out = h;
	return 0;
fail:
	free(ki);
	handle_free(h);
	return ret;
}

struct handle *handle_find_open(struct keyfs_ctx *ctx, uint64_t ino)
{
	for (struct handle *h = ctx->open_handles; h; h = h->next_open)
		if (h->ino == ino && h->kind == H_KEY)
			return h;
	return NULL;
}

void handle_set_opener(struct handle *h, const struct keyfs_cred *c,
		       bool writing)
{
	const gid_t *groups = NULL;
	int n = 0;

	/* Only a commit acts as the opener, and only writers commit: a
	 * reader's groups are not worth reading from /proc. */
	if (writing)
		n = cred_groups(c, &groups);
	h->opener = *c;
	h->opener.lazy = NULL;
	h->opener.cancel_fd = NULL;
	h->opener.ngroups = n < KEYFS_GROUPS_MAX ? n : KEYFS_GROUPS_MAX;
	if (h->opener.ngroups > 0)
		memcpy(h->opener_groups, groups,
		       (size_t)h->opener.ngroups * sizeof(gid_t));
	h->opener.groups = h->opener_groups;
}

size_t handle_read(const struct handle *h, off_t off, size_t size,
		   const void **data)
{
	if (off < 0 || (size_t)off >= h->len) {
		*data = NULL;
		return 0;
	}
	*data = h->buf + off;
	return h->len - (size_t)off < size ? h->len - (size_t)off : size;
}

ssize_t handle_write(struct handle *h, off_t off, const void *data, size_t size)
{
	size_t start = h->append ? h->len : (size_t)off;
	int ret;

	if (h->err)
		return h->err;
	if (off < 0)
		return -EINVAL;
	if (start > h->max || size > h->max - start) {
		h->err = -EFBIG;
		return h->err;
	}
	ret = reserve(h, start + size);
	if (ret < 0) {
		h->err = ret;
		return ret;
	}
	if (start > h->len)
		memset(h->buf + h->len, 0, start - h->len);
	memcpy(h->buf + start, data, size);
	if (start + size > h->len)
		h->len = start + size;
	h->dirty = true;
	return (ssize_t)size;
}

int handle_truncate(struct handle *h, off_t size)
{
	int ret;

	if (size < 0)
		return -EINVAL;
	if ((size_t)size > h->max)
		return -EFBIG;
	if ((size_t)size > h->len) {
		ret = reserve(h, (size_t)size);
		if (ret < 0)
			return ret;
		memset(h->buf + h->len, 0, (size_t)size - h->len);
	} else if (h->buf) {
		explicit_bzero(h->buf + size, h->len - (size_t)size);
	}
	h->len = (size_t)size;
	h->dirty = true;
	return 0;
}

/* A payload has no blocks to reserve, holes or ranges to move: a size
 * is all fallocate can give it.  Tools call it before writing (fallocate
 * -l, posix_fallocate through the kernel, downloaders preallocating); a
 * refusal left their file a pending entry of size 0. */
int handle_allocate(struct handle *h, int mode, off_t off, off_t len)
{
	uint64_t end = (uint64_t)off + (uint64_t)len;

	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	if (off < 0 || len <= 0)
		return -EINVAL;
	if ((mode & FALLOC_FL_KEEP_SIZE) || end <= h->len)
		return 0;
	/* handle_truncate says EFBIG past h->max; end may pass off_t's */
	return end > h->max ? -EFBIG : handle_truncate(h, (off_t)end);
}

int handle_update_payload(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  kserial_t serial, const void *buf, size_t len)
{
	struct key_info *ki = malloc(sizeof(*ki));
	time_t expiry = 0, now;
	int ret;

	if (!ki)
		return -ENOMEM;
	if (ctx_describe(ctx, c, serial, KEY_INFO_EXPIRY, ki) == 0)
		expiry = ki->expiry;
	free(ki);
	ctx_batch_begin(ctx);	/* with its expiry, one change of a store */
	ret = BACKEND_CALL(ctx, update, c, serial, buf, len);
	/* The kernel's update drops the expiry (user_update takes the new
	 * payload's, which is none); a file keeps its attributes when its
	 * contents change, and a token must not outlive its timeout because
	 * it was rewritten. */
	now = time(NULL);
	if (ret == 0 && expiry > now)
		ret = BACKEND_CALL(ctx, set_timeout, c, serial, (unsigned)(expiry - now));
	ret = ctx_batch_end(ctx, ret);
	/* Whatever happened, pages of the old payload must not be read as
	 * the new one. */
	pagecache_changed(ctx, tree_ino(ctx, serial));
	return ret;
}

int handle_commit(struct keyfs_ctx *ctx, struct handle *h)
{
	const struct keyfs_cred *c = &h->opener;
	int ret;

	if (h->kind != H_KEY)
		return 0;
	if (h->err)
		return h->err;	/* a failed write: the key keeps its payload */
	if (!h->dirty)
		return 0;
	if (!h->serial && h->node && h->node->serial)
		h->serial = h->node->serial;	/* another handle instantiated it */
	if (!h->serial) {
		/* An empty pending entry stays pending; a removed one, like an
		 * unlinked file, takes its data nowhere. */
		ret = pending_commit_check(h->node, h->taken);
		if (ret < 0)
			return ret;	/* someone else removed or moved it */
		if (h->len == 0 || h->node->unlinked) {
			h->dirty = false;	/* stays pending until a payload comes */
			return 0;
		}
		/* Made as its creator, whoever writes it. */
		ret = pending_instantiate(ctx, c, h->node, h->buf, h->len, &h->serial);
	} else {
		ret = handle_update_payload(ctx, c, h->serial, h->buf, h->len);
		/* removed meanwhile: as a pending entry someone else removed */
		if (ret == -ENOKEY && tree_key_gone(ctx, h->serial))
			ret = -ENOENT;
	}
	if (ret == 0)
		h->dirty = false;
	return ret;
}
