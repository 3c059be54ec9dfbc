/* ctlfiles.c: the table of the files in .keyfs/ (ctlfiles.h). */
#include "ctlfiles.h"

const struct ctl_file_info ctl_files[CTLF_COUNT] = {
	[CTLF_REVOKE] = { "revoke", true },
	[CTLF_INVALIDATE] = { "invalidate", true },
	[CTLF_LINK] = { "link", true },
	[CTLF_UNLINK] = { "unlink", true },
	[CTLF_SETPERM] = { "setperm", true },
	[CTLF_CHOWN] = { "chown", true },
	[CTLF_TIMEOUT] = { "timeout", true },
	[CTLF_CLEAR] = { "clear", true },
	[CTLF_REQUEST] = { "request", true },
	[CTLF_RESTRICT] = { "restrict", true },
	[CTLF_KEYS] = { "keys", false },
	[CTLF_KEY_USERS] = { "key-users", false },
	[CTLF_SUPPORTS] = { "supports", false },
};
