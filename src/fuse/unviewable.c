/* unviewable.c: keys a keyring links that the caller may not view, listed as %#SERIAL so that they can be removed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "tree.h"

/*
 * The kernel describes a key to no one without view on it, yet a keyring
 * still links it and keyctl unlink (write on the keyring) removes it.  Such
 * a key is listed under the name "%#SERIAL" (names.h) with what can be said
 * of it without view: a regular file, mode 0, size 0, one link, owned by
 * the overflow ids (its owner is not told), times 0.  It has its own inode
 * numbers, INO_UNVIEWABLE + serial: to a caller who may view it the same
 * key may be a directory, and the kernel must never meet one inode as both.
 */

bool unviewable_ino(uint64_t ino, kserial_t *serial)
{
	if (ino <= INO_UNVIEWABLE || ino > INO_UNVIEWABLE + INT32_MAX)
		return false;
	*serial = (kserial_t)(ino - INO_UNVIEWABLE);
	return true;
}

void unviewable_set(kserial_t serial, struct tnode *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = T_KEY;
	out->serial = serial;
	out->ino = INO_UNVIEWABLE + (uint64_t)serial;
	out->unviewable = true;
}

/* The id the kernel shows for one it cannot map (nobody), read once. */
static unsigned overflow_id(const char *file, unsigned *cache)
{
	FILE *f;

	if (*cache)
		return *cache;
	*cache = 65534;
	f = fopen(file, "re");
	if (f) {
		if (fscanf(f, "%u", cache) != 1 || *cache == 0)
			*cache = 65534;
		fclose(f);
	}
	return *cache;
}

void unviewable_attr(const struct tnode *tn, struct stat *st)
{
	static unsigned ouid, ogid;

	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)tn->ino;
	st->st_mode = S_IFREG;
	st->st_nlink = 1;
	st->st_uid = (uid_t)overflow_id("/proc/sys/kernel/overflowuid", &ouid);
	st->st_gid = (gid_t)overflow_id("/proc/sys/kernel/overflowgid", &ogid);
	st->st_blksize = 4096;
}

/* "%#SERIAL" in keyring: found where the keyring, as the caller lists it,
 * links the key and the caller may not view it; a key the caller views is
 * found by its own name only. */
int unviewable_lookup(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		      kserial_t keyring, kserial_t serial, struct tnode *out)
{
	struct key_info *ki = malloc(sizeof(*ki));
	kserial_t *links = NULL;
	size_t n = 0;
	bool linked = false;
	int ret;

	if (!ki)
		return -ENOMEM;
	ret = BACKEND_CALL(ctx, describe, c, serial, ki);
	free(ki);
	if (ret != -EACCES)
		return ret == -ENOMEM ? ret : -ENOENT;
	ret = BACKEND_CALL(ctx, list, c, keyring, &links, &n);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n && !linked; i++)
		linked = links[i] == serial;
	free(links);
	if (!linked)
		return -ENOENT;
	unviewable_set(serial, out);
	return 0;
}
