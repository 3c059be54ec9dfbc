/* json-alloc.h: the wiping allocator every jansson user in the store installs first. */
#ifndef KEYFS_JSON_ALLOC_H
#define KEYFS_JSON_ALLOC_H

/* Install the wiping allocator in jansson, once per process; call before
 * any other jansson call.  Thread-safe. */
void store_json_init(void);

#endif
