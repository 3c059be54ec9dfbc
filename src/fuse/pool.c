/* pool.c: keyfs's worker threads: the thread that answered the last request reads the next (pool.h). */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <fuse_lowlevel.h>

#include "pool.h"

/*
 * One worker at a time holds the right to read the next request (the
 * reader).  It keeps that right while it runs the request it read, and
 * reads again when done: requests wait in the kernel meanwhile, as they
 * would wait for keyfs's lock on any other thread.  A handler that is
 * about to wait without that lock passes the right on (pool_may_block):
 * to the idle worker that ran last (its stack and buffer are the
 * warmest), or to a new one.  With every worker busy and no more allowed,
 * nobody holds it and the first to finish takes it.
 *
 * Passing the right on whenever more requests were waiting (so that a
 * second thread reads while the first runs its request) was measured and
 * dropped: a close(2) sends its RELEASE without waiting, so the caller's
 * next request is nearly always waiting already, and the second thread
 * then only waited for the lock; a repeated cat took 3x as long, and four
 * parallel readers got less done than with one thread reading.
 */
struct worker {
	struct pool *pool;
	pthread_t thread;
	pthread_cond_t wake;	/* an idle worker waits here to be made reader */
	struct worker *next_idle;
	bool idle;
	struct fuse_buf buf;	/* the request it read; mem is libfuse's size */
};

struct pool {
	struct fuse_session *se;
	pthread_mutex_t mu;
	sem_t finish;		/* posted by a worker that saw the session end */
	struct worker *reader;	/* may read next; NULL: whoever finishes first */
	struct worker *idle;	/* the last to go idle first */
	struct worker *workers;	/* max of them; nstarted have threads */
	unsigned max, nstarted;
	bool stop;
	bool unmounted;		/* the device said so (not a signal) */
	bool failed;
};

static void *worker_run(void *arg);

/* Workers take no signals: the thread in pool_run does, so that a signal
 * ending the session wakes it. */
static int start_worker(struct pool *p)
{
	struct worker *w = &p->workers[p->nstarted];
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&w->thread, NULL, worker_run, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret != 0)
		return -ret;
	pthread_setname_np(w->thread, "keyfs-worker");
	p->nstarted++;
	return 0;
}

/* Give the right to read to another worker (p->mu held). */
static void pass_on(struct pool *p)
{
	struct worker *w = p->idle;

	if (w) {
		p->idle = w->next_idle;
		w->idle = false;
		p->reader = w;
		pthread_cond_signal(&w->wake);
	} else if (p->nstarted < p->max) {
		p->reader = &p->workers[p->nstarted];
		if (start_worker(p) < 0)
			p->reader = NULL;
	} else {
		p->reader = NULL;
	}
}

static void stop_all(struct pool *p)
{
	p->stop = true;
	for (struct worker *w = p->idle; w; w = w->next_idle)
		pthread_cond_signal(&w->wake);
	sem_post(&p->finish);
}

/* Wait until this worker may read (p->mu held); false when stopping. */
static bool become_reader(struct pool *p, struct worker *w)
{
	while (!p->stop && p->reader != w) {
		if (!p->reader) {
			p->reader = w;
			break;
		}
		if (!w->idle) {
			w->idle = true;
			w->next_idle = p->idle;
			p->idle = w;
		}
		pthread_cond_wait(&w->wake, &p->mu);
	}
	return !p->stop;
}

/* Read one request; only here may the thread be cancelled (pool_run
 * cancels a reader that waits for a request that will never come). */
static int receive(struct pool *p, struct worker *w)
{
	int ret;

	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	ret = fuse_session_receive_buf(p->se, &w->buf);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	return ret;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->pool;
	int ret;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&p->mu);
	while (become_reader(p, w)) {
		pthread_mutex_unlock(&p->mu);
		ret = receive(p, w);
		if (ret > 0 && !fuse_session_exited(p->se))
			fuse_session_process_buf(p->se, &w->buf);
		pthread_mutex_lock(&p->mu);
		if (ret == -EINTR)
			continue;
		if (ret <= 0 || fuse_session_exited(p->se)) {
			/* libfuse answers 0 for an unmount (ENODEV) */
			p->unmounted |= ret == 0;
			p->failed |= ret < 0;
			stop_all(p);
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

bool pool_may_block(struct pool *p)
{
	bool read;

	if (!p)
		return true;
	pthread_mutex_lock(&p->mu);
	/* a reader seen here has its thread: it is named and started
	 * under p->mu, and unnamed there if the start fails */
	if (p->reader && pthread_equal(p->reader->thread, pthread_self()))
		pass_on(p);
	read = p->reader != NULL;
	pthread_mutex_unlock(&p->mu);
	return read;
}

static void pool_end(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	stop_all(p);
	pthread_mutex_unlock(&p->mu);
	/* A reader waiting in read(2) hears of a signal from nobody. */
	for (unsigned i = 0; i < p->nstarted; i++)
		pthread_cancel(p->workers[i].thread);
	for (unsigned i = 0; i < p->nstarted; i++) {
		pthread_join(p->workers[i].thread, NULL);
		free(p->workers[i].buf.mem);
		pthread_cond_destroy(&p->workers[i].wake);
	}
}

int pool_run(struct fuse_session *se, unsigned max_threads,
	     struct pool **poolp)
{
	struct pool p = { .se = se, .max = max_threads ? max_threads : 1 };
	int ret;

	p.workers = calloc(p.max, sizeof(*p.workers));
	if (!p.workers)
		return -1;
	for (unsigned i = 0; i < p.max; i++) {
		p.workers[i].pool = &p;
		pthread_cond_init(&p.workers[i].wake, NULL);
	}
	pthread_mutex_init(&p.mu, NULL);
	sem_init(&p.finish, 0, 0);
	*poolp = &p;
	pthread_mutex_lock(&p.mu);
	p.reader = &p.workers[0];
	ret = start_worker(&p);
	pthread_mutex_unlock(&p.mu);
	/* A signal (fuse_set_signal_handlers) ends the session and this wait. */
	while (ret == 0 && !fuse_session_exited(se))
		sem_wait(&p.finish);
	pool_end(&p);
	*poolp = NULL;	/* no handler runs now */
	for (unsigned i = p.nstarted; i < p.max; i++)
		pthread_cond_destroy(&p.workers[i].wake);
	free(p.workers);
	sem_destroy(&p.finish);
	pthread_mutex_destroy(&p.mu);
	fuse_session_reset(se);
	if (ret < 0 || p.failed)
		return -1;
	return p.unmounted ? 0 : 1;
}
