/* bench/keyfs-bench.c: the benchmark driver: sets up keys, measures every target interleaved, prints one table. */

/*
 * Targets: the floor (bench/floor.c) and keyfs on each backend, each with
 * the kernel's caches at their defaults and off; tmpfs; raw keyctl calls.
 * Every repetition measures every target once, in an order rotated per
 * repetition, so slow drifts of a shared machine hit all alike; a ratio is
 * taken within one repetition and the table shows the median of those
 * ratios (and the median of the absolute figures).  bench/run mounts the
 * targets and always unmounts them; this program only needs their paths.
 *
 * Every target shows the same tree: ROOT/session/rN/kNNNNNN, 32-byte files.
 * Raw keyctl works on the caller's session keyring, which bench/run makes
 * fresh; everything made there is cleared and unlinked at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <keyutils.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define PAYLOAD "bench-payload-0123456789abcdef.\n"
#define PAYLOAD_LEN 32
#define NAME_LEN 7 /* kNNNNNN */
#define MAX_REPS 64
#define MAX_ROWS 64

enum target { T_FLOOR_DEF, T_FLOOR_OFF, T_MEM_DEF, T_MEM_OFF, T_KER_DEF, T_KER_OFF, T_TMPFS, T_RAW, NT };

static const char *const target_name[NT] = {
	"floor", "floor(off)", "memory", "memory(off)", "kernel", "kernel(off)", "tmpfs", "raw"
};

struct target_info {
	char *root;	/* mount root, NULL if not measured */
	pid_t pid;	/* daemon, for its memory */
};

static struct target_info tg[NT];

/* The sizes of one run. */
struct plan {
	int quick;
	int reps;		/* repetitions of the single-process rows */
	int par_reps;		/* repetitions of the parallel rows */
	unsigned long small;	/* the small keyring (lookup in 10 keys) */
	unsigned long large;	/* the large keyring (lookup, first cat, readers) */
	unsigned long ls_sizes[3];
	unsigned long big;	/* memory only: the fill and the largest listing */
	double fill_limit;	/* seconds a big fill may take before it stops */
	int cat_iters, stat_iters, lookup_iters, create_count, first_count;
	double par_seconds;
	double slow_limit;	/* a measurement longer than this is not repeated */
	double op_cap;		/* a measurement stops after this many seconds */
};

static struct plan plan;
static int failures;
static int capped; /* some listing was extrapolated */
static double ls_cpu_us; /* the CPU time the last m_ls took in the reader (this process) */

/* ---- small helpers ---- */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("keyfs-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void fail(const char *what, const char *path, int err)
{
	fprintf(stderr, "keyfs-bench: %s %s: %s\n", what, path, strerror(err));
	failures++;
}

static void ring_path(char *buf, size_t len, enum target t, const char *ring)
{
	snprintf(buf, len, "%s/session/%s", tg[t].root, ring);
}

/* Key j of ring under top: "session", or "@s", the link users name it by. */
static void key_path_via(char *buf, size_t len, enum target t, const char *top, const char *ring,
			 unsigned long j)
{
	snprintf(buf, len, "%s/%s/%s/k%06lu", tg[t].root, top, ring, j);
}

static void key_path(char *buf, size_t len, enum target t, const char *ring, unsigned long j)
{
	key_path_via(buf, len, t, "session", ring, j);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of the n finite values in v (NAN if none); v is reordered. */
static double median(double *v, int n)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[m++] = v[i];
	if (m == 0)
		return NAN;
	qsort(v, (size_t)m, sizeof(*v), cmp_double);
	return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

/* VmRSS or VmHWM of pid in bytes, or -1. */
static long vm_bytes(pid_t pid, const char *field)
{
	char path[64], line[256];
	long kb = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t fl = strlen(field);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, fl) == 0 && line[fl] == ':')
			kb = strtol(line + fl + 1, NULL, 10);
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/* CPU seconds pid's threads have run (the kernel's schedstat, in ns), or
 * NAN when pid is unknown or gone. */
static double proc_cpu(pid_t pid)
{
	char path[64];
	double sum = 0;
	int n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = pid > 0 ? opendir(path) : NULL;
	if (!d)
		return NAN;
	struct dirent *de;
	while ((de = readdir(d))) {
		char stat[96];
		unsigned long long ns;
		if (de->d_name[0] == '.' || strlen(de->d_name) > 16)
			continue;
		snprintf(stat, sizeof(stat), "%s/%.16s/schedstat", path, de->d_name);
		FILE *f = fopen(stat, "r");
		if (!f)
			continue;	/* a thread that ended meanwhile */
		if (fscanf(f, "%llu", &ns) == 1) {
			sum += (double)ns / 1e9;
			n++;
		}
		fclose(f);
	}
	closedir(d);
	return n ? sum : NAN;
}

/* CPU seconds of this process (RUSAGE_SELF) or of its waited-for
 * children (RUSAGE_CHILDREN). */
static double cpu_of(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* ---- raw keyctl: the session keyring's rings ---- */

static key_serial_t raw_ring(const char *name)
{
	key_serial_t r = add_key("keyring", name, NULL, 0, KEY_SPEC_SESSION_KEYRING);
	if (r < 0)
		die("add_key keyring %s: %s", name, strerror(errno));
	return r;
}

static key_serial_t raw_find(const char *ring, unsigned long j)
{
	key_serial_t r = keyctl_search(KEY_SPEC_SESSION_KEYRING, "keyring", ring, 0);
	char name[32];
	if (r < 0)
		return -1;
	snprintf(name, sizeof(name), "k%06lu", j);
	return keyctl_search(r, "user", name, 0);
}

/* ---- file system setup ---- */

/* Creates one key file; returns 0 or -errno. */
/* open(2) path write-only with flags, write the payload, close. */
static int write_file(const char *path, int flags)
{
	int fd = open(path, O_WRONLY | flags, 0600);
	if (fd < 0)
		return -errno;
	int ret = write(fd, PAYLOAD, PAYLOAD_LEN) == PAYLOAD_LEN ? 0 : -EIO;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	return ret;
}

static int create_file(const char *path)
{
	return write_file(path, O_CREAT | O_EXCL);
}

/* A keyring: an empty directory. */
static int make_dir(const char *path)
{
	return mkdir(path, 0700) < 0 ? -errno : 0;
}

/* Fills ROOT/session/rN with entries [from, to) made by make (create_file:
 * keys; make_dir: keyrings) on an FS target; per-create times (seconds) go
 * to times[j - from] when times is not NULL.  Stops at the deadline (0:
 * none).  Returns the number of entries present afterwards. */
static unsigned long fill_with(enum target t, const char *ring, unsigned long from, unsigned long to,
			       double *times, double deadline, int (*make)(const char *path))
{
	char path[4096];
	ring_path(path, sizeof(path), t, ring);
	if (from == 0 && mkdir(path, 0700) < 0 && errno != EEXIST) {
		fail("mkdir", path, errno);
		return 0;
	}
	for (unsigned long j = from; j < to; j++) {
		key_path(path, sizeof(path), t, ring, j);
		double t0 = now();
		int err = make(path);
		double t1 = now();
		if (err < 0) {
			fail("create", path, -err);
			return j;
		}
		if (times)
			times[j - from] = t1 - t0;
		if (deadline > 0 && t1 > deadline)
			return j + 1;
	}
	return to;
}

/* Unlinks every key of ROOT/session/ring at once (.keyfs/clear). */
static void clear_ring(enum target t, const char *ring)
{
	char path[4096], line[64];
	snprintf(path, sizeof(path), "%s/.keyfs/clear", tg[t].root);
	int len = snprintf(line, sizeof(line), "session/%s\n", ring);
	int fd = open(path, O_WRONLY);
	if (fd < 0) {
		fail("clear", path, errno);
		return;
	}
	int err = write(fd, line, (size_t)len) != len ? errno : 0;
	if (close(fd) < 0 && !err)
		err = errno;
	if (err)
		fail("clear", path, err);
}

static unsigned long fill_ring(enum target t, const char *ring, unsigned long from,
			       unsigned long to, double *times, double deadline)
{
	return fill_with(t, ring, from, to, times, deadline, create_file);
}

/* Removes count entries from each of two keyrings ROOT/session/ring[i]
 * with rm (unlink: keys; rmdir: keyrings), every step[i]-th from 0, one
 * from each in turn (which goes first alternates), so that both are
 * measured in one state of the mount: what differs is the keyring's size.
 * Each is looked up first so that only the UNLINK or RMDIR is timed; the
 * times (seconds) go to times[i][j].  0, or -1 after a failure. */
static int remove_in_turn(enum target t, const char *const ring[2], const unsigned long step[2], int count,
			  double *const times[2], int (*rm)(const char *path))
{
	char path[4096];
	struct stat st;
	for (int j = 0; j < count; j++)
		for (int h = 0; h < 2; h++) {
			int i = (j + h) % 2;
			key_path(path, sizeof(path), t, ring[i], (unsigned long)j * step[i]);
			if (stat(path, &st) < 0) {
				fail("stat", path, errno);
				return -1;
			}
			double t0 = now();
			int err = rm(path) < 0 ? errno : 0;
			times[i][j] = now() - t0;
			if (err) {
				fail(rm == rmdir ? "rmdir" : "unlink", path, err);
				return -1;
			}
		}
	return 0;
}

static void raw_fill(const char *ring, unsigned long n)
{
	key_serial_t r = raw_ring(ring);
	for (unsigned long j = 0; j < n; j++) {
		char name[32];
		snprintf(name, sizeof(name), "k%06lu", j);
		if (add_key("user", name, PAYLOAD, PAYLOAD_LEN, r) < 0)
			die("add_key %s/%s: %s", ring, name, strerror(errno));
	}
}

/* ---- measurements: each returns microseconds per operation, or NAN ---- */

static int cat_path(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	int err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

static double m_cat(enum target t, const char *ring, unsigned long j, int iters, int at_s)
{
	char path[4096], buf[4096];
	key_serial_t k = 0;
	if (t == T_RAW && (k = raw_find(ring, j)) < 0)
		return NAN;
	key_path_via(path, sizeof(path), t, at_s ? "@s" : "session", ring, j);
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		if (t == T_RAW) {
			if (keyctl_read(k, buf, sizeof(buf)) < 0) {
				fail("keyctl_read", ring, errno);
				return NAN;
			}
		} else {
			int err = cat_path(path);
			if (err < 0) {
				fail("cat", path, -err);
				return NAN;
			}
		}
	}
	return (now() - t0) * 1e6 / iters;
}

/*
 * Stats of .keyfs/search/user/NAME, alternating two names: "near" is
 * linked in the session keyring itself, "needle" in a keyring linked after
 * the big one, so that the memory backend's search (as request_key(2):
 * the session, then each keyring nested in it) walks past the big ring to
 * find it.  Per-stat medians go to *near and *far; alternating keeps a
 * drift of the machine out of their ratio.
 */
static void m_search(enum target t, int iters, double *near, double *far)
{
	static double v[2][4000];
	char path[2][4096];
	struct stat st;
	snprintf(path[0], sizeof(path[0]), "%s/.keyfs/search/user/near", tg[t].root);
	snprintf(path[1], sizeof(path[1]), "%s/.keyfs/search/user/needle", tg[t].root);
	*near = *far = NAN;
	if (iters > 4000)
		iters = 4000;
	for (int i = 0; i < iters; i++)
		for (int w = 0; w < 2; w++) {
			double t0 = now();
			if (stat(path[w], &st) < 0) {
				fail("stat", path[w], errno);
				return;
			}
			v[w][i] = (now() - t0) * 1e6;
		}
	*near = median(v[0], iters);
	*far = median(v[1], iters);
}

/*
 * When each target last listed or looked up names in the large keyring.
 * keyfs answers a listing with readdirplus, which leaves the kernel a
 * cached name for every entry for entry_timeout (1 s by default): a first
 * cat within that second makes no LOOKUP, where the floor (plain readdir)
 * always makes one.  A first cat is measured cold, once that has passed.
 */
static double listed_at[NT];

static void names_forgotten(enum target t)
{
	double wait;

	if (t != T_FLOOR_DEF && t != T_MEM_DEF && t != T_KER_DEF)
		return;		/* entry_timeout=0, or no names to cache */
	wait = listed_at[t] + 1.1 - now();
	if (wait > 0)
		usleep((useconds_t)(wait * 1e6));
}

/* A first cat: name lookup, open, read, close of keys never touched before. */
static double m_firstcat(enum target t, const char *ring, unsigned long from, int count)
{
	char path[4096], buf[4096];
	double t0 = now();
	for (int i = 0; i < count; i++) {
		if (t == T_RAW) {
			key_serial_t k = raw_find(ring, from + (unsigned long)i);
			if (k < 0 || keyctl_read(k, buf, sizeof(buf)) < 0) {
				fail("keyctl search+read", ring, errno);
				return NAN;
			}
		} else {
			key_path(path, sizeof(path), t, ring, from + (unsigned long)i);
			int err = cat_path(path);
			if (err < 0) {
				fail("cat", path, -err);
				return NAN;
			}
		}
	}
	return (now() - t0) * 1e6 / count;
}

static double m_stat(enum target t, const char *ring, unsigned long j, int iters)
{
	char path[4096], buf[4096];
	struct stat st;
	key_serial_t k = 0;
	if (t == T_RAW && (k = raw_find(ring, j)) < 0)
		return NAN;
	key_path(path, sizeof(path), t, ring, j);
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		int bad = t == T_RAW ? keyctl_describe(k, buf, sizeof(buf)) < 0 : stat(path, &st) < 0;
		if (bad) {
			fail("stat", path, errno);
			return NAN;
		}
	}
	return (now() - t0) * 1e6 / iters;
}

/* lookup+stat of random names in a ring of n keys (raw: search+describe). */
static double m_lookup(enum target t, const char *ring, unsigned long n, int iters, unsigned seed)
{
	char path[4096], buf[4096];
	struct stat st;
	key_serial_t r = 0;
	if (t == T_RAW && (r = keyctl_search(KEY_SPEC_SESSION_KEYRING, "keyring", ring, 0)) < 0)
		return NAN;
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		seed = seed * 1103515245u + 12345u;
		unsigned long j = (seed >> 8) % n;
		if (now() - t0 > plan.op_cap) {
			iters = i; /* an average over what was done */
			break;
		}
		if (t == T_RAW) {
			char name[32];
			snprintf(name, sizeof(name), "k%06lu", j);
			key_serial_t k = keyctl_search(r, "user", name, 0);
			if (k < 0 || keyctl_describe(k, buf, sizeof(buf)) < 0) {
				fail("keyctl search+describe", name, errno);
				return NAN;
			}
		} else {
			key_path(path, sizeof(path), t, ring, j);
			if (stat(path, &st) < 0) {
				fail("stat", path, errno);
				return NAN;
			}
		}
	}
	return iters ? (now() - t0) * 1e6 / iters : NAN;
}

/* Creating keys: open(O_CREAT)/write/close, or add_key; names unique per rep. */
static double m_create(enum target t, int rep, int count)
{
	char path[4096];
	key_serial_t r = 0;
	if (t == T_RAW && (r = keyctl_search(KEY_SPEC_SESSION_KEYRING, "keyring", "rc", 0)) < 0)
		return NAN;
	double t0 = now();
	for (int i = 0; i < count; i++) {
		if (t == T_RAW) {
			char name[32];
			snprintf(name, sizeof(name), "raw%02d_%05d", rep, i);
			if (add_key("user", name, PAYLOAD, PAYLOAD_LEN, r) < 0) {
				fail("add_key", name, errno);
				return NAN;
			}
		} else {
			/* Both kernel mounts show one keyring: names differ by target. */
			snprintf(path, sizeof(path), "%s/session/rc/c%d_%02d_%05d", tg[t].root, (int)t, rep, i);
			int err = create_file(path);
			if (err < 0) {
				fail("create", path, -err);
				return NAN;
			}
		}
	}
	return (now() - t0) * 1e6 / count;
}

/* ls(1) stops asking a device for labels or ACLs once one answer says
 * the device has none (coreutils' getfilecon_cache, file_has_acl_cache). */
static int xattr_unsupported(int err)
{
	return err == EOPNOTSUPP || err == EINVAL || err == EBADF;
}

/* Raw keyctl list of ring, then describe of every key; with sized also
 * the size probe (keyctl read with no buffer) that ls -l needs, right
 * after each key's describe.  Microseconds, or NAN. */
static double raw_listing(const char *ring, int sized)
{
	char buf[4096];
	double t0 = now();
	key_serial_t r = keyctl_search(KEY_SPEC_SESSION_KEYRING, "keyring", ring, 0);
	void *list = NULL;
	long len = r < 0 ? -1 : keyctl_read_alloc(r, &list);
	if (len < 0) {
		fail("keyctl list", ring, errno);
		return NAN;
	}
	key_serial_t *ks = list;
	for (long i = 0; i < len / (long)sizeof(*ks); i++)
		if (keyctl_describe(ks[i], buf, sizeof(buf)) < 0 || (sized && keyctl_read(ks[i], NULL, 0) < 0)) {
			fail(sized ? "keyctl describe/read" : "keyctl describe", ring, errno);
			free(list);
			return NAN;
		}
	free(list);
	return (now() - t0) * 1e6;
}

/* ls -l: readdir, then for every entry what ls(1) calls (strace ls -l):
 * statx without following links, lgetxattr security.selinux, getxattr
 * system.posix_acl_access, each until the device says it has no such
 * thing; raw: keyctl list + describe every key. */
static double m_ls(enum target t, const char *ring)
{
	if (t == T_RAW)
		return raw_listing(ring, 0);
	/* A listing stopped at plan.op_cap is extrapolated from the entries
	 * done (the rest of the directory is still read, to count them). */
	char path[4096], buf[4096];
	unsigned long n = 0;
	double t0 = now();
	ring_path(path, sizeof(path), t, ring);
	size_t base = strlen(path);
	double cpu0 = cpu_of(RUSAGE_SELF);
	DIR *d = opendir(path);
	if (!d) {
		fail("opendir", path, errno);
		return NAN;
	}
	struct dirent *de;
	struct statx stx;
	int no_label = 0, no_acl = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n > 0 && now() - t0 > plan.op_cap) { /* too slow: extrapolated */
			unsigned long total = n;
			while (readdir(d))
				total++;
			closedir(d);
			capped = 1;
			return (now() - t0) * 1e6 * (double)total / (double)n;
		}
		snprintf(path + base, sizeof(path) - base, "/%s", de->d_name);
		if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
			  STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | STATX_MTIME | STATX_SIZE,
			  &stx) < 0) {
			fail("statx", path, errno);
			closedir(d);
			return NAN;
		}
		if (!no_label && lgetxattr(path, "security.selinux", buf, 255) < 0)
			no_label = xattr_unsupported(errno);
		if (!no_acl && getxattr(path, "system.posix_acl_access", NULL, 0) < 0)
			no_acl = xattr_unsupported(errno);
		n++;
	}
	closedir(d);
	ls_cpu_us = (cpu_of(RUSAGE_SELF) - cpu0) * 1e6;
	return (now() - t0) * 1e6;
}

/* P processes each calling pass(t, arg, p, i) for i = 0, 1, ... for
 * plan.par_seconds, all started at once (each is a process of its own:
 * pass may keep what it works out at i == 0 in statics).  Returns the
 * passes per second of all together, or NAN if a pass failed; *cpu_us
 * (if not NULL) is the CPU time the processes and the daemon (if any)
 * spent per pass, which tells how much of the machine one keeps busy. */
static double par_run(enum target t, int procs, int (*pass)(enum target, const void *, int, long),
		      const void *arg, double *cpu_us)
{
	int go[2], res[2];
	pid_t kids[16];
	if (pipe(go) < 0 || pipe(res) < 0)
		die("pipe: %s", strerror(errno));
	for (int p = 0; p < procs; p++) {
		kids[p] = fork();
		if (kids[p] < 0)
			die("fork: %s", strerror(errno));
		if (kids[p] == 0) {
			char c;
			close(go[1]);
			if (read(go[0], &c, 1) < 0)
				_exit(1);
			long count = 0;
			double end = now() + plan.par_seconds;
			while (now() < end) {
				if (pass(t, arg, p, count) < 0)
					_exit(2);
				count++;
			}
			_exit(write(res[1], &count, sizeof(count)) == sizeof(count) ? 0 : 3);
		}
	}
	close(go[0]);
	close(res[1]);
	/* raw keyctl and tmpfs have no daemon */
	int daemon = t != T_RAW && tg[t].pid > 0;
	double kids0 = cpu_of(RUSAGE_CHILDREN), daemon0 = daemon ? proc_cpu(tg[t].pid) : 0;
	double t0 = now();
	close(go[1]); /* every child starts at once */
	long total = 0, one;
	int bad = 0;
	while (read(res[0], &one, sizeof(one)) == sizeof(one))
		total += one;
	double dt = now() - t0;
	close(res[0]);
	for (int p = 0; p < procs; p++) {
		int st;
		if (waitpid(kids[p], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad = 1;
	}
	if (bad) {
		fail("parallel processes on", target_name[t], EIO);
		return NAN;
	}
	if (cpu_us) {
		double served = daemon ? proc_cpu(tg[t].pid) - daemon0 : 0;
		*cpu_us = total > 0 ? (cpu_of(RUSAGE_CHILDREN) - kids0 + served) * 1e6 / (double)total : NAN;
	}
	return (double)total / dt;
}

/* A reader's pass: open, read and close its key (the same for all with
 * same), or keyctl read it. */
struct read_job {
	const char *ring;
	int same;
};

static int read_pass(enum target t, const void *arg, int p, long i)
{
	const struct read_job *job = arg;
	static char path[4096], buf[4096];
	static key_serial_t k;
	if (i == 0) {
		unsigned long j = job->same ? 0 : (unsigned long)p * 7 + 1;
		k = t == T_RAW ? raw_find(job->ring, j) : 0;
		key_path(path, sizeof(path), t, job->ring, j);
	}
	if (t == T_RAW)
		return keyctl_read(k, buf, sizeof(buf)) < 0 ? -errno : 0;
	return cat_path(path) < 0 ? -EIO : 0;
}

/* P processes read keys for plan.par_seconds: the same key or one each.
 * Returns the total reads per second; *cpu_us as par_run's. */
static double m_par(enum target t, const char *ring, int procs, int same, double *cpu_us)
{
	struct read_job job = { ring, same };
	return par_run(t, procs, read_pass, &job, cpu_us);
}

/* A writer's pass: one of 4 names of its own made or rewritten, and
 * removed every other pass (raw: add_key, and keyctl unlink), in the
 * keyring rc.  0 or -errno. */
static int write_pass(enum target t, const void *arg, int w, long i)
{
	static key_serial_t rc;
	char name[64], path[4096];
	(void)arg;
	if (t == T_RAW && i == 0 && (rc = keyctl_search(KEY_SPEC_SESSION_KEYRING, "keyring", "rc", 0)) < 0)
		return -errno;
	snprintf(name, sizeof(name), "w%d_%d_%ld", (int)t, w, i % 4);
	if (t == T_RAW) {
		key_serial_t k = add_key("user", name, PAYLOAD, PAYLOAD_LEN, rc);
		if (k < 0)
			return -errno;
		return i % 2 && keyctl_unlink(k, rc) < 0 ? -errno : 0;
	}
	ring_path(path, sizeof(path), t, "rc");
	size_t base = strlen(path);
	snprintf(path + base, sizeof(path) - base, "/%s", name);
	int ret = write_file(path, O_CREAT | O_TRUNC);
	if (ret == 0 && i % 2 && unlink(path) < 0)
		ret = -errno;
	return ret;
}

/* P processes writing in one keyring (rc) for plan.par_seconds, each its
 * own names: passes per second, all together. */
static double m_wpar(enum target t, int procs)
{
	return par_run(t, procs, write_pass, NULL, NULL);
}

/* ---- the table ---- */

enum unit { U_US, U_MS, U_OPS, U_BYTES, U_S };

struct row {
	char label[96];
	enum unit unit;
	int fuse_split;		/* one line for caches default, one for off */
	int nsamples;
	double v[NT][MAX_REPS];
	int slow[NT];		/* one sample took over plan.slow_limit: no more */
};

/* Measures one sample unless an earlier one of this row and target was
 * too slow to repeat within the run's time (shown with a * in the table). */
#define MEASURE(r, t, rep, call) \
	do { \
		if (!(r)->slow[t]) { \
			double t0_ = now(); \
			(r)->v[t][rep] = (call); \
			if (now() - t0_ > plan.slow_limit) \
				(r)->slow[t] = 1; \
		} \
	} while (0)

static struct row rows[MAX_ROWS];
static int nrows;

static struct row *row_new(enum unit unit, int split, const char *fmt, ...)
{
	if (nrows == MAX_ROWS)
		die("too many rows");
	struct row *r = &rows[nrows++];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->label, sizeof(r->label), fmt, ap);
	va_end(ap);
	r->unit = unit;
	r->fuse_split = split;
	for (int t = 0; t < NT; t++)
		for (int i = 0; i < MAX_REPS; i++)
			r->v[t][i] = NAN;
	return r;
}

/* Cost of a relative to b in one repetition: >1 means a is slower. */
static double cost_ratio(const struct row *r, int a, int b, int i)
{
	double x = r->v[a][i], y = r->v[b][i];
	if (isnan(x) || isnan(y) || x == 0 || y == 0)
		return NAN;
	return r->unit == U_OPS ? y / x : x / y;
}

static double med_ratio(const struct row *r, int a, int b)
{
	double tmp[MAX_REPS];
	for (int i = 0; i < r->nsamples; i++)
		tmp[i] = cost_ratio(r, a, b, i);
	return median(tmp, r->nsamples);
}

static double med_abs(const struct row *r, int t)
{
	double tmp[MAX_REPS];
	memcpy(tmp, r->v[t], sizeof(double) * (size_t)r->nsamples);
	return median(tmp, r->nsamples);
}

static void fmt_abs(char *buf, size_t len, double x, enum unit u);

/* The median of t's samples, with a * when some repetitions were skipped. */
static void fmt_med(char *buf, size_t len, const struct row *r, int t)
{
	int n = 0;
	for (int i = 0; i < r->nsamples; i++)
		n += !isnan(r->v[t][i]);
	fmt_abs(buf, len, med_abs(r, t), r->unit);
	if (n > 0 && n < r->nsamples)
		strncat(buf, "*", len - strlen(buf) - 1);
}

static void fmt_abs(char *buf, size_t len, double x, enum unit u)
{
	if (isnan(x))
		snprintf(buf, len, "-");
	else if (u == U_US)
		snprintf(buf, len, x < 10 ? "%.2f us" : x < 1000 ? "%.1f us" : "%.0f us", x);
	else if (u == U_MS)
		snprintf(buf, len, "%.2f ms", x / 1000);
	else if (u == U_OPS)
		snprintf(buf, len, "%.0f/s", x);
	else if (u == U_S)
		snprintf(buf, len, "%.1f s", x);
	else
		snprintf(buf, len, "%.0f B", x);
}

static void fmt_ratio(char *buf, size_t len, double x)
{
	if (isnan(x))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2fx", x);
}

/* One line: the backend cells of mode off (0 default, 1 caches off). */
static void print_line(const struct row *r, int off)
{
	int fl = off ? T_FLOOR_OFF : T_FLOOR_DEF;
	int be[2] = { off ? T_MEM_OFF : T_MEM_DEF, off ? T_KER_OFF : T_KER_DEF };
	char a[32], b[32], c[32], d[32], e[32];
	fmt_med(a, sizeof(a), r, fl);
	fmt_med(b, sizeof(b), r, T_TMPFS);
	fmt_med(c, sizeof(c), r, T_RAW);
	printf("| %s | %s | %s | %s | %s |", r->label, off ? "off" : "default", a, b, c);
	for (int k = 0; k < 2; k++) {
		fmt_med(a, sizeof(a), r, be[k]);
		fmt_ratio(b, sizeof(b), med_ratio(r, be[k], fl));
		fmt_ratio(c, sizeof(c), med_ratio(r, be[k], T_RAW));
		fmt_ratio(d, sizeof(d), med_ratio(r, be[k], T_TMPFS));
		snprintf(e, sizeof(e), "%s", a);
		printf(" %s | %s | %s | %s |", e, b, c, d);
	}
	putchar('\n');
}

static void print_table(void)
{
	printf("| measurement | caches | floor | tmpfs | raw keyctl | memory | ×floor | ×raw | ×tmpfs | kernel | ×floor | ×raw | ×tmpfs |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < nrows; i++) {
		print_line(&rows[i], 0);
		if (rows[i].fuse_split)
			print_line(&rows[i], 1);
	}
}

/* ---- the targets of issue 10 item 2 ---- */

static void target_line(const char *what, const char *figure, const char *goal, int met)
{
	printf("| %s | %s | %s | %s |\n", what, figure, goal, met < 0 ? "not measured" : met ? "met" : "MISSED");
}

/* A target that a cost in a big keyring be within 1.5x of the cost in a
 * small one: the ratio with both figures (us); measured: 0 if the target
 * did not run. */
static void within_line(const char *what, double big, double small, const char *goal, int measured)
{
	char fig[96];
	double x = big / small;
	snprintf(fig, sizeof(fig), "%.2fx (%.0f us vs %.0f us)", x, big, small);
	target_line(what, fig, goal, !measured || isnan(x) ? -1 : x <= 1.5);
}

/* The median over repetitions of a's sample over b's, for target t. */
static double ratio_of(const struct row *a, const struct row *b, int t)
{
	double tmp[MAX_REPS];
	for (int i = 0; i < a->nsamples; i++)
		tmp[i] = a->v[t][i] / b->v[t][i];
	return median(tmp, a->nsamples);
}

/* 4 readers against 1: the throughput ratio, how many CPUs one reader
 * keeps busy (its CPU per read times its reads per second), and what all
 * the machine's CPUs give at one reader's CPU per read: the most four
 * readers can reach unless a read costs less CPU with more readers (it
 * costs more where CPUs poll; where they halt at once, one reader's CPU
 * per read includes its wake-ups, which more readers share). */
static void readers_figure(char *buf, size_t len, const struct row *one, const struct row *four,
			   const struct row *cpu1, const struct row *cpu4, int t)
{
	double busy[MAX_REPS];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	for (int i = 0; i < one->nsamples; i++)
		busy[i] = one->v[t][i] * cpu1->v[t][i] / 1e6;
	double b = median(busy, one->nsamples);
	snprintf(buf, len, "%.2fx throughput; one reader keeps %.2f of %ld CPUs busy: all %ld give %.2fx at "
		 "its CPU per read; CPU per read %.1f us with 4, %.1f us with 1",
		 ratio_of(four, one, t), b, ncpu, ncpu, (double)ncpu / b, med_abs(cpu4, t), med_abs(cpu1, t));
}

static int have(int t)
{
	return tg[t].root != NULL;
}

/* ---- how an idle CPU waits ---- */

/*
 * bench/run makes an idle CPU poll before it halts (see bench/README.md,
 * Method) and says so in KEYFS_BENCH_HALT_POLL=PATH:OWN:RUN: the setting's
 * file, the machine's own value and the run's.  One reader then keeps
 * about one CPU busy, so four on two CPUs cannot give twice its
 * throughput; with the machine's own setting (halting at once) one
 * reader waits on wake-ups and leaves CPUs idle that more readers use.
 * The readers' rows are measured both ways.
 */
static struct {
	char path[256];
	char own[32], run[32];
} idle_set;

static int idle_known(void)
{
	const char *e = getenv("KEYFS_BENCH_HALT_POLL");
	const char *c1 = e ? strchr(e, ':') : NULL, *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2 || (size_t)(c1 - e) >= sizeof(idle_set.path) || (size_t)(c2 - c1) > sizeof(idle_set.own) ||
	    strlen(c2 + 1) >= sizeof(idle_set.run))
		return 0;
	snprintf(idle_set.path, sizeof(idle_set.path), "%.*s", (int)(c1 - e), e);
	snprintf(idle_set.own, sizeof(idle_set.own), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	snprintf(idle_set.run, sizeof(idle_set.run), "%s", c2 + 1);
	return 1;
}

/* own: the machine's setting, else the run's; bench/run puts the
 * machine's back on exit whatever happens here. */
static void set_idle(int own)
{
	FILE *f = fopen(idle_set.path, "w");
	if (!f || fprintf(f, "%s\n", own ? idle_set.own : idle_set.run) < 0)
		fail("set", idle_set.path, errno);
	if (f)
		fclose(f);
}

/* ---- the run ---- */


/* The FS targets and raw, rotated by rep so no target is always first. */
static int order(int rep, int k, int with_raw, int with_floor)
{
	int list[NT], n = 0;
	for (int t = 0; t < NT; t++) {
		if (!have(t) || (t == T_RAW && !with_raw))
			continue;
		if (!with_floor && (t == T_FLOOR_DEF || t == T_FLOOR_OFF))
			continue;
		list[n++] = t;
	}
	return k < n ? list[(k + rep) % n] : -1;
}

/* A memory daemon that does nothing before its fill: the daemon RSS row
 * (a daemon that ran the other rows reuses the heap they freed, which hid
 * up to half of what a key costs). */
static struct {
	char *root;
	pid_t pid;
} rss_tg;

/* Fill rss_tg's session/rss with n keys by create; RSS growth per key
 * beyond payload and name, read 0.3 s after the last close (RELEASE is
 * not waited for), or NAN. */
static double fresh_fill_rss(unsigned long n, long *rss0, long *rss1)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/session/rss", rss_tg.root);
	*rss0 = vm_bytes(rss_tg.pid, "VmRSS");
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		fail("mkdir", path, errno);
		return NAN;
	}
	for (unsigned long j = 0; j < n; j++) {
		snprintf(path, sizeof(path), "%s/session/rss/k%06lu", rss_tg.root, j);
		int err = create_file(path);
		if (err < 0) {
			fail("create", path, -err);
			return NAN;
		}
	}
	usleep(300000);
	*rss1 = vm_bytes(rss_tg.pid, "VmRSS");
	if (*rss0 < 0 || *rss1 < 0)
		return NAN;
	return (double)(*rss1 - *rss0) / (double)n - PAYLOAD_LEN - NAME_LEN;
}

static void usage(void)
{
	fprintf(stderr, "usage: keyfs-bench [--quick] [--floor-def DIR] [--floor-off DIR] [--mem-def DIR:PID]\n"
			"       [--mem-off DIR:PID] [--ker-def DIR:PID] [--ker-off DIR:PID] [--tmpfs DIR]\n"
			"       [--mem-rss DIR:PID]\n"
			"       (bench/run mounts them; run it in a fresh session keyring)\n");
	exit(2);
}

static void set_plan(int quick)
{
	plan.quick = quick;
	if (quick) {
		plan = (struct plan){ 1, 3, 2, 10, 1000, { 10, 100, 1000 }, 2000, 20,
				      50, 50, 50, 20, 20, 0.05, 2, 10 };
	} else {
		plan = (struct plan){ 0, 7, 3, 10, 10000, { 100, 1000, 10000 }, 100000, 60,
				      2000, 2000, 1000, 200, 200, 0.3, 4, 15 };
	}
}

int main(int argc, char **argv)
{
	static const char *const opt[NT] = { "--floor-def", "--floor-off", "--mem-def", "--mem-off",
					     "--ker-def", "--ker-off", "--tmpfs", NULL };
	int quick = 0, sizes_only = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0 || strcmp(argv[i], "--sizes") == 0) {
			*(argv[i][2] == 'q' ? &quick : &sizes_only) = 1;
			continue;
		}
		if (strcmp(argv[i], "--mem-rss") == 0 && i + 1 < argc) {
			rss_tg.root = argv[++i];
			char *colon = strrchr(rss_tg.root, ':');
			if (colon) {
				*colon = '\0';
				rss_tg.pid = (pid_t)atoi(colon + 1);
			}
			continue;
		}
		int t;
		for (t = 0; t < T_RAW; t++)
			if (strcmp(argv[i], opt[t]) == 0)
				break;
		if (t == T_RAW || i + 1 == argc)
			usage();
		tg[t].root = argv[++i];
		char *colon = strrchr(tg[t].root, ':');
		if (colon) {
			*colon = '\0';
			tg[t].pid = (pid_t)atoi(colon + 1);
		}
	}
	set_plan(quick);
	if (sizes_only) { /* the floor's rings, for bench/run */
		printf("%lu:%lu:%lu:%lu:%lu\n", plan.small, plan.ls_sizes[0], plan.ls_sizes[1], plan.ls_sizes[2], plan.big);
		return 0;
	}
	/* Raw keyctl runs where the kernel backend does (where keyctl works). */
	if (have(T_KER_DEF))
		tg[T_RAW].root = "raw";
	setvbuf(stdout, NULL, _IOLBF, 0);
	double start = now();
	char ring_s[32], ring_l[32], ring_big[32], ring_ls[3][32];
	snprintf(ring_s, sizeof(ring_s), "r%lu", plan.small);
	snprintf(ring_l, sizeof(ring_l), "r%lu", plan.large);
	snprintf(ring_big, sizeof(ring_big), "r%lu", plan.big);
	for (int k = 0; k < 3; k++)
		snprintf(ring_ls[k], sizeof(ring_ls[k]), "r%lu", plan.ls_sizes[k]);
	/* All rings: the small one and the listing sizes (large is the last). */
	unsigned long sizes[4];
	const char *names[4];
	int nsizes = 0;
	if (plan.small != plan.ls_sizes[0]) {
		sizes[nsizes] = plan.small;
		names[nsizes++] = ring_s;
	}
	for (int k = 0; k < 3; k++) {
		sizes[nsizes] = plan.ls_sizes[k];
		names[nsizes++] = ring_ls[k];
	}

	/* Memory: the cost of creating a key near empty, before anything else. */
	const int window = plan.quick ? 50 : 200;
	double near_empty[2][1000], near_full[2][1000];
	unsigned long big_have[2] = { 0, 0 };
	double fill_time[2] = { NAN, NAN };
	double unlink_empty[2][1000], unlink_full[2][1000], rmdir_empty[2][1000], rmdir_full[2][1000];
	unsigned long ru_have[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		int t = k ? T_MEM_OFF : T_MEM_DEF;
		for (int i = 0; i < window; i++)
			unlink_empty[k][i] = unlink_full[k][i] = rmdir_empty[k][i] = rmdir_full[k][i] = NAN;
		if (!have(t))
			continue;
		big_have[k] = fill_ring(t, ring_big, 0, (unsigned long)window, near_empty[k], 0);
		/* a ring of window keys, emptied in turn with the big one later */
		ru_have[k] = fill_ring(t, "ru", 0, (unsigned long)window, NULL, 0);
	}

	fprintf(stderr, "keyfs-bench: setting up keys (%.0f s)\n", now() - start);
	for (int t = 0; t < T_RAW; t++) {
		if (!have(t) || t == T_FLOOR_DEF || t == T_FLOOR_OFF || t == T_KER_OFF)
			continue;
		char path[4096];
		if (t == T_KER_DEF) {
			for (int k = 0; k < nsizes; k++)
				raw_fill(names[k], sizes[k]);
			raw_ring("rc");
			continue;
		}
		for (int k = 0; k < nsizes; k++)
			fill_ring((enum target)t, names[k], 0, sizes[k], NULL, 0);
		ring_path(path, sizeof(path), (enum target)t, "rc");
		if (mkdir(path, 0700) < 0)
			fail("mkdir", path, errno);
	}

	/* The first listing of the large ring since mounting, and what seeing
	 * its keys costs the kernel backend's daemon. */
	fprintf(stderr, "keyfs-bench: first listings (%.0f s)\n", now() - start);
	struct row *first_ls = row_new(U_MS, 1, "ls -l %lu keys, first listing since mount", plan.large);
	first_ls->fuse_split = 0;
	long ker_rss0[2] = { -1, -1 }, ker_rss1[2] = { -1, -1 };
	/* the reader's own CPU time in each: the kernel taking in the entries
	 * and the stat calls, which no file system serving them can lower */
	double first_cpu[NT];
	for (int t = 0; t < NT; t++)
		first_cpu[t] = NAN;
	/* The kernel backend keeps a parse of /proc/keys: one entry per key
	 * on the system, not per key seen, renewed by a thread of its own at
	 * most once a second.  Each kernel daemon's baseline is taken just
	 * before its listing with a fresh parse in place, so that the row
	 * counts what seeing the keys costs. */
	for (int k = 0;; k++) {
		int t = order(0, k, 1, 1);
		if (t < 0)
			break;
		/* Caches off: its cost is the warm row's; once is enough. */
		if (t == T_FLOOR_OFF || t == T_MEM_OFF || t == T_KER_OFF)
			continue;
		if (t == T_KER_DEF) {
			char path[4096];
			struct stat st;
			key_path(path, sizeof(path), (enum target)t, ring_s, 0);
			(void)stat(path, &st);
			usleep(1100000);
			(void)stat(path, &st);	/* asks for a new parse */
			usleep(300000);
			(void)stat(path, &st);	/* takes it */
			ker_rss0[0] = vm_bytes(tg[t].pid, "VmRSS");
		}
		first_ls->v[t][0] = m_ls((enum target)t, ring_l);
		first_cpu[t] = ls_cpu_us;
		listed_at[t] = now();
		if (t == T_KER_DEF) {
			/* The listing goes at RELEASEDIR, which closedir does
			 * not wait for: read at once, the figure held it or
			 * not, by timing.  What a key seen costs is what stays. */
			usleep(300000);
			ker_rss1[0] = vm_bytes(tg[t].pid, "VmRSS");
		}
	}
	first_ls->nsamples = 1;
	/* The listing goes at RELEASEDIR, which closedir does not wait for:
	 * read at once, the figure held it or not, by timing.  What a key
	 * seen costs is what stays. */
	usleep(300000);
	for (int k = 0; k < 2; k++)
		if (have(k ? T_KER_OFF : T_KER_DEF))
			ker_rss1[k] = vm_bytes(tg[k ? T_KER_OFF : T_KER_DEF].pid, "VmRSS");

	/* The single-process rows, interleaved. */
	struct row *r_cat = row_new(U_US, 1, "repeated cat of one key");
	struct row *r_cat_at_s = row_new(U_US, 1, "repeated cat of one key through the @s link");
	struct row *r_first = row_new(U_US, 1, "first cat of a key (never opened; %lu-key ring)", plan.large);
	struct row *r_stat = row_new(U_US, 1, "stat of one key");
	struct row *r_create = row_new(U_US, 1, "create (open O_CREAT/write/close; raw: add_key)");
	struct row *r_ls_small = row_new(U_US, 1, "lookup+stat, %lu-key ring", plan.small);
	struct row *r_ls_large = row_new(U_US, 1, "lookup+stat, %lu-key ring", plan.large);
	struct row *r_ls[3];
	for (int k = 0; k < 3; k++)
		r_ls[k] = row_new(U_MS, 1, "ls -l %lu keys", plan.ls_sizes[k]);
	struct row *r_raw_sized = row_new(U_MS, 0, "raw list + describe + size probe, %lu keys (what ls -l needs)",
					  plan.ls_sizes[2]);
	for (int rep = 0; rep < plan.reps; rep++) {
		fprintf(stderr, "keyfs-bench: repetition %d/%d (%.0f s)\n", rep + 1, plan.reps, now() - start);
		for (int k = 0;; k++) {
			int t = order(rep, k, 1, 1);
			if (t < 0)
				break;
			enum target e = (enum target)t;
			MEASURE(r_cat, t, rep, m_cat(e, ring_s, 1, plan.cat_iters, 0));
			MEASURE(r_cat_at_s, t, rep, m_cat(e, ring_s, 1, plan.cat_iters, 1));
			/* The first pass after setup warms nothing it measures:
			 * fresh keys each repetition. */
			names_forgotten(e);
			MEASURE(r_first, t, rep,
				m_firstcat(e, ring_l, (unsigned long)rep * (unsigned long)plan.first_count,
					   plan.first_count));
			MEASURE(r_stat, t, rep, m_stat(e, ring_s, 2, plan.stat_iters));
			if (t != T_FLOOR_DEF && t != T_FLOOR_OFF)
				MEASURE(r_create, t, rep, m_create(e, rep, plan.create_count));
			MEASURE(r_ls_small, t, rep, m_lookup(e, ring_s, plan.small, plan.lookup_iters, 7u + (unsigned)rep));
			MEASURE(r_ls_large, t, rep, m_lookup(e, ring_l, plan.large, plan.lookup_iters, 7u + (unsigned)rep));
			for (int s = 0; s < 3; s++)
				MEASURE(r_ls[s], t, rep, m_ls(e, ring_ls[s]));
			if (t == T_RAW)
				MEASURE(r_raw_sized, t, rep, raw_listing(ring_ls[2], 1));
			listed_at[t] = now();
		}
	}
	for (int i = first_ls + 1 - rows; i < nrows; i++)
		rows[i].nsamples = plan.reps;

	/* Parallel readers: throughput of P processes, different keys or one. */
	struct row *r_par[2][4];
	static const int procs[4] = { 1, 2, 4, 8 };
	for (int s = 0; s < 2; s++)
		for (int p = 0; p < 4; p++) {
			r_par[s][p] = row_new(U_OPS, 1, "%d reader%s, %s (%lu-key ring)", procs[p], procs[p] > 1 ? "s" : "",
					      s ? "same key" : "different keys", plan.large);
			r_par[s][p]->nsamples = plan.par_reps;
		}
	/* The CPU one and four readers of different keys cost per read, and
	 * the same two rows with the idle CPU waiting as the machine had it
	 * before bench/run made it poll (see idle_known). */
	struct row *r_cpu[2], *r_halt[2], *r_halt_cpu[2];
	int halt = idle_known();
	for (int i = 0; i < 2; i++) {
		r_cpu[i] = row_new(U_US, 1, "CPU per read, %d reader%s, different keys (readers + daemon)", i ? 4 : 1,
				   i ? "s" : "");
		r_cpu[i]->nsamples = plan.par_reps;
		r_halt[i] = r_halt_cpu[i] = NULL;
	}
	for (int i = 0; i < 2 && halt; i++) {
		r_halt[i] = row_new(U_OPS, 1, "%d reader%s, different keys, idle CPUs halting at once", i ? 4 : 1,
				    i ? "s" : "");
		r_halt_cpu[i] = row_new(U_US, 1, "CPU per read, %d reader%s, different keys, idle CPUs halting at once",
					i ? 4 : 1, i ? "s" : "");
		r_halt[i]->nsamples = r_halt_cpu[i]->nsamples = plan.par_reps;
	}
	for (int rep = 0; rep < plan.par_reps; rep++) {
		fprintf(stderr, "keyfs-bench: parallel readers %d/%d (%.0f s)\n", rep + 1, plan.par_reps, now() - start);
		for (int s = 0; s < 2; s++)
			for (int p = 0; p < 4; p++)
				for (int k = 0;; k++) {
					int t = order(rep, k, 1, 1);
					if (t < 0)
						break;
					double *cpu = s == 0 && (p == 0 || p == 2) ? &r_cpu[p / 2]->v[t][rep] : NULL;
					r_par[s][p]->v[t][rep] = m_par((enum target)t, ring_l, procs[p], s, cpu);
				}
		if (!halt)
			continue;
		set_idle(1);
		for (int i = 0; i < 2; i++)
			for (int k = 0;; k++) {
				int t = order(rep, k, 1, 1);
				if (t < 0)
					break;
				r_halt[i]->v[t][rep] = m_par((enum target)t, ring_l, i ? 4 : 1, 0, &r_halt_cpu[i]->v[t][rep]);
			}
		set_idle(0);
	}

	/* Parallel writers in one keyring: passes per second of 1 and 4. */
	struct row *r_wpar[2];
	for (int i = 0; i < 2; i++) {
		r_wpar[i] = row_new(U_OPS, 1, "%d writer%s in one keyring (create or rewrite; every other pass unlink)",
				    i ? 4 : 1, i ? "s" : "");
		r_wpar[i]->nsamples = plan.par_reps;
	}
	for (int rep = 0; rep < plan.par_reps; rep++) {
		fprintf(stderr, "keyfs-bench: parallel writers %d/%d (%.0f s)\n", rep + 1, plan.par_reps, now() - start);
		for (int i = 0; i < 2; i++)
			for (int k = 0;; k++) {
				int t = order(rep, k, 1, 0);
				if (t < 0)
					break;
				r_wpar[i]->v[t][rep] = m_wpar((enum target)t, i ? 4 : 1);
			}
	}

	/* Memory, caches off: the keys a search finds (m_search). */
	const int search_iters = plan.quick ? 200 : 2000;
	double search_near = NAN, search_far = NAN;
	if (have(T_MEM_OFF)) {
		char path[4096];
		ring_path(path, sizeof(path), T_MEM_OFF, "rs");
		if (mkdir(path, 0700) < 0)
			fail("mkdir", path, errno);
		strcat(path, "/needle");
		if (create_file(path) < 0)
			fail("create", path, errno);
		ring_path(path, sizeof(path), T_MEM_OFF, "near");
		if (create_file(path) < 0)
			fail("create", path, errno);
	}

	/* Memory: fill the big ring and list it; the cost of creating near full. */
	long mem_rss0[2] = { -1, -1 }, mem_rss1[2] = { -1, -1 }, mem_hwm0[2] = { -1, -1 }, mem_hwm1[2] = { -1, -1 };
	for (int k = 0; k < 2; k++) {
		int t = k ? T_MEM_OFF : T_MEM_DEF;
		if (!have(t) || big_have[k] == 0)
			continue;
		fprintf(stderr, "keyfs-bench: filling %lu keys on %s (%.0f s)\n", plan.big, target_name[t], now() - start);
		mem_rss0[k] = vm_bytes(tg[t].pid, "VmRSS");
		mem_hwm0[k] = vm_bytes(tg[t].pid, "VmHWM");
		static double times[1000000];
		double t0 = now();
		unsigned long from = big_have[k];
		big_have[k] = fill_ring((enum target)t, ring_big, from, plan.big, times, t0 + plan.fill_limit);
		fill_time[k] = now() - t0;
		unsigned long got = big_have[k] - from, w = got < (unsigned long)window ? got : (unsigned long)window;
		memcpy(near_full[k], times + got - w, w * sizeof(double));
		for (unsigned long i = w; i < (unsigned long)window; i++)
			near_full[k][i] = NAN;
		mem_rss1[k] = vm_bytes(tg[t].pid, "VmRSS");
		mem_hwm1[k] = vm_bytes(tg[t].pid, "VmHWM");
		if (big_have[k] < plan.big)
			fprintf(stderr, "keyfs-bench: %s: stopped at %lu keys after %.0f s\n", target_name[t],
				big_have[k], fill_time[k]);
	}
	if (have(T_TMPFS))
		fill_ring(T_TMPFS, ring_big, 0, plan.big, NULL, 0);
	struct row *r_big = row_new(U_MS, 1, "ls -l %lu keys (memory only)", plan.big);
	r_big->nsamples = plan.par_reps;
	for (int rep = 0; rep < plan.par_reps; rep++)
		for (int k = 0;; k++) {
			int t = order(rep, k, 0, 1);
			if (t < 0)
				break;
			if (t == T_KER_DEF || t == T_KER_OFF || ((t == T_MEM_DEF || t == T_MEM_OFF) &&
								 big_have[t == T_MEM_OFF] < plan.big))
				continue;
			if (t == T_FLOOR_DEF || t == T_FLOOR_OFF || t == T_TMPFS || t == T_MEM_DEF || t == T_MEM_OFF)
				MEASURE(r_big, t, rep, m_ls((enum target)t, ring_big));
		}

	if (have(T_MEM_OFF) && big_have[1] >= plan.big)
		m_search(T_MEM_OFF, search_iters, &search_near, &search_far);

	/* Memory: unlinking keys spread over the big ring, in turn with the
	 * keys of the small one. */
	for (int k = 0; k < 2; k++) {
		int t = k ? T_MEM_OFF : T_MEM_DEF;
		const char *const rings[2] = { "ru", ring_big };
		const unsigned long steps[2] = { 1, plan.big / (unsigned long)window };
		double *const times[2] = { unlink_empty[k], unlink_full[k] };
		if (have(t) && big_have[k] >= plan.big && ru_have[k] == (unsigned long)window)
			remove_in_turn((enum target)t, rings, steps, window, times, unlink);
	}

	/* Memory: removing a keyring from a keyring of window keyrings, in
	 * turn with one of plan.big keyrings (spread out); last, so that the
	 * rows before see the daemon they saw before these rows were added. */
	for (int k = 0; k < 2; k++) {
		int t = k ? T_MEM_OFF : T_MEM_DEF;
		const char *const rings[2] = { "rd", "rD" };
		const unsigned long steps[2] = { 1, plan.big / (unsigned long)window };
		double *const times[2] = { rmdir_empty[k], rmdir_full[k] };
		if (!have(t))
			continue;
		if (fill_with((enum target)t, "rd", 0, (unsigned long)window, NULL, 0, make_dir) == (unsigned long)window &&
		    fill_with((enum target)t, "rD", 0, plan.big, NULL, 0, make_dir) == plan.big)
			remove_in_turn((enum target)t, rings, steps, window, times, rmdir);
		clear_ring((enum target)t, "rD");
	}

	long rss0 = -1, rss1 = -1;
	double fresh_rss = NAN;
	if (rss_tg.root) {
		fprintf(stderr, "keyfs-bench: filling %lu keys on a fresh memory daemon (%.0f s)\n", plan.big,
			now() - start);
		fresh_rss = fresh_fill_rss(plan.big, &rss0, &rss1);
	}

	/* Creating near empty vs near full, and memory per key, as rows. */
	struct row *r_c100 = row_new(U_US, 1, "create near empty (memory; median of keys 1-%d)", window);
	struct row *r_cbig = row_new(U_US, 1, "create near %lu keys (memory; median of the last %d)", plan.big, window);
	struct row *r_u100 = row_new(U_US, 1, "unlink in %d keys (memory; median of %d, in turn with the next row)", window,
				   window);
	struct row *r_ubig = row_new(U_US, 1, "unlink in %lu keys (memory; median of %d spread out)", plan.big, window);
	struct row *r_d100 = row_new(U_US, 1, "rmdir among %d keyrings (memory; median of %d, in turn with the next row)",
				   window, window);
	struct row *r_dbig = row_new(U_US, 1, "rmdir among %lu keyrings (memory; median of %d spread out)",
				     plan.big, window);
	struct row *r_s0 = row_new(U_US, 1, "search/user lookup of a key in the session (memory; median of %d)",
				   search_iters);
	struct row *r_s1 = row_new(U_US, 1, "search/user lookup past the %lu-key ring (memory; median of %d)",
				   plan.big, search_iters);
	struct row *r_fill = row_new(U_S, 1, "fill %lu keys by create (memory)", plan.big);
	struct row *r_rss = row_new(U_BYTES, 1, "daemon RSS per key beyond payload+name (memory: fill; kernel: seen by ls)");
	r_c100->nsamples = r_cbig->nsamples = r_fill->nsamples = r_rss->nsamples = 1;
	r_u100->nsamples = r_ubig->nsamples = r_s0->nsamples = r_s1->nsamples = 1;
	r_d100->nsamples = r_dbig->nsamples = 1;
	r_s0->v[T_MEM_OFF][0] = search_near;
	r_s1->v[T_MEM_OFF][0] = search_far;
	for (int k = 0; k < 2; k++) {
		int t = k ? T_MEM_OFF : T_MEM_DEF;
		if (!have(t))
			continue;
		r_c100->v[t][0] = median(near_empty[k], window) * 1e6;
		r_cbig->v[t][0] = big_have[k] >= plan.big ? median(near_full[k], window) * 1e6 : NAN;
		r_fill->v[t][0] = big_have[k] >= plan.big ? fill_time[k] : NAN;
		r_u100->v[t][0] = median(unlink_empty[k], window) * 1e6;
		r_ubig->v[t][0] = median(unlink_full[k], window) * 1e6;
		r_d100->v[t][0] = median(rmdir_empty[k], window) * 1e6;
		r_dbig->v[t][0] = median(rmdir_full[k], window) * 1e6;
		unsigned long added = big_have[k] - (unsigned long)window;
		if (!rss_tg.root && mem_rss0[k] >= 0 && mem_rss1[k] >= 0 && added > 0)
			r_rss->v[t][0] = (double)(mem_rss1[k] - mem_rss0[k]) / (double)added - PAYLOAD_LEN - NAME_LEN;
		int kt = k ? T_KER_OFF : T_KER_DEF;
		if (k == 0 && have(kt) && ker_rss0[k] >= 0 && ker_rss1[k] >= 0)
			r_rss->v[kt][0] = (double)(ker_rss1[k] - ker_rss0[k]) / (double)plan.large;
	}
	if (rss_tg.root)
		r_rss->v[T_MEM_DEF][0] = fresh_rss;

	/* Clean up what raw keyctl made (the keyfs kernel mounts' keys are the same). */
	for (int k = 0; k < nsizes; k++) {
		key_serial_t r = keyctl_search(KEY_SPEC_SESSION_KEYRING, "keyring", names[k], 0);
		if (r >= 0 && (keyctl_clear(r) < 0 || keyctl_unlink(r, KEY_SPEC_SESSION_KEYRING) < 0))
			fail("clean up keyring", names[k], errno);
	}
	key_serial_t rc = keyctl_search(KEY_SPEC_SESSION_KEYRING, "keyring", "rc", 0);
	if (rc >= 0 && (keyctl_clear(rc) < 0 || keyctl_unlink(rc, KEY_SPEC_SESSION_KEYRING) < 0))
		fail("clean up keyring", "rc", errno);

	/* Output. */
	printf("\n%s run: %d repetitions (parallel rows and the big listing: %d), %.0f s; medians; ratios are costs"
	       " (2.00x = twice as slow), each the median of per-repetition ratios.\n\n",
	       plan.quick ? "Quick" : "Full", plan.reps, plan.par_reps, now() - start);
	printf("A * marks a figure from fewer repetitions: one took over %.0f s, so it was not repeated.\n",
	       plan.slow_limit);
	printf("Loops stop after %.0f s: per-operation rows average what was done%s.\n\n", plan.op_cap,
	       capped ? "; a listing stopped so is extrapolated from the entries done (some were)" : "");
	print_table();
	if (rss_tg.root && rss1 >= 0)
		printf("\nfresh memory daemon (daemon RSS row): VmRSS %ld -> %ld kB over a fill of %lu keys\n",
		       rss0 / 1024, rss1 / 1024, plan.big);
	if (mem_rss1[0] >= 0)
		printf("%smemory daemon that ran the other rows: VmRSS %ld -> %ld kB, VmHWM %ld -> %ld kB over the fill of %lu keys\n",
		       rss_tg.root ? "" : "\n",
		       mem_rss0[0] / 1024, mem_rss1[0] / 1024, mem_hwm0[0] / 1024, mem_hwm1[0] / 1024,
		       big_have[0] - (unsigned long)window);
	if (ker_rss1[0] >= 0)
		printf("kernel daemon: VmRSS %ld -> %ld kB around its first ls -l of %lu keys\n", ker_rss0[0] / 1024,
		       ker_rss1[0] / 1024, plan.large);

	/* Issue 10's targets, each with its figure. */
	char fig[128];
	printf("\n| target (issue 10) | figure | target | |\n|---|---|---|---|\n");
	for (int k = 0; k < 2; k++) {
		int t = k ? T_KER_DEF : T_MEM_DEF;
		const char *b = k ? "kernel" : "memory";
		double x = med_ratio(r_cat, t, T_FLOOR_DEF);
		snprintf(fig, sizeof(fig), "%.2fx", x);
		target_line(k ? "repeated cat, kernel" : "repeated cat, memory", fig, "<= 0.60x floor", isnan(x) ? -1 : x <= 0.6);
		x = med_ratio(r_first, t, T_FLOOR_DEF);
		snprintf(fig, sizeof(fig), "%.2fx", x);
		char what[96];
		snprintf(what, sizeof(what), "first cat, %s", b);
		target_line(what, fig, "<= 1.30x floor", isnan(x) ? -1 : x <= 1.3);
	}
	for (int k = 0; k < 2; k++) {
		int t = k ? T_KER_OFF : T_MEM_OFF;
		double x = ratio_of(r_ls_large, r_ls_small, t);
		char what[96];
		snprintf(what, sizeof(what), "lookup+stat %lu vs %lu keys, caches off, %s", plan.large, plan.small,
			 k ? "kernel" : "memory");
		snprintf(fig, sizeof(fig), "%.2fx", x);
		target_line(what, fig, "<= 1.50x", isnan(x) ? -1 : x <= 1.5);
	}
	{
		double x = med_ratio(r_ls[2], T_KER_DEF, T_RAW);
		/* the calls alone, against the same raw samples */
		double calls = ratio_of(r_raw_sized, r_ls[2], T_RAW);
		char what[96];
		snprintf(what, sizeof(what), "ls -l %lu keys, kernel, warm", plan.ls_sizes[2]);
		snprintf(fig, sizeof(fig), "%.2fx (its keyctl calls alone, with the sizes: %.2fx)", x, calls);
		target_line(what, fig, "<= 2.00x raw list+describe", isnan(x) ? -1 : x <= 2);
		x = cost_ratio(first_ls, T_KER_DEF, T_RAW, 0);
		snprintf(what, sizeof(what), "ls -l %lu keys, kernel, first since mount", plan.large);
		snprintf(fig, sizeof(fig), "%.2fx (the reader's own CPU in it: %.2fx)", x,
			 first_cpu[T_KER_DEF] / first_ls->v[T_RAW][0]);
		target_line(what, fig, "<= 2.00x raw list+describe", isnan(x) ? -1 : x <= 2);
	}
	for (int k = 0; k < 2; k++) {
		int t = k ? T_MEM_OFF : T_MEM_DEF;
		double x = r_cbig->v[t][0] / r_c100->v[t][0];
		char what[96];
		snprintf(what, sizeof(what), "create near %lu keys vs near empty, memory%s", plan.big,
			 k ? " (caches off)" : "");
		if (isnan(x))
			snprintf(fig, sizeof(fig), "fill stopped at %lu keys after %.0f s", big_have[k], fill_time[k]);
		else
			snprintf(fig, sizeof(fig), "%.2fx (%.0f us vs %.0f us)", x, r_cbig->v[t][0], r_c100->v[t][0]);
		target_line(what, fig, "<= 1.50x", !have(t) ? -1 : isnan(x) ? 0 : x <= 1.5);
		snprintf(what, sizeof(what), "unlink in %lu keys vs in %d, memory%s", plan.big, window,
			 k ? " (caches off)" : "");
		within_line(what, r_ubig->v[t][0], r_u100->v[t][0], "<= 1.50x (as create)", have(t));
		snprintf(what, sizeof(what), "rmdir among %lu keyrings vs among %d, memory%s", plan.big, window,
			 k ? " (caches off)" : "");
		within_line(what, r_dbig->v[t][0], r_d100->v[t][0], "<= 1.50x (as create)", have(t));
		snprintf(what, sizeof(what), "fill %lu keys, memory%s", plan.big, k ? " (caches off)" : "");
		if (big_have[k] >= plan.big)
			snprintf(fig, sizeof(fig), "%.1f s", fill_time[k]);
		else
			snprintf(fig, sizeof(fig), "> %.0f s (stopped at %lu)", fill_time[k], big_have[k]);
		target_line(what, fig, "seconds (< 60 s)", !have(t) ? -1 : big_have[k] >= plan.big && fill_time[k] < 60);
	}
	{
		char what[96];
		snprintf(what, sizeof(what), "search lookup past %lu keys vs in the session, memory (caches off)",
			 plan.big);
		within_line(what, search_far, search_near, "<= 1.50x (no O(n) path)", 1);
	}
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < 2; k++) {
			int t = k ? T_KER_DEF : T_MEM_DEF;
			struct row *one = h ? r_halt[0] : r_par[0][0], *four = h ? r_halt[1] : r_par[0][2];
			struct row *cpu1 = h ? r_halt_cpu[0] : r_cpu[0], *cpu4 = h ? r_halt_cpu[1] : r_cpu[1];
			if (!one)
				continue;
			char what[128], fig2[200];
			snprintf(what, sizeof(what), "4 readers vs 1, different keys, %lu keys, %s%s", plan.large,
				 k ? "kernel" : "memory", h ? ", idle CPUs halting at once" : "");
			readers_figure(fig2, sizeof(fig2), one, four, cpu1, cpu4, t);
			double x = ratio_of(four, one, t);
			target_line(what, fig2, ">= 2.00x", isnan(x) ? -1 : x >= 2);
		}
	{
		double x = r_rss->v[T_MEM_DEF][0];
		snprintf(fig, sizeof(fig), "%.0f B", x);
		target_line("memory backend: bytes per key beyond payload and name", fig, "<= 200 B", isnan(x) ? -1 : x <= 200);
		x = r_rss->v[T_KER_DEF][0];
		snprintf(fig, sizeof(fig), "%.0f B", x);
		target_line("kernel backend: bytes per key seen", fig, "<= 300 B", isnan(x) ? -1 : x <= 300);
	}
	if (failures)
		fprintf(stderr, "keyfs-bench: %d measurement(s) failed\n", failures);
	return failures ? 1 : 0;
}
