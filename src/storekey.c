/* storekey.c: loading the store's key (crypto.h), and reading a kernel key for it from the mounter's keyrings. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <keyutils.h>

#include "crypto.h"
#include "storekey.h"

int storekey_read_kernel(const char *type, const char *desc, void *buf, size_t *len)
{
	key_serial_t id;
	long n;

	/* No callout: a store key is put there by its owner, never made up
	 * on demand.  The user keyring is searched too, for a mounter whose
	 * session keyring does not link it (su, some services). */
	id = request_key(type, desc, NULL, 0);
	if (id < 0 && errno == ENOKEY)
		id = keyctl_search(KEY_SPEC_USER_KEYRING, type, desc, 0);
	if (id < 0)
		return -errno;
	/* keyctl_read says the payload's whole size even when buf is
	 * smaller, which is how crypto.c sees a key that is too long. */
	n = keyctl_read(id, buf, *len);
	if (n < 0)
		return -errno;
	*len = (size_t)n;
	return 0;
}

int storekey_load(const char *what, const char *spec, struct crypto_key **keyp)
{
	char err[512];
	int ret;

	ret = crypto_key_load(spec, getuid(), storekey_read_kernel, keyp, err, sizeof(err));
	if (ret < 0)
		fprintf(stderr, "keyfs: %s: %s\n", what, err[0] ? err : "cannot load the key");
	return ret;
}
