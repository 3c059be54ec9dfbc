/* detach.c: threads that finish what a caller gave up waiting for, a bounded number of them. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "kernel.h"

struct kdetach *kdetach_new(void)
{
	struct kdetach *d = calloc(1, sizeof(*d));

	if (d)
		atomic_init(&d->refs, 1);
	return d;
}

void kdetach_put(struct kdetach *d)
{
	if (d && atomic_fetch_sub(&d->refs, 1) == 1)
		free(d);
}

/* A thread takes no signals: the daemon's are for its main thread. */
int kdetach_run(struct kdetach *d, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int ret;

	if (!d)
		return -ENOMEM;
	/* the backend's own reference plus KDETACH_MAX threads */
	if (atomic_fetch_add(&d->refs, 1) > KDETACH_MAX) {
		kdetach_put(d);
		return -EAGAIN;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&t, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (ret != 0)
		kdetach_put(d);
	return -ret;
}
