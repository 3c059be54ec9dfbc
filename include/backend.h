/* backend.h: the one table of operations through which keyfs reaches a key store. */
#ifndef KEYFS_BACKEND_H
#define KEYFS_BACKEND_H

#include "keyfs.h"

/* A backend's private state; each backend defines the struct. */
struct keyfs_backend;

/* What a backend is started with.  Strings are owned by the caller and
 * outlive the backend. */
struct crypto_key;

struct backend_config {
	const char *store;		/* memory: JSON file, or NULL */
	const struct crypto_key *store_key; /* memory: the store's key, or NULL (crypto.h) */
	const char *request_key;	/* memory: callout program, or NULL */
	uid_t uid;			/* the mounter */
	gid_t gid;
	double cache_timeout;		/* kernel: seconds a keyring listing is trusted */
	unsigned request_timeout;	/* memory: seconds a callout may run */

	/* The upper layer runs every operation holding one lock of its own.
	 * An operation that waits long on something outside keyfs (the
	 * memory backend's callout) calls unlock(lock_arg) before and
	 * relock(lock_arg) after; in between it may touch neither its own
	 * state nor anything it found there (other operations run and may
	 * free it).  NULL: there is no lock, nothing to do. */
	void (*unlock)(void *lock_arg);
	void (*relock)(void *lock_arg);
	void *lock_arg;
};

/* Facts of one key type (see the type_info slot). */
struct key_type_info {
	size_t max_payload;	/* the largest payload add and update take */
	uint32_t default_perm;	/* the permission a new key of the type gets */
	bool readable;		/* read gives the payload (false: logon) */
};

#define KEYFS_MOVE_EXCL	0x1	/* move: fail with EEXIST rather than displace */

/*
 * Every operation returns 0 or -errno, with errno values as the kernel's
 * keyctl(2) gives them (ENOKEY, EKEYREVOKED, EKEYEXPIRED, EACCES, EDQUOT,
 * EDEADLK, ELOOP, EFBIG for a payload over the type's limit, ...).  Every
 * operation acting for a caller takes that caller's credentials and checks
 * access with the kernel's rules (perm.h); "needs X" below names the
 * permission bit the kernel's keyctl wants, granted by the key's perm to
 * the caller's class or to a possessor.  Output pointers are written only
 * on success.  A NULL slot means "not supported": callers answer EOPNOTSUPP.
 * Buffers a slot hands out ("*_alloc" names below) belong to the caller.
 *
 * Rules both backends keep, which the FUSE layer relies on:
 * - A dead key (revoked, expired, negative, invalidated) that still has a
 *   serial is described, not refused: describe answers 0 with its state in
 *   key_info.state, so listings and stat show it.  Every other slot acting
 *   on it answers as keyctl does (EKEYREVOKED, EKEYEXPIRED, ENOKEY), except
 *   unlink, which takes a key in any state (the usual cleanup).
 * - Updating a key of the user or logon type (update, or add meeting a
 *   key of the same type and description) clears its expiry, as the
 *   kernel's user_update does; big_key keeps it.
 * - No slot calls back into the layer above; the only callbacks are
 *   backend_config's unlock/relock.
 */
/* The parts of a key_info that may cost a backend more than a describe
 * (describe_part). */
enum {
	KEY_INFO_SIZE = 1,	/* the payload's length */
	KEY_INFO_EXPIRY = 2,	/* a timeout set outside keyfs */
	KEY_INFO_RECENT = 4,	/* a description made a moment ago will do (see below) */
};

struct keyfs_backend_ops {
	const char *name;

	/* Open the store (memory: load the JSON snapshot; kernel: check that
	 * keyctl works).  On failure writes one line (no newline) naming the
	 * cause into err and returns -errno. */
	int (*init)(struct keyfs_backend **bp, const struct backend_config *cfg,
		    char *err, size_t errlen);
	/* Called once, after the file system is unmounted; frees everything. */
	void (*destroy)(struct keyfs_backend *b);
	/* Optional.  Stop every thread of the backend's own before keyfs
	 * forks into the background: the child gets only the forking thread,
	 * and every lock another thread held at that moment (the memory
	 * allocator's among them) stays held in the child for good.  The
	 * backend starts them again when it next needs them. */
	void (*before_fork)(struct keyfs_backend *b);
	/* Optional.  Make the changes between batch_begin and batch_end one
	 * change of the store: a create with its mode is one journal record
	 * and one fsync, not two.  batch_end saves them; if that fails, every
	 * change of the batch is undone and the -errno returned.  Batches
	 * nest: only the outermost batch_end saves. */
	void (*batch_begin)(struct keyfs_backend *b);
	int (*batch_end)(struct keyfs_backend *b);

	/* Resolve @t/@p/@s/@u/@us (enum keyfs_special) to a serial, creating
	 * the keyring if create is set and it does not exist yet.  No
	 * permission: these are the caller's own keyrings. */
	int (*special)(struct keyfs_backend *b, const struct keyfs_cred *c,
		       int which, bool create, kserial_t *out);
	/* The caller's persistent keyring (keyctl get_persistent), made if
	 * need be; each call pushes its expiry ahead. */
	int (*persistent)(struct keyfs_backend *b, const struct keyfs_cred *c,
			  kserial_t *out);

	/* Needs view.  Answers dead keys with their state (see above); size
	 * is what read would give (0 for unreadable types). */
	int (*describe)(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t key, struct key_info *out);
	/* As describe, with the size and the expiry only where parts asks
	 * for them (KEY_INFO_*) or they cost nothing (else 0).  A stat needs
	 * no expiry; an open reads the payload next, which tells the size
	 * and fails on an expired key.  With KEY_INFO_RECENT and without
	 * the expiry, a backend may answer from a description it made a
	 * moment ago (the kernel backend: for the mounter, within
	 * entry_timeout; the open's read or the size probe checks the key
	 * anyway), and says when in out->described_ns.  Optional: where
	 * both cost nothing, describe serves. */
	int (*describe_part)(struct keyfs_backend *b,
			     const struct keyfs_cred *c, kserial_t key,
			     unsigned parts, struct key_info *out);
	/* Optional.  A hint: the caller will describe_part each of keys[0, n)
	 * with parts next, in one locked section; the backend may make the
	 * work for all of them at once (the kernel backend: its keyctl calls,
	 * on helper threads) and keep the answers for those describes.  A
	 * call with n 0 ends the section: answers not taken are dropped, so
	 * that no later describe gets one made before it. */
	void (*prefetch)(struct keyfs_backend *b, const struct keyfs_cred *c,
			 const kserial_t *keys, size_t n, unsigned parts);
	/* The payload; *buf_alloc is malloc'd, the caller wipes and frees it.
	 * Needs read (or search, for a possessor).  Keyrings read as an array
	 * of serials, as keyctl_read gives them. */
	int (*read)(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, void **buf_alloc, size_t *len);
	/* The serials a keyring links, in link order; *out_alloc is malloc'd
	 * (NULL when empty).  Needs what read needs, on a live keyring. */
	int (*list)(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t keyring, kserial_t **out_alloc, size_t *n);
	/* The key of this type and description linked directly in keyring (no
	 * recursion), without scanning the keyring: an index by name.  ENOKEY
	 * when there is none.  Needs search on the live keyring; the key is
	 * returned in whatever state it is, with no check of its own. */
	int (*find)(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t keyring, const char *type, const char *desc,
		    kserial_t *out);
	/* Every key the caller may view (for by-id/); *out_alloc as for list.
	 * Keys without view are left out, not an error. */
	int (*list_all)(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t **out_alloc, size_t *n);

	/* add_key(2): create, or update a key of the same type and description
	 * already in keyring.  A NULL payload with len 0 makes a keyring.
	 * Needs write on the keyring (and write on a key it updates); ENODEV
	 * for an unknown type, EINVAL for a description the type refuses,
	 * EFBIG over the type's payload limit, EDQUOT over the quota.  A new
	 * key gets the caller's ids and perm, or with perm NULL the type's
	 * default permission.  A perm is set by the key's maker while it
	 * possesses the key, as `keyctl add` into a keyring of one's own,
	 * `keyctl setperm` and `keyctl move` would: so a caller that will not
	 * possess the key (another uid than keyfs's) still gives it one, and
	 * needs no setattr for it; perm must keep the possessor's link (the
	 * move needs it), else EINVAL.  A key add updates keeps its own. */
	int (*add)(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const char *type, const char *desc, const void *payload,
		   size_t len, kserial_t keyring, const uint32_t *perm,
		   kserial_t *out);
	/* Whether add would take a new key of this type and description,
	 * making nothing: the errno add would give for them (ENODEV for a
	 * type the store lacks, EINVAL for a description the type refuses),
	 * else 0.  Lets keyfs refuse a file at creat rather than at close. */
	int (*check_new)(struct keyfs_backend *b, const char *type,
			 const char *desc);
	/* What keyfs must know of a key type before a key of it exists: its
	 * payload limit and a new key's permission.  ENODEV for a type the
	 * store lacks.  The one place these facts live for the FUSE layer
	 * (src/fuse/keytype.c asks it).  No caller: the facts are public. */
	int (*type_info)(struct keyfs_backend *b, const char *type,
			 struct key_type_info *out);
	/* keyctl update: replace the payload.  Needs write on a live key of
	 * an updatable type; EFBIG over the type's limit (the type's own,
	 * not keyctl's page).  Clears a user or logon key's expiry. */
	int (*update)(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, const void *payload, size_t len);
	/* Needs write on the keyring and link on the key; EDEADLK when the
	 * link would make a cycle, ELOOP when it would nest too deep.  A
	 * link displaces a key of the same type and description. */
	int (*link)(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, kserial_t keyring);
	/* Needs write on the keyring; the key may be in any state.  ENOENT
	 * when keyring does not link it. */
	int (*unlink)(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, kserial_t keyring);
	/* KEYCTL_MOVE; flags: KEYFS_MOVE_EXCL.  Needs link on the key and
	 * write on both keyrings; one step, all or nothing. */
	int (*move)(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, kserial_t from, kserial_t to, unsigned flags);
	/* Needs write, or else setattr.  The key stays, dead (described as
	 * KEY_STATE_REVOKED), until the garbage collector takes it. */
	int (*revoke)(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key);
	/* Needs search.  The key leaves every keyring at once. */
	int (*invalidate)(struct keyfs_backend *b, const struct keyfs_cred *c,
			  kserial_t key);
	/* Unlink everything a keyring links.  Needs write on the keyring. */
	int (*clear)(struct keyfs_backend *b, const struct keyfs_cred *c,
		     kserial_t keyring);
	/* Needs setattr, and the caller owns the key (or is root, for
	 * CAP_SYS_ADMIN).  EINVAL for bits outside 0x3f3f3f3f. */
	int (*setperm)(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t key, uint32_t perm);
	/* (uid_t)-1 / (gid_t)-1 leave that id unchanged.  Needs setattr;
	 * another uid, or a group the caller is not in, takes root.  The
	 * new owner takes over the quota charge (EDQUOT). */
	int (*chown)(struct keyfs_backend *b, const struct keyfs_cred *c,
		     kserial_t key, uid_t uid, gid_t gid);
	/* Expire secs seconds from now; 0 clears the expiry.  Needs setattr
	 * on a live key. */
	int (*set_timeout)(struct keyfs_backend *b, const struct keyfs_cred *c,
			   kserial_t key, unsigned secs);
	/* restrict_keyring(2); type NULL blocks all further links.  Needs
	 * setattr on the keyring. */
	int (*restrict_keyring)(struct keyfs_backend *b,
				const struct keyfs_cred *c, kserial_t keyring,
				const char *type, const char *restriction);
	/* request_key(2).  callout NULL: no callout; dest 0: no keyring.
	 * Searches as search does; a key found or made is linked into dest
	 * (needs write on it).  A negative key answers ENOKEY.  May give up
	 * the upper layer's lock while a callout runs (backend_config). */
	int (*request)(struct keyfs_backend *b, const struct keyfs_cred *c,
		       const char *type, const char *desc, const char *callout,
		       kserial_t dest, kserial_t *out);
	/* Search the process keyrings as request_key(2) does, without a
	 * callout.  ENOKEY when nothing is found.  Keyrings need search to be
	 * searched, keys search to be found; possession counts. */
	int (*search)(struct keyfs_backend *b, const struct keyfs_cred *c,
		      const char *type, const char *desc, kserial_t *out);

	/* The LSM label (keyctl security); *label_alloc is malloc'd.  Needs
	 * view. */
	int (*security)(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t key, char **label_alloc);
	/* Text in the formats of /proc/keys and /proc/key-users, and of
	 * `keyctl supports`; *text_alloc is malloc'd, NUL-terminated.
	 * proc_keys lists the keys the caller may view; proc_key_users every
	 * user's counts, as the kernel shows them to anyone. */
	int (*proc_keys)(struct keyfs_backend *b, const struct keyfs_cred *c,
			 char **text_alloc);
	int (*proc_key_users)(struct keyfs_backend *b,
			      const struct keyfs_cred *c, char **text_alloc);
	int (*supports)(struct keyfs_backend *b, char **text_alloc);
	/* The caller's quota usage and limits (its uid's).  No permission. */
	int (*quota)(struct keyfs_backend *b, const struct keyfs_cred *c,
		     struct key_quota *q);
};

extern const struct keyfs_backend_ops backend_memory_ops;
extern const struct keyfs_backend_ops backend_kernel_ops;

/* Look a backend up by name ("kernel", "memory"); NULL when unknown. */
const struct keyfs_backend_ops *backend_by_name(const char *name);

#endif
