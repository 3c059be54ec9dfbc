/* file.c: the bytes of a store's files: wiped buffers, a whole-file read, an atomic write and the temporary files a killed save left. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store-int.h"

/* The temporary files of a save are "." BASE STORE_TEMP_INFIX "PID.N"
 * beside the store. */
#define STORE_TEMP_INFIX	".tmp."

void store_buf_free(struct store_buf *b)
{
	if (b->p) {
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	memset(b, 0, sizeof(*b));
}

int store_buf_reserve(struct store_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (more <= b->cap - b->len)
		return 0;
	while (cap - b->len < more) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	p = malloc(cap);
	if (!p)
		return -ENOMEM;
	if (b->len)
		memcpy(p, b->p, b->len);
	if (b->p) {
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

int store_buf_append(struct store_buf *b, const char *s, size_t n)
{
	int ret = store_buf_reserve(b, n);

	if (ret < 0)
		return ret;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

int store_file_read(struct store_ctx *c, struct store_buf *b)
{
	struct stat st;
	int fd, ret = 0;

	/* O_NONBLOCK so that a FIFO named as the store cannot hang the mount;
	 * it changes nothing for a regular file. */
	fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT :
			store_fail_errno(c, "cannot read", -errno);
	if (fstat(fd, &st) < 0) {
		ret = store_fail_errno(c, "cannot read", -errno);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = store_fail_errno(c, "cannot read", -EISDIR);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = store_fail(c, "not a regular file");
		goto out;
	}
	ret = store_buf_reserve(b, (size_t)st.st_size + 1);
	while (ret == 0) {
		ssize_t n;

		ret = store_buf_reserve(b, 65536);
		if (ret < 0)
			break;
		n = read(fd, b->p + b->len, b->cap - b->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ret = store_fail_errno(c, "cannot read", -errno);
		if (n <= 0)
			break;
		b->len += (size_t)n;
	}
	if (ret == -ENOMEM)
		store_fail_errno(c, "cannot read", ret);
out:
	close(fd);
	return ret;
}

/* jansson's message, without the "near '...'" it may add: that quotes the
 * text at the error, which may be part of a payload. */
static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Split path into a directory to open and the name in it. */
static int split_path(const char *path, char **dir, const char **base)
{
	const char *slash = strrchr(path, '/');

	*base = slash ? slash + 1 : path;
	if (**base == '\0')
		return -EISDIR;
	if (!slash)
		*dir = strdup(".");
	else if (slash == path)
		*dir = strdup("/");
	else
		*dir = strndup(path, (size_t)(slash - path));
	return *dir ? 0 : -ENOMEM;
}

/* Create ".BASE.tmp.PID.N" in dfd with O_EXCL; N counts up past names
 * that exist (left by a crash, or taken by another thread's save). */
static int create_temp(int dfd, const char *base, char *name, size_t namelen)
{
	for (unsigned n = 0; n < 1000; n++) {
		int len = snprintf(name, namelen, ".%s" STORE_TEMP_INFIX "%ld.%u",
				   base, (long)getpid(), n);
		int fd;

		if (len < 0 || (size_t)len >= namelen)
			return -ENAMETOOLONG;
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
			    O_NOFOLLOW, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

int store_file_write(const char *path, const struct store_buf *b)
{
	char tmp[PATH_MAX];
	const char *base;
	char *dir = NULL;
	int dfd = -1, fd = -1, ret;
	bool created = false;

	ret = split_path(path, &dir, &base);
	if (ret < 0)
		goto out;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		ret = -errno;
		goto out;
	}
	fd = create_temp(dfd, base, tmp, sizeof(tmp));
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	created = true;
	/* umask may have taken bits from 0600; the file is exactly 0600. */
	if (fchmod(fd, 0600) < 0) {
		ret = -errno;
		goto out;
	}
	ret = write_all(fd, b->p, b->len);
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	fd = -1;
	if (ret < 0)
		goto out;
	if (renameat(dfd, tmp, dfd, base) < 0) {
		ret = -errno;
		goto out;
	}
	created = false;
	/* The rename is durable only once the directory is; a failure here
	 * is reported though the new file is already in place. */
	if (fsync(dfd) < 0)
		ret = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (created)
		unlinkat(dfd, tmp, 0);
	if (dfd >= 0)
		close(dfd);
	free(dir);
	return ret;
}

/* Is name ".BASE.tmp.PID.N", the name store_file_write's temporary files
 * have (decimal PID and N)? */
static bool is_temp_name(const char *name, const char *base)
{
	size_t blen = strlen(base), ilen = strlen(STORE_TEMP_INFIX);
	const char *p;
	int fields = 0;

	if (name[0] != '.' || strncmp(name + 1, base, blen) != 0 ||
	    strncmp(name + 1 + blen, STORE_TEMP_INFIX, ilen) != 0)
		return false;
	p = name + 1 + blen + ilen;
	for (;;) {
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
		fields++;
		if (*p == '\0')
			return fields == 2;
		if (*p != '.' || fields == 2)
			return false;
		p++;
	}
}

int store_clean_temps(const char *path, uid_t uid)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	char jbase[NAME_MAX + 16];
	DIR *d;
	struct dirent *e;
	int removed = 0, dfd;

	if (!slash || !slash[1])
		return -EINVAL;
	snprintf(jbase, sizeof(jbase), "%s" STORE_JOURNAL_SUFFIX, slash + 1);
	dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	d = opendir(dir);
	free(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	dfd = dirfd(d);
	while ((e = readdir(d))) {
		struct stat st;

		/* The snapshot's temporaries, and the journal's (its reset
		 * writes ".BASE.journal.tmp.PID.N"). */
		if (!is_temp_name(e->d_name, slash + 1) &&
		    !is_temp_name(e->d_name, jbase))
			continue;
		/* Only a regular file of the mounter's: never follow a link,
		 * never remove another user's file. */
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != uid)
			continue;
		if (unlinkat(dfd, e->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
