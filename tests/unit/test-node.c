/* test-node.c: TAP tests of the node table (src/fuse/node.c): lookup counts of key inodes, and keyrings' places. */
#include <stdint.h>
#include <stdlib.h>

#include "node.h"
#include "tap.h"

#define NKEYS 20000

/* A serial-like inode number for key i: spread, never 0, some past 2^31
 * as INO_SERIAL1 is. */
static uint64_t ino_of(size_t i)
{
	return i == 7 ? INO_SERIAL1 : (uint64_t)(i * 2654435761u % 2147483647u) + 1;
}

/* Every count as expected: want[i] references to ino_of(i). */
static int counts_are(struct node_table *t, const uint64_t *want)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (node_key_nlookup(t, ino_of(i)) != want[i])
			return 0;
	return 1;
}

static void count_place(uint64_t ino, void *arg)
{
	(void)ino;
	(*(int *)arg)++;
}

static int places_of(struct node_table *t, kserial_t serial)
{
	int n = 0;

	node_for_each_place(t, serial, count_place, &n);
	return n;
}

/* A keyring is one directory inode per directory the kernel holds it in
 * (node_place). */
static void test_places(void)
{
	struct node_table *t = node_table_new();
	const uint64_t own = 5000, by_id = INO_BYID, ses = 77, other = 88;
	uint64_t ino, again;
	int all = 1;

	ok(node_place(t, 5000, own, ses) == own, "a keyring's first place is its own inode");
	ok(node_place(t, 5000, own, by_id) == own,
	   "which moves while the kernel holds it nowhere (a reply that never reached it)");
	ok(node_place(t, 5000, own, ses) == own, "and back");
	node_key_ref(t, own);
	ino = node_place(t, 5000, own, by_id);
	ok(ino >= INO_DYN_FIRST && ino != own, "held under session, under by-id it is another inode");
	ok(node_place(t, 5000, own, by_id) == ino, "the same one each time");
	ok(node_place(t, 5000, own, ses) == own, "under session it stays its own");
	again = node_place(t, 5000, own, other);
	ok(again != ino && again != own && again >= INO_DYN_FIRST, "a third place, a third inode");
	is_int(places_of(t, 5000), 3, "three places");
	node_key_ref(t, ino);
	node_key_ref(t, ino);
	node_forget(t, ino, 2);
	ok(node_get(t, ino) == NULL, "a place goes with the kernel's last reference");
	is_int(places_of(t, 5000), 2, "two left");
	node_forget(t, own, 1);
	ok(node_get(t, own) == NULL && places_of(t, 5000) == 1, "the own inode's too");
	ok(node_place(t, 5000, own, by_id) == own, "then the own inode goes to the next place asked");
	node_key_ref(t, own);
	node_place_moved(t, 5000, by_id, ses);
	ok(node_place(t, 5000, own, ses) == own, "a rename moves a place");
	ok(node_place(t, 5000, own, by_id) != own, "out of where it was");

	ok(node_place(t, 6000, INO_ROOT, by_id) != INO_ROOT, "the mount root is nobody's child");
	node_key_ref(t, 7000);
	ok(node_place(t, 7000, 7000, ses) != 7000,
	   "an own inode the kernel holds somewhere unrecorded is not given again");
	node_forget(t, 7000, 1);
	node_key_ref(t, 7100);
	node_renamed(t, 7100, 7100, 7200, true);	/* 7100 becomes an alias */
	ino = node_place(t, 7100, 7100, ses);
	ok(ino != 7100 && node_get(t, 7100)->kind == NODE_ALIAS,
	   "nor one an alias holds (a serial the kernel gave again)");

	for (kserial_t s = 1; s <= 5000; s++) {
		node_key_ref(t, node_place(t, s + 10000, (uint64_t)s + 10000, ses));
		node_key_ref(t, node_place(t, s + 10000, (uint64_t)s + 10000, by_id));
	}
	for (kserial_t s = 1; s <= 5000 && all; s++)
		all = places_of(t, s + 10000) == 2 &&
		      node_place(t, s + 10000, (uint64_t)s + 10000, ses) == (uint64_t)s + 10000 &&
		      node_place(t, s + 10000, (uint64_t)s + 10000, by_id) != (uint64_t)s + 10000;
	ok(all, "5,000 keyrings in two places each, all found again");
	node_table_free(t);
}

int main(void)
{
	struct node_table *t = node_table_new();
	uint64_t *want = calloc(NKEYS, sizeof(*want));
	size_t *order = malloc(NKEYS * sizeof(*order));
	struct node *n;

	if (!t || !want || !order)
		return 99;
	for (size_t i = 0; i < NKEYS; i++) {
		for (size_t r = 0; r <= i % 3; r++)
			node_key_ref(t, ino_of(i));
		want[i] = i % 3 + 1;
	}
	ok(counts_are(t, want), "%d keys, 1 to 3 references each, all counted", NKEYS);

	/* Forget in a shuffled order: all of some, part of others. */
	for (size_t i = 0; i < NKEYS; i++)
		order[i] = i;
	srand(1);
	for (size_t i = NKEYS - 1; i > 0; i--) {
		size_t j = (size_t)rand() % (i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	for (size_t k = 0; k < NKEYS; k++) {
		size_t i = order[k];
		uint64_t by = i % 2 ? want[i] : 1;

		node_forget(t, ino_of(i), by);
		want[i] -= by;
	}
	ok(counts_are(t, want), "forgetting in any order leaves the right counts (removals move no one out of reach)");

	node_forget(t, ino_of(1), 5);
	ok(node_key_nlookup(t, ino_of(1)) == 0, "a forget of more than is held drops the count");
	node_forget(t, 123456789, 1);
	ok(node_key_nlookup(t, 123456789) == 0, "a forget of an inode never counted is ignored");

	for (size_t i = 0; i < NKEYS; i += 2) {
		node_key_ref(t, ino_of(i));
		want[i]++;
	}
	ok(counts_are(t, want), "counted again after removals");

	/* A rename that unlinks key 4's last name: its inode stands for
	 * key 999, with the count it had. */
	node_renamed(t, ino_of(4), (kserial_t)ino_of(4), 999, true);
	n = node_get(t, ino_of(4));
	ok(n && n->kind == NODE_ALIAS && n->serial == 999 && n->nlookup == want[4],
	   "a renamed-away inode becomes an alias that keeps its count");
	ok(node_key_nlookup(t, ino_of(4)) == 0, "and leaves the key counts");
	node_key_ref(t, ino_of(4));
	ok(n->nlookup == want[4] + 1, "a lookup of the alias counts on the alias");
	node_forget(t, ino_of(4), want[4] + 1);
	ok(node_get(t, ino_of(4)) == NULL, "the alias goes with its last reference");
	want[4] = 0;
	ok(counts_are(t, want), "other counts untouched");

	for (size_t i = 0; i < NKEYS; i++)
		node_forget(t, ino_of(i), want[i]);
	for (size_t i = 0; i < NKEYS; i++)
		want[i] = 0;
	ok(counts_are(t, want), "all forgotten");
	node_table_free(t);
	test_places();
	free(want);
	free(order);
	return done_testing();
}
