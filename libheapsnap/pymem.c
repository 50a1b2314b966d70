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
 * library is never unloaded, so a wrapper stays callable. */
#include <string.h>
#include <time.h>

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

static struct pymem_allocator orig[3]; /* by domain: what our wrappers forward to */
/* 0 not asked, 1 asked (a pending call on its way), 2 installed, 3 restored */
static int state;
enum { NOT_ASKED, ASKED, INSTALLED, RESTORED };
static void wait_end(void);

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

static __attribute__((noinline)) void *w_calloc(void *ctx, size_t n, size_t m)
{
	const struct pymem_allocator *o = ctx;
	size_t size = m && n > SIZE_MAX / m ? SIZE_MAX : n * m;
	struct tstate *t;
	void *p;

	if (LIKELY(pass_by(size))) {
		depth_in(); /* pymalloc's own calloc inside is not another allocation */
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

static bool ours(const struct pymem_allocator *a)
{
	return a->malloc == w_malloc && a->free == w_free;
}

static struct pymem_allocator wrapper_of(int d)
{
	/* The context is the allocator forwarded to: one load fewer on every call. */
	return (struct pymem_allocator){&orig[d], w_malloc, w_calloc, w_realloc, w_free};
}

/* With the GIL held: both domains wrapped. */
static void install(void)
{
	struct pymem_allocator cur[3];

	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == INSTALLED)
		return;
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
		py.get_allocator(d, &cur[d]);
		if (ours(&cur[d]))
			continue; /* still ours from an earlier attach */
		orig[d] = cur[d];
	}
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
		struct pymem_allocator w = wrapper_of(d);

		if (!ours(&cur[d]))
			py.set_allocator(d, &w);
	}
	/* Memos made before now may hold code freed unseen. */
	__atomic_add_fetch(&py_code_epoch, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&state, INSTALLED, __ATOMIC_RELEASE);
	count(HS_CNT_PY_PYMEM);
	wait_end();
}

/* With the GIL held: the originals back where our wrappers still are; which, in *WAS. */
static void unwrap(bool was[3])
{
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
		struct pymem_allocator cur;

		py.get_allocator(d, &cur);
		was[d] = ours(&cur);
		if (was[d])
			py.set_allocator(d, &orig[d]);
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
struct py_method_def { /* PyMethodDef, the same from 3.0 on */
	const char *name;
	void *(*meth)(void *self, void *unused);
	int flags;
	const char *doc;
};
#define PY_METH_NOARGS 0x0004

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

/* ---- the snapshot as the interpreter begins to finalize ----
 * Py_FinalizeEx first joins the program's threads, then runs the atexit module's callbacks,
 * and only later clears the modules (their globals freed): a callback of ours there marks the
 * moment the program's own work is done and what it keeps is still held, a mark in the main
 * thread's ring that the recorder makes the SNAPSHOT "python-finalize" where it reads it, every
 * event stamped before it read first. (Py_AtExit's functions run after the modules were
 * cleared: too late.) Registered at the install's pending call, so launched before the
 * program registers its own, which atexit then runs before ours (last in, first out); given
 * back at the restore. A fork child inherits the registration and marks its own pid. The
 * callback runs Python's way (the GIL held, from the eval loop), not on a hook's path. */
static void *final_ours; /* the function, a reference held while registered */

static void *final_call(void *self, void *unused)
{
	struct tstate *t = enter();

	(void)self;
	(void)unused;
	if (t) {
		depth_in();
		emit_mark(t, HS_MARK_PY_FINALIZE);
		depth_out();
	}
	py.incref(py.none);
	return py.none;
}

static struct py_method_def final_def = {
	"_heapsnap_finalizing", final_call, PY_METH_NOARGS,
	"heapsnap: marks a snapshot as the interpreter begins to finalize (registered with atexit).",
};

static bool final_api(void)
{
	return py.import_module && py.call_args && py.none && py.cfunction_new && py.get_attr && py.incref &&
	       py.decref && py.err_clear;
}

/* atexit.NAME(final_ours); whether it returned. */
static bool final_atexit(const char *name)
{
	void *mod = py.import_module("atexit"), *fn = mod ? py.get_attr(mod, name) : NULL;
	void *res = fn ? py.call_args(fn, final_ours, NULL) : NULL;

	if (res)
		py.decref(res);
	else
		py.err_clear();
	if (fn)
		py.decref(fn);
	if (mod)
		py.decref(mod);
	return res != NULL;
}

/* Pending call: our callback registered with atexit, once. */
static void final_take(void)
{
	if (final_ours || !final_api())
		return;
	final_ours = py.cfunction_new(&final_def, NULL, NULL);
	if (!final_ours) {
		py.err_clear();
		return;
	}
	if (!final_atexit("register")) {
		py.decref(final_ours);
		final_ours = NULL;
	}
}

/* Pending call: unregistered (a later session registers it again). */
static void final_give_back(void)
{
	if (!final_ours)
		return;
	final_atexit("unregister");
	py.decref(final_ours);
	final_ours = NULL;
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
	final_take();
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
	final_give_back();
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

	if (LIKELY(s == INSTALLED))
		return;
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
