/* pending.c: pending entries: created names with no key yet, and who may do what to them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keytype.h"
#include "names.h"
#include "parse.h"
#include "pending.h"
#include "perm.h"

/* root stands for CAP_SYS_ADMIN, as the memory backend has it. */
static bool privileged(const struct keyfs_cred *c)
{
	return c->uid == 0;
}

static bool is_creator(const struct keyfs_cred *c, const struct node *n)
{
	return c->uid == n->pk->creator.uid;
}

/* The keyring must take a change from c: a valid keyring c may write, as
 * lookup_user_key(KEY_NEED_WRITE) finds it. */
static int keyring_writable(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			    kserial_t keyring)
{
	struct key_info ki;
	/* Its perm now (no size, no expiry): a keyring made read-only with
	 * keyctl refuses a new entry at once, not at the close.  add_key(2)
	 * needs no view of the keyring: one the caller may write but not
	 * view is described as keyfs, for the caller's check alone. */
	int ret = ctx_describe(ctx, c, keyring, 0, &ki);

	if (ret == -EACCES && c->uid != ctx->mounter.uid &&
	    ctx_describe(ctx, &ctx->mounter, keyring, 0, &ki) == 0) {
		ki.possessed = false;
		ret = 0;
	}
	if (ret < 0)
		return ret;
	if (!keyfs_is_keyring_type(ki.type))
		return -ENOTDIR;
	ret = key_state_errno(ki.state);
	if (ret < 0)
		return ret;
	return perm_check(c, ki.uid, ki.gid, ki.perm, ki.possessed, KEYFS_PERM_WRITE);
}

int pending_info(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		 const struct node *n, struct key_info *ki)
{
	struct key_info parent;
	uint32_t perm = n->pk->perm;
	int ret = n->pk->perm_set ? 0 :
		  keytype_new_perm(ctx, n->pk->creator.uid, n->pk->type, &perm);

	if (ret < 0)
		return ret;
	memset(ki, 0, sizeof(*ki));
	snprintf(ki->type, sizeof(ki->type), "%s", n->pk->type);
	snprintf(ki->desc, sizeof(ki->desc), "%s", n->pk->desc);
	ki->uid = n->pk->uid;
	ki->gid = n->pk->gid;
	/* What add will give the key, until the entry is given its own. */
	ki->perm = perm;
	ki->state = KEY_STATE_PENDING;
	ki->expiry = n->pk->expiry;
	ki->nlink = n->unlinked ? 0 : 1;
	/* The key will be possessed by whoever possesses its keyring: a
	 * description of it from this request or the one before serves. */
	ki->possessed = ctx_describe(ctx, c, n->pk->parent, KEY_INFO_RECENT, &parent) == 0 &&
			parent.possessed;
	ki->mtime = n->pk->mtime;
	ki->ctime = n->pk->ctime;
	return 0;
}

/* c must hold want on the key the entry will be. */
static int check_future(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			const struct node *n, unsigned want)
{
	struct key_info ki;
	int ret;

	if (!node_pending_live(n))
		return -ENOENT;
	ret = pending_info(ctx, c, n, &ki);
	if (ret == 0)
		ret = perm_check(c, ki.uid, ki.gid, ki.perm, ki.possessed, want);
	return ret;
}

/* The creator's identity, groups included, outlives its request: the key
 * is made with it.  The groups are copied before the node is made, so
 * that running out of memory leaves nothing behind; *groupsp is
 * malloc'd (NULL for none) and the node owns it once set_creator ran. */
static int copy_groups(const struct keyfs_cred *c, gid_t **groupsp, int *ngp)
{
	const gid_t *groups = NULL;
	int ng = cred_groups(c, &groups);

	*groupsp = NULL;
	*ngp = 0;
	if (ng > KEYFS_GROUPS_MAX)
		ng = KEYFS_GROUPS_MAX;
	if (ng <= 0 || !groups)
		return 0;
	*groupsp = malloc((size_t)ng * sizeof(gid_t));
	if (!*groupsp)
		return -ENOMEM;
	memcpy(*groupsp, groups, (size_t)ng * sizeof(gid_t));
	*ngp = ng;
	return 0;
}

static void set_creator(struct node *n, const struct keyfs_cred *c,
			gid_t *groups, int ng)
{
	n->pk->creator_groups = groups;
	n->pk->creator = *c;
	n->pk->creator.lazy = NULL;
	n->pk->creator.cancel_fd = NULL;
	n->pk->creator.groups = groups;
	n->pk->creator.ngroups = ng;
}

int pending_create(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		   kserial_t keyring, const char *type, const char *desc,
		   int flags, struct node **out)
{
	struct node *n = node_find_pending(ctx->nodes, keyring, type, desc);
	struct timespec now;
	gid_t *groups = NULL;
	int ret, ng = 0;

	/* Someone's entry is there already: opening it is decided by its
	 * rules, not made anew. */
	if (n)
		return (flags & O_EXCL) ? -EEXIST : (*out = n, 0);
	/* What add_key(2) would refuse at close is refused now: the backend
	 * knows its types. */
	ret = BACKEND_CALL(ctx, check_new, type, desc);
	if (ret == -EOPNOTSUPP)
		ret = 0;
	if (ret == 0)
		ret = keyring_writable(ctx, c, keyring);
	if (ret == 0)
		ret = copy_groups(c, &groups, &ng);
	if (ret < 0)
		return ret;
	n = node_new(ctx->nodes, NODE_PENDING, type, desc);
	if (!n) {
		free(groups);
		return -ENOMEM;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	n->pk->parent = keyring;
	n->pk->uid = c->uid;
	n->pk->gid = c->gid;
	n->pk->mtime = n->pk->ctime = now;
	set_creator(n, c, groups, ng);
	*out = n;
	return 0;
}

int pending_may_write(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      const struct node *n)
{
	if (!node_pending_live(n))
		return -ENOENT;
	if (is_creator(c, n))
		return 0;
	return check_future(ctx, c, n, KEYFS_PERM_WRITE);
}

static void changed(struct node *n)
{
	clock_gettime(CLOCK_REALTIME, &n->pk->ctime);
}

int pending_setperm(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		    struct node *n, uint32_t perm)
{
	int ret = check_future(ctx, c, n, KEYFS_PERM_SETATTR);

	if (ret == 0)
		ret = perm_setperm_allowed(c, n->pk->uid, privileged(c));
	if (ret == 0 && (perm & ~(uint32_t)0x3f3f3f3f))
		ret = -EINVAL;
	if (ret < 0)
		return ret;
	n->pk->perm = perm;
	n->pk->perm_set = true;
	n->pk->perm_from_mode = false;
	changed(n);
	return 0;
}

int pending_chown(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		  struct node *n, uid_t uid, gid_t gid)
{
	int ret;

	if (uid == (uid_t)-1 && gid == (gid_t)-1)
		return node_pending_live(n) ? 0 : -ENOENT;
	ret = check_future(ctx, c, n, KEYFS_PERM_SETATTR);
	if (ret == 0)
		ret = perm_chown_allowed(c, n->pk->uid, n->pk->gid, uid, gid, privileged(c));
	if (ret < 0)
		return ret;
	if (uid != (uid_t)-1)
		n->pk->uid = uid;
	if (gid != (gid_t)-1)
		n->pk->gid = gid;
	changed(n);
	return 0;
}

int pending_set_expiry(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       struct node *n, time_t expiry)
{
	int ret = check_future(ctx, c, n, KEYFS_PERM_SETATTR);

	if (ret < 0)
		return ret;
	n->pk->expiry = expiry;
	changed(n);
	return 0;
}

int pending_set_times(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      const struct node *n)
{
	/* Keys keep no times the kernel would take; this only says whether
	 * c may touch the entry at all. */
	if (!node_pending_live(n))
		return -ENOENT;
	if (c->uid == n->pk->uid || privileged(c))
		return 0;
	return pending_may_write(ctx, c, n);
}

static void taken_by(const struct keyfs_cred *c, struct node *n)
{
	if (!is_creator(c, n))
		n->pk->taken++;
}

int pending_unlink(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		   struct node *n)
{
	int ret;

	if (!node_pending_live(n))
		return -ENOENT;
	ret = keyring_writable(ctx, c, n->pk->parent);
	if (ret < 0)
		return ret;
	taken_by(c, n);
	n->unlinked = true;
	node_forget(ctx->nodes, n->ino, 0);
	return 0;
}

int pending_may_rename(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       const struct node *n, kserial_t from, kserial_t to)
{
	int ret = node_pending_live(n) ? 0 : -ENOENT;

	if (ret == 0 && from != to)
		ret = check_future(ctx, c, n, KEYFS_PERM_LINK);
	if (ret == 0)
		ret = keyring_writable(ctx, c, from);
	if (ret == 0 && from != to)
		ret = keyring_writable(ctx, c, to);
	return ret;
}

void pending_renamed(const struct keyfs_cred *c, struct node *n)
{
	taken_by(c, n);
	changed(n);
}

int pending_commit_check(const struct node *n, unsigned taken_at_open)
{
	return n->pk->taken != taken_at_open ? -ENOENT : 0;
}

/*
 * A payload another user wrote into the entry of a creator that will not
 * possess the key keeps the kernel's default permission (see
 * instantiate), but what the creator set on its entry (a group, an
 * expiry, a permission of its own choosing) needs setattr, which that
 * default does not give it: the key is then added with setattr for its
 * owner as well, and instantiate sets *final, the permission the key
 * ends with, last.  NULL where add_key's default does (the creator
 * possesses the key, or set nothing).
 */
static const uint32_t *foreign_add_perm(struct keyfs_ctx *ctx,
					const struct pending_key *pk,
					uint32_t *perm, uint32_t *final)
{
	const struct keyfs_cred *c = &pk->creator;
	bool chosen = pk->perm_set && !pk->perm_from_mode;
	struct key_type_info ti;

	if (c->uid == ctx->mounter.uid || keytype_info(ctx, pk->type, &ti) < 0)
		return NULL;
	if (!chosen && !pk->expiry && pk->uid == c->uid && pk->gid == c->gid)
		return NULL;
	*perm = ti.default_perm | (uint32_t)KEYFS_PERM_SETATTR << KEYFS_USR_SHIFT;
	*final = chosen ? pk->perm : ti.default_perm;
	return perm;
}

/* The key of n with its attributes: the backend calls of one create.
 * A creator that will not possess the key gets its owner's share
 * (keytype_add_perm) for a payload of its own only: one another user
 * wrote into its entry gets the kernel's default, which lets the creator
 * view the key and no more, as before that share existed (a secret
 * stored under a name someone else holds open is not handed to them),
 * unless the creator chose a permission for the entry itself. */
static int instantiate(struct keyfs_ctx *ctx, const struct keyfs_cred *writer,
		       struct node *n, const void *buf, size_t len,
		       kserial_t *out)
{
	const struct pending_key *pk = n->pk;
	const struct keyfs_cred *c = &pk->creator;
	bool own = writer->uid == c->uid;
	kserial_t serial;
	time_t now = time(NULL);
	uint32_t perm, final = 0;
	const uint32_t *add_perm = own ? keytype_add_perm(ctx, c, pk->type, &perm) :
				   foreign_add_perm(ctx, pk, &perm, &final);
	int ret;

	ret = BACKEND_CALL(ctx, add, c, pk->type, pk->desc, buf, len, pk->parent,
			   add_perm, &serial);
	if (ret < 0)
		return ret;
	/* The permission last: it may take setattr from the creator. */
	if (pk->uid != c->uid || pk->gid != c->gid)
		ret = BACKEND_CALL(ctx, chown, c, serial,
				   pk->uid != c->uid ? pk->uid : (uid_t)-1,
				   pk->gid != c->gid ? pk->gid : (gid_t)-1);
	if (ret == 0 && pk->expiry)
		ret = BACKEND_CALL(ctx, set_timeout, c, serial,
				   pk->expiry > now ? (unsigned)(pk->expiry - now) : 1);
	if (ret == 0 && !own && add_perm) {
		ret = BACKEND_CALL(ctx, setperm, c, serial, final);
	} else if (ret == 0 && pk->perm_set) {
		ret = BACKEND_CALL(ctx, setperm, c, serial, pk->perm);
		/* A create mode the creator turns out unable to set (the key is
		 * not possessed after all) leaves add_key's, as mkdir does. */
		if (ret == -EACCES && pk->perm_from_mode)
			ret = 0;
	}
	if (ret < 0) {
		BACKEND_CALL(ctx, unlink, &ctx->mounter, serial, pk->parent);
		return ret;
	}
	*out = serial;
	return 0;
}

bool pending_listed_as(const struct node *n, const char *name)
{
	char listed[KEYFS_NAME_MAX + 1];

	return name_for_key(n->pk->type, n->pk->desc, false, listed,
			    sizeof(listed)) == 0 && strcmp(listed, name) == 0;
}

/*
 * The kernel holds the new key under the entry's own inode, and would
 * until it evicts the name: a node per created key for as long as that
 * (100,000 creates kept 100,000 of them, issue 10).  Dropping the name
 * lets the kernel forget that inode once the file is closed (the node
 * then goes), and the next lookup finds the key under its own inode,
 * which, unlike the entry's, may read through the page cache.
 */
static void forget_created_name(struct keyfs_ctx *ctx, const struct node *n)
{
	char name[KEYFS_NAME_MAX + 1];

	if (n->listed_name &&
	    name_for_key(n->pk->type, n->pk->desc, false, name, sizeof(name)) == 0)
		ctx_forget_name(ctx, tree_ino(ctx, n->pk->parent), name);
}

int pending_instantiate(struct keyfs_ctx *ctx, const struct keyfs_cred *writer,
			struct node *n, const void *buf, size_t len,
			kserial_t *out)
{
	kserial_t serial = 0;
	int ret;

	/* One change of a store, however many calls: one record, one fsync. */
	ctx_batch_begin(ctx);
	ret = instantiate(ctx, writer, n, buf, len, &serial);
	ret = ctx_batch_end(ctx, ret);
	if (ret < 0) {
		/* Nothing is left of a failed create: the entry goes with it
		 * (freed at the kernel's forget, as an open file may still
		 * hold it). */
		n->unlinked = true;
		return ret;
	}
	forget_created_name(ctx, n);
	node_instantiated(ctx->nodes, n, serial);
	*out = serial;
	return 0;
}
