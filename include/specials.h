/* specials.h: the one table of the special keyrings a user names (@s @u @us @p). */
#ifndef KEYFS_SPECIALS_H
#define KEYFS_SPECIALS_H

#include <stddef.h>

#include "keyfs.h"

struct keyfs_special_name {
	const char *name;		/* "@s": root=, control files, the root's links */
	enum keyfs_special which;
	const char *dir;		/* the mount root's directory for it: "session" */
};

/* @s, @u, @us, @p, in that order (the root's links are numbered by it). */
extern const struct keyfs_special_name keyfs_specials[];
extern const size_t keyfs_nspecials;

/* The entry for "@s" etc.; NULL when name is none of them. */
const struct keyfs_special_name *keyfs_special_by_name(const char *name);

#endif
