// SPDX-License-Identifier: MIT
/* pymalloc's objects: the interpreter's PYMEM_DOMAIN_MEM and PYMEM_DOMAIN_OBJ allocators
 * wrapped as tracemalloc wraps them (PyMem_GetAllocator, PyMem_SetAllocator), each wrapper
 * forwarding to the allocator it replaced, so that objects are recorded at their requested
 * sizes and pymalloc goes on doing what it does. An object over 512 bytes, which pymalloc
 * passes on to malloc, is counted once: the wrapper calls at depth, so that malloc's hook
 * takes that inner call as nested (as operator new's malloc is).
 *
 * Installed with the GIL held: a pending call (Py_AddPendingCall), requested launched on a
 * recorded event once the interpreter is initialized, injected at the injection; or sooner,
 * at the first recorded event of a thread that holds the GIL (pymem_on_recorded). Detached,
 * the originals go back the same way, if the domains still hold our wrappers (something
 * wrapped over them since keeps them: they forward, and record nothing while detached). The
 * library is never unloaded, so a wrapper stays callable.
 *
 * Sampling, a domain whose allocator has no context (pymalloc, or PYTHONMALLOC=malloc) keeps
 * its own free (enum wrap): every free of Python's objects then costs what it costs
 * unprofiled, where our wrapper's cost a second indirect call and a filter's test. A sampled
 * block is then not pymalloc's but ours, placed as a native sample is (the pool, else glibc's
 * heap and the table), so that pymalloc's free, finding it outside its arenas, passes it to
 * PyMem_RawFree, free's hook, which records it. Its malloc and realloc count down only what
 * pymalloc serves from its pools, on one countdown of calls the GIL guards (py_skip); what
 * pymalloc passes on, malloc's hooks count, and record if sampled, as they do a native call.
 * bench/py_alloc.py at 512 KiB, instructions over native (cachegrind): every call wrapped
 * 1.181x, the free given back 1.071x, the pools' countdown of bytes 1.046x, of calls 1.033x,
 * against 1.026x for a wrapper that only jumps to pymalloc (PYMEM_FLOOR; Debian's python3.11
 * inlines pymalloc where the domain holds pymalloc's own function, and no wrapper can be
 * that); bench/py_render.py, whose strings and lists grow by realloc, 1.020x, the floor
 * 1.014x. Recording every event, every call is wrapped: each free is an event, and each code
 * object freed is seen (py_code_freed). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chance.h"
#include "libheapsnap.h"
#include "python.h"

enum { DOMAIN_MEM = 1, DOMAIN_OBJ = 2 };

struct pymem_allocator { /* PyMemAllocatorEx, the same from 3.5 to 3.13 */
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t size);
	void (*free)(void *ctx, void *ptr);
};

/* How a domain is wrapped. */
enum wrap {
	/* Every call: recording every event, or sampling over an allocator with a context of
	 * its own (the debug hooks, tracemalloc's), whose free must see what its malloc made. */
	WRAP_ALL,
	/* Sampling over pymalloc: its own free; the calls it serves from its pools counted
	 * down here (py_skip), those it passes on to malloc left to malloc's hooks. */
	WRAP_POOLS,
	/* Sampling over malloc (PYTHONMALLOC=malloc): every call reaches malloc's hooks, which
	 * count and record it; ours only forward. */
	WRAP_NONE,
};

/* A wrapper's context, by domain: what it forwards to, first, so that the context is the
 * allocator (one load fewer on every call); and how the domain is wrapped. */
struct domain {
	struct pymem_allocator orig;
	enum wrap how;
};
static struct domain dom[3];
/* 0 not asked, 1 asked (a pending call on its way), 2 installed, 3 restored */
static int state;
enum { NOT_ASKED, ASKED, INSTALLED, RESTORED };
static uint32_t installed_rate; /* the session's sample rate the wrappers were installed for */
static void wait_end(void);

static uint32_t session_rate(void)
{
	return __atomic_load_n(&hs_hot.sl.shm->sample_rate, __ATOMIC_RELAXED);
}

static bool sampling(void)
{
	return session_rate() != 0;
}

/* A sampled block of a domain that keeps its own free, N bytes (ZERO: zeroed), placed where
 * free's hook sees it: the pool's block, else glibc's (the table's, record_alloc); *KEPT as
 * pool_alloc's. At depth. */
static void *place(struct tstate *t, size_t n, bool zero, bool *kept)
{
	void *p = NULL;

	*kept = false;
	if (pool_placing())
		p = pool_alloc(t, n ? n : 1, 16, zero, kept);
	if (!p)
		p = zero ? hs_hot.fns.calloc(1, n ? n : 1) : hs_hot.fns.malloc(n ? n : 1);
	return p;
}

static void record_placed(struct tstate *t, void *p, size_t n, uint8_t kind, bool kept, uint64_t fp)
{
	if (kept)
		record_alloc_event(t, p, n, kind, fp);
	else
		record_alloc(t, p, n, kind, fp);
}

/* What records, tail-called by the fast path: its frame is the walk's first, as a hook's is. */
static __attribute__((noinline)) void *w_malloc_full(void *ctx, size_t n)
{
	const struct pymem_allocator *o = ctx;
	struct tstate *t = enter();
	void *p;

	depth_in();
	p = o->malloc(o->ctx, n);
	if (t && p && sample(n))
		record_alloc(t, p, n, HS_KIND_MALLOC, (uint64_t)(uintptr_t)__builtin_frame_address(0));
	depth_out();
	return p;
}

/* Requests up to this size stay in pymalloc's pools (its SMALL_REQUEST_THRESHOLD): a call the
 * sampler passes by needs no depth around it, as no malloc of it can be sampled twice. */
#define PYMALLOC_SMALL 512

/* Without a frame of its own, as the hooks' fast paths (hooks.c): a call passed by costs the
 * countdown and a jump to pymalloc. */
static __attribute__((noinline, optimize("omit-frame-pointer"))) void *w_malloc(void *ctx, size_t n)
{
	if (LIKELY(n <= PYMALLOC_SMALL && pass_by(n))) {
		const struct pymem_allocator *o = ctx;

		return o->malloc(o->ctx, n);
	}
	return w_malloc_full(ctx, n);
}

/* The calls calloc's pass-by does not take: what records, and a size over pymalloc's pools
 * (the domain's calloc calls calloc at depth, so that its hook does not count it again). */
static __attribute__((noinline)) void *w_calloc_full(void *ctx, size_t n, size_t m, size_t size)
{
	const struct pymem_allocator *o = ctx;
	struct tstate *t;
	void *p;

	if (pass_by(size)) {
		depth_in();
		p = o->calloc(o->ctx, n, m);
		depth_out();
		return p;
	}
	t = enter();
	depth_in();
	p = o->calloc(o->ctx, n, m);
	if (t && p && sample(size))
		record_alloc(t, p, size, HS_KIND_CALLOC, (uint64_t)(uintptr_t)__builtin_frame_address(0));
	depth_out();
	return p;
}

/* As w_malloc: a call passed by in pymalloc's pools costs the countdown and a jump. */
static __attribute__((noinline, optimize("omit-frame-pointer"))) void *w_calloc(void *ctx, size_t n, size_t m)
{
	size_t size;

	if (UNLIKELY(__builtin_mul_overflow(n, m, &size)))
		size = SIZE_MAX;
	if (LIKELY(size <= PYMALLOC_SMALL && pass_by(size))) {
		const struct pymem_allocator *o = ctx;

		return o->calloc(o->ctx, n, m);
	}
	return w_calloc_full(ctx, n, m, size);
}

/* ---- WRAP_POOLS: sampling over pymalloc ----
 * The domains are called with the GIL held, so that one countdown serves every thread's
 * calls of them: words of our own, which need neither the thread's TLS nor the gate of
 * hs_hot.passing (install draws them anew for each session's rate). They count only what
 * pymalloc serves from its pools; a request over PYMALLOC_SMALL it passes to PyMem_RawMalloc,
 * where malloc's hook counts it, and records it if sampled, on the thread's own countdown:
 * each byte is counted once, by one of two samplers at the same rate. A sample is placed
 * outside pymalloc's arenas, so that pymalloc's free passes it on to free's hook.
 *
 * The countdown is of calls, not bytes: every call is a candidate with the chance q that a
 * call of PYMALLOC_SMALL bytes is sampled (1 - e^(-512/rate)), the calls between two
 * candidates a geometric count (a draw's bytes over 512, whole); a candidate of N bytes
 * (none, over PYMALLOC_SMALL) is sampled with the chance (1 - e^(-N/rate)) / q. Each call of
 * N bytes is then sampled with the chance 1 - e^(-N/rate), on its own, as the byte countdown
 * samples it (the weights are the same): what a pass-by costs is a decrement and a branch,
 * with neither the size's test nor its subtraction. bench/py_alloc.py at 512 KiB,
 * instructions over native: 1.046x with the bytes counted down, 1.033x with the calls (the
 * floor 1.026x); a candidate's test, once in about 1,000 calls, is a chance and a draw. */
static uint64_t py_skip;  /* the calls to pass by before the next candidate */
static uint64_t py_rate;  /* the rate py_skip and py_q are drawn at; 0: to be drawn */
static double py_q;       /* q: 1 - e^(-PYMALLOC_SMALL / rate) */

/* make bench's Python floor (bench/python.sh, the Makefile's bench/pyfloor/): the pass-by
 * without its countdown, a jump to pymalloc and nothing else, so that the table shows what
 * any wrapper of the domains costs beside what ours does. It samples none of pymalloc's
 * objects. */
#ifdef PYMEM_FLOOR
enum { POOLS_COUNTED = 0 };
#else
enum { POOLS_COUNTED = 1 };
#endif

/* The calls to pass by before the next candidate, geometric with the chance q: whole
 * multiples of PYMALLOC_SMALL in an exponential draw of mean rate (floor(X / 512) of an
 * exponential X is geometric, with the chance 1 - e^(-512/rate)). */
static uint64_t pools_skip(void)
{
	return (uint64_t)draw() / PYMALLOC_SMALL;
}

/* Whether the call of N bytes whose turn it is to be a candidate, or not yet (a countdown to
 * be drawn), is sampled; the next candidate drawn. */
static bool pools_sample(size_t n)
{
	uint64_t rate = session_rate();
	double u;

	if (py_rate != rate) {
		py_rate = rate;
		py_q = chance((double)PYMALLOC_SMALL / (double)rate);
		/* This call is the first of the calls the draw counts. */
		if ((py_skip = pools_skip())) {
			py_skip--;
			return false;
		}
	}
	py_skip = pools_skip();
	if (n > PYMALLOC_SMALL)
		return false; /* malloc's hook counts it */
	u = (double)(draw_bits() >> 11) * 0x1p-53;
	return u * py_q < chance((double)n / (double)rate);
}

/* The next call to draw the count anew, and be the first it counts: a candidate not taken
 * (no thread state, detached) is not handed to the next call, which would then be one for
 * certain, sampled 1 / q times as often as its chance. */
static void pools_redraw(void)
{
	py_skip = 0;
	py_rate = 0;
}

/* A candidate call of N bytes: the thread's state if it is sampled, else NULL. */
static struct tstate *pools_take(size_t n)
{
	struct tstate *t = enter();

	/* Not sampling any more (a session of every event, the wrappers not yet changed for
	 * it), or detached. */
	if (!t || !sampling()) {
		pools_redraw();
		return NULL;
	}
	return pools_sample(n) ? t : NULL;
}

/* A pass-by: whether this call is not a candidate, the countdown moved on. A candidate finds
 * py_skip at 0 and leaves it at ~0, which its full path sets again (to a draw, or back to 0).
 * Written out: the compiler would load, subtract, store and test (5 instructions with the
 * jump on, against 3). */
#if !defined(__x86_64__)
#error "pools_pass_by: its decrement is written in x86-64's instructions"
#endif
static inline __attribute__((always_inline)) bool pools_pass_by(void)
{
	bool borrow;

	__asm__("subq $1, %[skip]" : [skip] "+m"(py_skip), "=@ccc"(borrow));
	return !borrow;
}

/* pymalloc's malloc of N bytes, or (ZERO) its calloc of N * M, at O. */
static void *pools_forward(const struct pymem_allocator *o, size_t n, size_t m, bool zero)
{
	return zero ? o->calloc(o->ctx, n, m) : o->malloc(o->ctx, n);
}

/* A candidate call: if sampled, placed and recorded, its stack walked from this frame.
 * ZERO: calloc's, of N * M bytes. */
static __attribute__((noinline)) void *pools_full(void *ctx, size_t n, size_t m, bool zero)
{
	const struct pymem_allocator *o = ctx;
	size_t size = n;
	struct tstate *t;
	void *p = NULL;
	bool kept;

	if (zero && __builtin_mul_overflow(n, m, &size))
		size = SIZE_MAX; /* pymalloc's calloc fails it */
	if (!(t = pools_take(size)))
		return pools_forward(o, n, m, zero);
	depth_in();
	if ((p = place(t, size, zero, &kept)))
		record_placed(t, p, size, zero ? HS_KIND_CALLOC : HS_KIND_MALLOC, kept,
			      (uint64_t)(uintptr_t)__builtin_frame_address(0));
	else
		p = pools_forward(o, n, m, zero);
	depth_out();
	return p;
}

/* A call passed by: a decrement and a jump to pymalloc, with our context as its own:
 * pymalloc's functions take no context (the domain's is NULL, as wrap_for asks) and read
 * none, as its free, which the domain holds with ours, does not. */
static __attribute__((noinline, optimize("omit-frame-pointer"))) void *w_malloc_pools(void *ctx, size_t n)
{
	const struct pymem_allocator *o = ctx;

	if (POOLS_COUNTED && UNLIKELY(!pools_pass_by()))
		return pools_full(ctx, n, 1, false);
	return o->malloc(ctx, n);
}

static __attribute__((noinline, optimize("omit-frame-pointer"))) void *w_calloc_pools(void *ctx, size_t n, size_t m)
{
	const struct pymem_allocator *o = ctx;

	if (POOLS_COUNTED && UNLIKELY(!pools_pass_by()))
		return pools_full(ctx, n, m, true);
	return o->calloc(ctx, n, m);
}

/* A realloc pymalloc served from its pools, its new block (or the old one, in place) P of N
 * bytes, a candidate: if sampled, P moved out of pymalloc's arenas to a block placed as a
 * sample, and recorded from this frame. Its old block, if sampled, was not pymalloc's: the
 * hooks under PyMem_RawRealloc recorded its free. */
static __attribute__((noinline)) void *pools_realloc_full(void *ctx, void *p, size_t n)
{
	const struct pymem_allocator *o = ctx;
	struct tstate *t = pools_take(n);
	void *q;
	bool kept;

	if (!t)
		return p;
	depth_in();
	if ((q = place(t, n, false, &kept))) {
		memcpy(q, p, n);
		o->free(o->ctx, p);
		record_placed(t, q, n, HS_KIND_REALLOC, kept, (uint64_t)(uintptr_t)__builtin_frame_address(0));
		p = q;
	}
	depth_out();
	return p;
}

/* pymalloc's realloc, called outside our hooks: a block it does not hold (glibc's, or a
 * sample placed outside its arenas) it gives to PyMem_RawRealloc, and a size over its pools
 * to PyMem_RawMalloc, whose hooks count the size and record what they sample, a sample's
 * free included, as they do a native call. Whether they ran shows in the thread's countdown,
 * which every hook moves (PyMem_RawRealloc asks for a byte where asked for none): what they
 * did not see, pymalloc served from its pools, and only that is counted down here (a realloc
 * during which pymalloc grows its own tables through PyMem_Raw*, once a new arena, goes
 * uncounted). Called at depth instead, to be counted here alone, a pass-by costs about 90
 * instructions, and the raw hooks under it take their full paths: bench/py_render.py's
 * 250,000 reallocs were a third of what wrapping the domains cost it in instructions. */
static __attribute__((noinline, optimize("omit-frame-pointer"))) void *w_realloc_pools(void *ctx, void *old, size_t n)
{
	const struct pymem_allocator *o = ctx;
	uint64_t left;
	void *p;

	if (!POOLS_COUNTED || n > PYMALLOC_SMALL)
		return o->realloc(ctx, old, n);
	left = hs_tls.left;
	p = o->realloc(ctx, old, n);
	if (LIKELY(p && hs_tls.left == left) && UNLIKELY(!pools_pass_by()))
		return pools_realloc_full(ctx, p, n);
	return p;
}

/* ---- WRAP_NONE: forwarded, malloc's hooks see each call ---- */
static void *w_malloc_fwd(void *ctx, size_t n)
{
	const struct pymem_allocator *o = ctx;

	return o->malloc(o->ctx, n);
}

static void *w_calloc_fwd(void *ctx, size_t n, size_t m)
{
	const struct pymem_allocator *o = ctx;

	return o->calloc(o->ctx, n, m);
}

static void *w_realloc_fwd(void *ctx, void *old, size_t n)
{
	const struct pymem_allocator *o = ctx;

	return o->realloc(o->ctx, old, n);
}

static void *call_domain_realloc(void *ctx, void *old, size_t n, size_t m)
{
	const struct pymem_allocator *o = ctx;

	(void)m;
	return o->realloc(o->ctx, old, n);
}

/* As realloc's hook: the old block freed (if it was recorded) and the new one allocated. */
static __attribute__((noinline)) void *w_realloc(void *ctx, void *old, size_t n)
{
	const struct pymem_allocator *o = ctx;
	/* A domain's realloc of 0 bytes gives a block back, never NULL: failure is all NULL means. */
	const struct realloc_call c = {call_domain_realloc, ctx, false};
	struct tstate *t;
	void *p;

	/* Sampling: a block never sampled (or none), and a new size the draw passes by; in that
	 * order, since passing by counts the size down. */
	if (LIKELY((!old || table_pass_by(old)) && pass_by(n)) || !(t = enter())) {
		depth_in();
		p = o->realloc(o->ctx, old, n);
		depth_out();
		return p;
	}
	return realloc_recorded(t, old, n, &c, n, 0, HS_KIND_REALLOC, (uint64_t)(uintptr_t)__builtin_frame_address(0));
}

static __attribute__((noinline)) void w_free_full(void *ctx, void *p)
{
	const struct pymem_allocator *o = ctx;
	struct tstate *t = NULL;
	uint64_t size = 0, ts = 0;

	uint64_t *w = pool_mine(p);

	if (!(hs_active() && hs_hot.sl.shm->sample_rate && !hook_depth() && !sampled_maybe(p) && !w)) {
		t = enter();
		/* A block of the pool's (the domain's free frees it, nested, in free's hook). */
		if (t && hs_hot.sl.shm->sample_rate && !(size = w ? pool_size(w) : sampled_take(p)))
			t = NULL;
		if (t)
			ts = now_ns();
	}
	if (!__atomic_load_n(&hs_hot.sl.shm->sample_rate, __ATOMIC_RELAXED))
		py_code_freed(p); /* before its address can be taken again */
	depth_in();
	if (t) /* before the block is given back, as free_hook's (hooks.c) */
		record_free(t, p, size, 0, ts);
	o->free(o->ctx, p);
	depth_out();
}

/* Recording every event, every free of the domains takes w_free_full: each code object freed
 * is seen. Sampling, frees pass by unseen. */
bool pymem_sees_frees(void)
{
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == INSTALLED && !hs_hot.sl.shm->sample_rate &&
	       hs_active();
}

static __attribute__((noinline, optimize("omit-frame-pointer"))) void w_free(void *ctx, void *p)
{
	if (LIKELY(table_pass_by(p))) { /* never sampled, NULL included */
		const struct pymem_allocator *o = ctx;

		o->free(o->ctx, p);
		return;
	}
	if (p)
		w_free_full(ctx, p);
}

/* Whether domain D's allocator A is one of ours: the context is. */
static bool ours(const struct pymem_allocator *a, int d)
{
	return a->ctx == &dom[d];
}

static struct pymem_allocator wrapper_of(int d)
{
	switch (dom[d].how) {
	case WRAP_POOLS:
		return (struct pymem_allocator){&dom[d], w_malloc_pools, w_calloc_pools, w_realloc_pools, dom[d].orig.free};
	case WRAP_NONE:
		return (struct pymem_allocator){&dom[d], w_malloc_fwd, w_calloc_fwd, w_realloc_fwd, dom[d].orig.free};
	default:
		return (struct pymem_allocator){&dom[d], w_malloc, w_calloc, w_realloc, w_free};
	}
}

/* Whether an allocator with no context frees a block of glibc's (or the pool's, which glibc
 * takes for one of its own) with free: pymalloc's free passes what is outside its arenas to
 * PyMem_RawFree, PYTHONMALLOC=malloc's is free. From 3.13 a build may have mimalloc, whose
 * free takes only its own blocks: there, only pymalloc and malloc asked for by name or by
 * default. */
static bool frees_foreign(const struct pymem_allocator *a)
{
	const char *m = getenv("PYTHONMALLOC");

	if (a->ctx)
		return false; /* a wrapper (the debug hooks, tracemalloc's): it frees what it made */
	return py.l.version < 0x30d || !m || !*m || !strcmp(m, "pymalloc") || !strcmp(m, "malloc");
}

/* How domain D is wrapped for a session at RATE (0: every event). */
static enum wrap wrap_for(int d, uint32_t rate)
{
	const char *m = getenv("PYTHONMALLOC");

	if (!rate || !frees_foreign(&dom[d].orig))
		return WRAP_ALL;
	return m && !strcmp(m, "malloc") ? WRAP_NONE : WRAP_POOLS;
}

/* With the GIL held: both domains wrapped, for the session's mode (a domain keeps its own
 * free while sampling); wrapped again if the mode changed since. */
static void install(void)
{
	struct pymem_allocator cur[3];
	uint32_t rate = session_rate();

	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == INSTALLED && installed_rate == rate)
		return;
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
		py.get_allocator(d, &cur[d]);
		if (ours(&cur[d], d))
			continue; /* still ours, from an earlier attach or mode */
		if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == INSTALLED)
			continue; /* wrapped over since: it forwards to ours, which stays as it is */
		dom[d].orig = cur[d];
	}
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
		struct pymem_allocator w;

		if (!ours(&cur[d], d) && __atomic_load_n(&state, __ATOMIC_ACQUIRE) == INSTALLED)
			continue;
		dom[d].how = wrap_for(d, rate);
		w = wrapper_of(d);
		py.set_allocator(d, &w);
	}
	pools_redraw(); /* at this session's rate */
	installed_rate = rate;
	wait_end();
	/* Memos made before now may hold code freed unseen. */
	__atomic_add_fetch(&py_code_epoch, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&state, INSTALLED, __ATOMIC_RELEASE);
	count(HS_CNT_PY_PYMEM);
}

/* With the GIL held: the originals back where our wrappers still are; which, in *WAS. */
static void unwrap(bool was[3])
{
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
		struct pymem_allocator cur;

		py.get_allocator(d, &cur);
		was[d] = ours(&cur, d);
		if (was[d])
			py.set_allocator(d, &dom[d].orig);
	}
}

/* ---- sys._debugmallocstats ----
 * CPython prints pymalloc's arenas and pools only if the object domain's malloc is pymalloc's
 * own (_PyObject_DebugMallocStats: _PyMem_PymallocEnabled compares the pointers), and no
 * wrapper can be that function: wrapped, the section was gone (CPython's
 * test_sys.test_debugmallocstats failed under the recorder). sys._debugmallocstats is
 * replaced, at a pending call (a clean point of the eval loop: what it makes is Python
 * objects), by a function that puts the originals back for the original's call and our
 * wrappers after it. It holds the GIL throughout and the original allocates nothing of the
 * domains (it prints from pymalloc's own tables), so nothing is allocated unseen meanwhile.
 * The function is called through the sys module (`sys._debugmallocstats()`); a reference taken
 * before the attach calls the original. */
static void *stats_orig, *stats_ours; /* the functions, a reference held to each */

static void *stats_call(void *self, void *unused)
{
	bool was[3];
	void *ret;

	(void)self;
	(void)unused;
	unwrap(was);
	ret = py.call_object(stats_orig, NULL);
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
		struct pymem_allocator w = wrapper_of(d);

		if (was[d])
			py.set_allocator(d, &w);
	}
	return ret;
}

static struct py_method_def stats_def = {
	"_debugmallocstats", stats_call, PY_METH_NOARGS,
	"Print summary info to stderr about the state of pymalloc's structures (heapsnap: "
	"the recorder's allocator wrappers set aside for the call).",
};

static bool stats_api(void)
{
	return py.sys_get_object && py.sys_set_object && py.cfunction_new && py.call_object && py.incref &&
	       py.decref && py.get_attr && py.err_clear;
}

/* Pending call: sys._debugmallocstats ours, unless it is already or is not CPython's. */
static void stats_take(void)
{
	void *cur, *mod;

	if (!stats_api() || !(cur = py.sys_get_object("_debugmallocstats"))) /* borrowed */
		return;
	if (cur == stats_ours)
		return;
	if (!stats_ours) {
		/* Its __module__ ('sys'), as the original's. */
		mod = py.get_attr(cur, "__module__");
		py.err_clear();
		stats_ours = py.cfunction_new(&stats_def, NULL, mod);
		if (mod)
			py.decref(mod);
		if (!stats_ours) {
			py.err_clear();
			return;
		}
		py.incref(cur);
		stats_orig = cur;
	} else if (cur != stats_orig) {
		return; /* someone else's since: left as it is */
	}
	if (py.sys_set_object("_debugmallocstats", stats_ours))
		py.err_clear();
}

/* Pending call: the original back, if sys still holds ours. */
static void stats_give_back(void)
{
	if (!stats_api() || !stats_ours || py.sys_get_object("_debugmallocstats") != stats_ours)
		return;
	if (py.sys_set_object("_debugmallocstats", stats_orig))
		py.err_clear();
}

/* Pending call, with the GIL held: both domains wrapped, sys._debugmallocstats ours, and the
 * finalization's snapshot asked for. */
static int install_pending(void *arg)
{
	(void)arg;
	install();
	/* What the interpreter allocates for our calls (the names we look up, our function
	 * objects) is the library's, not the program's: at depth, not recorded. */
	depth_in();
	stats_take();
	pyfinal_take();
	depth_out();
	return 0;
}

/* Pending call, with the GIL held: the originals back where our wrappers still are. */
static int restore(void *arg)
{
	bool was[3];

	(void)arg;
	unwrap(was);
	depth_in();
	stats_give_back();
	pyfinal_give_back();
	depth_out();
	__atomic_store_n(&state, RESTORED, __ATOMIC_RELEASE);
	return 0;
}

/* Launched, sampling, the domains are wrapped at a recorded event once the interpreter is
 * initialized, and a program of small objects may make none: pymalloc's calls are not counted
 * down until they are wrapped, and the samples of malloc's few calls come rarely (py_alloc.py,
 * at 512 KiB: none in some runs of 300,000 rounds, whose objects all went unseen). So from the
 * interpreter's finding (py_attach) until then, the pass-bys of malloc and calloc look at
 * the interpreter first (pymem_wait_step); given up after WAIT_CALLS of them, for a program
 * that has libpython but never starts it, which then goes as it did. */
#define WAIT_CALLS (1u << 20)
uint32_t pymem_waiting;

static void wait_end(void)
{
	if (__atomic_exchange_n(&pymem_waiting, 0, __ATOMIC_ACQ_REL))
		pass_publish();
}

void pymem_wait_begin(void)
{
	if (hs_hot.sl.injected || __atomic_load_n(&state, __ATOMIC_ACQUIRE) == INSTALLED)
		return;
	__atomic_store_n(&pymem_waiting, WAIT_CALLS, __ATOMIC_RELEASE);
	pass_publish();
}

void pymem_wait_step(void)
{
	if (__atomic_sub_fetch(&pymem_waiting, 1, __ATOMIC_RELAXED) + 1 <= 1 ||
	    __atomic_load_n(&state, __ATOMIC_ACQUIRE) == INSTALLED) {
		wait_end();
		return;
	}
	if (hook_depth() || !hs_active() || !py.is_initialized || !py.is_initialized())
		return;
	depth_in();
	pymem_on_recorded();
	depth_out();
}

void pymem_request_install(void)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);

	if (!__atomic_load_n(&hs_hot.sl.py_ready, __ATOMIC_ACQUIRE) || !py.add_pending_call || !py.get_allocator ||
	    !py.set_allocator || !py.is_initialized || s == ASKED || s == INSTALLED)
		return;
	if (!py.is_initialized())
		return;
	/* A session before this one may have sampled, its frees unseen: no memo is trusted. */
	__atomic_add_fetch(&py_code_epoch, 1, __ATOMIC_ACQ_REL);
	if (__atomic_compare_exchange_n(&state, &s, ASKED, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		depth_in();
		if (py.add_pending_call(install_pending, NULL))
			__atomic_store_n(&state, s, __ATOMIC_RELEASE); /* its queue full: asked again later */
		depth_out();
	}
}

/* Whether the calling thread holds the GIL. Not PyGILState_Check, which says yes to every
 * thread once a subinterpreter was made: this thread's own state is the one running (the
 * GIL's holder up to 3.11, the thread's attached state from 3.12: NULL while it has let the
 * GIL go). Neither call allocates or locks. */
static bool gil_held(void)
{
	void *mine;

	if (!py.this_thread_state || !py.current_thread_state)
		return false;
	mine = py.this_thread_state();
	return mine && mine == py.current_thread_state();
}

/* Asked of a recorded event: launched, the request (the interpreter starts after the
 * library); then, at the first event of a thread that holds the GIL, the wrappers installed
 * there and then rather than at the pending call. That call runs only once the main thread
 * sees the eval loop's breaker set, which Py_AddPendingCall sets only when called on the main
 * thread (3.9 to 3.11's COMPUTE_EVAL_BREAKER: calls_to_do && _Py_ThreadCanHandlePendingCalls(),
 * and the main thread recomputes it when it takes the GIL back). Injected, it
 * is called on the loader's thread; the main thread, back from a blocking read with the GIL
 * and held in the trampoline meanwhile, went on to make its objects unwrapped until it next
 * let the GIL go and took it back (an attach to a program blocked in sys.stdin.read(1): its
 * 20,000 small objects made after waking all unseen). The domains only need the GIL held. */
void pymem_on_recorded(void)
{
	int s = __atomic_load_n(&state, __ATOMIC_RELAXED);

	if (LIKELY(s == INSTALLED)) {
		/* One GIL guards py_skip. Where there are more (3.12's subinterpreters with their
		 * own), a thread can store a stale ~0 over another's draw, which no call would bring
		 * down to 0 again: no draw is over INT64_MAX. */
		if (UNLIKELY(__atomic_load_n(&py_skip, __ATOMIC_RELAXED) > (uint64_t)INT64_MAX / PYMALLOC_SMALL))
			pools_redraw();
		/* Installed for an earlier session, which sampled where this one does not or the
		 * other way round (an injected session whose restore the main thread has not yet
		 * run): the frees wrapped or given back for this one. */
		if (UNLIKELY(installed_rate != session_rate()) && gil_held()) {
			depth_in();
			install();
			depth_out();
		}
		return;
	}
	if ((s == NOT_ASKED || s == RESTORED) && !hs_hot.sl.injected) {
		pymem_request_install();
		s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	}
	if (s == ASKED && gil_held()) {
		depth_in();
		install();
		/* sys._debugmallocstats waits for a clean point of the eval loop: on the main
		 * thread, the pending call asked again sets its breaker, as the loader's did not. */
		if (gettid_raw() == hs_hot.sl.self_pid)
			py.add_pending_call(install_pending, NULL);
		depth_out();
	}
}

/* Injected, at the end of a session: the originals back, waited for at most a second (the
 * main thread runs pending calls, and may be blocked in C code meanwhile: the wrappers stay
 * then, forwarding and recording nothing, until it runs it). */
void pymem_detach(void)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);

	if (s != INSTALLED && s != ASKED)
		return;
	if (py.add_pending_call(restore, NULL))
		return;
	for (int i = 0; i < 1000 && __atomic_load_n(&state, __ATOMIC_ACQUIRE) != RESTORED; i++) {
		struct timespec ms = {0, 1000000};

		nanosleep(&ms, NULL);
	}
}
