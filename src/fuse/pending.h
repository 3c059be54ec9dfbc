/* pending.h: pending entries: created names with no key yet. */
#ifndef KEYFS_PENDING_H
#define KEYFS_PENDING_H

#include "tree.h"

/*
 * A pending entry stands for the key its creator's first write will make.
 * Every operation on it is decided by the rules of that key (owned by the
 * creator, in its keyring, with the permission set on the entry), as the
 * kernel would decide them on the key; the rules themselves are perm.c's.
 * All return 0 or -errno; an entry that is no longer pending answers
 * -ENOENT.
 */

/* A new pending entry of type and desc in keyring for c, or the one that
 * is already there (-EEXIST with O_EXCL in flags).  The type and
 * description are refused as add_key(2) would refuse them, and the keyring
 * must take a new key from c.  *out belongs to the node table. */
int pending_create(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		   kserial_t keyring, const char *type, const char *desc,
		   int flags, struct node **out);

/* What the key will be, as c sees it: state pending, size 0. */
int pending_info(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		 const struct node *n, struct key_info *ki);

/* Open for writing: the creator (its write makes the key), or anyone the
 * key's permission grants write. */
int pending_may_write(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      const struct node *n);
/* setattr: keyctl_setperm_key, keyctl_chown_key, keyctl_set_timeout
 * (expiry absolute, 0: none), and utimes (owner, or write). */
int pending_setperm(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    struct node *n, uint32_t perm);
int pending_chown(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		  struct node *n, uid_t uid, gid_t gid);
int pending_set_expiry(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       struct node *n, time_t expiry);
int pending_set_times(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      const struct node *n);
/* unlink(2): write on its keyring, as keyctl_unlink. */
int pending_unlink(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		   struct node *n);
/* rename(2) from keyring from to keyring to: write on the keyring within
 * one (a new name is add and unlink); across, keyctl_move's rules (link on
 * the key, write on both).  pending_renamed records a rename that was
 * made. */
int pending_may_rename(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       const struct node *n, kserial_t from, kserial_t to);
void pending_renamed(const struct keyfs_cred *c, struct node *n);

/* The taken count an open file remembers; a commit fails with -ENOENT
 * when someone other than the creator removed or moved the entry since. */
int pending_commit_check(const struct node *n, unsigned taken_at_open);
/* Whether name is the one n is listed under (pending_key's type and
 * description, plain form). */
bool pending_listed_as(const struct node *n, const char *name);
/* Make the key with the creator's credentials, then apply what was set on
 * the entry.  All or nothing: on failure the key is unlinked again and the
 * entry is gone too, so a failed create leaves nothing behind.  writer:
 * whose payload it is (see keytype_add_perm's use in pending.c). */
int pending_instantiate(struct keyfs_ctx *ctx, const struct keyfs_cred *writer,
			struct node *n, const void *buf, size_t len,
			kserial_t *out);

#endif
