/* bench/store-bench.c: the memory backend's store= at scale (issue 12 item 2): a create near 100 and near N keys against an fsync, the load of N keys, and the daemon's memory with a store and without. */
/*
 * usage: keyfs-store-bench [--quick] KEYFS DIR
 *
 * KEYFS is the keyfs binary; DIR an empty directory on the file system
 * the stores are to live on (bench/run makes one beside the build, on
 * disk: a tmpfs would make every fsync free).  It writes the stores
 * itself (keyfs-store(5)), mounts keyfs on DIR/m-* in the foreground,
 * always unmounts what it mounted, and prints one table and the target
 * lines.  Its exit status is 0 whenever every measurement ran.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define FIRST	0x10000000	/* the generated stores' first serial */
#define PAYLOAD	32
#define MAXM	4

static const char *keyfs_bin, *dir;
static struct mnt { char path[4096]; pid_t pid; } mounts[MAXM];
static int nmounts;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* fusermount3 -u [-z] path: its exit status. */
static int fusermount_u(const char *path, int lazy)
{
	int status;
	pid_t p = fork();

	if (p < 0)
		return -1;
	if (p == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2);
		if (lazy)
			execlp("fusermount3", "fusermount3", "-u", "-z", path, (char *)NULL);
		else
			execlp("fusermount3", "fusermount3", "-u", path, (char *)NULL);
		_exit(127);
	}
	if (waitpid(p, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void unmount_all(void)
{
	for (int i = 0; i < nmounts; i++) {
		if (!mounts[i].pid)
			continue;
		if (fusermount_u(mounts[i].path, 0) != 0 && fusermount_u(mounts[i].path, 1) != 0)
			kill(mounts[i].pid, SIGTERM);
		waitpid(mounts[i].pid, NULL, 0);
		mounts[i].pid = 0;
	}
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "keyfs-store-bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	unmount_all();
	exit(1);
}

static void on_signal(int sig)
{
	(void)sig;
	unmount_all();
	_exit(130);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	if (n == 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define RING "{\"serial\": %ld, \"type\": \"keyring\", \"description\": \"%s\", \"uid\": 0, \"gid\": 0, " \
	     "\"perm\": \"0x3f030000\", \"state\": \"valid\", %s, \"links\": ["
#define RUSER "{\"serial\": %ld, \"type\": \"user\", \"description\": \"%s\", \"uid\": 0, \"gid\": 0, " \
	      "\"perm\": \"0x3f010000\", \"state\": \"valid\", \"payload\": \"eA==\"}"
static const char gen_times[] = "\"mtime\": \"1700000000.0\", \"ctime\": \"1700000000.0\"";

/* A generated store as keyfs writes it, up to the session keyring's
 * links after the user keyring (FIRST): the caller adds its own, then
 * calls gen_specials_end. */
static FILE *gen_head(const char *path, long next_serial)
{
	FILE *f = fopen(path, "w");

	if (!f)
		die("%s: %s", path, strerror(errno));
	fprintf(f, "{\"format\": 1, \"next_serial\": %ld, \"session\": %d, \"user\": %d, "
		   "\"user_session\": %d, \"persistent\": %d, \"keys\": [\n",
		next_serial, FIRST + 2, FIRST, FIRST + 1, FIRST + 3);
	fprintf(f, RING "]},\n", (long)FIRST, "_uid.0", gen_times);
	fprintf(f, RING "%d]},\n", (long)FIRST + 1, "_uid_ses.0", gen_times, FIRST);
	fprintf(f, RING "%d", (long)FIRST + 2, "_ses", gen_times, FIRST);
	return f;
}

/* The end of the session keyring's links, and the persistent keyring. */
static void gen_specials_end(FILE *f)
{
	fprintf(f, "]},\n" RING "]}", (long)FIRST + 3, "_persistent.0", gen_times);
}

static void gen_close(FILE *f, const char *path)
{
	fprintf(f, "\n]}\n");
	if (fclose(f) != 0)
		die("%s: %s", path, strerror(errno));
}

/* A store of the special keyrings and one keyring "r" under the session
 * keyring with n user keys kNNNNNNN of 32 bytes, as keyfs writes it. */
static void gen_store(const char *path, unsigned long n)
{
	const long r = FIRST + 4;
	FILE *f = gen_head(path, r + 1 + (long)n);

	fprintf(f, ", %ld", r);
	gen_specials_end(f);
	fprintf(f, ",\n" RING, r, "r", gen_times);
	for (unsigned long i = 0; i < n; i++)
		fprintf(f, "%s%lu", i ? ", " : "", (unsigned long)r + 1 + i);
	fprintf(f, "]}");
	for (unsigned long i = 0; i < n; i++)
		/* 32 bytes of 'x' in base64 */
		fprintf(f, ",\n{\"serial\": %lu, \"type\": \"user\", \"description\": \"k%07lu\", \"uid\": 0, "
			   "\"gid\": 0, \"perm\": \"0x3f010000\", \"state\": \"valid\", %s, "
			   "\"payload\": \"eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHg=\"}",
			(unsigned long)r + 1 + i, i, gen_times);
	gen_close(f, path);
}

/*
 * A store of k keyrings in the session, each linking one key, and a
 * journal of k records, each a new key linked into another of them
 * (journal 1); or the same keys with no journal, every link in the
 * snapshot (journal 0).  The replay of a journal that touches the links
 * of many keyrings costs its records, not records x keyrings: the load
 * of the first within a little of the second's.
 */
static void gen_rings(const char *path, unsigned long k, int journal)
{
	char jpath[4200];
	const long r0 = FIRST + 4, b0 = r0 + 2 * (long)k;
	FILE *f = gen_head(path, b0 + (long)k + 1), *j;

	for (unsigned long i = 0; i < k; i++)
		fprintf(f, ", %ld", r0 + 2 * (long)i);
	gen_specials_end(f);
	for (unsigned long i = 0; i < k; i++) {
		char name[32];
		long r = r0 + 2 * (long)i;
		snprintf(name, sizeof(name), "r%lu", i);
		fprintf(f, ",\n" RING "%ld", r, name, gen_times, r + 1);
		if (!journal)
			fprintf(f, ", %ld", b0 + (long)i);
		fprintf(f, "]},\n" RUSER, r + 1, "a");
		if (!journal)
			fprintf(f, ",\n" RUSER, b0 + (long)i, "b");
	}
	gen_close(f, path);
	if (!journal)
		return;
	snprintf(jpath, sizeof(jpath), "%s.journal", path);
	j = fopen(jpath, "w");
	if (!j)
		die("%s: %s", jpath, strerror(errno));
	fprintf(j, "{\"keyfs_journal\":1}\n");
	for (unsigned long i = 0; i < k; i++)
		fprintf(j, "{\"seq\":%lu,\"ops\":[{\"put\":" RUSER "},{\"link\":[%ld,%ld]}]}\n", i + 1,
			b0 + (long)i, "b", r0 + 2 * (long)i, b0 + (long)i);
	if (fclose(j) != 0)
		die("%s: %s", jpath, strerror(errno));
}

static void copy_file(const char *from, const char *to)
{
	char cmd[12800];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && rm -f '%s.journal'", from, to, to);
	if (system(cmd) != 0)
		die("cannot copy %s", from);
}

/* Mount keyfs (foreground) on DIR/m-NAME with store (NULL: none); the
 * seconds from exec to the mount being there go to *secs. */
static struct mnt *mount_keyfs(const char *name, const char *store, double *secs)
{
	struct mnt *m;
	struct stat st, pst;
	char opt[4200];

	for (m = mounts; m < mounts + nmounts && m->pid; m++)
		;
	if (m == mounts + MAXM)
		die("too many mounts");
	if (m == mounts + nmounts)
		nmounts++;
	snprintf(m->path, sizeof(m->path), "%s/m-%s", dir, name);
	if (mkdir(m->path, 0700) < 0 && errno != EEXIST)
		die("%s: %s", m->path, strerror(errno));
	if (stat(dir, &pst) < 0)
		die("%s: %s", dir, strerror(errno));
	snprintf(opt, sizeof(opt), "backend=memory%s%s", store ? ",store=" : "", store ? store : "");
	double t0 = now();
	m->pid = fork();
	if (m->pid < 0)
		die("fork: %s", strerror(errno));
	if (m->pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 2);
		}
		execl(keyfs_bin, keyfs_bin, "-f", "-o", opt, m->path, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 60000; i++) {
		if (stat(m->path, &st) == 0 && st.st_dev != pst.st_dev) {
			if (secs)
				*secs = now() - t0;
			return m;
		}
		if (waitpid(m->pid, NULL, WNOHANG) == m->pid) {
			m->pid = 0;
			die("keyfs did not mount %s (store %s)", m->path, store ? store : "none");
		}
		usleep(500);
	}
	die("keyfs took more than 30 s to mount %s", m->path);
	return NULL;
}

static void unmount_one(struct mnt *m)
{
	if (fusermount_u(m->path, 0) != 0)
		kill(m->pid, SIGTERM);
	waitpid(m->pid, NULL, 0);
	m->pid = 0;
	rmdir(m->path);
}

static long vm_rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* One create as a user makes one: open(O_CREAT|O_EXCL), write, close. */
static double create_one(const char *ring, const char *name)
{
	char path[4400], buf[PAYLOAD];
	double t0 = now();
	int fd;

	memset(buf, 'y', sizeof(buf));
	snprintf(path, sizeof(path), "%s/%s", ring, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || close(fd) < 0)
		die("create %s: %s", path, strerror(errno));
	return now() - t0;
}

/* The reference: one append of a journal record's size, and its fsync. */
/* One change that is one request: the permission of key path, set with
 * setxattr(2), alternately one value and another. */
static double perm_one(const char *path, int i)
{
	const char *v = i % 2 ? "3f030000" : "3f010000";
	double t0 = now();

	if (setxattr(path, "user.keyfs.perm", v, strlen(v), 0) < 0)
		die("setxattr %s: %s", path, strerror(errno));
	return now() - t0;
}

/* One unlink(2) of key name in ring. */
static double unlink_one(const char *ring, const char *name)
{
	char path[4400];
	double t0 = now();

	snprintf(path, sizeof(path), "%s/%s", ring, name);
	if (unlink(path) < 0)
		die("unlink %s: %s", path, strerror(errno));
	return now() - t0;
}

static double fsync_one(int fd)
{
	char buf[256];
	double t0 = now();

	memset(buf, 'z', sizeof(buf));
	buf[sizeof(buf) - 1] = '\n';
	if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) < 0)
		die("fsync probe: %s", strerror(errno));
	return now() - t0;
}

/* What ls -l would make the daemon hold: every entry looked up. */
static void walk(const char *ring)
{
	DIR *d = opendir(ring);
	struct dirent *e;
	struct stat st;
	char path[4400];

	if (!d)
		die("%s: %s", ring, strerror(errno));
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", ring, e->d_name);
		lstat(path, &st);
	}
	closedir(d);
}

/* VmRSS once the daemon has dropped the listing: closedir's RELEASEDIR
 * is sent without anyone waiting for it, so an RSS read at once may or
 * may not still hold the listing of every entry (the walk's own cost, not
 * the keys'), which made the figure depend on timing. */
static long settled_rss_kb(pid_t pid)
{
	usleep(300000);
	return vm_rss_kb(pid);
}

int main(int argc, char **argv)
{
	int quick = 0, a = 1;

	if (argc > 1 && strcmp(argv[1], "--quick") == 0) {
		quick = 1;
		a++;
	}
	if (argc - a != 2) {
		fprintf(stderr, "usage: keyfs-store-bench [--quick] KEYFS DIR\n");
		return 2;
	}
	keyfs_bin = argv[a];
	dir = argv[a + 1];
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);

	const unsigned long big = quick ? 2000 : 100000, small = 100, rings = quick ? 500 : 50000;
	const int loads = quick ? 2 : 5, rounds = quick ? 3 : 10, per = quick ? 5 : 20;
	char s_big[4200], s_small[4200], s_load[4200], s_a[4200], probe[4200], ring[4400];

	snprintf(s_big, sizeof(s_big), "%s/gen-big.json", dir);
	snprintf(s_small, sizeof(s_small), "%s/gen-small.json", dir);
	snprintf(s_load, sizeof(s_load), "%s/load.json", dir);
	snprintf(s_a, sizeof(s_a), "%s/big.json", dir);
	snprintf(probe, sizeof(probe), "%s/fsync-probe", dir);
	fprintf(stderr, "keyfs-store-bench: writing stores of %lu and %lu keys in %s\n", big, small, dir);
	gen_store(s_big, big);
	gen_store(s_small, small);

	/* The load of big keys: exec to mounted, a fresh copy each time. */
	double load[8];
	for (int i = 0; i < loads; i++) {
		copy_file(s_big, s_load);
		unmount_one(mount_keyfs("load", s_load, &load[i]));
	}
	double load_s = median(load, loads);

	/* Keyrings: K and K/10 of them, from a snapshot alone and with a
	 * journal; per key, the big store within a little of the small. */
	const unsigned long nrings[2] = { rings / 10, rings };
	double load_r[2][2][8];	/* [big][journal][sample] */
	char s_r[2][2][4200], cmd[12800];
	for (int b = 0; b < 2; b++)
		for (int jl = 0; jl < 2; jl++) {
			snprintf(s_r[b][jl], sizeof(s_r[b][jl]), "%s/gen-rings-%d-%d.json", dir, b, jl);
			gen_rings(s_r[b][jl], nrings[b], jl);
		}
	for (int i = 0; i < loads; i++)
		for (int b = 0; b < 2; b++)
			for (int jl = 0; jl < 2; jl++) {
				copy_file(s_r[b][jl], s_load);
				snprintf(cmd, sizeof(cmd), "cp '%s.journal' '%s.journal'", s_r[b][jl], s_load);
				if (jl && system(cmd) != 0)
					die("cannot copy %s.journal", s_r[b][jl]);
				unmount_one(mount_keyfs("load", s_load, &load_r[b][jl][i]));
			}
	double rings_s[2][2], rings_ratio[2];
	for (int jl = 0; jl < 2; jl++) {
		double per_key[8];
		for (int i = 0; i < loads; i++)
			per_key[i] = (load_r[1][jl][i] / (double)nrings[1]) / (load_r[0][jl][i] / (double)nrings[0]);
		rings_ratio[jl] = median(per_key, loads);
		for (int b = 0; b < 2; b++)
			rings_s[b][jl] = median(load_r[b][jl], loads);
	}
	for (int b = 0; b < 2; b++)
		for (int jl = 0; jl < 2; jl++) {
			unlink(s_r[b][jl]);
			snprintf(cmd, sizeof(cmd), "%.4199s.journal", s_r[b][jl]);
			unlink(cmd);
		}

	/* Memory: the same keys with the store, and made by create without. */
	copy_file(s_big, s_a);
	struct mnt *ma = mount_keyfs("big", s_a, NULL);
	snprintf(ring, sizeof(ring), "%s/session/r", ma->path);
	walk(ring);
	long rss_store = settled_rss_kb(ma->pid);
	struct mnt *mb = mount_keyfs("nostore", NULL, NULL);
	snprintf(ring, sizeof(ring), "%s/session/r", mb->path);
	if (mkdir(ring, 0700) < 0)
		die("%s: %s", ring, strerror(errno));
	fprintf(stderr, "keyfs-store-bench: filling %lu keys without a store\n", big);
	double t0 = now();
	for (unsigned long i = 0; i < big; i++) {
		char name[32];
		snprintf(name, sizeof(name), "k%07lu", i);
		create_one(ring, name);
	}
	double fill_s = now() - t0;
	walk(ring);
	long rss_none = settled_rss_kb(mb->pid);
	unmount_one(mb);

	/* A create near small and near big keys, one without a store, and
	 * the fsync, interleaved: what a create costs through FUSE alone is
	 * in the same run, so the store's own share can be told apart. */
	copy_file(s_small, s_load);
	struct mnt *mc = mount_keyfs("small", s_load, NULL);
	struct mnt *mp = mount_keyfs("plain", NULL, NULL);
	char ring_a[4400], ring_c[4400], ring_p[4400];
	snprintf(ring_a, sizeof(ring_a), "%s/session/r", ma->path);
	snprintf(ring_c, sizeof(ring_c), "%s/session/r", mc->path);
	snprintf(ring_p, sizeof(ring_p), "%s/session/r", mp->path);
	if (mkdir(ring_p, 0700) < 0)
		die("%s: %s", ring_p, strerror(errno));
	int pfd = open(probe, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0600);
	if (pfd < 0)
		die("%s: %s", probe, strerror(errno));
	int n = rounds * per;
	double *c_small = calloc((size_t)n, sizeof(double)), *c_big = calloc((size_t)n, sizeof(double));
	double *c_fsync = calloc((size_t)n, sizeof(double));
	double *c_plain = calloc((size_t)n, sizeof(double));
	double *c_perm = calloc((size_t)n, sizeof(double));
	double *c_uend = calloc((size_t)n, sizeof(double));
	double *c_ufront = calloc((size_t)n, sizeof(double));
	char perm_key[4500];
	if (!c_small || !c_big || !c_fsync || !c_plain || !c_perm || !c_uend || !c_ufront)
		die("out of memory");
	snprintf(perm_key, sizeof(perm_key), "%s/k%07lu", ring_a, big / 2);
	for (int r = 0, k = 0; r < rounds; r++, k += per)
		for (int step = 0; step < 7; step++)
			for (int j = 0; j < per; j++) {
				char name[32];
				snprintf(name, sizeof(name), "c%05d", k + j);
				switch ((step + r) % 7) {
				case 0: c_small[k + j] = create_one(ring_c, name); break;
				case 1: c_big[k + j] = create_one(ring_a, name); break;
				case 2: c_plain[k + j] = create_one(ring_p, name); break;
				case 3: c_perm[k + j] = perm_one(perm_key, k + j); break;
				/* every other key from each end: the front's
				 * unlinks leave holes before the end's */
				case 4:
					snprintf(name, sizeof(name), "k%07lu", big - 1 - 2 * (unsigned long)(k + j));
					c_uend[k + j] = unlink_one(ring_a, name);
					break;
				case 5:
					snprintf(name, sizeof(name), "k%07lu", 2 * (unsigned long)(k + j));
					c_ufront[k + j] = unlink_one(ring_a, name);
					break;
				default: c_fsync[k + j] = fsync_one(pfd); break;
				}
			}
	close(pfd);
	unlink(probe);
	unmount_one(mp);
	unmount_one(mc);
	unmount_one(ma);
	unlink(s_big);
	unlink(s_small);
	unlink(s_load);
	unlink(s_a);
	char jpath[4400];
	snprintf(jpath, sizeof(jpath), "%s.journal", s_load);
	unlink(jpath);
	snprintf(jpath, sizeof(jpath), "%s.journal", s_a);
	unlink(jpath);

	/* Ratios are taken per sample pair, then the median. */
	double *r_big = calloc((size_t)n, sizeof(double)), *r_fs = calloc((size_t)n, sizeof(double));
	double *r_share = calloc((size_t)n, sizeof(double));
	double *r_perm = calloc((size_t)n, sizeof(double));
	double *r_unlink = calloc((size_t)n, sizeof(double));
	if (!r_big || !r_fs || !r_share || !r_perm || !r_unlink)
		die("out of memory");
	for (int i = 0; i < n; i++) {
		r_unlink[i] = c_uend[i] / c_ufront[i];
		r_big[i] = c_big[i] / c_small[i];
		r_fs[i] = c_big[i] / c_fsync[i];
		r_share[i] = (c_big[i] - c_plain[i]) / c_fsync[i];
		r_perm[i] = c_perm[i] / c_fsync[i];
	}
	double ratio_perm = median(r_perm, n), m_perm = median(c_perm, n);
	double ratio_unlink = median(r_unlink, n);
	double m_uend = median(c_uend, n), m_ufront = median(c_ufront, n);
	double ratio_big = median(r_big, n), ratio_fs = median(r_fs, n);
	double ratio_share = median(r_share, n);
	double m_small = median(c_small, n), m_big = median(c_big, n), m_fsync = median(c_fsync, n);
	double m_plain = median(c_plain, n);
	double ratio_rss = (double)rss_store / (double)rss_none;

	printf("\n| measurement (memory backend, store=) | figure |\n|---|---|\n");
	printf("| create near %lu keys (median of %d) | %.1f us |\n", small, n, m_small * 1e6);
	printf("| create near %lu keys (median of %d) | %.1f us |\n", big, n, m_big * 1e6);
	printf("| create without a store, near 100 keys (median of %d) | %.1f us |\n", n, m_plain * 1e6);
	printf("| setxattr of a key's perm near %lu keys (median of %d) | %.1f us |\n", big, n, m_perm * 1e6);
	printf("| unlink of a key near the front of %lu keys, every other one (median of %d) | %.1f us |\n", big, n, m_ufront * 1e6);
	printf("| unlink of a key near the end of %lu keys, every other one (median of %d) | %.1f us |\n", big, n, m_uend * 1e6);
	printf("| fsync of a 256-byte append in the store's directory (median of %d) | %.1f us |\n", n, m_fsync * 1e6);
	printf("| load of %lu keys (exec to mounted, median of %d) | %.3f s |\n", big, loads, load_s);
	for (int b = 0; b < 2; b++) {
		printf("| load of %lu keyrings in the session, each linking 2 keys, from the snapshot alone "
		       "(median of %d) | %.3f s |\n", nrings[b], loads, rings_s[b][0]);
		printf("| load of the same keys, one of each keyring's 2 linked by a journal of %lu records "
		       "(median of %d) | %.3f s |\n", nrings[b], loads, rings_s[b][1]);
	}
	printf("| daemon RSS, %lu keys loaded from a store, listed | %.1f MiB |\n", big, rss_store / 1024.0);
	printf("| daemon RSS, %lu keys made by create without a store (%.1f s), listed | %.1f MiB |\n",
	       big, fill_s, rss_none / 1024.0);

	printf("\n| target (issue 12) | figure | target | |\n|---|---|---|---|\n");
	printf("| store: create near %lu keys vs near %lu | %.2fx | <= 1.50x | %s |\n", big, small, ratio_big,
	       ratio_big <= 1.5 ? "met" : "MISSED");
	printf("| store: create near %lu keys vs an fsync (the whole create: FUSE's round trips too) | %.2fx | <= 1.50x | %s |\n",
	       big, ratio_fs, ratio_fs <= 1.5 ? "met" : "MISSED");
	printf("| store: what the store adds to a create near %lu keys vs an fsync | %.2fx | <= 1.50x | %s |\n",
	       big, ratio_share, ratio_share <= 1.5 ? "met" : "MISSED");
	printf("| store: a change of one request (setxattr perm) near %lu keys vs an fsync | %.2fx | <= 1.50x | %s |\n",
	       big, ratio_perm, ratio_perm <= 1.5 ? "met" : "MISSED");
	printf("| store: unlink near the end of %lu keys vs near the front (no O(n) path) | %.2fx | <= 1.50x | %s |\n",
	       big, ratio_unlink, ratio_unlink <= 1.5 ? "met" : "MISSED");
	printf("| store: load of %lu keys | %.3f s | < 1 s | %s |\n", big, load_s, load_s < 1 ? "met" : "MISSED");
	printf("| store: daemon RSS with a store vs without | %.2fx | <= 1.20x | %s |\n", ratio_rss,
	       ratio_rss <= 1.2 ? "met" : "MISSED");
	for (int jl = 0; jl < 2; jl++)
		printf("| store: load of %lu keyrings vs %lu, per key%s (no O(n) path) | %.2fx | <= 1.50x | %s |\n",
		       nrings[1], nrings[0], jl ? ", with the journal" : ", snapshot alone", rings_ratio[jl],
		       rings_ratio[jl] <= 1.5 ? "met" : "MISSED");
	return 0;
}
