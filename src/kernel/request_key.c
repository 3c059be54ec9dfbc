/* request_key.c: request_key(2) and search, for the mounter and for other callers. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

/* keyfs's thread, process and session keyrings, the ones request_key(2)
 * searches for keyfs; 0 where there is none. */
static void stranger_tops(kserial_t tops[ST_TOPS])
{
	static const int which[ST_TOPS] = {
		KEY_SPEC_THREAD_KEYRING, KEY_SPEC_PROCESS_KEYRING,
		KEY_SPEC_SESSION_KEYRING,
	};

	for (int i = 0; i < ST_TOPS; i++) {
		key_serial_t s = keyctl_get_keyring_ID(which[i], 0);

		tops[i] = s < 0 ? 0 : s;
	}
}

/* One request_key(2) on a thread of its own; owns its copies. */
struct bg_request {
	char *type, *desc, *callout;
	kserial_t dest;
	int fd;			/* a pipe's write end: the stranger_result */
	struct kdetach *d;	/* put when done */
};

static void bg_request_free(struct bg_request *r)
{
	free(r->type);
	free(r->desc);
	free(r->callout);
	free(r);
}

static long request_now(const char *type, const char *desc,
			const char *callout, kserial_t dest)
{
	long s = request_key(type, desc, callout, dest);

	return s < 0 ? -errno : s;
}

static void *bg_request_run(void *arg)
{
	struct bg_request *r = arg;
	struct stranger_result res;
	ssize_t n;

	res.ret = request_now(r->type, r->desc, r->callout, r->dest);
	n = write(r->fd, &res, sizeof(res));
	(void)n;	/* EPIPE when the waiter gave up: nobody wants it */
	close(r->fd);
	kdetach_put(r->d);
	bg_request_free(r);
	return NULL;
}

static struct bg_request *bg_request_new(struct keyfs_backend *b,
					 const char *type, const char *desc,
					 const char *callout, kserial_t dest,
					 int fd)
{
	struct bg_request *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->type = strdup(type);
	r->desc = strdup(desc);
	r->callout = strdup(callout);
	r->dest = dest;
	r->fd = fd;
	r->d = b->detach;
	if (!r->type || !r->desc || !r->callout) {
		bg_request_free(r);
		return NULL;
	}
	return r;
}

/*
 * request_key(2) with a callout as the mounter: the kernel waits for
 * request-key(8) to exit, for as long as it takes, and takes no signal
 * meanwhile.  So the call runs on a thread of its own (with keyfs's ids
 * and keyrings, as this one's), and this thread waits for its answer or
 * for the caller to give up (c->cancel_fd: -EINTR).  Then the kernel
 * goes on with the construction, as it does when a process in
 * request_key(2) gets a signal, and the thread ends with it.
 */
static long request_waiting(struct keyfs_backend *b,
			    const struct keyfs_cred *c, const char *type,
			    const char *desc, const char *callout,
			    kserial_t dest)
{
	struct bg_request *r;
	int fds[2];
	long s;

	if (!c->cancel_fd || pipe2(fds, O_CLOEXEC) < 0)
		return request_now(type, desc, callout, dest);
	r = bg_request_new(b, type, desc, callout, dest, fds[1]);
	if (!r || kdetach_run(b->detach, bg_request_run, r) < 0) {
		/* no thread to spare: wait as if the caller could not give up */
		if (r)
			bg_request_free(r);
		close(fds[0]);
		close(fds[1]);
		return request_now(type, desc, callout, dest);
	}
	s = kernel_wait_result(fds[0], c);
	close(fds[0]);
	return s;
}

/*
 * The mounter's request, searched first as keyctl search does: request_key(2)
 * and the link into dest would wait, holding keyfs's lock, for a key under
 * construction.  Such a key is found as it is (its reads answer EAGAIN),
 * and linking it answers EAGAIN (kproc_ready).  Only the
 * callout's run lets the lock go, as the kernel waits for request-key(8)
 * for as long as it takes.
 */
static long mounter_request(struct keyfs_backend *b,
			    const struct keyfs_cred *c, const struct stranger *st)
{
	long s = kernel_search_tops(st);
	int ret;

	if (s >= 0) {
		if (!st->ring)
			return s;
		kkey_known(b, c, (kserial_t)s);
		ret = kproc_ready(b, (kserial_t)s);
		if (ret < 0)
			return ret;
		return keyctl_link((key_serial_t)s, st->ring) < 0 ? -errno : s;
	}
	if (s != -ENOKEY || !st->callout)
		return s;
	if (b->unlock)
		b->unlock(b->lock_arg);
	s = request_waiting(b, c, st->type, st->desc, st->callout, st->ring);
	if (b->relock)
		b->relock(b->lock_arg);
	return s;
}

/*
 * request_key(2) searches keyfs's own keyrings.  The mounter possesses
 * them and makes the call as keyfs.  Any other caller possesses nothing:
 * the search, the link into dest and a callout's construction run without
 * keyfs's possession (stranger_call), so the kernel finds only keys the
 * caller may search by its own ids, and refuses the link (link permission
 * on the key, write on dest) before it makes it.
 */
static int request_common(struct keyfs_backend *b, const struct keyfs_cred *c,
			  const char *type, const char *desc,
			  const char *callout, kserial_t dest, kserial_t *out)
{
	struct stranger st = {
		.op = ST_REQUEST, .type = type, .desc = desc,
		.callout = callout, .ring = dest,
	};
	long s;
	struct kkey *k;
	int ret = 0;

	if (dest)
		ret = kkey_check(b, c, dest, KEYFS_PERM_WRITE, 0);
	if (ret < 0)
		return ret;
	stranger_tops(st.tops);
	if (is_mounter(b, c)) {
		s = mounter_request(b, c, &st);
	} else {
		/* The child may wait: for a callout, for a key under
		 * construction it found.  Other requests go on meanwhile;
		 * nothing here touches the backend's caches until the lock
		 * is back. */
		if (b->unlock)
			b->unlock(b->lock_arg);
		s = stranger_call(b, c, &st);
		if (b->relock)
			b->relock(b->lock_arg);
	}
	ret = s < 0 ? (int)s : 0;
	/* a failed construction may still link a negative key into dest */
	if (ret < 0 && dest)
		kring_note_unknown(b, dest);
	if (ret < 0)
		return ret;
	/* the match may be inexact for some types: describe what was found */
	k = kkey_known(b, c, (kserial_t)s);
	if (dest) {
		kkey_touch_payload(kkey_get(b, dest));
		kring_note_link(b, dest, k);
	}
	*out = (kserial_t)s;
	return 0;
}

int kernel_request(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const char *type, const char *desc,
		   const char *callout, kserial_t dest, kserial_t *out)
{
	return request_common(b, c, type, desc, callout, dest, out);
}

int kernel_search(struct keyfs_backend *b, const struct keyfs_cred *c,
		  const char *type, const char *desc, kserial_t *out)
{
	return request_common(b, c, type, desc, NULL, 0, out);
}
