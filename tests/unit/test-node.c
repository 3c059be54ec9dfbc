/* test-node.c: TAP tests of the node table's lookup counts of key inodes (src/fuse/node.c). */
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
	free(want);
	free(order);
	return done_testing();
}
