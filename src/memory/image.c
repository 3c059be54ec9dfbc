/* image.c: the memory model to and from store=FILE's image, and back to it after a failed save. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

/* Mark in img the keys the file must not get: those reachable only through
 * the process keyring (which dies with keyfs, as the kernel's does) and the
 * process keyring itself.  keys[] is the model sorted as img->keys. */
static int image_mark_unsaved(struct keyfs_backend *b, struct mkey **keys,
			      struct store_image *img)
{
	struct mkey *tops[] = { b->session, b->user, b->user_session,
				b->persistent };
	struct mkey **queue;
	size_t head = 0, tail = 0;
	uint32_t stamp;

	queue = malloc((b->nkeys ? b->nkeys : 1) * sizeof(*queue));
	if (!queue)
		return -ENOMEM;
	stamp = mem_stamp(b);	/* a key reached is marked with it */
	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++)
		if (tops[i] && tops[i]->walk_stamp != stamp) {
			tops[i]->walk_stamp = stamp;
			queue[tail++] = tops[i];
		}
	while (head < tail) {
		struct mkey *k = queue[head++], *ch;

		if (!k->ring)
			continue;
		mring_for_each(k->ring, i, ch) {
			if (ch->walk_stamp != stamp) {
				ch->walk_stamp = stamp;
				queue[tail++] = ch;
			}
		}
	}
	for (size_t i = 0; i < b->nkeys; i++)
		img->keys[i].unsaved = keys[i]->walk_stamp != stamp;
	free(queue);
	return 0;
}

int mem_image_build(struct keyfs_backend *b, struct store_image *img)
{
	struct mkey **keys;
	int ret;

	memset(img, 0, sizeof(*img));
	ret = mem_keys_sorted(b, &keys);
	if (ret < 0)
		return ret;
	img->keys = calloc(b->nkeys ? b->nkeys : 1, sizeof(*img->keys));
	if (!img->keys) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < b->nkeys && ret == 0; i++) {
		img->nkeys++;
		ret = mem_key_image(keys[i], &img->keys[i], true);
	}
	if (ret == 0)
		ret = image_mark_unsaved(b, keys, img);
	img->next_serial = b->next_serial;
	img->session = b->session ? b->session->serial : 0;
	img->user = b->user ? b->user->serial : 0;
	img->user_session = b->user_session ? b->user_session->serial : 0;
	img->persistent = b->persistent ? b->persistent->serial : 0;
	img->process = b->process ? b->process->serial : 0;
out:
	free(keys);
	if (ret < 0)
		store_image_free(img);
	return ret;
}

static int load_fail(char *err, size_t errlen, const char *store,
		     kserial_t serial, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int load_fail(char *err, size_t errlen, const char *store,
		     kserial_t serial, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (err && errlen)
		snprintf(err, errlen, "keyfs: %s: key %" PRId32 ": %s",
			 store, serial, what);
	return -EINVAL;
}

/* One key of the image into the model (not linked yet).  What every image
 * is (store.h) is not checked again: only what this model asks of a key. */
static int load_key(struct keyfs_backend *b, const struct store_key *sk,
		    char *err, size_t errlen)
{
	struct mkey_prep prep = { 0 };
	const struct mkey_type *type = mtype_lookup(sk->type);
	bool payload = sk->state == KEY_STATE_VALID ||
		       sk->state == KEY_STATE_EXPIRED;
	struct muser *u;
	struct mkey *k;
	int ret;

	if (!type)
		return load_fail(err, errlen, b->store, sk->serial,
				 "unknown key type \"%s\"", sk->type);
	if (!*sk->desc || (type->vet_description &&
			   type->vet_description(sk->desc) < 0))
		return load_fail(err, errlen, b->store, sk->serial,
				 "bad description for type %s", sk->type);
	if (type == &mtype_keyring || payload) {
		ret = type->preparse(&prep, sk->payload, sk->len);
		if (ret == -ENOMEM)
			return ret;
		if (ret < 0)
			return load_fail(err, errlen, b->store, sk->serial,
					 "payload of %zu bytes is not valid for type %s",
					 sk->len, sk->type);
	} else if (sk->len) {
		return load_fail(err, errlen, b->store, sk->serial,
				 "a revoked or negative key has no payload");
	}
	ret = -ENOMEM;
	if (mem_table_reserve(b) < 0 || mem_user_get(b, sk->uid, &u) < 0)
		goto out;
	k = mem_key_alloc(type, sk->desc);
	if (!k)
		goto out;
	k->serial = sk->serial;
	k->uid = sk->uid;
	k->gid = sk->gid;
	k->perm = sk->perm;
	k->revoked = sk->state == KEY_STATE_REVOKED;
	k->negative = sk->state == KEY_STATE_NEGATIVE;
	k->reject_error = ENOKEY;
	k->expiry = (time_t)sk->expiry;
	k->mtime_ns = keyfs_ns(sk->mtime);
	k->ctime_ns = keyfs_ns(sk->ctime);
	k->in_quota = true;	/* the held user keyrings are fixed later */
	if (prep.data || prep.ring)
		type->instantiate(k, &prep);
	if (k->ring) {
		k->ring->restricted = sk->restricted;
		if (sk->restrict_type)
			k->ring->restrict_type = strdup(sk->restrict_type);
		if (sk->restriction)
			k->ring->restriction = strdup(sk->restriction);
		if ((sk->restrict_type && !k->ring->restrict_type) ||
		    (sk->restriction && !k->ring->restriction)) {
			type->destroy(b, k);
			mem_key_free(k);
			goto out;
		}
	}
	mem_key_register(b, k);
	ret = 0;
out:
	type->free_preparse(&prep);
	return ret;
}

/* One keyring's links.  The image has each linked key, not the keyring
 * itself, each (type, description) once (store.h); a key it has that the
 * model does not is an invalidated one, not loaded, and its link goes too. */
static int load_links(struct keyfs_backend *b, const struct store_key *sk)
{
	struct mkey *k = mem_key_get(b, sk->serial);

	if (!k)		/* an invalidated key, not loaded */
		return 0;
	for (size_t i = 0; i < sk->nlinks; i++) {
		struct mkey *ch = mem_key_get(b, sk->links[i]);
		int ret;

		if (!ch)
			continue;
		ret = mring_reserve(k, ch);
		if (ret < 0)
			return ret;
		mring_link(k, ch);
	}
	return 0;
}

static int load_special(struct keyfs_backend *b, kserial_t serial,
			bool in_quota, struct mkey **out, char *err,
			size_t errlen)
{
	struct mkey *k;

	if (!serial)
		return 0;
	/* The image has it, as a keyring (store.h); an invalidated one is not
	 * in the model. */
	k = mem_key_get(b, serial);
	if (!k)
		return load_fail(err, errlen, b->store, serial,
				 "a special keyring is missing or not a keyring");
	k->special = true;
	if (k->in_quota != in_quota) {
		struct muser *u = mem_user_find(b, k->uid);

		k->in_quota = in_quota;
		u->qnkeys += in_quota ? 1 : -1;
	}
	*out = k;
	return 0;
}

void mem_model_free(struct keyfs_backend *b)
{
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i], *next; k; k = next) {
			next = k->hnext;
			/* No reaping: every key goes, in any order. */
			if (k->ring) {
				k->ring->nlinks = 0;
				mring_free(k->ring);
				k->ring = NULL;
			}
			k->type->destroy(b, k);
			mem_key_free(k);
		}
	free(b->table);
	free(b->users);
	b->table = NULL;
	b->tcap = b->nkeys = 0;
	b->users = NULL;
	b->nusers = b->ucap = 0;
	b->session = b->user = b->user_session = NULL;
	b->process = b->persistent = NULL;
	b->dead = NULL;
	mem_gc_queue_free(b);
}

int mem_model_load(struct keyfs_backend *b, const struct store_image *img,
		   kserial_t process, char *err, size_t errlen)
{
	kserial_t maxserial = 0;
	int ret = 0;

	for (size_t i = 0; i < img->nkeys && ret == 0; i++) {
		const struct store_key *sk = &img->keys[i];

		if (sk->state != KEY_STATE_INVALIDATED)
			ret = load_key(b, sk, err, errlen);
		if (sk->serial > maxserial)
			maxserial = sk->serial;
	}
	for (size_t i = 0; i < img->nkeys && ret == 0; i++)
		ret = load_links(b, &img->keys[i]);
	if (ret == 0)
		ret = load_special(b, img->session, true, &b->session, err, errlen);
	if (ret == 0)
		ret = load_special(b, img->user, false, &b->user, err, errlen);
	if (ret == 0)
		ret = load_special(b, img->user_session, false,
				   &b->user_session, err, errlen);
	if (ret == 0)
		ret = load_special(b, img->persistent, false, &b->persistent,
				   err, errlen);
	if (ret == 0 && process)
		ret = load_special(b, process, true, &b->process, err, errlen);
	if (ret < 0)
		return ret;
	b->next_serial = img->next_serial > maxserial ? img->next_serial :
			 maxserial + 1;
	if (b->next_serial < MEM_FIRST_SERIAL && img->nkeys == 0)
		b->next_serial = MEM_FIRST_SERIAL;
	/* Keyring payloads are their links; then let the unreferenced go. */
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i]; k; k = k->hnext) {
			if (k->ring)
				k->datalen = k->ring->nlinks * MEM_LINK_BYTES;
			mem_charge_sync(b, k);
		}
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i]; k; k = k->hnext)
			mem_key_unref(b, k);
	mem_reap(b);
	return 0;
}

/* Swap the models of a and c (the config stays). */
static void model_swap(struct keyfs_backend *a, struct keyfs_backend *c)
{
	struct keyfs_backend t = *a;

#define SWAP(f) do { a->f = c->f; c->f = t.f; } while (0)
	SWAP(table);
	SWAP(tcap);
	SWAP(nkeys);
	SWAP(next_serial);
	SWAP(session);
	SWAP(user);
	SWAP(user_session);
	SWAP(process);
	SWAP(persistent);
	SWAP(users);
	SWAP(nusers);
	SWAP(ucap);
	SWAP(gcq);
	SWAP(ngcq);
	SWAP(gcqcap);
	SWAP(gcq_lost);
	SWAP(dead);
#undef SWAP
}

/* The key of img (sorted by serial, its first n keys) with serial, or -1. */
static ssize_t image_find(const struct store_image *img, size_t n,
			  kserial_t serial)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->keys[mid].serial == serial)
			return (ssize_t)mid;
		if (img->keys[mid].serial < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* One tracked key of img (the model now) back as it was at the last save:
 * made since, it goes (marked invalidated, which load skips, links to it
 * too); freed since, it comes back; else its old fields, and its links
 * from the copy or the log undone.  e->old is moved into img. */
static int revert_key(struct store_image *img, size_t n, struct mtrack *e)
{
	ssize_t i = image_find(img, n, e->serial);
	struct store_key *sk, *keys;
	kserial_t *links;
	size_t nlinks;
	int ret = 0;

	if (!e->existed) {
		if (i >= 0)
			img->keys[i].state = KEY_STATE_INVALIDATED;
		return 0;
	}
	if (i < 0) {
		keys = realloc(img->keys, (img->nkeys + 1) * sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		img->keys = keys;
		img->keys[img->nkeys++] = e->old;
		memset(&e->old, 0, sizeof(e->old));
		e->full = true;
		return 0;
	}
	sk = &img->keys[i];
	links = sk->links;
	nlinks = sk->nlinks;
	sk->links = NULL;
	sk->nlinks = 0;
	if (e->full) {
		free(links);
		links = e->old.links;
		nlinks = e->old.nlinks;
	} else if (e->nlog) {
		ret = store_links_undo(&links, &nlinks, e->log, e->nlog);
	}
	store_key_free(sk);
	*sk = e->old;
	sk->links = links;
	sk->nlinks = nlinks;
	memset(&e->old, 0, sizeof(e->old));
	e->full = true;
	return ret;
}

int mem_model_revert(struct keyfs_backend *b)
{
	struct keyfs_backend tmp = *b;
	struct store_image img;
	kserial_t next = b->next_serial;
	size_t n;
	int ret;

	/* The whole model, once, and only when a save failed: every save
	 * keeps just the old state of what it touched. */
	ret = mem_image_build(b, &img);
	if (ret < 0)
		return ret;
	n = img.nkeys;
	for (size_t i = 0; i < b->ntrack && ret == 0; i++)
		ret = revert_key(&img, n, &b->track[i]);
	if (ret < 0) {
		store_image_free(&img);
		return ret;
	}
	img.session = b->file_special[0];
	img.user = b->file_special[1];
	img.user_session = b->file_special[2];
	img.persistent = b->file_special[3];
	tmp.tracking = false;
	tmp.table = NULL;
	tmp.tcap = tmp.nkeys = 0;
	tmp.users = NULL;
	tmp.nusers = tmp.ucap = 0;
	tmp.session = tmp.user = tmp.user_session = NULL;
	tmp.process = tmp.persistent = NULL;
	tmp.dead = NULL;
	tmp.gcq = NULL;
	tmp.ngcq = tmp.gcqcap = 0;
	tmp.gcq_lost = false;
	/* The process keyring and what only it links are never in the file,
	 * but are undone as well. */
	ret = mem_model_load(&tmp, &img, b->saved_process, NULL, 0);
	store_image_free(&img);
	if (ret == 0) {
		model_swap(b, &tmp);
		if (b->next_serial < next)
			b->next_serial = next;
		mem_track_forget(b);	/* its keys are tmp's now */
		mem_stored_reset(b);
	}
	mem_model_free(&tmp);
	return ret;
}

void mem_stored_reset(struct keyfs_backend *b)
{
	struct mkey *tops[] = { b->session, b->user, b->user_session,
				b->persistent };
	uint32_t stamp = mem_stamp(b);
	struct mkey *head = NULL, *tail = NULL;

	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++) {
		struct mkey *k = tops[i];

		if (!k || k->walk_stamp == stamp)
			continue;
		k->walk_stamp = stamp;
		k->qnext = NULL;
		if (tail)
			tail->qnext = k;
		else
			head = k;
		tail = k;
	}
	for (struct mkey *q = head, *ch; q; q = q->qnext) {
		if (!q->ring)
			continue;
		mring_for_each(q->ring, i, ch) {
			if (ch->walk_stamp == stamp)
				continue;
			ch->walk_stamp = stamp;
			ch->qnext = NULL;
			tail->qnext = ch;
			tail = ch;
		}
	}
	for (size_t i = 0; i < b->tcap; i++)
		for (struct mkey *k = b->table[i]; k; k = k->hnext)
			k->stored = k->walk_stamp == stamp;
	b->file_special[0] = b->session ? b->session->serial : 0;
	b->file_special[1] = b->user ? b->user->serial : 0;
	b->file_special[2] = b->user_session ? b->user_session->serial : 0;
	b->file_special[3] = b->persistent ? b->persistent->serial : 0;
	b->saved_process = b->process ? b->process->serial : 0;
}
