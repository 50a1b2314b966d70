// SPDX-License-Identifier: MIT
/* libheapsnap.so, its hooks: the glibc family, every C++ operator new and delete, each
 * forwarding to the next definition (glibc's, or an allocator preloaded after us) and
 * recording the outermost call. Sampled, an allocation the draw passes by costs a
 * thread-local countdown (7 instructions for malloc, no compare before it), a free of a
 * block never sampled a compare with the pool's range (5: outside_pool), or where sampled blocks
 * are not the pool's, one bit of its shard's filter (20), before the jump on; a call nested
 * in another hook forwards at once, and a plain new or delete of the C++ runtime's goes
 * straight to malloc or free. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "libheapsnap.h"

/* Each line of the allocator table (common/allocators.def) whose hook is written here by hand
 * (OWN): its kind, for that hook to record, and the mark its HOOK_WRITTEN must find. The end of
 * this file checks that every such line has its hook. */
#define HS_ALLOC(sym, kind, args, nest, hook, ret, params) HS_LISTED_##hook(sym, kind)
#define HS_LISTED_OWN(sym, kind) enum { hs_kind_of_##sym = HS_KIND_##kind };
#define HS_LISTED_ALLOC(sym, kind)
#define HS_LISTED_FREE(sym, kind)
#define HS_LISTED_NEW(sym, kind)
#define HS_LISTED_DELETE(sym, kind)
#define HS_LISTED_BPF(sym, kind)
#define HS_LISTED_RUST(sym, kind)
#include "allocators.def"
#undef HS_ALLOC
/* After a hand-written hook: fails to compile when the table has no OWN line for it. */
#define HOOK_WRITTEN(sym) enum { hs_written_##sym = hs_kind_of_##sym + 1 }

/* ---- the real allocators ---- */

/* dlsym itself allocates: what it asks for before the real functions are known comes from
 * here, and is never given back. */
char boot[1 << 16] __attribute__((aligned(64), visibility("hidden")));
static size_t boot_used;
static int resolving;

bool boot_in_use(void)
{
	return __atomic_load_n(&boot_used, __ATOMIC_RELAXED) != 0;
}

void *boot_alloc(size_t n)
{
	size_t off = __atomic_fetch_add(&boot_used, (n + 63) & ~(size_t)63, __ATOMIC_RELAXED);

	return off + n <= sizeof(boot) ? boot + off : NULL;
}

void *next_handle = RTLD_NEXT;

void resolve(void)
{
	if (hs_hot.free1 || __atomic_exchange_n(&resolving, 1, __ATOMIC_ACQ_REL))
		return;
	resolve_from(RTLD_NEXT);
}

/* Preloaded, the real functions are the next definitions after ours (RTLD_NEXT). Injected
 * (RTLD_DEFAULT), they are those the program's own calls reached before we came: each from
 * the first module that defines it (an allocator the program links wins over glibc's), never
 * from a symbol lookup, which in a non-PIE executable with a canonical PLT entry for malloc
 * gives that entry, a jump through a GOT entry that will be our hook. */
static void *lookup(void *handle, const char *name)
{
	return handle == RTLD_DEFAULT ? got_find_definition(name) : dlsym(handle, name);
}

void resolve_from(void *handle)
{
	next_handle = handle;
#define R(f, name) hs_hot.fns.f = (__typeof__(hs_hot.fns.f))lookup(handle, name)
#define HS_ALLOC(sym, kind, args, nest, hook, ret, params) HS_ALLOC_IF_REAL(hook, R(sym, #sym);)
#include "allocators.def"
#undef HS_ALLOC
	R(dlopen, "dlopen");
	R(setname, "pthread_setname_np");
	R(prctl, "prctl");
#undef R
	hs_hot.free1 = hs_hot.fns.free;
	pass_publish();
	pool_resolved(handle);
}

/* The hook's frame: where a recorded allocation's stack walk starts. In an always_inline
 * helper, the frame of the hook it is inlined into (the builtin is expanded after inlining),
 * read where the event is made: passed in as an argument instead, it was read at the hook's
 * start and kept across the real call (a spill and a reload a sample). */
#define HOOK_FP() ((uint64_t)(uintptr_t)__builtin_frame_address(0))

/* An allocation hook is alloc_before, the real call (unless alloc_before placed the block),
 * then alloc_after, all at depth so that what the real allocator calls is not counted again:
 *
 *	struct alloc_call c;
 *	void *p = alloc_before(&c, n, 16, false);
 *
 *	if (!p)
 *		p = hs_hot.fns.malloc(n);
 *	return alloc_after(&c, p, HS_KIND_MALLOC, n, 16);
 *
 * While the pool takes sampled blocks, a sampled one comes from there, aligned to ALIGN
 * (ZERO: zeroed), instead of the real call; one the pool cannot place stops it (pool_stop)
 * and is the real call's, in the table. ALIGN 0, an operator of another module than the C++
 * runtime (or the runtime's nothrow new), whose memory may be any allocator's, keeps its
 * samples in the table: its own delete looks there (delete_before), but the runtime's plain
 * delete or free, which may free it as well (std::get_temporary_buffer pairs nothrow new
 * with plain delete), passes by on the pool's range alone, so such a sample stops the pool
 * for the session. */
struct alloc_call {
	struct tstate *t; /* the recording thread's, or NULL: nested or detached */
	bool pooled;      /* the pool's path: drawn before the call, as the pool must know */
	bool sampled;     /* (pooled) drawn */
	bool kept;        /* (pooled) the pool placed the block and keeps it */
};

/* Before the real call: the draw and the pool's block, if the pool takes this sample, else
 * NULL for the real call to make. At depth from here to alloc_after. */
static inline __attribute__((always_inline)) void *alloc_before(struct alloc_call *c, size_t size, size_t align,
								bool zero)
{
	void *p = NULL;

	c->t = enter();
	c->pooled = align && c->t && pool_placing();
	c->sampled = c->kept = false;
	if (!c->t)
		countdown_stop();
	depth_in();
	if (c->pooled && (c->sampled = sample(size))) {
		bool kept;

		p = pool_alloc(c->t, size, align, zero, &kept);
		c->kept = kept; /* a copy, so that c stays in registers */
	}
	return p;
}

/* After it, P the block (NULL: the call failed): its event if it was sampled, the depth
 * back, and P returned. Outside the pool's path the draw comes after the call, which counts
 * down only the bytes it got. */
static inline __attribute__((always_inline)) void *alloc_after(struct alloc_call *c, void *p, uint32_t kind,
							       size_t size, size_t align)
{
	if (c->kept) { /* the pool placed it and keeps it: the event alone */
		record_alloc_event(c->t, p, size, kind, HOOK_FP());
		depth_out();
		return p;
	}
	if (c->pooled ? c->sampled && p : c->t && p && sample(size)) {
		if (!align && pool_placing())
			pool_stop();
		record_alloc(c->t, p, size, kind, HOOK_FP());
	}
	depth_out();
	return p;
}

/* Whether freeing P is recorded: the thread's state, or NULL to free it and say nothing;
 * *SIZE, the block's if it was sampled; *TS, stamped before the block is given back, since
 * another thread may be handed its address at once and its allocation must come after. */
static struct tstate *free_begin(void *p, uint64_t *size, uint64_t *ts)
{
	struct tstate *t;

	*size = *ts = 0;
	/* Sampling, a block never sampled (nearly every one) is decided by one load, before
	 * any thread state. */
	if (hs_active() && hs_hot.sl.shm->sample_rate && !hook_depth() && !sampled_maybe(p))
		return NULL;
	t = enter();
	if (t && hs_hot.sl.shm->sample_rate && !(*size = sampled_take(p)))
		return NULL;
	if (t)
		*ts = now_ns();
	return t;
}

/* P, a block of the pool's whose first page is W, freed: recorded as free_hook's, then kept
 * for another sample. Nested, or detached, it goes back unrecorded. */
static void pool_free(void *p, uint64_t *w)
{
	struct tstate *t = enter();

	if (t) {
		uint64_t ts = now_ns();

		depth_in();
		record_free(t, p, pool_size(w), 0, ts);
		depth_out();
	}
	pool_put(t, p, w);
}

/* A free of P not passed by, before the real call: the event if P was sampled and its thread
 * records, then at depth (what the real allocator calls is not counted again) until the
 * caller's depth_out after the call. Committed before the block is given back: another thread
 * may be handed its address at once, and the recorder takes a lone busy ring's events without
 * waiting for the others (ring_reader.c, drain), so this free must be in its ring by then. */
static inline __attribute__((always_inline)) void free_before(void *p, uint8_t flags)
{
	uint64_t size, ts;
	struct tstate *t = free_begin(p, &size, &ts);

	depth_in();
	if (t)
		record_free(t, p, size, flags, ts);
}

static void free_hook(void *p, uint8_t flags)
{
	if (!p || is_boot(p))
		return;
	if (LIKELY(free_pass_by(p))) {
		hs_hot.fns.free(p);
		return;
	}
	free_before(p, flags);
	hs_hot.fns.free(p);
	depth_out();
}

/* A free of another name than free (__libc_free), of P: whether its real function is to be
 * called, at depth (then depth_out), as free_hook calls free's; not for NULL, boot memory,
 * or a block of the pool's, given back to the pool here. */
static inline __attribute__((always_inline)) bool free_named_before(void *p)
{
	uint64_t *w;

	if (!p || is_boot(p))
		return false;
	if ((w = pool_mine(p))) {
		pool_free(p, w);
		return false;
	}
	free_before(p, 0);
	return true;
}

/* The fast paths are functions of their own, without a frame: a call the sampler passes by
 * costs a few loads and a jump. What records is a tail call to the full path, whose frame is
 * then the first of the stack walk, as the hook's would be. They sit together at the head of
 * the text, each on a cache line's start: side by side with them scattered among the full
 * paths, passing by took 0.5% less time on the bench's loops (two runs of 13 rounds, 5 of 6
 * medians lower). */
#define FAST __attribute__((optimize("omit-frame-pointer"), section(".text.hot.hs_pass"), aligned(64)))

__attribute__((noinline)) void *malloc_full(size_t n)
{
	struct alloc_call c;
	void *p;

	if (UNLIKELY(!hs_hot.fns.malloc)) {
		resolve();
		if (!hs_hot.fns.malloc)
			return boot_alloc(n);
	}
	if (!(p = alloc_before(&c, n, 16, false)))
		p = hs_hot.fns.malloc(n);
	return alloc_after(&c, p, hs_kind_of_malloc, n, 16);
}

/* Passed by, while Python's domains wait (pymem_waiting): counted down already. */
__attribute__((noinline)) void *malloc_wait(size_t n)
{
	pymem_wait_step();
	return hs_hot.fns.malloc(n);
}

__attribute__((noinline)) void *calloc_wait(size_t n, size_t m)
{
	pymem_wait_step();
	return hs_hot.fns.calloc(n, m);
}

HOOK EXPORT FAST void *malloc(size_t n)
{
	if (LIKELY(countdown_pass(n)))
		return __atomic_load_n(&hs_hot.pass.malloc, __ATOMIC_RELAXED)(n);
	if (nested() && hs_hot.fns.malloc)
		return hs_hot.fns.malloc(n);
	return malloc_full(n);
}
HOOK_WRITTEN(malloc);

__attribute__((noinline)) void *calloc_full(size_t n, size_t m)
{
	struct alloc_call c;
	void *p;

	if (UNLIKELY(!hs_hot.fns.calloc)) {
		resolve();
		if (!hs_hot.fns.calloc)
			return (m && n > SIZE_MAX / m) ? NULL : boot_alloc(n * m); /* boot memory is zero */
	}
	if (m && n > SIZE_MAX / m)
		return hs_hot.fns.calloc(n, m); /* fails, as it should */
	if (!(p = alloc_before(&c, n * m, 16, true)))
		p = hs_hot.fns.calloc(n, m);
	return alloc_after(&c, p, hs_kind_of_calloc, n * m, 16);
}

HOOK EXPORT FAST void *calloc(size_t n, size_t m)
{
	if (LIKELY(countdown_pass(n * m)))
		return __atomic_load_n(&hs_hot.pass.calloc, __ATOMIC_RELAXED)(n, m);
	if (nested() && hs_hot.fns.calloc)
		return hs_hot.fns.calloc(n, m);
	return calloc_full(n, m);
}
HOOK_WRITTEN(calloc);

static __attribute__((noinline)) void free_full(void *p)
{
	if (UNLIKELY(!hs_hot.free1)) {
		resolve();
		if (!hs_hot.free1)
			return;
	}
	uint64_t *w = pool_mine(p);

	if (w)
		pool_free(p, w);
	else
		free_hook(p, 0);
}

/* A free not passed by on the pool's range alone: the filter's test, then as free_full. A
 * function of its own, so that free's own text needs no register for hs_hot's address. */
static __attribute__((noinline)) void free_inside(void *p)
{
	if (LIKELY(table_pass_by(p)))
		return hs_hot.free1(p);
	if (nested() && hs_hot.fns.free && !is_boot(p) && !pool_mine(p))
		return hs_hot.fns.free(p);
	free_full(p);
}

HOOK EXPORT FAST void free(void *p)
{
	if (LIKELY(outside_pool(p)))
		return hs_hot.free1(p);
	free_inside(p);
}
HOOK_WRITTEN(free);

/* A realloc recorded by thread T: C calls the real one (CTX, OLD, N, M) for TOTAL bytes, at
 * depth. The old block is released before the call, as a free is (free_hook): the allocator
 * may hand its address to another thread before the call returns. ZERO_FREES: asked for no
 * bytes, the call frees the block and is done (glibc's realloc; a Python domain's gives a
 * block back). Otherwise a new block follows, or, when the call fails, the old one comes
 * back. Shared by realloc, reallocarray and the Python domains' wrapper (pymem.c). */
static const struct realloc_call realloc_call, reallocarray_call;

/* A realloc of glibc's (C, for TOTAL bytes) recorded by thread T, or by none (NULL: nested or
 * detached), of OLD, a block of the pool's whose first page is OW, or, while the pool takes
 * sampled blocks, of one of glibc's. A block of the pool's never reaches glibc's realloc,
 * which would remap it behind the pool's back: it moves to a new block, the pool's if the new
 * size is sampled and the pool places it, else glibc's (in the table if sampled). So does one
 * of glibc's whose new size is sampled; any other goes to glibc's realloc. As much is copied
 * as the old block may hold (malloc_usable_size's promise), and the old block's end is
 * recorded before the new block's start, as realloc_recorded does. */
static void *realloc_pooled(struct tstate *t, void *old, uint64_t *ow, uint64_t total, const struct realloc_call *c,
			    size_t n, size_t m, uint32_t kind, uint64_t fp)
{
	uint64_t ts = t ? now_ns() : 0;
	bool s;
	void *p = NULL;

	depth_in();
	s = t && total && sample(total);
	if (!ow && !s) {
		p = c->fn(c->ctx, old, n, m);
		goto out;
	}
	if (ow && !total) { /* glibc's realloc frees the block and returns NULL */
		if (t)
			record_free(t, old, pool_size(ow), 0, ts);
		pool_put(t, old, ow);
		goto out;
	}
	if (s && pool_placing())
		p = pool_alloc(t, total, 16, false, NULL);
	if (!p && !ow) { /* the sample the table's from now on: glibc moves the block */
		if ((p = c->fn(c->ctx, old, n, m)))
			record_alloc(t, p, total, kind, fp);
		goto out;
	}
	if (!p && !(p = hs_hot.fns.malloc(total))) {
		errno = ENOMEM;
		goto out; /* the old block stays the caller's */
	}
	if (old) {
		memcpy(p, old, pool_copy_size(old, total));
		if (ow) {
			if (t)
				record_free(t, old, pool_size(ow), HS_FREE_FLAG_REALLOC, ts);
			pool_put(t, old, ow);
		} else {
			hs_hot.fns.free(old);
		}
	}
	if (s)
		record_alloc(t, p, total, kind, fp);
out:
	depth_out();
	return p;
}

void *realloc_recorded(struct tstate *t, void *old, uint64_t total, const struct realloc_call *c, size_t n, size_t m,
		       uint32_t kind, uint64_t fp)
{
	uint64_t ts, old_size = 0, *ow = old ? pool_mine(old) : NULL;
	bool old_sampled, moves = total || !c->zero_frees;
	void *p;

	if ((ow || pool_placing()) && (c == &realloc_call || c == &reallocarray_call))
		return realloc_pooled(t, old, ow, total, c, n, m, kind, fp);
	ts = now_ns();
	/* A Python domain's realloc of a block of the pool's: its free here, its move in the
	 * nested realloc (realloc_body). */
	old_sampled = old && !is_boot(old) &&
		      (!hs_hot.sl.shm->sample_rate || (old_size = ow ? pool_size(ow) : sampled_take(old)));
	depth_in();
	if (old_sampled)
		record_free(t, old, old_size, moves ? HS_FREE_FLAG_REALLOC : 0, ts);
	p = c->fn(c->ctx, old, n, m);
	if (p) {
		if (sample(total))
			record_alloc(t, p, total, kind, fp);
	} else if (old_sampled && moves) {
		record_restore(t, old, old_size);
	}
	depth_out();
	return p;
}

static void *realloc_body(void *old, size_t n, const struct realloc_call *c, size_t m, uint32_t kind, uint64_t fp)
{
	struct tstate *t = enter();
	uint64_t total = c == &reallocarray_call ? (uint64_t)n * m : n, *ow;
	void *p;

	if (c == &reallocarray_call && m && n > SIZE_MAX / m)
		return c->fn(c->ctx, old, n, m); /* fails, as it should: nothing changes hands */
	if (!t && old && (c == &realloc_call || c == &reallocarray_call) && (ow = pool_mine(old)))
		return realloc_pooled(NULL, old, ow, total, c, n, m, 0, 0);
	if (!t) {
		depth_in();
		p = c->fn(c->ctx, old, n, m);
		depth_out();
		return p;
	}
	return realloc_recorded(t, old, total, c, n, m, kind, fp);
}

static void *call_realloc(void *ctx, void *old, size_t n, size_t m)
{
	(void)ctx, (void)m;
	if (is_boot(old)) {
		void *p = hs_hot.fns.malloc(n);

		if (p)
			memcpy(p, old, n < 256 ? n : 256);
		return p;
	}
	return hs_hot.fns.realloc(old, n);
}

static void *call_reallocarray(void *ctx, void *old, size_t n, size_t m)
{
	(void)ctx;
	return hs_hot.fns.reallocarray(old, n, m);
}

static const struct realloc_call realloc_call = {call_realloc, NULL, true},
				 reallocarray_call = {call_reallocarray, NULL, true};

static __attribute__((noinline)) void *realloc_full(void *old, size_t n)
{
	if (UNLIKELY(!hs_hot.fns.realloc)) {
		resolve();
		if (!hs_hot.fns.realloc)
			return boot_alloc(n);
	}
	return realloc_body(old, n, &realloc_call, 0, hs_kind_of_realloc, HOOK_FP());
}

/* Passed by: the old block never sampled (so never boot memory, see free_pass_by) and the
 * new one not drawn: neither end of it would be recorded. */
HOOK EXPORT FAST void *realloc(void *old, size_t n)
{
	if (LIKELY(free_pass_by(old) && pass_by(n)))
		return hs_hot.fns.realloc(old, n);
	return realloc_full(old, n);
}
HOOK_WRITTEN(realloc);

HOOK EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
	if (UNLIKELY(!hs_hot.fns.reallocarray))
		resolve();
	if (m && n > SIZE_MAX / m) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_body(old, n, &reallocarray_call, m, hs_kind_of_reallocarray,
			    HOOK_FP());
}
HOOK_WRITTEN(reallocarray);

HOOK EXPORT int posix_memalign(void **out, size_t a, size_t n)
{
	struct tstate *t;
	int ret;

	if (UNLIKELY(!hs_hot.fns.posix_memalign))
		resolve();
	t = enter();
	depth_in();
	if (t && pool_placing() && a && !(a & (a - 1)) && !(a % sizeof(void *))) {
		bool s = sample(n);
		void *p = NULL;

		if (s)
			p = pool_alloc(t, n, a < 16 ? 16 : a, false, NULL);
		if (p) {
			*out = p;
			ret = 0;
		} else {
			ret = hs_hot.fns.posix_memalign(out, a, n);
		}
		if (s && !ret)
			record_alloc(t, *out, n, hs_kind_of_posix_memalign, HOOK_FP());
		depth_out();
		return ret;
	}
	ret = hs_hot.fns.posix_memalign(out, a, n);
	if (t && !ret && sample(n))
		record_alloc(t, *out, n, hs_kind_of_posix_memalign, HOOK_FP());
	depth_out();
	return ret;
}
HOOK_WRITTEN(posix_memalign);

/* ---- the hooks the table generates ---- */

/* The alignment an allocator of the table gives: memalign's and aligned_alloc's first
 * argument (rounded up to a power of two, as glibc's memalign does), a page for valloc and
 * pvalloc, 16 for __libc_malloc. */
static inline size_t align_up_pow2(size_t a)
{
	if (a <= 16)
		return 16;
	return a > SIZE_MAX / 2 + 1 ? SIZE_MAX / 2 + 1 : (size_t)1 << (64 - __builtin_clzll(a - 1));
}
#define HS_ALIGN_OF_SIZE2(kind) align_up_pow2(a0)
#define HS_ALIGN_OF_SIZE1(kind) (HS_KIND_##kind == HS_KIND_MEMALIGN ? 4096 : 16)

/* An allocator that takes a size and returns the block (aligned_alloc, memalign, valloc...). */
#define HS_HOOK_ALLOC(sym, kind, args, ret, params)                                                    \
	HOOK EXPORT ret sym HS_PARAMS params                                                            \
	{                                                                                               \
		struct alloc_call c;                                                                    \
		void *p = alloc_before(&c, HS_SIZE_OF_##args, HS_ALIGN_OF_##args(kind), false);         \
		if (!p) /* the real functions are resolved: alloc_before's enter() saw to it */         \
			p = hs_hot.fns.sym HS_ARGS params;                                              \
		return alloc_after(&c, p, HS_KIND_##kind, HS_SIZE_OF_##args, HS_ALIGN_OF_##args(kind));  \
	}

/* A free of another name: the block is gone as free's is. */
#define HS_HOOK_FREE(sym, kind, args, ret, params)                                                     \
	HOOK EXPORT ret sym HS_PARAMS params                                                            \
	{                                                                                               \
		if (UNLIKELY(!hs_hot.fns.sym))                                                          \
			resolve();                                                                      \
		if (hs_hot.fns.sym && free_named_before(HS_PTR_OF_##args)) {                            \
			hs_hot.fns.sym HS_ARGS params;                                                  \
			depth_out();                                                                    \
		}                                                                                       \
	}

/* C++: every operator new and delete, counted once with the malloc inside. The next definition
 * of an operator is libstdc++'s, or an allocator's preloaded after us (injected: the first
 * module's that defines it, as for malloc). Looked up on first use, after start-up: only a
 * program that calls it gets here. DIRECT: whether it is a plain new or delete (new, new[],
 * delete, delete[], sized or not) of the C++ runtime itself (libstdc++'s or libc++'s), which
 * only calls malloc (and, should that fail, the new handler or throws) or free: a call passed
 * by may then go to the real malloc or free itself, where the operator's own call would have
 * been passed by to the same function. An operator of any other module (an allocator's, a
 * replacement) is always called. */
struct cxx_next {
	void *fn;
	bool direct;
};

static bool cxx_plain(const char *name)
{
	static const char *const plain[] = {"_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm"};

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (!strcmp(name, plain[i]))
			return true;
	return false;
}

static bool cxx_runtime(const void *f)
{
	Dl_info di;
	const char *base;

	if (!dladdr(f, &di) || !di.dli_fname)
		return false;
	base = strrchr(di.dli_fname, '/');
	base = base ? base + 1 : di.dli_fname;
	return !strncmp(base, "libstdc++.so", 12) || !strncmp(base, "libc++.so", 9);
}

static void *next_sym(struct cxx_next *c, const char *name)
{
	void *f = __atomic_load_n(&c->fn, __ATOMIC_ACQUIRE);

	if (!f) {
		depth_in();
		f = lookup(next_handle, name);
		if (f)
			c->direct = cxx_plain(name) && hs_hot.fns.malloc && hs_hot.fns.free && cxx_runtime(f);
		depth_out();
		if (!f)
			abort(); /* a program that calls operator new has a C++ runtime */
		__atomic_store_n(&c->fn, f, __ATOMIC_RELEASE);
	}
	return f;
}

typedef void *(*new_fn)(size_t);

/* A plain new passed by, the runtime's own operator next: the real malloc, and only if that
 * fails the operator (its new handler, or its exception). Apart from the hook, so that the
 * hook itself saves no register. Not at depth: an exception thrown through a frame of ours
 * would leave the depth raised, and the thread recorded nothing more; what the operator's
 * own malloc then gets, after its new handler, its hook counts. */
static __attribute__((noinline)) FAST void *new_direct(size_t n, new_fn f)
{
	void *p = hs_hot.fns.malloc(n ? n : 1);

	if (LIKELY(p != NULL))
		return p;
	return f(n);
}

/* The full path of a plain new of SIZE, the runtime's own operator F next: the real malloc
 * recorded as the new (KIND), the stack walked from the hook's frame; failing, the operator as new_direct
 * calls it. Drawn before the depth is raised, as the countdown is the new's. */
static inline __attribute__((always_inline)) void *new_direct_full(uint32_t kind, size_t size, new_fn f)
{
	struct tstate *t = enter();
	void *p = NULL;
	bool placing = t && pool_placing(), rec = placing && sample(size), kept = false;

	depth_in();
	if (rec) /* else, or if the pool cannot place it, the table's */
		p = pool_alloc(t, size ? size : 1, 16, false, &kept);
	if (!p)
		p = hs_hot.fns.malloc(size ? size : 1);
	depth_out();
	if (UNLIKELY(p == NULL))
		return f(size);
	if (rec || (!placing && t && sample(size))) {
		depth_in();
		if (kept)
			record_alloc_event(t, p, size, kind, HOOK_FP());
		else
			record_alloc(t, p, size, kind, HOOK_FP());
		depth_out();
	}
	return p;
}

/* A delete's full path, before the real operator: what its hook does next. */
enum delete_how {
	DELETE_DONE,     /* nothing: P is NULL, or the pool's block, given back to the pool */
	DELETE_FORWARD,  /* call the operator as it is: another module's, freeing a block of the
			  * pool's, which its free gives back (to our free's hook) */
	DELETE_RECORDED, /* call the operator at depth, then depth_out: its free was recorded if
			  * the block was sampled, before the block is given back (free_before) */
};

/* The full path of a delete of P whose next operator is C's. */
static inline __attribute__((always_inline)) enum delete_how delete_before(void *p, const struct cxx_next *c)
{
	uint64_t *w;

	if (!p)
		return DELETE_DONE;
	if ((w = pool_mine(p))) {
		if (!c->direct)
			return DELETE_FORWARD;
		pool_free(p, w); /* the runtime's plain delete only frees, as the pool does */
		return DELETE_DONE;
	}
	free_before(p, 0);
	return DELETE_RECORDED;
}

/* Each operator new's hook is three functions: SYM, the fast path, over SYM_full and
 * SYM_passed, each with its own next operator (next_SYM). Passed by, the countdown is the
 * new's and the real operator runs nested (SYM_passed): the malloc it calls finds the
 * countdown parked, and its full path sees the depth and forwards; or, DIRECT, new_direct.
 * The full path is a tail call, its frame the stack walk's first, as for malloc. */
#define HS_HOOK_NEW(sym, kind, args, ret, params)                                                      \
	static struct cxx_next next_##sym;                                                              \
	HS_NEW_FULL(sym, kind, args, ret, params)                                                       \
	HS_NEW_PASSED(sym, args, ret, params)                                                           \
	HS_NEW_FAST(sym, args, ret, params)

/* An operator new of another module than the C++ runtime's plain ones (an aligned new, an
 * allocator's) may throw through the hook, which called it at depth: bad_alloc for an
 * alignment it refuses, or for no memory. The depth is given back as the exception passes, by
 * a cleanup that -fexceptions puts in the unwind tables; left raised, every later call of the
 * thread was taken for a nested one and went unrecorded. The personality routine that runs
 * it, and _Unwind_Resume after it, are libgcc_s's, referred to weakly so that the library
 * needs nothing beyond libc: where libgcc_s is not loaded with the library (a C program that
 * dlopens C++ later), the hook has no personality, and an exception passes it as before. */
__asm__(".weak __gcc_personality_v0\n\t.weak _Unwind_Resume");
static void depth_unwound(const int *thrown)
{
	if (*thrown)
		depth_out();
}

/* ALIGN 0 in alloc_before: an operator new of another module keeps its samples in the table. */
#define HS_NEW_FULL(sym, kind, args, ret, params)                                                      \
	static __attribute__((noinline)) ret sym##_full HS_PARAMS params                                \
	{                                                                                               \
		ret(*f) params = (ret(*) params)next_sym(&next_##sym, #sym);                            \
		struct alloc_call c;                                                                    \
		if (LIKELY(next_##sym.direct))                                                          \
			return new_direct_full(HS_KIND_##kind, HS_SIZE_OF_##args, (new_fn)(void *)f);    \
		void *p = alloc_before(&c, HS_SIZE_OF_##args, 0, false);                                \
		int thrown __attribute__((cleanup(depth_unwound))) = 1;                                 \
		if (!p)                                                                                 \
			p = f HS_ARGS params;                                                           \
		thrown = 0;                                                                             \
		return alloc_after(&c, p, HS_KIND_##kind, HS_SIZE_OF_##args, 0);                        \
	}

/* Passed by, another module's operator: a call, not on the fast path's text. */
#define HS_NEW_PASSED(sym, args, ret, params)                                                          \
	static __attribute__((noinline)) ret sym##_passed HS_PARAMS params                              \
	{                                                                                               \
		ret(*f) params = (ret(*) params)__atomic_load_n(&next_##sym.fn, __ATOMIC_ACQUIRE);      \
		void *p;                                                                                \
		depth_in(); /* the countdown parked: its malloc is not another */                       \
		int thrown __attribute__((cleanup(depth_unwound))) = 1;                                 \
		p = f HS_ARGS params;                                                                   \
		thrown = 0;                                                                             \
		depth_out();                                                                            \
		return p;                                                                               \
	}

#define HS_NEW_FAST(sym, args, ret, params)                                                            \
	HOOK EXPORT FAST ret sym HS_PARAMS params                                                       \
	{                                                                                               \
		ret(*f) params = (ret(*) params)__atomic_load_n(&next_##sym.fn, __ATOMIC_ACQUIRE);      \
		if (LIKELY(f && pass_by(HS_SIZE_OF_##args)))                                            \
			return LIKELY(next_##sym.direct) ? new_direct(HS_SIZE_OF_##args, (new_fn)(void *)f) : sym##_passed HS_ARGS params; \
		if (f && nested()) /* operator new[] calls operator new */                              \
			return f HS_ARGS params;                                                        \
		return sym##_full HS_ARGS params;                                                       \
	}

/* Every delete frees its block as free does, then lets the real operator run nested: two
 * functions, SYM over SYM_full. A block never sampled is passed by as free passes it: to the
 * real operator, whose free is passed by the same way, or, DIRECT, to the real free, which is
 * all that operator would do. */
#define HS_HOOK_DELETE(sym, kind, args, ret, params)                                                   \
	static struct cxx_next next_##sym;                                                              \
	HS_DELETE_FULL(sym, args, ret, params)                                                          \
	HS_DELETE_FAST(sym, args, ret, params)

#define HS_DELETE_FULL(sym, args, ret, params)                                                         \
	static __attribute__((noinline)) ret sym##_full HS_PARAMS params                                \
	{                                                                                               \
		ret(*f) params = (ret(*) params)next_sym(&next_##sym, #sym);                            \
		enum delete_how how = delete_before(HS_PTR_OF_##args, &next_##sym);                     \
		if (how != DELETE_DONE)                                                                 \
			f HS_ARGS params;                                                               \
		if (how == DELETE_RECORDED)                                                             \
			depth_out();                                                                    \
	}

#define HS_DELETE_FAST(sym, args, ret, params)                                                         \
	HOOK EXPORT FAST ret sym HS_PARAMS params                                                       \
	{                                                                                               \
		ret(*f) params = (ret(*) params)__atomic_load_n(&next_##sym.fn, __ATOMIC_ACQUIRE);      \
		if (LIKELY(f && next_##sym.direct && free_pass_by(HS_PTR_OF_##args)))                   \
			return hs_hot.free1(HS_PTR_OF_##args);                                          \
		if (f && !next_##sym.direct && table_pass_by(HS_PTR_OF_##args))                         \
			return f HS_ARGS params; /* its new's samples are in the table */               \
		sym##_full HS_ARGS params;                                                              \
	}

#define HS_HOOK_OWN(sym, kind, args, ret, params)
#define HS_HOOK_BPF(sym, kind, args, ret, params)
#define HS_HOOK_RUST(sym, kind, args, ret, params)
#define HS_ALLOC(sym, kind, args, nest, hook, ret, params) HS_HOOK_##hook(sym, kind, args, ret, params)
#include "allocators.def"
#undef HS_ALLOC

/* Every line marked OWN has its hook above (a missing one is an undeclared hs_written_). */
#define HS_CHECK_OWN(sym) _Static_assert(hs_written_##sym > 0, "the table's hook for " #sym);
#define HS_CHECK_ALLOC(sym)
#define HS_CHECK_FREE(sym)
#define HS_CHECK_NEW(sym)
#define HS_CHECK_DELETE(sym)
#define HS_CHECK_BPF(sym)
#define HS_CHECK_RUST(sym)
#define HS_ALLOC(sym, kind, args, nest, hook, ret, params) HS_CHECK_##hook(sym)
#include "allocators.def"
#undef HS_ALLOC
