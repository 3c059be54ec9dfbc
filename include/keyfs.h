/* keyfs.h: types and limits shared by every part of keyfs. */
#ifndef KEYFS_H
#define KEYFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Limits of the kernel's key API, so both backends refuse the same input. */
#define KEYFS_NAME_MAX		255	/* one entry name, escaped */
#define KEYFS_DESC_MAX		4095	/* a description, without NUL */
#define KEYFS_TYPE_MAX		31	/* a type name, without NUL */
#define KEYFS_USER_PAYLOAD_MAX	32767	/* user and logon keys */
#define KEYFS_BIG_PAYLOAD_MAX	(1024 * 1024)	/* big_key */
#define KEYFS_NEST_MAX		6	/* keyring nesting depth */
#define KEYFS_NEGATIVE_TIMEOUT	60	/* seconds a failed request stays negative */
#define KEYFS_GROUPS_MAX	64	/* supplementary groups taken from a caller */

/* Key serials are positive; 0 means "none" throughout keyfs. */
typedef int32_t kserial_t;

/* The special keyrings, numbered as the kernel's KEY_SPEC_* so the kernel
 * backend can pass them straight through. */
enum keyfs_special {
	KEYFS_SPEC_THREAD	= -1,
	KEYFS_SPEC_PROCESS	= -2,
	KEYFS_SPEC_SESSION	= -3,
	KEYFS_SPEC_USER		= -4,
	KEYFS_SPEC_USER_SESSION	= -5,
};

enum key_state {
	KEY_STATE_VALID,
	KEY_STATE_PENDING,	/* keyfs only: created, not yet instantiated */
	KEY_STATE_REVOKED,
	KEY_STATE_EXPIRED,
	KEY_STATE_NEGATIVE,
	KEY_STATE_INVALIDATED,
};

/* Permission bits of one class; a key's perm holds four classes:
 * possessor << 24 | user << 16 | group << 8 | other. */
#define KEYFS_PERM_VIEW		0x01
#define KEYFS_PERM_READ		0x02
#define KEYFS_PERM_WRITE	0x04
#define KEYFS_PERM_SEARCH	0x08
#define KEYFS_PERM_LINK		0x10
#define KEYFS_PERM_SETATTR	0x20
#define KEYFS_PERM_ALL		0x3f

#define KEYFS_POS_SHIFT		24
#define KEYFS_USR_SHIFT		16
#define KEYFS_GRP_SHIFT		8
#define KEYFS_OTH_SHIFT		0

/* A caller's supplementary groups, read only when a check needs them:
 * reading them (from /proc) costs as much as the rest of a request. */
struct keyfs_lazy_groups {
	bool loaded;
	int n;
	gid_t v[KEYFS_GROUPS_MAX];
	/* Fills n and v; on failure leaves n at 0. */
	void (*load)(struct keyfs_lazy_groups *g);
	void *arg;			/* for load: the request */
};

/* The identity a request runs with: the FUSE caller, or the mounter for
 * keyfs's own work.  Read the groups with cred_groups() (perm.h). */
struct keyfs_cred {
	uid_t uid;		/* fsuid */
	gid_t gid;		/* fsgid */
	const gid_t *groups;	/* supplementary groups when lazy is NULL; may be NULL */
	int ngroups;
	struct keyfs_lazy_groups *lazy;	/* else these, owned by the request */
	pid_t pid;		/* 0 for keyfs itself */
	/* A wait on something outside keyfs (a request's callout) ends with
	 * EINTR once this descriptor polls readable: the caller gave up (a
	 * FUSE interrupt).  NULL: nothing ends it.  Lives as long as the
	 * request; a copy of the cred must not keep it. */
	const int *cancel_fd;
};

/* What a backend tells about one key.  Fixed-size, so callers keep it on
 * the stack or embed it; nothing in it needs freeing. */
struct key_info {
	kserial_t serial;
	char type[KEYFS_TYPE_MAX + 1];
	char desc[KEYFS_DESC_MAX + 1];
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	enum key_state state;
	time_t expiry;		/* absolute, seconds since the epoch; 0: none */
	size_t size;		/* payload length; 0 where the type cannot be read */
	unsigned nlink;		/* keyring: 2 + child keyrings; key: keyrings seen linking it, >= 1 */
	bool possessed;		/* the caller possesses the key */
	struct timespec mtime;	/* last payload change */
	struct timespec ctime;	/* last change of any kind */
	/* CLOCK_MONOTONIC (keyfs_mono_ns), when the backend described the
	 * key: a moment ago where it answered from an earlier description
	 * (KEY_INFO_RECENT); 0: now */
	int64_t described_ns;
};

/* Per-uid quota, as /proc/key-users shows it. */
struct key_quota {
	unsigned long keys, maxkeys;
	unsigned long bytes, maxbytes;
};

static inline bool keyfs_is_keyring_type(const char *type)
{
	return __builtin_strcmp(type, "keyring") == 0;
}

#endif
