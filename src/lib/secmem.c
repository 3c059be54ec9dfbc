/* secmem.c: an allocator for payloads: pages excluded from core dumps and locked where the limit allows. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "secmem.h"

/*
 * Every mapping is SLAB_BYTES-aligned and starts with a struct maphdr, so
 * a block finds its mapping by masking its address: a small block needs
 * no header of its own, and a 32-byte payload takes 32 bytes, not 64
 * (issue 10's bytes per key).  A slab's first block is given to the
 * header; a large block follows its header.
 */
#define SLAB_BYTES	((size_t)64 * 1024)
#define CLASS_MIN	16		/* smallest block */
#define NCLASSES	9		/* 16 .. 4096 bytes */
#define HDR		16		/* keeps large blocks 16-byte aligned */

struct maphdr {
	uint32_t cls;		/* NCLASSES: one large block */
	uint32_t pad;
	size_t maplen;		/* large blocks: the mapping's length */
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

static struct maphdr *map_of(const void *p)
{
	return (struct maphdr *)((uintptr_t)p & ~(uintptr_t)(SLAB_BYTES - 1));
}

/* Fresh pages for secrets, SLAB_BYTES-aligned: anonymous, not dumped,
 * locked if allowed.  len is a multiple of the page size. */
static void *pages_new(size_t len)
{
	size_t over = len + SLAB_BYTES;
	char *p = mmap(NULL, over, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + SLAB_BYTES - 1) & ~(uintptr_t)(SLAB_BYTES - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + over > a + len)
		munmap(a + len, (size_t)(p + over - (a + len)));
	(void)madvise(a, len, MADV_DONTDUMP);
	if (mlock(a, len) != 0)
		unlocked_pages = true;
	return a;
}

/* Cut a new slab into blocks of one class; the first holds the header. */
static int slab_add(unsigned cls)
{
	size_t sz = class_size(cls);
	char *p = pages_new(SLAB_BYTES);

	if (!p)
		return -ENOMEM;
	((struct maphdr *)p)->cls = cls;
	for (size_t off = sz < HDR ? HDR : sz; off + sz <= SLAB_BYTES; off += sz) {
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
	struct maphdr *h = pages_new(len);

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

	if (n == 0 || n > SIZE_MAX - HDR - 2 * SLAB_BYTES)
		return NULL;
	while (cls < NCLASSES && class_size(cls) < n)
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
	return b;
}

void secmem_free(void *p)
{
	struct maphdr *h;
	struct freeblk *b;
	unsigned cls;

	if (!p)
		return;
	h = map_of(p);
	cls = h->cls;
	if (cls >= NCLASSES) {
		size_t len = h->maplen;

		explicit_bzero(h, len);
		munmap(h, len);
		return;
	}
	explicit_bzero(p, class_size(cls));
	b = p;
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
