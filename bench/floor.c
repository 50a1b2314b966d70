// SPDX-License-Identifier: MIT
/* The bench's interposition floor: an LD_PRELOAD library whose allocators (the glibc family
 * and every C++ operator new and delete, as libheapsnap.so interposes them) only forward to
 * the next definition. What a hook costs that records nothing at all: the call through the
 * caller's PLT into a preloaded library and an indirect jump on, the shape of libheapsnap's
 * pass-by paths without their countdown and filter. A program's operator new that calls
 * malloc goes through two of them, as it does under libheapsnap.so.
 *
 * Each entry of the table starts at a stub (a load-time relocation, before any code runs)
 * that looks every next definition up and calls on, so that the forwarding functions test
 * nothing. dlsym may allocate while we resolve: that memory comes from a static buffer, and
 * should any be handed out, free and realloc go through wrappers that keep it from the real
 * allocator.
 *
 * Built again with each of a byte sampler's two checks at their cheapest, for the bench to
 * weigh on their own (bench.sh, "the checks alone"): FLOOR_COUNTDOWN, malloc counting its size
 * down from a thread-local word and testing it, as libheapsnap.so's pass-by does (it starts so
 * high that no sample is ever due); FLOOR_FILTER, free testing its block's bit in a filter of
 * sampled blocks, by libheapsnap.so's hash of the address, in a static filter of its least size
 * with no bit set. Both: the least a sampler that keeps the real allocator's blocks can do. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FWD __attribute__((visibility("default"), optimize("omit-frame-pointer")))

static char boot[1 << 14] __attribute__((aligned(64)));
static size_t boot_used;
static int resolving, resolved;

static void *boot_alloc(size_t n)
{
	size_t off = __atomic_fetch_add(&boot_used, (n + 63) & ~(size_t)63, __ATOMIC_RELAXED);

	return off + n <= sizeof(boot) ? boot + off : NULL;
}

static int is_boot(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot < sizeof(boot);
}

/* name, return type, parameters, arguments, and what its stub does inside dlsym (boot memory
 * is zero already): every function interposed. */
#define FLOOR_FNS(X) \
	X(malloc, void *, (size_t n), (n), return boot_alloc(n);) \
	X(free, void, (void *p), (p), return;) \
	FLOOR_FWD_FNS(X)
/* Those that only forward in every build: all but malloc and free. */
#define FLOOR_FWD_FNS(X) \
	X(calloc, void *, (size_t n, size_t m), (n, m), return m && n > SIZE_MAX / m ? NULL : boot_alloc(n * m);) \
	X(realloc, void *, (void *p, size_t n), (p, n), return p ? NULL : boot_alloc(n);) \
	X(reallocarray, void *, (void *p, size_t n, size_t m), (p, n, m), __builtin_trap();) \
	X(aligned_alloc, void *, (size_t a, size_t n), (a, n), __builtin_trap();) \
	X(posix_memalign, int, (void **o, size_t a, size_t n), (o, a, n), __builtin_trap();) \
	X(memalign, void *, (size_t a, size_t n), (a, n), __builtin_trap();) \
	X(valloc, void *, (size_t n), (n), __builtin_trap();) \
	X(pvalloc, void *, (size_t n), (n), __builtin_trap();) \
	X(_Znwm, void *, (size_t n), (n), __builtin_trap();) \
	X(_Znam, void *, (size_t n), (n), __builtin_trap();) \
	X(_ZnwmRKSt9nothrow_t, void *, (size_t n, const void *t), (n, t), __builtin_trap();) \
	X(_ZnamRKSt9nothrow_t, void *, (size_t n, const void *t), (n, t), __builtin_trap();) \
	X(_ZnwmSt11align_val_t, void *, (size_t n, size_t a), (n, a), __builtin_trap();) \
	X(_ZnamSt11align_val_t, void *, (size_t n, size_t a), (n, a), __builtin_trap();) \
	X(_ZnwmSt11align_val_tRKSt9nothrow_t, void *, (size_t n, size_t a, const void *t), (n, a, t), __builtin_trap();) \
	X(_ZnamSt11align_val_tRKSt9nothrow_t, void *, (size_t n, size_t a, const void *t), (n, a, t), __builtin_trap();) \
	X(_ZdlPv, void, (void *p), (p), __builtin_trap();) \
	X(_ZdaPv, void, (void *p), (p), __builtin_trap();) \
	X(_ZdlPvm, void, (void *p, size_t n), (p, n), __builtin_trap();) \
	X(_ZdaPvm, void, (void *p, size_t n), (p, n), __builtin_trap();) \
	X(_ZdlPvRKSt9nothrow_t, void, (void *p, const void *t), (p, t), __builtin_trap();) \
	X(_ZdaPvRKSt9nothrow_t, void, (void *p, const void *t), (p, t), __builtin_trap();) \
	X(_ZdlPvSt11align_val_t, void, (void *p, size_t a), (p, a), __builtin_trap();) \
	X(_ZdaPvSt11align_val_t, void, (void *p, size_t a), (p, a), __builtin_trap();) \
	X(_ZdlPvmSt11align_val_t, void, (void *p, size_t n, size_t a), (p, n, a), __builtin_trap();) \
	X(_ZdaPvmSt11align_val_t, void, (void *p, size_t n, size_t a), (p, n, a), __builtin_trap();) \
	X(_ZdlPvSt11align_val_tRKSt9nothrow_t, void, (void *p, size_t a, const void *t), (p, a, t), __builtin_trap();) \
	X(_ZdaPvSt11align_val_tRKSt9nothrow_t, void, (void *p, size_t a, const void *t), (p, a, t), __builtin_trap();)

#define X(name, ret, params, args, fallback) static ret stub_##name params;
FLOOR_FNS(X)
#undef X

/* The forwarding table, each entry at its stub until resolved. */
static struct {
#define X(name, ret, params, args, fallback) ret(*name) params;
	FLOOR_FNS(X)
#undef X
} next = {
#define X(name, ret, params, args, fallback) .name = stub_##name,
	FLOOR_FNS(X)
#undef X
};

static void (*real_free)(void *);
static void *(*real_realloc)(void *, size_t);
static void *(*real_malloc)(size_t);

static void free_keeping_boot(void *p)
{
	if (!is_boot(p))
		real_free(p);
}

static void *realloc_keeping_boot(void *p, size_t n)
{
	void *q;

	if (!is_boot(p))
		return real_realloc(p, n);
	q = real_malloc(n);
	if (q)
		memcpy(q, p, n < 256 ? n : 256);
	return q;
}

/* Every next definition, once. False while resolving (a call from inside dlsym). A program
 * without a C++ runtime never calls the operators, whose entries may stay at their stubs. */
static int resolve(void)
{
	if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE))
		return 1;
	if (__atomic_exchange_n(&resolving, 1, __ATOMIC_ACQ_REL))
		return 0;
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
#define X(name, ret, params, args, fallback) \
	{ \
		void *f = dlsym(RTLD_NEXT, #name); \
		if (f) \
			next.name = (ret(*) params)f; \
	}
	FLOOR_FNS(X)
#undef X
	/* Boot memory handed out (dlsym allocated): free and realloc must keep it back. */
	if (__atomic_load_n(&boot_used, __ATOMIC_RELAXED)) {
		next.free = free_keeping_boot;
		next.realloc = realloc_keeping_boot;
	}
	__atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
	return 1;
}

/* A stub calls on once resolved; inside dlsym, the four that it may call make do. */
#define X(name, ret, params, args, fallback) \
	static ret stub_##name params \
	{ \
		if (!resolve() || next.name == stub_##name) \
			fallback \
		return next.name args; \
	}
FLOOR_FNS(X)
#undef X
#define X(name, ret, params, args, fallback) \
	FWD ret name params \
	{ \
		return next.name args; \
	}
FLOOR_FWD_FNS(X)
#undef X

#ifdef FLOOR_COUNTDOWN
static __thread uint64_t countdown __attribute__((tls_model("initial-exec"))) = 1ull << 62;
#endif
#ifdef FLOOR_FILTER
static uint64_t filter[4096 / 64] __attribute__((aligned(64)));
#endif

FWD void *malloc(size_t n)
{
#ifdef FLOOR_COUNTDOWN
	uint64_t c = countdown;

	if (__builtin_expect(c > n, 1)) {
		countdown = c - n;
		return next.malloc(n);
	}
	countdown = 1ull << 62; /* never reached: a sampler would take its sample here */
#endif
	return next.malloc(n);
}

FWD void free(void *p)
{
#ifdef FLOOR_FILTER
	uint64_t a = (uint64_t)(uintptr_t)p, b = ((a ^ a >> 18) >> 4) & 4095;

	if (__builtin_expect(!(__atomic_load_n(&filter[b >> 6], __ATOMIC_RELAXED) >> (b & 63) & 1), 1))
		return next.free(p);
	__asm__ volatile("" ::: "memory"); /* a sampled block's free would be recorded here */
#endif
	next.free(p);
}
