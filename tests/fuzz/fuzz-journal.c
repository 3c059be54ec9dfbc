/* fuzz-journal.c: libFuzzer target for the journal reader (journal_replay): every record it accepts encodes and reads back the same. */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "journal.h"

struct acc {
	char *text;	/* the accepted records, re-encoded */
	size_t len;
	uint64_t seq;
};

static int collect(void *arg, const struct journal_record *rec, char *err, size_t errlen)
{
	struct acc *a = arg;
	char *line, *p;
	size_t len;

	(void)err;
	(void)errlen;
	CHECK(rec->seq > 0 && (a->seq == 0 || rec->seq == a->seq + 1));
	a->seq = rec->seq;
	for (size_t i = 0; i < rec->nops; i++)
		if (rec->ops[i].kind == JOURNAL_PUT)
			CHECK(rec->ops[i].key_json && strlen(rec->ops[i].key_json) == rec->ops[i].key_len);
	/* What was read can be written. */
	CHECK(journal_record_encode(rec, &line, &len) == 0);
	CHECK(len > 0 && line[len - 1] == '\n' && !memchr(line, '\n', len - 1));
	p = realloc(a->text, a->len + len + 1);
	CHECK(p != NULL);
	memcpy(p + a->len, line, len);
	a->text = p;
	a->len += len;
	journal_line_free(line, len);
	return 0;
}

static int replay_mem(const void *data, size_t size, struct acc *a,
		      struct journal_state *st, char *warn, char *err)
{
	char path[64];
	int fd, r;

	fd = memfd_create("journal", MFD_CLOEXEC);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = journal_replay(path, NULL, collect, a, st, warn, 512, err, 512);
	close(fd);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct acc a = { 0 }, b = { 0 };
	struct journal_state st, st2;
	char warn[512], err[512], *again;
	size_t hlen;
	int r;

	r = replay_mem(data, size, &a, &st, warn, err);
	if (r < 0) {
		CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
		free(a.text);
		return 0;
	}
	CHECK(r == 0 && strchr(warn, '\n') == NULL);
	CHECK(st.valid_end >= 0 && (size_t)st.valid_end <= size);
	CHECK(st.file_size == (off_t)size);
	CHECK(st.last_seq == a.seq);
	/* A warning, and only then, for bytes past the valid end. */
	CHECK(((size_t)st.valid_end < size) == (warn[0] != '\0'));

	/* The accepted records, re-encoded under the same header, read back
	 * as the same records. */
	if (st.has_header && a.len) {
		static const char hdr[] = "{\"keyfs_journal\":1}\n";

		hlen = sizeof(hdr) - 1;
		again = malloc(hlen + a.len);
		CHECK(again != NULL);
		memcpy(again, hdr, hlen);
		memcpy(again + hlen, a.text, a.len);
		r = replay_mem(again, hlen + a.len, &b, &st2, warn, err);
		if (r != 0)
			fprintf(stderr, "reread: %s\n", err);
		CHECK(r == 0 && warn[0] == '\0');
		CHECK(b.len == a.len && memcmp(a.text, b.text, a.len) == 0);
		free(again);
	}
	free(a.text);
	free(b.text);
	return 0;
}
