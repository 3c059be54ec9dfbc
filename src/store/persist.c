/* persist.c: opening a store: the snapshot (plain or sealed), the journal replayed on it, and writing the snapshot again. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "grow.h"
#include "journal.h"
#include "store-int.h"

/* ---- the journal's ops on an image ---- */

/* serial -> index, open addressing; an index of NONE is a serial that
 * was there and went (its slot is kept, so nothing is ever deleted). */
#define NONE	SIZE_MAX

struct smap {
	kserial_t *keys;	/* 0: a free slot */
	size_t *vals;
	size_t cap, n;		/* cap a power of two, n < cap / 2 */
};

static void smap_free(struct smap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static size_t smap_slot(const struct smap *m, kserial_t key)
{
	size_t h = ((uint32_t)key * 2654435761u) & (m->cap - 1);

	while (m->keys[h] && m->keys[h] != key)
		h = (h + 1) & (m->cap - 1);
	return h;
}

/* The value of key, or NONE. */
static size_t smap_get(const struct smap *m, kserial_t key)
{
	size_t h;

	if (!m->cap)
		return NONE;
	h = smap_slot(m, key);
	return m->keys[h] ? m->vals[h] : NONE;
}

static int smap_set(struct smap *m, kserial_t key, size_t val)
{
	size_t h;

	if (2 * (m->n + 1) > m->cap) {
		struct smap g = { 0 };

		g.cap = m->cap ? m->cap * 2 : 64;
		g.keys = calloc(g.cap, sizeof(*g.keys));
		g.vals = malloc(g.cap * sizeof(*g.vals));
		if (!g.keys || !g.vals) {
			smap_free(&g);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i]) {
				h = smap_slot(&g, m->keys[i]);
				g.keys[h] = m->keys[i];
				g.vals[h] = m->vals[i];
				g.n++;
			}
		smap_free(m);
		*m = g;
	}
	h = smap_slot(m, key);
	if (!m->keys[h]) {
		m->keys[h] = key;
		m->n++;
	}
	m->vals[h] = val;
	return 0;
}

/* A keyring that link ops change: where each key sits in its links.  An
 * unlinked key leaves a 0 in its place (and NONE in pos), so no position
 * moves; the 0s go once the whole journal is replayed. */
struct ringpos {
	kserial_t keyring;
	struct smap pos;
	bool holes;
};

/* Replay keeps an index of the image, so a journal of many records on a
 * store of many keys costs the records, not records x keys. */
struct replay {
	struct store_image *img;
	const char *path;
	struct smap idx;		/* serial -> index in img->keys */
	/* Every put asks whether its key's positions are kept: by serial,
	 * so that a journal over many keyrings costs its records. */
	struct ringpos *rings;
	size_t nrings, rings_cap;
	struct smap ring_idx;		/* keyring serial -> index in rings */
	bool dels;			/* links to deleted keys to drop */
};

static void replay_free(struct replay *rp)
{
	smap_free(&rp->idx);
	smap_free(&rp->ring_idx);
	for (size_t i = 0; i < rp->nrings; i++)
		smap_free(&rp->rings[i].pos);
	free(rp->rings);
	rp->rings = NULL;
	rp->nrings = rp->rings_cap = 0;
}

static int replay_index(struct replay *rp)
{
	for (size_t i = 0; i < rp->img->nkeys; i++)
		if (smap_set(&rp->idx, rp->img->keys[i].serial, i) < 0)
			return -ENOMEM;
	return 0;
}

static ssize_t find(struct replay *rp, kserial_t serial)
{
	size_t i = smap_get(&rp->idx, serial);

	return i == NONE ? -1 : (ssize_t)i;
}

/* Forget keyring's positions: its links were replaced or it went.  The
 * last keyring's take its place; -ENOMEM only where the index cannot
 * follow. */
static int ring_forget(struct replay *rp, kserial_t keyring)
{
	size_t i = smap_get(&rp->ring_idx, keyring);

	if (i == NONE)
		return 0;
	smap_free(&rp->rings[i].pos);
	rp->rings[i] = rp->rings[--rp->nrings];
	if (smap_set(&rp->ring_idx, keyring, NONE) < 0)
		return -ENOMEM;
	if (i < rp->nrings &&
	    smap_set(&rp->ring_idx, rp->rings[i].keyring, i) < 0)
		return -ENOMEM;
	return 0;
}

static struct ringpos *ring_positions(struct replay *rp,
				      const struct store_key *r)
{
	size_t i = smap_get(&rp->ring_idx, r->serial);
	struct ringpos *p, *rings;

	if (i != NONE)
		return &rp->rings[i];
	rings = grow_room(rp->rings, rp->nrings, &rp->rings_cap, 8, SIZE_MAX,
			  sizeof(*rings));
	if (!rings)
		return NULL;
	rp->rings = rings;
	p = &rp->rings[rp->nrings];
	memset(p, 0, sizeof(*p));
	p->keyring = r->serial;
	for (size_t j = 0; j < r->nlinks; j++)
		if (r->links[j] && smap_set(&p->pos, r->links[j], j) < 0) {
			smap_free(&p->pos);
			return NULL;
		}
	if (smap_set(&rp->ring_idx, r->serial, rp->nrings) < 0) {
		smap_free(&p->pos);
		return NULL;
	}
	rp->nrings++;
	return p;
}

static int op_put(struct replay *rp, const struct journal_op *op,
		  char *err, size_t errlen)
{
	struct store_ctx c = { .path = rp->path, .err = err, .errlen = errlen };
	struct store_image *img = rp->img;
	struct store_key k;
	ssize_t i;
	int ret;

	ret = store_key_json_decode(&c, op->key_json, op->key_len, &k);
	if (ret < 0) {
		store_key_free(&k);
		return ret;
	}
	ret = ring_forget(rp, k.serial);
	if (ret < 0) {
		store_key_free(&k);
		return ret;
	}
	i = find(rp, k.serial);
	if (i >= 0) {
		store_key_free(&img->keys[i]);
		img->keys[i] = k;
		return 0;
	}
	{
		struct store_key *keys = realloc(img->keys, (img->nkeys + 1) *
						 sizeof(*keys));

		if (!keys || smap_set(&rp->idx, k.serial, img->nkeys) < 0) {
			if (keys)
				img->keys = keys;
			store_key_free(&k);
			return -ENOMEM;
		}
		img->keys = keys;
		img->keys[img->nkeys++] = k;
	}
	return 0;
}

/* The links to it go at the end of the replay (drop_dangling): no kept
 * keyring links a key the journal deletes (the store keeps only what the
 * special keyrings reach), so nothing in between needs them gone. */
static int op_del(struct replay *rp, kserial_t serial)
{
	struct store_image *img = rp->img;
	ssize_t i = find(rp, serial);

	if (i < 0)
		return 0;
	if (ring_forget(rp, serial) < 0)
		return -ENOMEM;
	store_key_free(&img->keys[i]);
	img->keys[i] = img->keys[--img->nkeys];
	rp->dels = true;
	if (smap_set(&rp->idx, serial, NONE) < 0)
		return -ENOMEM;
	if ((size_t)i < img->nkeys &&
	    smap_set(&rp->idx, img->keys[i].serial, (size_t)i) < 0)
		return -ENOMEM;
	return 0;
}

static int op_link(struct replay *rp, const struct journal_op *op,
		   char *err, size_t errlen)
{
	ssize_t i = find(rp, op->keyring);
	struct ringpos *p;
	struct store_key *r;
	size_t old;
	kserial_t *links;

	if (i < 0) {
		snprintf(err, errlen, "keyring %d is not in the store",
			 (int)op->keyring);
		return -EINVAL;
	}
	r = &rp->img->keys[i];
	p = ring_positions(rp, r);
	if (!p)
		return -ENOMEM;
	old = smap_get(&p->pos, op->serial);
	if (op->kind == JOURNAL_UNLINK) {
		if (old != NONE) {
			r->links[old] = 0;
			p->holes = true;
		}
		return old != NONE ? smap_set(&p->pos, op->serial, NONE) : 0;
	}
	if (old != NONE)
		return 0;
	old = op->replace ? smap_get(&p->pos, op->replace) : NONE;
	if (old != NONE) {
		r->links[old] = op->serial;
		if (smap_set(&p->pos, op->replace, NONE) < 0)
			return -ENOMEM;
		return smap_set(&p->pos, op->serial, old);
	}
	links = realloc(r->links, (r->nlinks + 1) * sizeof(*links));
	if (!links)
		return -ENOMEM;
	r->links = links;
	r->links[r->nlinks] = op->serial;
	return smap_set(&p->pos, op->serial, r->nlinks++);
}

/* After the replay: the holes unlinks left, and links to deleted keys. */
static void drop_dangling(struct replay *rp)
{
	for (size_t i = 0; i < rp->img->nkeys; i++) {
		struct store_key *r = &rp->img->keys[i];
		size_t n = 0;

		if (!r->nlinks)
			continue;
		for (size_t j = 0; j < r->nlinks; j++)
			if (r->links[j] &&
			    (!rp->dels || find(rp, r->links[j]) >= 0))
				r->links[n++] = r->links[j];
		r->nlinks = n;
	}
}

static int apply(void *arg, const struct journal_record *rec, char *err,
		 size_t errlen)
{
	struct replay *rp = arg;
	struct store_image *img = rp->img;
	kserial_t *slots[JOURNAL_NSPECIAL] = {
		&img->session, &img->user, &img->user_session, &img->persistent
	};
	int ret = 0;

	for (size_t n = 0; n < rec->nops && ret == 0; n++) {
		const struct journal_op *op = &rec->ops[n];

		switch (op->kind) {
		case JOURNAL_PUT:
			ret = op_put(rp, op, err, errlen);
			break;
		case JOURNAL_DEL:
			ret = op_del(rp, op->serial);
			break;
		case JOURNAL_LINK:
		case JOURNAL_UNLINK:
			ret = op_link(rp, op, err, errlen);
			break;
		case JOURNAL_SPECIAL:
			for (int s = 0; s < JOURNAL_NSPECIAL; s++)
				if (op->has_special[s])
					*slots[s] = op->special[s];
			break;
		}
	}
	if (ret == 0 && rec->next_serial > img->next_serial)
		img->next_serial = rec->next_serial;
	/* The journal prefixes the file and line; the key's own message
	 * starts with "keyfs: PATH: ", which is said once already. */
	if (ret == -EINVAL && err && errlen && strncmp(err, "keyfs: ", 7) == 0) {
		size_t skip = 7 + strlen(rp->path) + 2;

		if (strlen(err) >= skip)
			memmove(err, err + skip, strlen(err + skip) + 1);
	}
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return ret;
}

/* ---- the snapshot ---- */

static int read_snapshot(struct store_file *sf, struct store_image *img,
			 char *err, size_t errlen)
{
	struct store_ctx c = { .path = sf->path, .err = err, .errlen = errlen };
	struct store_buf b = { 0 };
	void *plain = NULL;
	size_t plen = 0;
	char what[128];
	int ret;

	ret = store_file_read(&c, &b);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		goto out;
	sf->snapshot_bytes = b.len;
	if (crypto_is_sealed(b.p, b.len) && !sf->key) {
		ret = store_fail(&c, "the store is encrypted: give its key with -o store_key=");
	} else if (sf->key) {
		/* crypto_open_file tells a sealed file cut inside its first
		 * line ("truncated") from a plain one (-ENOMSG). */
		ret = crypto_open_file(sf->key, b.p, b.len, &plain, &plen,
				       what, sizeof(what));
		if (ret == -ENOMSG) {
			/* A plain store is a JSON object; anything else is a
			 * sealed one whose first line was damaged. */
			size_t i = 0;

			while (i < b.len && strchr(" \t\r\n", b.p[i]))
				i++;
			if (i < b.len && b.p[i] == '{')
				store_fail(&c, "the store is not encrypted, but store_key= was given");
			else
				store_fail(&c, "corrupt (the first line is not \"" CRYPTO_MAGIC "\")");
			goto out;
		}
		if (ret < 0) {
			ret = ret == -ENOMEM ? store_fail_errno(&c, "cannot load", ret)
					     : (store_fail(&c, "%s", what), ret);
			goto out;
		}
		ret = store_json_parse(&c, plain, plen, img);
		explicit_bzero(plain, plen);
		free(plain);
	} else {
		ret = store_json_parse(&c, b.p, b.len, img);
	}
out:
	store_buf_free(&b);
	return ret;
}

int store_snapshot_write(struct store_file *sf, const struct store_image *img)
{
	struct store_buf b = { 0 }, sealed = { 0 };
	int ret;

	ret = store_json_dump(img, &b);
	if (ret == 0 && sf->key) {
		ret = crypto_seal_file(sf->key, b.p, b.len, &sealed.p, &sealed.len);
		sealed.cap = sealed.len;
		store_buf_free(&b);
		b = sealed;
	}
	if (ret == 0)
		ret = store_file_write(sf->path, &b);
	if (ret == 0)
		sf->snapshot_bytes = b.len;
	store_buf_free(&b);
	return ret;
}

/* ---- opening and closing ---- */

static const struct journal_codec sealed_codec = {
	.seal = crypto_seal_record,
	.open = crypto_open_record,
	.check_make = crypto_check_make,
	.check_verify = crypto_check_verify,
};

int store_open(const char *path, const struct crypto_key *key,
	       struct store_image *img, struct store_file **sfp,
	       char *err, size_t errlen)
{
	struct store_ctx c = { .path = path, .err = err, .errlen = errlen };
	struct journal_state st = { 0 };
	struct store_file *sf;
	struct replay rp = { .img = img, .path = path };
	char warn[PATH_MAX + 128];
	char jerr[512];
	int ret;

	memset(img, 0, sizeof(*img));
	if (err && errlen)
		err[0] = '\0';
	sf = calloc(1, sizeof(*sf));
	if (!sf || !(sf->path = strdup(path)) ||
	    asprintf(&sf->jpath, "%s" STORE_JOURNAL_SUFFIX, path) < 0) {
		if (sf)
			sf->jpath = NULL;
		ret = store_fail_errno(&c, "cannot load", -ENOMEM);
		goto fail;
	}
	sf->key = key;
	if (key) {
		sf->codec = malloc(sizeof(*sf->codec));
		if (!sf->codec) {
			ret = store_fail_errno(&c, "cannot load", -ENOMEM);
			goto fail;
		}
		*sf->codec = sealed_codec;
		sf->codec->arg = (void *)key;
	}
	ret = read_snapshot(sf, img, err, errlen);
	if (ret < 0)
		goto fail;
	store_json_init();
	ret = replay_index(&rp);
	if (ret < 0) {
		store_fail_errno(&c, "cannot load", ret);
		goto fail;
	}
	ret = journal_replay(sf->jpath, sf->codec, apply, &rp, &st,
			     warn, sizeof(warn), jerr, sizeof(jerr));
	if (ret < 0) {
		snprintf(err, errlen, "keyfs: %s", jerr);
		goto fail;
	}
	drop_dangling(&rp);
	replay_free(&rp);
	if (warn[0])
		fprintf(stderr, "keyfs: warning: %s\n", warn);
	if (st.last_seq)
		sf->pending = 1;	/* records the snapshot does not hold */
	ret = store_image_check(&c, img);
	if (ret == -ENOMEM)
		store_fail_errno(&c, "cannot load", ret);
	if (ret < 0)
		goto fail;
	ret = journal_open(sf->jpath, sf->codec, &st, &sf->journal);
	/* A store keyfs may not write is mounted all the same, as one whose
	 * every change fails (and is undone) would be. */
	if (ret == -EPERM || ret == -EACCES || ret == -EROFS) {
		sf->jerr = ret;
		ret = 0;
	}
	if (ret < 0) {
		c.path = sf->jpath;
		store_fail_errno(&c, "cannot open", ret);
		goto fail;
	}
	*sfp = sf;
	return 0;
fail:
	replay_free(&rp);
	store_image_free(img);
	store_close(sf);
	return ret;
}

int store_flush(struct store_file *sf, const struct store_image *img)
{
	int ret;

	if (!sf->journal)
		return sf->jerr;
	ret = store_snapshot_write(sf, img);

	/* The snapshot holds everything: a crash before the reset replays
	 * records it has already, which changes nothing (journal.h). */
	if (ret == 0)
		ret = journal_reset(sf->journal);
	if (ret == 0)
		sf->pending = 0;
	return ret;
}

/*
 * Every step leaves a whole store that one key opens: after the flush,
 * the old snapshot holds everything and the old journal nothing; after
 * the journal is removed, the old snapshot alone; after the rename of the
 * new snapshot, the new one alone (its journal is made, under the new
 * key, at the next mount).  A crash between two steps loses nothing and
 * never mixes keys.
 */
int store_rekey(struct store_file *sf, const struct store_image *img,
		const struct crypto_key *newkey)
{
	int ret = store_flush(sf, img);

	if (ret < 0)
		return ret;
	journal_close(sf->journal);
	sf->journal = NULL;
	sf->jerr = -EBADF;	/* no more changes through sf */
	ret = journal_remove(sf->jpath);
	if (ret < 0)
		return ret;
	sf->key = newkey;
	return store_snapshot_write(sf, img);
}

unsigned long store_pending(const struct store_file *sf)
{
	return sf ? sf->pending : 0;
}

void store_close(struct store_file *sf)
{
	if (!sf)
		return;
	journal_close(sf->journal);
	free(sf->codec);
	free(sf->jpath);
	free(sf->path);
	free(sf);
}
