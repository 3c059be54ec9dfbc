/* load.c: processes that read, rewrite, create, rename and delete keys in one directory at once, and check every payload read is whole. */
/*
 * usage: load DIR SECONDS PROCS [OP:ERRNO...]
 *
 * Each process loops for SECONDS over the shared names s0..s7 and its own
 * names pN-0..pN-3, choosing at random to read, rewrite (O_TRUNC), create
 * (O_CREAT|O_EXCL), rename or unlink.  Every payload is one fixed-length
 * record that carries a checksum of itself, so a read that returns a torn
 * or mixed payload is caught.  An empty read is counted apart: a name that
 * another process has created and not yet written (a pending entry).
 *
 * Prints one line of totals and one line per (operation, errno) seen, and
 * exits 1 when a read was not one whole record, when an error other than
 * ENOENT, EEXIST and the OP:ERRNO pairs given (such as read:ENOKEY: races
 * a backend answers its own way) happened, or when a process died.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REC 64		/* every payload is exactly this long */
#define SHARED 8
#define OWN 4
#define NERR 160

enum op { OP_READ, OP_WRITE, OP_CREATE, OP_RENAME, OP_UNLINK, NOPS };
static const char *const op_name[NOPS] = {
	"read", "write", "create", "rename", "unlink"
};

/* Shared between the processes: counts only, no payloads. */
struct tally {
	unsigned long ops[NOPS];
	unsigned long err[NOPS][NERR];
	unsigned long empty;	/* reads of a pending (unwritten) entry */
	unsigned long bad;	/* torn, mixed or malformed payloads */
};

static uint32_t fnv1a(const char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 16777619u;
	}
	return h;
}

/* A record: "KFS pid seq filler... crc\n", filler derived from seq so
 * halves of two records never add up to a valid one. */
static void make_rec(char *buf, unsigned pid, unsigned seq)
{
	char fill = (char)('a' + seq % 26);
	int n;

	n = snprintf(buf, REC, "KFS %07u %010u ", pid, seq);
	memset(buf + n, fill, REC - 10 - (size_t)n);
	snprintf(buf + REC - 10, 11, "%08" PRIx32 "\n",
		 fnv1a(buf, REC - 10));
	buf[REC - 1] = '\n';
}

static int check_rec(const char *buf, size_t len)
{
	char hex[9];

	if (len != REC || buf[REC - 1] != '\n' || strncmp(buf, "KFS ", 4) != 0)
		return -1;
	snprintf(hex, sizeof(hex), "%08" PRIx32, fnv1a(buf, REC - 10));
	return memcmp(hex, buf + REC - 10, 8) == 0 ? 0 : -1;
}

static void pick_name(char *out, size_t n, unsigned me, unsigned r)
{
	if (r % 2)
		snprintf(out, n, "s%u", (r / 2) % SHARED);
	else
		snprintf(out, n, "p%u-%u", me, (r / 2) % OWN);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One operation; returns 0 or -errno.  Close errors count: keyfs commits
 * a write at close. */
static int do_op(int dfd, enum op op, unsigned me, unsigned *seq,
		 struct tally *t)
{
	char a[32], b[32], buf[REC * 2 + 1], rec[REC];
	unsigned r = (unsigned)random();
	size_t len = 0;
	ssize_t got;
	int fd, ret = 0;

	pick_name(a, sizeof(a), me, r);
	pick_name(b, sizeof(b), me, (unsigned)random());
	switch (op) {
	case OP_READ:
		fd = openat(dfd, a, O_RDONLY);
		if (fd < 0)
			return -errno;
		while ((got = read(fd, buf + len, sizeof(buf) - len)) > 0)
			len += (size_t)got;
		if (got < 0)
			ret = -errno;
		if (close(fd) < 0 && ret == 0)
			ret = -errno;
		if (ret == 0 && len == 0)
			__atomic_add_fetch(&t->empty, 1, __ATOMIC_RELAXED);
		else if (ret == 0 && check_rec(buf, len) < 0) {
			__atomic_add_fetch(&t->bad, 1, __ATOMIC_RELAXED);
			fprintf(stderr, "load: %s: a read of %zu bytes is not one whole record\n",
				a, len);
		}
		return ret;
	case OP_WRITE:
	case OP_CREATE:
		make_rec(rec, me, (*seq)++);
		fd = openat(dfd, a, op == OP_WRITE ? O_WRONLY | O_TRUNC
				       : O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd < 0)
			return -errno;
		ret = write_all(fd, rec, REC);
		if (close(fd) < 0 && ret == 0)
			ret = -errno;
		return ret;
	case OP_RENAME:
		return renameat(dfd, a, dfd, b) < 0 ? -errno : 0;
	case OP_UNLINK:
		return unlinkat(dfd, a, 0) < 0 ? -errno : 0;
	default:
		return -EINVAL;
	}
}

static void child(const char *dir, double secs, unsigned me, struct tally *t)
{
	struct timespec start, now;
	unsigned seq = 0;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	if (dfd < 0) {
		perror(dir);
		_exit(2);
	}
	srandom(me * 7919u + (unsigned)getpid());
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		/* reads and rewrites more often than the rest */
		static const enum op mix[] = {
			OP_READ, OP_READ, OP_READ, OP_WRITE, OP_WRITE,
			OP_CREATE, OP_CREATE, OP_RENAME, OP_UNLINK
		};
		enum op op = mix[(unsigned)random() % (sizeof(mix) / sizeof(mix[0]))];
		int ret = do_op(dfd, op, me, &seq, t);

		__atomic_add_fetch(&t->ops[op], 1, __ATOMIC_RELAXED);
		if (ret < 0)
			__atomic_add_fetch(&t->err[op][-ret < NERR ? -ret : 0], 1,
					   __ATOMIC_RELAXED);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) +
		 (double)(now.tv_nsec - start.tv_nsec) / 1e9 < secs);
	close(dfd);
	_exit(0);
}

static char **extra;	/* the OP:ERRNO pairs of the command line */
static int nextra;

/* The races a name shared by processes must expect, and those given. */
static int expected(enum op op, int e)
{
	char want[64];
	int i;

	if (e == ENOENT ||	/* the name went (unlink, rename) before this call */
	    e == EEXIST)	/* O_EXCL lost to another create */
		return 1;
	snprintf(want, sizeof(want), "%s:%s", op_name[op],
		 e ? strerrorname_np(e) : "?");
	for (i = 0; i < nextra; i++)
		if (strcmp(extra[i], want) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct tally *t;
	unsigned long total = 0;
	unsigned procs, i;
	int status, failed = 0, o, e;
	double secs;

	if (argc < 4) {
		fprintf(stderr, "usage: %s DIR SECONDS PROCS [OP:ERRNO...]\n", argv[0]);
		return 2;
	}
	extra = argv + 4;
	nextra = argc - 4;
	secs = atof(argv[2]);
	procs = (unsigned)atoi(argv[3]);
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	memset(t, 0, sizeof(*t));
	for (i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (pid == 0)
			child(argv[1], secs, i, t);
	}
	for (i = 0; i < procs; i++) {
		if (wait(&status) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			fprintf(stderr, "load: a process failed (status %d)\n", status);
			failed = 1;
		}
	}
	for (o = 0; o < NOPS; o++)
		total += t->ops[o];
	printf("ops=%lu procs=%u seconds=%g", total, procs, secs);
	for (o = 0; o < NOPS; o++)
		printf(" %s=%lu", op_name[o], t->ops[o]);
	printf(" empty=%lu bad=%lu\n", t->empty, t->bad);
	for (o = 0; o < NOPS; o++)
		for (e = 0; e < NERR; e++) {
			if (!t->err[o][e])
				continue;
			printf("%s %s %s %lu\n", expected(o, e) ? "races:" : "unexpected:",
			       op_name[o], e ? strerrorname_np(e) : "errno>=160",
			       t->err[o][e]);
			if (!expected(o, e))
				failed = 1;
		}
	if (t->bad)
		failed = 1;
	return failed;
}
