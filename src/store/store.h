/* store.h: the memory backend's keys as a plain image, the JSON file that keeps it, and its lock; for the memory backend only. */
#ifndef KEYFS_STORE_H
#define KEYFS_STORE_H

#include <sys/types.h>

#include "keyfs.h"

/* One key.  Strings and arrays are malloc'd and owned by the image. */
struct store_key {
	kserial_t serial;
	char *type;
	char *desc;
	uid_t uid;
	gid_t gid;
	uint32_t perm;
	enum key_state state;	/* never KEY_STATE_PENDING */
	int64_t expiry;		/* absolute, seconds since the epoch; 0: none */
	struct timespec mtime, ctime;
	unsigned char *payload;	/* not for keyrings; wiped before free */
	size_t len;
	kserial_t *links;	/* keyrings: the keys linked, in order */
	size_t nlinks;
	char *restrict_type;	/* keyrings: restrict_keyring(2), or NULL */
	char *restriction;	/* or NULL */
	bool restricted;	/* restrict_keyring with no type: nothing links */
	bool unsaved;		/* in memory only (the process keyring and what
				 * only it links): never written, never loaded */
};

/* The whole store.  Special keyrings are serials of keys in keys[] (0 when
 * not yet created); the process keyring is never kept, it dies with keyfs. */
struct store_image {
	kserial_t next_serial;	/* the next serial to hand out */
	kserial_t session;
	kserial_t user;
	kserial_t user_session;
	kserial_t persistent;
	kserial_t process;	/* in memory only: never written, never loaded */
	struct store_key *keys;
	size_t nkeys;
};

#define STORE_FORMAT_VERSION 1

/* Load path into img.  A missing file gives an empty image and 0.  A file
 * that cannot be read, is not JSON, has another format version, or is not
 * consistent (a link to a serial that is not there, two keys with one
 * serial, a keyring that links itself or another keyring that links back,
 * a bad state name or base64) gives -errno (EIO, EINVAL, ...) and one line
 * in err naming the file (and line and column for JSON errors); the file
 * is not touched.  So an image it gives is whole: every serial once and
 * positive, every link and special keyring to a key in it, each keyring's
 * (type, description) pairs once, keyrings in no cycle, nothing pending. */
int store_json_load(const char *path, struct store_image *img,
		    char *err, size_t errlen);

/* Write img to path atomically: a temporary file in the same directory
 * created with O_EXCL and mode 0600, fsync, rename, fsync of the directory.
 * An image load would refuse (see above) is -EINVAL and not written.  On
 * failure the old file is left as it was and -errno is returned. */
int store_json_save(const char *path, const struct store_image *img);

/* Would a and b write the same keys (in the same order) and special
 * keyrings?  next_serial is not compared: a file behind on it only hands
 * out serials that no kept key has.  Keys in memory only do not count. */
bool store_image_same_file(const struct store_image *a,
			   const struct store_image *b);

/* lock.c.  The lock file is PATH STORE_LOCK_SUFFIX. */
#define STORE_LOCK_SUFFIX	".lock"

/* Take the store at path for this process (and the children it forks):
 * flock(2) on the lock file beside it, made 0600 if missing, which then
 * holds our pid.  *fd_out is the lock (close-on-exec); store_unlock drops
 * it.  In a directory that cannot be written and has no lock file, nothing
 * can change the store: 0 with *fd_out = -1.  -EBUSY when another keyfs
 * holds it (and is not closing: see store_lock_closing); err then says so
 * in one line naming path and the holder's pid. */
int store_lock(const char *path, int *fd_out, char *err, size_t errlen);
/* Write the caller's pid in the lock file (once daemonised).  0 or -errno. */
int store_lock_mark(int fd);
/* Say in the lock file that its holder is closing (unmounted, writing its
 * last snapshot): store_lock then waits for it, up to 30 s, where it
 * refuses a holder that still serves a mount.  fd < 0 is nothing. */
int store_lock_closing(int fd);
/* Remove the lock file and release the lock; fd < 0 is nothing. */
void store_unlock(const char *path, int fd);

/* file.c.  Remove the temporary files a keyfs killed during a save left
 * beside path (".BASE.tmp.PID.N", and the journal's
 * ".BASE.journal.tmp.PID.N"): only regular files of uid's whose names
 * are exactly that pattern.  Call it holding the lock.  The number
 * removed, or -errno. */
int store_clean_temps(const char *path, uid_t uid);

/* ---- persist.c, commit.c: the store as a snapshot and a journal ---- */

/* The journal is PATH STORE_JOURNAL_SUFFIX, beside the snapshot. */
#define STORE_JOURNAL_SUFFIX	".journal"

struct crypto_key;
struct store_file;

/* Load the store at path: its snapshot (sealed when key is given, see
 * crypto.h), then its journal replayed on it, then checked as
 * store_json_load checks; and open the journal for the changes to come.
 * A torn last journal record is dropped with one warning line on stderr.
 * key (may be NULL) is borrowed and must outlive *sfp.  0, or -errno with
 * one line in err naming the file (and line); nothing is written. */
int store_open(const char *path, const struct crypto_key *key,
	       struct store_image *img, struct store_file **sfp,
	       char *err, size_t errlen);

/* One change the model made to a keyring's links, in order: what a
 * journal link op says (journal.h), with where in the list it happened
 * (at: the index the key took, or the one it left), so it can be undone. */
enum store_link_kind { STORE_LINK_APPEND, STORE_LINK_REPLACE,
		       STORE_LINK_REMOVE };
struct store_link_change {
	enum store_link_kind kind;
	kserial_t serial;	/* the key linked or unlinked */
	kserial_t old;		/* REPLACE: the key it displaced */
	size_t at;
};

/* Put links (*n of them, malloc'd) back as they were before log (nlog
 * changes, oldest first) was made to them.  0, -EINVAL when the log does
 * not match the links, -ENOMEM. */
int store_links_undo(kserial_t **links, size_t *n,
		     const struct store_link_change *log, size_t nlog);

/* One journal record being built from what a change touched (instead of
 * comparing whole images, which costs the size of the store). */
struct store_record;
struct store_record *store_record_new(void);
void store_record_free(struct store_record *r);
size_t store_record_nops(const struct store_record *r);
/* Key k is now exactly k (links included for a keyring). */
int store_record_put(struct store_record *r, const struct store_key *k);
/* Key serial is gone from the store. */
int store_record_del(struct store_record *r, kserial_t serial);
/* These link changes of keyring (whose other fields did not change). */
int store_record_links(struct store_record *r, kserial_t keyring,
		       const struct store_link_change *log, size_t nlog);
/* Special keyring i (session, user, user_session, persistent) is serial. */
int store_record_special(struct store_record *r, size_t i, kserial_t serial);

/* Append r as one journal record, on disk when it returns 0; nothing when
 * r is empty.  -errno: the change is not in the store. */
int store_commit(struct store_file *sf, const struct store_record *r,
		 kserial_t next_serial);
/* Has the journal grown past the compaction rule (journal.h)?  Then the
 * caller rewrites the snapshot with store_flush. */
bool store_wants_compaction(const struct store_file *sf);

/* Rewrite the snapshot from img (what the store holds) and empty the
 * journal (clean unmount, a fresh store).  0 or -errno; on failure the
 * journal still holds every change. */
int store_flush(struct store_file *sf, const struct store_image *img);

/* Write the store sf opened (img, as store_open gave it) again sealed
 * with newkey, or plain when newkey is NULL: the snapshot, and no journal.
 * Each step is atomic (see persist.c), so a crash leaves either the old
 * store or the new.  sf takes no change afterwards; close it.  0 or
 * -errno.  newkey is borrowed. */
int store_rekey(struct store_file *sf, const struct store_image *img,
		const struct crypto_key *newkey);

/* Records appended since the snapshot was last written. */
unsigned long store_pending(const struct store_file *sf);

/* Close; NULL is nothing.  Writes nothing. */
void store_close(struct store_file *sf);

/* Free what k owns (payload wiped) and zero it. */
void store_key_free(struct store_key *k);
/* Would a and b be written the same, links aside? */
bool store_key_same_but_links(const struct store_key *a,
			      const struct store_key *b);

/* Free everything img owns (payloads wiped first) and zero it. */
void store_image_free(struct store_image *img);

#endif
