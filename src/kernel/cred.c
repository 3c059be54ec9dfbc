/* cred.c: acting as the caller: its ids, or a child without keyfs's keyrings. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel.h"

/* setgroups with 32-bit gids: the plain number on 64-bit kernels */
#ifdef SYS_setgroups32
#define SYS_SETGROUPS		SYS_setgroups32
#else
#define SYS_SETGROUPS		SYS_setgroups
#endif

/* ---- acting as the caller ---- */

/*
 * A keyctl call made for a caller other than the mounter runs with the
 * caller's fsuid, fsgid and groups, so the kernel checks permission itself,
 * makes new keys the caller's and charges the caller's quota.  Only this
 * thread may change: setfsuid and setfsgid are per thread in the kernel, and
 * glibc's setgroups() would change every thread, hence the raw syscall.
 */

/* Take c's groups, fsgid and fsuid on this thread; -EACCES when refused
 * (keyfs not root: it cannot act for others, so refuses them). */
static int take_ids(const struct keyfs_cred *c, const gid_t *groups,
		    int ngroups)
{
	if (syscall(SYS_SETGROUPS, (size_t)ngroups, groups) < 0)
		return -EACCES;
	setfsgid(c->gid);
	setfsuid(c->uid);
	/* setfsuid reports no failure: ask for an invalid id to read it */
	if ((uid_t)setfsuid((uid_t)-1) != c->uid ||
	    (gid_t)setfsgid((gid_t)-1) != c->gid)
		return -EACCES;
	return 0;
}

static void restore_ids(struct keyfs_backend *b)
{
	setfsuid(b->own_fsuid);
	setfsgid(b->own_fsgid);
	syscall(SYS_SETGROUPS, (size_t)b->own_ngroups, b->own_groups);
}

int as_caller(struct keyfs_backend *b, const struct keyfs_cred *c,
	      int (*fn)(void *arg), void *arg)
{
	const gid_t *groups;
	int ngroups, ret;

	if (is_mounter(b, c))
		return fn(arg);
	ngroups = cred_groups(c, &groups);
	ret = take_ids(c, groups, ngroups);
	if (ret == 0)
		ret = fn(arg);
	restore_ids(b);
	return ret;
}

static int kcall_run(void *arg)
{
	struct kcall *call = arg;

	call->ret = keyctl(call->cmd, call->arg[0], call->arg[1],
			   call->arg[2], call->arg[3]);
	return kerr(call->ret);
}

int kcall_as(struct keyfs_backend *b, const struct keyfs_cred *c,
	     struct kcall *call)
{
	return as_caller(b, c, kcall_run, call);
}

int kcall_checked(struct keyfs_backend *b, const struct keyfs_cred *c,
		  kserial_t key, unsigned want, unsigned or_want,
		  struct kcall *call)
{
	int ret = kkey_check(b, c, key, want, or_want);

	return ret < 0 ? ret : kcall_as(b, c, call);
}

struct ktext {
	int (*fn)(key_serial_t key, char **text_alloc);
	kserial_t key;
	char **text_alloc;
};

static int ktext_run(void *arg)
{
	struct ktext *t = arg;

	return kerr(t->fn(t->key, t->text_alloc));
}

int ktext_as(struct keyfs_backend *b, const struct keyfs_cred *c,
	     int (*fn)(key_serial_t key, char **text_alloc), kserial_t key,
	     char **text_alloc)
{
	struct ktext t = { fn, key, text_alloc };

	return as_caller(b, c, ktext_run, &t);
}

/* ---- acting without keyfs's possession ---- */

long kernel_search_tops(const struct stranger *st)
{
	long r, err = 0;
	bool none = false;

	for (int i = 0; i < ST_TOPS; i++) {
		if (!st->tops[i])
			continue;
		r = keyctl_search(st->tops[i], st->type, st->desc, 0);
		if (r >= 0)
			return r;
		if (errno == ENOKEY || errno == EAGAIN)
			none = true;
		else
			err = -errno;
	}
	return none || !err ? -ENOKEY : err;
}

/* A new key given its perm by its maker: made in the child's own session
 * keyring, where the caller possesses it, given perm there and moved into
 * ring.  The move refuses to displace a key of that name (a link would,
 * with write on ring alone): -EEXIST, and the caller's add_key(2) into
 * ring decides, as it would have without a perm, updating that key only
 * if the caller may write it.  The move needs link on the key: perm keeps
 * the possessor's (backend.h). */
static long add_with_perm(const struct stranger *st)
{
	long r = add_key(st->type, st->desc, st->payload, st->len,
			 KEY_SPEC_SESSION_KEYRING);

	if (r < 0)
		return -errno;
	if (keyctl_setperm(r, *st->perm) < 0 ||
	    keyctl(KEYCTL_MOVE, r, KEY_SPEC_SESSION_KEYRING, st->ring,
		   KEYCTL_MOVE_EXCL) < 0)
		return -errno;
	return r;
}

/* In the child, after the switch: the one call.  Only system calls. */
static long stranger_run(const struct stranger *st)
{
	long r;

	switch (st->op) {
	case ST_ADD:
		r = st->perm ? add_with_perm(st) : -EEXIST;
		if (r != -EEXIST)
			return r;
		r = add_key(st->type, st->desc, st->payload, st->len,
			    st->ring);
		return r < 0 ? -errno : r;
	case ST_REQUEST:
		r = kernel_search_tops(st);
		if (r >= 0 && st->ring && keyctl_link(r, st->ring) < 0)
			return -errno;
		if (r != -ENOKEY || !st->callout)
			return r;
		r = request_key(st->type, st->desc, st->callout, st->ring);
		return r < 0 ? -errno : r;
	}
	return -EINVAL;
}

/* A killed child, reaped once the kernel lets it go. */
struct reap_arg {
	struct kdetach *d;
	pid_t pid;
};

static void *reap(void *arg)
{
	struct reap_arg *r = arg;

	while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
		;
	kdetach_put(r->d);
	free(r);
	return NULL;
}

/* Kill the child of a caller who gave up, and reap it on a detached
 * thread; false when that cannot be, and the caller must reap it. */
static bool abandon_child(struct keyfs_backend *b, pid_t pid)
{
	struct reap_arg *r = malloc(sizeof(*r));

	kill(pid, SIGKILL);
	if (!r)
		return false;
	r->d = b->detach;
	r->pid = pid;
	if (kdetach_run(b->detach, reap, r) == 0)
		return true;
	free(r);
	return false;
}

/* Run st for caller c in a child without keyfs's keyrings (see above).
 * A serial or -errno. */
long stranger_call(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const struct stranger *st)
{
	struct stranger_result res = { -EIO };
	const gid_t *groups;
	int ngroups, fds[2], status;
	ssize_t n;
	pid_t pid;

	/* before the fork: loading groups may allocate */
	ngroups = cred_groups(c, &groups);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		res.ret = -errno;
		close(fds[0]);
		close(fds[1]);
		return res.ret;
	}
	if (pid == 0) {
		/* the new session keyring is made while still keyfs's ids */
		if (keyctl_join_session_keyring(NULL) < 0)
			res.ret = -errno;
		else
			res.ret = take_ids(c, groups, ngroups);
		if (res.ret == 0)
			res.ret = stranger_run(st);
		n = write(fds[1], &res, sizeof(res));
		_exit(n == (ssize_t)sizeof(res) ? 0 : 1);
	}
	close(fds[1]);
	res.ret = kernel_wait_result(fds[0], c);
	close(fds[0]);
	/* A child in request_key(2) waits for request-key(8) without taking
	 * signals, so a killed one ends only with it: reaped elsewhere. */
	if (res.ret == -EINTR && abandon_child(b, pid))
		return res.ret;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return res.ret;
}

long kernel_wait_result(int fd, const struct keyfs_cred *c)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = POLLIN },
		{ .fd = c->cancel_fd ? *c->cancel_fd : -1, .events = POLLIN },
	};
	struct stranger_result res;
	ssize_t n;

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents)
			return -EINTR;
		if (p[0].revents)
			break;
	}
	do
		n = read(fd, &res, sizeof(res));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(res) ? res.ret : -EIO;
}
