// SPDX-License-Identifier: MIT
/* libheapsnap.so, sampled blocks on pages of their own. Sampling at POOL_MIN_RATE or more
 * over glibc's allocator, a sampled allocation is placed here instead of in glibc's heap, so
 * that a free tells it from every other block by its address alone (hs_hot.pool_lo and
 * pool_len: one compare), where the filter of sampled blocks costs a hash and a load of a
 * line the samples write. Each block is laid out as one of glibc's mmapped chunks (a chunk
 * header whose size has IS_MMAPPED, its prev_size the offset from the block's first page),
 * so that glibc's own free, realloc and malloc_usable_size take it for one: after an
 * injected session detaches, or when a call reaches glibc without passing a hook, glibc
 * unmaps it (munmap_chunk) and the program runs on unharmed.
 *
 * A block's first 16 bytes are ours: a word that names it as this session's (its address
 * xor the session's cookie) and the size asked for. The pages come from one reservation
 * (POOL_BYTES of address space, PROT_NONE until used), handed out by a bump pointer and
 * kept, when freed, on lists by their count of pages (per thread for the commonest counts,
 * so that a thread that samples and frees its own blocks shares no line with another). */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "libheapsnap.h"

#define PAGE 4096ull
#define POOL_COMMIT_STEP (4ull << 20)   /* made readable and writable this much at a time */
#define POOL_EXACT 64                   /* up to this many pages, a list per count */
#define POOL_CLASSES (POOL_EXACT + 31)  /* then a list per power of two */
#define CHUNK_IS_MMAPPED POOL_CHUNK_IS_MMAPPED

static uint8_t *base;
static uint64_t bump, committed;
static int lock;
static uint64_t *lists[POOL_CLASSES];
static bool allowed; /* the real allocator is glibc's */
static size_t (*usable_size)(void *);

/* A count of pages' list, and the pages a block of its list spans: past POOL_EXACT, counts
 * are rounded up to a power of two, so that freed address space is reused. */
static uint32_t class_of(uint64_t pages)
{
	if (pages <= POOL_EXACT)
		return (uint32_t)pages - 1;
	return POOL_EXACT + (uint32_t)(64 - __builtin_clzll(pages - 1)) - 7;
}

static uint64_t class_pages(uint32_t c)
{
	return c < POOL_EXACT ? c + 1 : 1ull << (c - POOL_EXACT + 7);
}

/* The reservation, made once. Without it, sampling keeps blocks where the allocator put them
 * (the filter): so too in a process whose address space is limited (RLIMIT_AS), where 64 GiB
 * of it would be taken from the program's own. */
int pool_init(void)
{
	struct rlimit rl;
	void *m;

	if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur != RLIM_INFINITY)
		return 0;
	m = mmap(NULL, POOL_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	base = m;
	hs_hot.pool_base = (uint64_t)(uintptr_t)m;
	return 0;
}

/* Whether the next allocators are glibc's: only glibc's free takes our blocks for its own. */
static bool from_glibc(const void *f)
{
	Dl_info di;
	const char *b;

	if (!f || !dladdr(f, &di) || !di.dli_fname)
		return false;
	b = strrchr(di.dli_fname, '/');
	b = b ? b + 1 : di.dli_fname;
	return !strncmp(b, "libc.so.", 8);
}

void pool_resolved(void *handle)
{
	(void)handle;
	allowed = from_glibc((void *)real.malloc) && from_glibc((void *)real.free) &&
		  from_glibc((void *)real.calloc) && from_glibc((void *)real.realloc) &&
		  from_glibc((void *)real.posix_memalign) && from_glibc((void *)real.memalign) &&
		  from_glibc((void *)real.aligned_alloc) && from_glibc((void *)real.valloc) &&
		  from_glibc((void *)real.pvalloc);
	if (allowed) {
		usable_size = (size_t(*)(void *))dlsym(RTLD_DEFAULT, "malloc_usable_size");
		allowed = from_glibc((void *)usable_size);
	}
}

/* Under the caller's choice to sample: whether sampled blocks go here this session. A new
 * cookie each time, so that blocks of an earlier session are not taken for this one's: their
 * frees go to glibc, which unmaps them, as their allocations were never seen. */
void pool_switch(bool sampling)
{
	bool on = sampling && base && allowed && shm && shm->sample_rate >= POOL_MIN_RATE;

	if (on) {
		uint64_t c = (now_ns() ^ (uint64_t)(uintptr_t)&on) * 0x9e3779b97f4a7c15ull;

		__atomic_store_n(&hs_hot.pool_cookie, c | 1, __ATOMIC_RELAXED);
	}
	/* In between, every free takes the full path (lo set, len ~0), never passes a block by. */
	if (on) {
		__atomic_store_n(&hs_hot.pool_lo, hs_hot.pool_base, __ATOMIC_RELEASE);
		__atomic_store_n(&hs_hot.pool_len, POOL_BYTES, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&hs_hot.pool_len, ~0ull, __ATOMIC_RELEASE);
		__atomic_store_n(&hs_hot.pool_lo, 0, __ATOMIC_RELEASE);
	}
}

/* Under the lock: PAGES more from the bump pointer, made usable as needed; NULL when the
 * reservation is spent or the kernel refuses the memory. */
static uint64_t *bump_take(uint64_t pages)
{
	uint64_t len = pages * PAGE, *w;

	if (len > POOL_BYTES - bump)
		return NULL;
	if (bump + len > committed) {
		uint64_t want = (bump + len - committed + POOL_COMMIT_STEP - 1) & ~(POOL_COMMIT_STEP - 1);

		if (want > POOL_BYTES - committed)
			want = POOL_BYTES - committed;
		if (mprotect(base + committed, want, PROT_READ | PROT_WRITE))
			return NULL;
		committed += want;
	}
	w = (uint64_t *)(base + bump);
	bump += len;
	return w;
}

/* A block of N bytes aligned to A (a power of two, 16 or more), the session's sampled block:
 * NULL when none can be had (counted: the sample is lost). ZERO: its bytes zeroed. */
void *pool_alloc(struct tstate *t, size_t n, size_t a, bool zero)
{
	uint64_t room = a > 32 ? a : 32, pages, *w = NULL, off, *chunk;
	uint32_t c;

	if (n > POOL_MAX_BLOCK || room > POOL_MAX_BLOCK)
		goto lost;
	pages = (room + n + PAGE - 1) / PAGE;
	c = class_of(pages);
	pages = class_pages(c);
	if (t && c < POOL_TCACHE_CLASSES && t->pool_n[c])
		w = t->pool_cache[c][--t->pool_n[c]];
	if (!w) {
		spin_lock(&lock);
		w = lists[c];
		if (w)
			lists[c] = (uint64_t *)(uintptr_t)w[1];
		else
			w = bump_take(pages);
		spin_unlock(&lock);
		if (!w)
			goto lost;
	}
	/* The user's block at the first multiple of A past our two words and the chunk's. */
	off = (((uint64_t)(uintptr_t)w + 32 + a - 1) & ~(uint64_t)(a - 1)) - (uint64_t)(uintptr_t)w;
	if (zero)
		memset((uint8_t *)w + off, 0, n);
	chunk = (uint64_t *)((uint8_t *)w + off) - 2;
	chunk[0] = off - 16;                                /* prev_size: back to the mapping */
	chunk[1] = (pages * PAGE - (off - 16)) | CHUNK_IS_MMAPPED;
	w[1] = n;
	__atomic_store_n(&w[0], __atomic_load_n(&hs_hot.pool_cookie, __ATOMIC_RELAXED) ^ (uint64_t)(uintptr_t)w,
			 __ATOMIC_RELAXED);
	return (uint8_t *)w + off;
lost:
	count(HS_CNT_LIVE_FULL);
	return NULL;
}

uint64_t pool_size(const void *p)
{
	return pool_block(p)[1];
}

/* P, a block of ours, given back: kept for the next sample of its count of pages. */
void pool_put(struct tstate *t, void *p)
{
	const uint64_t *ch = (const uint64_t *)p - 2;
	uint64_t *w = pool_block(p), pages = ((ch[1] & ~7ull) + ch[0]) / PAGE;
	uint32_t c = class_of(pages);

	__atomic_store_n(&w[0], 0, __ATOMIC_RELAXED); /* no longer a block: a second free is glibc's */
	if (t && c < POOL_TCACHE_CLASSES && t->pool_n[c] < POOL_TCACHE) {
		t->pool_cache[c][t->pool_n[c]++] = w;
		return;
	}
	if (pages > POOL_EXACT)
		madvise(w, pages * PAGE, MADV_DONTNEED); /* the address space is kept, not the memory */
	spin_lock(&lock);
	w[1] = (uint64_t)(uintptr_t)lists[c];
	lists[c] = w;
	spin_unlock(&lock);
}

/* A thread that ends gives its kept pages back. */
void pool_thread_exit(struct tstate *t)
{
	spin_lock(&lock);
	for (uint32_t c = 0; c < POOL_TCACHE_CLASSES; c++)
		while (t->pool_n[c]) {
			uint64_t *w = t->pool_cache[c][--t->pool_n[c]];

			w[1] = (uint64_t)(uintptr_t)lists[c];
			lists[c] = w;
		}
	spin_unlock(&lock);
}

void pool_lock(void)
{
	spin_lock(&lock);
}

void pool_unlock(void)
{
	spin_unlock(&lock);
}

/* Copying a block of glibc's that a sampled realloc moves here: the bytes it may hold. */
uint64_t pool_copy_size(void *old, uint64_t n)
{
	uint64_t have = pool_mine(old) ? pool_size(old) : usable_size(old);

	return have < n ? have : n;
}
