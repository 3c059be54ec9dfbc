/* backend.c: the registry of backends, by name. */
#include <string.h>

#include "backend.h"

static const struct keyfs_backend_ops *const backends[] = {
	&backend_kernel_ops,
	&backend_memory_ops,
};

const struct keyfs_backend_ops *backend_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}
