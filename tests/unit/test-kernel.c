/* test-kernel.c: the kernel backend driven directly on real keyrings, in a fresh session keyring. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <keyutils.h>

#include "backend.h"
#include "kernel.h"	/* kdetach, for its test */
#include "tap.h"

static const struct keyfs_backend_ops *ops = &backend_kernel_ops;
static struct keyfs_backend *be;
static struct keyfs_cred me, nobody;
static bool root;	/* quota for 32 KiB keys, chown, the request-key upcall */

#define NOBODY	65534

static void nap(double secs)
{
	struct timespec t = { (time_t)secs,
			      (long)((secs - (double)(time_t)secs) * 1e9) };

	nanosleep(&t, NULL);
}

static kserial_t add(const struct keyfs_cred *c, const char *type,
		     const char *desc, const char *payload, kserial_t ring)
{
	kserial_t s = 0;
	int ret;

	ret = ops->add(be, c, type, desc, payload,
		       payload ? strlen(payload) : 0, ring, NULL, &s);
	return ret < 0 ? ret : s;
}

/* The payload as a NUL-terminated string, or NULL with *err set. */
static char *read_str(const struct keyfs_cred *c, kserial_t key, int *err)
{
	void *buf = NULL;
	size_t len = 0;
	char *s;

	*err = ops->read(be, c, key, &buf, &len);
	if (*err < 0)
		return NULL;
	s = calloc(1, len + 1);
	if (s)
		memcpy(s, buf, len);
	explicit_bzero(buf, len);
	free(buf);
	return s;
}

static bool listed(const struct keyfs_cred *c, kserial_t ring, kserial_t key)
{
	kserial_t *list = NULL;
	size_t n = 0;
	bool found = false;

	if (ops->list(be, c, ring, &list, &n) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		found |= list[i] == key;
	free(list);
	return found;
}

static void test_special(kserial_t *session)
{
	kserial_t s = 0, p = 0, t = 0;

	is_int(ops->special(be, &me, KEYFS_SPEC_SESSION, false, &s), 0,
	       "special @s resolves");
	is_int(s, keyctl_get_keyring_ID(KEY_SPEC_SESSION_KEYRING, 0),
	       "@s is the session keyring");
	is_int(ops->special(be, &me, KEYFS_SPEC_PROCESS, true, &p), 0,
	       "special @p with create");
	ok(p > 0 && p != s, "@p is its own keyring");
	is_int(ops->special(be, &me, KEYFS_SPEC_THREAD, true, &t), 0,
	       "special @t with create");
	is_int(ops->special(be, &me, KEYFS_SPEC_USER, false, &t), 0,
	       "special @u resolves");
	is_int(ops->special(be, &me, KEYFS_SPEC_USER_SESSION, false, &t), 0,
	       "special @us resolves");
	is_int(ops->special(be, &me, -6, false, &t), -EINVAL,
	       "special -6: EINVAL");
	is_int(ops->persistent(be, &me, &p), 0, "persistent resolves");
	*session = s;
}

static void test_basics(kserial_t ring)
{
	struct key_info ki;
	kserial_t k, found = 0;
	char *s;
	int err;

	k = add(&me, "user", "alpha", "hello", ring);
	ok(k > 0, "add user alpha");
	is_int(ops->describe(be, &me, k, &ki), 0, "describe alpha");
	is_str(ki.type, "user", "type user");
	is_str(ki.desc, "alpha", "description alpha");
	is_int(ki.uid, getuid(), "owned by the caller");
	is_int(ki.state, KEY_STATE_VALID, "state valid");
	is_int(ki.size, 5, "size is the payload length");
	is_int(ki.nlink, 1, "one keyring links it");
	ok(ki.possessed, "the mounter possesses it");
	ok(ki.mtime.tv_sec > 0 && ki.ctime.tv_sec > 0, "times are set");
	s = read_str(&me, k, &err);
	is_str(s, "hello", "read gives the payload");
	free(s);
	is_int(ops->update(be, &me, k, "hello world", 11), 0, "update");
	s = read_str(&me, k, &err);
	is_str(s, "hello world", "read gives the new payload");
	free(s);
	is_int(ops->describe(be, &me, k, &ki), 0, "describe after update");
	is_int(ki.size, 11, "size follows the update");
	is_int(ops->find(be, &me, ring, "user", "alpha", &found), 0,
	       "find alpha");
	is_int(found, k, "find gives its serial");
	is_int(ops->find(be, &me, ring, "logon", "alpha", &found), -ENOKEY,
	       "find of another type: ENOKEY");
	is_int(ops->find(be, &me, ring, "user", "nosuch", &found), -ENOKEY,
	       "find of a missing key: ENOKEY");
	ok(listed(&me, ring, k), "list shows alpha");
	is_int(add(&me, "user", "alpha", "again", ring), k,
	       "add of an existing name updates that key");
	ops->revoke(be, &me, k);
	is_int(ops->describe(be, &me, k, &ki), 0,
	       "describe of a revoked key still answers");
	is_int(ki.state, KEY_STATE_REVOKED, "state revoked");
	is_str(ki.desc, "alpha", "its description is remembered");
	s = read_str(&me, k, &err);
	is_int(err, -EKEYREVOKED, "read of a revoked key: EKEYREVOKED");
	free(s);
	is_int(ops->unlink(be, &me, k, ring), 0, "unlink the revoked key");
	is_int(ops->find(be, &me, ring, "user", "alpha", &found), -ENOKEY,
	       "unlinked: find says ENOKEY at once");
}

static void test_outside(kserial_t ring)
{
	struct key_info ki;
	kserial_t k, sub, found = 0;
	unsigned nlink;

	is_int(ops->describe(be, &me, ring, &ki), 0, "describe the keyring");
	nlink = ki.nlink;
	is_int(ops->find(be, &me, ring, "user", "beta", &found), -ENOKEY,
	       "beta is not there yet");
	k = add_key("user", "beta", "x", 1, ring);
	sub = add_key("keyring", "sub", NULL, 0, ring);
	ok(k > 0 && sub > 0, "add beta and a keyring with add_key directly");
	nap(0.25);
	is_int(ops->find(be, &me, ring, "user", "beta", &found), 0,
	       "after the cache timeout, find sees beta");
	is_int(found, k, "with its serial");
	is_int(ops->describe(be, &me, ring, &ki), 0, "describe the keyring");
	is_int(ki.nlink, nlink + 1, "nlink counts the new child keyring");
	keyctl_unlink(k, ring);
	keyctl_unlink(sub, ring);
	nap(0.25);
	is_int(ops->find(be, &me, ring, "user", "beta", &found), -ENOKEY,
	       "an outside unlink is seen after the timeout");
	/* keyfs's own setperm and chown of a key it has never described:
	 * the owner rule needs its owner, which keyfs must learn first */
	k = add_key("user", "gamma", "x", 1, ring);
	is_int(ops->setperm(be, &me, k, 0x3f3f0000), 0,
	       "setperm of a key keyfs never saw");
	keyctl_unlink(k, ring);
	k = add_key("user", "delta", "x", 1, ring);
	is_int(ops->chown(be, &me, k, (uid_t)-1, getgid()), 0,
	       "chown of a key keyfs never saw");
	keyctl_unlink(k, ring);
}

static void test_timeout(kserial_t ring)
{
	struct key_info ki;
	time_t now;
	kserial_t k;
	int err = 0;

	k = add(&me, "user", "timed", "t", ring);
	now = time(NULL);
	is_int(ops->set_timeout(be, &me, k, 1000), 0, "set_timeout 1000");
	is_int(ops->describe(be, &me, k, &ki), 0, "describe the timed key");
	ok(ki.expiry >= now + 1000 && ki.expiry <= now + 1001,
	   "expiry is exact (%ld from now)", (long)(ki.expiry - now));
	nap(0.25);
	is_int(ops->describe(be, &me, k, &ki), 0,
	       "describe after /proc/keys is read again");
	ok(ki.expiry >= now + 1000 && ki.expiry <= now + 1001,
	   "expiry stays exact");
	is_int(ops->set_timeout(be, &me, k, 0), 0, "clear the timeout");
	is_int(ops->describe(be, &me, k, &ki), 0, "describe");
	is_int(ki.expiry, 0, "no expiry");
	keyctl_set_timeout(k, 3600);
	now = time(NULL);
	/* no request waits for /proc/keys: the backend's thread renews its
	 * parse when it is a second old, and a later look shows it */
	for (int i = 0; i < 40; i++) {
		err = ops->describe(be, &me, k, &ki);
		if (err < 0 || ki.expiry)
			break;
		nap(0.1);
	}
	is_int(err, 0, "describe a timeout set outside");
	/* /proc/keys shows whole units, cut down (3600 s: "1h" or "59m");
	 * keyfs reports the end of that unit, never before the real expiry,
	 * counted from the second it read /proc/keys (which may be after
	 * now). */
	ok(ki.expiry >= now + 3600 && ki.expiry <= time(NULL) + 7200,
	   "expiry from /proc/keys (%ld from now)", (long)(ki.expiry - now));
	is_int(ops->set_timeout(be, &me, k, 1), 0, "set_timeout 1");
	nap(2.1);
	is_int(ops->describe(be, &me, k, &ki), 0, "describe an expired key");
	is_int(ki.state, KEY_STATE_EXPIRED, "state expired");
	keyctl_unlink(k, ring);
}

static void test_limits(kserial_t ring)
{
	char *big = malloc(KEYFS_USER_PAYLOAD_MAX + 2);
	kserial_t k = 0, l;
	struct key_info ki;
	char *s;
	int err;

	memset(big, 'a', KEYFS_USER_PAYLOAD_MAX + 1);
	is_int(ops->add(be, &me, "user", "big", big,
			KEYFS_USER_PAYLOAD_MAX + 1, ring, NULL, &k), -EFBIG,
	       "32768 bytes: EFBIG");
	if (root) {
		is_int(ops->add(be, &me, "user", "big", big,
				KEYFS_USER_PAYLOAD_MAX, ring, NULL, &k), 0,
		       "32767 bytes fit");
		is_int(ops->update(be, &me, k, big,
				   KEYFS_USER_PAYLOAD_MAX + 1),
		       -EFBIG, "update with 32768 bytes: EFBIG");
		is_int(ops->unlink(be, &me, k, ring), 0, "unlink it");
	}
	free(big);

	l = add(&me, "logon", "svc:alice", "secret", ring);
	ok(l > 0, "add logon svc:alice");
	s = read_str(&me, l, &err);
	is_int(err, -EOPNOTSUPP, "read of a logon key: EOPNOTSUPP");
	free(s);
	is_int(ops->describe(be, &me, l, &ki), 0, "describe the logon key");
	is_int(ki.size, 0, "its size is 0");
	is_int(add(&me, "logon", "nocolon", "x", ring), -EINVAL,
	       "logon description without ':': EINVAL");
	is_int(add(&me, "nosuchtype", "x", "x", ring), -ENODEV,
	       "unknown type: ENODEV, as the kernel says");
	ops->unlink(be, &me, l, ring);
}

static void test_move_attr(kserial_t ring)
{
	kserial_t other, k, k2, found = 0, s = 0;
	struct key_info ki;

	other = add(&me, "keyring", "other", NULL, ring);
	ok(other > 0, "add a second keyring");
	k = add(&me, "user", "mover", "m", ring);
	is_int(ops->find(be, &me, other, "user", "mover", &found), -ENOKEY,
	       "not in the second keyring yet");
	is_int(ops->move(be, &me, k, ring, other, 0), 0, "move");
	is_int(ops->find(be, &me, other, "user", "mover", &found), 0,
	       "found in the target");
	is_int(ops->find(be, &me, ring, "user", "mover", &found), -ENOKEY,
	       "gone from the source");
	k2 = add(&me, "user", "mover", "n", ring);
	is_int(ops->move(be, &me, k2, ring, other, KEYFS_MOVE_EXCL), -EEXIST,
	       "move EXCL onto the same name: EEXIST");
	is_int(ops->link(be, &me, k2, other), 0, "link displaces the old one");
	is_int(ops->find(be, &me, other, "user", "mover", &found), 0,
	       "find in the target");
	is_int(found, k2, "gives the linked key");
	is_int(ops->describe(be, &me, k2, &ki), 0, "describe it");
	is_int(ki.nlink, 2, "two keyrings link it");

	is_int(ops->setperm(be, &me, k2, 0x3f3f0000), 0, "setperm");
	is_int(ops->describe(be, &me, k2, &ki), 0, "describe");
	is_int(ki.perm, 0x3f3f0000, "perm is set");
	is_int(ops->setperm(be, &me, k2, 0x40000000), -EINVAL,
	       "setperm with unknown bits: EINVAL");
	if (root) {
		is_int(ops->chown(be, &me, k2, (uid_t)-1, NOBODY), 0,
		       "chown group");
		is_int(ops->describe(be, &me, k2, &ki), 0, "describe");
		is_int(ki.gid, NOBODY, "gid is set");
	}

	keyctl_link(k2, KEY_SPEC_SESSION_KEYRING);
	is_int(ops->search(be, &me, "user", "mover", &s), 0,
	       "search finds it through the session keyring");
	is_int(s, k2, "the same key");
	is_int(ops->search(be, &me, "user", "nosuch-xyz", &s), -ENOKEY,
	       "search of a missing key: ENOKEY");
	is_int(ops->request(be, &me, "user", "nosuch-xyz", NULL, ring, &s),
	       -ENOKEY, "request without callout: ENOKEY");
	keyctl_unlink(k2, KEY_SPEC_SESSION_KEYRING);

	/* k, displaced from every keyring, is possessed no more */
	is_int(ops->invalidate(be, &me, k), -EACCES,
	       "invalidate without search: EACCES");
	k = add(&me, "user", "doomed", "d", other);
	is_int(ops->invalidate(be, &me, k), 0, "invalidate");
	is_int(ops->find(be, &me, other, "user", "doomed", &found), -ENOKEY,
	       "invalidated: find says ENOKEY at once");
	is_int(ops->find(be, &me, other, "user", "mover", &found), 0,
	       "the other key stays");
	is_int(ops->clear(be, &me, other), 0, "clear");
	is_int(ops->find(be, &me, other, "user", "mover", &found), -ENOKEY,
	       "cleared: find says ENOKEY");
	ok(!listed(&me, other, k2), "cleared: not listed");
	is_int(ops->restrict_keyring(be, &me, other, NULL, NULL), 0,
	       "restrict the keyring");
	is_int(add(&me, "user", "late", "x", other), -EPERM,
	       "a restricted keyring refuses links: EPERM");
	ops->unlink(be, &me, k2, ring);
	ops->unlink(be, &me, other, ring);
}

/* /etc/request-key.conf as keyutils ships it: the callout for debug:*
 * negates the key for "negate" and instantiates it otherwise. */
/* A detached thread that waits until its pipe is closed. */
struct held {
	struct kdetach *d;
	int fd;
	atomic_int ended;	/* threads past their last use of this */
};

static void *hold(void *arg)
{
	struct held *h = arg;
	char c;

	while (read(h->fd, &c, 1) > 0)
		;
	kdetach_put(h->d);
	atomic_fetch_add(&h->ended, 1);
	return NULL;
}

/* Until n threads have ended (a second at most). */
static void held_wait(struct held *h, int n)
{
	for (int i = 0; i < 100 && atomic_load(&h->ended) < n; i++)
		nap(0.01);
}

/* At most KDETACH_MAX detached threads at once; their count outlives its
 * first owner. */
static void test_detach(void)
{
	struct kdetach *d = kdetach_new();
	struct held h = { d, -1, 0 };
	int fds[2], i, ret = 0;

	if (!d || pipe(fds) < 0) {
		ok(0, "a kdetach and a pipe");
		return;
	}
	h.fd = fds[0];
	for (i = 0; i < KDETACH_MAX && ret == 0; i++)
		ret = kdetach_run(d, hold, &h);
	is_int(ret, 0, "%d detached threads start", KDETACH_MAX);
	is_int(kdetach_run(d, hold, &h), -EAGAIN, "one more: EAGAIN");
	close(fds[1]);	/* the threads end */
	held_wait(&h, KDETACH_MAX);
	is_int((int)atomic_load(&d->refs), 1, "each put its reference");
	close(fds[0]);
	if (pipe(fds) < 0)
		return;
	h.fd = fds[0];
	is_int(kdetach_run(d, hold, &h), 0, "then another may start");
	kdetach_put(d);	/* the first owner goes; the thread frees d */
	close(fds[1]);
	/* h and the pipe are the thread's until it has ended */
	held_wait(&h, KDETACH_MAX + 1);
	is_int(atomic_load(&h.ended), KDETACH_MAX + 1, "it ended");
	close(fds[0]);
}

/* key's state, or -1 when it cannot be described. */
static int state_of(kserial_t key)
{
	struct key_info ki;

	return ops->describe(be, &me, key, &ki) == 0 ? (int)ki.state : -1;
}

/* A requester that gave up (its cancel descriptor readable) gets EINTR
 * at once; the kernel's construction goes on and makes the key. */
static void test_request_cancel(kserial_t ring)
{
	struct keyfs_cred gave_up = me;
	kserial_t s = 0, found = 0;
	int fds[2], i;

	if (pipe(fds) < 0 || write(fds[1], "x", 1) != 1) {
		ok(0, "a readable pipe");
		return;
	}
	gave_up.cancel_fd = &fds[0];
	is_int(ops->request(be, &gave_up, "user", "debug:gaveup", "hello",
			    ring, &s), -EINTR, "a requester that gave up: EINTR");
	for (i = 0; i < 50; i++) {
		if (ops->find(be, &me, ring, "user", "debug:gaveup", &found) == 0 &&
		    state_of(found) == KEY_STATE_VALID)
			break;
		nap(0.1);
	}
	is_int(state_of(found), KEY_STATE_VALID,
	       "request-key(8) makes the key all the same");
	if (found)
		ops->unlink(be, &me, found, ring);
	close(fds[0]);
	close(fds[1]);
}

static void test_request(kserial_t ring)
{
	kserial_t s = 0, found = 0;
	struct key_info ki;
	char *p;
	int err;

	if (!root || access("/sbin/request-key", X_OK) < 0) {
		ok(1, "# SKIP the request-key upcall needs root and keyutils");
		return;
	}
	is_int(ops->request(be, &me, "user", "debug:neg", "negate", ring, &s),
	       -ENOKEY, "request the callout negates: ENOKEY");
	is_int(ops->find(be, &me, ring, "user", "debug:neg", &found), 0,
	       "the negative key is linked in the destination");
	is_int(ops->describe(be, &me, found, &ki), 0, "describe it");
	is_int(ki.state, KEY_STATE_NEGATIVE, "state negative");
	p = read_str(&me, found, &err);
	is_int(err, -ENOKEY, "read of a negative key: ENOKEY");
	free(p);
	ops->unlink(be, &me, found, ring);
	is_int(ops->request(be, &me, "user", "debug:pos", "hello", ring, &s),
	       0, "request the callout instantiates");
	p = read_str(&me, s, &err);
	is_str(p, "Debug hello", "with the callout's payload");
	free(p);
	is_int(ops->find(be, &me, ring, "user", "debug:pos", &found), 0,
	       "linked in the destination");
	is_int(found, s, "the same key");
	ops->unlink(be, &me, s, ring);
	test_request_cancel(ring);
}

/* add with a perm for another uid: made in the child's own keyring, so
 * the owner gives it a perm it could not setperm after; the kernel shows
 * it so. */
static void test_other_user_perm(kserial_t ring)
{
	uint32_t perm = 0x3f370000;
	kserial_t k = 0, k2 = 0;
	struct key_info ki;
	char *s, desc[256];
	int err;

	is_int(ops->add(be, &nobody, "user", "made", "m", 1, ring, &perm, &k),
	       0, "another uid adds with a perm");
	is_int(ops->describe(be, &nobody, k, &ki), 0, "and views its key");
	is_int(ki.uid, NOBODY, "which is its own");
	ok(keyctl_describe(k, desc, sizeof(desc)) > 0 &&
	   strstr(desc, ";3f370000;") != NULL, "the kernel has the perm (%s)",
	   desc);
	s = read_str(&nobody, k, &err);
	is_str(s, "m", "it reads the key back");
	free(s);
	ok(listed(&me, ring, k), "the key is linked where asked");
	perm = 0x3f370202;
	is_int(ops->add(be, &nobody, "user", "made", "n", 1, ring, &perm, &k2),
	       0, "a second add with a perm");
	is_int(k2, k, "updates the key it finds, as add_key does");
	s = read_str(&nobody, k, &err);
	is_str(s, "n", "which takes the payload");
	free(s);
	perm = 0x2f370000;
	is_int(ops->add(be, &nobody, "user", "made2", "m", 1, ring, &perm, &k2),
	       -EINVAL, "a perm without the possessor's link: EINVAL");
	/* a key of that name the caller may not write is not displaced */
	ops->setperm(be, &me, k, 0x3f010000);
	perm = 0x3f370000;
	is_int(ops->add(be, &nobody, "user", "made", "x", 1, ring, &perm, &k2),
	       -EACCES, "a name held by a key it may not write: EACCES");
	ok(listed(&me, ring, k), "and that key stays");
	ops->unlink(be, &me, k, ring);
}

static void test_other_user(kserial_t ring)
{
	kserial_t k, mine, found = 0;
	struct key_quota q;
	struct key_info ki;
	char *s, *text;
	int err;

	k = add(&me, "user", "private", "p", ring);
	ops->setperm(be, &me, k, 0x3f010000);
	is_int(ops->describe(be, &nobody, k, &ki), -EACCES,
	       "another uid may not view a private key");
	s = read_str(&nobody, k, &err);
	is_int(err, -EACCES, "nor read it");
	free(s);
	is_int(ops->setperm(be, &me, k, 0x3f01000b), 0,
	       "grant others view, read, search");
	is_int(ops->describe(be, &nobody, k, &ki), 0, "now it may view");
	ok(!ki.possessed, "but does not possess it");
	s = read_str(&nobody, k, &err);
	is_str(s, "p", "and read it");
	free(s);
	is_int(ops->update(be, &nobody, k, "q", 1), -EACCES,
	       "but not write it");
	is_int(ops->revoke(be, &nobody, k), -EACCES, "nor revoke it");
	is_int(ops->setperm(be, &nobody, k, 0x3f3f3f3f), -EACCES,
	       "nor setperm it");
	ops->setperm(be, &me, k, 0x3f01003f);
	is_int(ops->setperm(be, &nobody, k, 0x3f3f3f3f), -EACCES,
	       "setattr without ownership: still EACCES");
	is_int(ops->chown(be, &nobody, k, NOBODY, (gid_t)-1), -EACCES,
	       "chown to itself: EACCES");

	is_int(ops->find(be, &nobody, ring, "user", "private", &found),
	       -EACCES, "find in a keyring it may not search: EACCES");
	is_int(add(&nobody, "user", "theirs", "t", ring), -EACCES,
	       "add to a keyring it may not write: EACCES");
	ops->setperm(be, &me, ring, 0x3f3f003f);
	is_int(ops->find(be, &nobody, ring, "user", "private", &found), 0,
	       "find once it may search");
	mine = add(&nobody, "user", "theirs", "t", ring);
	ok(mine > 0, "add once it may write");
	is_int(ops->describe(be, &nobody, mine, &ki), 0, "describe its key");
	is_int(ki.uid, NOBODY, "the kernel made the key the caller's");
	is_int(ops->quota(be, &nobody, &q), 0, "quota of the caller");
	ok(q.keys >= 1 && q.maxkeys > 0, "charged to the caller (%lu keys)",
	   q.keys);
	is_int(ops->setperm(be, &nobody, mine, 0x3f3f0000), -EACCES,
	       "the owner without setattr may not setperm");
	ops->setperm(be, &me, mine, 0x3f3f0000);
	is_int(ops->setperm(be, &nobody, mine, 0x3f3b0000), 0,
	       "the owner with setattr may setperm");
	ops->setperm(be, &me, k, 0x3f010000);
	is_int(ops->proc_keys(be, &nobody, &text), 0, "proc_keys as caller");
	ok(text && !strstr(text, "private"), "hides what it may not view");
	free(text);
	is_int(ops->unlink(be, &nobody, mine, ring), 0,
	       "unlink in a keyring it may write");
	test_other_user_perm(ring);
	ops->unlink(be, &me, k, ring);
	ops->setperm(be, &me, ring, 0x3f130000);
}

/* Issue 15.2-15.4, 16.2: what keyfs does for another uid, it does without
 * possessing keyfs's keyrings; a write over a page stages nothing. */
static void test_possession(kserial_t ring)
{
	kserial_t sec, dst, ow, tok, big, theirs, got = 0;
	char payload[5000], *s;
	int err;

	if (!root) {
		ok(1, "# SKIP acting as another uid needs root");
		return;
	}
	sec = add(&me, "user", "sec", "s", ring);
	dst = add(&me, "keyring", "dst", NULL, ring);
	ops->setperm(be, &me, dst, 0x3f3f3f3f);
	ok(ops->request(be, &nobody, "user", "sec", NULL, dst, &got) < 0,
	   "request of a key another uid may not search fails");
	ok(!listed(&me, dst, sec), "and links nothing into its keyring");
	ops->setperm(be, &me, sec, 0x3f010008);
	ok(ops->search(be, &nobody, "user", "sec", &got) < 0,
	   "search without possession: not through a keyring it may not "
	   "search");

	ow = add(&me, "keyring", "ow", NULL, ring);
	ops->setperm(be, &me, ow, 0x3f3f3f3f);
	ok(!listed(&me, ow, 1), "keyfs lists (and indexes) a keyring "
	   "everyone may write");
	tok = add_key("user", "tok", "root", 4, ow);	/* behind keyfs's back */
	is_int(add(&nobody, "user", "tok", "evil", ow), -EACCES,
	       "add over a key keyfs never saw needs write on that key");
	s = read_str(&me, tok, &err);
	is_str(s, "root", "which keeps its payload");
	free(s);

	memset(payload, 'x', sizeof(payload));
	big = add(&me, "user", "big", "b", ring);
	ops->setperm(be, &me, big, 0x2f010000);
	add_key("user", "big", "proc", 4, KEY_SPEC_PROCESS_KEYRING);
	is_int(ops->update(be, &me, big, payload, sizeof(payload)), 0,
	       "update over a page needs no link permission");
	got = keyctl_search(KEY_SPEC_PROCESS_KEYRING, "user", "big", 0);
	s = got > 0 ? read_str(&me, got, &err) : NULL;
	is_str(s, "proc", "and leaves keyfs's process keyring alone");
	free(s);
	keyctl_unlink(got, KEY_SPEC_PROCESS_KEYRING);
	theirs = add(&me, "user", "theirs", "t", ow);
	ops->setperm(be, &me, theirs, 0x2f010007);
	is_int(ops->update(be, &nobody, theirs, payload, sizeof(payload)), 0,
	       "another uid's update over a page: write is enough");
	ops->setperm(be, &me, theirs, 0x3f010003);
	is_int(ops->update(be, &nobody, theirs, payload, sizeof(payload)),
	       -EACCES, "and without write, refused");
	ops->unlink(be, &me, sec, ring);
	ops->unlink(be, &me, dst, ring);
	ops->unlink(be, &me, ow, ring);
	ops->unlink(be, &me, big, ring);
}

static void test_text(kserial_t ring)
{
	struct key_quota q;
	kserial_t *all = NULL, k;
	char *text = NULL, hex[16];
	bool found = false;
	size_t n = 0;

	k = add(&me, "user", "shown", "s", ring);
	is_int(ops->supports(be, &text), 0, "supports");
	ok(text && strncmp(text, "have_capabilities=1\n", 20) == 0,
	   "in keyctl supports' format");
	ok(text && strstr(text, "have_move_key=1\n"), "move is supported");
	free(text);
	is_int(ops->proc_keys(be, &me, &text), 0, "proc_keys");
	snprintf(hex, sizeof(hex), "%08x ", (unsigned)k);
	ok(text && strstr(text, hex), "shows the new key");
	free(text);
	is_int(ops->proc_key_users(be, &me, &text), 0, "proc_key_users");
	ok(text && strchr(text, ':'), "has a line");
	free(text);
	is_int(ops->quota(be, &me, &q), 0, "quota");
	ok(q.keys > 0 && q.maxkeys >= q.keys && q.maxbytes >= q.bytes,
	   "quota is sane");
	is_int(ops->list_all(be, &me, &all, &n), 0, "list_all");
	for (size_t i = 0; i < n; i++)
		found |= all[i] == k;
	ok(found, "list_all holds the new key");
	free(all);
	is_int(ops->security(be, &me, k, &text), 0, "security");
	free(text);
	ops->unlink(be, &me, k, ring);
}

/* type_info: the facts the FUSE layer needs before a key of a type exists,
 * from the same table as check_new and the payload limit. */
static void test_type_info(kserial_t ring)
{
	struct key_type_info ti;
	static char big[KEYFS_USER_PAYLOAD_MAX + 1];

	is_int(ops->type_info(be, "user", &ti), 0, "type_info user");
	ok(ti.max_payload == KEYFS_USER_PAYLOAD_MAX && ti.readable &&
	   ti.default_perm == 0x3f010000, "user: 32767 bytes, readable, 0x3f010000");
	is_int(ops->type_info(be, "logon", &ti), 0, "type_info logon");
	ok(ti.max_payload == KEYFS_USER_PAYLOAD_MAX && !ti.readable &&
	   ti.default_perm == 0x3d010000, "logon: 32767 bytes, unreadable, 0x3d010000");
	is_int(ops->type_info(be, "keyring", &ti), 0, "type_info keyring");
	ok(ti.max_payload == 0, "a keyring takes no payload");
	is_int(ops->type_info(be, "no-such-type", &ti), -ENODEV,
	       "type_info of an unknown type is ENODEV");
	is_int(ops->check_new(be, "no-such-type", "x"), -ENODEV,
	       "check_new agrees");
	is_int(ops->add(be, &me, "user", "keyfs-ti", big, sizeof(big), ring, NULL,
			&(kserial_t){ 0 }), -EFBIG,
	       "add over type_info's limit is EFBIG");
}

/* Many keys described at once (prefetch.c) answer as one at a time would,
 * whatever the order they are asked for in, and a section ended half way
 * leaves nothing behind. */
static void test_prefetch(kserial_t session)
{
	enum { N = 300 };
	kserial_t ring = add(&me, "keyring", "keyfs-prefetch", NULL, session);
	kserial_t keys[N];
	struct key_info ki;
	char desc[32], payload[32];
	int bad = 0, made = 0;

	ok(ring > 0, "a keyring of %d keys", N);
	for (int i = 0; i < N; i++) {
		snprintf(desc, sizeof(desc), "pre%03d", i);
		snprintf(payload, sizeof(payload), "%.*s", 1 + i % 20, "xxxxxxxxxxxxxxxxxxxxxxxxx");
		keys[i] = add(&me, "user", desc, payload, ring);
		made += keys[i] > 0;
	}
	is_int(made, N, "all made");
	/* a change made after the calls are handed out, before they are
	 * taken: the describe may see either, never anything else */
	ops->prefetch(be, &me, keys, N, KEY_INFO_SIZE);
	keyctl_update(keys[N - 1], "changed-payload", 15);
	for (int i = N - 1; i >= 0; i -= 2) {	/* against their order */
		snprintf(desc, sizeof(desc), "pre%03d", i);
		if (ops->describe_part(be, &me, keys[i], KEY_INFO_SIZE, &ki) < 0 ||
		    strcmp(ki.desc, desc) != 0 ||
		    (i < N - 1 && ki.size != (uint64_t)(1 + i % 20)) ||
		    (i == N - 1 && ki.size != 15 && ki.size != (uint64_t)(1 + i % 20)))
			bad++;
	}
	for (int i = 0; i < N; i += 2) {	/* then in it */
		snprintf(desc, sizeof(desc), "pre%03d", i);
		if (ops->describe_part(be, &me, keys[i], KEY_INFO_SIZE, &ki) < 0 ||
		    strcmp(ki.desc, desc) != 0 || ki.size != (uint64_t)(1 + i % 20))
			bad++;
	}
	ops->prefetch(be, &me, NULL, 0, 0);
	is_int(bad, 0, "each key described as it is, in any order");
	/* ended after ten: the rest is described by calls of its own */
	ops->prefetch(be, &me, keys, N, KEY_INFO_SIZE);
	for (int i = 0; i < 10; i++)
		bad += ops->describe_part(be, &me, keys[i], KEY_INFO_SIZE, &ki) < 0;
	ops->prefetch(be, &me, NULL, 0, 0);
	ops->prefetch(be, &me, NULL, 0, 0);	/* twice: nothing to end */
	is_int(ops->describe_part(be, &me, keys[N - 1], KEY_INFO_SIZE, &ki), 0,
	       "a section ended half way: describe after it");
	is_int(ki.size, 15, "it sees the change");
	is_int(bad, 0, "the ten before it described");
	/* a revoked key among them: its describe answers as without */
	keyctl_revoke(keys[5]);
	ops->prefetch(be, &me, keys, 10, KEY_INFO_SIZE);
	is_int(ops->describe_part(be, &me, keys[5], KEY_INFO_SIZE, &ki), 0,
	       "a revoked key among the handed out answers");
	is_int(ki.state, KEY_STATE_REVOKED, "as revoked");
	ops->prefetch(be, &me, NULL, 0, 0);
	is_int(ops->unlink(be, &me, ring, session), 0, "remove it");
}

int main(void)
{
	struct backend_config cfg = {
		.uid = getuid(), .gid = getgid(), .cache_timeout = 0.2,
	};
	kserial_t session = 0, ring;
	char err[256] = "";

	if (keyctl_join_session_keyring(NULL) < 0) {
		printf("1..0 # SKIP no kernel keyrings: %s\n", strerror(errno));
		return 0;
	}
	root = geteuid() == 0;
	me = (struct keyfs_cred){ .uid = getuid(), .gid = getgid(),
				  .pid = getpid() };
	nobody = (struct keyfs_cred){ .uid = NOBODY, .gid = NOBODY,
				      .pid = getpid() };
	is_int(ops->init(&be, &cfg, err, sizeof(err)), 0, "init %s", err);
	if (!be)
		return done_testing();
	test_special(&session);
	ring = add(&me, "keyring", "keyfs-test", NULL, session);
	ok(ring > 0, "a test keyring in the session");
	test_basics(ring);
	test_outside(ring);
	test_timeout(ring);
	test_limits(ring);
	test_move_attr(ring);
	test_request(ring);
	test_detach();
	if (root)
		test_other_user(ring);
	else
		ok(1, "# SKIP another uid needs root");
	test_possession(ring);
	test_text(ring);
	test_type_info(ring);
	test_prefetch(session);
	is_int(ops->unlink(be, &me, ring, session), 0, "remove the test keyring");
	ops->destroy(be);
	return done_testing();
}
