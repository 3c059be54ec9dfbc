/* fuzz-store-json.c: libFuzzer target for the JSON store loader (store_json_load): what loads saves and loads back the same. */
#include <errno.h>
#include <ftw.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "store.h"

static char dir[64];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(p);
}

static void rm_dir(void)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* Saves go to a private directory, on tmpfs where there is one, so that
 * the fsyncs cost nothing. */
static const char *save_path(void)
{
	static char path[96];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/dev/shm/keyfs-fuzz.XXXXXX");
		if (!mkdtemp(dir)) {
			snprintf(dir, sizeof(dir), "/tmp/keyfs-fuzz.XXXXXX");
			if (!mkdtemp(dir))
				abort();
		}
		atexit(rm_dir);
		snprintf(path, sizeof(path), "%s/store.json", dir);
	}
	return path;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_key(const struct store_key *a, const struct store_key *b)
{
	return a->serial == b->serial && same_str(a->type, b->type) &&
	       same_str(a->desc, b->desc) && a->uid == b->uid &&
	       a->gid == b->gid && a->perm == b->perm &&
	       a->state == b->state && a->expiry == b->expiry &&
	       a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec &&
	       a->len == b->len && !a->payload == !b->payload &&
	       (a->len == 0 || memcmp(a->payload, b->payload, a->len) == 0) &&
	       a->nlinks == b->nlinks &&
	       (a->nlinks == 0 || memcmp(a->links, b->links, a->nlinks * sizeof(*a->links)) == 0) &&
	       same_str(a->restrict_type, b->restrict_type) &&
	       same_str(a->restriction, b->restriction) &&
	       a->restricted == b->restricted;
}

static void check_same(const struct store_image *a, const struct store_image *b)
{
	CHECK(a->next_serial == b->next_serial);
	CHECK(a->session == b->session && a->user == b->user);
	CHECK(a->user_session == b->user_session && a->persistent == b->persistent);
	CHECK(a->nkeys == b->nkeys);
	/* The saved file may list the keys in another order. */
	for (size_t i = 0; i < a->nkeys; i++) {
		size_t j = 0;

		while (j < b->nkeys && b->keys[j].serial != a->keys[i].serial)
			j++;
		CHECK(j < b->nkeys);
		CHECK(same_key(&a->keys[i], &b->keys[j]));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct store_image zero;
	struct store_image img, img2;
	char path[64], err[512];
	const char *saved = save_path();
	int fd, r;

	/* The loader reads a file by name: give it one in memory. */
	fd = memfd_create("store", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	r = store_json_load(path, &img, err, sizeof(err));
	close(fd);
	if (r < 0) {
		/* Refused: nothing loaded, and one line that says why. */
		CHECK(memcmp(&img, &zero, sizeof(img)) == 0);
		CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
		return 0;
	}
	CHECK(r == 0);
	for (size_t i = 0; i < img.nkeys; i++)
		CHECK(img.keys[i].state != KEY_STATE_PENDING);

	/* What was accepted saves, and the saved file loads as the same image. */
	CHECK(store_json_save(saved, &img) == 0);
	r = store_json_load(saved, &img2, err, sizeof(err));
	if (r != 0)
		fprintf(stderr, "reload: %s\n", err);
	CHECK(r == 0);
	check_same(&img, &img2);
	store_image_free(&img2);
	store_image_free(&img);
	return 0;
}
