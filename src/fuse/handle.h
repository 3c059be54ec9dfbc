/* handle.h: open files: a payload snapshot at open, a write buffer committed as one update. */
#ifndef KEYFS_HANDLE_H
#define KEYFS_HANDLE_H

#include "tree.h"

enum handle_kind {
	H_KEY,		/* a key's payload */
	H_TEXT,		/* a readable control file: text made at open */
	H_CONTROL,	/* a control file taking commands */
	H_DIR,		/* a directory listing, made as it is read */
};

/* One open file or directory.  Owned by the FUSE layer through fi->fh
 * (and listed on ctx->open_handles from handle_new); freed (payload
 * wiped) by handle_free at release, or by handle_free_all when the
 * session ends with it open. */
struct handle {
	enum handle_kind kind;
	uint64_t ino;
	kserial_t serial;	/* H_KEY: the key; 0 while pending */
	struct node *node;	/* H_KEY on a pending entry */
	unsigned taken;		/* its node's taken count at open (pending.h) */
	int ctl;		/* H_TEXT, H_CONTROL: enum ctl_file */
	unsigned char *buf;	/* H_KEY: snapshot, then the edited payload; H_TEXT: text */
	size_t len, cap;
	size_t max;		/* the type's payload limit */
	bool append;
	bool dirty;		/* something to commit at flush */
	int pagemode;		/* enum pagecache_mode: how it reads */
	int err;		/* a write failed: commit nothing, report this */
	struct stat st;		/* H_KEY: attributes at open, for fstat after rm */
	struct tree_listing *list;	/* H_DIR */
	/* Who opened it: a commit acts for the opener, as a file's writes do,
	 * not for whoever happens to close it (release comes from no one). */
	struct handle *next_open, **prev_open;	/* ctx->open_handles */
	struct keyfs_cred opener;
	gid_t opener_groups[KEYFS_GROUPS_MAX];
};

/* Open a key's file with open(2) flags: snapshot the payload unless
 * O_TRUNC or the entry is pending.  *out is the caller's. */
int handle_open_key(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    const struct tnode *tn, int flags, struct handle **out);
/* The bytes of a read at off: a pointer into the handle and a length. */
size_t handle_read(const struct handle *h, off_t off, size_t size,
		   const void **data);
/* Buffer a write; returns the bytes taken or -errno (EFBIG past the limit;
 * the handle then commits nothing). */
ssize_t handle_write(struct handle *h, off_t off, const void *data, size_t size);
int handle_truncate(struct handle *h, off_t size);
/* fallocate(2) of [off, off + len) with mode: 0 grows the buffer with
 * zeros to off + len (never shrinks it), FALLOC_FL_KEEP_SIZE changes
 * nothing; other modes EOPNOTSUPP, past the type's limit EFBIG. */
int handle_allocate(struct handle *h, int mode, off_t off, off_t len);
/* Commit the buffer as one update (or instantiate a pending entry), with
 * the opener's credentials.  0 or the -errno that close(2) reports. */
int handle_commit(struct keyfs_ctx *ctx, struct handle *h);
struct handle *handle_new(struct keyfs_ctx *ctx, enum handle_kind kind,
			  uint64_t ino);
/* An open key file of inode ino, if any: its attributes answer for a key
 * that is gone while the file is open. */
struct handle *handle_find_open(struct keyfs_ctx *ctx, uint64_t ino);
/* Record c (copied, with its groups when writing) as the credentials
 * commits act with. */
void handle_set_opener(struct handle *h, const struct keyfs_cred *c,
		       bool writing);
void handle_free(struct handle *h);
/* Free (and wipe) every handle still open: the session ended without the
 * kernel's RELEASE for them (killed, or a forced unmount), and no request
 * will come for them again. */
void handle_free_all(struct keyfs_ctx *ctx);

/* Replace a key's payload, keeping its expiry (the kernel's update would
 * clear it).  Used by commits and by rename within a keyring. */
int handle_update_payload(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			  kserial_t serial, const void *buf, size_t len);

#endif
