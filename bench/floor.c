/* bench/floor.c: the benchmark's floor, a minimal read-only low-level FUSE file system shaped like keyfs's tree. */

/*
 * MOUNT/session/rN/kNNNNNN for each N given with -o sizes=N:N:..., and
 * MOUNT/@s, a link to session (found by lookup, not listed); every
 * file holds the same 32 bytes as the keys the benchmark makes.  Nothing
 * is stored: names and inodes are computed, so the floor costs what
 * libfuse and the kernel cost and nothing more.  Options are libfuse's
 * defaults (no keep_cache, no readdirplus, multi-threaded loop unless -s),
 * plus attr_timeout= and entry_timeout= (default 1 s, as keyfs) so the
 * "caches off" rows compare like with like.
 */
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FLOOR_MAX_DIRS 16
#define FLOOR_PAYLOAD "bench-payload-0123456789abcdef.\n"
#define FLOOR_PAYLOAD_LEN 32

/* Inodes: 1 root, 2 session, 3+i ring i, then @s; a file is (i+1) << 32 | (j+1). */
#define INO_ROOT 1
#define INO_SESSION 2
#define INO_RING(i) ((fuse_ino_t)(3 + (i)))
#define INO_LINK INO_RING(FLOOR_MAX_DIRS)
#define INO_FILE(i, j) ((((fuse_ino_t)(i) + 1) << 32) | ((fuse_ino_t)(j) + 1))

struct floor_opts {
	char *sizes;
	double attr_timeout;
	double entry_timeout;
};

static struct floor_opts opts = { NULL, 1.0, 1.0 };
static unsigned long ring_size[FLOOR_MAX_DIRS];
static unsigned nrings;

static const struct fuse_opt floor_opt_table[] = {
	{ "sizes=%s", offsetof(struct floor_opts, sizes), 0 },
	{ "attr_timeout=%lf", offsetof(struct floor_opts, attr_timeout), 0 },
	{ "entry_timeout=%lf", offsetof(struct floor_opts, entry_timeout), 0 },
	FUSE_OPT_END
};

/* Fills st for ino; returns 0 or -ENOENT. */
static int floor_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == INO_ROOT || ino == INO_SESSION) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (ino >= INO_RING(0) && ino < INO_RING(nrings)) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (ino == INO_LINK) {
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		st->st_size = 7;
		return 0;
	}
	unsigned long ring = (unsigned long)(ino >> 32), file = (unsigned long)(ino & 0xffffffffu);
	if (ring == 0 || ring > nrings || file == 0 || file > ring_size[ring - 1])
		return -ENOENT;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_size = FLOOR_PAYLOAD_LEN;
	return 0;
}

/* The inode of name in parent, or 0. */
static fuse_ino_t floor_find(fuse_ino_t parent, const char *name)
{
	if (parent == INO_ROOT)
		return strcmp(name, "session") == 0 ? INO_SESSION : strcmp(name, "@s") == 0 ? INO_LINK : 0;
	if (parent == INO_SESSION) {
		for (unsigned i = 0; i < nrings; i++) {
			char buf[32];
			snprintf(buf, sizeof(buf), "r%lu", ring_size[i]);
			if (strcmp(buf, name) == 0)
				return INO_RING(i);
		}
		return 0;
	}
	if (parent >= INO_RING(0) && parent < INO_RING(nrings)) {
		unsigned i = (unsigned)(parent - INO_RING(0));
		char *end;
		if (name[0] != 'k' || strlen(name) != 7)
			return 0;
		unsigned long j = strtoul(name + 1, &end, 10);
		if (*end || j >= ring_size[i])
			return 0;
		return INO_FILE(i, j);
	}
	return 0;
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = floor_find(parent, name);
	if (e.ino == 0 || floor_stat(e.ino, &e.attr) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	e.attr_timeout = opts.attr_timeout;
	e.entry_timeout = opts.entry_timeout;
	fuse_reply_entry(req, &e);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	(void)fi;
	if (floor_stat(ino, &st) < 0)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, opts.attr_timeout);
}

/* Adds one entry at index idx if it fits; returns the new length or 0 when full. */
static size_t add_entry(fuse_req_t req, char *buf, size_t len, size_t size,
			const char *name, fuse_ino_t ino, mode_t mode, off_t next)
{
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = mode;
	size_t need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);
	if (len + need > size)
		return 0;
	fuse_add_direntry(req, buf + len, size - len, name, &st, next);
	return len + need;
}

static void floor_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	(void)fi;
	unsigned long count;
	if (ino == INO_ROOT || ino == INO_SESSION)
		count = ino == INO_ROOT ? 1 : nrings;
	else if (ino >= INO_RING(0) && ino < INO_RING(nrings))
		count = ring_size[ino - INO_RING(0)];
	else {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t len = 0;
	/* Offsets: 0 ".", 1 "..", 2+k entry k. */
	for (unsigned long k = (unsigned long)off; k < count + 2; k++) {
		char name[32];
		fuse_ino_t child;
		mode_t mode = S_IFDIR;
		if (k == 0) {
			snprintf(name, sizeof(name), ".");
			child = ino;
		} else if (k == 1) {
			snprintf(name, sizeof(name), "..");
			child = INO_ROOT; /* the kernel ignores it */
		} else if (ino == INO_ROOT) {
			snprintf(name, sizeof(name), "session");
			child = INO_SESSION;
		} else if (ino == INO_SESSION) {
			snprintf(name, sizeof(name), "r%lu", ring_size[k - 2]);
			child = INO_RING(k - 2);
		} else {
			snprintf(name, sizeof(name), "k%06lu", k - 2);
			child = INO_FILE(ino - INO_RING(0), k - 2);
			mode = S_IFREG;
		}
		size_t n = add_entry(req, buf, len, size, name, child, mode, (off_t)k + 1);
		if (n == 0)
			break;
		len = n;
	}
	fuse_reply_buf(req, buf, len);
	free(buf);
}

static void floor_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	if (floor_stat(ino, &st) < 0)
		fuse_reply_err(req, ENOENT);
	else if (S_ISDIR(st.st_mode))
		fuse_reply_err(req, EISDIR);
	else if ((fi->flags & O_ACCMODE) != O_RDONLY)
		fuse_reply_err(req, EACCES);
	else
		fuse_reply_open(req, fi);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if (off >= FLOOR_PAYLOAD_LEN) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	size_t n = FLOOR_PAYLOAD_LEN - (size_t)off;
	fuse_reply_buf(req, FLOOR_PAYLOAD + off, n < size ? n : size);
}

static void floor_readlink(fuse_req_t req, fuse_ino_t ino)
{
	if (ino == INO_LINK)
		fuse_reply_readlink(req, "session");
	else
		fuse_reply_err(req, EINVAL);
}

static const struct fuse_lowlevel_ops floor_ops = {
	.lookup = floor_lookup,
	.getattr = floor_getattr,
	.readlink = floor_readlink,
	.readdir = floor_readdir,
	.open = floor_open,
	.read = floor_read,
};

/* Parses "10:100:1000" into ring_size; returns 0 or -EINVAL. */
static int parse_sizes(const char *s)
{
	while (s && *s) {
		char *end;
		unsigned long n = strtoul(s, &end, 10);
		if (end == s || n == 0 || n > 999999 || nrings == FLOOR_MAX_DIRS)
			return -EINVAL;
		unsigned i;
		for (i = 0; i < nrings && ring_size[i] != n; i++)
			;
		if (i == nrings) /* a size given twice is one ring */
			ring_size[nrings++] = n;
		s = *end == ':' ? end + 1 : end;
		if (*end && *end != ':')
			return -EINVAL;
	}
	return nrings ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd;
	struct fuse_session *se = NULL;
	int ret = 1;

	if (fuse_parse_cmdline(&args, &cmd) != 0)
		return 1;
	if (fuse_opt_parse(&args, &opts, floor_opt_table, NULL) != 0)
		goto out_args;
	if (!cmd.mountpoint || parse_sizes(opts.sizes) < 0) {
		fprintf(stderr, "usage: %s MOUNTPOINT -o sizes=N[:N...] [-o attr_timeout=S,entry_timeout=S] [-f] [-s]\n", argv[0]);
		goto out_args;
	}
	se = fuse_session_new(&args, &floor_ops, sizeof(floor_ops), NULL);
	if (!se)
		goto out_args;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, cmd.mountpoint) != 0)
		goto out_signals;
	fuse_daemonize(cmd.foreground);
	if (cmd.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		if (!cfg)
			goto out_unmount;
		fuse_loop_cfg_set_clone_fd(cfg, (unsigned)cmd.clone_fd);
		if (cmd.max_idle_threads != UINT_MAX)	/* not given: libfuse's default */
			fuse_loop_cfg_set_idle_threads(cfg, cmd.max_idle_threads);
		fuse_loop_cfg_set_max_threads(cfg, cmd.max_threads);
		ret = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_args:
	free(cmd.mountpoint);
	free(opts.sizes);
	fuse_opt_free_args(&args);
	return ret ? 1 : 0;
}
