/* control-parse.h: parsing of one command written to a .keyfs/ control file. */
#ifndef KEYFS_CONTROL_PARSE_H
#define KEYFS_CONTROL_PARSE_H

#include "keyfs.h"

#define CTL_LINE_MAX	8192	/* one command, bytes, trailing newline included */

enum ctl_cmd {
	CTL_REVOKE,
	CTL_INVALIDATE,
	CTL_LINK,
	CTL_UNLINK,
	CTL_SETPERM,
	CTL_CHOWN,
	CTL_TIMEOUT,
	CTL_CLEAR,
	CTL_REQUEST,
	CTL_RESTRICT,
};

/* A KEY or KEYRING field. */
enum ctl_ref_kind {
	CTL_REF_PATH,		/* path: relative to the mount root, no leading '/' */
	CTL_REF_SERIAL,		/* #SERIAL */
	CTL_REF_SPECIAL,	/* @s @u @us @p: special holds enum keyfs_special */
};

struct ctl_ref {
	enum ctl_ref_kind kind;
	char *path;		/* CTL_REF_PATH: malloc'd, %-escapes kept as in entry names */
	kserial_t serial;
	int special;
};

struct ctl_command {
	enum ctl_cmd cmd;
	struct ctl_ref key;	/* every command but request */
	struct ctl_ref keyring;	/* link, unlink; request (default @s) */
	uint32_t perm;		/* setperm */
	uid_t uid;		/* chown */
	gid_t gid;		/* chown; (gid_t)-1 when not given */
	unsigned timeout;	/* timeout: seconds, 0 clears */
	char *type;		/* request, restrict (NULL: none given) */
	char *desc;		/* request: unescaped */
	char *callout;		/* request: unescaped; NULL for none or "-" */
	char *restriction;	/* restrict: NULL when not given */
};

/* The command a control file's name stands for; -ENOENT if none. */
int ctl_cmd_from_name(const char *name, enum ctl_cmd *out);

/* Parse one write of len bytes to the control file for cmd.  mountpoint
 * is the absolute mount path, so absolute paths inside the mount become
 * relative ones (a path outside it is EINVAL).  Fields are separated by
 * single spaces or runs of spaces; one trailing newline is allowed; a NUL
 * byte, a second line, too many or too few fields, a bad number or an
 * over-long line are -EINVAL.  On success out owns malloc'd strings: free
 * with ctl_command_free. */
int ctl_parse(enum ctl_cmd cmd, const char *buf, size_t len,
	      const char *mountpoint, struct ctl_command *out);
void ctl_command_free(struct ctl_command *c);

#endif
