/* memory.c: the memory backend's ops table, init and destroy, and the operations that only look. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

/* ---- the operations ---- */

static int mem_init(struct keyfs_backend **bp, const struct backend_config *cfg,
		    char *err, size_t errlen)
{
	struct keyfs_backend *b;
	bool created;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "keyfs: out of memory");
		return -ENOMEM;
	}
	b->store = cfg->store;
	b->store_key = cfg->store_key;
	b->request_key = cfg->request_key;
	b->request_timeout = cfg->request_timeout ? cfg->request_timeout :
			     MEM_CALLOUT_TIMEOUT;
	b->unlock = cfg->unlock;
	b->relock = cfg->relock;
	b->lock_arg = cfg->lock_arg;
	b->uid = cfg->uid;
	b->gid = cfg->gid;
	b->next_serial = MEM_FIRST_SERIAL;
	mem_limits_read(b);
	if (b->store) {
		ret = mem_store_open(b, err, errlen);
		if (ret < 0)
			goto fail;
	}
	ret = mem_specials_create(b, &created);
	if (ret < 0)
		goto fail;
	mem_gc(b);
	mem_reap(b);
	if (b->store) {
		ret = mem_store_save(b, created);
		if (ret < 0) {
			snprintf(err, errlen, "keyfs: cannot write %s: %s",
				 b->store, strerror(-ret));
			goto fail;
		}
	}
	*bp = b;
	return 0;
fail:
	if (err && errlen && !err[0])
		snprintf(err, errlen, "keyfs: memory backend: %s",
			 strerror(-ret));
	mem_store_close(b, false);
	mem_model_free(b);
	free(b);
	return ret;
}

static void mem_destroy(struct keyfs_backend *b)
{
	if (!b)
		return;
	mem_store_close(b, true);
	mem_model_free(b);
	free(b);
}

static enum key_state key_state(const struct mkey *k)
{
	if (k->negative)
		return KEY_STATE_NEGATIVE;
	if (k->revoked)
		return KEY_STATE_REVOKED;
	if (mem_key_expired(k, time(NULL)))
		return KEY_STATE_EXPIRED;
	return KEY_STATE_VALID;
}

static void key_info_fill(struct keyfs_backend *b, const struct keyfs_cred *c,
			  struct mkey *k, struct key_info *ki)
{
	memset(ki, 0, sizeof(*ki));
	ki->serial = k->serial;
	snprintf(ki->type, sizeof(ki->type), "%s", k->type->name);
	snprintf(ki->desc, sizeof(ki->desc), "%s", k->desc);
	ki->uid = k->uid;
	ki->gid = k->gid;
	ki->perm = k->perm;
	ki->state = key_state(k);
	ki->expiry = k->expiry;
	ki->possessed = mem_possessed(b, c, k);
	/* What a read would return: keyrings read as 4 bytes a link; 0 for
	 * a caller the read would refuse, as the kernel's probe gives. */
	ki->size = !k->type->read ? 0 : k->ring ?
		   k->ring->nlinks * sizeof(kserial_t) : k->len;
	if (!ki->possessed && mem_key_perm(b, c, k, KEYFS_PERM_READ) < 0)
		ki->size = 0;
	if (k->ring) {
		ki->nlink = 2 + (unsigned)k->ring->nkeyrings;
	} else {
		ki->nlink = k->nparents ? (unsigned)k->nparents : 1;
	}
	ki->mtime = keyfs_ts(k->mtime_ns);
	ki->ctime = keyfs_ts(k->ctime_ns);
}

/*
 * keyctl_describe_key() needs view on the key.  Unlike the kernel, which
 * answers EKEYREVOKED or EKEYEXPIRED here, a revoked, expired or negative
 * key is described, with its state: keyfs lists such keys and shows the
 * state in an xattr.
 */
static int mem_describe(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t key, struct key_info *out)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_PARTIAL, 0, &k);
	if (ret == 0)
		ret = mem_key_perm(b, c, k, KEYFS_PERM_VIEW);
	if (ret == 0)
		key_info_fill(b, c, k, out);
	mem_end_read(b);
	return ret;
}

/* keyctl_read_key(): a negative key fails first, then read permission
 * (or possession), then a type without read (logon), and only then a
 * revoked or expired key (key_validate, just before the read). */
static int read_check(struct keyfs_backend *b, const struct keyfs_cred *c,
		      kserial_t key, bool keyring, struct mkey **out)
{
	struct mkey *k;
	int ret;

	ret = mem_lookup(b, c, key, 0, 0, &k);
	if (ret < 0)
		return ret;
	if (k->negative)
		return -k->reject_error;
	if (keyring && !mem_is_keyring(k))
		return -ENOTDIR;
	ret = mem_key_perm(b, c, k, KEYFS_PERM_READ);
	if (ret == -EACCES && mem_possessed(b, c, k))
		ret = 0;
	if (ret < 0)
		return ret;
	if (!k->type->read)
		return -EOPNOTSUPP;
	ret = mem_key_validate(k, false);
	if (ret < 0)
		return ret;
	*out = k;
	return 0;
}

static int mem_read(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t key, void **buf_alloc, size_t *len)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = read_check(b, c, key, false, &k);
	if (ret == 0)
		ret = k->type->read(k, buf_alloc, len);
	mem_end_read(b);
	return ret;
}

static int mem_list(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t keyring, kserial_t **out_alloc, size_t *n)
{
	kserial_t *v = NULL;
	struct mkey *k;
	size_t nl;
	int ret;

	mem_begin(b);
	ret = read_check(b, c, keyring, true, &k);
	if (ret < 0)
		goto out;
	nl = k->ring->nlinks;
	if (nl) {
		v = malloc(nl * sizeof(*v));
		if (!v) {
			ret = -ENOMEM;
			goto out;
		}
		mring_serials(k->ring, v);
	}
	*out_alloc = v;
	*n = nl;
out:
	mem_end_read(b);
	return ret;
}

/*
 * A direct lookup in one keyring, through its index.  As keyring_search()
 * the keyring must be valid and grant search (a directory's x), but the
 * key found is returned in whatever state it is, without a search check
 * of its own: a name listed in a keyring can always be looked up, and what
 * the key allows is checked by the operation that follows.
 */
static int mem_find(struct keyfs_backend *b, const struct keyfs_cred *c,
		    kserial_t keyring, const char *type, const char *desc,
		    kserial_t *out)
{
	const struct mkey_type *t;
	struct mkey *kr, *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup_keyring(b, c, keyring, 0, KEYFS_PERM_SEARCH, &kr);
	if (ret < 0)
		goto out;
	t = mtype_lookup(type);
	k = t ? mring_find(kr, t, desc) : NULL;
	if (!k)
		ret = -ENOKEY;
	else
		*out = k->serial;
out:
	mem_end_read(b);
	return ret;
}

static int mem_list_all(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t **out_alloc, size_t *n)
{
	struct mkey **keys;
	kserial_t *v = NULL;
	size_t m;
	int ret;

	mem_begin(b);
	ret = mem_viewable_keys(b, c, &keys, &m);
	if (ret < 0)
		goto out;
	if (m) {
		v = malloc(m * sizeof(*v));
		if (!v)
			ret = -ENOMEM;
		for (size_t i = 0; v && i < m; i++)
			v[i] = keys[i]->serial;
	}
	free(keys);
	if (ret == 0) {
		*out_alloc = v;
		*n = m;
	}
out:
	mem_end_read(b);
	return ret;
}

static int mem_security(struct keyfs_backend *b, const struct keyfs_cred *c,
			kserial_t key, char **label_alloc)
{
	struct mkey *k;
	int ret;

	mem_begin(b);
	ret = mem_lookup(b, c, key, MEM_LOOKUP_PARTIAL, KEYFS_PERM_VIEW, &k);
	mem_end_read(b);
	if (ret < 0)
		return ret;
	/* No LSM here: keyctl_get_security() gives an empty string. */
	*label_alloc = strdup("");
	return *label_alloc ? 0 : -ENOMEM;
}

static int mem_quota(struct keyfs_backend *b, const struct keyfs_cred *c,
		     struct key_quota *q)
{
	const struct muser *u;

	mem_begin(b);
	mem_end(b);
	u = mem_user_find(b, c->uid);
	q->keys = u ? u->qnkeys : 0;
	q->bytes = u ? u->qnbytes : 0;
	mem_quota_limits(b, c->uid, &q->maxkeys, &q->maxbytes);
	return 0;
}

/* The facts of a type, from its table in types.c. */
static int mem_type_info(struct keyfs_backend *b, const char *type,
			 struct key_type_info *out)
{
	const struct mkey_type *t = NULL;
	int ret;

	(void)b;
	ret = mem_check_type(type, -ENODEV, &t);
	if (ret < 0)
		return ret;
	out->max_payload = t->max_payload;
	out->default_perm = t->perm;
	out->readable = t->read != NULL;
	return 0;
}

const struct keyfs_backend_ops backend_memory_ops = {
	.name = "memory",
	.init = mem_init,
	.destroy = mem_destroy,
	.special = mem_special,
	.persistent = mem_persistent,
	.describe = mem_describe,
	.read = mem_read,
	.list = mem_list,
	.find = mem_find,
	.list_all = mem_list_all,
	.add = mem_add,
	.batch_begin = mem_batch_begin,
	.batch_end = mem_batch_end,
	.update = mem_update,
	.link = mem_link,
	.unlink = mem_unlink,
	.move = mem_move,
	.revoke = mem_revoke,
	.invalidate = mem_invalidate,
	.clear = mem_clear,
	.setperm = mem_setperm,
	.chown = mem_chown,
	.set_timeout = mem_set_timeout,
	.restrict_keyring = mem_restrict,
	.request = memory_request,
	.search = memory_search,
	.security = mem_security,
	.proc_keys = mem_proc_keys,
	.proc_key_users = mem_proc_key_users,
	.supports = mem_supports,
	.quota = mem_quota,
	.check_new = mem_check_new,
	.type_info = mem_type_info,
};
