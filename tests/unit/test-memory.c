/* test-memory.c: unit tests driving backend_memory_ops directly, against the kernel's keyring rules. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "memory.h"	/* gc_delay, for the gc's test */
#include "tap.h"

#define MOUNTER 4242
#define STRANGER 1000

static const struct keyfs_backend_ops *ops = &backend_memory_ops;
static const struct keyfs_cred me = { .uid = MOUNTER, .gid = MOUNTER };
static const struct keyfs_cred stranger = { .uid = STRANGER, .gid = STRANGER };
static const struct keyfs_cred root = { .uid = 0, .gid = 0 };
static char tmpdir[] = "/tmp/keyfs-test-memory.XXXXXX";

static struct keyfs_backend *start(const char *store, const char *callout)
{
	struct backend_config cfg = {
		.store = store, .request_key = callout,
		.uid = MOUNTER, .gid = MOUNTER,
	};
	struct keyfs_backend *b = NULL;
	char err[256];
	int ret = ops->init(&b, &cfg, err, sizeof(err));

	if (ret < 0)
		printf("# init: %s\n", err);
	return b;
}

static kserial_t spec(struct keyfs_backend *b, int which)
{
	kserial_t s = 0;

	ops->special(b, &me, which, true, &s);
	return s;
}

static kserial_t add(struct keyfs_backend *b, const struct keyfs_cred *c,
		     const char *type, const char *desc, const char *payload,
		     kserial_t keyring)
{
	kserial_t s = 0;
	int ret = ops->add(b, c, type, desc, payload,
			   payload ? strlen(payload) : 0, keyring, NULL, &s);

	return ret < 0 ? ret : s;
}

static int state_of(struct keyfs_backend *b, kserial_t key)
{
	struct key_info ki;
	int ret = ops->describe(b, &me, key, &ki);

	return ret < 0 ? ret : (int)ki.state;
}

/* The payload as a string, or the -errno as text. */
static const char *read_str(struct keyfs_backend *b, const struct keyfs_cred *c,
			    kserial_t key)
{
	static char out[256];
	void *buf = NULL;
	size_t len = 0;
	int ret = ops->read(b, c, key, &buf, &len);

	if (ret < 0)
		snprintf(out, sizeof(out), "error %d", ret);
	else
		snprintf(out, sizeof(out), "%.*s", (int)len, (char *)buf);
	free(buf);
	return out;
}

static void test_specials(struct keyfs_backend *b)
{
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), u = spec(b, KEYFS_SPEC_USER);
	kserial_t us = spec(b, KEYFS_SPEC_USER_SESSION), found = 0;
	kserial_t p = spec(b, KEYFS_SPEC_PROCESS), t = spec(b, KEYFS_SPEC_THREAD);
	struct key_info ki;

	ok(s > 0 && u > 0 && us > 0 && p > 0, "special keyrings exist");
	is_int(t, p, "@t resolves to the process keyring");
	ops->describe(b, &me, s, &ki);
	is_str(ki.desc, "_ses", "session keyring description");
	is_int(ki.perm, 0x3f030000, "session keyring perm");
	is_int(ki.uid, MOUNTER, "session keyring owned by the mounter");
	ok(ki.possessed, "session keyring possessed");
	ops->describe(b, &me, u, &ki);
	is_str(ki.desc, "_uid.4242", "user keyring description");
	is_int(ki.perm, 0x1f3f0000, "user keyring perm");
	ops->describe(b, &me, p, &ki);
	is_int(ki.perm, 0x3f010000, "process keyring perm");
	is_int(ops->find(b, &me, s, "keyring", "_uid.4242", &found), -ENOKEY,
	       "the session keyring starts empty (as keyctl session -)");
	is_int(ops->find(b, &me, us, "keyring", "_uid.4242", &found), 0,
	       "the user-session keyring links the user keyring");
	is_int(ops->special(b, &stranger, KEYFS_SPEC_SESSION, false, &found), 0,
	       "special gives the mounter's keyrings to anyone");
	is_int(found, s, "same session keyring");
	is_int(ops->persistent(b, &me, &found), 0, "persistent keyring");
	ops->describe(b, &me, found, &ki);
	is_str(ki.desc, "_persistent.4242", "persistent keyring description");
	ok(ki.expiry > 0, "persistent keyring expires");
}

static void test_add(struct keyfs_backend *b)
{
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), k, k2, found = 0;
	static char big[KEYFS_BIG_PAYLOAD_MAX + 1];
	struct key_info ki;

	k = add(b, &me, "user", "alpha", "secret", s);
	ok(k > 0, "add a user key");
	ops->describe(b, &me, k, &ki);
	is_int(ki.perm, 0x3f010000, "user key default perm");
	is_int(ki.size, 6, "size is the payload length");
	is_int(ki.uid, MOUNTER, "owned by the caller");
	ok(ki.possessed, "a key in the session keyring is possessed");
	is_str(read_str(b, &me, k), "secret", "read the payload");
	is_int(ops->find(b, &me, s, "user", "alpha", &found), 0, "find by name");
	is_int(found, k, "find gives the key");
	is_int(ops->find(b, &me, s, "user", "beta", &found), -ENOKEY,
	       "find of a missing name: ENOKEY");

	k2 = add(b, &me, "user", "alpha", "other", s);
	is_int(k2, k, "add of an existing name updates the key in place");
	is_str(read_str(b, &me, k), "other", "payload updated");

	k2 = add(b, &me, "logon", "cifs:alice", "pw", s);
	ok(k2 > 0, "add a logon key");
	ops->describe(b, &me, k2, &ki);
	is_int(ki.perm, 0x3d010000, "logon key default perm");
	is_int(ki.size, 0, "logon size is 0");
	is_str(read_str(b, &me, k2), "error -95", "logon read: EOPNOTSUPP");
	is_int(add(b, &me, "logon", "nocolon", "pw", s), -EINVAL,
	       "logon without subtype: EINVAL");
	is_int(add(b, &me, "logon", ":x", "pw", s), -EINVAL,
	       "logon with empty subtype: EINVAL");
	is_int(add(b, &me, "nosuch", "x", "pw", s), -ENODEV,
	       "unknown type: ENODEV");
	is_int(add(b, &me, ".hidden", "x", "pw", s), -EPERM,
	       "dot type: EPERM");
	is_int(add(b, &me, "user", "empty", "", s), -EINVAL,
	       "empty user payload: EINVAL");
	is_int(add(b, &me, "keyring", ".dot", NULL, s), -EPERM,
	       "dot keyring: EPERM");
	is_int(add(b, &me, "keyring", "kr", "data", s), -EINVAL,
	       "keyring with a payload: EINVAL");
	memset(big, 'x', sizeof(big));
	is_int(ops->add(b, &me, "user", "big", big, 32768, s, NULL, &found), -EFBIG,
	       "user payload over 32767: EFBIG");
	is_int(ops->add(b, &me, "big_key", "big", big, 10000, s, NULL, &found), 0,
	       "big_key");
	is_int(ops->add(b, &me, "big_key", "big", big, KEYFS_BIG_PAYLOAD_MAX + 1,
			s, NULL, &found), -EFBIG, "big_key over 1 MiB: EFBIG");
	is_int(ops->add(b, &me, "user", "k", "x", 1, k, NULL, &found), -ENOTDIR,
	       "add into a non-keyring: ENOTDIR");
	is_int(ops->add(b, &me, "user", "k", "x", 1, 12345, NULL, &found), -ENOKEY,
	       "add into a missing keyring: ENOKEY");
	is_int(ops->update(b, &me, k, "new", 3), 0, "update");
	is_str(read_str(b, &me, k), "new", "updated payload");
	k2 = add(b, &me, "keyring", "ring", NULL, s);
	is_int(ops->update(b, &me, k2, "x", 1), -EOPNOTSUPP,
	       "update of a keyring: EOPNOTSUPP");
	is_int(add(b, &me, "keyring", "ring", NULL, s) != k2, 1,
	       "a second keyring of one name is a new key");
	is_int(ops->describe(b, &me, k2, &ki), -ENOKEY,
	       "the displaced keyring, unlinked everywhere, is gone");
}

static void test_links(struct keyfs_backend *b)
{
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), a, c, k, k2, found, *list;
	kserial_t r[9], top;
	struct key_info ki;
	size_t n = 0;
	int i;

	a = add(b, &me, "keyring", "A", NULL, s);
	c = add(b, &me, "keyring", "C", NULL, s);
	k = add(b, &me, "user", "shared", "1", a);
	is_int(ops->link(b, &me, k, c), 0, "link a key into a second keyring");
	ops->describe(b, &me, k, &ki);
	is_int(ki.nlink, 2, "nlink counts both keyrings");
	is_int(ops->link(b, &me, k, c), 0, "linking again changes nothing");
	ops->list(b, &me, c, &list, &n);
	is_int(n, 1, "still one link");
	free(list);
	is_int(ops->link(b, &me, k, k), -ENOTDIR, "link into a key: ENOTDIR");

	k2 = add(b, &me, "user", "dup", "c-version", c);
	found = add(b, &me, "user", "dup", "a-version", a);
	is_int(ops->link(b, &me, found, c), 0, "link a key of a name already in C");
	is_int(ops->find(b, &me, c, "user", "dup", &top), 0, "find dup in C");
	is_int(top, found, "the new link displaced the old key");
	is_int(ops->describe(b, &me, k2, &ki), -ENOKEY,
	       "the displaced key, linked nowhere, is gone");

	is_int(ops->unlink(b, &me, k, c), 0, "unlink");
	is_int(ops->unlink(b, &me, k, c), -ENOENT, "unlink again: ENOENT");
	ops->describe(b, &me, k, &ki);
	is_int(ki.nlink, 1, "nlink back to 1");

	is_int(ops->move(b, &me, k, a, c, 0), 0, "move A -> C");
	is_int(ops->find(b, &me, a, "user", "shared", &top), -ENOKEY,
	       "gone from A");
	is_int(ops->find(b, &me, c, "user", "shared", &top), 0, "now in C");
	is_int(ops->move(b, &me, k, a, c, 0), -ENOENT,
	       "move from a keyring that does not link it: ENOENT");
	is_int(ops->link(b, &me, k, a), 0, "link back into A");
	is_int(ops->move(b, &me, k, a, c, KEYFS_MOVE_EXCL), -EEXIST,
	       "exclusive move onto an existing name: EEXIST");
	is_int(ops->move(b, &me, k, a, c, 0), 0, "non-exclusive move displaces");

	/* cycles */
	found = add(b, &me, "keyring", "B", NULL, a);
	is_int(ops->link(b, &me, a, found), -EDEADLK, "A in B in A: EDEADLK");
	is_int(ops->link(b, &me, a, a), -EDEADLK, "A in A: EDEADLK");
	is_int(ops->link(b, &me, s, a), -EDEADLK, "session in A: EDEADLK");

	/* nesting, as the kernel: @s holds r0, r0 holds r1 ... */
	r[0] = add(b, &me, "keyring", "r0", NULL, s);
	for (i = 1; i < 9; i++) {
		r[i] = add(b, &me, "keyring", "rN", NULL, r[i - 1]);
		if (r[i] < 0)
			break;
	}
	is_int(i, 8, "keyrings more than 7 levels below @s are not possessed");
	is_int(r[8], -EACCES, "so adding to r7: EACCES");
	is_int(ops->link(b, &me, r[0], a), -ELOOP,
	       "linking a keyring nested 7 deep: ELOOP");
	is_int(ops->link(b, &me, r[1], a), 0, "6 deep is allowed");

	/* restriction */
	found = add(b, &me, "keyring", "closed", NULL, s);
	is_int(ops->restrict_keyring(b, &me, found, NULL, NULL), 0, "restrict");
	is_int(ops->restrict_keyring(b, &me, found, NULL, NULL), -EEXIST,
	       "restrict twice: EEXIST");
	is_int(ops->link(b, &me, k, found), -EPERM, "link into restricted: EPERM");
	is_int(add(b, &me, "user", "x", "y", found), -EPERM,
	       "add into restricted: EPERM");
	is_int(ops->restrict_keyring(b, &me, a, "user", NULL), -EINVAL,
	       "restrict to a type without restriction: EINVAL");
	is_int(ops->restrict_keyring(b, &me, a, "user", "foo"), -ENOENT,
	       "restrict with a type offering none: ENOENT");
	is_int(ops->restrict_keyring(b, &me, a, "nosuch", "foo"), -ENOKEY,
	       "restrict to an unknown type: ENOKEY");

	/* clear */
	is_int(ops->clear(b, &me, a), 0, "clear");
	ops->list(b, &me, a, &list, &n);
	is_int(n, 0, "cleared keyring is empty");
	free(list);
	is_int(ops->clear(b, &me, k), -ENOTDIR, "clear a key: ENOTDIR");
}

/* A key linked in many keyrings, then in few, then in many again: its
 * parents' room grows and is reused (types.c's parent_room). */
static void test_many_parents(struct keyfs_backend *b)
{
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), k, rings[16], found;
	struct key_info ki;
	char name[32];
	int bad = 0;

	k = add(b, &me, "user", "many-parents", "v", s);
	for (int i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "mp%d", i);
		rings[i] = add(b, &me, "keyring", name, NULL, s);
	}
	for (int i = 0; i < 9; i++)
		bad += ops->link(b, &me, k, rings[i]) != 0;
	for (int i = 0; i < 8; i++)
		bad += ops->unlink(b, &me, k, rings[i]) != 0;
	bad += ops->unlink(b, &me, k, s) != 0;	/* down to one: rings[8] */
	for (int i = 9; i < 16; i++)
		bad += ops->link(b, &me, k, rings[i]) != 0;
	for (int i = 0; i < 8; i++)
		bad += ops->link(b, &me, k, rings[i]) != 0;
	is_int(bad, 0, "many parents: 9 links, down to 1, up to 16");
	ops->describe(b, &me, k, &ki);
	is_int((int)ki.nlink, 16, "many parents: nlink counts 16");
	for (int i = 0; i < 16; i++)
		bad += ops->find(b, &me, rings[i], "user", "many-parents", &found) != 0 ||
		       found != k;
	is_int(bad, 0, "many parents: found in each");
	for (int i = 0; i < 16; i++)
		bad += ops->unlink(b, &me, k, rings[i]) != 0;
	is_int(bad, 0, "many parents: all unlinked");
	is_int(ops->describe(b, &me, k, &ki), -ENOKEY, "many parents: then freed");
	for (int i = 0; i < 16; i++)
		ops->unlink(b, &me, rings[i], s);
}

static void test_states(struct keyfs_backend *b)
{
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), k, kr, c2, found;
	struct key_info ki;

	k = add(b, &me, "user", "torevoke", "v", s);
	is_int(ops->revoke(b, &me, k), 0, "revoke");
	is_str(read_str(b, &me, k), "error -128", "read revoked: EKEYREVOKED");
	is_int(ops->update(b, &me, k, "x", 1), -EKEYREVOKED,
	       "update revoked: EKEYREVOKED");
	is_int(ops->revoke(b, &me, k), -EKEYREVOKED, "revoke twice: EKEYREVOKED");
	is_int(ops->setperm(b, &me, k, 0x3f3f0000), -EKEYREVOKED,
	       "setperm revoked: EKEYREVOKED");
	is_int(state_of(b, k), KEY_STATE_REVOKED, "described as revoked");
	is_int(ops->find(b, &me, s, "user", "torevoke", &found), 0,
	       "a revoked key is still found by name");
	found = add(b, &me, "user", "torevoke", "fresh", s);
	ok(found > 0 && found != k, "add over a revoked key makes a new one");

	kr = add(b, &me, "keyring", "rk", NULL, s);
	add(b, &me, "user", "inside", "v", kr);
	is_int(ops->revoke(b, &me, kr), 0, "revoke a keyring");
	ops->describe(b, &me, kr, &ki);
	is_int(ki.size, 0, "a revoked keyring is emptied");

	k = add(b, &me, "user", "toexpire", "v", s);
	is_int(ops->set_timeout(b, &me, k, 1), 0, "set a 1 s timeout");
	ops->describe(b, &me, k, &ki);
	ok(ki.expiry > 0, "expiry set");
	sleep(2);
	is_str(read_str(b, &me, k), "error -127", "read expired: EKEYEXPIRED");
	is_int(state_of(b, k), KEY_STATE_EXPIRED, "described as expired");
	is_int(ops->search(b, &me, "user", "toexpire", &found), -ENOKEY,
	       "search skips an expired key");
	found = add(b, &me, "user", "toexpire", "again", s);
	is_int(found, k, "add over an expired key updates it");
	is_str(read_str(b, &me, k), "again", "... and revives it");
	ops->describe(b, &me, k, &ki);
	is_int(ki.expiry, 0, "update cleared the timeout");

	k = add(b, &me, "user", "inv", "v", s);
	c2 = add(b, &me, "keyring", "inv2", NULL, s);
	ops->link(b, &me, k, c2);
	is_int(ops->invalidate(b, &me, k), 0, "invalidate");
	is_int(ops->find(b, &me, s, "user", "inv", &found), -ENOKEY,
	       "invalidated: gone from one keyring");
	is_int(ops->find(b, &me, c2, "user", "inv", &found), -ENOKEY,
	       "... and the other");
	is_int(ops->describe(b, &me, k, &ki), -ENOKEY, "... and by serial");
	is_int(ops->invalidate(b, &me, s), -EPERM,
	       "the session keyring is kept: EPERM");
}

static void test_perms(struct keyfs_backend *b)
{
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), k, open, hidden, found;
	struct key_info ki;

	k = add(b, &me, "user", "mine", "v", s);
	is_int(ops->describe(b, &stranger, k, &ki), -EACCES,
	       "a stranger may not view");
	is_str(read_str(b, &stranger, k), "error -13", "nor read");
	is_int(ops->find(b, &stranger, s, "user", "mine", &found), -EACCES,
	       "nor search the session keyring");
	is_int(ops->setperm(b, &stranger, k, 0x3f3f3f3f), -EACCES,
	       "nor setperm");
	is_int(ops->setperm(b, &me, k, 0x3f000000 | 0x3f), 0,
	       "owner setperm: other gets everything");
	is_int(ops->describe(b, &stranger, k, &ki), 0, "now the stranger views");
	ok(!ki.possessed, "and does not possess it");
	is_str(read_str(b, &stranger, k), "v", "and reads");
	is_int(ops->setperm(b, &stranger, k, 0x3f3f3f3f), -EACCES,
	       "setperm needs ownership too");
	is_int(ops->setperm(b, &me, k, 0x40000000), -EINVAL,
	       "setperm with unknown bits: EINVAL");
	is_int(ops->chown(b, &me, k, STRANGER, (gid_t)-1), -EACCES,
	       "chown to another uid needs root");
	is_int(ops->chown(b, &me, k, (uid_t)-1, 77), -EACCES,
	       "chgrp to a group the caller is not in needs root");
	is_int(ops->chown(b, &me, k, (uid_t)-1, MOUNTER), 0, "chgrp to own group");
	is_int(ops->chown(b, &root, k, STRANGER, (gid_t)-1), 0, "root chowns");
	ops->describe(b, &me, k, &ki);
	is_int(ki.uid, STRANGER, "new owner");

	/* possession: the user class alone of a default key grants view only */
	open = add(b, &me, "keyring", "unreachable", NULL, s);
	hidden = add(b, &me, "user", "h", "payload", open);
	is_str(read_str(b, &me, hidden), "payload", "possessed: readable");
	ops->setperm(b, &me, open, 0x37010000);	/* no possessor search */
	ops->describe(b, &me, hidden, &ki);
	ok(!ki.possessed, "behind an unsearchable keyring: not possessed");
	is_str(read_str(b, &me, hidden), "error -13",
	       "and the user class cannot read it");
	is_int(ops->revoke(b, &stranger, hidden), -EACCES,
	       "revoke needs write or setattr");
	is_int(ops->invalidate(b, &stranger, hidden), -EACCES,
	       "invalidate needs search");
	is_int(ops->link(b, &stranger, hidden, s), -EACCES,
	       "link needs write on the keyring");
}

static void test_quota(struct keyfs_backend *b)
{
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), kr, k = 0;
	struct key_quota q0, q1;
	char desc[32];
	static char big[KEYFS_USER_PAYLOAD_MAX];
	unsigned long added = 0;

	kr = add(b, &me, "keyring", "public", NULL, s);
	ops->setperm(b, &me, kr, 0x3f3f000f);	/* other: view read write search */
	ops->quota(b, &stranger, &q0);
	k = add(b, &stranger, "user", "abc", "12345", kr);
	ok(k > 0, "a stranger adds to a writable keyring");
	ops->quota(b, &stranger, &q1);
	is_int(q1.keys - q0.keys, 1, "one key charged to its owner");
	is_int(q1.bytes - q0.bytes, 4 + 5,
	       "bytes charged: description + NUL + payload");
	memset(big, 'x', sizeof(big));
	if (q1.maxbytes <= KEYFS_USER_PAYLOAD_MAX)
		is_int(ops->add(b, &stranger, "user", "big", big, q1.maxbytes,
				kr, NULL, &k), -EDQUOT, "a payload past maxbytes: EDQUOT");
	else
		ok(1, "# SKIP maxbytes %lu takes any user payload", q1.maxbytes);
	for (;;) {
		snprintf(desc, sizeof(desc), "q%lu", added);
		k = add(b, &stranger, "user", desc, "x", kr);
		if (k < 0)
			break;
		added++;
	}
	is_int(k, -EDQUOT, "keys past the quota: EDQUOT");
	ops->quota(b, &stranger, &q1);
	ok(q1.keys == q1.maxkeys || q1.bytes + 4 > q1.maxbytes,
	   "stopped at a limit (%lu keys, %lu bytes)", q1.keys, q1.bytes);
	is_int(ops->clear(b, &me, kr), 0, "clear frees them");
	ops->quota(b, &stranger, &q1);
	is_int(q1.keys, q0.keys, "quota given back");
	is_int(q1.bytes, q0.bytes, "bytes given back");
}

static int write_callout(char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/callout", tmpdir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "#!/bin/sh\n"
		   "# TYPE DESC INFO UID GID\n"
		   "[ \"$3\" = fail ] && exit 1\n"
		   "[ \"$3\" = big ] && exec head -c 40000 /dev/zero\n"
		   "printf '%%s|%%s|%%s|%%s' \"$2\" \"$3\" \"$4\" \"$5\"\n");
	fclose(f);
	return chmod(path, 0755);
}

/* A requester that gave up (its cancel descriptor readable) ends the
 * callout's wait with EINTR and leaves no key, not even a negative one. */
static void test_request_cancel(struct keyfs_backend *b, kserial_t s)
{
	struct keyfs_cred gave_up = me;
	kserial_t k, found;
	int fds[2];

	if (pipe(fds) < 0 || write(fds[1], "x", 1) != 1) {
		ok(0, "a readable pipe");
		return;
	}
	gave_up.cancel_fd = &fds[0];
	is_int(ops->request(b, &gave_up, "user", "r7", "info", s, &k), -EINTR,
	       "a requester that gave up: EINTR");
	is_int(ops->find(b, &me, s, "user", "r7", &found), -ENOKEY,
	       "no key made, not even a negative one");
	is_int(ops->request(b, &me, "user", "r7", "info", s, &k), 0,
	       "so the next request runs the callout");
	is_int(ops->request(b, &gave_up, "user", "r7", "info", s, &found), 0,
	       "a key found needs no callout: giving up does not matter");
	is_int(found, k, "the same key");
	close(fds[0]);
	close(fds[1]);
}

static void test_request(void)
{
	char callout[256];
	struct keyfs_backend *b;
	kserial_t s, k, k2, found;
	struct key_info ki;

	if (write_callout(callout, sizeof(callout)) < 0) {
		ok(0, "write the callout");
		return;
	}
	b = start(NULL, callout);
	s = spec(b, KEYFS_SPEC_SESSION);
	is_int(ops->request(b, &me, "user", "r1", NULL, s, &k), -ENOKEY,
	       "no key, no callout info: ENOKEY");
	is_int(ops->find(b, &me, s, "user", "r1", &found), -ENOKEY,
	       "and no key made");
	is_int(ops->request(b, &me, "user", "r1", "info", s, &k), 0,
	       "the callout makes the key");
	is_str(read_str(b, &me, k), "r1|info|4242|4242",
	       "payload from the callout's stdout");
	is_int(ops->find(b, &me, s, "user", "r1", &found), 0, "linked in dest");
	is_int(ops->request(b, &me, "user", "r1", "other", s, &k2), 0,
	       "a second request finds it");
	is_int(k2, k, "same key, no callout");
	is_int(ops->search(b, &me, "user", "r1", &found), 0, "search finds it");
	is_int(ops->request(b, &me, "user", "r2", "fail", s, &k), -ENOKEY,
	       "a failing callout: ENOKEY");
	is_int(ops->find(b, &me, s, "user", "r2", &found), 0,
	       "a negative key is linked");
	ops->describe(b, &me, found, &ki);
	is_int(ki.state, KEY_STATE_NEGATIVE, "it is negative");
	ok(ki.expiry > 0, "and expires");
	is_str(read_str(b, &me, found), "error -126", "read: ENOKEY");
	is_int(ops->search(b, &me, "user", "r2", &k), -ENOKEY,
	       "search meets the negative key: ENOKEY");
	is_int(ops->request(b, &me, "user", "r2", "ok", s, &k), -ENOKEY,
	       "the negative key answers a new request");
	k = add(b, &me, "user", "r2", "now", s);
	is_int(k, found, "add_key instantiates the negative key in place");
	is_int(state_of(b, k), KEY_STATE_VALID, "now valid");
	is_int(ops->request(b, &me, "logon", "bad", "x", s, &k), -EINVAL,
	       "request of a bad logon description: EINVAL");
	is_int(ops->request(b, &me, "user", "r5", "big", s, &k), -ENOKEY,
	       "a callout printing more than the type takes: ENOKEY");
	is_int(state_of(b, (ops->find(b, &me, s, "user", "r5", &found), found)),
	       KEY_STATE_NEGATIVE, "with a negative key");
	is_int(ops->search(b, &me, "logon", "bad", &k), -ENOKEY,
	       "search for a bad logon description: ENOKEY");
	is_int(ops->request(b, &me, "keyring", "kr", "x", s, &k), -EPERM,
	       "keyrings are not constructed: EPERM");
	is_int(ops->request(b, &me, "nosuch", "x", "x", s, &k), -ENOKEY,
	       "request of an unknown type: ENOKEY");
	is_int(ops->request(b, &me, "user", "r3", "x", 0, &k), 0,
	       "no destination");
	is_int(ops->find(b, &me, s, "user", "r3", &found), -ENOKEY,
	       "so not linked");
	test_request_cancel(b, s);
	ops->destroy(b);

	b = start(NULL, NULL);
	s = spec(b, KEYFS_SPEC_SESSION);
	is_int(ops->request(b, &me, "user", "r4", "info", s, &k), -ENOKEY,
	       "no program configured: ENOKEY");
	is_int(state_of(b, (ops->find(b, &me, s, "user", "r4", &found), found)),
	       KEY_STATE_NEGATIVE, "with a negative key");
	ops->destroy(b);

	snprintf(callout, sizeof(callout), "%s/no-such-program", tmpdir);
	b = start(NULL, callout);
	s = spec(b, KEYFS_SPEC_SESSION);
	is_int(ops->request(b, &me, "user", "r6", "info", s, &k), -ENOKEY,
	       "a program that cannot run: ENOKEY");
	ops->destroy(b);
	snprintf(callout, sizeof(callout), "%s/callout", tmpdir);
	unlink(callout);
}

/* Does keyring list exactly want[0, n), in that order, and say its size
 * is n links? */
static bool same_links(struct keyfs_backend *b, kserial_t keyring,
		       const kserial_t *want, size_t n)
{
	kserial_t *list = NULL;
	struct key_info ki;
	size_t got = 0;
	bool same;

	if (ops->list(b, &me, keyring, &list, &got) < 0)
		return false;
	same = got == n && (n == 0 || memcmp(list, want, n * sizeof(*list)) == 0);
	free(list);
	return same && ops->describe(b, &me, keyring, &ki) == 0 &&
	       ki.size == n * sizeof(kserial_t);
}

/* Unlinks leave holes in a keyring's link table that later links and
 * lookups step over, and the order survives their squeezing out. */
static void test_unlink_order(struct keyfs_backend *b, const char *name)
{
	enum { N = 150 };	/* the mounter may own 200 keys */
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), kr, found, inner, other;
	kserial_t model[2 * N], keys[N];
	size_t n = 0, i, lost = 0, missing = 0;
	char desc[32];

	kr = add(b, &me, "keyring", name, NULL, s);
	for (i = 0; i < N; i++) {
		snprintf(desc, sizeof(desc), "h%zu", i);
		keys[i] = model[n++] = add(b, &me, "user", desc, "x", kr);
	}
	ok(same_links(b, kr, model, n), "%s: %d links in order", name, N);

	/* Two of three go, from the back, then the front: the holes come to
	 * outnumber the links, which squeezes them out. */
	n = 0;
	for (i = N; i-- > 0;)
		if (i % 3 && ops->unlink(b, &me, keys[i], kr) < 0)
			lost++;
	for (i = 0; i < N; i += 3)
		model[n++] = keys[i];
	is_int(lost, 0, "%s: every unlink done", name);
	ok(same_links(b, kr, model, n), "%s: the rest in their order", name);
	for (i = 0; i < N; i++) {
		snprintf(desc, sizeof(desc), "h%zu", i);
		if ((ops->find(b, &me, kr, "user", desc, &found) == 0) != !(i % 3))
			missing++;
	}
	is_int(missing, 0, "%s: each name found exactly when linked", name);

	/* New links go after the last, displacing ones take the old place. */
	for (i = 0; i < 30; i++) {
		snprintf(desc, sizeof(desc), "new%zu", i);
		model[n++] = add(b, &me, "keyring", desc, NULL, kr);
	}
	found = add(b, &me, "user", "h3", "y", s);
	is_int(ops->link(b, &me, found, kr), 0, "%s: displace h3", name);
	model[1] = found;
	ok(same_links(b, kr, model, n), "%s: appended and displaced in place",
	   name);

	/* A search walks into the keyrings among the links: those left
	 * after unlinks, and one that displaced another of its name. */
	inner = model[n - 1];
	add(b, &me, "user", "deep", "d", inner);
	is_int(ops->search(b, &me, "user", "deep", &found), 0,
	       "%s: a search finds a key in a nested keyring", name);
	ops->unlink(b, &me, model[n - 2], kr);
	is_int(ops->search(b, &me, "user", "deep", &found), 0,
	       "%s: and after another keyring's unlink", name);
	other = add(b, &me, "keyring", "new29", NULL, s);
	is_int(ops->link(b, &me, other, kr), 0,
	       "%s: a keyring displaces the one of its name", name);
	is_int(ops->search(b, &me, "user", "deep", &found), -ENOKEY,
	       "%s: the displaced keyring is not searched", name);
	add(b, &me, "user", "deep2", "d", other);
	is_int(ops->search(b, &me, "user", "deep2", &found), 0,
	       "%s: the one that displaced it is", name);
	is_int(ops->link(b, &me, kr, other), -EDEADLK,
	       "%s: and a cycle through it is seen", name);
	model[n - 1] = other;
	model[n - 2] = model[n - 1];
	n--;
	for (i = 0; i < n; i++)
		ops->unlink(b, &me, model[i], kr);
	ok(same_links(b, kr, model, 0), "%s: emptied", name);
	found = add(b, &me, "user", "again", "z", kr);
	ok(same_links(b, kr, &found, 1), "%s: and used again", name);
}

/* Does every key kr links have, by mring_position, its place in the
 * listing, and a key it does not link nlinks? */
static bool positions_right(struct keyfs_backend *b, kserial_t kr,
			    kserial_t absent)
{
	struct mkey *ring = mem_key_get(b, kr);
	kserial_t *list = NULL;
	size_t n = 0;
	bool right;

	if (!ring || ops->list(b, &me, kr, &list, &n) < 0)
		return false;
	right = mring_position(ring, mem_key_get(b, absent)) == n;
	for (size_t i = 0; i < n && right; i++)
		right = mring_position(ring, mem_key_get(b, list[i])) == i;
	free(list);
	return right;
}

/* The positions a store's journal records: through unlinks in the middle
 * (holes), at the end (the slots past it are no holes), squeezes, a
 * growing table and displacements, each position is the listing's. */
static void test_positions(struct keyfs_backend *b)
{
	enum { N = 120 };
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), kr, other, aux, keys[N];
	bool linked[N] = { false };
	unsigned seed = 7, wrong = 0, steps = 0;
	char desc[32];

	kr = add(b, &me, "keyring", "positions", NULL, s);
	other = add(b, &me, "user", "elsewhere", "x", s);
	for (size_t i = 0; i < N; i++) {
		snprintf(desc, sizeof(desc), "p%zu", i);
		keys[i] = add(b, &me, "user", desc, "x", s);
	}
	for (int round = 0; round < 1500; round++) {
		size_t i;

		seed = seed * 1103515245 + 12345;
		i = (seed >> 8) % N;
		if (linked[i] && ops->unlink(b, &me, keys[i], kr) == 0)
			linked[i] = false;
		else if (!linked[i] && ops->link(b, &me, keys[i], kr) == 0)
			linked[i] = true;
		if (round % 7 == 0) {
			steps++;
			wrong += !positions_right(b, kr, other);
		}
	}
	is_int(wrong, 0, "positions agree with the listing at %u checks of 1500 random links and unlinks", steps);
	/* from the end back: every slot past the end given up */
	for (size_t i = N; i-- > 0;)
		if (linked[i] && i % 2)
			ops->unlink(b, &me, keys[i], kr);
	ok(positions_right(b, kr, other), "and after unlinks from the end");
	/* a key of p0's name made elsewhere takes p0's place in kr */
	if (!linked[0])
		ops->link(b, &me, keys[0], kr);
	aux = add(b, &me, "keyring", "aux", NULL, s);
	other = add(b, &me, "user", "p0", "y", aux);
	is_int(ops->link(b, &me, other, kr), 0, "link a key of p0's name");
	ok(positions_right(b, kr, keys[0]), "and after a displacement in place");
}

/* Do the keyrings of kr, and only those, hold what a search and a cycle
 * check walk into, and does kr's link count say how many there are?
 * Keyring i of rings holds the user key "in<i>"; live[i]: still linked. */
static bool rings_walked(struct keyfs_backend *b, kserial_t kr,
			 const kserial_t *rings, const bool *live, size_t n)
{
	struct key_info ki;
	unsigned nlive = 0;
	kserial_t found, inner;
	char desc[32];

	for (size_t i = 0; i < n; i++) {
		snprintf(desc, sizeof(desc), "in%zu", i);
		if ((ops->search(b, &me, "user", desc, &found) == 0) != live[i])
			return false;
		nlive += live[i];
	}
	if (ops->describe(b, &me, kr, &ki) < 0 || ki.nlink != 2 + nlive)
		return false;
	/* linking kr below a keyring of its own is a cycle through rings */
	for (size_t i = n; i-- > 0;)
		if (live[i]) {
			inner = add(b, &me, "keyring", "below", NULL, rings[i]);
			return inner > 0 &&
			       ops->link(b, &me, kr, inner) == -EDEADLK &&
			       ops->unlink(b, &me, inner, rings[i]) == 0;
		}
	return true;
}

/* A keyring's keyrings among its other links: unlinking them from the
 * back, the front and the middle (holes, then squeezes), displacing one
 * and appending after, keep searches, cycle checks and the link count
 * right. */
static void test_ring_places(struct keyfs_backend *b)
{
	enum { N = 80 };	/* keyrings, each with a key: within 200 keys */
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), kr, found, rings[N + 4], plain[N / 4];
	bool live[N + 4] = { false };
	size_t i, n = N, lost = 0;
	char desc[32];

	kr = add(b, &me, "keyring", "places", NULL, s);
	for (i = 0; i < N; i++) {
		snprintf(desc, sizeof(desc), "ring%zu", i);
		rings[i] = add(b, &me, "keyring", desc, NULL, kr);
		snprintf(desc, sizeof(desc), "in%zu", i);
		live[i] = add(b, &me, "user", desc, "x", rings[i]) > 0;
		if (i % 4 == 0) {
			snprintf(desc, sizeof(desc), "plain%zu", i);
			plain[i / 4] = add(b, &me, "user", desc, "x", kr);
		}
	}
	ok(rings_walked(b, kr, rings, live, n), "places: %d keyrings walked", N);

	/* the last ones: the tail goes */
	for (i = N - 5; i < N; i++) {
		lost += ops->unlink(b, &me, rings[i], kr) < 0;
		live[i] = false;
	}
	ok(rings_walked(b, kr, rings, live, n), "places: the last five unlinked");
	/* every other one and the first ten: holes, then a squeeze of the
	 * keyrings' places (not yet of the links) */
	for (i = 0; i < N - 5; i++)
		if (i % 2 == 0 || i < 10) {
			lost += ops->unlink(b, &me, rings[i], kr) < 0;
			live[i] = false;
		}
	ok(rings_walked(b, kr, rings, live, n), "places: every other one unlinked");
	/* the plain keys and most keyrings: the holes outnumber the links,
	 * which squeezes links and places the keyrings anew */
	for (i = 0; i < N / 4; i++)
		if (ops->unlink(b, &me, plain[i], kr) < 0)
			lost++;
	for (i = 11; i < N - 20; i += 2) {
		lost += ops->unlink(b, &me, rings[i], kr) < 0;
		live[i] = false;
	}
	is_int(lost, 0, "places: every unlink done");
	ok(rings_walked(b, kr, rings, live, n), "places: squeezed");

	/* a keyring of a linked one's name displaces it in place */
	i = N - 7;
	snprintf(desc, sizeof(desc), "ring%zu", i);
	rings[i] = add(b, &me, "keyring", desc, NULL, kr);
	snprintf(desc, sizeof(desc), "in%zu", i);
	ok(rings[i] > 0 && ops->search(b, &me, "user", desc, &found) == -ENOKEY,
	   "places: the displaced one is not walked");
	live[i] = add(b, &me, "user", desc, "x", rings[i]) > 0;
	ok(rings_walked(b, kr, rings, live, n),
	   "places: the one that displaced it is");
	/* appended after the tail went */
	for (; n < N + 4; n++) {
		snprintf(desc, sizeof(desc), "ring%zu", n);
		rings[n] = add(b, &me, "keyring", desc, NULL, kr);
		snprintf(desc, sizeof(desc), "in%zu", n);
		live[n] = add(b, &me, "user", desc, "x", rings[n]) > 0;
	}
	ok(rings_walked(b, kr, rings, live, n), "places: appended after");
	ops->clear(b, &me, kr);
	for (i = 0; i < n; i++)
		live[i] = false;
	ok(rings_walked(b, kr, rings, live, n), "places: cleared");
}

/* A directory of its own under tmpdir for a store: dir and its store. */
static void store_paths(const char *name, char dir[256], char store[300])
{
	snprintf(dir, 256, "%s/%s", tmpdir, name);
	snprintf(store, 300, "%s/keys.json", dir);
	mkdir(dir, 0700);
}

static void test_store(void)
{
	char dir[256], store[300];
	struct keyfs_backend *b;
	kserial_t s, k, kr, found, s2;
	struct key_info ki;

	store_paths("store", dir, store);
	b = start(store, NULL);
	ok(b != NULL, "start with a new store");
	if (!b)
		return;
	s = spec(b, KEYFS_SPEC_SESSION);
	kr = add(b, &me, "keyring", "ring", NULL, s);
	k = add(b, &me, "user", "kept", "payload", kr);
	ops->set_timeout(b, &me, k, 3600);
	ops->setperm(b, &me, k, 0x3f0b0000);
	ops->restrict_keyring(b, &me, kr, NULL, NULL);
	ops->destroy(b);

	b = start(store, NULL);
	ok(b != NULL, "restart from the store");
	if (!b)
		return;
	s2 = spec(b, KEYFS_SPEC_SESSION);
	is_int(s2, s, "same session keyring");
	is_int(ops->find(b, &me, s, "keyring", "ring", &found), 0, "keyring kept");
	is_int(found, kr, "same serial");
	is_int(ops->find(b, &me, kr, "user", "kept", &found), 0, "key kept");
	is_str(read_str(b, &me, found), "payload", "payload kept");
	ops->describe(b, &me, found, &ki);
	is_int(ki.perm, 0x3f0b0000, "perm kept");
	ok(ki.expiry > 0, "expiry kept");
	is_int(ops->link(b, &me, s, kr), -EPERM, "restriction kept");

	/* a save that fails undoes the change: the store's files and
	 * directory are gone */
	{
		char journal[4096];

		snprintf(journal, sizeof(journal), "%s.journal", store);
		unlink(journal);
	}
	unlink(store);
	rmdir(dir);
	is_int(add(b, &me, "user", "lost", "x", s), -ENOENT,
	       "a change that cannot be saved fails with the save's error");
	is_int(ops->find(b, &me, s, "user", "lost", &found), -ENOKEY,
	       "and is undone");
	is_int(ops->find(b, &me, kr, "user", "kept", &found), 0,
	       "the rest is still there");
	ops->destroy(b);
}

/* The same with a store: what a save writes, a failed save puts back, and
 * a restart loads, is the order the keyring had. */
static void test_store_order(void)
{
	char dir[256], store[300], journal[320];
	struct keyfs_backend *b;
	kserial_t s, kr, *before = NULL, *after = NULL, k[6];
	size_t nb = 0, na = 0;

	store_paths("order", dir, store);
	snprintf(journal, sizeof(journal), "%s.journal", store);
	b = start(store, NULL);
	ok(b != NULL, "start with a store for the order tests");
	if (!b)
		return;
	test_unlink_order(b, "holes-store");
	s = spec(b, KEYFS_SPEC_SESSION);
	kr = add(b, &me, "keyring", "ordered", NULL, s);
	for (int i = 0; i < 6; i++) {
		char desc[16];

		snprintf(desc, sizeof(desc), "o%d", i);
		k[i] = add(b, &me, "user", desc, "x", kr);
	}
	ops->unlink(b, &me, k[1], kr);
	ops->unlink(b, &me, k[4], kr);
	ops->list(b, &me, kr, &before, &nb);
	ops->destroy(b);

	b = start(store, NULL);
	ok(b != NULL, "restart");
	if (!b) {
		free(before);
		return;
	}
	ops->list(b, &me, kr, &after, &na);
	ok(na == nb && memcmp(after, before, nb * sizeof(*after)) == 0,
	   "a restart keeps the order left by the unlinks");
	free(after);

	/* A batch that unlinks and links, then cannot be saved, is undone
	 * to the order it started from. */
	ops->batch_begin(b);
	ops->unlink(b, &me, k[0], kr);
	ops->unlink(b, &me, k[3], kr);
	add(b, &me, "user", "late", "x", kr);
	ops->unlink(b, &me, k[5], kr);
	unlink(journal);
	unlink(store);
	rmdir(dir);
	ok(ops->batch_end(b) < 0, "the batch's save fails");
	ops->list(b, &me, kr, &after, &na);
	ok(na == nb && memcmp(after, before, nb * sizeof(*after)) == 0,
	   "and its unlinks are undone in place");
	free(after);
	free(before);
	ops->destroy(b);
}

static void test_text(struct keyfs_backend *b)
{
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), k;
	char *text = NULL, line[128];

	k = add(b, &me, "user", "shown", "12345", s);
	ops->set_timeout(b, &me, k, 100);
	is_int(ops->proc_keys(b, &me, &text), 0, "proc_keys");
	snprintf(line, sizeof(line), "%08x I--Q---     1   1m 3f010000  4242  4242 user      shown: 5\n",
		 (unsigned)k);
	ok(text && strstr(text, line), "a /proc/keys line");
	free(text);
	is_int(ops->proc_keys(b, &stranger, &text), 0, "proc_keys as a stranger");
	ok(text && !strstr(text, "shown"), "shows only what the caller may view");
	free(text);
	is_int(ops->proc_key_users(b, &me, &text), 0, "proc_key_users");
	ok(text && strstr(text, " 4242: "), "a /proc/key-users line");
	free(text);
	is_int(ops->supports(b, &text), 0, "supports");
	ok(text && strstr(text, "have_big_key_type=1\n") &&
	   strstr(text, "have_notify=0\n"), "supports lines");
	free(text);
	is_int(ops->security(b, &me, k, &text), 0, "security");
	is_str(text, "", "no LSM: empty label");
	free(text);
}

/* type_info gives each type's facts, and a new key gets the perm it names. */
static void test_type_info(struct keyfs_backend *b)
{
	static const struct {
		const char *type;
		size_t max;
		uint32_t perm;
		bool readable;
	} want[] = {
		{ "user", KEYFS_USER_PAYLOAD_MAX, 0x3f010000, true },
		{ "logon", KEYFS_USER_PAYLOAD_MAX, 0x3d010000, false },
		{ "big_key", KEYFS_BIG_PAYLOAD_MAX, 0x3f010000, true },
		{ "keyring", 0, 0x3f010000, true },
	};
	kserial_t s = spec(b, KEYFS_SPEC_SESSION);
	struct key_type_info ti;
	struct key_info ki;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *t = want[i].type;
		bool keyring = want[i].max == 0;
		kserial_t k;

		memset(&ti, 0, sizeof(ti));
		is_int(ops->type_info(b, t, &ti), 0, "type_info %s", t);
		ok(ti.max_payload == want[i].max, "%s: payload limit", t);
		is_int((long)ti.default_perm, (long)want[i].perm, "%s: default perm", t);
		ok(ti.readable == want[i].readable, "%s: readable", t);
		is_int(ops->add(b, &me, t, keyring ? "ti-ring" : "ti:key",
				keyring ? NULL : "x", keyring ? 0 : 1, s, NULL, &k),
		       0, "%s: add", t);
		is_int(ops->describe(b, &me, k, &ki), 0, "%s: describe", t);
		is_int((long)ki.perm, (long)ti.default_perm,
		       "%s: a new key gets the default perm", t);
	}
	is_int(ops->type_info(b, "nosuch", &ti), -ENODEV, "type_info: unknown type");
	is_int(ops->type_info(b, ".ceph", &ti), -EPERM, "type_info: the kernel's own");
}

/* The queue's shape: no entry due before its parent, each key at the
 * place it knows. */
static bool gcq_sound(const struct keyfs_backend *b)
{
	for (size_t i = 0; i < b->ngcq; i++)
		if ((i > 0 && b->gcq[(i - 1) / 2].due > b->gcq[i].due) ||
		    b->gcq[i].k->gc_slot != i + 1)
			return false;
	return true;
}

/* The short timeout of the gc test.  Expiry is kept in whole seconds
 * (time(2)), so a 1 s timeout set late in a second is due a moment later,
 * and the checks that nothing is taken before its time failed whenever
 * the setup crossed a second (seen on the sanitizer build); 2 leaves at
 * least a second. */
#define GC_SOON 2

/* The gc takes every key that is due, whatever order the timeouts were
 * set or moved in, and none before its time (gcq.c's queue). */
static void test_gc_queue(void)
{
	struct keyfs_backend *b = start(NULL, NULL);
	kserial_t s, a, late, moved_late, moved_early, cleared, revoked, gone, updated;
	kserial_t many[120];
	bool timed[120] = { false };
	unsigned queued = 3;	/* late, moved_late, the persistent keyring */
	struct key_info ki;
	unsigned x = 12345, wrong = 0;
	size_t before;
	char name[32];

	if (!b)
		return;
	b->gc_delay = 0;
	s = spec(b, KEYFS_SPEC_SESSION);
	a = add(b, &me, "user", "gc-a", "v", s);
	late = add(b, &me, "user", "gc-late", "v", s);
	moved_late = add(b, &me, "user", "gc-moved-late", "v", s);
	moved_early = add(b, &me, "user", "gc-moved-early", "v", s);
	cleared = add(b, &me, "user", "gc-cleared", "v", s);
	revoked = add(b, &me, "user", "gc-revoked", "v", s);
	gone = add(b, &me, "user", "gc-gone", "v", s);
	updated = add(b, &me, "user", "gc-updated", "v", s);
	ops->set_timeout(b, &me, updated, GC_SOON);
	ops->update(b, &me, updated, "w", 1);	/* clears the timeout */
	ops->set_timeout(b, &me, late, 100);
	ops->set_timeout(b, &me, a, GC_SOON);
	ops->set_timeout(b, &me, moved_late, GC_SOON);
	ops->set_timeout(b, &me, moved_early, 100);
	ops->set_timeout(b, &me, cleared, GC_SOON);
	ops->set_timeout(b, &me, gone, GC_SOON);
	/* keys with timeouts of GC_SOON and 100 s, set in a shuffled order, some
	 * moved once more: each move lands anywhere in the queue */
	for (int i = 0; i < 120; i++) {	/* within the user's 200 keys */
		snprintf(name, sizeof(name), "gc-%d", i);
		many[i] = add(b, &me, "user", name, "v", s);
	}
	for (int n = 0; n < 600; n++) {
		int i;

		x = x * 1103515245u + 12345u;
		i = (int)((x >> 8) % 120);
		ops->set_timeout(b, &me, many[i], i % 2 ? 100 : n % 2 ? 100 : GC_SOON);
		timed[i] = true;
		if (n % 7 == 3) {	/* an expiry out of order, and one cleared */
			ops->set_timeout(b, &me, many[(i + 1) % 120], (unsigned)(x >> 20) % 50 + 30);
			timed[(i + 1) % 120] = true;
		}
		if (n % 11 == 5 && !(i % 2))
			ops->set_timeout(b, &me, many[i], 0);
		if (!gcq_sound(b))
			wrong++;
	}
	for (int i = 0; i < 120; i += 2)
		ops->set_timeout(b, &me, many[i], GC_SOON);
	for (int i = 1; i < 120; i += 2)
		queued += timed[i];
	ops->set_timeout(b, &me, moved_late, 100);
	ops->set_timeout(b, &me, moved_early, GC_SOON);
	ops->set_timeout(b, &me, cleared, 0);
	before = b->ngcq;
	ops->unlink(b, &me, gone, s);	/* freed: out of the queue at once */
	is_int((int)b->ngcq, (int)before - 1, "gc: a freed key leaves the queue");
	ops->revoke(b, &me, revoked);
	is_int((int)wrong, 0, "gc: the queue keeps its order through every change");
	ok(gcq_sound(b), "gc: and after an unlink, a revoke and a cleared timeout");
	is_int(ops->describe(b, &me, a, &ki), 0, "gc: nothing taken before its time");
	sleep(GC_SOON + 1);
	add(b, &me, "user", "gc-trigger", "v", s);	/* an op: the gc runs */
	is_int(ops->describe(b, &me, a, &ki), -ENOKEY, "gc: an expired key is taken");
	is_int(ops->describe(b, &me, moved_early, &ki), -ENOKEY,
	       "gc: so is one whose timeout was moved earlier");
	is_int(ops->describe(b, &me, revoked, &ki), -ENOKEY,
	       "gc: and a revoked one (gc_delay 0)");
	is_int(ops->describe(b, &me, late, &ki), 0, "gc: a key not yet due stays");
	is_int(ops->describe(b, &me, moved_late, &ki), 0,
	       "gc: so does one whose timeout was moved later");
	is_int(ops->describe(b, &me, cleared, &ki), 0,
	       "gc: and one whose timeout was cleared");
	is_int(ops->describe(b, &me, updated, &ki), 0,
	       "gc: or cleared by an update");
	for (int i = 0; i < 120; i++)
		if (many[i] <= 0 ||
		    (ops->describe(b, &me, many[i], &ki) == -ENOKEY) != (i % 2 == 0))
			wrong++;
	is_int((int)wrong, 0, "gc: of 120 keys moved about, exactly the due ones are taken");
	is_int((int)b->ngcq, (int)queued, "gc: the queue holds just the keys still to expire");
	ok(gcq_sound(b), "gc: in order after the gc");
	ops->destroy(b);
}

/* add with a perm: the maker gives it at once, even one that will not
 * possess the key and so could not setperm it after. */
static void test_add_perm(struct keyfs_backend *b)
{
	kserial_t s = spec(b, KEYFS_SPEC_SESSION), ring, k, k2 = 0, found;
	uint32_t perm = 0x3f370000, bad = 0x40000000;
	struct key_info ki;

	ring = add(b, &me, "keyring", "open-ring", NULL, s);
	ops->setperm(b, &me, ring, 0x3f3f0f0f);
	is_int(ops->add(b, &stranger, "user", "sk", "v", 1, ring, &bad, &k),
	       -EINVAL, "add with unknown perm bits: EINVAL");
	is_int(ops->add(b, &stranger, "user", "sk", "v", 1, ring, &perm, &k),
	       0, "a stranger adds with a perm");
	is_int(ops->describe(b, &stranger, k, &ki), 0, "and views its key");
	is_int(ki.perm, 0x3f370000, "which has the perm");
	is_int(ki.uid, STRANGER, "and the stranger's uid");
	is_str(read_str(b, &stranger, k), "v", "the stranger reads it back");
	is_int(ops->setperm(b, &stranger, k, 0x3f3f0000), 0,
	       "and may setperm it");
	perm = 0x3f370202;
	is_int(ops->add(b, &stranger, "user", "sk", "w", 1, ring, &perm, &k2),
	       0, "a second add with a perm");
	is_int(k2, k, "updates the key it finds, as add_key does");
	ops->describe(b, &stranger, k, &ki);
	is_int(ki.perm, 0x3f3f0000, "which keeps its own perm");
	is_str(read_str(b, &stranger, k), "w", "and takes the payload");
	perm = 0x2f370000;
	is_int(ops->add(b, &stranger, "user", "sk2", "v", 1, ring, &perm, &k),
	       -EINVAL, "a perm without the possessor's link: EINVAL");
	is_int(ops->find(b, &me, ring, "user", "sk2", &found), -ENOKEY,
	       "and nothing made");
}

int main(void)
{
	struct keyfs_backend *b;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	b = start(NULL, NULL);
	ok(b != NULL, "init without a store");
	if (b) {
		test_specials(b);
		test_add(b);
		test_links(b);
		test_many_parents(b);
		test_states(b);
		test_perms(b);
		test_add_perm(b);
		test_quota(b);
		test_text(b);
		test_type_info(b);
		ops->destroy(b);
	}
	b = start(NULL, NULL);
	if (b) {
		test_unlink_order(b, "holes");
		ops->destroy(b);
	}
	b = start(NULL, NULL);
	if (b) {
		test_ring_places(b);
		ops->destroy(b);
	}
	b = start(NULL, NULL);
	if (b) {
		test_positions(b);
		ops->destroy(b);
	}
	test_gc_queue();
	test_request();
	test_store();
	test_store_order();
	rmdir(tmpdir);
	return done_testing();
}
