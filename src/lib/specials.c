/* specials.c: the special keyrings' names, numbers and root directories (specials.h). */
#include <string.h>

#include "specials.h"

const struct keyfs_special_name keyfs_specials[] = {
	{ "@s", KEYFS_SPEC_SESSION, "session" },
	{ "@u", KEYFS_SPEC_USER, "user" },
	{ "@us", KEYFS_SPEC_USER_SESSION, "user-session" },
	{ "@p", KEYFS_SPEC_PROCESS, "process" },
};

const size_t keyfs_nspecials = sizeof(keyfs_specials) / sizeof(keyfs_specials[0]);

const struct keyfs_special_name *keyfs_special_by_name(const char *name)
{
	for (size_t i = 0; i < keyfs_nspecials; i++)
		if (strcmp(name, keyfs_specials[i].name) == 0)
			return &keyfs_specials[i];
	return NULL;
}
