/* journal-record.c: one journal record to its JSON line and back (the format is in journal.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "journal-int.h"
#include "json-alloc.h"

static const char *const special_names[JOURNAL_NSPECIAL] = {
	"session", "user", "user_session", "persistent",
};

/* ---- a growable text buffer, wiped when it grows or is freed ---- */


int buf_grow(struct buf *b, const void *s, size_t n, size_t max)
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

int buf_add(struct buf *b, const void *s, size_t n)
{
	return buf_grow(b, s, n, JOURNAL_LINE_MAX);
}

int buf_printf(struct buf *b, const char *fmt, ...)
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

void buf_free(struct buf *b)
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
int journal_encode_record(struct buf *b, const struct journal_record *rec)
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

	store_json_init();
	*line = NULL;
	*len = 0;
	r = journal_encode_record(&b, rec);
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

/* A record's own fields: seq (following last_seq), next_serial, and the
 * ops array, into rec and *arr.  lineerr says what is wrong. */
static int record_fields(json_t *root, uint64_t last_seq,
			 struct journal_record *rec, json_t **arr,
			 char *lineerr, size_t errlen)
{
	json_t *seq, *ns, *v;
	const char *k;

	if (!json_is_object(root)) {
		snprintf(lineerr, errlen, "a record must be a JSON object");
		return -EINVAL;
	}
	json_object_foreach(root, k, v) {
		if (strcmp(k, "seq") && strcmp(k, "next_serial") && strcmp(k, "ops")) {
			char name[41];
			size_t i;

			/* the message is one line: the name as text, at most 40 */
			for (i = 0; k[i] && i < sizeof(name) - 1; i++)
				name[i] = isprint((unsigned char)k[i]) ? k[i] : '?';
			name[i] = '\0';
			snprintf(lineerr, errlen, "unknown field \"%s\"", name);
			return -EINVAL;
		}
	}
	seq = json_object_get(root, "seq");
	ns = json_object_get(root, "next_serial");
	*arr = json_object_get(root, "ops");
	if (!json_is_integer(seq) || json_integer_value(seq) < 1) {
		snprintf(lineerr, errlen, "\"seq\" must be a positive integer");
		return -EINVAL;
	}
	rec->seq = (uint64_t)json_integer_value(seq);
	if (last_seq && rec->seq != last_seq + 1) {
		snprintf(lineerr, errlen, "record %" PRIu64 " follows record %" PRIu64
			 ": a record is missing or repeated", rec->seq, last_seq);
		return -EINVAL;
	}
	if (ns && !get_serial(ns, &rec->next_serial, false)) {
		snprintf(lineerr, errlen, "\"next_serial\" must be a serial");
		return -EINVAL;
	}
	if (!json_is_array(*arr)) {
		snprintf(lineerr, errlen, "\"ops\" must be an array");
		return -EINVAL;
	}
	return 0;
}

/* Decode the n ops of arr into ops, a PUT's key text into kbs[i] (both
 * arrays the caller's). */
static int decode_ops(json_t *arr, size_t n, struct journal_op *ops,
		      struct buf *kbs, char *lineerr, size_t errlen)
{
	const char *msg = NULL;

	for (size_t i = 0; i < n; i++) {
		int r = decode_op(json_array_get(arr, i), &ops[i], &kbs[i], &msg);

		if (r < 0) {
			snprintf(lineerr, errlen, "op %zu: %s", i + 1,
				 r == -ENOMEM ? "out of memory" : msg);
			return r;
		}
		if (ops[i].kind == JOURNAL_PUT) {
			ops[i].key_json = kbs[i].p;
			ops[i].key_len = kbs[i].len;
		}
	}
	return 0;
}

int journal_apply_record(json_t *root, uint64_t last_seq, uint64_t *seq_out,
			 journal_record_cb cb, void *arg,
			 char *lineerr, size_t errlen)
{
	struct journal_record rec = { 0 };
	struct journal_op *ops = NULL;
	struct buf *kbs = NULL;
	json_t *arr = NULL;
	size_t n = 0;
	int r = record_fields(root, last_seq, &rec, &arr, lineerr, errlen);

	if (r < 0)
		return r;
	n = json_array_size(arr);
	if (n) {
		ops = calloc(n, sizeof(*ops));
		kbs = calloc(n, sizeof(*kbs));
		if (!ops || !kbs) {
			snprintf(lineerr, errlen, "out of memory");
			r = -ENOMEM;
			goto out;
		}
	}
	r = decode_ops(arr, n, ops, kbs, lineerr, errlen);
	if (r < 0)
		goto out;
	rec.ops = ops;
	rec.nops = n;
	lineerr[0] = '\0';
	r = cb ? cb(arg, &rec, lineerr, errlen) : 0;
	if (r < 0 && !lineerr[0])
		snprintf(lineerr, errlen, "%s", strerror(-r));
	if (r == 0)
		*seq_out = rec.seq;
out:
	if (kbs)
		for (size_t i = 0; i < n; i++)
			buf_free(&kbs[i]);
	free(kbs);
	free(ops);
	return r;
}

