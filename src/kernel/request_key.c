/* request_key.c: request_key(2) and search, for the mounter and for other callers. */
#include <errno.h>

#include "kernel.h"

/* keyfs's thread, process and session keyrings, the ones request_key(2)
 * searches for keyfs; 0 where there is none. */
static void stranger_tops(kserial_t tops[ST_TOPS])
{
	static const int which[ST_TOPS] = {
		KEY_SPEC_THREAD_KEYRING, KEY_SPEC_PROCESS_KEYRING,
		KEY_SPEC_SESSION_KEYRING,
	};

	for (int i = 0; i < ST_TOPS; i++) {
		key_serial_t s = keyctl_get_keyring_ID(which[i], 0);

		tops[i] = s < 0 ? 0 : s;
	}
}

/*
 * request_key(2) searches keyfs's own keyrings.  The mounter possesses
 * them and makes the call as keyfs.  Any other caller possesses nothing:
 * the search, the link into dest and a callout's construction run without
 * keyfs's possession (stranger_call), so the kernel finds only keys the
 * caller may search by its own ids, and refuses the link (link permission
 * on the key, write on dest) before it makes it.
 */
static int request_common(struct keyfs_backend *b, const struct keyfs_cred *c,
			  const char *type, const char *desc,
			  const char *callout, kserial_t dest, kserial_t *out)
{
	struct stranger st = {
		.op = ST_REQUEST, .type = type, .desc = desc,
		.callout = callout, .ring = dest,
	};
	long s;
	struct kkey *k;
	int ret = 0;

	if (dest)
		ret = kkey_check(b, c, dest, KEYFS_PERM_WRITE, 0);
	if (ret < 0)
		return ret;
	/* With a callout the kernel runs request-key(8) and waits for it, for
	 * as long as it takes: other requests go on meanwhile.  Nothing below
	 * touches the backend's caches until the lock is back. */
	if (callout && b->unlock)
		b->unlock(b->lock_arg);
	if (is_mounter(b, c)) {
		s = request_key(type, desc, callout, dest);
		if (s < 0)
			s = -errno;
	} else {
		stranger_tops(st.tops);
		s = stranger_call(c, &st);
	}
	if (callout && b->relock)
		b->relock(b->lock_arg);
	ret = s < 0 ? (int)s : 0;
	/* a failed construction may still link a negative key into dest */
	if (ret < 0 && dest)
		kring_note_unknown(b, dest);
	if (ret < 0)
		return ret;
	/* the match may be inexact for some types: describe what was found */
	k = kkey_known(b, c, (kserial_t)s);
	if (dest) {
		kkey_touch_payload(kkey_get(b, dest));
		kring_note_link(b, dest, k);
	}
	*out = (kserial_t)s;
	return 0;
}

int kernel_request(struct keyfs_backend *b, const struct keyfs_cred *c,
		   const char *type, const char *desc,
		   const char *callout, kserial_t dest, kserial_t *out)
{
	return request_common(b, c, type, desc, callout, dest, out);
}

int kernel_search(struct keyfs_backend *b, const struct keyfs_cred *c,
		  const char *type, const char *desc, kserial_t *out)
{
	return request_common(b, c, type, desc, NULL, 0, out);
}
