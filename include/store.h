/* store.h: the memory backend's keys as a plain image, and the JSON file that keeps it. */
#ifndef KEYFS_STORE_H
#define KEYFS_STORE_H

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
};

/* The whole store.  Special keyrings are serials of keys in keys[] (0 when
 * not yet created); the process keyring is never kept, it dies with keyfs. */
struct store_image {
	kserial_t next_serial;	/* the next serial to hand out */
	kserial_t session;
	kserial_t user;
	kserial_t user_session;
	kserial_t persistent;
	struct store_key *keys;
	size_t nkeys;
};

#define STORE_FORMAT_VERSION 1

/* Load path into img.  A missing file gives an empty image and 0.  A file
 * that cannot be read, is not JSON, has another format version, or is not
 * consistent (a link to a serial that is not there, two keys with one
 * serial, a bad state name or base64) gives -errno (EIO, EINVAL, ...) and
 * one line in err naming the file (and line and column for JSON errors);
 * the file is not touched. */
int store_json_load(const char *path, struct store_image *img,
		    char *err, size_t errlen);

/* Write img to path atomically: a temporary file in the same directory
 * created with O_EXCL and mode 0600, fsync, rename, fsync of the directory.
 * On failure the old file is left as it was and -errno is returned. */
int store_json_save(const char *path, const struct store_image *img);

/* Free everything img owns (payloads wiped first) and zero it. */
void store_image_free(struct store_image *img);

#endif
