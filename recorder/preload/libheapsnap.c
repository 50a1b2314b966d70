// SPDX-License-Identifier: MIT
/* libheapsnap.so: the in-process recorder, preloaded into a command heapsnap-record starts.
 * It interposes the allocators and writes the events the BPF programs write (bpf/heapsnap.h)
 * into per-thread rings in memory shared with heapsnap-record (recorder/shm.h), which reads
 * them with the code that reads the BPF rings.
 *
 * The hot path takes no lock, makes no system call and allocates nothing: a thread writes
 * only its own ring. Sampled, an allocation the draw passes by costs a thread-local counter,
 * and a free of a block never sampled one load of a byte that says so. Every event, a full
 * ring makes the thread wait for the recorder rather than drop; a recorder that is gone
 * (no heartbeat for 2 s) turns every hook into a plain call. */
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

#include "format/record.h"
#include "shm.h"

#define EXPORT __attribute__((visibility("default")))
#define HOOK __attribute__((visibility("default"), noinline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- the real allocators ---- */

static struct {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	void (*free)(void *);
	void *(*aligned_alloc)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*dlopen)(const char *, int);
	int (*setname)(pthread_t, const char *);
	int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
} real;

/* dlsym itself allocates: what it asks for before the real functions are known comes from
 * here, and is never given back. */
static char boot[1 << 16] __attribute__((aligned(64)));
static size_t boot_used;
static int resolving;

static void *boot_alloc(size_t n)
{
	size_t off = __atomic_fetch_add(&boot_used, (n + 63) & ~(size_t)63, __ATOMIC_RELAXED);

	return off + n <= sizeof(boot) ? boot + off : NULL;
}

static bool is_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof(boot);
}

static void resolve(void)
{
	if (real.free || __atomic_exchange_n(&resolving, 1, __ATOMIC_ACQ_REL))
		return;
#define R(f, name) real.f = (__typeof__(real.f))dlsym(RTLD_NEXT, name)
	R(malloc, "malloc");
	R(calloc, "calloc");
	R(realloc, "realloc");
	R(reallocarray, "reallocarray");
	R(aligned_alloc, "aligned_alloc");
	R(posix_memalign, "posix_memalign");
	R(memalign, "memalign");
	R(valloc, "valloc");
	R(pvalloc, "pvalloc");
	R(dlopen, "dlopen");
	R(setname, "pthread_setname_np");
	R(prctl, "prctl");
	R(free, "free");
#undef R
}

/* ---- shared state ---- */

static struct hs_shm_hdr *shm;
static uint8_t *shm_data;
static int wake_fd = -1;
static int active;           /* attached to a recorder; hooks record */
static uint32_t self_pid;
static pthread_key_t exit_key;

/* Sampled blocks live, for frees: a byte per bucket counts them, so a free of a block never
 * sampled is turned away by one load; a hit looks in the exact table under a lock, which
 * only sampled events take. */
#define SAMPLED_BUCKETS (1u << 21)
#define SAMPLED_SLOTS (1u << 18)
static uint8_t *sampled_count;
static struct sampled_ent {
	uint64_t ptr, size;
} *sampled;
static int sampled_lock;
static uint32_t sampled_live;

struct tstate {
	int depth;      /* inside one of our hooks: nested calls are the outer one's */
	int ring;       /* claimed ring, -1 none yet, -2 none to be had */
	uint32_t tid;
	uint64_t prod;  /* own copy of the ring's producer position */
	uint64_t cons;  /* the recorder's position, as last read */
	int64_t until_sample;
	uint64_t stack_lo, stack_hi;
	uint64_t events;
	uint64_t sent[256]; /* stack hashes sent lately, direct-mapped */
};

static __thread struct tstate *tsp __attribute__((tls_model("initial-exec")));
static __thread int tdepth __attribute__((tls_model("initial-exec")));

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t); /* vDSO: no system call */
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void count(int which)
{
	if (shm)
		__atomic_fetch_add(&shm->counters[which], 1, __ATOMIC_RELAXED);
}

static uint32_t gettid_raw(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* ---- per-thread state and rings ---- */

static void thread_exit(void *arg)
{
	struct tstate *t = arg;

	if (t && t->ring >= 0 && shm)
		__atomic_fetch_or(&shm->rings[t->ring].owner, HS_SHM_CLOSING, __ATOMIC_RELEASE);
	if (t)
		munmap(t, sizeof(*t));
	tsp = NULL;
}

static int64_t draw(void)
{
	uint64_t x = (uint64_t)(uintptr_t)tsp ^ now_ns();

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (int64_t)shm->thresholds[x & (HS_NR_THRESHOLDS - 1)];
}

/* The calling thread's state, made on its first event: a system call or two, once. */
static struct tstate *thread_state(void)
{
	struct tstate *t = tsp;
	pthread_attr_t a;
	void *lo;
	size_t sz;

	if (LIKELY(t != NULL))
		return t;
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return NULL;
	t->ring = -1;
	t->tid = gettid_raw();
	tsp = t;
	t->until_sample = shm && shm->sample_rate ? draw() : 0;
	/* The stack's bounds: the walk reads nothing outside them, so junk frame pointers in
	 * code built without them cannot fault. */
	tdepth++;
	if (!pthread_getattr_np(pthread_self(), &a)) {
		if (!pthread_attr_getstack(&a, &lo, &sz)) {
			t->stack_lo = (uint64_t)(uintptr_t)lo;
			t->stack_hi = t->stack_lo + sz;
		}
		pthread_attr_destroy(&a);
	}
	pthread_setspecific(exit_key, t);
	tdepth--;
	return t;
}

static void emit_comm(struct tstate *t);

/* Claims a free ring for this thread: a compare-and-swap on its owner word. */
static bool claim_ring(struct tstate *t)
{
	uint32_t n = shm->nr_rings;
	uint64_t me = (uint64_t)self_pid << 32 | t->tid;

	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (t->tid + k) % n;
		uint64_t zero = 0;

		if (__atomic_compare_exchange_n(&shm->rings[i].owner, &zero, me, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			t->ring = (int)i;
			t->prod = __atomic_load_n(&shm->rings[i].prod, __ATOMIC_RELAXED);
			t->cons = __atomic_load_n(&shm->rings[i].cons, __ATOMIC_ACQUIRE);
			emit_comm(t);
			return true;
		}
	}
	t->ring = -2;
	count(HS_CNT_THREAD_FULL);
	return false;
}

static bool recorder_gone(void)
{
	uint64_t hb = __atomic_load_n(&shm->heartbeat_ns, __ATOMIC_ACQUIRE);

	return now_ns() - hb > 2000000000ull;
}

static void go_dormant(void)
{
	__atomic_store_n(&active, 0, __ATOMIC_RELEASE);
}

/* Room for LEN bytes of event in the thread's ring, or NULL (counted). Every event: waits
 * for the recorder while the ring is full; sampled: drops. */
static void *reserve(struct tstate *t, uint32_t len, uint32_t *need_out)
{
	struct hs_shm_ring *r;
	uint32_t size = shm->ring_bytes, need = (len + HS_SHM_RING_HDR + 7) & ~7u, pos, pad;
	uint8_t *data;

	if (UNLIKELY(t->ring < 0) && (t->ring == -2 || !claim_ring(t)))
		return NULL;
	r = &shm->rings[t->ring];
	data = shm_data + (uint64_t)t->ring * size;
	pos = (uint32_t)(t->prod & (size - 1));
	pad = pos + need > size ? size - pos : 0;
	if (t->prod + pad + need - t->cons > size) {
		t->cons = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
		for (unsigned spins = 0; t->prod + pad + need - t->cons > size; spins++) {
			if (shm->sample_rate || !__atomic_load_n(&active, __ATOMIC_ACQUIRE)) {
				count(HS_CNT_RINGBUF_FULL);
				return NULL;
			}
			/* The recorder is behind: wake it, and wait. */
			if (spins == 0 && wake_fd >= 0) {
				uint64_t one = 1;

				if (write(wake_fd, &one, sizeof(one)) < 0)
					(void)0;
			}
			if (spins > 64) {
				struct timespec ns = {0, 200000};

				nanosleep(&ns, NULL);
				if ((spins & 255) == 0 && recorder_gone()) {
					go_dormant();
					count(HS_CNT_RINGBUF_FULL);
					return NULL;
				}
			} else {
				sched_yield();
			}
			t->cons = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
		}
	}
	if (pad) {
		/* A record never wraps: the tail of the ring is skipped as a discarded record. */
		*(uint32_t *)(data + pos) = (pad - HS_SHM_RING_HDR) | HS_SHM_DISCARD;
		t->prod += pad;
		pos = 0;
	}
	*(uint32_t *)(data + pos) = len;
	*(uint32_t *)(data + pos + 4) = 0;
	*need_out = need;
	return data + pos + HS_SHM_RING_HDR;
}

static void commit(struct tstate *t, uint32_t need)
{
	struct hs_shm_ring *r = &shm->rings[t->ring];
	uint64_t before = t->prod - t->cons, quarter = shm->ring_bytes / 4;

	t->prod += need;
	__atomic_store_n(&r->prod, t->prod, __ATOMIC_RELEASE);
	/* Crossing a quarter of the ring wakes the recorder, which otherwise looks every few ms. */
	if (before < quarter && before + need >= quarter && wake_fd >= 0) {
		uint64_t one = 1;

		if (write(wake_fd, &one, sizeof(one)) < 0)
			(void)0;
	}
	/* Now and then, whether the recorder is still there. */
	if (UNLIKELY((++t->events & 0xfffff) == 0) && recorder_gone())
		go_dormant();
}

static void fill_hdr(struct hs_event_hdr *h, uint8_t type, uint8_t kind, uint32_t tid, uint64_t ts)
{
	h->type = type;
	h->kind = kind;
	h->nr = 0;
	h->pid = self_pid;
	h->tid = tid;
	h->pad = 0;
	h->ts = ts;
}

static void emit_comm(struct tstate *t)
{
	struct hs_comm_event *e;
	uint32_t need;

	e = reserve(t, sizeof(*e), &need);
	if (!e)
		return;
	fill_hdr(&e->h, HS_EV_COMM, 0, t->tid, now_ns());
	memset(e->comm, 0, sizeof(e->comm));
	if (real.prctl)
		real.prctl(PR_GET_NAME, (unsigned long)e->comm, 0, 0, 0);
	commit(t, need);
}

/* ---- stacks ---- */

/* Frame-pointer walk from the hook's frame: frame 0 is the hook's return address (the
 * caller of malloc, as the BPF path reads it from [sp]). Reads only within the thread's
 * stack, upwards, 8-aligned: junk in rbp ends the walk, never faults. */
static __attribute__((always_inline)) inline uint32_t walk(struct tstate *t, uint64_t fp, uint64_t *ips,
							   uint32_t max)
{
	uint32_t n = 0;

	while (n < max) {
		if (fp < t->stack_lo || fp + 16 > t->stack_hi || (fp & 7))
			break;
		uint64_t next = ((uint64_t *)fp)[0], ret = ((uint64_t *)fp)[1];

		if (!ret)
			break;
		ips[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	if (n == max)
		count(HS_CNT_STACK_TRUNCATED);
	return n;
}

static uint64_t hash_ips(const uint64_t *ips, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (uint32_t i = 0; i < n; i++) {
		h ^= ips[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h ? h : 1;
}

/* The stack's id (its hash); the stack itself goes to the ring the first time this thread
 * sees it lately. The recorder keeps one copy of each. */
static uint64_t capture(struct tstate *t, uint64_t fp, uint64_t ts)
{
	uint64_t ips[HS_MAX_STACK], h;
	uint32_t n, need, max = shm->max_stack < HS_MAX_STACK ? shm->max_stack : HS_MAX_STACK;
	struct hs_stack_event *e;

	if (shm->stack_mode == HS_STACK_NONE) {
		ips[0] = ((uint64_t *)fp)[1];
		n = 1;
	} else {
		n = walk(t, fp, ips, max);
	}
	if (!n)
		return 0;
	h = hash_ips(ips, n);
	if (t->sent[h & 255] == h)
		return h;
	e = reserve(t, (uint32_t)(offsetof(struct hs_stack_event, ips) + n * sizeof(uint64_t)), &need);
	if (!e)
		return h;
	fill_hdr(&e->h, HS_EV_STACK, 0, t->tid, ts);
	e->h.nr = (uint16_t)n;
	e->hash = h;
	memcpy(e->ips, ips, n * sizeof(uint64_t));
	commit(t, need);
	t->sent[h & 255] = h;
	return h;
}

/* ---- events ---- */

static uint32_t bucket(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p >> 4;

	x *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(x >> 43); /* 21 bits */
}

static void spin_lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			sched_yield();
}

static void spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* Remembers a sampled block. False when the table is full (counted as the live map's). */
static bool sampled_add(void *p, uint64_t size)
{
	uint64_t i = ((uint64_t)(uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 46;
	bool ok = false;

	spin_lock(&sampled_lock);
	if (sampled_live < SAMPLED_SLOTS / 2) {
		while (sampled[i].ptr && sampled[i].ptr != 1)
			i = (i + 1) & (SAMPLED_SLOTS - 1);
		sampled[i] = (struct sampled_ent){(uint64_t)(uintptr_t)p, size};
		sampled_live++;
		__atomic_fetch_add(&sampled_count[bucket(p)], 1, __ATOMIC_RELAXED);
		ok = true;
	}
	spin_unlock(&sampled_lock);
	if (!ok)
		count(HS_CNT_LIVE_FULL);
	return ok;
}

/* A sampled block's size, forgotten; 0 if P was not sampled. */
static uint64_t sampled_take(void *p)
{
	uint64_t i = ((uint64_t)(uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 46, size = 0;

	if (LIKELY(!__atomic_load_n(&sampled_count[bucket(p)], __ATOMIC_RELAXED)))
		return 0;
	spin_lock(&sampled_lock);
	for (; sampled[i].ptr; i = (i + 1) & (SAMPLED_SLOTS - 1)) {
		if (sampled[i].ptr == (uint64_t)(uintptr_t)p) {
			size = sampled[i].size;
			sampled[i].ptr = 1; /* a tombstone keeps later probes going */
			sampled_live--;
			__atomic_fetch_sub(&sampled_count[bucket(p)], 1, __ATOMIC_RELAXED);
			break;
		}
	}
	spin_unlock(&sampled_lock);
	return size;
}

/* Whether this allocation is recorded: always every event; sampled, when the thread's byte
 * countdown runs out (Poisson byte sampling, as the BPF sampler). */
static __attribute__((always_inline)) inline bool sample(struct tstate *t, size_t size)
{
	if (!shm->sample_rate)
		return true;
	t->until_sample -= (int64_t)size;
	if (LIKELY(t->until_sample > 0))
		return false;
	do
		t->until_sample += draw();
	while (t->until_sample <= 0);
	count(HS_CNT_SAMPLED);
	return true;
}

static void record_alloc(struct tstate *t, void *p, size_t size, uint8_t kind, uint64_t fp)
{
	struct hs_alloc_event *e;
	uint64_t ts = now_ns(), h;
	uint32_t need;

	if (shm->sample_rate && !sampled_add(p, size))
		return;
	h = capture(t, fp, ts);
	e = reserve(t, sizeof(*e), &need);
	if (!e)
		return;
	fill_hdr(&e->h, HS_EV_ALLOC, kind, t->tid, ts);
	e->ptr = (uint64_t)(uintptr_t)p;
	e->size = size;
	e->stack = h;
	commit(t, need);
}

static void record_free(struct tstate *t, void *p, uint64_t size, uint8_t flags, uint64_t ts)
{
	struct hs_free_event *e;
	uint32_t need;

	e = reserve(t, sizeof(*e), &need);
	if (!e)
		return;
	fill_hdr(&e->h, HS_EV_FREE, flags, t->tid, ts);
	e->ptr = (uint64_t)(uintptr_t)p;
	e->size = size;
	commit(t, need);
}

/* The thread's state if this call is to be recorded: attached, not nested in another hook. */
static __attribute__((always_inline)) inline struct tstate *enter(void)
{
	if (UNLIKELY(!real.free))
		resolve();
	if (!__atomic_load_n(&active, __ATOMIC_RELAXED) || tdepth)
		return NULL;
	/* Detached (the recording ended): dormant for good. */
	if (UNLIKELY(__atomic_load_n(&shm->dormant, __ATOMIC_RELAXED))) {
		go_dormant();
		return NULL;
	}
	return thread_state();
}

/* An allocation hook's body: the real call, then the event, at depth so that what the
 * real allocator calls is not counted again. */
#define ALLOC_HOOK(kind, size_expr, call)                                                        \
	do {                                                                                      \
		struct tstate *t = enter();                                                       \
		void *p;                                                                          \
		if (!t) {                                                                         \
			tdepth++;                                                                 \
			p = call;                                                                 \
			tdepth--;                                                                 \
			return p;                                                                 \
		}                                                                                 \
		tdepth++;                                                                         \
		p = call;                                                                         \
		if (p && sample(t, (size_expr)))                                                  \
			record_alloc(t, p, (size_expr), (kind), (uint64_t)(uintptr_t)__builtin_frame_address(0)); \
		tdepth--;                                                                         \
		return p;                                                                         \
	} while (0)

static void free_hook(void *p, uint8_t flags)
{
	struct tstate *t;
	uint64_t size = 0, ts;

	if (!p || is_boot(p))
		return;
	t = enter();
	if (!t) {
		tdepth++;
		real.free(p);
		tdepth--;
		return;
	}
	tdepth++;
	if (shm->sample_rate && !(size = sampled_take(p))) {
		real.free(p);
	} else {
		/* Stamped before the block is given back: another thread may be handed its
		 * address at once, and its allocation must come after this free. */
		ts = now_ns();
		real.free(p);
		record_free(t, p, size, flags, ts);
	}
	tdepth--;
}

HOOK EXPORT void *malloc(size_t n)
{
	if (UNLIKELY(!real.malloc)) {
		resolve();
		if (!real.malloc)
			return boot_alloc(n);
	}
	ALLOC_HOOK(HS_KIND_MALLOC, n, real.malloc(n));
}

HOOK EXPORT void *calloc(size_t n, size_t m)
{
	if (UNLIKELY(!real.calloc)) {
		resolve();
		if (!real.calloc) {
			void *p = (m && n > SIZE_MAX / m) ? NULL : boot_alloc(n * m);

			return p; /* boot memory is zero */
		}
	}
	ALLOC_HOOK(HS_KIND_CALLOC, n * m, real.calloc(n, m));
}

HOOK EXPORT void free(void *p)
{
	if (UNLIKELY(!real.free)) {
		resolve();
		if (!real.free)
			return;
	}
	free_hook(p, 0);
}

static void *realloc_body(void *old, size_t n, void *(*call)(void *, size_t, size_t), size_t m, uint64_t fp)
{
	struct tstate *t = enter();
	uint64_t ts, old_size = 0;
	bool old_sampled;
	void *p;

	if (!t) {
		tdepth++;
		p = call(old, n, m);
		tdepth--;
		return p;
	}
	ts = now_ns();
	old_sampled = old && !is_boot(old) && (!shm->sample_rate || (old_size = sampled_take(old)));
	tdepth++;
	p = call(old, n, m);
	if (p || (old && !n)) {
		/* The old block is gone: freed (as realloc releases it) and, on success, a new one. */
		if (old_sampled)
			record_free(t, old, old_size, p ? HS_FREE_FLAG_REALLOC : 0, ts);
		if (p && sample(t, n * (m ? m : 1)))
			record_alloc(t, p, n * (m ? m : 1), HS_KIND_REALLOC, fp);
	} else if (old_sampled && shm->sample_rate) {
		sampled_add(old, old_size); /* failed: the old block stays, still sampled */
	}
	tdepth--;
	return p;
}

static void *call_realloc(void *old, size_t n, size_t m)
{
	(void)m;
	if (is_boot(old)) {
		void *p = real.malloc(n);

		if (p)
			memcpy(p, old, n < 256 ? n : 256);
		return p;
	}
	return real.realloc(old, n);
}

static void *call_reallocarray(void *old, size_t n, size_t m)
{
	return real.reallocarray(old, n, m);
}

HOOK EXPORT void *realloc(void *old, size_t n)
{
	if (UNLIKELY(!real.realloc)) {
		resolve();
		if (!real.realloc)
			return boot_alloc(n);
	}
	return realloc_body(old, n, call_realloc, 0, (uint64_t)(uintptr_t)__builtin_frame_address(0));
}

HOOK EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
	if (UNLIKELY(!real.reallocarray))
		resolve();
	if (m && n > SIZE_MAX / m) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_body(old, n, call_reallocarray, m, (uint64_t)(uintptr_t)__builtin_frame_address(0));
}

HOOK EXPORT void *aligned_alloc(size_t a, size_t n)
{
	if (UNLIKELY(!real.aligned_alloc))
		resolve();
	ALLOC_HOOK(HS_KIND_MEMALIGN, n, real.aligned_alloc(a, n));
}

HOOK EXPORT void *memalign(size_t a, size_t n)
{
	if (UNLIKELY(!real.memalign))
		resolve();
	ALLOC_HOOK(HS_KIND_MEMALIGN, n, real.memalign(a, n));
}

HOOK EXPORT void *valloc(size_t n)
{
	if (UNLIKELY(!real.valloc))
		resolve();
	ALLOC_HOOK(HS_KIND_MEMALIGN, n, real.valloc(n));
}

HOOK EXPORT void *pvalloc(size_t n)
{
	if (UNLIKELY(!real.pvalloc))
		resolve();
	ALLOC_HOOK(HS_KIND_MEMALIGN, n, real.pvalloc(n));
}

HOOK EXPORT int posix_memalign(void **out, size_t a, size_t n)
{
	struct tstate *t;
	int ret;

	if (UNLIKELY(!real.posix_memalign))
		resolve();
	t = enter();
	tdepth++;
	ret = real.posix_memalign(out, a, n);
	if (t && !ret && sample(t, n))
		record_alloc(t, *out, n, HS_KIND_MEMALIGN, (uint64_t)(uintptr_t)__builtin_frame_address(0));
	tdepth--;
	return ret;
}

/* ---- C++: every operator new and delete, counted once with the malloc inside ---- */

typedef void *(*new_fn)(size_t);
typedef void *(*new_a_fn)(size_t, size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_ant_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);

/* The next definition of a C++ operator: libstdc++'s, or an allocator's preloaded after us.
 * Looked up on first use, after start-up: only a program that calls it gets here. */
static void *next_sym(void **cache, const char *name)
{
	void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);

	if (!f) {
		tdepth++;
		f = dlsym(RTLD_NEXT, name);
		tdepth--;
		if (!f)
			abort(); /* a program that calls operator new has a C++ runtime */
		__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	}
	return f;
}

#define NEW_HOOK(sym, kind, type, args, callargs, size)                                          \
	HOOK EXPORT void *sym args                                                                \
	{                                                                                         \
		static void *next;                                                                \
		type f = (type)next_sym(&next, #sym);                                             \
		ALLOC_HOOK(kind, size, f callargs);                                               \
	}

NEW_HOOK(_Znwm, HS_KIND_NEW, new_fn, (size_t n), (n), n)
NEW_HOOK(_Znam, HS_KIND_NEW_ARRAY, new_fn, (size_t n), (n), n)
NEW_HOOK(_ZnwmRKSt9nothrow_t, HS_KIND_NEW, new_nt_fn, (size_t n, const void *nt), (n, nt), n)
NEW_HOOK(_ZnamRKSt9nothrow_t, HS_KIND_NEW_ARRAY, new_nt_fn, (size_t n, const void *nt), (n, nt), n)
NEW_HOOK(_ZnwmSt11align_val_t, HS_KIND_NEW, new_a_fn, (size_t n, size_t a), (n, a), n)
NEW_HOOK(_ZnamSt11align_val_t, HS_KIND_NEW_ARRAY, new_a_fn, (size_t n, size_t a), (n, a), n)
NEW_HOOK(_ZnwmSt11align_val_tRKSt9nothrow_t, HS_KIND_NEW, new_ant_fn, (size_t n, size_t a, const void *nt),
	 (n, a, nt), n)
NEW_HOOK(_ZnamSt11align_val_tRKSt9nothrow_t, HS_KIND_NEW_ARRAY, new_ant_fn, (size_t n, size_t a, const void *nt),
	 (n, a, nt), n)

/* Every delete frees its block as free does, then lets the real operator run nested. */
#define DEL_HOOK(sym, args, callargs)                                                            \
	HOOK EXPORT void sym args                                                                 \
	{                                                                                         \
		static void *next;                                                                \
		void (*f) args = (void (*) args)next_sym(&next, #sym);                            \
		struct tstate *t;                                                                 \
		uint64_t ts, size = 0;                                                            \
		if (!p)                                                                           \
			return;                                                                   \
		t = enter();                                                                      \
		if (t && shm->sample_rate && !(size = sampled_take(p)))                           \
			t = NULL;                                                                 \
		ts = t ? now_ns() : 0;                                                            \
		tdepth++;                                                                         \
		f callargs;                                                                       \
		if (t)                                                                            \
			record_free(t, p, size, 0, ts);                                           \
		tdepth--;                                                                         \
	}

DEL_HOOK(_ZdlPv, (void *p), (p))
DEL_HOOK(_ZdaPv, (void *p), (p))
DEL_HOOK(_ZdlPvm, (void *p, size_t n), (p, n))
DEL_HOOK(_ZdaPvm, (void *p, size_t n), (p, n))
DEL_HOOK(_ZdlPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt))
DEL_HOOK(_ZdaPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt))
DEL_HOOK(_ZdlPvSt11align_val_t, (void *p, size_t a), (p, a))
DEL_HOOK(_ZdaPvSt11align_val_t, (void *p, size_t a), (p, a))
DEL_HOOK(_ZdlPvmSt11align_val_t, (void *p, size_t n, size_t a), (p, n, a))
DEL_HOOK(_ZdaPvmSt11align_val_t, (void *p, size_t n, size_t a), (p, n, a))
DEL_HOOK(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t a, const void *nt), (p, a, nt))
DEL_HOOK(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t a, const void *nt), (p, a, nt))

/* ---- processes, images, thread names ---- */

static void emit_proc(uint8_t type, uint32_t ppid)
{
	struct tstate *t = thread_state();
	struct hs_proc_event *e;
	uint32_t need;
	int fd;

	if (!t || !shm)
		return;
	tdepth++;
	e = reserve(t, sizeof(*e), &need);
	if (e) {
		struct stat st;
		ssize_t n;

		memset(e, 0, sizeof(*e));
		fill_hdr(&e->h, type, 0, self_pid, now_ns());
		e->h.tid = self_pid;
		e->ppid = ppid;
		real.prctl(PR_GET_NAME, (unsigned long)e->comm, 0, 0, 0);
		n = readlink("/proc/self/exe", e->path, sizeof(e->path) - 1);
		if (n < 0)
			e->path[0] = 0;
		if (!stat("/proc/self/exe", &st)) {
			e->exe_ino = st.st_ino;
			e->exe_dev = (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev));
		}
		fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, e->args, sizeof(e->args));
			e->args_len = n > 0 ? (uint32_t)n : 0;
			close(fd);
		}
		commit(t, need);
	}
	tdepth--;
}

/* Each loaded object's executable segment, with its file's identity and name: the recorder
 * needs no /proc read to symbolize a process that is gone. */
static int map_cb(struct dl_phdr_info *info, size_t sz, void *ctx)
{
	struct tstate *t = ctx;
	char path[HS_EXEC_PATH_MAX];
	struct stat st;

	(void)sz;
	if (info->dlpi_name && info->dlpi_name[0])
		snprintf(path, sizeof(path), "%s", info->dlpi_name);
	else {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

		if (n <= 0)
			return 0;
		path[n] = 0;
	}
	if (path[0] != '/' || stat(path, &st))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		struct hs_mmap_event *e;
		uint32_t need;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		e = reserve(t, sizeof(*e), &need);
		if (!e)
			return 1;
		memset(e, 0, sizeof(*e));
		fill_hdr(&e->h, HS_EV_MMAP, 0, t->tid, now_ns());
		e->addr = (info->dlpi_addr + ph->p_vaddr) & ~0xfffull;
		e->len = ((info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 0xfff) & ~0xfffull) - e->addr;
		e->off = ph->p_offset & ~0xfffull;
		e->ino = st.st_ino;
		e->dev = (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev));
		memcpy(e->path, path, sizeof(e->path));
		commit(t, need);
	}
	return 0;
}

static void emit_maps(void)
{
	struct tstate *t = thread_state();

	if (!t || !shm)
		return;
	tdepth++;
	dl_iterate_phdr(map_cb, t);
	tdepth--;
}

HOOK EXPORT void *dlopen(const char *file, int mode)
{
	void *h;

	if (UNLIKELY(!real.dlopen))
		resolve();
	h = real.dlopen(file, mode);
	if (h && __atomic_load_n(&active, __ATOMIC_RELAXED) && !tdepth)
		emit_maps(); /* the recorder keeps each mapping once */
	return h;
}

HOOK EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
	int ret;

	if (UNLIKELY(!real.setname))
		resolve();
	ret = real.setname(th, name);
	if (!ret && pthread_equal(th, pthread_self()) && __atomic_load_n(&active, __ATOMIC_RELAXED) && tsp &&
	    tsp->ring >= 0)
		emit_comm(tsp);
	return ret;
}

HOOK EXPORT int prctl(int op, ...)
{
	unsigned long a[4];
	va_list ap;
	int ret;

	va_start(ap, op);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (UNLIKELY(!real.prctl))
		resolve();
	ret = real.prctl(op, a[0], a[1], a[2], a[3]);
	if (!ret && op == PR_SET_NAME && __atomic_load_n(&active, __ATOMIC_RELAXED) && tsp && tsp->ring >= 0)
		emit_comm(tsp);
	return ret;
}

static uint32_t fork_parent;

/* No lock may be held across fork: the child would wait on it forever. */
static void before_fork(void)
{
	fork_parent = self_pid;
	spin_lock(&sampled_lock);
}

static void after_fork_parent(void)
{
	spin_unlock(&sampled_lock);
}

/* The child is a process of its own: new rings for its thread, and a FORK for the recorder. */
static void after_fork_child(void)
{
	spin_unlock(&sampled_lock);
	self_pid = (uint32_t)getpid();
	if (tsp) {
		tsp->tid = gettid_raw();
		tsp->ring = -1;
		memset(tsp->sent, 0, sizeof(tsp->sent));
	}
	if (__atomic_load_n(&active, __ATOMIC_RELAXED))
		emit_proc(HS_EV_FORK, fork_parent);
}

__attribute__((destructor)) static void hs_fini(void)
{
	if (__atomic_load_n(&active, __ATOMIC_RELAXED) && tsp && tsp->ring >= 0)
		emit_proc(HS_EV_EXIT, 0);
}

__attribute__((constructor)) static void hs_init(void)
{
	const char *env = getenv(HS_SHM_ENV);
	struct stat st;
	int fd, efd;
	void *m;

	resolve();
	self_pid = (uint32_t)getpid();
	if (!env || sscanf(env, "%d,%d", &fd, &efd) != 2 || fstat(fd, &st))
		return; /* not started by heapsnap-record: hooks pass through */
	tdepth++;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	sampled_count = mmap(NULL, SAMPLED_BUCKETS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sampled = mmap(NULL, SAMPLED_SLOTS * sizeof(*sampled), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	tdepth--;
	if (m == MAP_FAILED || sampled_count == MAP_FAILED || sampled == MAP_FAILED)
		return;
	shm = m;
	if (shm->magic != HS_SHM_MAGIC || shm->version != HS_SHM_VERSION ||
	    hs_shm_size(shm->nr_rings, shm->ring_bytes) > (uint64_t)st.st_size ||
	    (shm->ring_bytes & (shm->ring_bytes - 1)) || __atomic_load_n(&shm->dormant, __ATOMIC_ACQUIRE)) {
		shm = NULL;
		return;
	}
	shm_data = (uint8_t *)m + shm->data_offset;
	wake_fd = efd;
	pthread_key_create(&exit_key, thread_exit);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	__atomic_store_n(&active, 1, __ATOMIC_RELEASE);
	emit_proc(HS_EV_EXEC, (uint32_t)getppid());
	emit_maps();
}
