/* journal.c: append, replay and reset the store's journal, one JSON record a line (the format is in journal.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "journal-int.h"
#include "json-alloc.h"


struct journal {
	char *path;
	int fd;
	off_t size;
	uint64_t last_seq;
	const struct journal_codec *codec;
	unsigned tmp_n;
};


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
	/* One line, whatever the file held (jansson quotes what it read). */
	for (char *p = err; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return r;
}

/* What one line of a journal is, as replay_line finds it. */
enum line_kind { LINE_OK, LINE_TORN };

/* A record line, opened (sealed) and parsed; *root NULL with jerr set
 * when it is not JSON.  -EINVAL: a sealed line that does not
 * authenticate, which a crash cannot make (the line has its '\n'). */
static int parse_line(const struct journal_codec *codec, const char *line,
		      size_t n, json_t **root, json_error_t *jerr)
{
	void *plain = NULL;
	size_t plen = 0;
	int r;

	if (!codec) {
		*root = json_loadb(line, n, JSON_REJECT_DUPLICATES, jerr);
		return 0;
	}
	r = codec->open(codec->arg, line, n, &plain, &plen);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL;
	*root = json_loadb(plain, plen, JSON_REJECT_DUPLICATES, jerr);
	explicit_bzero(plain, plen);
	free(plain);
	return 0;
}

/* The header, line 1: a torn one (the only line, not JSON) is dropped. */
static int replay_header(const char *line, size_t n, bool last,
			 const struct journal_codec *codec, struct journal_state *s,
			 const char *path, char *err, size_t errlen)
{
	char lineerr[256];
	json_t *h;
	int r = check_header(line, n, codec, lineerr, sizeof(lineerr));

	if (r == 0) {
		s->has_header = true;
		return LINE_OK;
	}
	h = json_loadb(line, n, 0, NULL);
	json_decref(h);
	if (last && r == -EINVAL && !h)
		return LINE_TORN;
	return fail_line(err, errlen, path, 1, lineerr, r);
}

/* One line of the journal (n bytes, without its '\n'; nl: it had one):
 * LINE_OK, LINE_TORN for a last record a crash cut short, or -errno with
 * the one-line error in err. */
static int replay_line(const char *line, size_t n, bool nl, bool last,
		       unsigned lineno, const struct journal_codec *codec,
		       journal_record_cb cb, void *arg, struct journal_state *s,
		       const char *path, char *err, size_t errlen)
{
	char lineerr[256];
	json_error_t jerr;
	json_t *root = NULL;
	int r;

	/* No '\n': the append that wrote it did not finish (the one write(2)
	 * of a record ends with its '\n'). */
	if (!nl)
		return LINE_TORN;
	if (lineno == 1)
		return replay_header(line, n, last, codec, s, path, err, errlen);
	r = parse_line(codec, line, n, &root, &jerr);
	if (r < 0)
		return fail_line(err, errlen, path, lineno, r == -ENOMEM ? "out of memory"
				 : "corrupt (the record does not authenticate)", r);
	if (!root) {
		if (last && !codec)
			return LINE_TORN;
		snprintf(lineerr, sizeof(lineerr), "JSON error: %s", jerr.text);
		return fail_line(err, errlen, path, lineno, lineerr, -EINVAL);
	}
	r = journal_apply_record(root, s->last_seq, &s->last_seq, cb, arg,
				 lineerr, sizeof(lineerr));
	json_decref(root);
	if (r < 0)
		return fail_line(err, errlen, path, lineno, lineerr, r);
	if (!s->has_header)
		return fail_line(err, errlen, path, lineno, "no header", -EINVAL);
	return LINE_OK;
}

/* The whole file into b; 0 when it does not exist (b stays empty). */
static int replay_read(const char *path, struct buf *b, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), r;

	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0) {
		r = -errno;
	} else {
		r = read_all(fd, b);
		close(fd);
	}
	if (r < 0)
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(-r));
	return r;
}

int journal_replay(const char *path, const struct journal_codec *codec,
		   journal_record_cb cb, void *arg, struct journal_state *st,
		   char *warn, size_t warnlen, char *err, size_t errlen)
{
	struct journal_state s = { 0 };
	struct buf b = { 0 };
	size_t pos = 0;
	unsigned lineno = 0;
	int r;

	store_json_init();
	if (warnlen)
		warn[0] = '\0';
	if (errlen)
		err[0] = '\0';
	if (st)
		*st = s;
	r = replay_read(path, &b, err, errlen);
	if (r < 0 || !b.p)
		goto out;
	s.file_size = (off_t)b.len;
	while (pos < b.len) {
		char *line = b.p + pos, *nl = memchr(line, '\n', b.len - pos);
		size_t n = nl ? (size_t)(nl - line) : b.len - pos;
		bool last = !nl || (size_t)(nl - b.p) + 1 == b.len;

		r = replay_line(line, n, nl != NULL, last, ++lineno, codec, cb,
				arg, &s, path, err, errlen);
		if (r < 0)
			goto out;
		if (r == LINE_TORN) {
			snprintf(warn, warnlen, "%s: dropped a torn last record at "
				 "byte %zu (a write cut short by a crash)", path, pos);
			break;
		}
		pos += n + 1;
		s.valid_end = (off_t)pos;
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

int journal_remove(const char *path)
{
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return fsync_dir_of(path);
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
	r = journal_encode_record(&b, &r1);
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
