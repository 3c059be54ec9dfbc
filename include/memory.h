/* memory.h: private declarations shared by the memory backend's files. */
#ifndef KEYFS_MEMORY_H
#define KEYFS_MEMORY_H

#include "backend.h"
#include "store.h"

struct mkey;

/* The kernel charges each link in a keyring this many bytes of its owner's
 * quota (KEYQUOTA_LINK_BYTES): a keyring's payload length is 4 * links. */
#define MEM_LINK_BYTES		4

/* The first serial handed out by a fresh store.  Kernel serials are random
 * positive int32s; this one merely looks like one. */
#define MEM_FIRST_SERIAL	0x102a5c31

/* The kernel's defaults when /proc/sys/kernel/keys cannot be read. */
#define MEM_ROOT_MAXKEYS	1000000
#define MEM_ROOT_MAXBYTES	25000000
#define MEM_MAXKEYS		200
#define MEM_MAXBYTES		20000
#define MEM_GC_DELAY		300	/* gc_delay: dead keys linger this long */
#define MEM_PERSISTENT_EXPIRY	259200	/* persistent_keyring_expiry */

/* big_key keeps payloads above about sizeof(struct inode) + sizeof(struct
 * dentry) in a file; /proc/keys says which.  The x86_64 value, roughly. */
#define MEM_BIG_KEY_FILE_THRESHOLD	808

/* A payload checked and copied by a type's preparse before any key is
 * touched, so instantiate and update cannot fail. */
struct mkey_prep {
	unsigned char *data;	/* owned until instantiate/update take it */
	size_t len;
	size_t datalen;		/* what the payload charges the owner's quota */
	struct mring *ring;	/* keyring: its (empty) link table */
};

/*
 * A key type, as the kernel's struct key_type: a const table of operations.
 * A NULL slot means the type does not support that operation.
 */
struct mkey_type {
	const char *name;
	size_t max_payload;	/* bytes; 0: the payload must be empty */
	/* Check a description: 0 or -EINVAL.  NULL: any description. */
	int (*vet_description)(const char *desc);
	/* Check data and copy it into prep: -EINVAL for an empty payload (or a
	 * non-empty one for keyrings), -EFBIG above max_payload, -ENOMEM. */
	int (*preparse)(struct mkey_prep *prep, const void *data, size_t len);
	/* Wipe and free what is left in prep (after instantiate took it, or on
	 * failure). */
	void (*free_preparse)(struct mkey_prep *prep);
	/* Give a new key the payload in prep; cannot fail. */
	void (*instantiate)(struct mkey *key, struct mkey_prep *prep);
	/* Replace the payload with the one in prep; cannot fail.  NULL: the
	 * type cannot be updated (keyctl update answers -EOPNOTSUPP, add_key
	 * makes a new key that displaces the old). */
	void (*update)(struct mkey *key, struct mkey_prep *prep);
	/* Does key match desc?  Direct lookups go through the keyring index,
	 * which calls this on the candidate it hashes to. */
	bool (*match)(const struct mkey *key, const char *desc);
	/* The key was revoked: drop the payload (a keyring drops its links). */
	void (*revoke)(struct keyfs_backend *b, struct mkey *key);
	/* The key is going away: wipe and free the payload. */
	void (*destroy)(struct keyfs_backend *b, struct mkey *key);
	/* The summary /proc/keys shows after the type ("desc: 5"). */
	void (*describe)(const struct mkey *key, char *buf, size_t len);
	/* The payload as keyctl_read gives it; *buf_alloc is malloc'd.  NULL:
	 * unreadable (logon), read answers -EOPNOTSUPP. */
	int (*read)(const struct mkey *key, void **buf_alloc, size_t *len);
	/* Construct a key's payload for request_key(2).  NULL: run the
	 * configured callout program (memory_callout_run), as the kernel runs
	 * /sbin/request-key for types without their own upcall. */
	int (*request_key)(const char *program, const struct mkey_type *type,
			   const char *desc, const char *callout,
			   const struct keyfs_cred *c,
			   unsigned char **payload_alloc, size_t *len);
};

/* A keyring's payload: its links in order, and an index by (type,
 * description) so a lookup does not scan. */
struct mring {
	struct mkey **links;
	size_t nlinks, cap;
	struct mkey **index;	/* open addressing, linear probing; NULL: free */
	size_t icap;		/* a power of two, at least twice nlinks */
	bool restricted;	/* restrict_keyring() without a type: no links */
	char *restrict_type;	/* a restriction this store cannot evaluate */
	char *restriction;	/* (kept from a loaded image): no links either */
};

/* One key.  Keys live in the backend's serial table and are freed when no
 * keyring links them and nothing holds them (the special keyrings are
 * held), as the kernel's garbage collector does. */
struct mkey {
	kserial_t serial;
	const struct mkey_type *type;
	char *desc;
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	bool revoked;
	bool negative;		/* answers -reject_error */
	int reject_error;
	bool in_quota;		/* charged to its owner (not the user keyrings) */
	bool special;		/* held by keyfs: never reaped */
	time_t expiry;		/* absolute; 0: none */
	struct timespec mtime, ctime;
	unsigned char *payload;	/* not keyrings; wiped before free */
	size_t len;
	struct mring *ring;	/* keyrings only */
	size_t datalen;		/* the payload's quota charge (kernel: datalen) */
	size_t charged;		/* bytes currently charged to the owner */

	struct mkey **parents;	/* the keyrings linking it, unordered */
	size_t nparents, pcap;

	struct mkey *hnext;	/* serial table chain */
	struct mkey *dead_next;	/* reap list */
	bool on_dead;
	struct mkey *qnext;	/* traversal queue */
	unsigned long walk_stamp;	/* marks of the backend's traversals */
	unsigned long poss_stamp;	/* possessed in the current op */
	int walk_depth;
};

/* memory-types.c */
extern const struct mkey_type mtype_keyring;
/* The type of that name, or NULL (callers answer -ENODEV or -ENOKEY). */
const struct mkey_type *mtype_lookup(const char *name);

/* Room for one more link in keyring and one more parent in child, so that
 * mring_link cannot fail.  0 or -ENOMEM. */
int mring_reserve(struct mkey *keyring, struct mkey *child);
/* The key linked in keyring with this type and description, or NULL. */
struct mkey *mring_find(const struct mkey *keyring,
			const struct mkey_type *type, const char *desc);
/* Link child (after mring_reserve); a key of the same type and description
 * is displaced and returned (the caller drops it with mem_key_unref), else
 * NULL.  Linking a key already linked changes nothing. */
struct mkey *mring_link(struct mkey *keyring, struct mkey *child);
/* Remove child's link; false when keyring does not link it.  The caller
 * drops child with mem_key_unref. */
bool mring_unlink(struct mkey *keyring, struct mkey *child);
/* Drop every link (each child through mem_key_unref). */
void mring_clear(struct keyfs_backend *b, struct mkey *keyring);
struct mring *mring_alloc(void);
void mring_free(struct mring *r);

/* backend-memory.c, for the types and the request code */
/* A key lost a link: reap it at the end of the operation if nothing links
 * or holds it any more. */
void mem_key_unref(struct keyfs_backend *b, struct mkey *key);
/* Keep the owner's quota in step with key->datalen. */
void mem_charge_sync(struct keyfs_backend *b, struct mkey *key);

/* lookup flags, as lookup_user_key()'s */
#define MEM_LOOKUP_CREATE	0x1	/* create @p on demand */
#define MEM_LOOKUP_PARTIAL	0x2	/* negative keys pass */
/* want: KEYFS_PERM_* bits, or this to check the state but not the perm */
#define MEM_NEED_DEFER		0x100

/* Start an operation: collect what the kernel's garbage collector would
 * have by now. */
void mem_begin(struct keyfs_backend *b);
/* End an operation that changed the model: reap unreferenced keys, then,
 * with a store, save; if saving fails the model goes back to what the
 * store holds and the save's -errno is returned. */
int mem_commit(struct keyfs_backend *b);
/* End an operation that failed after mem_begin: reap, nothing saved; the
 * model may have changed, so possession is worked out again. */
void mem_end(struct keyfs_backend *b);
/* End an operation that only looked (describe, read, list, find, search):
 * it changed nothing that possession depends on. */
void mem_end_read(struct keyfs_backend *b);
/* lookup_user_key(): find id (a serial or a KEYFS_SPEC_*), check its state
 * (unless MEM_LOOKUP_PARTIAL lets a negative key pass) and want. */
int mem_lookup(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t id, unsigned flags, unsigned want, struct mkey **out);
/* Does the caller possess key? */
bool mem_possessed(struct keyfs_backend *b, const struct keyfs_cred *c,
		   struct mkey *key);
int mem_key_perm(struct keyfs_backend *b, const struct keyfs_cred *c,
		 struct mkey *key, unsigned want);
/* search_process_keyrings(): the process, then the session keyring, as
 * request_key(2) searches them.  -EAGAIN when nothing was found and
 * nothing else went wrong (revoked: -EKEYREVOKED, negative: -ENOKEY, no
 * permission: -EACCES). */
int mem_search_process(struct keyfs_backend *b, const struct keyfs_cred *c,
		       const struct mkey_type *type, const char *desc,
		       struct mkey **out);
/* Checks and memory for linking key into keyring: -ENOTDIR, -EDQUOT,
 * -EPERM (restricted), -EDEADLK, -ELOOP, -ENOMEM. */
int mem_link_prepare(struct keyfs_backend *b, struct mkey *keyring,
		     struct mkey *key);
/* Link after mem_link_prepare; cannot fail. */
void mem_link_commit(struct keyfs_backend *b, struct mkey *keyring,
		     struct mkey *key);
/* The type of that name: -EINVAL for a name empty or too long, -EPERM
 * for the kernel's own (".name"), unknown (what add_key answers: -ENODEV,
 * request_key: -ENOKEY) when there is none. */
int mem_check_type(const char *type, int unknown,
		   const struct mkey_type **out);
/* A description a new key of type t may have: -EINVAL when empty, too
 * long or refused by the type, -EPERM for a keyring named ".name". */
int mem_check_desc(const struct mkey_type *t, const char *desc);
/* A new key owned by c, not linked yet (drop it with mem_key_unref if it
 * is not linked after all); its payload taken from prep, or negative
 * (ENOKEY for KEYFS_NEGATIVE_TIMEOUT seconds) when prep is NULL.  The
 * quota check counts the link into dest too when dest is c's and the link
 * will be new.  -EDQUOT, -ENOSPC, -ENOMEM. */
int mem_key_create(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const struct mkey_type *type, const char *desc,
		   struct mkey_prep *prep, struct mkey *dest,
		   struct mkey **out);
/* Would one more key for uid, of desc and datalen, plus a new link in
 * dest (when dest is uid's and links no such key yet), pass the quota?
 * 0 or -EDQUOT. */
int mem_key_quota(struct keyfs_backend *b, uid_t uid, const char *desc,
		  size_t datalen, struct mkey *dest,
		  const struct mkey_type *type);
/* The program configured as request_key=, or NULL. */
const char *mem_callout_program(struct keyfs_backend *b);

/* memory-request.c */
/* Run program TYPE DESC CALLOUT UID GID (no shell, stdin /dev/null, stderr
 * inherited, killed after MEM_CALLOUT_TIMEOUT seconds); its stdout, up to
 * type->max_payload bytes, is the payload.  0 when it exits 0 in time with
 * no more output than that; *payload_alloc is malloc'd (NULL when empty),
 * the caller wipes it. */
#define MEM_CALLOUT_TIMEOUT	30
int memory_callout_run(const char *program, const struct mkey_type *type,
		       const char *desc, const char *callout,
		       const struct keyfs_cred *c,
		       unsigned char **payload_alloc, size_t *len);
int memory_request(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const char *type, const char *desc, const char *callout,
		   kserial_t dest, kserial_t *out);
int memory_search(struct keyfs_backend *b, const struct keyfs_cred *c,
		  const char *type, const char *desc, kserial_t *out);

#endif
