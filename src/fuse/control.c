/* control.c: the commands written to .keyfs/ files, and the texts read from them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "ctlfiles.h"
#include "control-parse.h"
#include "grow.h"
#include "names.h"
#include "tree.h"

/*
 * A #SERIAL must name a key that exists.  Only "no such key" is final
 * here: a key the caller may not view, or one revoked or expired, can
 * still be the object of the command (unlinking a revoked key is the
 * usual cleanup), so the backend's own checks decide those.
 */
static int check_serial(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
			kserial_t serial)
{
	struct key_info ki;
	int ret;

	ret = BACKEND_CALL(ctx, describe, c, serial, &ki);
	if (ret == -ENOKEY || ret == -ENOENT)
		return -ENOKEY;
	return 0;
}

/* where: the entry a path reference went through, when it is one. */
static int resolve_ref(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       const struct ctl_ref *ref, kserial_t *out,
		       struct tree_entry *where)
{
	int ret;

	switch (ref->kind) {
	case CTL_REF_PATH:
		return tree_resolve(ctx, c, ref->path, out, where);
	case CTL_REF_SERIAL:
		ret = check_serial(ctx, c, ref->serial);
		if (ret == 0)
			*out = ref->serial;
		return ret;
	case CTL_REF_SPECIAL:
		return tree_special(ctx, ref->special, out);
	}
	return -EINVAL;
}

/* Which of a command's fields name keys. */
static bool uses_key(enum ctl_cmd cmd)
{
	return cmd != CTL_REQUEST;
}

static bool uses_keyring(enum ctl_cmd cmd)
{
	return cmd == CTL_LINK || cmd == CTL_UNLINK || cmd == CTL_REQUEST;
}

/* The one backend operation a command stands for; every reference is
 * resolved by now. */
static int run_command(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       const struct ctl_command *cmd, kserial_t key,
		       kserial_t keyring)
{
	kserial_t found;

	switch (cmd->cmd) {
	case CTL_REVOKE:
		return BACKEND_CALL(ctx, revoke, c, key);
	case CTL_INVALIDATE:
		return BACKEND_CALL(ctx, invalidate, c, key);
	case CTL_LINK:
		return BACKEND_CALL(ctx, link, c, key, keyring);
	case CTL_UNLINK:
		return BACKEND_CALL(ctx, unlink, c, key, keyring);
	case CTL_SETPERM:
		return BACKEND_CALL(ctx, setperm, c, key, cmd->perm);
	case CTL_CHOWN:
		return BACKEND_CALL(ctx, chown, c, key, cmd->uid, cmd->gid);
	case CTL_TIMEOUT:
		return BACKEND_CALL(ctx, set_timeout, c, key, cmd->timeout);
	case CTL_CLEAR:
		return BACKEND_CALL(ctx, clear, c, key);
	case CTL_RESTRICT:
		return BACKEND_CALL(ctx, restrict_keyring, c, key, cmd->type,
				    cmd->restriction);
	case CTL_REQUEST:
		return BACKEND_CALL(ctx, request, c, cmd->type, cmd->desc,
				    cmd->callout, keyring, &found);
	}
	return -EINVAL;
}

/*
 * The kernel caches names in directories and saw none of a control command
 * happen.  The names it made stale are gathered before the command runs
 * (afterwards a revoked or invalidated key may list nothing) and dropped
 * once it has worked.
 */
struct stale {
	uint64_t dir;
	char name[KEYFS_NAME_MAX + 1];
};

struct stale_list {
	struct stale *v;
	size_t n, cap;
};

/* Bounds the walk for an invalidated key's names and the list itself: past
 * it, the entry timeout still bounds how stale a name gets. */
#define STALE_MAX 4096
#define WALK_MAX 256

static void stale_add(struct stale_list *l, uint64_t dir, const char *name)
{
	struct stale *v = grow_room(l->v, l->n, &l->cap, 16, STALE_MAX,
				    sizeof(*v));

	if (!v)
		return;
	l->v = v;
	l->v[l->n].dir = dir;
	snprintf(l->v[l->n].name, sizeof(l->v[l->n].name), "%s", name);
	l->n++;
}

/* A key's names in directory dir: both spellings, since a keyring that
 * shares a user key's description is listed as %keyring:NAME. */
static void stale_key_name(struct stale_list *l, uint64_t dir,
			   const struct key_info *ki)
{
	char name[KEYFS_NAME_MAX + 1];

	if (!ki->type[0])
		return;
	if (name_for_key(ki->type, ki->desc, false, name, sizeof(name)) == 0)
		stale_add(l, dir, name);
	if (name_for_key(ki->type, ki->desc, true, name, sizeof(name)) == 0)
		stale_add(l, dir, name);
}

static bool is_dot(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* Every name a keyring lists: paths through it may now be refused
 * (revoked, no search any more) or lead nowhere (cleared, invalidated). */
static void stale_children(struct keyfs_ctx *ctx, struct stale_list *l,
			   kserial_t keyring)
{
	uint64_t dir = tree_ino(ctx, keyring);
	struct tree_dirent *d = NULL;
	size_t n = 0, i;

	if (tree_readdir(ctx, &ctx->mounter, dir, &d, &n) < 0)
		return;
	for (i = 0; i < n; i++)
		if (!is_dot(d[i].name))
			stale_add(l, dir, d[i].name);
	free(d);
}

static bool queued(const uint64_t *q, size_t n, uint64_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (q[i] == ino)
			return true;
	return false;
}

/*
 * An invalidated key leaves every keyring at once, and nothing records
 * where the kernel cached it: walk the keyrings the tree shows (breadth
 * first, bounded) for the names it has, and its by-id name.
 */
static void stale_everywhere(struct keyfs_ctx *ctx, struct stale_list *l,
			     kserial_t key)
{
	uint64_t q[WALK_MAX];
	size_t head = 0, tail = 0, n, i;
	struct tree_dirent *d;
	char byid[32];

	q[tail++] = INO_ROOT;
	while (head < tail) {
		uint64_t dir = q[head++];

		d = NULL;
		if (tree_readdir(ctx, &ctx->mounter, dir, &d, &n) < 0)
			continue;
		for (i = 0; i < n; i++) {
			if (is_dot(d[i].name) || d[i].tn.kind != T_KEY)
				continue;
			if (d[i].tn.serial == key)
				stale_add(l, dir, d[i].name);
			if (S_ISDIR(d[i].st.st_mode) && tail < WALK_MAX &&
			    !queued(q, tail, d[i].tn.ino))
				q[tail++] = d[i].tn.ino;
		}
		free(d);
	}
	snprintf(byid, sizeof(byid), "%d", (int)key);
	stale_add(l, INO_BYID, byid);
}

/* Commands that can refuse, or end, paths through a keyring. */
static bool closes_paths(enum ctl_cmd cmd)
{
	return cmd == CTL_REVOKE || cmd == CTL_INVALIDATE ||
	       cmd == CTL_SETPERM || cmd == CTL_CHOWN || cmd == CTL_CLEAR;
}

static void gather_stale(struct keyfs_ctx *ctx, enum ctl_cmd which,
			 kserial_t key, kserial_t keyring,
			 const struct tree_entry *entry, struct stale_list *l)
{
	struct key_info ki = { 0 };

	if (which == CTL_REQUEST)
		return;
	if (BACKEND_CALL(ctx, describe, &ctx->mounter, key, &ki) < 0)
		ki.type[0] = '\0';
	/* The name the command was given, as written (a lookup of "r%203"
	 * caches that spelling too) and as the key is listed. */
	if (entry->parent) {
		stale_add(l, entry->parent, entry->name);
		stale_key_name(l, entry->parent, &ki);
	}
	/* After link or unlink, the key's name in that keyring may now mean
	 * another key or none. */
	if (which == CTL_LINK || which == CTL_UNLINK)
		stale_key_name(l, tree_ino(ctx, keyring), &ki);
	if (closes_paths(which) && strcmp(ki.type, "keyring") == 0)
		stale_children(ctx, l, key);
	if (which == CTL_INVALIDATE)
		stale_everywhere(ctx, l, key);
}

/* Drop the names, and wait (briefly) until the kernel has: the writer's
 * next path must not meet them. */
static void forget_stale(struct keyfs_ctx *ctx, const struct stale_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		ctx_forget_name(ctx, l->v[i].dir, l->v[i].name);
	if (l->n)
		ctx_forget_wait(ctx);
}

int control_write(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		  enum ctl_file f, const char *buf, size_t len)
{
	struct ctl_command cmd;
	kserial_t key = 0, keyring = 0;
	struct tree_entry entry = { 0 };
	struct stale_list stale = { 0 };
	enum ctl_cmd which;
	int ret;

	if (f >= CTLF_COUNT || !ctl_files[f].writable ||
	    ctl_cmd_from_name(ctl_files[f].name, &which) < 0)
		return -EBADF;
	ret = ctl_parse(which, buf, len, ctx->mountpoint, &cmd);
	if (ret < 0)
		return ret;
	/* Everything is looked up before anything is done, so a bad second
	 * reference leaves the first key untouched. */
	if (uses_key(which)) {
		ret = resolve_ref(ctx, c, &cmd.key, &key, &entry);
		if (ret < 0)
			goto out;
	}
	if (uses_keyring(which)) {
		ret = resolve_ref(ctx, c, &cmd.keyring, &keyring, NULL);
		if (ret < 0)
			goto out;
	}
	gather_stale(ctx, which, key, keyring, &entry, &stale);
	ret = run_command(ctx, c, &cmd, key, keyring);
	/* The kernel caches these keys' attributes (mode, owner, link
	 * counts); it saw none of this happen. */
	if (ret == 0) {
		ctx_key_changed(ctx, key);
		ctx_key_changed(ctx, keyring);
		forget_stale(ctx, &stale);
	}
	free(stale.v);
out:
	ctl_command_free(&cmd);
	return ret;
}

int control_read_alloc(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       enum ctl_file f, char **text_alloc, size_t *len)
{
	char *text = NULL;
	int ret;

	switch (f) {
	case CTLF_KEYS:
		ret = BACKEND_CALL(ctx, proc_keys, c, &text);
		break;
	case CTLF_KEY_USERS:
		ret = BACKEND_CALL(ctx, proc_key_users, c, &text);
		break;
	case CTLF_SUPPORTS:
		ret = BACKEND_CALL(ctx, supports, &text);
		break;
	default:
		return -EBADF;
	}
	if (ret < 0)
		return ret;
	if (!text)
		text = strdup("");
	if (!text)
		return -ENOMEM;
	*text_alloc = text;
	*len = strlen(text);
	return 0;
}
