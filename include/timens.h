/* timens.h: times held as nanoseconds since the epoch, half a struct timespec, for the backends' per-key records. */
#ifndef KEYFS_TIMENS_H
#define KEYFS_TIMENS_H

#include <stdint.h>
#include <time.h>

/* Saturating: a store may hold any time (about 292 years either side of
 * 1970 fit). */
static inline int64_t keyfs_ns(struct timespec ts)
{
	const int64_t lim = INT64_MAX / 1000000000 - 1;

	if (ts.tv_sec > lim)
		return lim * 1000000000;
	if (ts.tv_sec < -lim)
		return -lim * 1000000000;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline struct timespec keyfs_ts(int64_t ns)
{
	int64_t sec = ns / 1000000000, rem = ns % 1000000000;

	if (rem < 0) {		/* times before 1970, from a store */
		rem += 1000000000;
		sec--;
	}
	return (struct timespec){ .tv_sec = (time_t)sec, .tv_nsec = (long)rem };
}

/* CLOCK_REALTIME now. */
static inline int64_t keyfs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return keyfs_ns(ts);
}

/* CLOCK_MONOTONIC now, for ages. */
static inline int64_t keyfs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return keyfs_ns(ts);
}

#endif
