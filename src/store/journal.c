/* journal.c: append, replay and reset the store's journal, one JSON record a line (the format is in journal.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "journal.h"

#define JOURNAL_VERSION		1
#define JOURNAL_LINE_MAX	((size_t)64 << 20)	/* a 1 MiB payload in base64,
							 * sealed, with room */

struct journal {
	char *path;
	int fd;
	off_t size;
	uint64_t last_seq;
	const struct journal_codec *codec;
	unsigned tmp_n;
};

static const char *const special_names[JOURNAL_NSPECIAL] = {
	"session", "user", "user_session", "persistent",
};

/* ---- jansson's copies of a record hold payloads: wipe them ---- */

/* jansson's allocator is one global setting.  The JSON store installs a
 * wiping one of its own; install ours only while nobody has replaced the
 * default, so that an object is never freed by another scheme than the one
 * that allocated it (neither module keeps a JSON tree across calls). */
#define WIPE_HDR	16

static void *wipe_malloc(size_t n)
{
	unsigned char *p;

	if (n > SIZE_MAX - WIPE_HDR)
		return NULL;
	p = malloc(WIPE_HDR + n);
	if (!p)
		return NULL;
	memcpy(p, &n, sizeof(n));
	return p + WIPE_HDR;
}

static void wipe_free(void *ptr)
{
	unsigned char *p;
	size_t n;

	if (!ptr)
		return;
	p = (unsigned char *)ptr - WIPE_HDR;
	memcpy(&n, p, sizeof(n));
	explicit_bzero(ptr, n);
	free(p);
}

static void set_alloc_funcs(void)
{
	json_malloc_t m;
	json_free_t f;

	json_get_alloc_funcs(&m, &f);
	if (m == malloc && f == free)
		json_set_alloc_funcs(wipe_malloc, wipe_free);
}

static pthread_once_t alloc_once = PTHREAD_ONCE_INIT;

/* ---- a growable text buffer, wiped when it grows or is freed ---- */

struct buf {
	char *p;
	size_t len, cap;
};

static int buf_grow(struct buf *b, const void *s, size_t n, size_t max)
{
	if (n > max || b->len > max - n)
		return -E2BIG;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = malloc(cap);
		if (!p)
			return -ENOMEM;
		if (b->p) {
			memcpy(p, b->p, b->len);
			explicit_bzero(b->p, b->cap);
			free(b->p);
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int buf_add(struct buf *b, const void *s, size_t n)
{
	return buf_grow(b, s, n, JOURNAL_LINE_MAX);
}

static int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int buf_printf(struct buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -EINVAL;
	return buf_add(b, tmp, (size_t)n);
}

static void buf_free(struct buf *b)
{
	if (b->p) {
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	*b = (struct buf){ 0 };
}

static int dump_cb(const char *s, size_t n, void *arg)
{
	return buf_add(arg, s, n) < 0 ? -1 : 0;
}

void journal_line_free(char *line, size_t len)
{
	if (!line)
		return;
	explicit_bzero(line, len);
	free(line);
}

/* ---- encoding ---- */

static bool serial_ok(kserial_t s)
{
	return s > 0;
}

/* key_json must be one JSON object on one line with a serial: what the
 * snapshot's writer makes compact.  Checked here, so that a bad record is
 * refused before it reaches the disk rather than at the next mount. */
static int check_key_json(const char *s, size_t n)
{
	json_t *v, *serial;
	int r = 0;

	if (!s || n == 0 || memchr(s, '\n', n) || memchr(s, '\r', n))
		return -EINVAL;
	v = json_loadb(s, n, JSON_REJECT_DUPLICATES, NULL);
	if (!v)
		return -EINVAL;
	serial = json_object_get(v, "serial");
	if (!json_is_object(v) || !json_is_integer(serial) ||
	    json_integer_value(serial) < 1 || json_integer_value(serial) > INT32_MAX)
		r = -EINVAL;
	json_decref(v);
	return r;
}

static int encode_op(struct buf *b, const struct journal_op *op)
{
	int r;

	switch (op->kind) {
	case JOURNAL_PUT:
		r = check_key_json(op->key_json, op->key_len);
		if (r < 0)
			return r;
		if ((r = buf_add(b, "{\"put\":", 7)) < 0 ||
		    (r = buf_add(b, op->key_json, op->key_len)) < 0)
			return r;
		return buf_add(b, "}", 1);
	case JOURNAL_DEL:
		if (!serial_ok(op->serial))
			return -EINVAL;
		return buf_printf(b, "{\"del\":%" PRId32 "}", op->serial);
	case JOURNAL_LINK:
		if (!serial_ok(op->keyring) || !serial_ok(op->serial) ||
		    op->replace < 0 || op->keyring == op->serial)
			return -EINVAL;
		if (op->replace)
			return buf_printf(b, "{\"link\":[%" PRId32 ",%" PRId32 ",%" PRId32 "]}",
					  op->keyring, op->serial, op->replace);
		return buf_printf(b, "{\"link\":[%" PRId32 ",%" PRId32 "]}",
				  op->keyring, op->serial);
	case JOURNAL_UNLINK:
		if (!serial_ok(op->keyring) || !serial_ok(op->serial))
			return -EINVAL;
		return buf_printf(b, "{\"unlink\":[%" PRId32 ",%" PRId32 "]}",
				  op->keyring, op->serial);
	case JOURNAL_SPECIAL: {
		bool first = true;

		if ((r = buf_add(b, "{\"special\":{", 12)) < 0)
			return r;
		for (int i = 0; i < JOURNAL_NSPECIAL; i++) {
			if (!op->has_special[i])
				continue;
			if (op->special[i] < 0)
				return -EINVAL;
			r = buf_printf(b, "%s\"%s\":%" PRId32, first ? "" : ",",
				       special_names[i], op->special[i]);
			if (r < 0)
				return r;
			first = false;
		}
		if (first)
			return -EINVAL;
		return buf_add(b, "}}", 2);
	}
	}
	return -EINVAL;
}

/* The record without its '\n', in b. */
static int encode_record(struct buf *b, const struct journal_record *rec)
{
	int r;

	if (rec->seq == 0 || rec->seq > (uint64_t)INT64_MAX || rec->next_serial < 0 ||
	    (rec->nops && !rec->ops))
		return -EINVAL;
	if ((r = buf_printf(b, "{\"seq\":%" PRIu64, rec->seq)) < 0)
		return r;
	if (rec->next_serial &&
	    (r = buf_printf(b, ",\"next_serial\":%" PRId32, rec->next_serial)) < 0)
		return r;
	if ((r = buf_add(b, ",\"ops\":[", 8)) < 0)
		return r;
	for (size_t i = 0; i < rec->nops; i++) {
		if (i && (r = buf_add(b, ",", 1)) < 0)
			return r;
		if ((r = encode_op(b, &rec->ops[i])) < 0)
			return r;
	}
	return buf_add(b, "]}", 2);
}

int journal_record_encode(const struct journal_record *rec, char **line,
			  size_t *len)
{
	struct buf b = { 0 };
	int r;

	pthread_once(&alloc_once, set_alloc_funcs);
	*line = NULL;
	*len = 0;
	r = encode_record(&b, rec);
	if (r == 0)
		r = buf_add(&b, "\n", 1);
	if (r < 0) {
		buf_free(&b);
		return r;
	}
	*line = b.p;
	*len = b.len;
	return 0;
}

/* ---- decoding ---- */

static bool get_serial(json_t *v, kserial_t *out, bool zero_ok)
{
	json_int_t n;

	if (!json_is_integer(v))
		return false;
	n = json_integer_value(v);
	if (n < (zero_ok ? 0 : 1) || n > INT32_MAX)
		return false;
	*out = (kserial_t)n;
	return true;
}

/* One op object into op; a PUT's key text goes to kb (owned by the caller).
 * msg says what is wrong. */
static int decode_op(json_t *o, struct journal_op *op, struct buf *kb,
		     const char **msg)
{
	const char *name;
	json_t *v;

	*op = (struct journal_op){ 0 };
	if (!json_is_object(o) || json_object_size(o) != 1) {
		*msg = "an op must be an object with one field";
		return -EINVAL;
	}
	name = json_object_iter_key(json_object_iter(o));
	v = json_object_iter_value(json_object_iter(o));
	if (strcmp(name, "put") == 0) {
		kserial_t s;

		if (!json_is_object(v) || !get_serial(json_object_get(v, "serial"), &s, false)) {
			*msg = "put: a key object with a serial expected";
			return -EINVAL;
		}
		if (json_dump_callback(v, dump_cb, kb, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0)
			return -ENOMEM;
		op->kind = JOURNAL_PUT;
		op->serial = s;
		return 0;
	}
	if (strcmp(name, "del") == 0) {
		op->kind = JOURNAL_DEL;
		if (!get_serial(v, &op->serial, false)) {
			*msg = "del: a serial expected";
			return -EINVAL;
		}
		return 0;
	}
	if (strcmp(name, "link") == 0 || strcmp(name, "unlink") == 0) {
		bool link = name[0] == 'l';
		size_t n = json_array_size(v);

		op->kind = link ? JOURNAL_LINK : JOURNAL_UNLINK;
		if (!json_is_array(v) || n < 2 || n > (link ? 3u : 2u) ||
		    !get_serial(json_array_get(v, 0), &op->keyring, false) ||
		    !get_serial(json_array_get(v, 1), &op->serial, false) ||
		    (n == 3 && !get_serial(json_array_get(v, 2), &op->replace, false)) ||
		    op->keyring == op->serial) {
			*msg = link ? "link: [keyring, key] or [keyring, key, old] expected"
				    : "unlink: [keyring, key] expected";
			return -EINVAL;
		}
		return 0;
	}
	if (strcmp(name, "special") == 0) {
		const char *k;
		json_t *s;

		op->kind = JOURNAL_SPECIAL;
		if (!json_is_object(v) || json_object_size(v) == 0) {
			*msg = "special: an object expected";
			return -EINVAL;
		}
		json_object_foreach(v, k, s) {
			int i = 0;

			while (i < JOURNAL_NSPECIAL && strcmp(k, special_names[i]) != 0)
				i++;
			if (i == JOURNAL_NSPECIAL ||
			    !get_serial(s, &op->special[i], true)) {
				*msg = "special: unknown keyring or bad serial";
				return -EINVAL;
			}
			op->has_special[i] = true;
		}
		return 0;
	}
	*msg = "unknown op";
	return -EINVAL;
}

/* A parsed record line: check it, decode it and hand it to cb.  lineerr
 * gets the reason without the file name. */
static int apply_record(json_t *root, uint64_t last_seq, uint64_t *seq_out,
			journal_record_cb cb, void *arg,
			char *lineerr, size_t errlen)
{
	struct journal_record rec = { 0 };
	struct journal_op *ops = NULL;
	struct buf *kbs = NULL;
	json_t *seq, *ns, *arr, *v;
	const char *msg = NULL, *k;
	size_t n = 0, i;
	int r = -EINVAL;

	if (!json_is_object(root)) {
		msg = "a record must be a JSON object";
		goto out;
	}
	json_object_foreach(root, k, v) {
		if (strcmp(k, "seq") && strcmp(k, "next_serial") && strcmp(k, "ops")) {
			snprintf(lineerr, errlen, "unknown field \"%.40s\"", k);
			goto out_msg;
		}
	}
	seq = json_object_get(root, "seq");
	ns = json_object_get(root, "next_serial");
	arr = json_object_get(root, "ops");
	if (!json_is_integer(seq) || json_integer_value(seq) < 1) {
		msg = "\"seq\" must be a positive integer";
		goto out;
	}
	rec.seq = (uint64_t)json_integer_value(seq);
	if (last_seq && rec.seq != last_seq + 1) {
		snprintf(lineerr, errlen, "record %" PRIu64 " follows record %" PRIu64
			 ": a record is missing or repeated", rec.seq, last_seq);
		goto out_msg;
	}
	if (ns && !get_serial(ns, &rec.next_serial, false)) {
		msg = "\"next_serial\" must be a serial";
		goto out;
	}
	if (!json_is_array(arr)) {
		msg = "\"ops\" must be an array";
		goto out;
	}
	n = json_array_size(arr);
	if (n) {
		ops = calloc(n, sizeof(*ops));
		kbs = calloc(n, sizeof(*kbs));
		if (!ops || !kbs) {
			r = -ENOMEM;
			msg = "out of memory";
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		r = decode_op(json_array_get(arr, i), &ops[i], &kbs[i], &msg);
		if (r < 0) {
			if (r == -ENOMEM)
				msg = "out of memory";
			snprintf(lineerr, errlen, "op %zu: %s", i + 1, msg);
			goto out_msg;
		}
		if (ops[i].kind == JOURNAL_PUT) {
			ops[i].key_json = kbs[i].p;
			ops[i].key_len = kbs[i].len;
		}
	}
	rec.ops = ops;
	rec.nops = n;
	lineerr[0] = '\0';
	r = cb ? cb(arg, &rec, lineerr, errlen) : 0;
	if (r < 0 && !lineerr[0])
		snprintf(lineerr, errlen, "%s", strerror(-r));
	if (r == 0)
		*seq_out = rec.seq;
	goto out_free;
out:
	snprintf(lineerr, errlen, "%s", msg);
out_msg:
	if (r == 0)
		r = -EINVAL;
out_free:
	if (kbs)
		for (i = 0; i < n; i++)
			buf_free(&kbs[i]);
	free(kbs);
	free(ops);
	return r;
}

/* ---- replay ---- */

static int read_all(int fd, struct buf *b)
{
	struct stat sb;
	char chunk[65536];
	ssize_t n;

	if (fstat(fd, &sb) < 0)
		return -errno;
	if (!S_ISREG(sb.st_mode))
		return -EINVAL;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			explicit_bzero(chunk, sizeof(chunk));
			return -errno;
		}
		if (n == 0)
			break;
		if (buf_grow(b, chunk, (size_t)n, SIZE_MAX / 4) < 0) {
			explicit_bzero(chunk, sizeof(chunk));
			return -ENOMEM;
		}
	}
	explicit_bzero(chunk, sizeof(chunk));
	return 0;
}

/* The header line: {"keyfs_journal":1} and, sealed, "check". */
static int check_header(const char *line, size_t n, const struct journal_codec *codec,
			char *lineerr, size_t errlen)
{
	json_t *root, *ver, *check;
	const char *k;
	json_t *v;
	int r = -EINVAL;

	root = json_loadb(line, n, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(root)) {
		snprintf(lineerr, errlen, "not a keyfs journal");
		goto out;
	}
	json_object_foreach(root, k, v) {
		if (strcmp(k, "keyfs_journal") && strcmp(k, "check")) {
			snprintf(lineerr, errlen, "not a keyfs journal");
			goto out;
		}
	}
	ver = json_object_get(root, "keyfs_journal");
	check = json_object_get(root, "check");
	if (!json_is_integer(ver) || (check && !json_is_string(check))) {
		snprintf(lineerr, errlen, "not a keyfs journal");
		goto out;
	}
	if (json_integer_value(ver) != JOURNAL_VERSION) {
		snprintf(lineerr, errlen, "unknown journal version %" JSON_INTEGER_FORMAT,
			 json_integer_value(ver));
		goto out;
	}
	if (check && !codec) {
		r = -ENOKEY;
		snprintf(lineerr, errlen, "the journal is encrypted and no key was given");
		goto out;
	}
	if (!check && codec) {
		snprintf(lineerr, errlen, "the journal is not encrypted but a key was given");
		goto out;
	}
	r = 0;
	if (codec) {
		r = codec->check_verify(codec->arg, json_string_value(check));
		if (r == -EKEYREJECTED)
			snprintf(lineerr, errlen, "wrong key");
		else if (r < 0)
			snprintf(lineerr, errlen, "corrupt key check");
	}
out:
	json_decref(root);
	return r;
}

/* Format the one-line error: "PATH:LINE: what". */
static int fail_line(char *err, size_t errlen, const char *path, unsigned line,
		     const char *what, int r)
{
	if (r == -EKEYREJECTED)
		snprintf(err, errlen, "%s: %s", path, what);
	else
		snprintf(err, errlen, "%s:%u: %s", path, line, what);
	return r;
}

int journal_replay(const char *path, const struct journal_codec *codec,
		   journal_record_cb cb, void *arg, struct journal_state *st,
		   char *warn, size_t warnlen, char *err, size_t errlen)
{
	struct journal_state s = { 0 };
	struct buf b = { 0 };
	char lineerr[256];
	size_t pos = 0;
	unsigned lineno = 0;
	int fd, r = 0;

	pthread_once(&alloc_once, set_alloc_funcs);
	if (warnlen)
		warn[0] = '\0';
	if (errlen)
		err[0] = '\0';
	if (st)
		*st = s;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		r = -errno;
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(-r));
		return r;
	}
	r = read_all(fd, &b);
	close(fd);
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(-r));
		goto out;
	}
	s.file_size = (off_t)b.len;
	while (pos < b.len) {
		char *line = b.p + pos, *nl = memchr(line, '\n', b.len - pos);
		size_t n = nl ? (size_t)(nl - line) : b.len - pos;
		bool last = !nl || (size_t)(nl - b.p) + 1 == b.len;
		void *plain = NULL;
		size_t plen = 0;
		json_t *root;
		json_error_t jerr;

		lineno++;
		/* No '\n': the append that wrote it did not finish (the one
		 * write(2) of a record ends with its '\n'). */
		if (!nl)
			goto torn;
		if (lineno == 1) {
			r = check_header(line, n, codec, lineerr, sizeof(lineerr));
			if (r < 0) {
				json_t *h = json_loadb(line, n, 0, NULL);

				json_decref(h);
				if (last && r == -EINVAL && !h)
					goto torn;
				fail_line(err, errlen, path, lineno, lineerr, r);
				goto out;
			}
			s.has_header = true;
			goto next;
		}
		if (codec) {
			/* A sealed line with its '\n' was written whole: one
			 * that does not authenticate is damage, not a crash. */
			r = codec->open(codec->arg, line, n, &plain, &plen);
			if (r < 0) {
				fail_line(err, errlen, path, lineno,
					  r == -ENOMEM ? "out of memory"
					  : "corrupt (the record does not authenticate)",
					  r == -ENOMEM ? r : -EINVAL);
				r = r == -ENOMEM ? r : -EINVAL;
				goto out;
			}
			root = json_loadb(plain, plen, JSON_REJECT_DUPLICATES, &jerr);
		} else {
			root = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
		}
		if (plain) {
			explicit_bzero(plain, plen);
			free(plain);
		}
		if (!root) {
			if (last && !codec)
				goto torn;
			snprintf(lineerr, sizeof(lineerr), "JSON error: %s", jerr.text);
			r = fail_line(err, errlen, path, lineno, lineerr, -EINVAL);
			goto out;
		}
		r = apply_record(root, s.last_seq, &s.last_seq, cb, arg,
				 lineerr, sizeof(lineerr));
		json_decref(root);
		if (r < 0) {
			fail_line(err, errlen, path, lineno, lineerr, r);
			goto out;
		}
		if (!s.has_header) {
			r = fail_line(err, errlen, path, lineno, "no header", -EINVAL);
			goto out;
		}
next:
		pos += n + 1;
		s.valid_end = (off_t)pos;
		continue;
torn:
		snprintf(warn, warnlen, "%s: dropped a torn last record at byte %zu "
			 "(a write cut short by a crash)", path, pos);
		break;
	}
	r = 0;
	if (st)
		*st = s;
out:
	buf_free(&b);
	return r;
}

/* ---- writing ---- */

static int fsync_dir_of(const char *path)
{
	char *copy = strdup(path);
	int fd, r = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The header line, with its '\n', in b. */
static int make_header(const struct journal_codec *codec, struct buf *b)
{
	char *check = NULL;
	int r;

	if (!codec)
		return buf_printf(b, "{\"keyfs_journal\":%d}\n", JOURNAL_VERSION);
	r = codec->check_make(codec->arg, &check);
	if (r < 0)
		return r;
	/* The check value is base64 or similar: no quoting needed, but be
	 * sure, as it goes into JSON by hand. */
	if (strpbrk(check, "\"\\\n") || (r = buf_printf(b, "{\"keyfs_journal\":%d,\"check\":\"",
							 JOURNAL_VERSION)) < 0 ||
	    (r = buf_add(b, check, strlen(check))) < 0 || (r = buf_add(b, "\"}\n", 3)) < 0) {
		free(check);
		return r < 0 ? r : -EINVAL;
	}
	free(check);
	return 0;
}

/* Write the header to an empty fd and fsync it. */
static int write_header(int fd, const struct journal_codec *codec, off_t *size)
{
	struct buf b = { 0 };
	int r;

	r = make_header(codec, &b);
	if (r == 0)
		r = write_all(fd, b.p, b.len);
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	if (r == 0)
		*size = (off_t)b.len;
	buf_free(&b);
	return r;
}

static bool codec_ok(const struct journal_codec *codec)
{
	return !codec || (codec->seal && codec->open && codec->check_make && codec->check_verify);
}

int journal_open(const char *path, const struct journal_codec *codec,
		 const struct journal_state *st, struct journal **jp)
{
	struct journal *j;
	struct stat sb;
	bool created = false;
	int r;

	*jp = NULL;
	if (!codec_ok(codec))
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fd = -1;
	j->codec = codec;
	j->path = strdup(path);
	if (!j->path) {
		r = -ENOMEM;
		goto fail;
	}
	j->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (j->fd < 0 && errno == ENOENT) {
		j->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC |
			     O_NOFOLLOW | O_NOCTTY, 0600);
		created = true;
	}
	if (j->fd < 0) {
		r = -errno;
		goto fail;
	}
	if (fstat(j->fd, &sb) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISREG(sb.st_mode)) {
		r = -EINVAL;
		goto fail;
	}
	/* The file must be what replay saw: appending after records nobody
	 * has applied would lose them at the next compaction. */
	if (st ? sb.st_size != st->file_size : sb.st_size != 0) {
		r = -ESTALE;
		goto fail;
	}
	/* Never readable by others, whatever made it. */
	if ((sb.st_mode & 07777) != 0600 && fchmod(j->fd, 0600) < 0) {
		r = -errno;
		goto fail;
	}
	if (st) {
		j->last_seq = st->last_seq;
		j->size = st->has_header ? st->valid_end : 0;
	}
	/* A torn tail, or a torn header, goes: the next record must start a
	 * line of its own. */
	if (sb.st_size != j->size) {
		if (ftruncate(j->fd, j->size) < 0 || fdatasync(j->fd) < 0) {
			r = -errno;
			goto fail;
		}
	}
	if (j->size == 0) {
		r = write_header(j->fd, codec, &j->size);
		if (r < 0)
			goto fail;
	}
	if (created && (r = fsync_dir_of(path)) < 0)
		goto fail;
	*jp = j;
	return 0;
fail:
	if (created && j->fd >= 0)
		unlink(path);
	journal_close(j);
	return r;
}

int journal_append(struct journal *j, const struct journal_record *rec)
{
	struct journal_record r1 = *rec;
	struct buf b = { 0 };
	char *sealed = NULL;
	size_t slen = 0;
	int r;

	r1.seq = j->last_seq + 1;
	r = encode_record(&b, &r1);
	if (r < 0)
		goto out;
	if (j->codec) {
		r = j->codec->seal(j->codec->arg, b.p, b.len, &sealed, &slen);
		if (r < 0)
			goto out;
		buf_free(&b);
		if (memchr(sealed, '\n', slen)) {
			r = -EINVAL;
			goto out;
		}
		r = buf_add(&b, sealed, slen);
		if (r < 0)
			goto out;
	}
	r = buf_add(&b, "\n", 1);
	if (r < 0)
		goto out;
	/* One write(2) with O_APPEND; fdatasync is enough for an append (it
	 * writes the new size with the data). */
	r = write_all(j->fd, b.p, b.len);
	if (r == 0 && fdatasync(j->fd) < 0)
		r = -errno;
	if (r < 0) {
		/* Take back what may have reached the file, so the next
		 * record does not follow a partial one. */
		if (ftruncate(j->fd, j->size) == 0)
			(void)fdatasync(j->fd);
		goto out;
	}
	j->size += (off_t)b.len;
	j->last_seq = r1.seq;
out:
	if (sealed) {
		explicit_bzero(sealed, slen);
		free(sealed);
	}
	buf_free(&b);
	return r;
}

off_t journal_size(const struct journal *j)
{
	return j->size;
}

int journal_reset(struct journal *j)
{
	char *copy = NULL, *tmp = NULL;
	const char *base;
	off_t size = 0;
	int fd = -1, r;

	copy = strdup(j->path);
	if (!copy)
		return -ENOMEM;
	base = basename(copy);
	/* Beside the journal, so the rename is atomic; the same pattern as
	 * the snapshot's temporary files, and O_EXCL. */
	do {
		free(tmp);
		tmp = NULL;
		if (asprintf(&tmp, "%.*s.%s.tmp.%ld.%u",
			     (int)(strlen(j->path) - strlen(base)), j->path, base,
			     (long)getpid(), j->tmp_n++) < 0) {
			tmp = NULL;
			r = -ENOMEM;
			goto out;
		}
		fd = open(tmp, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC |
			  O_NOFOLLOW | O_NOCTTY, 0600);
	} while (fd < 0 && errno == EEXIST);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_header(fd, j->codec, &size);
	if (r == 0 && fchmod(fd, 0600) < 0)
		r = -errno;
	if (r == 0 && rename(tmp, j->path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		close(fd);
		goto out;
	}
	/* Renamed: from here the new file is the journal, whatever the
	 * directory's fsync says. */
	close(j->fd);
	j->fd = fd;
	j->size = size;
	r = fsync_dir_of(j->path);
out:
	free(tmp);
	free(copy);
	return r;
}

void journal_close(struct journal *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	free(j->path);
	free(j);
}

bool journal_needs_compaction(uint64_t journal_bytes, uint64_t snapshot_bytes)
{
	uint64_t limit = snapshot_bytes / 2;

	if (limit < JOURNAL_COMPACT_MIN)
		limit = JOURNAL_COMPACT_MIN;
	return journal_bytes > limit;
}
