/* test-journal.c: unit tests of the store's journal: round trip, torn last record, corruption, reset and the compaction rule. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* What the callback saw: each record re-encoded, one after another. */
struct seen {
	char text[8192];
	int n;
	int fail_at;		/* make the callback fail at this record */
};

static int collect(void *arg, const struct journal_record *rec, char *err, size_t errlen)
{
	struct seen *s = arg;
	char *line;
	size_t len;

	if (++s->n == s->fail_at) {
		snprintf(err, errlen, "key 7 links 9 which is not in the store");
		return -EINVAL;
	}
	if (journal_record_encode(rec, &line, &len) < 0)
		return -EIO;
	strncat(s->text, line, sizeof(s->text) - strlen(s->text) - 1);
	journal_line_free(line, len);
	return 0;
}

static const char key3[] = "{\"serial\":3,\"type\":\"user\",\"description\":\"db:password\","
	"\"uid\":0,\"gid\":0,\"perm\":\"0x3f010000\",\"state\":\"valid\",\"payload\":\"aHVudGVyMg==\"}";

static int append_sample(struct journal *j, int i)
{
	struct journal_op ops[3] = {
		{ .kind = JOURNAL_PUT, .key_json = key3, .key_len = sizeof(key3) - 1 },
		{ .kind = JOURNAL_LINK, .keyring = 1, .serial = 3 },
		{ .kind = JOURNAL_SPECIAL, .special = { 1 }, .has_special = { true } },
	};
	struct journal_op del = { .kind = JOURNAL_DEL, .serial = 3 + i };
	struct journal_record rec = { .next_serial = 4, .ops = ops, .nops = 3 };
	struct journal_record rec2 = { .ops = &del, .nops = 1 };

	return journal_append(j, i % 2 ? &rec2 : &rec);
}

static off_t file_size(const char *p)
{
	struct stat sb;

	return stat(p, &sb) == 0 ? sb.st_size : -1;
}

static int replay(const char *p, struct seen *s, struct journal_state *st,
		  char *warn, char *err)
{
	memset(s->text, 0, sizeof(s->text));
	s->n = 0;
	return journal_replay(p, NULL, collect, s, st, warn, 512, err, 512);
}

static void write_file(const char *p, const char *text)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		abort();
	close(fd);
}

static void test_round_trip(void)
{
	const char *p = path_in("rt.journal");
	struct journal_state st;
	struct journal *j;
	struct seen s = { 0 };
	char warn[512], err[512];
	struct stat sb;

	umask(0);
	is_int(journal_open(p, NULL, NULL, &j), 0, "open a new journal");
	umask(022);
	ok(stat(p, &sb) == 0 && (sb.st_mode & 07777) == 0600, "created 0600 whatever the umask");
	is_int(journal_size(j), file_size(p), "size is the header's");
	for (int i = 0; i < 4; i++)
		is_int(append_sample(j, i), 0, "append record %d", i + 1);
	is_int(journal_size(j), file_size(p), "journal_size follows the file");
	journal_close(j);

	is_int(replay(p, &s, &st, warn, err), 0, "replay");
	is_int(s.n, 4, "four records called back");
	is_str(warn, "", "no warning");
	is_int(st.last_seq, 4, "last seq 4");
	is_int(st.valid_end, file_size(p), "all of it valid");
	ok(strstr(s.text, "{\"seq\":1,\"next_serial\":4,\"ops\":[{\"put\":{\"serial\":3,") == s.text,
	   "record 1 comes back as written");
	ok(strstr(s.text, "\"payload\":\"aHVudGVyMg==\"}},{\"link\":[1,3]},{\"special\":{\"session\":1}}]}\n"
		  "{\"seq\":2,\"ops\":[{\"del\":4}]}\n") != NULL, "ops in order, records in order");

	/* Carry on from the replay: seq goes on. */
	is_int(journal_open(p, NULL, &st, &j), 0, "reopen after replay");
	is_int(append_sample(j, 1), 0, "append");
	journal_close(j);
	is_int(replay(p, &s, &st, warn, err), 0, "replay again");
	is_int(st.last_seq, 5, "seq 5");

	/* A callback error names file and line. */
	s.fail_at = 2;
	is_int(replay(p, &s, NULL, warn, err), -EINVAL, "callback failure fails the replay");
	ok(strstr(err, "rt.journal:3: key 7 links 9") != NULL, "error names file and line: %s", err);
	s.fail_at = 0;

	/* Missing file: empty. */
	is_int(replay(path_in("none.journal"), &s, &st, warn, err), 0, "missing journal is empty");
	is_int(s.n, 0, "no records");
	ok(journal_open(path_in("rt.journal"), NULL, NULL, &j) == -ESTALE,
	   "a non-empty journal is not opened without its replay state");
}

static void test_torn(void)
{
	const char *p = path_in("torn.journal");
	struct journal_state st;
	struct journal *j;
	struct seen s = { 0 };
	char warn[512], err[512], want[600];
	off_t before;
	int fd;

	is_int(journal_open(p, NULL, NULL, &j), 0, "open");
	append_sample(j, 0);
	append_sample(j, 1);
	journal_close(j);
	before = file_size(p);
	fd = open(p, O_WRONLY | O_APPEND);
	ok(write(fd, "{\"seq\":3,\"ops\":[{\"del", 21) == 21, "a record cut short");
	close(fd);

	is_int(replay(p, &s, &st, warn, err), 0, "torn last record: replay succeeds");
	is_int(s.n, 2, "the two whole records");
	snprintf(want, sizeof(want), "%s: dropped a torn last record at byte %lld", p, (long long)before);
	ok(strncmp(warn, want, strlen(want)) == 0, "warning names file and offset: %s", warn);
	is_int(st.valid_end, before, "valid up to the torn record");

	is_int(journal_open(p, NULL, &st, &j), 0, "reopen cuts the torn tail");
	is_int(file_size(p), before, "file cut back");
	is_int(append_sample(j, 3), 0, "append after the cut");
	journal_close(j);
	is_int(replay(p, &s, &st, warn, err), 0, "replay after the cut");
	is_int(s.n, 3, "three records");
	is_str(warn, "", "no warning now");

	/* A last line with its newline but not JSON: also a torn append. */
	fd = open(p, O_WRONLY | O_APPEND);
	ok(write(fd, "{\"seq\":4,\"op\n", 13) == 13, "an unparsable last line");
	close(fd);
	is_int(replay(p, &s, &st, warn, err), 0, "unparsable last line dropped");
	ok(strstr(warn, "torn last record") != NULL, "with a warning");

	/* A torn header: the file is as good as empty. */
	write_file(p, "{\"keyfs_jour");
	is_int(replay(p, &s, &st, warn, err), 0, "torn header");
	ok(strstr(warn, "at byte 0") != NULL, "dropped at byte 0");
	is_int(journal_open(p, NULL, &st, &j), 0, "reopen writes a new header");
	is_int(append_sample(j, 0), 0, "and appends");
	journal_close(j);
	is_int(replay(p, &s, &st, warn, err), 0, "replay");
	is_int(s.n, 1, "one record");
}

static void test_corrupt(void)
{
	const char *p = path_in("bad.journal");
	struct seen s = { 0 };
	char warn[512], err[512];
	const char *hdr = "{\"keyfs_journal\":1}\n";
	char text[1024];

	snprintf(text, sizeof(text), "%s%s%s%s", hdr,
		 "{\"seq\":1,\"ops\":[{\"del\":4}]}\n",
		 "{\"seq\":2,\"ops\":[{\"del\":4}\n",
		 "{\"seq\":3,\"ops\":[{\"del\":4}]}\n");
	write_file(p, text);
	is_int(replay(p, &s, NULL, warn, err), -EINVAL, "a bad line in the middle is refused");
	ok(strstr(err, "bad.journal:3: JSON error") != NULL, "naming file and line: %s", err);
	ok(strchr(err, '\n') == NULL, "one line");

	snprintf(text, sizeof(text), "%s%s%s", hdr, "{\"seq\":1,\"ops\":[]}\n", "{\"seq\":3,\"ops\":[]}\n");
	write_file(p, text);
	is_int(replay(p, &s, NULL, warn, err), -EINVAL, "a gap in seq is refused");
	ok(strstr(err, ":3: record 3 follows record 1") != NULL, "%s", err);

	snprintf(text, sizeof(text), "%s%s", hdr, "{\"seq\":1,\"ops\":[{\"frob\":1}]}\n");
	write_file(p, text);
	is_int(replay(p, &s, NULL, warn, err), -EINVAL, "an unknown op is refused, even last");
	ok(strstr(err, ":2: op 1: unknown op") != NULL, "%s", err);

	snprintf(text, sizeof(text), "%s%s", hdr, "{\"seq\":1,\"ops\":[],\"extra\":1}\n");
	write_file(p, text);
	is_int(replay(p, &s, NULL, warn, err), -EINVAL, "an unknown field is refused");

	/* found by fuzzing: a field name holding an escaped newline */
	snprintf(text, sizeof(text), "%s%s", hdr, "{\"se\\nq\":1,\"ops\":[]}\n");
	write_file(p, text);
	is_int(replay(p, &s, NULL, warn, err), -EINVAL, "an unknown field with a newline is refused");
	ok(err[0] && !strchr(err, '\n') && strstr(err, "unknown field \"se?q\""),
	   "the message stays one line: %s", err);

	snprintf(text, sizeof(text), "%s%s", hdr, "{\"seq\":1,\"ops\":[{\"link\":[2,2]}]}\n");
	write_file(p, text);
	is_int(replay(p, &s, NULL, warn, err), -EINVAL, "a keyring linking itself is refused");

	write_file(p, "{\"keyfs_journal\":2}\n{\"seq\":1,\"ops\":[]}\n");
	is_int(replay(p, &s, NULL, warn, err), -EINVAL, "another version is refused");
	ok(strstr(err, ":1: unknown journal version 2") != NULL, "%s", err);

	write_file(p, "{\"keyfs_journal\":1,\"check\":\"abc\"}\n");
	is_int(replay(p, &s, NULL, warn, err), -ENOKEY, "an encrypted journal without a key");

	write_file(p, "{\"seq\":1,\"ops\":[]}\n{\"seq\":2,\"ops\":[]}\n");
	is_int(replay(p, &s, NULL, warn, err), -EINVAL, "no header is refused");
}

static void test_encode(void)
{
	struct journal_op op = { .kind = JOURNAL_PUT, .key_json = "{\"serial\":1,\n\"a\":1}" };
	struct journal_record rec = { .seq = 1, .ops = &op, .nops = 1 };
	char *line;
	size_t len;

	op.key_len = strlen(op.key_json);
	is_int(journal_record_encode(&rec, &line, &len), -EINVAL, "a key over two lines is refused");
	op.key_json = "{\"type\":\"user\"}";
	op.key_len = strlen(op.key_json);
	is_int(journal_record_encode(&rec, &line, &len), -EINVAL, "a key without serial is refused");
	op.key_json = "{\"serial\":1";
	op.key_len = strlen(op.key_json);
	is_int(journal_record_encode(&rec, &line, &len), -EINVAL, "a key that is not JSON is refused");
	op = (struct journal_op){ .kind = JOURNAL_DEL, .serial = 0 };
	is_int(journal_record_encode(&rec, &line, &len), -EINVAL, "serial 0 is refused");
	op = (struct journal_op){ .kind = JOURNAL_SPECIAL };
	is_int(journal_record_encode(&rec, &line, &len), -EINVAL, "an empty special is refused");
	op = (struct journal_op){ .kind = JOURNAL_LINK, .keyring = 5, .serial = 6, .replace = 7 };
	is_int(journal_record_encode(&rec, &line, &len), 0, "link with displacement");
	is_str(line, "{\"seq\":1,\"ops\":[{\"link\":[5,6,7]}]}\n", "encoded");
	journal_line_free(line, len);
}

static void test_reset(void)
{
	const char *p = path_in("reset.journal");
	struct journal_state st;
	struct journal *j;
	struct seen s = { 0 };
	char warn[512], err[512];
	off_t hdr;
	struct stat sb;

	is_int(journal_open(p, NULL, NULL, &j), 0, "open");
	hdr = journal_size(j);
	for (int i = 0; i < 3; i++)
		append_sample(j, i);
	is_int(journal_reset(j), 0, "reset");
	is_int(journal_size(j), hdr, "only the header left");
	is_int(file_size(p), hdr, "in the file too");
	ok(stat(p, &sb) == 0 && (sb.st_mode & 07777) == 0600, "still 0600");
	is_int(append_sample(j, 1), 0, "append after reset");
	journal_close(j);
	is_int(replay(p, &s, &st, warn, err), 0, "replay");
	is_int(s.n, 1, "one record");
	is_int(st.last_seq, 4, "seq goes on after a reset");
	ok(access(path_in(".reset.journal.tmp.0.0"), F_OK) != 0, "no temporary file left");
}

static void test_compaction(void)
{
	ok(!journal_needs_compaction(0, 0), "empty: no");
	ok(!journal_needs_compaction(64 * 1024, 0), "64 KiB: the floor");
	ok(journal_needs_compaction(64 * 1024 + 1, 0), "past the floor: yes");
	ok(!journal_needs_compaction(64 * 1024 + 1, 200 * 1024), "small snapshot: the floor rules");
	ok(!journal_needs_compaction(150 * 1024, 300 * 1024), "half the snapshot: no");
	ok(journal_needs_compaction(150 * 1024 + 1, 300 * 1024), "past half the snapshot: yes");
	ok(!journal_needs_compaction(17000000, 35700000), "a 35.7 MB store waits for 17.85 MB");
}

int main(void)
{
	char cmd[300];

	snprintf(dir, sizeof(dir), "%s/keyfs-journal.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return 99;
	test_round_trip();
	test_torn();
	test_corrupt();
	test_encode();
	test_reset();
	test_compaction();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return done_testing();
}
