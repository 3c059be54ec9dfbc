/* kernel.c: the kernel backend: init, special keyrings, describe, read, and its ops table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "kernel.h"

/* ---- init and destroy ---- */

static int kernel_init(struct keyfs_backend **bp,
		       const struct backend_config *cfg, char *err,
		       size_t errlen)
{
	struct keyfs_backend *b;
	int n, ret;

	/* a daemon may have no process keyring yet: ENOKEY still answers */
	if (keyctl_get_keyring_ID(KEY_SPEC_PROCESS_KEYRING, 0) < 0 &&
	    errno != ENOKEY) {
		ret = -errno;
		if (ret == -ENOSYS)
			snprintf(err, errlen, "the kernel has no key retention "
				 "service (CONFIG_KEYS): use -o backend=memory");
		else if (ret == -EPERM || ret == -EACCES)
			snprintf(err, errlen, "keyctl is refused (%s), likely "
				 "by a seccomp filter: use -o backend=memory",
				 strerror(-ret));
		else
			snprintf(err, errlen, "keyctl fails: %s: use -o "
				 "backend=memory", strerror(-ret));
		return ret;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		goto nomem;
	b->uid = cfg->uid;
	b->gid = cfg->gid;
	b->cache_timeout = cfg->cache_timeout;
	b->unlock = cfg->unlock;
	b->relock = cfg->relock;
	b->lock_arg = cfg->lock_arg;
	b->own_fsuid = (uid_t)setfsuid((uid_t)-1);
	b->own_fsgid = (gid_t)setfsgid((gid_t)-1);
	n = getgroups(0, NULL);
	if (n > 0) {
		b->own_groups = calloc((size_t)n, sizeof(gid_t));
		if (!b->own_groups)
			goto nomem;
		n = getgroups(n, b->own_groups);
	}
	b->own_ngroups = n > 0 ? n : 0;
	b->detach = kdetach_new();
	*bp = b;
	return 0;
nomem:
	free(b);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

static void kernel_before_fork(struct keyfs_backend *b)
{
	kproc_stop(b);
	kpre_stop(b);
}

static void kernel_destroy(struct keyfs_backend *b)
{
	struct kkey *k, *next;

	if (!b)
		return;
	for (size_t i = 0; i < b->nslots; i++)
		for (k = b->slots[i]; k; k = next) {
			next = k->next;
			kkey_free(k);
		}
	kproc_stop(b);
	kpre_stop(b);
	free(b->slots);
	free(b->kusers_pending);
	pcache_free(&b->proc);
	free(b->own_groups);
	kdetach_put(b->detach);
	free(b);
}

/* ---- special keyrings ---- */

static int kernel_special(struct keyfs_backend *b, const struct keyfs_cred *c,
			  int which, bool create, kserial_t *out)
{
	key_serial_t s;

	(void)b;
	(void)c;
	if (which < KEYFS_SPEC_USER_SESSION || which > KEYFS_SPEC_THREAD)
		return -EINVAL;
	s = keyctl_get_keyring_ID(which, create);
	if (s < 0)
		return -errno;
	*out = s;
	return 0;
}

/* Linked into keyfs's own process keyring, so nothing of the user's is
 * touched. */
static int kernel_persistent(struct keyfs_backend *b,
			     const struct keyfs_cred *c, kserial_t *out)
{
	long s;

	s = keyctl_get_persistent(c ? c->uid : b->uid,
				  KEY_SPEC_PROCESS_KEYRING);
	if (s < 0)
		return -errno;
	*out = (kserial_t)s;
	return 0;
}

/* ---- describe ---- */

/* The expiry keyfs set is exact; /proc/keys' rounded value stands where
 * keyfs set none, or where a later /proc/keys shows someone else set
 * another one. */
static time_t key_expiry(struct keyfs_backend *b, struct kkey *k,
			 const struct pent *pe, enum key_state state)
{
	if (k->exact_expiry && pe && b->proc.when_ns > k->expiry_set_ns) {
		bool same;

		switch (pe->tmo) {
		case TMO_NONE:
			same = k->expiry == 0;
			break;
		case TMO_EXPIRED:
			same = k->expiry != 0 && k->expiry <= pe->lo + 1;
			break;
		default:
			same = k->expiry >= pe->lo - 1 &&
			       k->expiry <= pe->hi + 1;
			break;
		}
		if (!same && state != KEY_STATE_REVOKED)
			k->exact_expiry = false;
	}
	if (k->exact_expiry)
		return k->expiry;
	if (!pe || state == KEY_STATE_REVOKED)
		return 0;
	return pe->hi;	/* rounded up: never earlier than the kernel will expire it */
}

/* A key keyctl no longer describes (revoked, expired, negative,
 * invalidated): what keyfs remembers, with /proc/keys' ids and perm. */
static int describe_dead(struct keyfs_backend *b, const struct keyfs_cred *c,
			 kserial_t key, int err, struct key_info *out)
{
	struct kkey *k = kkey_get(b, key);
	struct pent *pe;
	enum key_state state;
	int ret;

	if (!kerr_dead(err))
		return err;
	/* A key keyfs saw revoked or expired stays so until it is gone:
	 * no need to ask /proc/keys again. */
	if (k && k->named && k->have_attr &&
	    ((err == -EKEYREVOKED && k->dead == KEY_STATE_REVOKED) ||
	     (err == -EKEYEXPIRED && k->dead == KEY_STATE_EXPIRED))) {
		state = (enum key_state)k->dead;
		pe = NULL;
		goto answer;
	}
	/* The key died since keyfs last saw it (ENOKEY may even mean gone):
	 * only /proc/keys tells, and only a parse made after the key was
	 * last seen alive; dead keys are few, so it is rarely read. */
	ret = kproc_fresh(b, true);
	if (ret < 0)
		return err;
	pe = kproc_find(b, key);
	if (err == -ENOKEY && !pe) {
		kkey_drop(b, key);
		return err;
	}
	/* Revoked or expired before keyfs saw it: /proc/keys names it. */
	if (pe && (!k || !k->named) && (k = kkey_make(b, key)) != NULL &&
	    kkey_learn_dead(k) < 0)
		return err;
	if (!k || !k->named)
		return err;
	if (pe && (pe->flags & PENT_INVALIDATED))
		state = KEY_STATE_INVALIDATED;
	else if (err == -EKEYREVOKED)
		state = KEY_STATE_REVOKED;
	else if (err == -EKEYEXPIRED)
		state = KEY_STATE_EXPIRED;
	else if (pe && (pe->flags & PENT_NEGATIVE))
		state = KEY_STATE_NEGATIVE;
	else
		return err;
	if (pe)
		kkey_note_attr(k, pe->uid, pe->gid, pe->perm);
	if (!k->have_attr)
		return err;
	if (state == KEY_STATE_REVOKED || state == KEY_STATE_EXPIRED)
		k->dead = (uint8_t)state;
answer:
	if (!is_mounter(b, c) &&
	    perm_check(c, k->uid, k->gid, k->perm, false, KEYFS_PERM_VIEW) < 0)
		return -EACCES;
	memset(out, 0, sizeof(*out));
	out->state = state;
	out->expiry = key_expiry(b, k, pe, state);
	return 0;
}

/* The payload length as the caller may read it, or -errno (EACCES where
 * keyfs does not let it read). */
static long key_size(struct keyfs_backend *b, const struct keyfs_cred *c,
		     const struct kkey *k)
{
	struct kcall *probe = KCALL(KEYCTL_READ, (unsigned long)k->serial);
	int ret;

	if (is_mounter(b, c))
		return kpre_size(b, k->serial);
	if (perm_check(c, k->uid, k->gid, k->perm, false, KEYFS_PERM_READ) < 0)
		return -EACCES;
	ret = kcall_as(b, c, probe);
	return ret < 0 ? ret : probe->ret;
}

/* recent: k's description is kkey_recent's, which a size probe that
 * finds the key dead or gone sends back (-ESTALE) to be made anew. */
static int describe_live(struct keyfs_backend *b, const struct keyfs_cred *c,
			 struct kkey *k, unsigned parts, bool recent,
			 struct key_info *out)
{
	kserial_t serial = k->serial;
	struct pent *pe;
	struct kidx *x;
	bool sized;
	long size;

	if (!is_mounter(b, c) &&
	    perm_check(c, k->uid, k->gid, k->perm, false, KEYFS_PERM_VIEW) < 0)
		return -EACCES;
	memset(out, 0, sizeof(*out));
	out->state = KEY_STATE_VALID;
	/* The last parse of /proc/keys, for a timeout set outside keyfs;
	 * only where the expiry is asked for (an xattr, a rename), never
	 * for a stat, a listing or an open: a parse lists every key on the
	 * system, and asking for one at each stat kept the parsing thread
	 * at a tenth of a CPU while a reader with 30,000 keys on the system
	 * ran (issue 10). */
	pe = NULL;
	if (parts & KEY_INFO_EXPIRY) {
		kproc_peek(b);
		pe = kproc_find(b, serial);
	}
	/* a key under construction, where keyctl read would wait */
	out->state = kproc_construction(b, k, &pe);
	size = 0;
	sized = false;
	if (out->state == KEY_STATE_VALID && !k->positive) {
		/* keyctl read tells a negative key (ENOKEY) before it looks
		 * at permission or at the type's read method; for the
		 * mounter the same call is the size probe below */
		size = kpre_size(b, serial);
		if (recent && kerr_dead(size))
			return -ESTALE;	/* or negative: a describe tells */
		if (size == -ENOKEY)
			out->state = KEY_STATE_NEGATIVE;
		else
			k->positive = true;
		sized = is_mounter(b, c);
	}
	if (out->state != KEY_STATE_VALID || !(parts & KEY_INFO_SIZE))
		size = 0;
	else if (!sized)
		size = key_size(b, c, k);
	if (recent && kerr_dead(size))
		return -ESTALE;
	if (size == -ENOKEY)
		out->state = KEY_STATE_NEGATIVE;
	out->expiry = key_expiry(b, k, pe, out->state);
	if (keyfs_is_keyring_type(k->type)) {
		out->nlink = 2;
		/* listing a keyring may describe its keys: k may move */
		if (kring_index_any(b, c, serial, &x) == 0)
			out->nlink += x->nkeyrings;
	}
	k = kkey_get(b, serial);
	if (!k)
		return -ENOKEY;
	if (!keyfs_is_keyring_type(k->type))
		out->nlink = k->nparents ? (unsigned)k->nparents : 1;
	out->size = size < 0 ? 0 : (size_t)size;
	return 0;
}

static int kernel_describe_part(struct keyfs_backend *b,
				const struct keyfs_cred *c, kserial_t key,
				unsigned parts, struct key_info *out)
{
	struct key_info info;
	struct kkey *k = NULL;
	int64_t described = 0;	/* a dead key's: now */
	int ret = -ESTALE;

	/* an open reads next, a listing probes the size: see kkey_recent */
	if ((parts & KEY_INFO_RECENT) && !(parts & KEY_INFO_EXPIRY) &&
	    (k = kkey_recent(b, c, key)) != NULL) {
		described = k->learned_ns;
		ret = describe_live(b, c, k, parts, true, &info);
	}
	if (ret == -ESTALE) {
		ret = kkey_learn(b, c, key, &k);
		if (ret == 0) {
			described = k->learned_ns;
			ret = describe_live(b, c, k, parts, false, &info);
		} else {
			described = 0;
			ret = describe_dead(b, c, key, ret, &info);
		}
	}
	if (ret < 0)
		return ret;
	k = kkey_get(b, key);
	if (!k)
		return -ENOKEY;
	info.serial = key;
	strcpy(info.type, k->type);
	snprintf(info.desc, sizeof(info.desc), "%s", kkey_desc(k));
	info.uid = k->uid;
	info.gid = k->gid;
	info.perm = k->perm;
	if (!info.nlink)
		info.nlink = keyfs_is_keyring_type(k->type) ? 2 :
			     k->nparents ? (unsigned)k->nparents : 1;
	info.possessed = is_mounter(b, c);
	info.mtime = keyfs_ts(k->mtime_ns);
	info.ctime = keyfs_ts(k->ctime_ns);
	info.described_ns = described;
	*out = info;
	return 0;
}

static void kernel_prefetch(struct keyfs_backend *b, const struct keyfs_cred *c,
			    const kserial_t *keys, size_t n, unsigned parts)
{
	if (n)
		kpre_run(b, c, keys, n, parts);
	else
		kpre_drop(b);
}

/* The size is a keyctl call of its own and the expiry may need a parse of
 * /proc/keys: describe_part asks only for what its caller wants. */
static int kernel_describe(struct keyfs_backend *b, const struct keyfs_cred *c,
			   kserial_t key, struct key_info *out)
{
	return kernel_describe_part(b, c, key, KEY_INFO_SIZE | KEY_INFO_EXPIRY, out);
}

/* ---- reading and listing ---- */

static int kernel_read(struct keyfs_backend *b, const struct keyfs_cred *c,
		       kserial_t key, void **buf_alloc, size_t *len)
{
	int ret = kkey_check(b, c, key, KEYFS_PERM_READ, 0);

	if (ret == 0)
		ret = kproc_ready(b, key);
	if (ret == 0)
		ret = kpayload_read_as(b, c, key, buf_alloc, len);
	/* unlinked behind keyfs's back: unpossessed (EACCES) until the
	 * garbage collector takes it, gone (ENOKEY) after */
	return kring_gone_if_unlinked(b, key, ret);
}

/* Names as `keyctl supports` prints them, by capability byte and bit. */
static const struct {
	const char *name;
	unsigned byte;
	unsigned bit;
} caps[] = {
	{ "have_capabilities", 0, KEYCTL_CAPS0_CAPABILITIES },
	{ "have_persistent_keyrings", 0, KEYCTL_CAPS0_PERSISTENT_KEYRINGS },
	{ "have_dh_compute", 0, KEYCTL_CAPS0_DIFFIE_HELLMAN },
	{ "have_public_key", 0, KEYCTL_CAPS0_PUBLIC_KEY },
	{ "have_big_key_type", 0, KEYCTL_CAPS0_BIG_KEY },
	{ "have_key_invalidate", 0, KEYCTL_CAPS0_INVALIDATE },
	{ "have_restrict_keyring", 0, KEYCTL_CAPS0_RESTRICT_KEYRING },
	{ "have_move_key", 0, KEYCTL_CAPS0_MOVE },
	{ "have_ns_keyring_name", 1, KEYCTL_CAPS1_NS_KEYRING_NAME },
	{ "have_ns_key_tag", 1, KEYCTL_CAPS1_NS_KEY_TAG },
	{ "have_notify", 1, KEYCTL_CAPS1_NOTIFICATIONS },
};

static int kernel_supports(struct keyfs_backend *b, char **text_alloc)
{
	unsigned char bits[2] = { 0, 0 };
	size_t len = 0, cap = 0;
	char *text;

	(void)b;
	if (keyctl_capabilities(bits, sizeof(bits)) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		cap += strlen(caps[i].name) + 3;
	text = malloc(cap + 1);
	if (!text)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		len += (size_t)snprintf(text + len, cap + 1 - len, "%s=%d\n",
					caps[i].name,
					!!(bits[caps[i].byte] & caps[i].bit));
	*text_alloc = text;
	return 0;
}

const struct keyfs_backend_ops backend_kernel_ops = {
	.name			= "kernel",
	.init			= kernel_init,
	.destroy		= kernel_destroy,
	.before_fork		= kernel_before_fork,
	.prefetch		= kernel_prefetch,
	.special		= kernel_special,
	.persistent		= kernel_persistent,
	.describe		= kernel_describe,
	.describe_part		= kernel_describe_part,
	.read			= kernel_read,
	.list			= kernel_list,
	.find			= kernel_find,
	.list_all		= kernel_list_all,
	.add			= kernel_add,
	.update			= kernel_update,
	.link			= kernel_link,
	.unlink			= kernel_unlink,
	.move			= kernel_move,
	.revoke			= kernel_revoke,
	.invalidate		= kernel_invalidate,
	.clear			= kernel_clear,
	.setperm		= kernel_setperm,
	.chown			= kernel_chown,
	.set_timeout		= kernel_set_timeout,
	.restrict_keyring	= kernel_restrict,
	.request		= kernel_request,
	.search			= kernel_search,
	.security		= kernel_security,
	.proc_keys		= kernel_proc_keys,
	.proc_key_users		= kernel_proc_key_users,
	.supports		= kernel_supports,
	.quota			= kernel_quota,
	.check_new		= kernel_check_new,
	.type_info		= kernel_type_info,
};
