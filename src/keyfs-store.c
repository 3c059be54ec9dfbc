/* keyfs-store.c: keyfs-store(1)'s job: encrypt a memory store, decrypt it, or change its key, atomically, while no keyfs has it mounted. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "store.h"
#include "storekey.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: keyfs-store encrypt STORE NEWKEY\n"
		   "       keyfs-store decrypt STORE OLDKEY\n"
		   "       keyfs-store rekey STORE OLDKEY NEWKEY\n"
		   "KEY: file:PATH, cred:NAME or %%user:NAME, as keyfs's store_key= (keyfs-store(5))\n");
}

/* Open the store under oldkey and write it again under newkey (either
 * may be NULL: plain), holding the store's lock. */
static int convert(const char *path, const struct crypto_key *oldkey,
		   const struct crypto_key *newkey)
{
	char err[PATH_MAX + 256] = "";
	struct store_image img;
	struct store_file *sf;
	struct stat sb;
	int lock = -1, ret;

	ret = store_lock(path, &lock, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s\n", err);
		return ret;
	}
	/* Converting nothing would make an empty store under the new key
	 * and hide a typo in the path. */
	if (stat(path, &sb) < 0) {
		ret = -errno;
		fprintf(stderr, "keyfs-store: %s: %s\n", path, strerror(errno));
		goto out;
	}
	store_clean_temps(path, getuid());
	ret = store_open(path, oldkey, &img, &sf, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s\n", err[0] ? err : strerror(-ret));
		goto out;
	}
	ret = store_rekey(sf, &img, newkey);
	if (ret < 0)
		/* The rename of the new snapshot is the last step: before it
		 * the old store is whole. */
		fprintf(stderr, "keyfs-store: %s: cannot write the store (left as it was): %s\n",
			path, strerror(-ret));
	store_close(sf);
	store_image_free(&img);
out:
	store_unlock(path, lock);
	return ret;
}

int main(int argc, char *argv[])
{
	struct crypto_key *oldkey = NULL, *newkey = NULL;
	const char *oldspec = NULL, *newspec = NULL;
	int ret;

	/* The process holds every payload of the store: no core dump. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "encrypt") == 0)
		newspec = argv[3];
	else if (argc == 4 && strcmp(argv[1], "decrypt") == 0)
		oldspec = argv[3];
	else if (argc == 5 && strcmp(argv[1], "rekey") == 0) {
		oldspec = argv[3];
		newspec = argv[4];
	} else {
		usage(stderr);
		return 2;
	}
	if ((oldspec && storekey_load("old key", oldspec, &oldkey) < 0) ||
	    (newspec && storekey_load("new key", newspec, &newkey) < 0)) {
		ret = -EINVAL;
		goto out;
	}
	ret = convert(argv[2], oldkey, newkey);
out:
	crypto_key_free(oldkey);
	crypto_key_free(newkey);
	return ret < 0 ? 1 : 0;
}
