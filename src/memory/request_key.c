/* request_key.c: request_key(2) and its callout for the memory backend. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
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
 * kernel's minimal environment.  It leads a process group of its own, so
 * that keyfs can kill everything it starts. */
static void callout_child(const char *program, char *const argv[], int out)
{
	static char *const envp[] = {
		"HOME=/", "PATH=/sbin:/bin:/usr/sbin:/usr/bin", NULL,
	};
	int null = open("/dev/null", O_RDONLY);
	sigset_t none;

	if (setpgid(0, 0) < 0 || null < 0 ||
	    dup2(null, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0)
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

/* A descriptor that polls readable once pid has exited, or -1 (a kernel
 * before 5.3): then keyfs looks every CALLOUT_POLL_MS instead. */
#define CALLOUT_POLL_MS	10
static int callout_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

/* Has the child exited?  It is left a zombie (WNOWAIT): until it is
 * reaped neither its pid nor its process group's id can be reused, so
 * killing the group cannot hit a stranger. */
static bool callout_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       si.si_pid == pid;
}

/* What a wait on the callout watches besides its output: the child, the
 * deadline, and the requester giving up (keyfs_cred.cancel_fd; -1: none). */
struct callout_wait {
	pid_t pid;
	int pidfd;
	int cancel;
	struct timespec deadline;
};

/* Wait until the child exits or fd is readable, whichever is first, up to
 * the deadline: 1 when the child has exited, 0 when fd may be read,
 * -ETIMEDOUT, -EINTR when the requester gave up, or -errno. */
static int callout_poll(int fd, const struct callout_wait *w)
{
	for (;;) {
		/* A negative fd in the set is ignored by poll. */
		struct pollfd p[3] = {
			{ .fd = w->pidfd, .events = POLLIN },
			{ .fd = w->cancel, .events = POLLIN },
			{ .fd = fd, .events = POLLIN },
		};
		long left = ms_left(&w->deadline);
		int r;

		if (w->pidfd < 0 && callout_exited(w->pid))
			return 1;
		if (left <= 0)
			return -ETIMEDOUT;
		if (w->pidfd < 0 && left > CALLOUT_POLL_MS)
			left = CALLOUT_POLL_MS;
		r = poll(p, 3, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (p[1].revents)
			return -EINTR;
		if (p[0].revents)
			return 1;
		if (fd >= 0 && p[2].revents)
			return 0;
	}
}

/*
 * Read the child's stdout (non-blocking) until EOF, the child's exit, the
 * deadline or one byte past max.  A child that exits while something it
 * started still holds the pipe gives no EOF: its exit ends the reading
 * (what it wrote is in the pipe by then), so that nothing left behind can
 * make the request wait.  *exited says whether the child has exited.
 */
static int callout_collect(int fd, const struct callout_wait *w, size_t max,
			   unsigned char **buf, size_t *len, bool *exited)
{
	size_t cap = 0;

	for (;;) {
		ssize_t n;
		int r;

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
		if (n == 0)
			return 0;
		if (n > 0) {
			*len += (size_t)n;
			if (*len > max)
				return -EFBIG;
			continue;
		}
		if (errno != EAGAIN)
			return -errno;
		if (*exited)
			return 0;	/* drained what it wrote before exiting */
		r = callout_poll(fd, w);
		if (r < 0)
			return r;
		if (r == 1)
			*exited = true;
	}
}

int memory_callout_run(const char *program, unsigned timeout,
		       const struct mkey_type *type,
		       const char *desc, const char *callout,
		       const struct keyfs_cred *c,
		       unsigned char **payload_alloc, size_t *len)
{
	char uid[16], gid[16];
	char *argv[] = { (char *)program, (char *)type->name, (char *)desc,
			 (char *)callout, uid, gid, NULL };
	struct callout_wait w = { .cancel = c->cancel_fd ? *c->cancel_fd : -1 };
	unsigned char *buf = NULL;
	bool exited = false;
	size_t n = 0;
	int fds[2], status, ret;

	snprintf(uid, sizeof(uid), "%u", (unsigned)c->uid);
	snprintf(gid, sizeof(gid), "%u", (unsigned)c->gid);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0) {
		ret = -errno;
		close(fds[0]);
		close(fds[1]);
		return ret;
	}
	clock_gettime(CLOCK_MONOTONIC, &w.deadline);
	w.deadline.tv_sec += timeout;
	w.pid = fork();
	if (w.pid < 0) {
		ret = -errno;
		close(fds[0]);
		close(fds[1]);
		return ret;
	}
	if (w.pid == 0)
		callout_child(program, argv, fds[1]);
	/* The child does the same; whichever runs first, the group exists
	 * before keyfs could kill it. */
	setpgid(w.pid, w.pid);
	close(fds[1]);
	w.pidfd = callout_pidfd(w.pid);
	ret = callout_collect(fds[0], &w, type->max_payload, &buf, &n, &exited);
	close(fds[0]);
	/* Output complete: the exit status decides, if it comes in time. */
	if (ret == 0 && !exited) {
		ret = callout_poll(-1, &w);
		if (ret == 1)
			ret = 0;
		else if (ret != -EINTR)
			ret = -ETIMEDOUT;
	}
	if (w.pidfd >= 0)
		close(w.pidfd);
	/* The callout, if it still runs, and whatever it started. */
	kill(-w.pid, SIGKILL);
	while (waitpid(w.pid, &status, 0) < 0 && errno == EINTR)
		;
	if (ret == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		ret = -ENOKEY;
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
 * printed.  0 with prep filled, or -errno: the key is to be negative.
 * The program runs with the upper layer's lock released, so other
 * requests go on meanwhile; nothing here touches the model. */
static int construct_payload(struct keyfs_backend *b,
			     const struct mkey_type *t, const char *desc,
			     const char *callout, const struct keyfs_cred *c,
			     struct mkey_prep *prep)
{
	const char *program = mem_callout_program(b);
	unsigned timeout = b->request_timeout;
	unsigned char *payload = NULL;
	size_t len = 0;
	int ret;

	if (!program)
		return -ENOKEY;
	if (b->unlock)
		b->unlock(b->lock_arg);
	if (t->request_key)
		ret = t->request_key(program, timeout, t, desc, callout, c,
				     &payload, &len);
	else
		ret = memory_callout_run(program, timeout, t, desc, callout, c,
					 &payload, &len);
	if (b->relock)
		b->relock(b->lock_arg);
	if (ret == 0)
		ret = t->preparse(prep, payload, len);
	if (payload) {
		explicit_bzero(payload, len);
		free(payload);
	}
	return ret;
}

/* What construct_key_and_link() checks before it starts construction:
 * the type and description, the quota, dest's restriction.  keyfs checks
 * again once the callout is done, since other requests ran meanwhile. */
static int construct_check(struct keyfs_backend *b, const struct keyfs_cred *c,
			   const struct mkey_type *t, const char *desc,
			   struct mkey *dest)
{
	int ret;

	/* construct_key_and_link() refuses to construct keyrings. */
	if (t == &mtype_keyring)
		return -EPERM;
	ret = mem_check_desc(t, desc);
	if (ret == 0)
		ret = mem_key_quota(b, c->uid, desc, 0, dest, t);
	if (ret == 0 && dest &&
	    (dest->ring->restricted || dest->ring->restrict_type))
		ret = -EPERM;
	return ret;
}

/*
 * The key the callout built (built == 0: from prep), a new key of the
 * caller's, linked into dest.  A callout that failed, printed an invalid
 * payload, or finds no quota for it leaves a negative key instead, which
 * answers ENOKEY for KEYFS_NEGATIVE_TIMEOUT seconds; the request then
 * fails with ENOKEY.
 */
static int construct(struct keyfs_backend *b, const struct keyfs_cred *c,
		     const struct mkey_type *t, const char *desc, int built,
		     struct mkey_prep *prep, struct mkey *dest,
		     struct mkey **out)
{
	struct mkey *k;
	int ret;

	if (built == 0 && mem_key_quota(b, c->uid, desc, prep->datalen, dest,
					t) < 0)
		built = -EDQUOT;
	ret = mem_key_create(b, c, t, desc, built == 0 ? prep : NULL, dest,
			     &k);
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

/* The destination keyring (when dest is not 0) and the key: what an
 * operation finds as it starts.  -EAGAIN when no key was found. */
static int request_find(struct keyfs_backend *b, const struct keyfs_cred *c,
			const struct mkey_type *t, const char *desc,
			kserial_t dest, struct mkey **kd, struct mkey **k)
{
	int ret;

	*kd = NULL;
	if (dest) {
		ret = mem_lookup(b, c, dest, MEM_LOOKUP_CREATE,
				 KEYFS_PERM_WRITE, kd);
		if (ret == 0 && (*kd)->type != &mtype_keyring)
			ret = -ENOTDIR;
		if (ret < 0)
			return ret;
	}
	return mem_search_process(b, c, t, desc, k);
}

/*
 * request_key_and_link(): a key found is linked into dest (which needs
 * link permission on it); with nothing found a callout constructs one.
 * The callout runs between two operations on the model: everything is
 * found again by serial afterwards, since any key may have gone meanwhile.
 * A key of the same name that another request made in the meantime is
 * taken as found (the kernel would have had this request wait for it).
 */
int memory_request(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const char *type, const char *desc, const char *callout,
		   kserial_t dest, kserial_t *out)
{
	const struct mkey_type *t;
	struct mkey *kd = NULL, *k = NULL;
	struct mkey_prep prep = { 0 };
	int ret, cret, built;

	ret = check_args(type, desc, &t);
	if (ret < 0)
		return ret;
	mem_begin(b);
	ret = request_find(b, c, t, desc, dest, &kd, &k);
	if (ret == -EAGAIN && callout) {
		ret = construct_check(b, c, t, desc, kd);
		if (ret < 0)
			goto fail;
		mem_end(b);	/* dest may have been made (@s, say) */
		built = construct_payload(b, t, desc, callout, c, &prep);
		/* The requester gave up (a FUSE interrupt) and nobody else
		 * waits for this construction: no key, not even a negative
		 * one that would refuse the next try. */
		if (built == -EINTR)
			return -EINTR;
		mem_begin(b);
		ret = request_find(b, c, t, desc, dest, &kd, &k);
		if (ret == -EAGAIN)
			ret = construct_check(b, c, t, desc, kd);
		else if (ret == 0)
			goto found;
		if (ret < 0)
			goto fail;
		ret = construct(b, c, t, desc, built, &prep, kd, &k);
		t->free_preparse(&prep);
		if (ret < 0 && ret != -ENOKEY)
			goto fail;
		if (ret == -ENOKEY && !k)
			goto fail;
		goto changed;
	}
found:
	t->free_preparse(&prep);
	if (ret == 0 && kd) {
		ret = mem_key_perm(b, c, k, KEYFS_PERM_LINK);
		if (ret == 0)
			ret = mem_link_prepare(b, kd, k);
		if (ret < 0)
			goto fail;
		mem_link_commit(b, kd, k);
		goto changed;
	}
	if (ret == -EAGAIN)
		ret = -ENOKEY;
	if (ret < 0)
		goto fail;
	*out = k->serial;
	mem_end(b);
	return 0;
changed:
	/* Something changed: a link, or a key made (positive or not). */
	cret = mem_commit(b);
	if (cret < 0)
		return cret;
	if (ret == 0)
		*out = k->serial;
	return ret;
fail:
	t->free_preparse(&prep);
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
