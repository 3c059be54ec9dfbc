/* record.c: one change of the store as one journal record (what differs between two images), and compaction. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "journal.h"
#include "store-int.h"

/* The record being built: its ops, and the key texts PUT ops point to. */
struct diff {
	struct journal_op *ops;
	size_t nops, cap;
	struct store_buf *texts;
	size_t ntexts;
};

static void diff_free(struct diff *d)
{
	for (size_t i = 0; i < d->ntexts; i++)
		store_buf_free(&d->texts[i]);
	free(d->texts);
	free(d->ops);
}

static struct journal_op *diff_op(struct diff *d)
{
	if (d->nops == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct journal_op *ops = realloc(d->ops, cap * sizeof(*ops));

		if (!ops)
			return NULL;
		d->ops = ops;
		d->cap = cap;
	}
	d->ops[d->nops] = (struct journal_op){ 0 };
	return &d->ops[d->nops++];
}

static int diff_put(struct diff *d, const struct store_key *k)
{
	struct store_buf *texts, *t;
	struct journal_op *op;
	int ret;

	texts = realloc(d->texts, (d->ntexts + 1) * sizeof(*texts));
	if (!texts)
		return -ENOMEM;
	d->texts = texts;
	t = &d->texts[d->ntexts++];
	*t = (struct store_buf){ 0 };
	ret = store_key_json_encode(k, t);
	if (ret < 0)
		return ret;
	op = diff_op(d);
	if (!op)
		return -ENOMEM;
	op->kind = JOURNAL_PUT;
	op->serial = k->serial;
	op->key_json = t->p;
	op->key_len = t->len - 1;
	return 0;
}

static int diff_simple(struct diff *d, enum journal_op_kind kind,
		       kserial_t keyring, kserial_t serial, kserial_t replace)
{
	struct journal_op *op = diff_op(d);

	if (!op)
		return -ENOMEM;
	op->kind = kind;
	op->keyring = keyring;
	op->serial = serial;
	op->replace = replace;
	return 0;
}

/* A keyring that changed only by one link added at the end, one removed,
 * or one put in another's place, as that one op; anything else is a put.
 * So linking into a big keyring does not write all its links. */
static int diff_keyring(struct diff *d, const struct store_key *a,
			const struct store_key *b)
{
	size_t n = a->nlinks < b->nlinks ? a->nlinks : b->nlinks, i = 0;

	if (!store_key_same_but_links(a, b) || !keyfs_is_keyring_type(b->type))
		return diff_put(d, b);
	while (i < n && a->links[i] == b->links[i])
		i++;
	if (b->nlinks == a->nlinks + 1 && i == a->nlinks)
		return diff_simple(d, JOURNAL_LINK, b->serial, b->links[i], 0);
	if (a->nlinks == b->nlinks + 1 &&
	    (i == b->nlinks || memcmp(a->links + i + 1, b->links + i,
				      (b->nlinks - i) * sizeof(*b->links)) == 0))
		return diff_simple(d, JOURNAL_UNLINK, b->serial, a->links[i], 0);
	if (a->nlinks == b->nlinks && i < n &&
	    memcmp(a->links + i + 1, b->links + i + 1,
		   (n - i - 1) * sizeof(*b->links)) == 0)
		return diff_simple(d, JOURNAL_LINK, b->serial, b->links[i],
				   a->links[i]);
	return diff_put(d, b);
}

static int cmp_serial(const void *x, const void *y)
{
	const struct store_key *a = *(const struct store_key *const *)x;
	const struct store_key *b = *(const struct store_key *const *)y;

	return (a->serial > b->serial) - (a->serial < b->serial);
}

/* The keys of img the file holds, by serial. */
static const struct store_key **saved_keys(const struct store_image *img,
					   size_t *n)
{
	const struct store_key **v = malloc((img->nkeys ? img->nkeys : 1) *
					    sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < img->nkeys; i++)
		if (!img->keys[i].unsaved)
			v[(*n)++] = &img->keys[i];
	qsort(v, *n, sizeof(*v), cmp_serial);
	return v;
}

static int diff_keys(struct diff *d, const struct store_image *old,
		     const struct store_image *img)
{
	const struct store_key **a, **b;
	size_t na, nb, i = 0, j = 0;
	int ret = 0;

	a = saved_keys(old, &na);
	b = saved_keys(img, &nb);
	if (!a || !b)
		ret = -ENOMEM;
	while (ret == 0 && (i < na || j < nb)) {
		if (j == nb || (i < na && a[i]->serial < b[j]->serial)) {
			ret = diff_simple(d, JOURNAL_DEL, 0, a[i++]->serial, 0);
		} else if (i == na || b[j]->serial < a[i]->serial) {
			ret = diff_put(d, b[j++]);
		} else {
			if (!store_key_same_but_links(a[i], b[j]) ||
			    a[i]->nlinks != b[j]->nlinks ||
			    (a[i]->nlinks && memcmp(a[i]->links, b[j]->links,
				   a[i]->nlinks * sizeof(*a[i]->links)) != 0))
				ret = diff_keyring(d, a[i], b[j]);
			i++;
			j++;
		}
	}
	free(a);
	free(b);
	return ret;
}

static int diff_specials(struct diff *d, const struct store_image *old,
			 const struct store_image *img)
{
	struct journal_op *op = NULL;

	for (size_t s = 0; s < STORE_NSPECIALS; s++) {
		if (store_special_get(old, s) == store_special_get(img, s))
			continue;
		if (!op && !(op = diff_op(d)))
			return -ENOMEM;
		op->kind = JOURNAL_SPECIAL;
		/* store_special_names and enum journal_special agree. */
		op->special[s] = store_special_get(img, s);
		op->has_special[s] = true;
	}
	return 0;
}

int store_commit(struct store_file *sf, const struct store_image *old,
		 const struct store_image *img)
{
	struct store_ctx c = { .path = sf->path };
	struct diff d = { 0 };
	struct journal_record rec = { 0 };
	struct stat st;
	int ret;

	/* What the record leads to must be a store load accepts. */
	ret = store_image_check(&c, img);
	if (ret == 0)
		ret = diff_keys(&d, old, img);
	if (ret == 0)
		ret = diff_specials(&d, old, img);
	if (ret < 0 || d.nops == 0)
		goto out;
	ret = sf->journal ? 0 : sf->jerr;
	/* A journal removed under keyfs would take the record with it: the
	 * change fails instead of being lost. */
	if (ret == 0 && stat(sf->jpath, &st) < 0)
		ret = -errno;
	if (ret < 0)
		goto out;
	rec.next_serial = img->next_serial;
	rec.ops = d.ops;
	rec.nops = d.nops;
	ret = journal_append(sf->journal, &rec);
	if (ret < 0)
		goto out;
	sf->pending++;
	if (journal_needs_compaction((uint64_t)journal_size(sf->journal),
				     sf->snapshot_bytes)) {
		int r = store_flush(sf, img);

		/* The change is on disk in the journal: a failed rewrite
		 * costs only a longer replay, and is tried again later. */
		if (r < 0)
			fprintf(stderr, "keyfs: %s: cannot compact the journal: %s\n",
				sf->path, strerror(-r));
	}
out:
	diff_free(&d);
	return ret;
}
