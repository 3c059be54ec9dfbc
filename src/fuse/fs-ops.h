/* fs-ops.h: what the files of the ops table (fs*.c) share: the request helpers and every handler. */
#ifndef KEYFS_FS_OPS_H
#define KEYFS_FS_OPS_H

#include <fuse_lowlevel.h>

#include "fs.h"
#include "tree.h"

/* The caller of one request, as keyfs's access checks see it. */
struct req_cred {
	struct keyfs_cred c;
	struct keyfs_lazy_groups groups;
};

/* fs-reply.c: the context and the caller of a request; rc holds the caller. */
struct keyfs_ctx *req_ctx(fuse_req_t req);
const struct keyfs_cred *req_cred(fuse_req_t req, struct req_cred *rc);
/* An entry reply for tn with attributes st, its timeouts chosen. */
/* The attribute timeout of a reply about tn, with st made what the kernel
 * must be told (pagecache.h). */
double attr_for_kernel(struct keyfs_ctx *ctx, const struct tnode *tn,
		       struct stat *st);
void fill_entry(struct keyfs_ctx *ctx, const struct tnode *tn,
		const struct stat *st, struct fuse_entry_param *e);
/* tn, found as name in directory parent with attributes st, made the
 * inode the kernel is to know it by there: a keyring is a directory inode
 * of its own in each directory (node_place). */
void place_entry(struct keyfs_ctx *ctx, fuse_ino_t parent, struct tnode *tn,
		 const struct stat *st);
/* The kernel now holds one more reference to tn's inode. */
void took_ref(struct keyfs_ctx *ctx, const struct tnode *tn);
/* Reply with tn's entry, a name in directory parent (or the error its
 * attributes give). */
void reply_entry(fuse_req_t req, struct keyfs_ctx *ctx,
		 const struct keyfs_cred *c, fuse_ino_t parent,
		 const struct tnode *tn);
/* Whether the kernel may cache names in directory parent: not names in
 * keyrings when callers of other uids may walk them (each walk must check
 * search for its own caller).  entry_in: e uncached where not. */
bool names_cacheable(struct keyfs_ctx *ctx, fuse_ino_t parent);
void entry_in(struct keyfs_ctx *ctx, fuse_ino_t parent,
	      struct fuse_entry_param *e);

/* fs-reply.c: err, or -ESTALE where the key behind inode ino is gone or
 * no keyring keyfs knows links it any more (see there). */
int stale_if_gone(struct keyfs_ctx *ctx, fuse_ino_t ino, int err);

/* fs-reply.c: the keyring a directory inode is (-EPERM for keyfs's own
 * directories); an entry of one for removal or renaming; whether tn is a
 * keyring. */
int parent_keyring(struct keyfs_ctx *ctx, fuse_ino_t parent, kserial_t *out);
int entry_of(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
	     fuse_ino_t parent, const char *name, kserial_t *keyring,
	     struct tnode *tn);
bool is_keyring(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		const struct tnode *tn);

/* The handlers of the ops table (fs.c), by file.  Each replies once. */
/* fs-entry.c */
void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets);
void fs_readlink(fuse_req_t req, fuse_ino_t ino);
void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode, dev_t rdev);
void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		const char *name);
void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
	      mode_t mode);
void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi);
/* fs-rename.c */
void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	       fuse_ino_t newparent, const char *newname, unsigned flags);
void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	     const char *newname);
/* fs-file.c */
void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		int to_set, struct fuse_file_info *fi);
void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi);
void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
	      size_t size, off_t off, struct fuse_file_info *fi);
void fs_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
		  off_t off, struct fuse_file_info *fi);
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
	      struct fuse_file_info *fi);
void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		  off_t length, struct fuse_file_info *fi);
/* fs-dir.c */
void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_statfs(fuse_req_t req, fuse_ino_t ino);
void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 const char *value, size_t size, int flags);
void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		 size_t size);
void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void fs_access(fuse_req_t req, fuse_ino_t ino, int mask);

#endif
