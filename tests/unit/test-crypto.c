/* test-crypto.c: unit tests of the store's encryption: sealing, the distinct errors, key sources, and a sealed journal. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "journal.h"
#include "tap.h"

static char dir[256];

static char *path_in(const char *name)
{
	static char buf[4][512];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

static void write_key(const char *p, size_t len, mode_t mode, unsigned char fill)
{
	unsigned char k[64];
	int fd;

	memset(k, fill, sizeof(k));
	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, k, len) != (ssize_t)len || fchmod(fd, mode) < 0)
		abort();
	close(fd);
}

static struct crypto_key *key_of(unsigned char fill)
{
	unsigned char k[CRYPTO_KEY_BYTES];
	struct crypto_key *key;

	memset(k, fill, sizeof(k));
	if (crypto_key_from_bytes(k, sizeof(k), &key) < 0)
		abort();
	return key;
}

static const char plain[] = "{\"description\":\"db:password\",\"payload\":\"aHVudGVyMg==\"}";

static void test_seal(void)
{
	struct crypto_key *k = key_of(1), *other = key_of(2);
	char *sealed, err[256];
	size_t len, olen, i;
	void *out;
	int bad = 0, trunc = 0;

	is_int(crypto_seal_file(k, plain, strlen(plain), &sealed, &len), 0, "seal");
	ok(strncmp(sealed, CRYPTO_MAGIC "\ncheck ", strlen(CRYPTO_MAGIC) + 7) == 0, "header");
	ok(crypto_is_sealed(sealed, len), "looks sealed");
	ok(!crypto_is_sealed(plain, strlen(plain)), "plain does not");
	ok(!memmem(sealed, len, "db:password", 11) && !memmem(sealed, len, "aHVudGVyMg", 10) &&
	   !memmem(sealed, len, "hunter2", 7), "no plaintext in the sealed file");
	is_int(crypto_open_file(k, sealed, len, &out, &olen, err, sizeof(err)), 0, "open");
	ok(olen == strlen(plain) && memcmp(out, plain, olen) == 0, "round trip");
	free(out);

	is_int(crypto_open_file(other, sealed, len, &out, &olen, err, sizeof(err)), -EKEYREJECTED,
	       "another key");
	is_str(err, "wrong key", "says wrong key");

	/* Every bit after the magic line, flipped, is corruption; but the
	 * last '\n' gone is a truncation.  The high bit too: libsodium
	 * 1.0.18's decoder reads '/' with it set (0xaf) as '/'. */
	for (i = sizeof(CRYPTO_MAGIC); i < len - 1; i++) {
		for (int bit = 0; bit < 8; bit++) {
			sealed[i] ^= (char)(1 << bit);
			if (crypto_open_file(k, sealed, len, &out, &olen, err, sizeof(err)) != -EBADMSG ||
			    strncmp(err, "corrupt", 7) != 0) {
				if (!bad)
					printf("# byte %zu bit %d: %s\n", i, bit, err);
				bad++;
			}
			sealed[i] ^= (char)(1 << bit);
		}
	}
	is_int(bad, 0, "a flipped bit anywhere after the magic says corrupt (%zu bytes)", len);
	sealed[3] ^= 0x20;
	is_int(crypto_open_file(k, sealed, len, &out, &olen, err, sizeof(err)), -ENOMSG,
	       "a flipped byte in the magic: not an encrypted store");
	sealed[3] ^= 0x20;

	for (i = 0; i < len; i++)
		if (crypto_open_file(k, sealed, i, &out, &olen, err, sizeof(err)) != -ENODATA ||
		    strcmp(err, "truncated") != 0)
			trunc++;
	is_int(trunc, 0, "every truncation says truncated");

	/* Sealing twice gives two files (fresh nonce). */
	{
		char *s2;
		size_t l2;

		crypto_seal_file(k, plain, strlen(plain), &s2, &l2);
		ok(l2 == len && memcmp(s2, sealed, len) != 0, "a fresh nonce each time");
		free(s2);
	}
	free(sealed);
	crypto_key_free(k);
	crypto_key_free(other);
}

static void test_record(void)
{
	struct crypto_key *k = key_of(1), *other = key_of(2);
	char *sealed, *check;
	size_t len, olen;
	void *out;

	is_int(crypto_seal_record(k, plain, strlen(plain), &sealed, &len), 0, "seal a record");
	ok(!memchr(sealed, '\n', len) && !memmem(sealed, len, "password", 8), "one line, no plaintext");
	is_int(crypto_open_record(k, sealed, len, &out, &olen), 0, "open it");
	ok(olen == strlen(plain) && memcmp(out, plain, olen) == 0, "round trip");
	free(out);
	is_int(crypto_open_record(other, sealed, len, &out, &olen), -EBADMSG, "another key fails");
	sealed[len / 2] ^= 0x01;
	is_int(crypto_open_record(k, sealed, len, &out, &olen), -EBADMSG, "a flipped byte fails");
	free(sealed);

	is_int(crypto_check_make(k, &check), 0, "check value");
	is_int(crypto_check_verify(k, check), 0, "same key");
	is_int(crypto_check_verify(other, check), -EKEYREJECTED, "another key");
	check[3] ^= 0x01;
	is_int(crypto_check_verify(k, check), -EBADMSG, "damaged");
	free(check);
	crypto_key_free(k);
	crypto_key_free(other);
}

static int fake_kernel(const char *type, const char *desc, void *buf, size_t *len)
{
	size_t want = strcmp(desc, "short") == 0 ? 16 : 32;

	if (strcmp(type, "user") != 0 && strcmp(type, "logon") != 0)
		return -EINVAL;
	if (strcmp(desc, "missing") == 0)
		return -ENOKEY;
	if (*len >= want)
		memset(buf, 7, want);
	*len = want;
	return 0;
}

static int load(const char *spec, char *err)
{
	struct crypto_key *k;
	int r = crypto_key_load(spec, getuid(), fake_kernel, &k, err, 256);

	crypto_key_free(k);
	return r;
}

static void test_sources(void)
{
	char spec[600], err[256];
	const char *kf = path_in("key");

	snprintf(spec, sizeof(spec), "file:%s", kf);
	write_key(kf, 32, 0600, 1);
	is_int(load(spec, err), 0, "file: 32 bytes, 0600");
	write_key(kf, 32, 0400, 1);
	is_int(load(spec, err), 0, "file: 0400");
	write_key(kf, 32, 0644, 1);
	is_int(load(spec, err), -EPERM, "file: 0644 refused");
	ok(strstr(err, "mode 0644: it must be 0600 or 0400") && strstr(err, kf), "%s", err);
	write_key(kf, 32, 0640, 1);
	is_int(load(spec, err), -EPERM, "file: 0640 refused");
	write_key(kf, 31, 0600, 1);
	is_int(load(spec, err), -EBADMSG, "file: 31 bytes refused");
	ok(strstr(err, "31 bytes: a key file holds exactly 32") != NULL, "%s", err);
	write_key(kf, 33, 0600, 1);
	is_int(load(spec, err), -EBADMSG, "file: 33 bytes refused");
	ok(strstr(err, "more than 32 bytes") != NULL, "%s", err);
	write_key(kf, 32, 0600, 1);
	if (getuid() == 0) {
		ok(chown(kf, 1, 1) == 0, "give the key file to uid 1");
		is_int(load(spec, err), -EPERM, "file: another owner refused");
		ok(strstr(err, "owned by uid 1, not by the mounter (uid 0)") != NULL, "%s", err);
		ok(chown(kf, 0, 0) == 0, "back to root");
	} else {
		printf("ok %d # skip chown needs root\n", ++tap_n);
	}
	ok(symlink(kf, path_in("link")) == 0, "a symbolic link to the key");
	snprintf(spec, sizeof(spec), "file:%s", path_in("link"));
	is_int(load(spec, err), -ELOOP, "file: a symbolic link refused");
	snprintf(spec, sizeof(spec), "file:%s", path_in("nokey"));
	is_int(load(spec, err), -ENOKEY, "file: missing");
	is_int(load("file:relative/key", err), -EINVAL, "file: relative path refused");

	setenv("CREDENTIALS_DIRECTORY", dir, 1);
	is_int(load("cred:key", err), 0, "cred: found in $CREDENTIALS_DIRECTORY");
	is_int(load("cred:../key", err), -EINVAL, "cred: no slashes");
	unsetenv("CREDENTIALS_DIRECTORY");
	is_int(load("cred:key", err), -ENOKEY, "cred: without $CREDENTIALS_DIRECTORY");
	ok(strstr(err, "$CREDENTIALS_DIRECTORY is not set") != NULL, "%s", err);

	is_int(load("%user:store", err), 0, "%%user: through the caller's reader");
	is_int(load("%logon:store", err), 0, "%%logon: too");
	is_int(load("%user:missing", err), -ENOKEY, "%%user: missing");
	ok(strstr(err, "no such key") != NULL, "%s", err);
	is_int(load("%user:short", err), -EBADMSG, "%%user: 16 bytes refused");
	is_int(load("%big_key:x", err), -EINVAL, "other types refused");
	is_int(load("hex:00", err), -EINVAL, "unknown source refused");
	{
		struct crypto_key *k;

		is_int(crypto_key_load("%user:store", 0, NULL, &k, err, sizeof(err)), -EOPNOTSUPP,
		       "no kernel reader: refused");
	}
}

/* The journal, sealed with the store key. */
static int count(void *arg, const struct journal_record *rec, char *err, size_t errlen)
{
	(void)rec;
	(void)err;
	(void)errlen;
	++*(int *)arg;
	return 0;
}

static void test_sealed_journal(void)
{
	struct crypto_key *k = key_of(1), *other = key_of(2);
	struct journal_codec codec = { crypto_seal_record, crypto_open_record,
				       crypto_check_make, crypto_check_verify, k };
	struct journal_codec wrong = codec;
	static const char key3[] = "{\"serial\":3,\"type\":\"user\",\"description\":\"db:password\","
		"\"payload\":\"aHVudGVyMg==\"}";
	struct journal_op op = { .kind = JOURNAL_PUT, .key_json = key3, .key_len = sizeof(key3) - 1 };
	struct journal_record rec = { .ops = &op, .nops = 1 };
	const char *p = path_in("sealed.journal");
	struct journal_state st;
	struct journal *j;
	char warn[256], err[256], text[8192];
	int n = 0, fd;
	ssize_t len;

	wrong.arg = other;
	is_int(journal_open(p, &codec, NULL, &j), 0, "open a sealed journal");
	for (int i = 0; i < 3; i++)
		journal_append(j, &rec);
	journal_close(j);
	fd = open(p, O_RDONLY);
	len = read(fd, text, sizeof(text));
	close(fd);
	ok(len > 0 && !memmem(text, (size_t)len, "db:password", 11) &&
	   !memmem(text, (size_t)len, "aHVudGVyMg", 10), "no description or payload in the file");
	is_int(journal_replay(p, &codec, count, &n, &st, warn, sizeof(warn), err, sizeof(err)), 0,
	       "replay with the key");
	is_int(n, 3, "three records");
	is_int(journal_replay(p, &wrong, count, &n, NULL, warn, sizeof(warn), err, sizeof(err)),
	       -EKEYREJECTED, "another key");
	ok(strstr(err, "sealed.journal: wrong key") != NULL, "%s", err);
	is_int(journal_replay(p, NULL, count, &n, NULL, warn, sizeof(warn), err, sizeof(err)),
	       -ENOKEY, "no key");

	/* A flipped byte in the middle record: corrupt, line 3. */
	{
		char *l3 = strchr(strchr(text, '\n') + 1, '\n') + 1;

		l3[10] ^= 0x01;
		fd = open(p, O_WRONLY | O_TRUNC);
		ok(write(fd, text, (size_t)len) == len, "flip a byte of record 2");
		close(fd);
		is_int(journal_replay(p, &codec, count, &n, NULL, warn, sizeof(warn), err, sizeof(err)),
		       -EINVAL, "refused");
		ok(strstr(err, "sealed.journal:3: corrupt") != NULL, "%s", err);
		l3[10] ^= 0x01;
	}
	/* A torn sealed record: dropped, as unsealed. */
	fd = open(p, O_WRONLY | O_TRUNC);
	ok(write(fd, text, (size_t)len - 5) == len - 5, "cut the last record");
	close(fd);
	n = 0;
	is_int(journal_replay(p, &codec, count, &n, &st, warn, sizeof(warn), err, sizeof(err)), 0,
	       "torn sealed record dropped");
	is_int(n, 2, "two records");
	ok(strstr(warn, "torn last record") != NULL, "%s", warn);
	crypto_key_free(k);
	crypto_key_free(other);
}

int main(void)
{
	char cmd[300];

	snprintf(dir, sizeof(dir), "%s/keyfs-crypto.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return 99;
	test_seal();
	test_record();
	test_sources();
	test_sealed_journal();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return done_testing();
}
