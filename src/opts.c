/* opts.c: keyfs's options: defaults, the fuse_opt table, validation and --help. */
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse_opt.h>

#include "keyfs.h"
#include "opts.h"

enum {
	KEY_HELP,
	KEY_VERSION,
};


static const struct fuse_opt keyfs_opt_table[] = {
	{ "backend=%s", offsetof(struct keyfs_opts, backend), 0 },
	{ "store=%s", offsetof(struct keyfs_opts, store), 0 },
	{ "store_key=%s", offsetof(struct keyfs_opts, store_key), 0 },
	{ "root=%s", offsetof(struct keyfs_opts, root), 0 },
	{ "default_type=%s", offsetof(struct keyfs_opts, default_type), 0 },
	{ "request_key=%s", offsetof(struct keyfs_opts, request_key), 0 },
	{ "request_timeout=%u", offsetof(struct keyfs_opts, request_timeout), 0 },
	/* A second match of the same option: whether it was given at all. */
	{ "request_timeout=", offsetof(struct keyfs_opts, request_timeout_set), 1 },
	{ "attr_timeout=%lf", offsetof(struct keyfs_opts, attr_timeout), 0 },
	{ "entry_timeout=%lf", offsetof(struct keyfs_opts, entry_timeout), 0 },
	{ "direct_io", offsetof(struct keyfs_opts, direct_io), 1 },
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END
};

/* fuse_opt_parse hands the same pointer to the table's offsets and to this
 * function, so the positional arguments are kept in the option struct. */
static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct keyfs_opts *opts = data;
	char *copy;

	(void)outargs;
	switch (key) {
	case KEY_HELP:
		opts->show_help = 1;
		return 0;
	case KEY_VERSION:
		opts->show_version = 1;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		if (opts->source) {
			opts->extra_args++;
			return 0;
		}
		copy = strdup(arg);
		if (!copy)
			return -1;
		/* SOURCE MOUNTPOINT: the first of two is the source. */
		opts->source = opts->mountpoint;
		opts->mountpoint = copy;
		return 0;
	default:
		return 1;	/* libfuse's own option: keep it */
	}
}

static bool is_backend(const char *s)
{
	return strcmp(s, "kernel") == 0 || strcmp(s, "memory") == 0;
}

static int set_default(char **field, const char *value)
{
	if (*field)
		return 0;
	*field = strdup(value);
	return *field ? 0 : -ENOMEM;
}

/* store= and request_key= relative to the directory keyfs was started in:
 * made absolute now, since the daemon changes to / when it goes to the
 * background. */
static int path_absolute(const char *name, char **path)
{
	char *cwd, *abs;
	size_t n;

	if (!*path || (*path)[0] == '/')
		return 0;
	cwd = getcwd(NULL, 0);
	if (!cwd) {
		fprintf(stderr, "keyfs: %s=%s: cannot find the current directory: %s\n",
			name, *path, strerror(errno));
		return -errno;
	}
	n = strlen(cwd) + 1 + strlen(*path) + 1;
	abs = malloc(n);
	if (abs)
		snprintf(abs, n, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", *path);
	free(cwd);
	if (!abs)
		return -ENOMEM;
	free(*path);
	*path = abs;
	return 0;
}

/* The callout runs long after the mount, in the background: a program
 * that cannot run is said now, on the terminal, not as ENOKEY later. */
static int check_program(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "keyfs: request_key=%s: %s\n", path, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
		fprintf(stderr, "keyfs: request_key=%s: not an executable file\n", path);
		return -EINVAL;
	}
	return 0;
}

/* libfuse would mount on a regular file too (a FUSE mount takes the type
 * of its mount point), and then every access to the root is EIO.
 * /dev/fd/N is libfuse's form for a /dev/fuse descriptor opened by the
 * caller: no path to check. */
static int check_mountpoint(const char *path)
{
	struct stat st;

	if (strncmp(path, "/dev/fd/", 8) == 0)
		return 0;
	if (stat(path, &st) < 0) {
		fprintf(stderr, "keyfs: %s: %s\n", path, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "keyfs: %s: not a directory\n", path);
		return -EINVAL;
	}
	return 0;
}

/* Whether path (made absolute and resolved as far as it exists) is dir
 * or below it. */
static bool path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * The store must not be inside the mount point: once mounted, keyfs would
 * write its store into itself, and a write to its own mount waits for
 * keyfs while keyfs waits for the write, holding its one lock: the mount
 * and every caller in it would hang for good.  Its directory is what
 * counts: the file may not exist yet, and every write goes to a file in
 * that directory (the journal, a new snapshot renamed over the store
 * path, which replaces a link there rather than follow it).  A mount
 * point given as /dev/fd/N is not a path.
 */
static int check_store_place(const char *store, const char *mountpoint)
{
	char *copy = strdup(store);
	char *mnt = realpath(mountpoint, NULL);
	char *dir = copy ? realpath(dirname(copy), NULL) : NULL;
	int ret = 0;

	if (mnt && dir && path_within(dir, mnt)) {
		fprintf(stderr, "keyfs: store=%s is inside the mount point %s: "
			"keyfs would write its store into itself; keep it outside\n",
			store, mountpoint);
		ret = -EINVAL;
	}
	free(copy);
	free(mnt);
	free(dir);
	return ret;
}

/* SOURCE, when it names a backend, must agree with backend=: neither
 * silently wins.  With backend= given, any other SOURCE is a label (fstab
 * lines often say "none" or "keyfs") and is left alone. */
static int check_source(struct keyfs_opts *o)
{
	if (!o->source || (o->backend && !is_backend(o->source)))
		return 0;
	if (!is_backend(o->source)) {
		fprintf(stderr, "keyfs: unknown source '%s' (the source is the backend: kernel or memory)\n",
			o->source);
		return -EINVAL;
	}
	if (o->backend && strcmp(o->backend, o->source) != 0) {
		fprintf(stderr, "keyfs: the source '%s' and backend=%s disagree: give one of them\n",
			o->source, o->backend);
		return -EINVAL;
	}
	return set_default(&o->backend, o->source);
}

/* Check what the table cannot: names, ranges, and options that only make
 * sense together. */
static int opts_validate(struct keyfs_opts *o)
{
	if (!is_backend(o->backend)) {
		fprintf(stderr, "keyfs: unknown backend '%s' (use kernel or memory)\n",
			o->backend);
		return -EINVAL;
	}
	if (o->store && strcmp(o->backend, "memory") != 0) {
		fprintf(stderr, "keyfs: store= needs the memory backend (-o backend=memory)\n");
		return -EINVAL;
	}
	if (o->store && o->store[0] == '\0') {
		fprintf(stderr, "keyfs: store= is empty: give the path of the store file\n");
		return -EINVAL;
	}
	if (o->store && o->store[strlen(o->store) - 1] == '/') {
		fprintf(stderr, "keyfs: store='%s' does not name a file\n", o->store);
		return -EINVAL;
	}
	/* A key without a store would silently protect nothing. */
	if (o->store_key && !o->store) {
		fprintf(stderr, "keyfs: store_key= needs store= (the file it encrypts)\n");
		return -EINVAL;
	}
	if (o->store_key && o->store_key[0] == '\0') {
		fprintf(stderr, "keyfs: store_key= is empty: give file:PATH, cred:NAME or %%user:NAME\n");
		return -EINVAL;
	}
	/* The kernel backend's callout is the system's request-key(8). */
	if (o->request_key && strcmp(o->backend, "memory") != 0) {
		fprintf(stderr, "keyfs: request_key= needs the memory backend (the kernel runs request-key(8))\n");
		return -EINVAL;
	}
	if (o->request_timeout_set && strcmp(o->backend, "memory") != 0) {
		fprintf(stderr, "keyfs: request_timeout= needs the memory backend (the kernel runs request-key(8))\n");
		return -EINVAL;
	}
	if (o->request_key && o->request_key[0] == '\0') {
		fprintf(stderr, "keyfs: request_key= is empty: give the callout program's path\n");
		return -EINVAL;
	}
	if (o->default_type[0] == '\0' || strlen(o->default_type) > KEYFS_TYPE_MAX ||
	    strchr(o->default_type, ':') || strchr(o->default_type, '/') ||
	    keyfs_is_keyring_type(o->default_type)) {
		fprintf(stderr, "keyfs: default_type='%s' is not a key type for files\n",
			o->default_type);
		return -EINVAL;
	}
	if (o->request_timeout < 1 ||
	    o->request_timeout > KEYFS_REQUEST_TIMEOUT_MAX) {
		fprintf(stderr, "keyfs: request_timeout must be 1 to %u seconds\n",
			KEYFS_REQUEST_TIMEOUT_MAX);
		return -EINVAL;
	}
	if (o->attr_timeout < 0 || o->entry_timeout < 0) {
		fprintf(stderr, "keyfs: attr_timeout and entry_timeout cannot be negative\n");
		return -EINVAL;
	}
	return 0;
}

int opts_parse(struct fuse_args *args, struct keyfs_opts *opts)
{
	opts->attr_timeout = 1.0;
	opts->entry_timeout = 1.0;
	opts->request_timeout = KEYFS_REQUEST_TIMEOUT;
	if (fuse_opt_parse(args, opts, keyfs_opt_table, opt_proc) == -1)
		return -EINVAL;
	if (opts->show_help || opts->show_version)
		return 0;
	if (opts->extra_args) {
		fprintf(stderr, "keyfs: too many arguments (usage: keyfs [SOURCE] MOUNTPOINT [-o OPTIONS])\n");
		return -EINVAL;
	}
	/* `keyfs memory`: the one positional is a backend's name, so the
	 * mount point is what is missing (./memory mounts on a directory of
	 * that name). */
	if (!opts->mountpoint || (!opts->source && is_backend(opts->mountpoint))) {
		fprintf(stderr, "keyfs: no mount point given (usage: keyfs [SOURCE] MOUNTPOINT [-o OPTIONS])\n");
		return -EINVAL;
	}
	if (check_source(opts) < 0)
		return -EINVAL;
	if (set_default(&opts->backend, "kernel") < 0 ||
	    set_default(&opts->default_type, "user") < 0)
		return -ENOMEM;
	if (opts_validate(opts) < 0 || path_absolute("store", &opts->store) < 0 ||
	    path_absolute("request_key", &opts->request_key) < 0 ||
	    (opts->request_key && check_program(opts->request_key) < 0) ||
	    check_mountpoint(opts->mountpoint) < 0 ||
	    (opts->store && check_store_place(opts->store, opts->mountpoint) < 0))
		return -EINVAL;
	/* libfuse's own parser takes the mountpoint as its one positional. */
	if (fuse_opt_add_arg(args, opts->mountpoint) == -1)
		return -ENOMEM;
	return 0;
}

void opts_usage(const char *progname)
{
	printf("usage: %s [SOURCE] MOUNTPOINT [options]\n"
	       "\n"
	       "Show Linux key retention (keyrings and keys) as a file system.\n"
	       "SOURCE is the backend, kernel or memory, as mount.fuse3 passes it.\n"
	       "\n"
	       "keyfs options:\n"
	       "    -o backend=kernel|memory  the key store (default: kernel)\n"
	       "    -o store=PATH             memory: keep the keys in this JSON file\n"
	       "    -o store_key=SPEC         memory: encrypt the store with this key:\n"
	       "                              file:PATH, cred:NAME or %%user:NAME\n"
	       "    -o root=SPEC              show one keyring as the root: @s @u @us @p,\n"
	       "                              a serial, or %%:NAME for a named keyring\n"
	       "    -o default_type=TYPE      type of keys created by plain names (user)\n"
	       "    -o request_key=PROGRAM    memory: the callout run by .keyfs/request\n"
	       "    -o request_timeout=SECONDS  memory: kill the callout and all it\n"
	       "                              started after this long (30)\n"
	       "    -o attr_timeout=SECONDS   how long the kernel caches attributes (1)\n"
	       "    -o entry_timeout=SECONDS  how long the kernel caches names (1)\n"
	       "    -o direct_io              every read comes to keyfs: no payload is\n"
	       "                              kept in the kernel's page cache\n"
	       "    -s                        serve one request at a time, in one thread\n"
	       "                              (default: a pool of threads, see max_threads)\n"
	       "    -h, --help                this help, then libfuse's options\n"
	       "    -V, --version             the version\n"
	       "\n", progname);
}

void opts_free(struct keyfs_opts *opts)
{
	free(opts->backend);
	free(opts->source);
	free(opts->mountpoint);
	free(opts->store);
	free(opts->store_key);
	free(opts->root);
	free(opts->default_type);
	free(opts->request_key);
	memset(opts, 0, sizeof(*opts));
}
