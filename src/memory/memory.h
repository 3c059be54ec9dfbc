/* memory.h: private declarations shared by the memory backend's files. */
#ifndef KEYFS_MEMORY_H
#define KEYFS_MEMORY_H

#include <string.h>
#include <time.h>

#include "backend.h"
#include "perm.h"
#include "store.h"
#include "timens.h"

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

/* Perm bits for the possessor and the owner (KEY_POS_*, KEY_USR_*). */
#define POS(bits)	((uint32_t)(bits) << KEYFS_POS_SHIFT)
#define USR(bits)	((uint32_t)(bits) << KEYFS_USR_SHIFT)

/* The perm bits a key can have (KEY_POS_ALL | KEY_USR_ALL | ...). */
#define MEM_PERM_VALID		0x3f3f3f3fu

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
	uint32_t perm;		/* a new key's permission (key_alloc's) */
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
	int (*request_key)(const char *program, unsigned timeout,
			   const struct mkey_type *type,
			   const char *desc, const char *callout,
			   const struct keyfs_cred *c,
			   unsigned char **payload_alloc, size_t *len);
};

/* A keyring's payload: its links in order, and an index by (type,
 * description) so a lookup does not scan.  An unlink leaves a hole (NULL)
 * where the link was, so that it costs the same in any keyring; the holes
 * are squeezed out once they outnumber the links (mring_for_each skips
 * them). */
struct mring {
	struct mkey **links;	/* links[0, nslots): keys and holes */
	size_t nslots, cap;
	size_t nlinks;		/* the keys among them: the payload's size */
	/* The keyrings among the links, in link order, as their places in
	 * links: what a search or a cycle check walks into, without a pass
	 * over every key.  A keyring's unlink leaves its place here pointing
	 * at the hole in links (mring_for_each_ring skips it), so that it
	 * costs the same among any number of keyrings; such places are
	 * dropped once they outnumber the keyrings, and squeezing links
	 * renumbers them. */
	uint32_t *rings;
	size_t nrings, rcap;	/* places, those of holes among them */
	size_t nkeyrings;	/* the directory's link count, kept, not counted */
	uint32_t *index;	/* open addressing, linear probing: a link's
				 * position in links + 1; 0: free */
	size_t icap;		/* a power of two, at least twice nlinks */
	/* The holes among links by slot, a Fenwick tree over cap slots, for
	 * a link's position with the holes not counted (what a store's
	 * journal records, mring_position): made at the first question,
	 * kept by link and unlink, dropped where the slots are renumbered
	 * or reallocated.  NULL without a store. */
	uint32_t *holes;
	size_t hcap;
	bool restricted;	/* restrict_keyring() without a type: no links */
	char *restrict_type;	/* a restriction this store cannot evaluate */
	char *restriction;	/* (kept from a loaded image): no links either */
};

/* One key.  Keys live in the backend's serial table and are freed when no
 * keyring links them and nothing holds them (the special keyrings are
 * held), as the kernel's garbage collector does. */
struct mkey {
	kserial_t serial;
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	const struct mkey_type *type;
	time_t expiry;		/* absolute; 0: none */
	int64_t mtime_ns, ctime_ns;	/* nanoseconds since the epoch (timens.h) */
	unsigned char *payload;	/* not keyrings; wiped before free */
	uint32_t len;
	uint32_t datalen;	/* the payload's quota charge (kernel: datalen) */
	uint32_t charged;	/* bytes currently charged to the owner */
	int16_t reject_error;	/* negative: the errno it answers */
	int8_t walk_depth;	/* marks of the backend's traversals */
	bool revoked:1;
	bool negative:1;	/* answers -reject_error */
	bool in_quota:1;	/* charged to its owner (not the user keyrings) */
	bool special:1;		/* held by keyfs: never reaped */
	bool stored:1;		/* with a store: the store holds it */
	bool tracked:1;		/* with a store: changed since the last save */
	bool on_dead:1;
	bool par_many:1;	/* the parents are in par.many (else par.one) */
	struct mring *ring;	/* keyrings only */

	/* The keyrings linking it, unordered (mkey_parents).  Most keys
	 * have one parent, so until a second one it is held in place (one):
	 * a key costs no second allocation.  par.many's room is not kept: it
	 * is the power of two at or above nparents (2 at least), or more
	 * after unlinks, and grows when nparents reaches it (types.c). */
	union {
		struct mkey *one;
		struct mkey **many;
	} par;
	uint32_t nparents;
	uint32_t walk_stamp;	/* marks of the backend's traversals (mem_stamp) */

	struct mkey *hnext;	/* serial table chain */
	struct mkey *dead_next;	/* reap list */
	struct mkey *qnext;	/* traversal queue */
	unsigned track_idx;	/* tracked: its entry in the backend's track */
	uint32_t gc_slot;	/* its place in the gc queue + 1; 0: not queued */
	/* Allocated with the key (mem_key_alloc): a key's description never
	 * changes, and one block per key keeps the model small (issue 10). */
	char desc[];
};

/* With a store: one key changed since the last save, as it was then, so
 * that the save writes only what changed and a failed save is undone
 * without a copy of the whole model (track.c). */
struct mtrack {
	struct mkey *key;	/* NULL once reaped */
	kserial_t serial;
	bool existed;		/* the model had it at the last save: old */
	bool was_stored;	/* the store holds it */
	bool now_stored;	/* the save's verdict */
	bool full;		/* old.links holds the old links; else log */
	struct store_key old;	/* existed: as it was */
	struct store_link_change *log;	/* keyrings: link changes since */
	size_t nlog, logcap;
};

/* One key owner's usage, as the kernel's struct key_user. */
struct muser {
	uid_t uid;
	unsigned long nkeys;	/* keys owned */
	unsigned long nikeys;	/* of which instantiated (all, here) */
	unsigned long qnkeys;	/* keys charged to the quota */
	unsigned long qnbytes;	/* bytes charged to the quota */
};

/* The memory backend (opaque outside these files): image.c builds and
 * swaps its model, proc.c reads the owners' accounts. */
struct keyfs_backend {
	const char *store;		/* owned by the caller */
	const char *request_key;	/* owned by the caller */
	unsigned request_timeout;	/* seconds a callout may run */
	void (*unlock)(void *), (*relock)(void *);	/* backend_config's */
	void *lock_arg;
	uid_t uid;			/* the mounter */
	gid_t gid;

	/* the model: swapped whole when a failed save is undone */
	struct mkey **table;		/* by serial, chained; tcap a power of 2 */
	size_t tcap, nkeys;
	kserial_t next_serial;
	struct mkey *session, *user, *user_session, *process, *persistent;
	struct muser *users;
	size_t nusers, ucap;
	/* the keys with an expiry, a heap by gc due time (gcq.c) */
	struct mem_gc_due *gcq;
	size_t ngcq, gcqcap;
	bool gcq_lost;			/* a key could not be queued: look at all */
	struct mkey *dead;		/* keys to reap at the end of the op */

	unsigned long maxkeys, maxbytes, root_maxkeys, root_maxbytes;
	unsigned gc_delay, persistent_expiry;

	uint32_t stamp;			/* counts traversals (mem_stamp) */

	struct store_file *sf;		/* with a store: its journal */
	bool tracking;			/* sf, and the model is loaded */
	struct mtrack *track;		/* keys changed since the last save */
	size_t ntrack, trackcap;
	bool track_oom;			/* a change could not be tracked */
	unsigned batching;		/* open batch_begins: save at the last batch_end */
	kserial_t file_special[4];	/* the special keyrings it holds */
	kserial_t saved_process;	/* the process keyring at that save */
	const struct crypto_key *store_key;	/* owned by the caller */
};

/*
 * The files, from the bottom up; a file calls only those above it in this
 * list, never one below it (except through a struct mkey_type's slots):
 *   types.c, track.c, gcq.c, key.c, keyring.c, gc.c, permission.c, image.c,
 *   commit.c,
 *   process_keys.c, then on top keyctl.c, request_key.c, proc.c, memory.c.
 */

/* ---- small helpers every file uses ---- */

static inline bool mem_key_expired(const struct mkey *k, time_t now)
{
	return k->expiry && now >= k->expiry;
}

/* A key lost a link: reap it at the end of the operation if nothing links
 * or holds it any more.  Here, not in key.c, because the keyring's link
 * table (types.c, below key.c) drops links too. */
static inline void mem_key_unref(struct keyfs_backend *b, struct mkey *key)
{
	if (key->nparents || key->special || key->on_dead)
		return;
	key->on_dead = true;
	key->dead_next = b->dead;
	b->dead = key;
}

/* Does c hold search permission on k (possessed as said)?  Both the
 * possession walk (permission.c) and the search (keyring.c) ask. */
static inline bool mem_search_ok(const struct keyfs_cred *c,
				 const struct mkey *k, bool possessed)
{
	return perm_check(c, k->uid, k->gid, k->perm, possessed,
			  KEYFS_PERM_SEARCH) == 0;
}

/* ---- types.c: the key types and the keyring's link table ---- */
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
/* k's position among keyring's links, the holes not counted (as in a
 * store's copy of the links), or nlinks where keyring does not link k.
 * O(log n) after the first question (see struct mring). */
size_t mring_position(struct mkey *keyring, const struct mkey *k);
/* Write the serials r links, in order, to out (room for r->nlinks). */
void mring_serials(const struct mring *r, kserial_t *out);
/* For each key k that r links, in link order: the holes are skipped.  The
 * body may not link or unlink in r. */
#define mring_for_each(r, i, k)					\
	for (size_t i = 0; i < (r)->nslots; i++)		\
		if (((k) = (r)->links[i]) == NULL) {} else
/* For each keyring k that r links, in link order.  The body may not link
 * or unlink in r. */
#define mring_for_each_ring(r, i, k)				\
	for (size_t i = 0; i < (r)->nrings; i++)		\
		if (((k) = (r)->links[(r)->rings[i]]) == NULL) {} else
struct mring *mring_alloc(void);
void mring_free(struct mring *r);


static inline bool mem_is_keyring(const struct mkey *k)
{
	return k->type == &mtype_keyring;
}

/* ---- track.c: with a store, what changed since the last save ----
 * Each is called before the change it names, and costs nothing without a
 * store (b->tracking false).  A failure to track (memory) is kept in
 * b->track_oom: the next save then fails and is undone. */

/* k as the store writes it (with links: a keyring's links too).  0 or
 * -ENOMEM; on failure sk holds part of it: store_key_free it. */
int mem_key_image(const struct mkey *k, struct store_key *sk, bool links);
/* k's fields (not its links) are about to change. */
void mem_track(struct keyfs_backend *b, struct mkey *k);
/* k was just made (registered). */
void mem_track_new(struct keyfs_backend *b, struct mkey *k);
/* child is about to be linked into keyring, displacing old (or NULL). */
void mem_track_link(struct keyfs_backend *b, struct mkey *keyring,
		    struct mkey *child, struct mkey *old);
/* child is about to be unlinked from keyring. */
void mem_track_unlink(struct keyfs_backend *b, struct mkey *keyring,
		      struct mkey *child);
/* keyring is about to drop every link (clear, revoke, reap). */
void mem_track_clear(struct keyfs_backend *b, struct mkey *keyring);
/* k is about to be freed. */
void mem_track_gone(struct keyfs_backend *b, struct mkey *k);
/* Forget every entry (after a save, or an undo); keys keep their stored
 * flag as set by the caller. */
void mem_track_forget(struct keyfs_backend *b);

/* ---- gcq.c: the keys with an expiry, by gc due time ---- */

/* An entry of the queue (a binary heap: no entry is due before its
 * parent); the key knows its place (gc_slot). */
struct mem_gc_due {
	time_t due;
	struct mkey *k;
};

/* k's expiry is new (or k is): the gc must look at it by expiry +
 * gc_delay (expiry 0: never).  Every change of an expiry calls it. */
void mem_gc_schedule(struct keyfs_backend *b, struct mkey *k);
/* k leaves the queue (it is freed, or is being collected). */
void mem_gc_unqueue(struct keyfs_backend *b, struct mkey *k);
/* A key whose gc is due by now, taken off the queue; else NULL. */
struct mkey *mem_gc_next(struct keyfs_backend *b, time_t now);
/* Free the queue, with the rest of a model (its keys are being freed). */
void mem_gc_queue_free(struct keyfs_backend *b);

/* ---- key.c: the serial table, owners and quotas, keys' lives ---- */

/* The key with this serial, or NULL. */
struct mkey *mem_key_get(const struct keyfs_backend *b, kserial_t serial);
/* Every key, by increasing serial, for output that must not depend on the
 * table's order; *out_alloc is malloc'd.  0 or -ENOMEM. */
int mem_keys_sorted(const struct keyfs_backend *b, struct mkey ***out_alloc);
/* Room for one more key, so that mem_key_register cannot fail.  0 or
 * -ENOMEM. */
int mem_table_reserve(struct keyfs_backend *b);
/* uid's accounts, or NULL when it has none yet. */
struct muser *mem_user_find(const struct keyfs_backend *b, uid_t uid);
/* uid's accounts, made empty when it has none, so that mem_key_register
 * cannot fail.  0 or -ENOMEM. */
int mem_user_get(struct keyfs_backend *b, uid_t uid, struct muser **out);
/* uid's maxkeys and maxbytes: root has its own, as in the kernel. */
void mem_quota_limits(const struct keyfs_backend *b, uid_t uid,
		      unsigned long *maxkeys, unsigned long *maxbytes);
/* Would uid stay within its quota with dkeys more keys and dbytes more
 * bytes?  0 or -EDQUOT. */
int mem_quota_room(const struct keyfs_backend *b, uid_t uid, long dkeys,
		   long dbytes);
/* Keep the owner's quota in step with key->datalen. */
void mem_charge_sync(struct keyfs_backend *b, struct mkey *key);
/* The limits and gc delays of /proc/sys/kernel/keys, or the kernel's
 * defaults. */
void mem_limits_read(struct keyfs_backend *b);
/* A new key of no one's, not yet in the table (free it with mem_key_free
 * until mem_key_register), or NULL. */
struct mkey *mem_key_alloc(const struct mkey_type *type, const char *desc);

/* The keyrings linking k (k->nparents of them). */
static inline struct mkey **mkey_parents(const struct mkey *k)
{
	/* the key is const to its readers; its parents are not */
	return k->par_many ? k->par.many : (struct mkey **)&k->par.one;
}

/* A new traversal's mark: keys whose walk_stamp equals it were reached by
 * this traversal.  After 2^32 traversals every mark is cleared. */
uint32_t mem_stamp(struct keyfs_backend *b);
/* Free a key no table, keyring or owner knows of; its payload is the
 * type's to destroy first. */
void mem_key_free(struct mkey *k);
/* Enter a key in the table (from now on mem_reap frees it) and its owner's
 * accounts; the table and the owner were reserved (mem_table_reserve,
 * mem_user_get). */
void mem_key_register(struct keyfs_backend *b, struct mkey *k);
/* Free every key nothing links or holds any more; a keyring freed drops
 * its links, which may free more (the list grows while we walk it). */
void mem_reap(struct keyfs_backend *b);
/* The key changed: its ctime, and with payload its mtime too. */
void mem_key_touch(struct mkey *k, bool payload);
/* The type of that name: -EINVAL for a name empty or too long, -EPERM
 * for the kernel's own (".name"), unknown (what add_key answers: -ENODEV,
 * request_key: -ENOKEY) when there is none. */
int mem_check_type(const char *type, int unknown,
		   const struct mkey_type **out);
/* A description a new key of type t may have: -EINVAL when empty, too
 * long or refused by the type, -EPERM for a keyring named ".name". */
int mem_check_desc(const struct mkey_type *t, const char *desc);
/* A new key with a fresh serial, owned by uid/gid, with perm and the
 * times set, the table and uid's accounts reserved: the caller sets the
 * rest, instantiates and mem_key_register()s it.  -ENOSPC, -ENOMEM. */
int mem_key_new(struct keyfs_backend *b, const struct mkey_type *type,
		const char *desc, uid_t uid, gid_t gid, uint32_t perm,
		struct mkey **out);
/* Would one more key for uid, of desc and datalen, plus a new link in
 * dest (when dest is uid's and links no such key yet), pass the quota?
 * 0 or -EDQUOT. */
int mem_key_quota(struct keyfs_backend *b, uid_t uid, const char *desc,
		  size_t datalen, struct mkey *dest,
		  const struct mkey_type *type);
/* A new key owned by c with its type's permission, not linked yet (drop
 * it with mem_key_unref if it is not linked after all); its payload taken
 * from prep, or negative (ENOKEY for KEYFS_NEGATIVE_TIMEOUT seconds) when
 * prep is NULL.  The quota check counts the link into dest too when dest
 * is c's and the link will be new.  -EDQUOT, -ENOSPC, -ENOMEM. */
int mem_key_create(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const struct mkey_type *type, const char *desc,
		   struct mkey_prep *prep, struct mkey *dest,
		   struct mkey **out);
/* The program configured as request_key=, or NULL. */
const char *mem_callout_program(struct keyfs_backend *b);

/* ---- keyring.c: links, cycles, restrictions, search ---- */

/* Remove key's link from keyring, if there is one, and drop the key. */
void mem_unlink_one(struct keyfs_backend *b, struct mkey *keyring,
		    struct mkey *key);
/* Unlink key from every keyring at once (invalidation, gc). */
void mem_unlink_all(struct keyfs_backend *b, struct mkey *key);
/* -EPERM when keyring refuses new links (restrict_keyring), else 0. */
int mem_restriction_check(const struct mkey *keyring);
/* Checks and memory for linking key into keyring: -ENOTDIR, -EDQUOT,
 * -EPERM (restricted), -EDEADLK, -ELOOP, -ENOMEM. */
int mem_link_prepare(struct keyfs_backend *b, struct mkey *keyring,
		     struct mkey *key);
/* Link after mem_link_prepare; cannot fail. */
void mem_link_commit(struct keyfs_backend *b, struct mkey *keyring,
		     struct mkey *key);
/* search_process_keyrings(): the process, then the session keyring, as
 * request_key(2) searches them.  -EAGAIN when nothing was found and
 * nothing else went wrong (revoked: -EKEYREVOKED, negative: -ENOKEY, no
 * permission: -EACCES). */
int mem_search_process(struct keyfs_backend *b, const struct keyfs_cred *c,
		       const struct mkey_type *type, const char *desc,
		       struct mkey **out);

/* ---- gc.c ---- */

/* The kernel's gc, when one is due: keys expired or revoked gc_delay
 * seconds ago are unlinked everywhere and reaped. */
void mem_gc(struct keyfs_backend *b);

/* ---- permission.c: possession, permission, key state ---- */

/* Does the caller possess key? */
bool mem_possessed(struct keyfs_backend *b, const struct keyfs_cred *c,
		   struct mkey *key);
/* 0 when c is granted want (KEYFS_PERM_* bits) on key, else -EACCES. */
int mem_key_perm(struct keyfs_backend *b, const struct keyfs_cred *c,
		 struct mkey *key, unsigned want);
/* key_validate(): -EKEYREVOKED, -EKEYEXPIRED, or (unless partial) a
 * negative key's error; else 0. */
int mem_key_validate(const struct mkey *k, bool partial);
/* The keys c may view, by increasing serial: *n of them in *out_alloc
 * (malloc'd).  0 or -ENOMEM. */
int mem_viewable_keys(struct keyfs_backend *b, const struct keyfs_cred *c,
		      struct mkey ***out_alloc, size_t *n);

/* ---- image.c: the model as a store image and back ---- */
/* The whole model as an image, keys by serial, for the store; img is the
 * caller's to store_image_free (on failure it is freed here).  The process
 * keyring is kept as an ordinary keyring: at the next start it is gone
 * unless some other keyring links it, as when the kernel's process exits.
 * 0 or -ENOMEM. */
int mem_image_build(struct keyfs_backend *b, struct store_image *img);
/* Build the model from img into b (empty); process names the keyring to
 * hold as the process keyring (when undoing a failed save), or 0.  img is
 * whole as store.h says (from store_json_load or mem_image_build): that is
 * not checked again.  An image this model cannot hold (an unknown type, a
 * description or payload the type refuses) is -EINVAL, said in err;
 * -ENOMEM.  On failure b holds part of the model: mem_model_free it. */
int mem_model_load(struct keyfs_backend *b, const struct store_image *img,
		   kserial_t process, char *err, size_t errlen);
/* Free every key and owner of the model, leaving it empty; not the
 * backend itself, nor its snap. */
void mem_model_free(struct keyfs_backend *b);
/* Go back to what the store holds, after a failed save: the model now
 * with every tracked key as it was at the last save (b->track).  Serials
 * stay unused.  On failure (-ENOMEM) the model stays as it is (ahead of
 * the store). */
int mem_model_revert(struct keyfs_backend *b);
/* Say which keys the store holds (those the special keyrings other than
 * the process keyring reach) and which special keyrings, as of now: after
 * a load, a snapshot, an undo.  O(keys). */
void mem_stored_reset(struct keyfs_backend *b);

/* ---- commit.c: the frame of an operation ---- */

/* Start an operation: collect what the kernel's garbage collector would
 * have by now. */
void mem_begin(struct keyfs_backend *b);
/* End an operation that changed the model: reap unreferenced keys, then,
 * with a store, save; if saving fails the model goes back to what the
 * store holds and the save's -errno is returned. */
int mem_commit(struct keyfs_backend *b);
/* The ops' batch_begin/batch_end (backend.h). */
void mem_batch_begin(struct keyfs_backend *b);
int mem_batch_end(struct keyfs_backend *b);
/* With a store: load it (snapshot, then journal) into the model; once the
 * model is whole, take its image as what the store holds (and write it
 * when created says the special keyrings are new); close it, with flush
 * (a clean unmount) writing the snapshot if the journal has records. */
int mem_store_open(struct keyfs_backend *b, char *err, size_t errlen);
int mem_store_save(struct keyfs_backend *b, bool created);
void mem_store_close(struct keyfs_backend *b, bool flush);
/* End an operation that failed after mem_begin: reap, nothing saved. */
void mem_end(struct keyfs_backend *b);
/* End an operation that only looked (describe, read, list, find, search):
 * the same as mem_end (possession is kept nowhere, so neither has anything
 * to forget); a separate name so a reader sees which operations change. */
void mem_end_read(struct keyfs_backend *b);

/* ---- process_keys.c: the special keyrings, lookup by id ---- */

/* lookup flags, as lookup_user_key()'s */
#define MEM_LOOKUP_CREATE	0x1	/* create @p on demand */
#define MEM_LOOKUP_PARTIAL	0x2	/* negative keys pass */
/* want: KEYFS_PERM_* bits, or this to check the state but not the perm */
#define MEM_NEED_DEFER		0x100

/* Create the special keyrings the store does not have yet, as a login
 * would; *created says whether anything was made.  0 or -errno. */
int mem_specials_create(struct keyfs_backend *b, bool *created);
/* lookup_user_key(): find id (a serial or a KEYFS_SPEC_*), check its state
 * (unless MEM_LOOKUP_PARTIAL lets a negative key pass) and want. */
int mem_lookup(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t id, unsigned flags, unsigned want, struct mkey **out);
/* mem_lookup, and the key must be a keyring: else -ENOTDIR. */
int mem_lookup_keyring(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t id, unsigned flags, unsigned want,
		       struct mkey **out);
/* The ops table's special and persistent slots (backend.h). */
int mem_special(struct keyfs_backend *b, const struct keyfs_cred *c,
		int which, bool create, kserial_t *out);
int mem_persistent(struct keyfs_backend *b, const struct keyfs_cred *c,
		   kserial_t *out);

/* ---- keyctl.c: the ops table's mutating slots (backend.h) ---- */

int mem_add(struct keyfs_backend *b, const struct keyfs_cred *c,
	    const char *type, const char *desc, const void *payload,
	    size_t len, kserial_t keyring, const uint32_t *perm,
	    kserial_t *out);
int mem_check_new(struct keyfs_backend *b, const char *type,
		  const char *desc);
int mem_update(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key, const void *payload, size_t len);
int mem_link(struct keyfs_backend *b, const struct keyfs_cred *c,
	     kserial_t key, kserial_t keyring);
int mem_unlink(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key, kserial_t keyring);
int mem_move(struct keyfs_backend *b, const struct keyfs_cred *c,
	     kserial_t key, kserial_t from, kserial_t to, unsigned flags);
int mem_revoke(struct keyfs_backend *b, const struct keyfs_cred *c,
	       kserial_t key);
int mem_invalidate(struct keyfs_backend *b, const struct keyfs_cred *c,
		   kserial_t key);
int mem_clear(struct keyfs_backend *b, const struct keyfs_cred *c,
	      kserial_t keyring);
int mem_setperm(struct keyfs_backend *b, const struct keyfs_cred *c,
		kserial_t key, uint32_t perm);
int mem_chown(struct keyfs_backend *b, const struct keyfs_cred *c,
	      kserial_t key, uid_t uid, gid_t gid);
int mem_set_timeout(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, unsigned secs);
int mem_restrict(struct keyfs_backend *b, const struct keyfs_cred *c,
		 kserial_t keyring, const char *type, const char *restriction);

/* ---- request_key.c: request_key(2) and its callout ---- */

/* Run program TYPE DESC CALLOUT UID GID (no shell, stdin /dev/null, stderr
 * inherited) in a process group of its own; its stdout, up to
 * type->max_payload bytes, is the payload.  0 when it exits 0 within
 * timeout seconds with no more output than that; *payload_alloc is
 * malloc'd (NULL when empty), the caller wipes it.  Once the program has
 * exited, or at the timeout, its whole process group is killed: what it
 * left running cannot outlive the request; so it is when c->cancel_fd
 * polls readable first, and then the answer is -EINTR.  Touches no
 * backend state, so it runs with the upper layer's lock released. */
#define MEM_CALLOUT_TIMEOUT	30	/* the default of request_timeout= */
int memory_callout_run(const char *program, unsigned timeout,
		       const struct mkey_type *type,
		       const char *desc, const char *callout,
		       const struct keyfs_cred *c,
		       unsigned char **payload_alloc, size_t *len);
int memory_request(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const char *type, const char *desc, const char *callout,
		   kserial_t dest, kserial_t *out);
int memory_search(struct keyfs_backend *b, const struct keyfs_cred *c,
		  const char *type, const char *desc, kserial_t *out);

/* ---- proc.c: the ops table's texts (backend.h) ----
 * Built here so the model code stays free of formatting; *text_alloc is
 * malloc'd.  0, -ENOMEM or -EINVAL. */
/* /proc/keys: the keys c may view, by serial. */
int mem_proc_keys(struct keyfs_backend *b, const struct keyfs_cred *c,
		  char **text_alloc);
/* /proc/key-users: every owner of keys, as the kernel lists them all. */
int mem_proc_key_users(struct keyfs_backend *b,
		       const struct keyfs_cred *c, char **text_alloc);
/* `keyctl supports`: what this backend implements. */
int mem_supports(struct keyfs_backend *b, char **text_alloc);

#endif
