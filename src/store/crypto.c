/* crypto.c: the store key and its sources, sealing and opening the snapshot and journal lines with libsodium. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "base64.h"
#include "crypto.h"

#define NONCE_BYTES	crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_BYTES	crypto_aead_xchacha20poly1305_ietf_ABYTES
#define CHECK_BYTES	32
#define CHECKSUM_BYTES	8

/* Subkeys, so that no key does two jobs: one for the check value, one per
 * kind of sealed thing. */
#define KDF_CONTEXT	"keyfs-st"
enum { SUB_CHECK = 1, SUB_FILE = 2, SUB_RECORD = 3 };

static const char check_const[] = "keyfs store key check v1";
static const char record_ad[] = "keyfs journal record v1";

struct crypto_key {
	unsigned char check[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	unsigned char file[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	unsigned char record[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
};

/* ---- keys ---- */

int crypto_key_from_bytes(const void *bytes, size_t len, struct crypto_key **keyp)
{
	struct crypto_key *k;

	*keyp = NULL;
	if (len != CRYPTO_KEY_BYTES)
		return -EBADMSG;
	if (sodium_init() < 0)
		return -EIO;
	k = sodium_malloc(sizeof(*k));
	if (!k)
		return -ENOMEM;
	if (crypto_kdf_derive_from_key(k->check, sizeof(k->check), SUB_CHECK, KDF_CONTEXT, bytes) ||
	    crypto_kdf_derive_from_key(k->file, sizeof(k->file), SUB_FILE, KDF_CONTEXT, bytes) ||
	    crypto_kdf_derive_from_key(k->record, sizeof(k->record), SUB_RECORD, KDF_CONTEXT, bytes)) {
		crypto_key_free(k);
		return -EIO;
	}
	sodium_mprotect_readonly(k);
	*keyp = k;
	return 0;
}

void crypto_key_free(struct crypto_key *key)
{
	if (!key)
		return;
	sodium_mprotect_readwrite(key);
	sodium_memzero(key, sizeof(*key));
	sodium_free(key);
}

/* A key file: regular, not a symbolic link, the mounter's, 0600 or 0400,
 * exactly 32 bytes.  what names it in messages. */
static int key_from_file(const char *path, const char *what, uid_t uid,
			 struct crypto_key **keyp, char *err, size_t errlen)
{
	unsigned char *buf;
	struct stat sb;
	ssize_t n;
	size_t got = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			snprintf(err, errlen, "%s: a key file must not be a symbolic link", what);
		else
			snprintf(err, errlen, "%s: cannot read the key: %s", what, strerror(-r));
		return r == -ENOENT ? -ENOKEY : r;
	}
	if (fstat(fd, &sb) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: cannot read the key: %s", what, strerror(-r));
		close(fd);
		return r;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: a key file must be a regular file", what);
		close(fd);
		return -EINVAL;
	}
	if (sb.st_uid != uid) {
		snprintf(err, errlen, "%s: key file owned by uid %u, not by the mounter (uid %u)",
			 what, (unsigned)sb.st_uid, (unsigned)uid);
		close(fd);
		return -EPERM;
	}
	if ((sb.st_mode & 07777) != 0600 && (sb.st_mode & 07777) != 0400) {
		snprintf(err, errlen, "%s: key file mode %04o: it must be 0600 or 0400",
			 what, (unsigned)(sb.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	/* One byte more than a key, to see a file that is too long. */
	buf = sodium_malloc(CRYPTO_KEY_BYTES + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		n = read(fd, buf + got, CRYPTO_KEY_BYTES + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == CRYPTO_KEY_BYTES + 1)
			break;
	}
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		snprintf(err, errlen, "%s: cannot read the key: %s", what, strerror(-r));
	else if (got > CRYPTO_KEY_BYTES) {
		snprintf(err, errlen, "%s: more than %d bytes: a key file holds exactly %d",
			 what, CRYPTO_KEY_BYTES, CRYPTO_KEY_BYTES);
		r = -EBADMSG;
	} else if (got < CRYPTO_KEY_BYTES) {
		snprintf(err, errlen, "%s: %zu bytes: a key file holds exactly %d",
			 what, got, CRYPTO_KEY_BYTES);
		r = -EBADMSG;
	}
	if (r == 0) {
		r = crypto_key_from_bytes(buf, CRYPTO_KEY_BYTES, keyp);
		if (r < 0)
			snprintf(err, errlen, "%s: %s", what, strerror(-r));
	}
	sodium_memzero(buf, CRYPTO_KEY_BYTES + 1);
	sodium_free(buf);
	return r;
}

static int key_from_kernel(const char *type, const char *desc, const char *spec,
			   crypto_read_kernel_key_fn rk, struct crypto_key **keyp,
			   char *err, size_t errlen)
{
	/* Room for more than a key, to see one that is too long. */
	size_t room = 2 * CRYPTO_KEY_BYTES, len = room;
	unsigned char *buf;
	int r;

	if (!rk) {
		snprintf(err, errlen, "%s: kernel keys cannot be read here", spec);
		return -EOPNOTSUPP;
	}
	if (!desc[0]) {
		snprintf(err, errlen, "%s: no key description", spec);
		return -EINVAL;
	}
	buf = sodium_malloc(room);
	if (!buf)
		return -ENOMEM;
	r = rk(type, desc, buf, &len);
	if (r < 0) {
		if (r == -ENOKEY)
			snprintf(err, errlen, "%s: no such key in the mounter's keyrings", spec);
		else if (r == -EOPNOTSUPP && strcmp(type, "logon") == 0)
			/* The kernel hands a logon key's payload to its own
			 * users (dm-crypt, fscrypt, cifs), never to a program. */
			snprintf(err, errlen, "%s: a logon key cannot be read from user space: use a %%user: key, file: or cred:",
				 spec);
		else
			snprintf(err, errlen, "%s: cannot read the key: %s", spec, strerror(-r));
	} else if (len != CRYPTO_KEY_BYTES) {
		snprintf(err, errlen, "%s: the key holds %s%zu bytes, not exactly %d", spec,
			 len > room ? "more than " : "", len > room ? room : len, CRYPTO_KEY_BYTES);
		r = -EBADMSG;
	} else {
		r = crypto_key_from_bytes(buf, CRYPTO_KEY_BYTES, keyp);
	}
	sodium_memzero(buf, room);
	sodium_free(buf);
	return r;
}

int crypto_key_load(const char *spec, uid_t uid, crypto_read_kernel_key_fn rk,
		    struct crypto_key **keyp, char *err, size_t errlen)
{
	*keyp = NULL;
	if (errlen)
		err[0] = '\0';
	if (sodium_init() < 0) {
		snprintf(err, errlen, "cannot initialise libsodium");
		return -EIO;
	}
	if (strncmp(spec, "file:", 5) == 0) {
		if (spec[5] != '/') {
			snprintf(err, errlen, "%s: the key file must be an absolute path", spec);
			return -EINVAL;
		}
		return key_from_file(spec + 5, spec + 5, uid, keyp, err, errlen);
	}
	if (strncmp(spec, "cred:", 5) == 0) {
		const char *name = spec + 5, *dir = getenv("CREDENTIALS_DIRECTORY");
		char *path;
		int r;

		if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 ||
		    strcmp(name, "..") == 0) {
			snprintf(err, errlen, "%s: not a credential name", spec);
			return -EINVAL;
		}
		if (!dir || dir[0] != '/') {
			snprintf(err, errlen, "%s: $CREDENTIALS_DIRECTORY is not set (not run by systemd with LoadCredential=?)",
				 spec);
			return -ENOKEY;
		}
		if (asprintf(&path, "%s/%s", dir, name) < 0)
			return -ENOMEM;
		r = key_from_file(path, path, uid, keyp, err, errlen);
		free(path);
		return r;
	}
	if (strncmp(spec, "%user:", 6) == 0)
		return key_from_kernel("user", spec + 6, spec, rk, keyp, err, errlen);
	if (strncmp(spec, "%logon:", 7) == 0)
		return key_from_kernel("logon", spec + 7, spec, rk, keyp, err, errlen);
	snprintf(err, errlen, "store_key=%.64s: expected file:PATH, cred:NAME, %%user:NAME or %%logon:NAME",
		 spec);
	return -EINVAL;
}

/* ---- the check value ---- */

static void check_value(const struct crypto_key *key, unsigned char out[CHECK_BYTES + CHECKSUM_BYTES])
{
	crypto_generichash(out, CHECK_BYTES, (const unsigned char *)check_const,
			   sizeof(check_const) - 1, key->check, sizeof(key->check));
	crypto_generichash(out + CHECK_BYTES, CHECKSUM_BYTES, out, CHECK_BYTES, NULL, 0);
}

/* base64 of len bytes, malloc'd, NUL-terminated. */
static char *b64_alloc(const unsigned char *in, size_t len, size_t *outlen)
{
	size_t n = base64_encoded_len(len);
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	base64_encode(in, len, s);
	if (outlen)
		*outlen = n;
	return s;
}

/* Strict base64 (base64.h) of exactly len characters into out (room
 * bytes); the project's own decoder, as the payloads of a plain store
 * use: libsodium 1.0.18's (Debian 12's) reads some bytes outside the
 * alphabet as characters of it ('/' with the high bit set, 0xaf, as '/'),
 * so a flipped bit there would go unseen. */
static int b64_decode(const char *in, size_t len, unsigned char *out, size_t room,
		      size_t *outlen)
{
	if (base64_decoded_max(len) > room || base64_decode(in, len, out, outlen) < 0)
		return -EBADMSG;
	return 0;
}

int crypto_check_make(void *keyp, char **out)
{
	unsigned char v[CHECK_BYTES + CHECKSUM_BYTES];

	check_value(keyp, v);
	*out = b64_alloc(v, sizeof(v), NULL);
	return *out ? 0 : -ENOMEM;
}

int crypto_check_verify(void *keyp, const char *text)
{
	unsigned char got[CHECK_BYTES + CHECKSUM_BYTES + 3], want[CHECK_BYTES + CHECKSUM_BYTES];
	unsigned char sum[CHECKSUM_BYTES];
	size_t n;

	if (b64_decode(text, strlen(text), got, sizeof(got), &n) < 0 || n != sizeof(want))
		return -EBADMSG;
	crypto_generichash(sum, sizeof(sum), got, CHECK_BYTES, NULL, 0);
	if (sodium_memcmp(sum, got + CHECK_BYTES, sizeof(sum)) != 0)
		return -EBADMSG;
	check_value(keyp, want);
	return sodium_memcmp(got, want, CHECK_BYTES) == 0 ? 0 : -EKEYREJECTED;
}

/* ---- sealing ---- */

/* nonce || ciphertext of in, base64'd into a malloc'd string. */
static int seal_b64(const unsigned char *k, const void *in, size_t len,
		    const void *ad, size_t adlen, char **out, size_t *outlen)
{
	size_t blen = NONCE_BYTES + len + TAG_BYTES;
	unsigned char *b;

	*out = NULL;
	if (len > SIZE_MAX / 2 - NONCE_BYTES - TAG_BYTES)
		return -E2BIG;
	b = malloc(blen);
	if (!b)
		return -ENOMEM;
	randombytes_buf(b, NONCE_BYTES);
	crypto_aead_xchacha20poly1305_ietf_encrypt(b + NONCE_BYTES, NULL, in, len, ad, adlen,
						   NULL, b, k);
	*out = b64_alloc(b, blen, outlen);
	free(b);	/* ciphertext: nothing secret */
	return *out ? 0 : -ENOMEM;
}

/* The reverse: -EBADMSG for anything that does not decode or authenticate. */
static int open_b64(const unsigned char *k, const char *in, size_t len,
		    const void *ad, size_t adlen, void **out, size_t *outlen)
{
	size_t room = len / 4 * 3 + 3, blen;
	unsigned char *b, *p = NULL;
	unsigned long long plen;
	int r = -EBADMSG;

	*out = NULL;
	*outlen = 0;
	b = malloc(room);
	if (!b)
		return -ENOMEM;
	if (b64_decode(in, len, b, room, &blen) < 0 || blen < NONCE_BYTES + TAG_BYTES)
		goto out;
	p = malloc(blen - NONCE_BYTES - TAG_BYTES + 1);
	if (!p) {
		r = -ENOMEM;
		goto out;
	}
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(p, &plen, NULL, b + NONCE_BYTES,
						       blen - NONCE_BYTES, ad, adlen, b, k) != 0) {
		free(p);	/* nothing was written that authenticates */
		p = NULL;
		goto out;
	}
	p[plen] = '\0';
	*out = p;
	*outlen = (size_t)plen;
	r = 0;
out:
	free(b);
	return r;
}

int crypto_seal_record(void *keyp, const void *in, size_t len, char **out, size_t *outlen)
{
	const struct crypto_key *key = keyp;

	return seal_b64(key->record, in, len, record_ad, sizeof(record_ad) - 1, out, outlen);
}

int crypto_open_record(void *keyp, const char *in, size_t len, void **out, size_t *outlen)
{
	const struct crypto_key *key = keyp;

	return open_b64(key->record, in, len, record_ad, sizeof(record_ad) - 1, out, outlen);
}

int crypto_seal_file(const struct crypto_key *key, const void *plain, size_t len,
		     char **out, size_t *outlen)
{
	char *check = NULL, *body = NULL, *head = NULL, *res;
	size_t blen, hlen;
	int r;

	*out = NULL;
	r = crypto_check_make((void *)key, &check);
	if (r < 0)
		return r;
	if (asprintf(&head, CRYPTO_MAGIC "\ncheck %s\n", check) < 0) {
		free(check);
		return -ENOMEM;
	}
	free(check);
	hlen = strlen(head);
	r = seal_b64(key->file, plain, len, head, hlen, &body, &blen);
	if (r < 0)
		goto out;
	res = malloc(hlen + blen + 2);
	if (!res) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(res, head, hlen);
	memcpy(res + hlen, body, blen);
	res[hlen + blen] = '\n';
	res[hlen + blen + 1] = '\0';
	*out = res;
	*outlen = hlen + blen + 1;
out:
	free(body);
	free(head);
	return r;
}

int crypto_is_sealed(const char *in, size_t len)
{
	size_t m = sizeof(CRYPTO_MAGIC) - 1;

	return len > m && memcmp(in, CRYPTO_MAGIC "\n", m + 1) == 0;
}

int crypto_open_file(const struct crypto_key *key, const char *in, size_t len,
		     void **out, size_t *outlen, char *err, size_t errlen)
{
	size_t m = sizeof(CRYPTO_MAGIC);	/* with its '\n' */
	const char *l2, *nl2, *l3, *nl3;
	char *check;
	int r;

	*out = NULL;
	*outlen = 0;
	if (len < m && memcmp(in, CRYPTO_MAGIC "\n", len) == 0) {
		snprintf(err, errlen, "truncated");
		return -ENODATA;
	}
	if (!crypto_is_sealed(in, len)) {
		snprintf(err, errlen, "not an encrypted store");
		return -ENOMSG;
	}
	l2 = in + m;
	nl2 = memchr(l2, '\n', len - m);
	if (!nl2) {
		snprintf(err, errlen, "truncated");
		return -ENODATA;
	}
	if (nl2 - l2 < 6 || memcmp(l2, "check ", 6) != 0) {
		snprintf(err, errlen, "corrupt (bad key check line)");
		return -EBADMSG;
	}
	check = strndup(l2 + 6, (size_t)(nl2 - l2 - 6));
	if (!check)
		return -ENOMEM;
	r = crypto_check_verify((void *)key, check);
	free(check);
	if (r == -EKEYREJECTED) {
		snprintf(err, errlen, "wrong key");
		return r;
	}
	if (r < 0) {
		snprintf(err, errlen, "corrupt (bad key check value)");
		return -EBADMSG;
	}
	l3 = nl2 + 1;
	nl3 = memchr(l3, '\n', len - (size_t)(l3 - in));
	if (!nl3) {
		snprintf(err, errlen, "truncated");
		return -ENODATA;
	}
	if ((size_t)(nl3 - in) + 1 != len) {
		snprintf(err, errlen, "corrupt (bytes after the sealed data)");
		return -EBADMSG;
	}
	r = open_b64(key->file, l3, (size_t)(nl3 - l3), in, (size_t)(l3 - in), out, outlen);
	if (r == -EBADMSG)
		snprintf(err, errlen, "corrupt (the sealed data does not authenticate)");
	return r;
}
