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
 * xor the session's cookie) and the size asked for, with the block's class in its top byte.
 * The pages come from one reservation (POOL_BYTES of address space, PROT_NONE until used),
 * handed out by a bump pointer and kept, when freed, on lists by their count of pages (per
 * thread for the commonest counts, so that a thread that samples and frees its own blocks
 * shares no line with another).
 *
 * A map of a bit a page (hs_hot.sl.pool_live) says where this session's blocks start, so that
 * telling a pointer of another allocator's from one of ours reads no page of the reservation
 * that may be gone: a block glibc unmapped leaves a hole the kernel may hand to anyone. It is
 * cleared whenever the cookie changes, before and after, so that a block placed meanwhile is
 * either marked with the new cookie or not marked at all (pool_alloc reads the cookie again
 * once it has marked its block). A block freed keeps its bit until then, its first word saying
 * it is free: the pages stay ours, and a thread that samples and frees in turn writes the map
 * once, not twice a sample with a locked instruction each.
 *
 * When the pool cannot place a sample (a size or alignment past its limits, its address space
 * spent, or POOL_MAX_OUT blocks out, which bounds the holes glibc's munmaps leave in the
 * reservation after a detach), the session stops placing for good (pool_stop): the sample,
 * and every later one, goes to the table and filter, and the pool's blocks still live are
 * freed through it as before. No sample is lost to the pool. */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "libheapsnap.h"

#define POOL_COMMIT_STEP (4ull << 20) /* made readable and writable this much at a time */
/* Blocks taken from the lists or the bump pointer and not given back to the lists: each is a
 * hole (a mapping more) in the reservation if glibc frees it after a detach, and the kernel
 * refuses mappings past vm.max_map_count (65530 by default). */
#define POOL_MAX_OUT 16384

/* A freed block's first word: whether its pages past the first are known to be zero. */
#define FREED_CLEAN 0ull
#define FREED_DIRTY 2ull /* never a cookie's (odd) xor a page's address */
#define LIVE_WORDS (POOL_BYTES / PAGE / 64)

static uint8_t *base;
static uint64_t bump, committed, out;
static int lock;
static uint64_t *lists[POOL_CLASSES];
static bool allowed; /* the real allocator is glibc's */
static bool placed;  /* a session placed blocks here since the lists were last trimmed */
static size_t (*usable_size)(void *);

/* The reservation, made once. Without it, sampling keeps blocks where the allocator put them
 * (the filter): so too in a process whose address space is limited (RLIMIT_AS), where
 * POOL_BYTES of it would be taken from the program's own. */
int pool_init(void)
{
	struct rlimit rl;
	uint64_t *lv;
	void *m;

	if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur != RLIM_INFINITY)
		return 0;
	lv = mmap(NULL, LIVE_WORDS * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (lv == MAP_FAILED)
		return 0;
	m = mmap(NULL, POOL_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		munmap(lv, LIVE_WORDS * 8);
		return 0;
	}
	base = m;
	hs_hot.sl.pool_live = lv;
	hs_hot.sl.pool_base = (uint64_t)(uintptr_t)m;
	return 0;
}

/* Whether the next allocator F is glibc's: only glibc's free takes our blocks for its own. */
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
	/* Every real function the hooks forward to (struct real_fns: the table's lines with hook
	 * OWN, ALLOC or FREE, common/allocators.def) is glibc's, or the pool stays unused. */
	allowed = true;
#define HS_ALLOC(sym, kind, args, nest, hook, ret, params) \
	HS_ALLOC_IF_REAL(hook, allowed = allowed && from_glibc((void *)hs_hot.fns.sym);)
#include "allocators.def"
#undef HS_ALLOC
	if (allowed) {
		usable_size = (size_t(*)(void *))dlsym(RTLD_DEFAULT, "malloc_usable_size");
		allowed = from_glibc((void *)usable_size);
	}
}

/* Under the lock, a placing session over: the listed blocks' pages past their first (which
 * holds the list's link) given back to the kernel, so that a detached process keeps a page a
 * block of the memory the pool held. At most POOL_MAX_OUT blocks, largest classes first,
 * since a session's end holds every shard's lock meanwhile: blocks past those stay as they
 * are (said in the README). A thread's kept blocks (a page or two each) are its own to touch. */
static void trim(void)
{
	uint32_t budget = POOL_MAX_OUT;

	for (uint32_t c = POOL_EXACT; c-- > 1;)
		for (uint64_t *w = lists[c]; w && budget; w = (uint64_t *)(uintptr_t)w[1], budget--)
			madvise((uint8_t *)w + PAGE, pool_class_pages(c) * PAGE - PAGE, MADV_DONTNEED);
	placed = false;
}

/* W's bit set. One its last life in this session left set needs no locked write: were the
 * cookie to change meanwhile, the change clears the bit, and the block is glibc's as below. */
static void live_mark(const uint64_t *w)
{
	uint64_t i = ((uint64_t)(uintptr_t)w - hs_hot.sl.pool_base) / PAGE, bit = 1ull << (i % 64);

	if (!(__atomic_load_n(&hs_hot.sl.pool_live[i / 64], __ATOMIC_RELAXED) & bit))
		__atomic_fetch_or(&hs_hot.sl.pool_live[i / 64], bit, __ATOMIC_SEQ_CST);
}

static void live_unmark(const uint64_t *w)
{
	uint64_t i = ((uint64_t)(uintptr_t)w - hs_hot.sl.pool_base) / PAGE;

	__atomic_fetch_and(&hs_hot.sl.pool_live[i / 64], ~(1ull << (i % 64)), __ATOMIC_SEQ_CST);
}

/* Under the lock: no block marked, as far as the bump pointer has reached. */
static void live_clear(void)
{
	for (uint64_t i = 0; i < (bump / PAGE + 63) / 64; i++)
		__atomic_store_n(&hs_hot.sl.pool_live[i], 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* The session's later samples go to the table and filter (see the top of this file): the
 * range's length first, so that a free that reads the new length with the old start takes
 * the full path. Under the lock, as pool_switch publishes them, so that a stop of a session
 * that has ended cannot leave a later one's range half written. Said once a session, in a
 * counter. */
void pool_stop(void)
{
	spin_lock(&lock);
	if (__atomic_load_n(&hs_hot.pool_lo, __ATOMIC_RELAXED)) {
		__atomic_store_n(&hs_hot.pool_len, ~0ull, __ATOMIC_RELEASE);
		__atomic_store_n(&hs_hot.pool_lo, 0, __ATOMIC_RELEASE);
		count(HS_CNT_POOL_STOPPED);
	}
	spin_unlock(&lock);
}

/* Under the caller's choice to sample, at every session's start and end: whether sampled
 * blocks go here. A new cookie each time, so that the blocks of an earlier session are not
 * taken for this one's: they go to glibc, whose free unmaps them and whose realloc remaps
 * them, as if their allocations had never been seen (they were not, this session). */
void pool_switch(bool sampling)
{
	bool on = sampling && base && allowed && hs_hot.sl.shm && hs_hot.sl.shm->sample_rate >= POOL_MIN_RATE;
	uint64_t c = (now_ns() ^ (uint64_t)(uintptr_t)&on) * 0x9e3779b97f4a7c15ull;

	spin_lock(&lock);
	/* In between, every free takes the full path (lo set, len ~0), never passes a block by. */
	__atomic_store_n(&hs_hot.pool_len, ~0ull, __ATOMIC_RELEASE);
	__atomic_store_n(&hs_hot.pool_lo, 0, __ATOMIC_RELEASE);
	if (hs_hot.sl.pool_live) {
		live_clear();
		__atomic_store_n(&hs_hot.sl.pool_cookie, c | 1, __ATOMIC_SEQ_CST);
		live_clear();
	}
	if (placed && !on)
		trim();
	if (on) {
		placed = true;
		__atomic_store_n(&hs_hot.pool_lo, hs_hot.sl.pool_base, __ATOMIC_RELEASE);
		__atomic_store_n(&hs_hot.pool_len, POOL_BYTES, __ATOMIC_RELEASE);
	}
	spin_unlock(&lock);
}

/* Under the lock: PAGES more from the bump pointer, made usable as needed; NULL when the
 * reservation is spent or the kernel refuses the memory. Its pages are zero. */
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

/* A block of N bytes aligned to A (a power of two, 16 or more), the session's sampled block,
 * or NULL when the pool cannot place it, which stops the pool (pool_stop): the caller puts
 * the sample in the table. ZERO: its bytes read as zero. *KEPT (if KEPT): whether the block
 * is the pool's; not when NULL, nor when the session changed while it was placed, which
 * makes it glibc's: a sample then goes in the table (record_alloc). */
void *pool_alloc(struct tstate *t, size_t n, size_t a, bool zero, bool *kept)
{
	uint64_t room = a > 32 ? a : 32, pages, *w = NULL, off, *chunk, cookie;
	bool clean = false, ours;
	uint32_t c;

	if (kept)
		*kept = false;

	if (a > POOL_MAX_ALIGN || n > POOL_BYTES / 2)
		goto full;
	cookie = __atomic_load_n(&hs_hot.sl.pool_cookie, __ATOMIC_SEQ_CST);
	pages = (room + n + PAGE - 1) / PAGE;
	c = pool_class_of(pages);
	pages = pool_class_pages(c);
	if (t && c < POOL_TCACHE_CLASSES && t->pool_n[c])
		w = t->pool_cache[c][--t->pool_n[c]];
	if (!w) {
		spin_lock(&lock);
		if (out < POOL_MAX_OUT) {
			w = lists[c];
			if (w) {
				lists[c] = (uint64_t *)(uintptr_t)w[1];
				clean = c >= POOL_EXACT && w[0] == FREED_CLEAN; /* given back at pool_put */
			} else if ((w = bump_take(pages))) {
				clean = true;
			}
			out += w != NULL;
		}
		spin_unlock(&lock);
		if (!w)
			goto full;
	}
	/* The user's block at the first multiple of A past our two words and the chunk's: a
	 * chunk's user offset in its page is a power of two, as munmap_chunk checks. */
	off = (((uint64_t)(uintptr_t)w + 32 + a - 1) & ~(uint64_t)(a - 1)) - (uint64_t)(uintptr_t)w;
	if (zero && !clean)
		memset((uint8_t *)w + off, 0, n);
	chunk = (uint64_t *)((uint8_t *)w + off) - 2;
	chunk[0] = off - 16;                                /* prev_size: back to the mapping */
	chunk[1] = (pages * PAGE - (off - 16)) | POOL_CHUNK_IS_MMAPPED;
	w[1] = n | (uint64_t)c << POOL_CLASS_SHIFT;
	live_mark(w);
	__atomic_store_n(&w[0], cookie ^ (uint64_t)(uintptr_t)w, __ATOMIC_RELAXED);
	/* The session changed meanwhile: the block is glibc's (see the top of this file). */
	ours = __atomic_load_n(&hs_hot.sl.pool_cookie, __ATOMIC_SEQ_CST) == cookie;
	if (!ours)
		live_unmark(w);
	if (kept)
		*kept = ours;
	return (uint8_t *)w + off;
full:
	pool_stop();
	return NULL;
}

/* P, a block of ours whose first page is W (pool_block), given back: kept for the next sample
 * of its count of pages. A second free of P finds no block here, nor a chunk glibc would
 * unmap: glibc's free reports it, as it would its own. */
void pool_put(struct tstate *t, void *p, uint64_t *w)
{
	uint32_t c = (uint32_t)(w[1] >> POOL_CLASS_SHIFT);
	uint64_t pages = pool_class_pages(c);
	int e;

	/* No chunk for glibc to unmap, and a first word no cookie gives: the bit stays (see
	 * the top of this file). */
	((uint64_t *)p)[-1] = 0;
	__atomic_store_n(&w[0], FREED_DIRTY, __ATOMIC_RELAXED);
	if (t && c < POOL_TCACHE_CLASSES && t->pool_n[c] < POOL_TCACHE) {
		t->pool_cache[c][t->pool_n[c]++] = w;
		return;
	}
	e = errno; /* free keeps errno, and madvise may fail */
	/* The address space is kept, not the memory; calloc trusts its zeros only if the kernel
	 * took it (locked pages, a seccomp filter may refuse). */
	if (c >= POOL_EXACT && !madvise(w, pages * PAGE, MADV_DONTNEED))
		w[0] = FREED_CLEAN;
	spin_lock(&lock);
	w[1] = (uint64_t)(uintptr_t)lists[c];
	lists[c] = w;
	out--;
	spin_unlock(&lock);
	errno = e;
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
			out--;
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

/* The bytes a realloc that moves OLD to a block of N bytes copies: as many as OLD may hold
 * (malloc_usable_size's, which glibc reads from the chunk's header, ours included), up to N. */
uint64_t pool_copy_size(void *old, uint64_t n)
{
	uint64_t have = usable_size(old);

	return have < n ? have : n;
}
