/* record.c: one change of the store as one journal record, built from what the change touched, and the undo of a keyring's link changes. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "grow.h"
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
	struct journal_op *ops = grow_room(d->ops, d->nops, &d->cap, 8,
					   SIZE_MAX, sizeof(*ops));

	if (!ops)
		return NULL;
	d->ops = ops;
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

/* ---- the record the memory backend builds from what a change touched ---- */

struct store_record {
	struct diff d;
	bool special;
};

struct store_record *store_record_new(void)
{
	return calloc(1, sizeof(struct store_record));
}

void store_record_free(struct store_record *r)
{
	if (!r)
		return;
	diff_free(&r->d);
	free(r);
}

size_t store_record_nops(const struct store_record *r)
{
	return r->d.nops;
}

int store_record_put(struct store_record *r, const struct store_key *k)
{
	return diff_put(&r->d, k);
}

int store_record_del(struct store_record *r, kserial_t serial)
{
	return diff_simple(&r->d, JOURNAL_DEL, 0, serial, 0);
}

int store_record_links(struct store_record *r, kserial_t keyring,
		       const struct store_link_change *log, size_t nlog)
{
	int ret = 0;

	for (size_t i = 0; i < nlog && ret == 0; i++) {
		const struct store_link_change *c = &log[i];

		if (c->kind == STORE_LINK_REMOVE)
			ret = diff_simple(&r->d, JOURNAL_UNLINK, keyring,
					  c->serial, 0);
		else
			ret = diff_simple(&r->d, JOURNAL_LINK, keyring,
					  c->serial, c->kind == STORE_LINK_REPLACE ?
					  c->old : 0);
	}
	return ret;
}

int store_record_special(struct store_record *r, size_t i, kserial_t serial)
{
	struct journal_op *op = NULL;

	if (i >= STORE_NSPECIALS)
		return -EINVAL;
	for (size_t n = 0; n < r->d.nops && !op; n++)
		if (r->d.ops[n].kind == JOURNAL_SPECIAL)
			op = &r->d.ops[n];
	if (!op && !(op = diff_op(&r->d)))
		return -ENOMEM;
	op->kind = JOURNAL_SPECIAL;
	/* store_special_names and enum journal_special agree. */
	op->special[i] = serial;
	op->has_special[i] = true;
	return 0;
}

/* Undo log, newest first, on links as they are now: each change is
 * checked against what it says it did, so a log that does not describe
 * these links is -EINVAL rather than a wrong list. */
int store_links_undo(kserial_t **links, size_t *n,
		     const struct store_link_change *log, size_t nlog)
{
	for (size_t j = nlog; j-- > 0;) {
		const struct store_link_change *c = &log[j];
		kserial_t *v = *links;

		switch (c->kind) {
		case STORE_LINK_APPEND:
		case STORE_LINK_REPLACE:
			if (c->at >= *n || v[c->at] != c->serial)
				return -EINVAL;
			if (c->kind == STORE_LINK_REPLACE) {
				v[c->at] = c->old;
				break;
			}
			memmove(v + c->at, v + c->at + 1,
				(*n - c->at - 1) * sizeof(*v));
			(*n)--;
			break;
		case STORE_LINK_REMOVE:
			if (c->at > *n)
				return -EINVAL;
			v = realloc(v, (*n + 1) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			*links = v;
			memmove(v + c->at + 1, v + c->at,
				(*n - c->at) * sizeof(*v));
			v[c->at] = c->serial;
			(*n)++;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

int store_commit(struct store_file *sf, const struct store_record *r,
		 kserial_t next_serial)
{
	struct journal_record rec = { 0 };
	struct stat st;
	int ret;

	if (r->d.nops == 0)
		return 0;
	ret = sf->journal ? 0 : sf->jerr;
	/* A journal removed under keyfs would take the record with it: the
	 * change fails instead of being lost. */
	if (ret == 0 && stat(sf->jpath, &st) < 0)
		ret = -errno;
	if (ret < 0)
		return ret;
	rec.next_serial = next_serial;
	rec.ops = r->d.ops;
	rec.nops = r->d.nops;
	ret = journal_append(sf->journal, &rec);
	if (ret == 0)
		sf->pending++;
	return ret;
}

bool store_wants_compaction(const struct store_file *sf)
{
	return sf->journal &&
	       journal_needs_compaction((uint64_t)journal_size(sf->journal),
					sf->snapshot_bytes);
}
