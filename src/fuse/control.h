/* control.h: what the files in .keyfs/ do when written or read. */
#ifndef KEYFS_CONTROL_H
#define KEYFS_CONTROL_H

#include "ctx.h"
#include "node.h"

/* Carry out one command written to control file f; all or nothing.
 * 0 or -errno (EINVAL for bad syntax). */
int control_write(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		  enum ctl_file f, const char *buf, size_t len);

/* The text a readable control file shows (keys, key-users, supports),
 * made at open; *text_alloc is malloc'd and belongs to the caller. */
int control_read_alloc(struct keyfs_ctx *ctx, const struct keyfs_cred *c,
		       enum ctl_file f, char **text_alloc, size_t *len);

#endif
