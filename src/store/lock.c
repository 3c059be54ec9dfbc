/* lock.c: one keyfs per store file, by a lock file beside it that names its holder. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

/* "PATH.lock", malloc'd, or NULL. */
static char *lock_path(const char *path)
{
	size_t n = strlen(path) + sizeof(STORE_LOCK_SUFFIX);
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s%s", path, STORE_LOCK_SUFFIX);
	return p;
}

/* A holder that is closing (unmounted, writing its last snapshot) is
 * waited for this long, in steps of LOCK_POLL_US, rather than refused. */
#define LOCK_CLOSING_WAIT_S	30
#define LOCK_POLL_US		20000
#define CLOSING_WORD		" closing"

/* The pid the holder wrote in its lock file, or 0 when it has not yet;
 * *closing whether it said it is closing. */
static long lock_holder(int fd, bool *closing)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *end;
	long pid;

	*closing = false;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	if (strncmp(end, CLOSING_WORD, strlen(CLOSING_WORD)) == 0) {
		*closing = true;
		end += strlen(CLOSING_WORD);
	}
	return pid > 0 && (*end == '\n' || *end == '\0') ? pid : 0;
}

static int lock_write(int fd, const char *word)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%ld%s\n", (long)getpid(), word);

	/* A lock file opened read-only (in a read-only directory) keeps
	 * what it says. */
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY)
		return 0;
	if (ftruncate(fd, 0) < 0)
		return -errno;
	if (pwrite(fd, buf, (size_t)len, 0) != len)
		return -EIO;
	return 0;
}

int store_lock_mark(int fd)
{
	return lock_write(fd, "");
}

int store_lock_closing(int fd)
{
	return fd < 0 ? 0 : lock_write(fd, CLOSING_WORD);
}

/* flock fd, waiting while the holder says it is closing: an unmount
 * returns before the daemon has written its last snapshot, and a mount
 * right after it (a restart) should follow it, not fail.  A holder that
 * serves a mount is refused at once.  0, or -errno with *pid and
 * *closing telling of the holder. */
static int lock_wait_closing(int fd, long *pid, bool *closing)
{
	for (long waited = 0;; waited += LOCK_POLL_US) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK)
			return -errno;
		*pid = lock_holder(fd, closing);
		if (!*closing || waited >= LOCK_CLOSING_WAIT_S * 1000000L)
			return -EBUSY;
		usleep(LOCK_POLL_US);
	}
}

int store_lock(const char *path, int *fd_out, char *err, size_t errlen)
{
	char *lpath = lock_path(path);
	int fd = -1, ret = -ENOMEM;

	if (!lpath)
		goto out;
	/* A holder that unlinks its lock file at exit may do so between our
	 * open and our flock; then the file we locked is no longer the one
	 * the path names, and we try again. */
	for (int tries = 0; tries < 100; tries++) {
		struct stat fst, pst;
		bool closing = false;
		long pid = 0;

		fd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		/* In a directory keyfs cannot write, a lock file left there
		 * still locks; with none, no keyfs can write this store, so
		 * there is nothing to keep apart. */
		if (fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
			fd = open(lpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0 && errno == ENOENT) {
				*fd_out = -1;
				ret = 0;
				goto out;
			}
		}
		if (fd < 0) {
			ret = -errno;
			snprintf(err, errlen, "keyfs: %s: cannot open the lock file %s: %s",
				 path, lpath, strerror(errno));
			goto out;
		}
		ret = lock_wait_closing(fd, &pid, &closing);
		if (ret < 0) {
			if (ret == -EBUSY && pid && closing)
				snprintf(err, errlen, "keyfs: %s: in use by another keyfs (pid %ld), still closing after %d s",
					 path, pid, LOCK_CLOSING_WAIT_S);
			else if (ret == -EBUSY && pid)
				snprintf(err, errlen, "keyfs: %s: in use by another keyfs (pid %ld)",
					 path, pid);
			else if (ret == -EBUSY)
				snprintf(err, errlen, "keyfs: %s: in use by another keyfs (see %s)",
					 path, lpath);
			else
				snprintf(err, errlen, "keyfs: %s: cannot lock %s: %s",
					 path, lpath, strerror(-ret));
			goto out;
		}
		if (fstat(fd, &fst) == 0 && stat(lpath, &pst) == 0 &&
		    fst.st_dev == pst.st_dev && fst.st_ino == pst.st_ino) {
			ret = store_lock_mark(fd);
			if (ret < 0) {
				snprintf(err, errlen, "keyfs: %s: cannot write %s: %s",
					 path, lpath, strerror(-ret));
				goto out;
			}
			*fd_out = fd;
			fd = -1;
			goto out;
		}
		close(fd);
		fd = -1;
	}
	ret = -EAGAIN;
	snprintf(err, errlen, "keyfs: %s: cannot lock %s: it keeps being replaced",
		 path, lpath);
out:
	if (fd >= 0)
		close(fd);
	free(lpath);
	return ret;
}

void store_unlock(const char *path, int fd)
{
	char *lpath;

	if (fd < 0)
		return;
	/* Unlinked while still held, so no one locks the old file after. */
	lpath = lock_path(path);
	if (lpath)
		unlink(lpath);
	free(lpath);
	close(fd);
}
