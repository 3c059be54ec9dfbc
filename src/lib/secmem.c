/* secmem.c: an allocator for payloads: pages excluded from core dumps and locked where the limit allows. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "secmem.h"

#define SLAB_BYTES	(64 * 1024)
#define CLASS_MIN	32		/* smallest block, header included */
#define NCLASSES	8		/* 32 .. 4096 bytes */
#define HDR		16		/* keeps blocks 16-byte aligned */

/* Before every block: its class, or NCLASSES for a block of its own pages
 * (then its mapping's length). */
struct hdr {
	uint32_t cls;
	uint32_t pad;
	size_t maplen;
};

struct freeblk {
	struct freeblk *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct freeblk *freelist[NCLASSES];
static bool unlocked_pages;

static size_t class_size(unsigned cls)
{
	return (size_t)CLASS_MIN << cls;
}

/* Fresh pages for secrets: anonymous, not dumped, locked if allowed. */
static void *pages_new(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, len, MADV_DONTDUMP);
	if (mlock(p, len) != 0)
		unlocked_pages = true;
	return p;
}

/* Cut a new slab into blocks of one class. */
static int slab_add(unsigned cls)
{
	size_t sz = class_size(cls);
	char *p = pages_new(SLAB_BYTES);

	if (!p)
		return -ENOMEM;
	for (size_t off = 0; off + sz <= SLAB_BYTES; off += sz) {
		struct freeblk *b = (struct freeblk *)(p + off);

		b->next = freelist[cls];
		freelist[cls] = b;
	}
	return 0;
}

static void *big_alloc(size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (n + HDR + (size_t)pg - 1) & ~((size_t)pg - 1);
	struct hdr *h = pages_new(len);

	if (!h)
		return NULL;
	h->cls = NCLASSES;
	h->maplen = len;
	return (char *)h + HDR;
}

void *secmem_alloc(size_t n)
{
	unsigned cls = 0;
	struct freeblk *b;
	struct hdr *h;

	if (n == 0 || n > SIZE_MAX - HDR - SLAB_BYTES)
		return NULL;
	while (cls < NCLASSES && class_size(cls) < n + HDR)
		cls++;
	if (cls == NCLASSES)
		return big_alloc(n);
	pthread_mutex_lock(&lock);
	if (!freelist[cls] && slab_add(cls) < 0) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	b = freelist[cls];
	freelist[cls] = b->next;
	pthread_mutex_unlock(&lock);
	/* Blocks are wiped when freed and slabs start zeroed. */
	memset(b, 0, sizeof(*b));
	h = (struct hdr *)b;
	h->cls = cls;
	return (char *)h + HDR;
}

void secmem_free(void *p)
{
	struct hdr *h;
	struct freeblk *b;
	unsigned cls;

	if (!p)
		return;
	h = (struct hdr *)((char *)p - HDR);
	cls = h->cls;
	if (cls >= NCLASSES) {
		size_t len = h->maplen;

		explicit_bzero(h, len);
		munmap(h, len);
		return;
	}
	explicit_bzero(h, class_size(cls));
	b = (struct freeblk *)h;
	pthread_mutex_lock(&lock);
	b->next = freelist[cls];
	freelist[cls] = b;
	pthread_mutex_unlock(&lock);
}

bool secmem_all_locked(void)
{
	bool all;

	pthread_mutex_lock(&lock);
	all = !unlocked_pages;
	pthread_mutex_unlock(&lock);
	return all;
}
