/* opts.h: keyfs's command-line options as one struct, parsed from one fuse_opt table. */
#ifndef KEYFS_OPTS_H
#define KEYFS_OPTS_H

struct fuse_args;

#define KEYFS_REQUEST_TIMEOUT		30	/* request_timeout= default, seconds */
#define KEYFS_REQUEST_TIMEOUT_MAX	3600

/* Strings are malloc'd by fuse_opt_parse or opts_parse and freed by
 * opts_free. */
struct keyfs_opts {
	char *backend;		/* "kernel" (default) or "memory" */
	char *source;		/* SOURCE of `keyfs SOURCE MOUNTPOINT`, or NULL */
	char *mountpoint;	/* the last positional argument, until handed to libfuse */
	int extra_args;		/* positional arguments past two: an error */
	char *store;		/* memory: JSON file; absolute once parsed */
	char *store_key;	/* memory: the store's key spec (crypto.h), or NULL */
	char *root;		/* root=SPEC, or NULL for the whole tree */
	char *default_type;	/* type of keys created by plain names */
	char *request_key;	/* memory: callout program; absolute once parsed */
	unsigned request_timeout;	/* memory: seconds the callout may run */
	int request_timeout_set;	/* request_timeout= was given */
	double attr_timeout;
	double entry_timeout;
	int direct_io;		/* never let the kernel cache a payload */
	int show_help;
	int show_version;
};

/* Parse argv into opts, leaving in args what libfuse itself takes (with
 * the mountpoint put back last).  0, or -EINVAL after printing why. */
int opts_parse(struct fuse_args *args, struct keyfs_opts *opts);
void opts_usage(const char *progname);
void opts_free(struct keyfs_opts *opts);

#endif
