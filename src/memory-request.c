/* memory-request.c: request_key(2) and its callout for the memory backend. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memory.h"

static long ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (deadline->tv_sec - now.tv_sec) * 1000 +
	       (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* In the child: only async-signal-safe calls from here to exec.  The
 * program gets what the kernel's request-key upcall gets: no inherited
 * descriptors (keyfs's /dev/fuse among them), default signals and the
 * kernel's minimal environment. */
static void callout_child(const char *program, char *const argv[], int out)
{
	static char *const envp[] = {
		"HOME=/", "PATH=/sbin:/bin:/usr/sbin:/usr/bin", NULL,
	};
	int null = open("/dev/null", O_RDONLY);
	sigset_t none;

	if (null < 0 || dup2(null, STDIN_FILENO) < 0 ||
	    dup2(out, STDOUT_FILENO) < 0)
		_exit(127);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3, ~0U, 0) < 0)
#endif
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(program, argv, envp);
	_exit(127);
}

/* Read the child's stdout until EOF, the deadline or one byte past max. */
static int callout_collect(int fd, size_t max, const struct timespec *deadline,
			   unsigned char **buf, size_t *len)
{
	size_t cap = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long left = ms_left(deadline);
		ssize_t n;
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		if (*len == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			unsigned char *nb;

			if (ncap > max + 1)
				ncap = max + 1;
			nb = malloc(ncap);
			if (!nb)
				return -ENOMEM;
			if (*buf) {
				memcpy(nb, *buf, *len);
				explicit_bzero(*buf, cap);
				free(*buf);
			}
			*buf = nb;
			cap = ncap;
		}
		n = read(fd, *buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		*len += (size_t)n;
		if (*len > max)
			return -EFBIG;
	}
}

/* Wait for the child until the deadline, then kill it. */
static int callout_reap(pid_t pid, const struct timespec *deadline)
{
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0 ?
			       0 : -ENOKEY;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (ms_left(deadline) <= 0)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return -ETIMEDOUT;
}

int memory_callout_run(const char *program, const struct mkey_type *type,
		       const char *desc, const char *callout,
		       const struct keyfs_cred *c,
		       unsigned char **payload_alloc, size_t *len)
{
	char uid[16], gid[16];
	char *argv[] = { (char *)program, (char *)type->name, (char *)desc,
			 (char *)callout, uid, gid, NULL };
	unsigned char *buf = NULL;
	struct timespec deadline;
	size_t n = 0;
	int fds[2], ret;
	pid_t pid;

	snprintf(uid, sizeof(uid), "%u", (unsigned)c->uid);
	snprintf(gid, sizeof(gid), "%u", (unsigned)c->gid);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += MEM_CALLOUT_TIMEOUT;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(fds[0]);
		close(fds[1]);
		return ret;
	}
	if (pid == 0)
		callout_child(program, argv, fds[1]);
	close(fds[1]);
	ret = callout_collect(fds[0], type->max_payload, &deadline, &buf, &n);
	close(fds[0]);
	if (ret < 0)
		deadline.tv_sec = 0;	/* no more waiting: kill it now */
	{
		int st = callout_reap(pid, &deadline);

		if (ret == 0)
			ret = st;
	}
	if (ret < 0) {
		if (buf) {
			explicit_bzero(buf, n);
			free(buf);
		}
		return ret;
	}
	*payload_alloc = buf;
	*len = n;
	return 0;
}

/* Run the type's upcall (or the configured program) and preparse what it
 * printed.  0 with prep filled, or -errno: the key is to be negative. */
static int construct_payload(struct keyfs_backend *b,
			     const struct mkey_type *t, const char *desc,
			     const char *callout, const struct keyfs_cred *c,
			     struct mkey_prep *prep)
{
	const char *program = mem_callout_program(b);
	unsigned char *payload = NULL;
	size_t len = 0;
	int ret;

	if (!program)
		return -ENOKEY;
	if (t->request_key)
		ret = t->request_key(program, t, desc, callout, c, &payload,
				     &len);
	else
		ret = memory_callout_run(program, t, desc, callout, c,
					 &payload, &len);
	if (ret == 0)
		ret = t->preparse(prep, payload, len);
	if (payload) {
		explicit_bzero(payload, len);
		free(payload);
	}
	return ret;
}

/*
 * construct_key_and_link(): a new key of the caller's, its payload from
 * the callout, linked into dest.  Everything that could refuse the key
 * (quota, dest's restriction) is checked before the program runs.  A
 * callout that fails, prints an invalid payload, or finds no quota for it
 * leaves a negative key instead, which answers ENOKEY for
 * KEYFS_NEGATIVE_TIMEOUT seconds; the request then fails with ENOKEY.
 */
static int construct(struct keyfs_backend *b, const struct keyfs_cred *c,
		     const struct mkey_type *t, const char *desc,
		     const char *callout, struct mkey *dest, struct mkey **out)
{
	struct mkey_prep prep = { 0 };
	struct mkey *k;
	int ret, built;

	/* construct_key_and_link() refuses to construct keyrings. */
	if (t == &mtype_keyring)
		return -EPERM;
	ret = mem_check_desc(t, desc);
	if (ret == 0)
		ret = mem_key_quota(b, c->uid, desc, 0, dest, t);
	if (ret < 0)
		return ret;
	if (dest && (dest->ring->restricted || dest->ring->restrict_type))
		return -EPERM;
	built = construct_payload(b, t, desc, callout, c, &prep);
	if (built == 0 && mem_key_quota(b, c->uid, desc, prep.datalen, dest,
					t) < 0) {
		t->free_preparse(&prep);
		built = -EDQUOT;
	}
	ret = mem_key_create(b, c, t, desc, built == 0 ? &prep : NULL, dest,
			     &k);
	t->free_preparse(&prep);
	if (ret < 0)
		return ret;
	if (dest) {
		ret = mem_link_prepare(b, dest, k);
		if (ret < 0) {
			mem_key_unref(b, k);
			return ret;
		}
		mem_link_commit(b, dest, k);
	}
	*out = k;
	return built == 0 ? 0 : -ENOKEY;
}

/* request_key(2)'s arguments: a type it knows (else ENOKEY), a
 * description that fits; an empty one finds nothing. */
static int check_args(const char *type, const char *desc,
		      const struct mkey_type **t)
{
	int ret = mem_check_type(type, -ENOKEY, t);

	if (ret == 0 && (!desc || strlen(desc) > KEYFS_DESC_MAX))
		ret = -EINVAL;
	if (ret == 0 && !*desc)
		ret = -ENOKEY;
	return ret;
}

/* request_key_and_link(): a key found is linked into dest (which needs
 * link permission on it); with nothing found a callout constructs one. */
int memory_request(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const char *type, const char *desc, const char *callout,
		   kserial_t dest, kserial_t *out)
{
	const struct mkey_type *t;
	struct mkey *kd = NULL, *k = NULL;
	int ret, cret;

	ret = check_args(type, desc, &t);
	if (ret < 0)
		return ret;
	mem_begin(b);
	if (dest) {
		ret = mem_lookup(b, c, dest, MEM_LOOKUP_CREATE,
				 KEYFS_PERM_WRITE, &kd);
		if (ret == 0 && kd->type != &mtype_keyring)
			ret = -ENOTDIR;
		if (ret < 0)
			goto fail;
	}
	ret = mem_search_process(b, c, t, desc, &k);
	if (ret == 0 && kd) {
		ret = mem_key_perm(b, c, k, KEYFS_PERM_LINK);
		if (ret == 0)
			ret = mem_link_prepare(b, kd, k);
		if (ret < 0)
			goto fail;
		mem_link_commit(b, kd, k);
	} else if (ret == -EAGAIN && callout) {
		ret = construct(b, c, t, desc, callout, kd, &k);
		if (ret < 0 && ret != -ENOKEY)
			goto fail;
		if (ret == -ENOKEY && !k)
			goto fail;
	} else {
		if (ret == -EAGAIN)
			ret = -ENOKEY;
		if (ret < 0)
			goto fail;
		*out = k->serial;
		mem_end(b);
		return 0;
	}
	/* Something changed: a link, or a key made (positive or not). */
	cret = mem_commit(b);
	if (cret < 0)
		return cret;
	if (ret == 0)
		*out = k->serial;
	return ret;
fail:
	mem_end(b);
	return ret;
}

/* The search of .keyfs/search/TYPE/NAME: request_key(2) without a
 * callout and without a destination. */
int memory_search(struct keyfs_backend *b, const struct keyfs_cred *c,
		  const char *type, const char *desc, kserial_t *out)
{
	const struct mkey_type *t;
	struct mkey *k;
	int ret;

	ret = check_args(type, desc, &t);
	if (ret < 0)
		return ret;
	mem_begin(b);
	ret = mem_search_process(b, c, t, desc, &k);
	if (ret == -EAGAIN)
		ret = -ENOKEY;
	if (ret == 0)
		*out = k->serial;
	mem_end_read(b);
	return ret;
}
