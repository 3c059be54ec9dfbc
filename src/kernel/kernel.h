/* kernel.h: the kernel backend's private types and the functions its files share. */
#ifndef KEYFS_KERNEL_H
#define KEYFS_KERNEL_H

#include <stdatomic.h>
#include <string.h>
#include <time.h>

/* Every file of the kernel backend calls into libkeyutils (keyctl, add_key,
 * request_key), so <keyutils.h> is included here, for src/kernel/ only:
 * nothing outside this folder includes this header (STYLE rule 8). */
#include <keyutils.h>

#include "backend.h"
#include "hash.h"
#include "perm.h"
#include "timens.h"

#define SLOTS_MIN		16	/* a hash table's first size, a power of 2 */
#define SLURP_MIN		4096	/* first buffer for a /proc file */

/*
 * What keyfs knows and the kernel does not keep.  The kernel shows no times
 * and no parent links, describes no revoked key and shows a timeout only
 * rounded in /proc/keys; so this backend remembers, per serial, the type and
 * description (fixed for a key's life), the times keyfs made or saw changes,
 * an expiry it set itself, the keyrings it saw linking the key, and for a
 * keyring an index of its links by name.  All of it is touched from the one
 * FUSE thread only.
 */

/* One link of a keyring's index, chained by serial and by name through
 * indexes into the index's array (20 bytes: a keyring of 10,000 keys has
 * 10,000 of them, issue 10). */
struct ient {
	uint32_t serial_next;	/* 1 + the next entry's place; 0: none */
	uint32_t name_next;
	kserial_t serial;	/* 0: a free entry, on the free list */
	uint32_t hash;		/* of type and description, when named */
	bool named;		/* type and description known: findable */
	bool keyring;
};

/* What one listing of a keyring showed, with keyfs's own changes since. */
struct kidx {
	struct ient *ents;	/* in the listing's order, until changed */
	uint32_t *by_serial;	/* chain heads: 1 + an entry's place; 0: none */
	uint32_t *by_name;
	size_t nslots;		/* of each table, a power of 2 */
	size_t n;		/* entries in use */
	size_t nents, cap;	/* entries made (in use or free), room */
	uint32_t free;		/* 1 + the first free entry's place; 0: none */
	unsigned nkeyrings;
	int64_t built_ns;	/* CLOCK_MONOTONIC; 0: to be listed anew */
	bool unknown;		/* keyfs changed it in a way it cannot follow */
	/* ents is the listing the index was built from, in order, with no
	 * free entry: keyfs's own changes have not moved it, so a listing
	 * equal to it needs no rebuild. */
	bool listed;
};

/* What keyfs knows of one serial. */
struct kkey {
	struct kkey *next;		/* hash chain */
	kserial_t serial;
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	/* Once described (named), type points at one owned block
	 * "TYPE\0DESC\0" (kkey_desc); before, type is "" (not owned).  One
	 * block, no fixed type buffer, no second pointer: issue 10's bytes
	 * per key (a record is 112 bytes). */
	const char *type;
	int64_t mtime_ns, ctime_ns;	/* CLOCK_REALTIME (timens.h) */
	time_t expiry;
	int64_t expiry_set_ns;		/* CLOCK_MONOTONIC, when it was */
	unsigned seen_gen;		/* kusers_gen when first seen */
	/* keyrings seen linking it: the first in parent1 (parents ==
	 * &parent1 while aparents is 1), no allocation for most keys */
	kserial_t parent1;
	kserial_t *parents;
	uint32_t nparents, aparents;
	struct kidx *idx;		/* keyring: its index, or NULL */
	/* CLOCK_MONOTONIC, when keyfs last described it; 0 once keyfs
	 * changed it since (kkey_recent) */
	int64_t learned_ns;
	uint8_t dead;			/* enum key_state: revoked or expired, as last seen */
	bool named:1;			/* type and description known */
	bool have_attr:1;		/* uid, gid, perm as last described */
	bool exact_expiry:1;		/* expiry was set through keyfs */
	bool positive:1;		/* seen instantiated, not negative: for good */
	/* every keyring keyfs saw linking it has been listed (or changed by
	 * keyfs) without it since: no parent is not "none known" */
	bool orphaned:1;
};

enum proc_timeout { TMO_NONE, TMO_EXPIRED, TMO_SET };

/* One line of /proc/keys: one per key on the system, so kept small (40
 * bytes). */
struct pent {
	time_t lo, hi;			/* TMO_SET: the expiry lies in [lo, hi) */
	kserial_t serial;
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	uint32_t next;			/* hash chain: index + 1 in ents, 0: none */
	uint8_t flags;			/* PENT_* */
	uint8_t tmo;			/* enum proc_timeout */
};

/* The flags column "IRDQUNi": bit i is set where column i is not '-'. */
enum {
	PENT_INSTANTIATED = 1 << 0,	/* I */
	PENT_NEGATIVE = 1 << 5,		/* N */
	PENT_INVALIDATED = 1 << 6,	/* i */
};

/* The last parse of /proc/keys. */
struct pcache {
	struct pent *ents;
	size_t n;
	uint32_t *slots;		/* index + 1 in ents, 0: none */
	size_t nslots;
	int64_t when_ns;		/* CLOCK_MONOTONIC */
	double cost;			/* seconds reading and parsing took */
	bool valid;
};

struct keyfs_backend {
	uid_t uid;			/* the mounter */
	gid_t gid;
	double cache_timeout;
	/* backend_config's: given up while request_key(2) waits on a callout */
	void (*unlock)(void *), (*relock)(void *);
	void *lock_arg;
	uid_t own_fsuid;		/* the daemon's, restored after a caller's call */
	gid_t own_fsgid;
	gid_t *own_groups;
	int own_ngroups;
	struct kkey **slots;
	size_t nslots, n;
	struct pcache proc;
	struct prefresh *refresh;	/* the reader of /proc/keys, or NULL */
	/* The last read of /proc/key-users: the uids that then had keys
	 * under construction.  It tells of every key seen before it. */
	unsigned kusers_gen;		/* reads so far */
	uid_t *kusers_pending;
	size_t nkusers_pending;
	struct kdetach *detach;		/* detach.c; NULL: callers are waited for */
	struct kpre *pre;		/* prefetch.c's helpers, or NULL */
	bool pre_none;			/* one CPU: no helpers, ever */
};

/*
 * keyfs's thread, process and session keyrings make it a possessor of
 * every key it reaches from them, and setfsuid does not change that: a
 * keyctl call made for another user would grant that user the possessor
 * bits (SPEC 5: only the mounter possesses).  Where the kernel itself must
 * choose the key a call acts on (the key a search finds, the key add_key
 * updates), keyfs cannot check that key first, so the call runs in a child
 * process that holds none of keyfs's keyrings: a fork keeps neither the
 * thread nor the process keyring, the child joins a new, empty session
 * keyring and takes the caller's ids, and the kernel then checks the
 * caller alone, on the key it acts on, before it changes anything.
 */
enum stranger_op {
	ST_ADD,		/* add_key(type, desc, payload, len, ring); with a
			 * perm, into the child's own session keyring, given
			 * perm there and moved into ring (add_with_perm) */
	ST_REQUEST,	/* search tops; link what is found into ring; else
			 * with a callout, request_key(2) into ring */
};

#define ST_TOPS	3	/* keyfs's thread, process and session keyrings */

struct stranger {
	enum stranger_op op;
	const char *type, *desc, *callout;
	const void *payload;
	size_t len;
	kserial_t ring;
	const uint32_t *perm;		/* ST_ADD: NULL, or the new key's */
	kserial_t tops[ST_TOPS];	/* 0: none */
};

struct stranger_result {
	long ret;	/* a serial, or -errno */
};

/* Seconds since mono_ns (keyfs_mono_ns's clock). */
static inline double age_of(int64_t mono_ns)
{
	return (double)(keyfs_mono_ns() - mono_ns) / 1e9;
}

/* The description of a key keyfs has described; NULL before. */
static inline const char *kkey_desc(const struct kkey *k)
{
	return k->named ? k->type + strlen(k->type) + 1 : NULL;
}

/* Whether k is known to be the key of this type and description. */
static inline bool kkey_is(const struct kkey *k, const char *type,
			   const char *desc)
{
	return k && k->named && strcmp(k->type, type) == 0 &&
	       strcmp(kkey_desc(k), desc) == 0;
}

/* 0 from a keyctl call that succeeded, -errno from one that failed. */
static inline int kerr(long r)
{
	return r < 0 ? -errno : 0;
}

/* What keyctl answers about a key that is revoked, expired, negative,
 * invalidated or gone (-errno). */
static inline bool kerr_dead(long err)
{
	return err == -EKEYREVOKED || err == -EKEYEXPIRED || err == -ENOKEY;
}

static inline bool is_mounter(const struct keyfs_backend *b,
			      const struct keyfs_cred *c)
{
	return !c || c->uid == b->uid;
}

/* ---- acting as the caller (cred.c) ---- */

/* fn(arg) with the caller's fsuid, fsgid and groups (as keyfs for the
 * mounter), then keyfs's own again: fn's result, or -EACCES when keyfs
 * cannot take the caller's ids. */
int as_caller(struct keyfs_backend *b, const struct keyfs_cred *c,
	      int (*fn)(void *arg), void *arg);

/* One keyctl(2) command with up to four arguments, passed as libkeyutils'
 * own wrappers pass them; ret is keyctl's result once made. */
struct kcall {
	int cmd;
	unsigned long arg[4];
	long ret;
};
#define KCALL(cmd, ...)	(&(struct kcall){ (cmd), { __VA_ARGS__ }, 0 })

/* call as the caller: 0 or -errno. */
int kcall_as(struct keyfs_backend *b, const struct keyfs_cred *c,
	     struct kcall *call);
/* The sequence every slot that changes a key follows: keyfs's own check of
 * key for want (or or_want, see kkey_check), then call as the caller. */
int kcall_checked(struct keyfs_backend *b, const struct keyfs_cred *c,
		  kserial_t key, unsigned want, unsigned or_want,
		  struct kcall *call);
/* An "_alloc" keyctl wrapper of libkeyutils (describe, security) as the
 * caller; *text_alloc is the caller's to free. */
int ktext_as(struct keyfs_backend *b, const struct keyfs_cred *c,
	     int (*fn)(key_serial_t key, char **text_alloc), kserial_t key,
	     char **text_alloc);
/* st for caller c in a child without keyfs's keyrings: a serial or -errno.
 * -EINTR once c->cancel_fd polls readable: the child is killed (a
 * construction it started goes on in the kernel) and reaped by a
 * detached thread, or waited for here when KDETACH_MAX already run. */
long stranger_call(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const struct stranger *st);
/* keyctl_search() of st->type and st->desc on each of st->tops, in the
 * order request_key(2) searches them; "no key" wins over other errors, as
 * in search_process_keyrings_rcu().  A serial, -ENOKEY or -errno.  Only
 * system calls (a stranger's child makes it too); unlike request_key(2)
 * it never waits for a key under construction. */
long kernel_search_tops(const struct stranger *st);
/* Read a stranger_result from fd (a pipe's read end), or give up with
 * -EINTR once c->cancel_fd polls readable; -EIO for anything short. */
long kernel_wait_result(int fd, const struct keyfs_cred *c);

/* ---- threads that finish what a caller gave up waiting for (detach.c) ----
 * A request_key(2) the caller no longer waits for, the reaping of a
 * stranger's child: each runs on a detached thread, which may outlive the
 * backend, so their count is an object of its own, freed by the last of
 * the backend and those threads.  At most KDETACH_MAX run at once, so
 * callers who give up again and again cannot pile up threads and
 * processes in keyfs: past that a caller is waited for as if it had not
 * given up (as a worker thread did before). */
#define KDETACH_MAX	32
struct kdetach {
	atomic_uint refs;	/* the backend's 1, plus 1 a running thread */
};
struct kdetach *kdetach_new(void);
void kdetach_put(struct kdetach *d);
/* Run fn(arg) on a detached thread that takes no signals; fn must end
 * with kdetach_put(d).  0, -EAGAIN when KDETACH_MAX run, or -errno. */
int kdetach_run(struct kdetach *d, void *(*fn)(void *), void *arg);

/* ---- the cache by serial and the key types (key.c) ---- */
struct kkey *kkey_get(struct keyfs_backend *b, kserial_t s);
struct kkey *kkey_make(struct keyfs_backend *b, kserial_t s);
void kkey_free(struct kkey *k);
void kkey_drop(struct keyfs_backend *b, kserial_t s);
void kkey_touch_payload(struct kkey *k);
void kkey_touch_change(struct kkey *k);
int kkey_parent_add(struct kkey *k, kserial_t ring);
void kkey_parent_del(struct kkey *k, kserial_t ring);
int kkey_note(struct kkey *k, const char *type, const char *desc);
/* A dead key's type and description from /proc/keys, where keyctl no
 * longer describes it and keyfs never saw it alive. */
int kkey_learn_dead(struct kkey *k);
void kkey_note_attr(struct kkey *k, uid_t uid, gid_t gid, uint32_t perm);
int kkey_learn(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key, struct kkey **kp);
/* For the mounter, the key as keyfs described it less than cache_timeout
 * ago, where a keyctl read of it comes next; else NULL. */
struct kkey *kkey_recent(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key);
/* kkey_recent's, or kkey_learn. */
int kkey_learn_recent(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, struct kkey **kp);
int kkey_check(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key, unsigned want, unsigned or_want);
struct kkey *kkey_known(struct keyfs_backend *b, const struct keyfs_cred *c,
	kserial_t key);
/* -EFBIG (-EINVAL for a keyring) when len is over the type's limit. */
int ktype_payload_check(const char *type, size_t len);
int kernel_check_new(struct keyfs_backend *b, const char *type,
		     const char *desc);
int kernel_type_info(struct keyfs_backend *b, const char *type,
		     struct key_type_info *out);

/* ---- keyring indexes and listings (keyring.c) ---- */
struct kidx *kidx_new(size_t hint);
void kidx_free(struct kidx *x);
void kring_note_link(struct keyfs_backend *b, kserial_t ring, struct kkey *k);
void kring_note_unknown(struct keyfs_backend *b, kserial_t ring);
void kring_note_cleared(struct keyfs_backend *b, kserial_t ring);
void kring_note_unlink(struct keyfs_backend *b, kserial_t ring, kserial_t s);
/* key's payload read as the caller (size-probe protocol); *buf_alloc is
 * the caller's to wipe and free, NULL when empty. */
int kpayload_read_as(struct keyfs_backend *b, const struct keyfs_cred *c,
		     kserial_t key, void **buf_alloc, size_t *lenp);
int kring_read(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t ring, kserial_t **out, size_t *n);
int kring_index(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t ring, struct kidx **xp);
/* Whether a keyring keyfs saw linking key still does (keyring.c). */
bool kring_still_linked(struct keyfs_backend *b, kserial_t key);
/* ret, or -ENOENT for an EACCES or ENOKEY where kring_still_linked says
 * no: the name the key was reached by is gone. */
int kring_gone_if_unlinked(struct keyfs_backend *b, kserial_t key, int ret);
int kring_index_any(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t ring, struct kidx **xp);
int kernel_list(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t keyring, kserial_t **out_alloc, size_t *n);
int kernel_find(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t keyring, const char *type, const char *desc, kserial_t *out);

/* ---- /proc/keys and /proc/key-users (proc.c) ---- */
void pcache_free(struct pcache *pc);
int kproc_fresh(struct keyfs_backend *b, bool force);
void kproc_peek(struct keyfs_backend *b);
void kproc_stop(struct keyfs_backend *b);
int kproc_maybe_pending(struct keyfs_backend *b, const struct kkey *k);
/* k's state where it may be under construction: KEY_STATE_PENDING while
 * its callout runs, KEY_STATE_NEGATIVE once negated, else
 * KEY_STATE_VALID.  Where it had to look, *pe is k's /proc/keys entry
 * (NULL: none); else *pe is left alone. */
enum key_state kproc_construction(struct keyfs_backend *b,
				  const struct kkey *k, struct pent **pe);
/* -EAGAIN while key is under construction, else 0 (see proc.c). */
int kproc_ready(struct keyfs_backend *b, kserial_t key);
struct pent *kproc_find(struct keyfs_backend *b, kserial_t s);
int kernel_list_all(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t **out_alloc, size_t *n);
int kernel_proc_keys(struct keyfs_backend *b, const struct keyfs_cred *c,
		     char **text_alloc);
int kernel_proc_key_users(struct keyfs_backend *b, const struct keyfs_cred *c,
			  char **text_alloc);
int kernel_quota(struct keyfs_backend *b, const struct keyfs_cred *c,
		 struct key_quota *q);

/* ---- many keys described at once (prefetch.c) ---- */
struct kpre;
/* Make, on helper threads, the keyctl calls that describing keys[0, n)
 * for c with parts (KEY_INFO_*) will make as keyfs: describes, and size
 * probes that cannot wait on a construction.  The answers wait for
 * kpre_describe and kpre_size, until kpre_drop or the next kpre_run;
 * nothing else changes.  Does nothing where there is no other CPU. */
void kpre_run(struct keyfs_backend *b, const struct keyfs_cred *c,
	      const kserial_t *keys, size_t n, unsigned parts);
void kpre_drop(struct keyfs_backend *b);
/* keyctl describe of key as keyfs, once, from kpre_run's answers: 0 with
 * *text_alloc (the caller's to free), -errno as keyctl answered, or 1
 * where kpre_run has no answer. */
int kpre_describe(struct keyfs_backend *b, kserial_t key, char **text_alloc);
/* keyctl read of key with no buffer (the size probe) as keyfs: kpre_run's
 * answer, taken once, or the call made now.  The length or -errno. */
long kpre_size(struct keyfs_backend *b, kserial_t key);
/* Stop the helpers (before a fork, at the end). */
void kpre_stop(struct keyfs_backend *b);

/* ---- request and search (request_key.c) ---- */
int kernel_request(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const char *type, const char *desc, const char *callout, kserial_t dest,
		   kserial_t *out);
int kernel_search(struct keyfs_backend *b, const struct keyfs_cred *c,
		  const char *type, const char *desc, kserial_t *out);

/* ---- the mutating slots (keyctl.c) ---- */
int kernel_add(struct keyfs_backend *b, const struct keyfs_cred *c,
	       const char *type, const char *desc, const void *payload, size_t len,
	       kserial_t keyring, const uint32_t *perm, kserial_t *out);
int kernel_update(struct keyfs_backend *b, const struct keyfs_cred *c,
		  kserial_t key, const void *payload, size_t len);
int kernel_link(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t key, kserial_t keyring);
int kernel_unlink(struct keyfs_backend *b, const struct keyfs_cred *c,
		  kserial_t key, kserial_t keyring);
int kernel_move(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t key, kserial_t from, kserial_t to, unsigned flags);
int kernel_revoke(struct keyfs_backend *b, const struct keyfs_cred *c,
		  kserial_t key);
int kernel_invalidate(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key);
int kernel_clear(struct keyfs_backend *b, const struct keyfs_cred *c,
		 kserial_t keyring);
int kernel_setperm(struct keyfs_backend *b, const struct keyfs_cred *c,
		   kserial_t key, uint32_t perm);
int kernel_chown(struct keyfs_backend *b, const struct keyfs_cred *c,
		 kserial_t key, uid_t uid, gid_t gid);
int kernel_set_timeout(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t key, unsigned secs);
int kernel_restrict(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t keyring, const char *type, const char *restriction);
int kernel_security(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, char **label_alloc);

#endif
