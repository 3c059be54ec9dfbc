/* test-perm.c: unit tests of perm.c against the kernel's key_task_permission() rules. */
#include <errno.h>

#include "perm.h"
#include "tap.h"

#define V KEYFS_PERM_VIEW
#define R KEYFS_PERM_READ
#define W KEYFS_PERM_WRITE
#define S KEYFS_PERM_SEARCH
#define L KEYFS_PERM_LINK
#define A KEYFS_PERM_SETATTR

#define POS(b)	((uint32_t)(b) << KEYFS_POS_SHIFT)
#define USR(b)	((uint32_t)(b) << KEYFS_USR_SHIFT)
#define GRP(b)	((uint32_t)(b) << KEYFS_GRP_SHIFT)
#define OTH(b)	((uint32_t)(b) << KEYFS_OTH_SHIFT)

static void test_classes(void)
{
	static const gid_t groups[] = { 50, 60 };
	struct keyfs_cred alice = { .uid = 1000, .gid = 100 };
	struct keyfs_cred bob = { .uid = 1001, .gid = 100 };
	struct keyfs_cred carol = { .uid = 1002, .gid = 200,
				    .groups = groups, .ngroups = 2 };
	struct keyfs_cred dave = { .uid = 1003, .gid = 300 };
	uint32_t perm = USR(V | R | W) | GRP(V | R) | OTH(V);

	/* owner: the user class, whatever group and other say */
	is_int(perm_granted(&alice, 1000, 100, perm, false), V | R | W,
	       "owner gets the user class");
	is_int(perm_check(&alice, 1000, 100, perm, false, W), 0, "owner may write");
	is_int(perm_check(&alice, 1000, 100, USR(V) | OTH(V | R), false, R),
	       -EACCES, "owner does not fall through to a richer other class");
	is_int(perm_check(&alice, 1000, 100, USR(V) | GRP(V | R), false, R),
	       -EACCES, "owner does not fall through to a richer group class");

	/* group through fsgid */
	is_int(perm_granted(&bob, 1000, 100, perm, false), V | R,
	       "fsgid match gets the group class");
	is_int(perm_check(&bob, 1000, 100, perm, false, W), -EACCES,
	       "group class does not grant write");

	/* group through a supplementary group */
	is_int(perm_granted(&carol, 1000, 60, perm, false), V | R,
	       "supplementary group gets the group class");
	is_int(perm_granted(&carol, 1000, 70, perm, false), V,
	       "no group in common: other class");

	/* group class of all zero bits is skipped, as the kernel does */
	is_int(perm_granted(&bob, 1000, 100, USR(0x3f) | OTH(V | R), false),
	       V | R, "empty group class falls through to other");
	is_int(perm_granted(&bob, 1000, 100, USR(0x3f) | GRP(V) | OTH(V | R), false),
	       V, "non-empty group class wins over a richer other class");
	is_int(perm_granted(&bob, 1000, (gid_t)-1, GRP(0x3f) | OTH(V), false),
	       V, "key without a valid group never matches the group class");

	/* other */
	is_int(perm_granted(&dave, 1000, 100, perm, false), V, "stranger gets other");
	is_int(perm_check(&dave, 1000, 100, perm, false, R), -EACCES,
	       "stranger may not read");
	is_int(perm_check(&dave, 1000, 100, perm, false, 0), 0,
	       "wanting nothing always succeeds");
}

static void test_possessor(void)
{
	struct keyfs_cred alice = { .uid = 1000, .gid = 100 };
	struct keyfs_cred dave = { .uid = 1003, .gid = 300 };
	uint32_t user_key = 0x3f010000;		/* add_key's default for user */

	is_int(perm_check(&alice, 1000, 100, user_key, false, R), -EACCES,
	       "owner alone may not read a default user key");
	is_int(perm_check(&alice, 1000, 100, user_key, true, R), 0,
	       "possessor bits are added");
	is_int(perm_granted(&alice, 1000, 100, user_key, true), 0x3f,
	       "possessor and user classes are OR-ed");
	is_int(perm_granted(&dave, 1000, 100, POS(R) | OTH(V), true), V | R,
	       "possessor is added to the other class too");
	is_int(perm_granted(&alice, 1000, 100, POS(R) | USR(V), false), V,
	       "possessor bits ignored when not possessed");
}

static void test_want(void)
{
	struct keyfs_cred alice = { .uid = 1000, .gid = 100 };
	uint32_t perm = USR(V | R | S);

	is_int(perm_check(&alice, 1000, 100, perm, false, V | R), 0,
	       "all of several wanted bits granted");
	is_int(perm_check(&alice, 1000, 100, perm, false, R | W), -EACCES,
	       "one of several wanted bits missing");
	is_int(perm_check(&alice, 1000, 100, perm, false, V | R | S), 0,
	       "exactly the granted bits");
	is_int(perm_check(&alice, 1000, 100, 0xffffffffu, false, L | A), 0,
	       "bits above setattr in perm are ignored");
}

static void test_mode(void)
{
	is_int(perm_to_mode(0x3f010000), 0700, "user key shows 0700");
	is_int(perm_to_mode(0x3d010000), 0300, "logon key: no read for anyone, owner wx");
	is_int(perm_to_mode(0x01020000), 0400, "user class read alone shows r");
	is_int(perm_to_mode(0x3f3f0b01), 0750, "group rs shows r-x, other view shows nothing");
	is_int(perm_to_mode(0x00000006), 0006, "other rw");
	is_int(perm_to_mode(0x08000000), 0100, "possessor search shows owner x");

	is_int(perm_from_mode(0x3f010000, 0640), 0x3f070200,
	       "chmod 640 sets rw for possessor and user, r for group");
	is_int(perm_from_mode(0x3f3f3f3f, 0000), 0x39313131,
	       "chmod 000 keeps view, link, setattr and the possessor's search");
	is_int(perm_from_mode(0x3f010000, 0600), 0x3f070000,
	       "chmod 600 keeps the key possessed and its possessor's setattr");
	is_int(perm_from_mode(0x37010000, 0700), 0x3f0f0000,
	       "owner x adds the possessor's search");
	is_int(perm_from_mode(0x3f030000, 0755), 0x3f0f0a0a,
	       "x is search for user, group and other");
	is_int(perm_from_mode(0x00000000, 0777), 0x0e0e0e0e,
	       "chmod 777 adds read, write, search only");
	is_int(perm_to_mode(perm_from_mode(0x3f010000, 0751)), 0751,
	       "mode round-trips through perm");
	is_int(perm_from_mode(0x3f010000, 0700) & 0x31313131, 0x31010000,
	       "view, link and setattr survive chmod");

	is_int(perm_owner_as_possessor(0x3f010000), 0x3f3f0000,
	       "the owner class takes the possessor's share");
	is_int(perm_owner_as_possessor(0x3d010203), 0x3d3d0203,
	       "group and other stay as they were");
	is_int(perm_from_mode(perm_owner_as_possessor(0x3f010000), 0600),
	       0x3f370000, "and chmod 600 keeps its view, link and setattr");
}

/* keyctl_setperm_key() and keyctl_chown_key() after the setattr check. */
static void test_owner_rules(void)
{
	static const gid_t groups[] = { 50 };
	struct keyfs_cred alice = { .uid = 1000, .gid = 100,
				    .groups = groups, .ngroups = 1 };
	struct keyfs_cred root = { .uid = 0, .gid = 0 };

	is_int(perm_setperm_allowed(&alice, 1000, false), 0, "owner may setperm");
	is_int(perm_setperm_allowed(&alice, 1001, false), -EACCES,
	       "another user's key: no setperm");
	is_int(perm_setperm_allowed(&root, 1001, true), 0,
	       "privileged may setperm any key");
	is_int(perm_chown_allowed(&alice, 1001, 100, 1000, (gid_t)-1, false), -EACCES,
	       "no taking someone's key");
	is_int(perm_chown_allowed(&alice, 1000, 100, 1001, (gid_t)-1, false), -EACCES,
	       "no giving one's key away");
	is_int(perm_chown_allowed(&alice, 1000, 100, 1000, 50, false), 0,
	       "the gid may become one of the caller's groups");
	is_int(perm_chown_allowed(&alice, 1000, 100, (uid_t)-1, 60, false), -EACCES,
	       "but not a group the caller is not in");
	is_int(perm_chown_allowed(&alice, 1000, 60, (uid_t)-1, 60, false), 0,
	       "keeping the gid it has is no change");
	is_int(perm_chown_allowed(&root, 1000, 100, 1001, 60, true), 0,
	       "privileged may give any key to anyone");
}

int main(void)
{
	test_classes();
	test_possessor();
	test_want();
	test_mode();
	test_owner_rules();
	return done_testing();
}
