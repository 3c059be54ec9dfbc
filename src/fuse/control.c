/* control.c: the commands written to .keyfs/ files, and the texts read from them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "ctlfiles.h"
#include "control-parse.h"
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
 * The kernel caches names in directories and saw none of a control
 * command happen: after link or unlink, the key's name in that keyring
 * may now mean another key or none.  Both spellings go, since a keyring
 * that shares a user key's description is listed as %keyring:NAME.
 */
static void forget_key_name(struct keyfs_ctx *ctx, kserial_t keyring,
			    const char *type, const char *desc)
{
	char name[KEYFS_NAME_MAX + 1];
	uint64_t dir = tree_ino(ctx, keyring);

	if (name_for_key(type, desc, false, name, sizeof(name)) == 0)
		ctx_forget_name(ctx, dir, name);
	if (name_for_key(type, desc, true, name, sizeof(name)) == 0)
		ctx_forget_name(ctx, dir, name);
}

/* What a keyring lists now, as clear will empty it; NULL when it cannot
 * be listed (the attribute and entry timeouts still bound staleness). */
static struct tree_dirent *list_before_clear(struct keyfs_ctx *ctx,
					     kserial_t keyring, size_t *n)
{
	struct tree_dirent *d = NULL;

	if (tree_readdir(ctx, &ctx->mounter, tree_ino(ctx, keyring), &d, n) < 0)
		return NULL;
	return d;
}

static void forget_names(struct keyfs_ctx *ctx, enum ctl_cmd which,
			 kserial_t key, kserial_t keyring,
			 const struct key_info *ki,
			 const struct tree_dirent *cleared, size_t ncleared)
{
	size_t i;

	if ((which == CTL_LINK || which == CTL_UNLINK) && ki->type[0])
		forget_key_name(ctx, keyring, ki->type, ki->desc);
	for (i = 0; cleared && i < ncleared; i++)
		if (strcmp(cleared[i].name, ".") && strcmp(cleared[i].name, ".."))
			ctx_forget_name(ctx, tree_ino(ctx, key), cleared[i].name);
}

int control_write(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		  enum ctl_file f, const char *buf, size_t len)
{
	struct ctl_command cmd;
	kserial_t key = 0, keyring = 0;
	struct key_info ki = { 0 };
	struct tree_dirent *cleared = NULL;
	struct tree_entry entry = { 0 };
	size_t ncleared = 0;
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
	/* The names to forget are read before the command changes them. */
	if ((which == CTL_LINK || which == CTL_UNLINK) &&
	    BACKEND_CALL(ctx, describe, &ctx->mounter, key, &ki) < 0)
		ki.type[0] = '\0';
	if (which == CTL_CLEAR)
		cleared = list_before_clear(ctx, key, &ncleared);
	ret = run_command(ctx, c, &cmd, key, keyring);
	/* The kernel caches these keys' attributes (mode, owner, link
	 * counts); it saw none of this happen. */
	if (ret == 0) {
		ctx_key_changed(ctx, key);
		ctx_key_changed(ctx, keyring);
		forget_names(ctx, which, key, keyring, &ki, cleared, ncleared);
		/* An invalidated key leaves every keyring; the one named in
		 * the command is the name its writer is likely to look at. */
		if (which == CTL_INVALIDATE && entry.parent)
			ctx_forget_name(ctx, entry.parent, entry.name);
	}
	free(cleared);
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
