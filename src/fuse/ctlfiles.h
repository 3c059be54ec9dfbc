/* ctlfiles.h: the files in .keyfs/: their names and which are written (commands) or read. */
#ifndef KEYFS_CTLFILES_H
#define KEYFS_CTLFILES_H

#include <stdbool.h>

/* The files in .keyfs/. */
enum ctl_file {
	CTLF_REVOKE,
	CTLF_INVALIDATE,
	CTLF_LINK,
	CTLF_UNLINK,
	CTLF_SETPERM,
	CTLF_CHOWN,
	CTLF_TIMEOUT,
	CTLF_CLEAR,
	CTLF_REQUEST,
	CTLF_RESTRICT,
	CTLF_KEYS,
	CTLF_KEY_USERS,
	CTLF_SUPPORTS,
	CTLF_COUNT,
};

struct ctl_file_info {
	const char *name;	/* in .keyfs/; a command's name (control-parse.h) */
	bool writable;		/* written with commands (0222), else read (0444) */
};

/* The one table of control files: the tree lists it, attr.c gives the
 * modes, control.c runs the commands. */
extern const struct ctl_file_info ctl_files[CTLF_COUNT];

#endif
