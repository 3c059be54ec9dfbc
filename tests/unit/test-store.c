/* test-store.c: unit tests of base64 and the JSON store of the memory backend. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base64.h"
#include "store.h"
#include "tap.h"

static char dir[256];

/* ---- helpers ---- */

/* dir/name in one of four rotating buffers: copy it to keep it. */
static char *path_in(const char *name)
{
	static char buf[4][512];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

static int put_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, data, len) != (ssize_t)len)
		ret = -EIO;
	close(fd);
	return ret;
}

/* The whole file, malloc'd, NUL-terminated; NULL if unreadable. */
static char *get_file(const char *path, size_t *len)
{
	struct stat st;
	char *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !(p = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return NULL;
	}
	if (read(fd, p, (size_t)st.st_size) != st.st_size) {
		free(p);
		close(fd);
		return NULL;
	}
	p[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	close(fd);
	return p;
}

static bool same_file(const char *path, const char *want, size_t wantlen)
{
	size_t len = 0;
	char *got = get_file(path, &len);
	bool same = got && len == wantlen && memcmp(got, want, len) == 0;

	free(got);
	return same;
}

/* Entries of dir other than . and .., as "a b c" in readdir order. */
static int count_entries(const char *d, const char *except)
{
	DIR *dp = opendir(d);
	struct dirent *e;
	int n = 0;

	if (!dp)
		return -1;
	while ((e = readdir(dp)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    (!except || strcmp(e->d_name, except)))
			n++;
	closedir(dp);
	return n;
}

static bool has_temp(const char *d)
{
	DIR *dp = opendir(d);
	struct dirent *e;
	bool found = false;

	if (!dp)
		return false;
	while ((e = readdir(dp)))
		if (strstr(e->d_name, ".tmp."))
			found = true;
	closedir(dp);
	return found;
}

static bool image_is_empty(const struct store_image *img)
{
	static const struct store_image zero;

	return memcmp(img, &zero, sizeof(zero)) == 0;
}

static struct store_key *add_key(struct store_image *img, kserial_t serial,
				 const char *type, const char *desc,
				 const void *payload, size_t len)
{
	struct store_key *k;

	img->keys = realloc(img->keys, (img->nkeys + 1) * sizeof(*img->keys));
	if (!img->keys)
		abort();
	k = &img->keys[img->nkeys++];
	memset(k, 0, sizeof(*k));
	k->serial = serial;
	k->type = strdup(type);
	k->desc = strdup(desc);
	k->perm = 0x3f010000;
	k->state = KEY_STATE_VALID;
	if (len) {
		k->payload = malloc(len);
		memcpy(k->payload, payload, len);
		k->len = len;
	}
	return k;
}

static void set_links(struct store_key *k, const kserial_t *links, size_t n)
{
	k->links = malloc(n * sizeof(*links));
	memcpy(k->links, links, n * sizeof(*links));
	k->nlinks = n;
}

static bool str_eq(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

static bool key_eq(const struct store_key *a, const struct store_key *b)
{
	return a->serial == b->serial && str_eq(a->type, b->type) &&
		str_eq(a->desc, b->desc) && a->uid == b->uid &&
		a->gid == b->gid && a->perm == b->perm &&
		a->state == b->state && a->expiry == b->expiry &&
		a->mtime.tv_sec == b->mtime.tv_sec &&
		a->mtime.tv_nsec == b->mtime.tv_nsec &&
		a->ctime.tv_sec == b->ctime.tv_sec &&
		a->ctime.tv_nsec == b->ctime.tv_nsec &&
		a->len == b->len &&
		(a->len == 0 || memcmp(a->payload, b->payload, a->len) == 0) &&
		a->nlinks == b->nlinks &&
		(a->nlinks == 0 ||
		 memcmp(a->links, b->links, a->nlinks * sizeof(*a->links)) == 0) &&
		str_eq(a->restrict_type, b->restrict_type) &&
		str_eq(a->restriction, b->restriction) &&
		a->restricted == b->restricted;
}

static const struct store_key *find(const struct store_image *img,
				    kserial_t serial)
{
	for (size_t i = 0; i < img->nkeys; i++)
		if (img->keys[i].serial == serial)
			return &img->keys[i];
	return NULL;
}

static bool image_eq(const struct store_image *a, const struct store_image *b)
{
	if (a->next_serial != b->next_serial || a->session != b->session ||
	    a->user != b->user || a->user_session != b->user_session ||
	    a->persistent != b->persistent || a->nkeys != b->nkeys)
		return false;
	for (size_t i = 0; i < a->nkeys; i++) {
		const struct store_key *o = find(b, a->keys[i].serial);

		if (!o || !key_eq(&a->keys[i], o)) {
			printf("# key %d differs\n", (int)a->keys[i].serial);
			return false;
		}
	}
	return true;
}

static unsigned char *big_payload;

/* A store with every kind of thing the format must carry; the keys are
 * deliberately not in serial order. */
static void make_image(struct store_image *img)
{
	static const char nul_payload[] = "secret\0with\0NULs";
	unsigned char all[256];
	struct store_key *k;

	memset(img, 0, sizeof(*img));
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	img->next_serial = 100;
	img->session = 10;
	img->user = 2;
	img->user_session = 7;

	k = add_key(img, 10, "keyring", "_ses", NULL, 0);
	set_links(k, (kserial_t[]){ 3, 4, 5, 2, 6, 8 }, 6);
	k->ctime = (struct timespec){ 1700000000, 5 };
	k = add_key(img, 2, "keyring", "_uid.0", NULL, 0);
	set_links(k, (kserial_t[]){ 9 }, 1);
	k->restrict_type = strdup("asymmetric");
	k->restriction = strdup("key_or_keyring:7");
	k = add_key(img, 3, "user", "plain", nul_payload, sizeof(nul_payload));
	k->uid = 1000;
	k->gid = 1001;
	k->perm = 0x3f3f0000;
	k->mtime = (struct timespec){ 1700000001, 123456789 };
	k->ctime = (struct timespec){ 1700000002, 999999999 };
	add_key(img, 4, "logon", "cifs:alice", all, sizeof(all));
	add_key(img, 5, "big_key", "big", big_payload, KEYFS_BIG_PAYLOAD_MAX);
	k = add_key(img, 6, "user", "\xff\xfe latin-1 \xe9t\xe9", NULL, 0);
	k->state = KEY_STATE_NEGATIVE;
	k->expiry = 1700000060;
	k = add_key(img, 7, "keyring", "restricted-to-nothing", NULL, 0);
	k->restricted = true;
	k = add_key(img, 8, "user", "quote\" backslash\\ newline\n tab\t \xd0\xba\xd0\xbb\xd1\x8e\xd1\x87 /%",
		    "x", 1);
	k->state = KEY_STATE_REVOKED;
	k = add_key(img, 9, "user", "", "y", 1);
	k->state = KEY_STATE_INVALIDATED;
	k->uid = 4294967294u;
	k = add_key(img, 11, "user", "expired", "z", 1);
	k->state = KEY_STATE_EXPIRED;
	k = add_key(img, 12, "keyring", "restricted-by-type", NULL, 0);
	k->restrict_type = strdup("user");
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* Run fn in a child that has dropped root (uid/gid 65534), so that file
 * permissions hold as for a user; returns the child's exit status. */
static int as_nobody(int (*fn)(void))
{
	pid_t pid;
	int status;

	/* Else the child may write the parent's unflushed TAP lines again. */
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		     setresuid(65534, 65534, 65534) < 0))
			_exit(99);
		_exit(fn());
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* ---- base64 ---- */

static void test_base64(void)
{
	static const struct {
		const char *raw, *enc;
	} v[] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
	};
	static const char *const bad[] = {
		"Zg=", "Zg", "Z", "Zg=a", "Z===", "====", "Zh==", "Zm9=",
		"Zm9v!A==", " Zm9v", "Zm9v\n", "Zm8=Zm8=", "Zm9v-_8=", "Zg==Zg==",
		"Zm9vY===",
	};
	unsigned char all[256], out[512];
	char enc[512];
	size_t n;
	bool rt = true;

	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		size_t len = strlen(v[i].raw);

		is_int(base64_encoded_len(len), strlen(v[i].enc),
		       "base64 length of %zu bytes", len);
		base64_encode(v[i].raw, len, enc);
		is_str(enc, v[i].enc, "base64 encodes \"%s\"", v[i].raw);
		n = 99;
		ok(base64_decode(v[i].enc, strlen(v[i].enc), out, &n) == 0 &&
		   n == len && memcmp(out, v[i].raw, len) == 0,
		   "base64 decodes \"%s\"", v[i].enc);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		is_int(base64_decode(bad[i], strlen(bad[i]), out, &n), -EINVAL,
		       "base64 rejects \"%s\"", bad[i][0] == ' ' ? "<space>Zm9v" :
		       strchr(bad[i], '\n') ? "Zm9v<newline>" : bad[i]);
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)(255 - i);
	for (size_t len = 0; len <= 256; len++) {
		base64_encode(all, len, enc);
		if (strlen(enc) != base64_encoded_len(len) ||
		    base64_decode(enc, strlen(enc), out, &n) != 0 || n != len ||
		    memcmp(out, all, len) != 0 ||
		    base64_decoded_max(strlen(enc)) < len)
			rt = false;
	}
	ok(rt, "base64 round-trips every length 0..256 of binary bytes");
	base64_encode("\xfb\xff\xbf", 3, enc);
	is_str(enc, "+/+/", "base64 uses + and /");
}

/* ---- the store ---- */

static void test_missing(void)
{
	struct store_image img;
	char err[256] = "untouched";

	memset(&img, 0xa5, sizeof(img));
	is_int(store_json_load(path_in("absent.json"), &img, err, sizeof(err)),
	       0, "a missing file loads");
	ok(image_is_empty(&img), "a missing file gives an empty image");
	is_int(count_entries(dir, NULL), 0, "loading a missing file creates nothing");
	store_image_free(&img);
}

static void test_round_trip(void)
{
	struct store_image a, b, c;
	const char *p = path_in("keys.json");
	char err[256] = "";
	char *text, *again;
	size_t len, len2;
	struct stat st;
	bool sorted = true;

	make_image(&a);
	umask(0277);
	is_int(store_json_save(p, &a), 0, "save a store");
	umask(022);
	ok(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600,
	   "the file is mode 0600 though umask was 0277 (%o)",
	   (unsigned)(st.st_mode & 07777));
	is_int(count_entries(dir, NULL), 1, "no temp file is left behind");
	is_int(store_json_load(p, &b, err, sizeof(err)), 0, "load it back");
	is_str(err, "", "no error message");
	ok(image_eq(&a, &b), "the loaded image equals the saved one");
	ok(b.nkeys && find(&b, 5) && find(&b, 5)->len == KEYFS_BIG_PAYLOAD_MAX,
	   "the 1 MiB payload is whole");
	ok(find(&b, 3) && find(&b, 3)->len == 17 &&
	   memcmp(find(&b, 3)->payload, "secret\0with\0NULs", 17) == 0,
	   "a payload with NUL bytes is whole");
	ok(find(&b, 7) && find(&b, 7)->restricted && !find(&b, 7)->restrict_type,
	   "a keyring restricted with no type stays so");
	for (size_t i = 1; i < b.nkeys; i++)
		if (b.keys[i - 1].serial >= b.keys[i].serial)
			sorted = false;
	ok(sorted, "keys come back in serial order");

	text = get_file(p, &len);
	ok(text && strstr(text, "\"perm\": \"0x3f010000\""), "perm is hex as keyctl prints it");
	ok(text && strstr(text, "\"mtime\": \"1700000001.123456789\""),
	   "times are SECONDS.NANOSECONDS");
	ok(text && strstr(text, "\"description\": {\n") && strstr(text, "\"base64\""),
	   "a description that is not UTF-8 is kept as base64");
	ok(text && !memmem(text, len, "secret", 6), "no payload in clear text");
	ok(text && len && text[len - 1] == '\n', "the file ends with a newline");

	is_int(store_json_save(p, &b), 0, "save the loaded image");
	again = get_file(p, &len2);
	ok(text && again && len == len2 && memcmp(text, again, len) == 0,
	   "saving the same store twice writes the same bytes");
	free(again);

	/* Loading never writes. */
	stat(p, &st);
	is_int(store_json_load(p, &c, err, sizeof(err)), 0, "load again");
	ok(same_file(p, text, len), "loading leaves the file as it was");
	free(text);

	store_image_free(&a);
	store_image_free(&b);
	store_image_free(&c);
	ok(image_is_empty(&c), "store_image_free zeroes the image");

	memset(&a, 0, sizeof(a));
	is_int(store_json_save(p, &a), 0, "save an empty store");
	is_int(store_json_load(p, &b, err, sizeof(err)), 0, "load an empty store");
	ok(image_is_empty(&b), "an empty store comes back empty");
	unlink(p);
}

#define HEAD "{\n\"format\": 1,\n\"next_serial\": 20,\n\"session\": 1,\n\"keys\": [\n"
#define RING(extra) "{\"serial\": 1, \"type\": \"keyring\", \"description\": \"_ses\", " \
	"\"uid\": 0, \"gid\": 0, \"perm\": \"0x3f010000\", \"state\": \"valid\"" extra "}"
#define KEY(extra) "{\"serial\": 2, \"type\": \"user\", \"description\": \"k\", " \
	"\"uid\": 0, \"gid\": 0, \"perm\": \"0x3f010000\"" extra "}"
#define TAIL "\n]\n}\n"
#define GOOD_KEY KEY(", \"state\": \"valid\", \"payload\": \"c2VjcmV0\"")
#define DOC(ring, key) HEAD RING(ring) ",\n" key TAIL

static void reject(const char *what, const char *text, size_t len,
		   const char *want)
{
	const char *p = path_in("bad.json");
	struct store_image img;
	char err[512] = "";
	char prefix[600];
	int ret;

	put_file(p, text, len);
	memset(&img, 0x5a, sizeof(img));
	ret = store_json_load(p, &img, err, sizeof(err));
	snprintf(prefix, sizeof(prefix), "keyfs: %s:", p);
	ok(ret == -EINVAL && strncmp(err, prefix, strlen(prefix)) == 0 &&
	   strstr(err, want) && !strchr(err, '\n') && image_is_empty(&img) &&
	   same_file(p, text, len), "rejects %s", what);
	if (ret != -EINVAL || !strstr(err, want))
		printf("#   ret %d, message '%s', want '%s'\n", ret, err, want);
	store_image_free(&img);
	unlink(p);
}

#define REJECT(what, text, want) reject(what, text, sizeof(text) - 1, want)

static void test_rejects(void)
{
	const char *p = path_in("good.json");
	static const char good[] = DOC(", \"links\": [2]", GOOD_KEY);
	static const char minimal[] =
		"{\"format\": 1, \"next_serial\": 3, \"keys\": [{\"serial\": 2, "
		"\"type\": \"user\", \"description\": \"d\", \"uid\": 5, "
		"\"gid\": 6, \"perm\": \"0x3F\", \"state\": \"valid\"}]}";
	struct store_image img;
	char err[512] = "";
	size_t big = KEYFS_BIG_PAYLOAD_MAX + 3;
	unsigned char *raw;
	char *text, *b64, *longdesc;

	put_file(p, good, sizeof(good) - 1);
	is_int(store_json_load(p, &img, err, sizeof(err)), 0,
	       "the base document of the rejects loads");
	ok(img.nkeys == 2 && img.session == 1 && img.keys[1].len == 6 &&
	   memcmp(img.keys[1].payload, "secret", 6) == 0, "with what it says");
	store_image_free(&img);
	put_file(p, minimal, sizeof(minimal) - 1);
	is_int(store_json_load(p, &img, err, sizeof(err)), 0,
	       "a file with only the required fields loads");
	ok(img.nkeys == 1 && img.keys[0].perm == 0x3f && img.keys[0].uid == 5 &&
	   img.keys[0].expiry == 0 && img.keys[0].len == 0 && img.user == 0,
	   "absent optional fields are zero");
	store_image_free(&img);
	unlink(p);

	REJECT("text that is not JSON", "{\n  \"format\": 1,\n  oops\n}\n",
	       "bad.json:3:");
	REJECT("not JSON, with JSON error in the message",
	       "{\n  \"format\": 1,\n  oops\n}\n", "JSON error");
	REJECT("an empty file", "", "JSON error");
	REJECT("trailing garbage", "{\"format\": 1, \"next_serial\": 0, \"keys\": []} x",
	       "JSON error");
	REJECT("a duplicate object key",
	       "{\"format\": 1, \"format\": 1, \"next_serial\": 0, \"keys\": []}",
	       "JSON error");
	REJECT("a top level that is not an object", "[1, 2]", "not a JSON object");
	REJECT("a missing format", "{\"next_serial\": 0, \"keys\": []}",
	       "no \"format\" field");
	REJECT("another format version",
	       "{\"format\": 7, \"next_serial\": 0, \"keys\": []}",
	       "unknown format version 7");
	REJECT("a format that is a string",
	       "{\"format\": \"1\", \"next_serial\": 0, \"keys\": []}",
	       "\"format\" is not an integer");
	REJECT("a missing next_serial", "{\"format\": 1, \"keys\": []}",
	       "no \"next_serial\" field");
	REJECT("missing keys", "{\"format\": 1, \"next_serial\": 0}",
	       "no \"keys\" field");
	REJECT("keys not an array",
	       "{\"format\": 1, \"next_serial\": 0, \"keys\": {}}",
	       "\"keys\" is not an array");
	REJECT("an unknown top-level field",
	       "{\"format\": 1, \"next_serial\": 0, \"keys\": [], \"colour\": 1}",
	       "unknown field \"colour\"");
	REJECT("a key that is not an object",
	       "{\"format\": 1, \"next_serial\": 9, \"keys\": [3]}",
	       "keys[0]: not a JSON object");
	REJECT("duplicate serials",
	       HEAD RING("") ",\n" RING("") TAIL, "two keys have serial 1");
	REJECT("a dangling link", DOC(", \"links\": [2, 999]", GOOD_KEY),
	       "key 1 links 999 which is not in the store");
	REJECT("a link to the same key twice", DOC(", \"links\": [2, 2]", GOOD_KEY),
	       "links key 2 twice");
	REJECT("two links of one type and description",
	       HEAD RING(", \"links\": [2, 3]") ",\n" GOOD_KEY ",\n"
	       "{\"serial\": 3, \"type\": \"user\", \"description\": \"k\", "
	       "\"uid\": 0, \"gid\": 0, \"perm\": \"0x3f010000\", \"state\": \"valid\"}"
	       TAIL, "share type and description");
	REJECT("a keyring that links itself", DOC(", \"links\": [1]", GOOD_KEY),
	       "links itself");
	REJECT("a cycle of keyrings",
	       HEAD RING(", \"links\": [3]") ",\n"
	       "{\"serial\": 3, \"type\": \"keyring\", \"description\": \"r\", "
	       "\"uid\": 0, \"gid\": 0, \"perm\": \"0x3f010000\", \"state\": \"valid\", "
	       "\"links\": [1]}" TAIL, "links back");
	REJECT("bad base64", DOC("", KEY(", \"state\": \"valid\", \"payload\": \"c2VjcmV0=\"")),
	       "key 2: bad base64 payload");
	REJECT("base64 with whitespace",
	       DOC("", KEY(", \"state\": \"valid\", \"payload\": \"c2Vj cmV0\"")),
	       "key 2: bad base64 payload");
	REJECT("a bad state", DOC("", KEY(", \"state\": \"bogus\"")),
	       "bad state \"bogus\"");
	REJECT("the state pending", DOC("", KEY(", \"state\": \"pending\"")),
	       "pending");
	REJECT("a missing state", DOC("", KEY("")), "no \"state\" field");
	REJECT("a serial that is a string",
	       HEAD "{\"serial\": \"1\"}" TAIL, "\"serial\" is not an integer");
	REJECT("a serial 0", HEAD "{\"serial\": 0}" TAIL, "out of range");
	REJECT("a serial too large", HEAD "{\"serial\": 2147483648}" TAIL,
	       "out of range");
	REJECT("a perm that is a number",
	       DOC("", "{\"serial\": 2, \"type\": \"user\", \"description\": \"k\", "
		   "\"uid\": 0, \"gid\": 0, \"perm\": 1, \"state\": \"valid\"}"),
	       "\"perm\" is not a string");
	REJECT("a perm without 0x",
	       DOC("", "{\"serial\": 2, \"type\": \"user\", \"description\": \"k\", "
		   "\"uid\": 0, \"gid\": 0, \"perm\": \"3f010000\", \"state\": \"valid\"}"),
	       "\"perm\" is not a hex string");
	REJECT("a perm with unknown bits",
	       DOC("", "{\"serial\": 2, \"type\": \"user\", \"description\": \"k\", "
		   "\"uid\": 0, \"gid\": 0, \"perm\": \"0xff000000\", \"state\": \"valid\"}"),
	       "sets bits outside");
	REJECT("a negative uid",
	       DOC("", "{\"serial\": 2, \"type\": \"user\", \"description\": \"k\", "
		   "\"uid\": -1, \"gid\": 0, \"perm\": \"0x3f\", \"state\": \"valid\"}"),
	       "\"uid\" is out of range");
	REJECT("a gid that is a boolean",
	       DOC("", "{\"serial\": 2, \"type\": \"user\", \"description\": \"k\", "
		   "\"uid\": 0, \"gid\": true, \"perm\": \"0x3f\", \"state\": \"valid\"}"),
	       "\"gid\" is not an integer");
	REJECT("a description that is a number",
	       DOC("", "{\"serial\": 2, \"type\": \"user\", \"description\": 5, "
		   "\"uid\": 0, \"gid\": 0, \"perm\": \"0x3f\", \"state\": \"valid\"}"),
	       "\"description\" is not a string");
	REJECT("a type that is null",
	       DOC("", "{\"serial\": 2, \"type\": null, \"description\": \"k\", "
		   "\"uid\": 0, \"gid\": 0, \"perm\": \"0x3f\", \"state\": \"valid\"}"),
	       "\"type\" is not a string");
	REJECT("an empty type",
	       DOC("", "{\"serial\": 2, \"type\": \"\", \"description\": \"k\", "
		   "\"uid\": 0, \"gid\": 0, \"perm\": \"0x3f\", \"state\": \"valid\"}"),
	       "type is not 1 to 31 bytes");
	REJECT("a type too long",
	       DOC("", "{\"serial\": 2, \"type\": \"abcdefghijabcdefghijabcdefghij12\", "
		   "\"description\": \"k\", \"uid\": 0, \"gid\": 0, \"perm\": \"0x3f\", "
		   "\"state\": \"valid\"}"), "type is not 1 to 31 bytes");
	REJECT("links that are an object", DOC(", \"links\": {}", GOOD_KEY),
	       "\"links\" is not an array");
	REJECT("a link that is not a serial", DOC(", \"links\": [0]", GOOD_KEY),
	       "not a serial");
	REJECT("a keyring with a payload", DOC(", \"payload\": \"\"", GOOD_KEY),
	       "key 1: a keyring has no payload");
	REJECT("a key with links",
	       DOC("", KEY(", \"state\": \"valid\", \"links\": []")),
	       "only keyrings link keys");
	REJECT("a key with a restriction",
	       DOC("", KEY(", \"state\": \"valid\", \"restrict\": {}")),
	       "only keyrings have restrictions");
	REJECT("a restriction without a type",
	       DOC(", \"restrict\": {\"restriction\": \"x\"}", GOOD_KEY),
	       "no type");
	REJECT("a restrict that is a string",
	       DOC(", \"restrict\": \"user\"", GOOD_KEY), "not an object");
	REJECT("an unknown key field",
	       DOC(", \"colour\": \"red\"", GOOD_KEY), "key 1: unknown field \"colour\"");
	REJECT("a bad mtime",
	       DOC(", \"mtime\": \"1.2.3\"", GOOD_KEY), "SECONDS.NANOSECONDS");
	REJECT("an mtime that is a number",
	       DOC(", \"mtime\": 17", GOOD_KEY), "\"mtime\" is not a string");
	REJECT("a ctime with ten fraction digits",
	       DOC(", \"ctime\": \"1.0123456789\"", GOOD_KEY), "SECONDS.NANOSECONDS");
	REJECT("a negative expiry",
	       DOC(", \"expiry\": -5", GOOD_KEY), "\"expiry\" is out of range");
	REJECT("a special keyring that is not a keyring",
	       "{\"format\": 1, \"next_serial\": 20, \"user\": 2, \"keys\": [\n"
	       RING(", \"links\": [2]") ",\n" GOOD_KEY TAIL,
	       "\"user\" is key 2 which is not a keyring");
	REJECT("a special keyring not in the store",
	       "{\"format\": 1, \"next_serial\": 20, \"persistent\": 15, \"keys\": [\n"
	       RING("") TAIL, "\"persistent\" is key 15 which is not in the store");
	REJECT("a special keyring that is a string",
	       "{\"format\": 1, \"next_serial\": 20, \"session\": \"1\", \"keys\": []}",
	       "\"session\" is not an integer");
	REJECT("next_serial not above every serial",
	       "{\"format\": 1, \"next_serial\": 2, \"keys\": [\n"
	       RING(", \"links\": [2]") ",\n" GOOD_KEY TAIL,
	       "\"next_serial\" 2 is not greater than serial 2");
	REJECT("a description object without base64",
	       DOC("", "{\"serial\": 2, \"type\": \"user\", \"description\": {\"b\": \"\"}, "
		   "\"uid\": 0, \"gid\": 0, \"perm\": \"0x3f\", \"state\": \"valid\"}"),
	       "\"description\" is not a string or");
	REJECT("a base64 description holding a NUL",
	       DOC("", "{\"serial\": 2, \"type\": \"user\", \"description\": "
		   "{\"base64\": \"YQBi\"}, \"uid\": 0, \"gid\": 0, \"perm\": \"0x3f\", "
		   "\"state\": \"valid\"}"), "bad base64 description");

	/* jansson quotes the text near an error; that may be a payload. */
	{
		static const char leak[] = DOC("", KEY(", \"state\": \"valid\", "
			"\"payload\": \"c2VjcmV0c2VjcmV0\x01\"}"));
		const char *bp = path_in("bad.json");

		put_file(bp, leak, sizeof(leak) - 1);
		is_int(store_json_load(bp, &img, err, sizeof(err)), -EINVAL,
		       "a control character inside a payload string is a JSON error");
		ok(!strstr(err, "c2Vj") && strstr(err, "JSON error"),
		   "the message does not quote the payload: %s", err);
		unlink(bp);
	}

	/* A payload one byte over big_key's limit. */
	raw = calloc(1, big);
	b64 = malloc(base64_encoded_len(big) + 1);
	text = malloc(base64_encoded_len(big) + 512);
	base64_encode(raw, big, b64);
	snprintf(text, base64_encoded_len(big) + 512,
		 HEAD RING(", \"links\": [2]") ",\n" KEY(", \"state\": \"valid\", \"payload\": \"%s\"") TAIL,
		 b64);
	reject("a payload over 1 MiB", text, strlen(text), "over the limit");
	free(raw);
	free(b64);
	free(text);

	longdesc = malloc(KEYFS_DESC_MAX + 2);
	memset(longdesc, 'd', KEYFS_DESC_MAX + 1);
	longdesc[KEYFS_DESC_MAX + 1] = '\0';
	text = malloc(KEYFS_DESC_MAX + 512);
	snprintf(text, KEYFS_DESC_MAX + 512,
		 "{\"format\": 1, \"next_serial\": 3, \"keys\": [{\"serial\": 2, "
		 "\"type\": \"user\", \"description\": \"%s\", \"uid\": 0, "
		 "\"gid\": 0, \"perm\": \"0x3f\", \"state\": \"valid\"}]}", longdesc);
	reject("a description over 4095 bytes", text, strlen(text),
	       "description is longer than 4095 bytes");
	free(text);
	free(longdesc);
}

static int load_unreadable(void)
{
	struct store_image img;
	char err[512] = "";
	int ret = store_json_load(path_in("secret.json"), &img, err, sizeof(err));

	if (ret != -EACCES)
		return 1;
	if (!strstr(err, "secret.json: cannot read: Permission denied"))
		return 2;
	return image_is_empty(&img) ? 0 : 3;
}

static void test_io_errors(void)
{
	const char *d = path_in("adir");
	struct store_image img;
	char err[512] = "";

	mkdir(d, 0700);
	is_int(store_json_load(d, &img, err, sizeof(err)), -EISDIR,
	       "loading a directory is EISDIR");
	ok(strstr(err, "adir: cannot read: Is a directory") && !strchr(err, '\n'),
	   "with one line naming it: %s", err);
	rmdir(d);

	chmod(dir, 0711);
	put_file(path_in("secret.json"), "{}", 2);
	chmod(path_in("secret.json"), 0000);
	is_int(as_nobody(load_unreadable), 0,
	       "an unreadable file gives -EACCES and \"cannot read: Permission denied\"");
	unlink(path_in("secret.json"));
	chmod(dir, 0700);
}

static int save_into_ro(void)
{
	struct store_image img;
	int ret;

	make_image(&img);
	ret = store_json_save(path_in("ro/keys.json"), &img);
	store_image_free(&img);
	return ret == -EACCES ? 0 : 1;
}

static void test_save_failures(void)
{
	char p[512], ro[512];
	struct store_image img, bad;
	char *old;
	size_t oldlen;

	snprintf(p, sizeof(p), "%s", path_in("keys.json"));
	snprintf(ro, sizeof(ro), "%s", path_in("ro"));
	make_image(&img);
	is_int(store_json_save(path_in("nodir/keys.json"), &img), -ENOENT,
	       "save into a directory that does not exist fails with ENOENT");
	ok(access(path_in("nodir"), F_OK) < 0, "and creates nothing");

	/* The old file survives a failed save. */
	mkdir(ro, 0755);
	is_int(store_json_save(path_in("ro/keys.json"), &img), 0,
	       "save into what will be a read-only directory");
	old = get_file(path_in("ro/keys.json"), &oldlen);
	chmod(ro, 0555);
	chmod(dir, 0711);
	is_int(as_nobody(save_into_ro), 0,
	       "save into a read-only directory fails with EACCES");
	chmod(dir, 0700);
	ok(old && same_file(path_in("ro/keys.json"), old, oldlen),
	   "the old file is left as it was");
	is_int(count_entries(ro, NULL), 1, "and no temp file is left there");
	free(old);
	chmod(ro, 0755);
	unlink(path_in("ro/keys.json"));
	rmdir(ro);

	/* A failure after the temp file is written: the rename. */
	mkdir(p, 0700);
	is_int(store_json_save(p, &img), -EISDIR,
	       "save over a directory fails at the rename with EISDIR");
	ok(!has_temp(dir), "the temp file is removed");
	rmdir(p);

	/* An image load would refuse is never written. */
	is_int(store_json_save(p, &img), 0, "save a good store");
	old = get_file(p, &oldlen);
	make_image(&bad);
	bad.keys[2].state = KEY_STATE_PENDING;
	is_int(store_json_save(p, &bad), -EINVAL,
	       "saving an image with a pending key is EINVAL");
	ok(old && same_file(p, old, oldlen), "the old file is left as it was");
	store_image_free(&bad);
	make_image(&bad);
	bad.keys[0].links[0] = 55;
	is_int(store_json_save(p, &bad), -EINVAL,
	       "saving an image with a dangling link is EINVAL");
	store_image_free(&bad);
	make_image(&bad);
	bad.next_serial = 5;
	is_int(store_json_save(p, &bad), -EINVAL,
	       "saving an image whose next_serial is too small is EINVAL");
	ok(old && same_file(p, old, oldlen), "the old file is still as it was");
	ok(!has_temp(dir), "no temp file is left behind");
	store_image_free(&bad);
	free(old);
	unlink(p);

	is_int(store_json_save(path_in(""), &img), -EISDIR,
	       "a path that ends in a slash is EISDIR");
	store_image_free(&img);
}

/* A keyring's link changes, as the memory backend logs them, undone. */
static void test_links_undo(void)
{
	const struct store_link_change log[] = {
		{ STORE_LINK_APPEND, 4, 0, 3 },		/* 1 2 3 4 */
		{ STORE_LINK_REMOVE, 2, 0, 1 },		/* 1 3 4 */
		{ STORE_LINK_REPLACE, 5, 3, 1 },	/* 1 5 4 */
		{ STORE_LINK_REMOVE, 1, 0, 0 },		/* 5 4 */
		{ STORE_LINK_APPEND, 1, 0, 2 },		/* 5 4 1 */
	};
	const struct store_link_change bad[] = {
		{ STORE_LINK_APPEND, 9, 0, 0 },
	};
	kserial_t *v = malloc(3 * sizeof(*v));
	size_t n = 3;

	v[0] = 5;
	v[1] = 4;
	v[2] = 1;
	is_int(store_links_undo(&v, &n, log, 5), 0, "a log of appends, removals and a displacement undoes");
	ok(n == 3 && v[0] == 1 && v[1] == 2 && v[2] == 3,
	   "to the links as they were, in order");
	is_int(store_links_undo(&v, &n, log, 0), 0, "an empty log changes nothing");
	ok(n == 3 && v[0] == 1 && v[2] == 3, "nothing changed");
	is_int(store_links_undo(&v, &n, bad, 1), -EINVAL,
	       "a log that does not describe the links is EINVAL");
	free(v);
	v = NULL;
	n = 0;
	const struct store_link_change all[] = {
		{ STORE_LINK_APPEND, 7, 0, 0 },
		{ STORE_LINK_REMOVE, 7, 0, 0 },
		{ STORE_LINK_APPEND, 8, 0, 0 },
	};
	v = malloc(sizeof(*v));
	v[0] = 8;
	n = 1;
	is_int(store_links_undo(&v, &n, all, 3), 0, "a key linked, unlinked and another linked");
	is_int(n, 0, "undoes to an empty keyring");
	free(v);
}

/* A journal of link ops, dels and puts replayed on a snapshot: the order
 * of a keyring's links as the model made it, holes and links to deleted
 * keys gone. */
static void test_replay(void)
{
	static const char snap[] =
		"{\"format\": 1, \"next_serial\": 100, \"session\": 10, \"keys\": [\n"
		"{\"serial\": 10, \"type\": \"keyring\", \"description\": \"_ses\", \"uid\": 0, \"gid\": 0, "
		"\"perm\": \"0x3f030000\", \"state\": \"valid\", \"links\": [11, 12, 13]},\n"
		"{\"serial\": 11, \"type\": \"user\", \"description\": \"a\", \"uid\": 0, \"gid\": 0, "
		"\"perm\": \"0x3f010000\", \"state\": \"valid\", \"payload\": \"eA==\"},\n"
		"{\"serial\": 12, \"type\": \"user\", \"description\": \"b\", \"uid\": 0, \"gid\": 0, "
		"\"perm\": \"0x3f010000\", \"state\": \"valid\", \"payload\": \"eA==\"},\n"
		"{\"serial\": 13, \"type\": \"user\", \"description\": \"c\", \"uid\": 0, \"gid\": 0, "
		"\"perm\": \"0x3f010000\", \"state\": \"valid\", \"payload\": \"eA==\"}\n]}\n";
#define JKEY(s, d) "{\"put\":{\"serial\":" #s ",\"type\":\"user\",\"description\":\"" d \
	"\",\"uid\":0,\"gid\":0,\"perm\":\"0x3f010000\",\"state\":\"valid\",\"payload\":\"eA==\"}}"
	static const char journal[] =
		"{\"keyfs_journal\":1}\n"
		"{\"seq\":1,\"ops\":[{\"unlink\":[10,12]}]}\n"
		"{\"seq\":2,\"ops\":[" JKEY(14, "d") ",{\"link\":[10,14]}]}\n"
		"{\"seq\":3,\"ops\":[{\"link\":[10,12]},{\"link\":[10,12]}]}\n"
		"{\"seq\":4,\"ops\":[" JKEY(15, "a") ",{\"link\":[10,15,11]},{\"del\":11}]}\n"
		"{\"seq\":5,\"ops\":[{\"del\":13}]}\n";
#undef JKEY
	const char *p = path_in("replay.json");
	char jpath[600], err[512];
	struct store_image img;
	struct store_file *sf = NULL;
	const struct store_key *r = NULL;

	snprintf(jpath, sizeof(jpath), "%s" STORE_JOURNAL_SUFFIX, p);
	ok(put_file(p, snap, strlen(snap)) == 0 &&
	   put_file(jpath, journal, strlen(journal)) == 0, "a snapshot and a journal written");
	is_int(store_open(p, NULL, &img, &sf, err, sizeof(err)), 0,
	       "they load: %s", err);
	for (size_t i = 0; i < img.nkeys; i++)
		if (img.keys[i].serial == 10)
			r = &img.keys[i];
	ok(r && r->nlinks == 3 && r->links[0] == 15 && r->links[1] == 14 &&
	   r->links[2] == 12,
	   "the keyring links 15 (in 11's place), 14, then 12 (unlinked, linked again at the end)");
	is_int(img.nkeys, 4, "11 and 13 are deleted, and no link to them is left");
	store_close(sf);
	store_image_free(&img);
}

static bool links_are(const struct store_key *k, const kserial_t *want,
		      size_t n)
{
	if (!k || k->nlinks != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (k->links[i] != want[i])
			return false;
	return true;
}

/* Replay keeps the positions of every keyring its link ops touch, found
 * by serial; a put of one of them forgets its positions, and the last
 * keyring's take their place (persist.c, ring_forget): a link op on that
 * one must still find its own. */
static void test_replay_rings(void)
{
#define KRING(s, d, links) "{\"serial\": " #s ", \"type\": \"keyring\", \"description\": \"" d \
	"\", \"uid\": 0, \"gid\": 0, \"perm\": \"0x3f030000\", \"state\": \"valid\", \"links\": [" links "]}"
#define KUSER(s, d) "{\"serial\": " #s ", \"type\": \"user\", \"description\": \"" d \
	"\", \"uid\": 0, \"gid\": 0, \"perm\": \"0x3f010000\", \"state\": \"valid\", \"payload\": \"eA==\"}"
	static const char snap[] =
		"{\"format\": 1, \"next_serial\": 100, \"session\": 10, \"keys\": [\n"
		KRING(10, "_ses", "20, 21, 22") ",\n"
		KRING(20, "r0", "30") ",\n" KRING(21, "r1", "31") ",\n" KRING(22, "r2", "32") ",\n"
		KUSER(30, "a") ",\n" KUSER(31, "a") ",\n" KUSER(32, "a") "\n]}\n";
	static const char journal[] =
		"{\"keyfs_journal\":1}\n"
		"{\"seq\":1,\"ops\":[{\"put\":" KUSER(40, "b") "},{\"link\":[20,40]},"
		"{\"put\":" KUSER(41, "b") "},{\"link\":[21,41]},"
		"{\"put\":" KUSER(42, "b") "},{\"link\":[22,42]}]}\n"
		"{\"seq\":2,\"ops\":[{\"put\":" KRING(20, "r0", "30, 40") "}]}\n"
		"{\"seq\":3,\"ops\":[{\"put\":" KUSER(43, "c") "},{\"link\":[10,43]}]}\n"
		"{\"seq\":4,\"ops\":[{\"unlink\":[22,32]}]}\n";
#undef KRING
#undef KUSER
	static const kserial_t ses[] = { 20, 21, 22, 43 }, r0[] = { 30, 40 },
			       r1[] = { 31, 41 }, r2[] = { 42 };
	const char *p = path_in("rings.json");
	char jpath[600], err[512];
	struct store_image img;
	struct store_file *sf = NULL;

	snprintf(jpath, sizeof(jpath), "%s" STORE_JOURNAL_SUFFIX, p);
	ok(put_file(p, snap, strlen(snap)) == 0 &&
	   put_file(jpath, journal, strlen(journal)) == 0, "rings: a snapshot and a journal written");
	is_int(store_open(p, NULL, &img, &sf, err, sizeof(err)), 0,
	       "rings: they load: %s", err);
	ok(links_are(find(&img, 22), r2, 1),
	   "rings: the unlink finds the keyring whose positions moved when another was put");
	ok(links_are(find(&img, 10), ses, 4) && links_are(find(&img, 20), r0, 2) &&
	   links_are(find(&img, 21), r1, 2),
	   "rings: the other keyrings' links as the journal left them");
	store_close(sf);
	store_image_free(&img);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	int ret;

	snprintf(dir, sizeof(dir), "%s/keyfs-test-store.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	big_payload = malloc(KEYFS_BIG_PAYLOAD_MAX);
	for (size_t i = 0; i < KEYFS_BIG_PAYLOAD_MAX; i++)
		big_payload[i] = (unsigned char)(i * 2654435761u >> 13);

	test_base64();
	test_missing();
	test_round_trip();
	test_rejects();
	test_io_errors();
	test_save_failures();
	test_links_undo();
	test_replay();
	test_replay_rings();

	free(big_payload);
	ret = done_testing();
	chmod(dir, 0700);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return ret;
}
