// SPDX-License-Identifier: MIT
/* libheapsnap.so, its producer side: the thread's state and ring in the memory shared with
 * heapsnap-record, the frame-pointer walk, and the events themselves, framed as a BPF ring
 * frames them. Which blocks were sampled is sampled.c's.
 *
 * The hot path takes no lock, makes no system call and allocates nothing: a thread writes
 * only its own ring. A full ring makes the thread wait for the recorder rather than drop; a recorder that is gone (no heartbeat for 2 s) turns every hook into a plain
 * call. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
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
#include "python.h"

int wake_fd = -1;
pthread_key_t exit_key;

__thread struct hs_tls hs_tls __attribute__((tls_model("initial-exec")));
/* Initialized, so that a free made before hs_init (a constructor of a library initialized
 * before this one: the program's own, or one preloaded after it) finds the pool's range
 * "none" (the filter decides, which sends it to free_full to resolve the real functions)
 * rather than zero, by which every free passed by to free1, still NULL. In .bss it was that
 * crash. It and its alignment's padding put about 12 KiB more .data in the file. */
struct hs_hot hs_hot __attribute__((aligned(4096))) = {
	.pass = {malloc_full, calloc_full}, /* no pass-by jumps on until a session samples */
	.pool_len = ~0ull,
};

uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t); /* vDSO: no system call */
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

void count(int which)
{
	if (hs_hot.sl.shm)
		__atomic_fetch_add(&hs_hot.sl.shm->counters[which], 1, __ATOMIC_RELAXED);
}

uint32_t gettid_raw(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* ---- per-thread state and rings ---- */

/* The session's memory, as this thread's ring is in it, or NULL: an attach that took over
 * from an ended session (inject_entry.c) bumps session_gen before it publishes its own memory,
 * so that a hook of the ended session still running (its tstate of the generation before)
 * neither writes at its positions into a ring of the new memory, which another thread may own,
 * nor publishes there what it wrote in the old (reserve, then commit). Memory first, then the
 * generation: the new memory seen, its generation is seen too. */
static inline struct hs_shm_hdr *ring_memory(const struct tstate *t)
{
	struct hs_shm_hdr *m = __atomic_load_n(&hs_hot.sl.shm, __ATOMIC_ACQUIRE);

	return t->gen == __atomic_load_n(&hs_hot.sl.session_gen, __ATOMIC_RELAXED) ? m : NULL;
}

static void thread_exit(void *arg)
{
	struct tstate *t = arg;

	struct hs_shm_hdr *m = t ? ring_memory(t) : NULL;

	if (m && t->ring >= 0)
		__atomic_fetch_or(&m->rings[t->ring].owner, HS_SHM_CLOSING, __ATOMIC_RELEASE);
	if (t) {
		pool_thread_exit(t);
		munmap(t, sizeof(*t));
	}
	hs_tls.t = NULL;
}

/* splitmix64's finalizer: every output bit depends on every input bit. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ z >> 27) * 0x94d049bb133111ebull;
	return z ^ z >> 31;
}

/* A thread's stream starts from its state's address, its tid, its pid and the time: two
 * threads, or a parent and its forked child, do not draw the same sequence. */
void rng_seed(struct tstate *t)
{
	t->rng = mix64((uint64_t)(uintptr_t)t ^ (uint64_t)t->tid << 32 ^ hs_hot.sl.self_pid ^ mix64(now_ns()));
}

/* The bytes to the next sample: one of the exponential quantiles, by an index from the
 * thread's own splitmix64 stream. Not a hash of the time: a loop's draws come at nearly even
 * intervals, and a hash too weak for an arithmetic sequence gave indices that followed one
 * another, the count of samples over a loop then spreading 1.4 times as wide as Poisson's. */
#define RNG_STEP 0x9e3779b97f4a7c15ull
uint64_t draw_bits(void)
{
	return mix64(hs_tls.t->rng += RNG_STEP);
}

int64_t draw(void)
{
	uint64_t x = draw_bits();
	int64_t v = (int64_t)hs_hot.sl.shm->thresholds[x >> (64 - HS_NR_THRESHOLDS_BITS)];

	/* The next draw's quantile fetched now: a random one of 128 lines, cold by the time a
	 * sparse sampler draws again, was most of a draw's time (perf, churn at 512 KiB). */
	__builtin_prefetch(&hs_hot.sl.shm->thresholds[mix64(hs_tls.t->rng + RNG_STEP) >> (64 - HS_NR_THRESHOLDS_BITS)]);
	return v;
}

/* A new countdown at the session's rate (parked, when the state is made inside a hook). */
static void countdown_draw(struct tstate *t)
{
	t->rate = hs_hot.sl.shm ? hs_hot.sl.shm->sample_rate : 0;
	*countdown() = t->rate ? (uint64_t)draw() : 0;
}

/* The calling thread's state, made on its first event: a system call or two, once. */
struct tstate *thread_state_new(void)
{
	struct tstate *t;
	int saved_errno = errno; /* a free may be the thread's first event: free keeps errno */

	if (hs_tls.t) {
		/* Made for an earlier session: a ring and stacks of this one are to be had anew. */
		t = hs_tls.t;
		t->ring = -1;
		memset(t->sent, 0, sizeof(t->sent));
		/* The countdown left from the last session that sampled at this rate runs on: the
		 * calls it passed by since this one began were passed by fairly, the rest of a
		 * draw being a draw (Poisson). Drawn at another rate, it is drawn anew. */
		if (!hs_hot.sl.shm || hs_hot.sl.shm->sample_rate != t->rate || !*countdown())
			countdown_draw(t);
		t->gen = __atomic_load_n(&hs_hot.sl.session_gen, __ATOMIC_RELAXED);
		return t;
	}
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED) {
		errno = saved_errno;
		return NULL;
	}
	t->gen = __atomic_load_n(&hs_hot.sl.session_gen, __ATOMIC_RELAXED);
	t->ring = -1;
	t->tid = gettid_raw();
	rng_seed(t);
	hs_tls.t = t;
	countdown_draw(t);
	/* The stack's bounds: the walk reads nothing outside them, so junk frame pointers in
	 * code built without them cannot fault. */
	depth_in();
	thread_stack_bounds(t);
	pthread_setspecific(exit_key, t);
	depth_out();
	errno = saved_errno;
	return t;
}

/* Ring pages are asked for a chunk at a time, ahead of the writes, rather than faulted in one
 * by one: on this project's VM a fault costs 13 to 16 us (a trap) and populating 0.8 to 1 a
 * page, and a thread's first pass over a sampled ring of 1 MiB took 256 faults, 3 to 4 ms of
 * its CPU time. The memory a thread makes resident stays within a chunk of what it wrote. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
static int populate_works = 1;

static uint32_t ring_chunk(const struct hs_shm_hdr *m)
{
	return m->ring_bytes < (64u << 10) ? m->ring_bytes : 64u << 10;
}

/* The chunks of the thread's ring up to position END made resident, once per claim: every page
 * is in after the first pass. A kernel without MADV_POPULATE_WRITE, or a sandbox that refuses
 * it, leaves the pages to fault in as before. */
static void populate_ahead(struct tstate *t, const struct hs_shm_hdr *m, uint8_t *data, uint64_t end)
{
	uint32_t chunk = ring_chunk(m), size = m->ring_bytes;

	while (t->ahead < end && t->ahead < t->ahead_end) {
		if (__atomic_load_n(&populate_works, __ATOMIC_RELAXED) &&
		    madvise(data + (t->ahead & (size - 1)), chunk, MADV_POPULATE_WRITE) < 0)
			__atomic_store_n(&populate_works, 0, __ATOMIC_RELAXED);
		t->ahead += chunk;
	}
}

static void wake_recorder(void);
static bool recorder_gone(uint64_t since);
static void give_up(void);

/* Takes ring I if it is free, or if its thread has exited (CLOSING) and the recorder has
 * read it to the end (cons == prod): positions only grow, so the recorder reads on from
 * where the old owner stopped without knowing the owner changed. A compare-and-swap on the
 * owner word decides between this thread, other claimers and the recorder's own release. */
static bool take_ring(struct tstate *t, struct hs_shm_hdr *m, uint32_t i, uint64_t me, bool *closing)
{
	struct hs_shm_ring *r = &m->rings[i];
	uint64_t owner = __atomic_load_n(&r->owner, __ATOMIC_ACQUIRE);

	if (owner & HS_SHM_CLOSING) {
		*closing = true;
		if (__atomic_load_n(&r->cons, __ATOMIC_ACQUIRE) != __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE))
			return false; /* still to be read: the recorder owns its contents */
	} else if (owner) {
		return false;
	}
	if (!__atomic_compare_exchange_n(&r->owner, &owner, me, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return false;
	t->ring = (int)i;
	t->prod = __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE);
	t->cons = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
	t->ahead = t->prod & ~(uint64_t)(ring_chunk(m) - 1);
	t->ahead_end = t->ahead + m->ring_bytes;
	return true;
}

/* Claims a ring for this thread. When none is free but some exited thread's ring waits to be
 * read, the thread wakes the recorder and waits for it, as a full ring does: the limit is on
 * threads alive at once, and a thread of a process that churns threads must not be dropped
 * because the recorder has not looked yet. When every ring is held, some may be of processes
 * that ended without a word (_exit, a signal): the recorder is asked to look for those at
 * once (starved), and the thread waits until it has (it clears the flag). Only if that frees
 * no ring either (or the recorder is gone) is the thread left without one, counted. */
static bool claim_ring(struct tstate *t, struct hs_shm_hdr *m)
{
	uint32_t n = m->nr_rings;
	uint64_t me = (uint64_t)hs_hot.sl.self_pid << 32 | t->tid, since = now_ns();
	bool asked = false;

	for (unsigned spins = 0;; spins++) {
		bool closing = false;

		for (uint32_t k = 0; k < n; k++) {
			if (take_ring(t, m, (t->tid + k) % n, me, &closing)) {
				emit_comm(t);
				return true;
			}
		}
		/* Detached (the recording ended): no recorder will read or give back a ring. Taken
		 * over by another session meanwhile: its rings are claimed at the next event. */
		if (!__atomic_load_n(&hs_hot.sl.active, __ATOMIC_ACQUIRE) || __atomic_load_n(&m->dormant, __ATOMIC_ACQUIRE) ||
		    m != __atomic_load_n(&hs_hot.sl.shm, __ATOMIC_ACQUIRE))
			break;
		if (!closing) {
			if (!asked)
				__atomic_store_n(&m->starved, 1, __ATOMIC_RELEASE);
			else if (!__atomic_load_n(&m->starved, __ATOMIC_ACQUIRE))
				break; /* looked for since, and every ring is still held */
			asked = true;
		}
		if (spins == 0)
			wake_recorder();
		if (spins < 64) {
			sched_yield();
			continue;
		}
		struct timespec ns = {0, 200000};

		hs_nanosleep(&ns);
		if ((spins & 255) == 0 && recorder_gone(since)) {
			give_up();
			break;
		}
	}
	t->ring = -2;
	count(HS_CNT_THREAD_FULL);
	return false;
}

/* The recorder woken through the futex word of the memory (its thread turns that into a
 * wake of its poll loop): no descriptor of ours in the process to be written through, listed
 * or clashed with. Only off the hot path; the recorder looks every PRELOAD_POLL_MS (100 ms)
 * anyway. */
static void wake_recorder(void)
{
	struct hs_shm_hdr *m = __atomic_load_n(&hs_hot.sl.shm, __ATOMIC_ACQUIRE);

	if (!m)
		return;
	__atomic_fetch_add(&m->wake_seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &m->wake_seq, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* No heartbeat for 2 s, and this thread has itself waited as long since SINCE: a whole job
 * stopped (Ctrl-Z) and resumed may run its thread before the recorder's first read of the rings,
 * and find a heartbeat from before the stop. */
#define RECORDER_QUIET_NS 2000000000ull

/* Whether the recorder has written no heartbeat for RECORDER_QUIET_NS by NOW, read after the
 * heartbeat, which is then never ahead of it. */
static bool heartbeat_quiet(uint64_t hb, uint64_t now)
{
	return now - hb > RECORDER_QUIET_NS;
}

static bool recorder_gone(uint64_t since)
{
	uint64_t hb = __atomic_load_n(&hs_hot.sl.shm->heartbeat_ns, __ATOMIC_ACQUIRE), now = now_ns();

	return heartbeat_quiet(hb, now) && now - since > RECORDER_QUIET_NS;
}

/* The recorder of the session whose shared memory this is has ended it (the dormant flag its
 * finish sets, which the hooks see only at their next event: at a sparse rate, minutes later)
 * or died without a word (no heartbeat for 2 s): a process it launched may be attached anew. */
bool recorder_ended(void)
{
	uint64_t hb;

	if (!hs_hot.sl.shm)
		return false;
	hb = __atomic_load_n(&hs_hot.sl.shm->heartbeat_ns, __ATOMIC_ACQUIRE);
	return __atomic_load_n(&hs_hot.sl.shm->dormant, __ATOMIC_ACQUIRE) || heartbeat_quiet(hb, now_ns());
}

void go_dormant(void)
{
	fast_path(false);
	__atomic_store_n(&hs_hot.sl.active, 0, __ATOMIC_RELEASE);
}

/* A thread that must wait for the recorder to write on (its ring full, or no ring free), and
 * has waited 2 s without hearing from it: the recorder is gone, or stopped, or blocked writing
 * its output. Rather than hold the program, the process stops recording for good, and says so
 * once, in a counter the recorder reads should it come back: its figures from here on are
 * missing, and no count of the events after this could say how much. */
static void give_up(void)
{
	fast_path(false);
	if (__atomic_exchange_n(&hs_hot.sl.active, 0, __ATOMIC_ACQ_REL))
		count(HS_CNT_RECORDER_STALLED);
}

/* The data of the thread's ring (claimed) in M, the session's memory. */
static inline uint8_t *ring_data(const struct tstate *t, const struct hs_shm_hdr *m)
{
	return (uint8_t *)m + m->data_offset + (uint64_t)t->ring * m->ring_bytes;
}

/* M, the memory found dormant: the process goes dormant only if M is still the session's;
 * one taken over (inject_entry.c) ended another session, not this one. */
static void dormant_seen(const struct hs_shm_hdr *m)
{
	if (m == __atomic_load_n(&hs_hot.sl.shm, __ATOMIC_ACQUIRE))
		go_dormant();
}

/* Room for LEN bytes of event in the thread's ring, or NULL (counted): while the ring is
 * full the thread wakes the recorder and waits for it, sampled or not (a sample dropped
 * would bias the estimates); only a recorder gone quiet makes it give up. */
static __attribute__((noinline)) void *reserve_full(struct tstate *t, uint32_t len, uint32_t *need_out)
{
	struct hs_shm_hdr *m = ring_memory(t);
	struct hs_shm_ring *r;
	uint32_t size, need = (len + HS_SHM_RING_HDR + 7) & ~7u, pos, pad;
	uint8_t *data;

	if (UNLIKELY(!m))
		return NULL; /* begun in a session that has ended */
	/* Detached (the recording ended): dormant for good. */
	if (UNLIKELY(__atomic_load_n(&m->dormant, __ATOMIC_RELAXED))) {
		dormant_seen(m);
		return NULL;
	}
	if (UNLIKELY(t->ring < 0) && (t->ring == -2 || !claim_ring(t, m)))
		return NULL;
	size = m->ring_bytes;
	r = &m->rings[t->ring];
	data = ring_data(t, m);
	pos = (uint32_t)(t->prod & (size - 1));
	pad = pos + need > size ? size - pos : 0;
	if (t->prod + pad + need - t->cons > size) {
		uint64_t since = now_ns();

		t->cons = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
		for (unsigned spins = 0; t->prod + pad + need - t->cons > size; spins++) {
			/* Detached, or taken over: no recorder reads this ring any more. */
			if (!__atomic_load_n(&hs_hot.sl.active, __ATOMIC_ACQUIRE) ||
			    m != __atomic_load_n(&hs_hot.sl.shm, __ATOMIC_ACQUIRE)) {
				count(HS_CNT_RINGBUF_FULL);
				return NULL;
			}
			/* The recorder is behind: wake it, and wait. */
			if (spins == 0)
				wake_recorder();
			if (spins > 64) {
				struct timespec ns = {0, 200000};

				hs_nanosleep(&ns);
				if ((spins & 255) == 0 && recorder_gone(since)) {
					give_up();
					count(HS_CNT_RINGBUF_FULL);
					return NULL;
				}
			} else {
				sched_yield();
			}
			t->cons = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
		}
	}
	if (UNLIKELY(t->prod + pad + need > t->ahead) && t->ahead < t->ahead_end)
		populate_ahead(t, m, data, t->prod + pad + need);
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

/* reserve_full's common case, as a leaf: room without waiting, wrapping or pages to fault in.
 * Its frame had saved six registers for the rest, a line of cold stack written at each
 * event of a sparse sampler (cachegrind). */
void *reserve(struct tstate *t, uint32_t len, uint32_t *need_out)
{
	const struct hs_shm_hdr *m = ring_memory(t);
	uint32_t size, need = (len + HS_SHM_RING_HDR + 7) & ~7u, pos;
	uint8_t *d;

	if (UNLIKELY(!m || t->ring < 0))
		return reserve_full(t, len, need_out);
	size = m->ring_bytes;
	pos = (uint32_t)(t->prod & (size - 1));
	if (UNLIKELY(__atomic_load_n(&m->dormant, __ATOMIC_RELAXED) || pos + need > size ||
		     t->prod + need - t->cons > size || (t->prod + need > t->ahead && t->ahead < t->ahead_end)))
		return reserve_full(t, len, need_out);
	d = ring_data(t, m) + pos;
	*(uint32_t *)d = len;
	*(uint32_t *)(d + 4) = 0;
	*need_out = need;
	return d + HS_SHM_RING_HDR;
}

/* The record reserve made, published; not if the session ended meanwhile (ring_memory). */
void commit(struct tstate *t, uint32_t need)
{
	struct hs_shm_hdr *m = ring_memory(t);
	struct hs_shm_ring *r;
	uint64_t before, quarter;

	if (UNLIKELY(!m))
		return;
	r = &m->rings[t->ring];
	quarter = m->ring_bytes / 4;
	/* The recorder's position is read only when the last one known puts the ring a quarter
	 * full: it only moves on, so a fill under a quarter by the last is under a quarter by
	 * this one too, and wakes nobody. Its line was a miss at each sample (cachegrind). */
	if (t->prod + need - t->cons >= quarter)
		t->cons = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
	before = t->prod - t->cons;
	t->prod += need;
	__atomic_store_n(&r->prod, t->prod, __ATOMIC_RELEASE);
	/* The ring's next two lines, where the next sample's events go, fetched to be written:
	 * last written a whole ring ago, they are cold by then. (prefetchw is a no-op where
	 * the processor lacks it.) */
	{
		uint8_t *d = ring_data(t, m);
		uint32_t mask = m->ring_bytes - 1;

		__asm__ volatile("prefetchw %0" ::"m"(d[(t->prod + 64) & mask]));
		__asm__ volatile("prefetchw %0" ::"m"(d[(t->prod + 128) & mask]));
	}
	/* Filling past a quarter of the ring wakes the recorder, which otherwise looks every
	 * 100 ms (PRELOAD_POLL_MS), each time the ring fills so far again after a read. Whether
	 * it is still there is asked only when the ring is full (reserve): while there is
	 * room, writing on costs the program nothing and loses nothing, whether the recorder is
	 * busy, stopped for a while (Ctrl-Z), or gone. */
	if (before < quarter && before + need >= quarter)
		wake_recorder();
}

void fill_hdr(struct hs_event_hdr *h, uint8_t type, uint8_t kind, uint32_t tid, uint64_t ts)
{
	h->type = type;
	h->kind = kind;
	h->nr = 0;
	h->pid = hs_hot.sl.self_pid;
	h->tid = tid;
	h->stop = 0;
	h->ts = ts;
}

void emit_comm(struct tstate *t)
{
	struct hs_comm_event *e;
	uint32_t need;

	e = reserve(t, sizeof(*e), &need);
	if (!e)
		return;
	fill_hdr(&e->h, HS_EV_COMM, 0, t->tid, now_ns());
	memset(e->comm, 0, sizeof(e->comm));
	if (hs_hot.fns.prctl)
		hs_hot.fns.prctl(PR_GET_NAME, (unsigned long)e->comm, 0, 0, 0);
	commit(t, need);
}

void emit_mark(struct tstate *t, uint8_t kind)
{
	struct hs_mark_event *e;
	uint32_t need;

	e = reserve(t, sizeof(*e), &need);
	if (!e)
		return;
	fill_hdr(&e->h, HS_EV_MARK, kind, t->tid, now_ns());
	commit(t, need);
	/* A mark is worth reading soon: the recorder's snapshot waits for it. */
	wake_recorder();
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
		/* fp + 16 would wrap for a junk rbp near 2^64 (an interpreter's negative int in
		 * rbp, under pymalloc's wrapper) and pass for one inside the stack. */
		if (fp < t->stack_lo || fp > t->stack_hi - 16 || (fp & 7)) {
			if (fp) /* not the outermost frame's zero: a frame without a frame pointer */
				t->walk_stop = HS_CNT_STACK_ERROR;
			break;
		}
		uint64_t next = ((uint64_t *)fp)[0], ret = ((uint64_t *)fp)[1];

		if (!ret)
			break;
		ips[n++] = ret;
		if (next <= fp) {
			if (next)
				t->walk_stop = HS_CNT_STACK_ERROR;
			break;
		}
		fp = next;
	}
	if (n == max) {
		if (t->walk_stop >= 0) /* both, as rare as a stack this deep with junk at its end */
			count(t->walk_stop);
		t->walk_stop = HS_CNT_STACK_TRUNCATED;
	}
	return n;
}

static inline uint64_t hash_step(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xff51afd7ed558ccdull;
	return h ^ h >> 32;
}

/* In four lanes, frame i in lane i % 4, joined in order at the end: one chain of multiplies,
 * each waiting on the last, was most of a Python stack's capture (30 frames and more). */
static uint64_t hash_ips(const uint64_t *ips, uint32_t n)
{
	uint64_t a = 0x9e3779b97f4a7c15ull, b = 0xc2b2ae3d27d4eb4full, c = 0x165667b19e3779f9ull,
		 d = 0x27d4eb2f165667c5ull, h;
	uint32_t i = 0;

	for (; i + 4 <= n; i += 4) {
		a = hash_step(a, ips[i]);
		b = hash_step(b, ips[i + 1]);
		c = hash_step(c, ips[i + 2]);
		d = hash_step(d, ips[i + 3]);
	}
	if (i < n)
		a = hash_step(a, ips[i++]);
	if (i < n)
		b = hash_step(b, ips[i++]);
	if (i < n)
		c = hash_step(c, ips[i]);
	h = hash_step(hash_step(hash_step(hash_step(a, n), b), c), d);
	return h ? h : 1;
}

/* The stack's id (its hash); the stack itself goes to the ring the first time this thread
 * sees it lately. The recorder keeps one copy of each. */
static uint64_t capture(struct tstate *t, uint64_t fp, uint64_t ts)
{
	uint64_t ips[HS_MAX_STACK], h;
	uint32_t n, need, max = hs_hot.sl.shm->max_stack < HS_MAX_STACK ? hs_hot.sl.shm->max_stack : HS_MAX_STACK;
	struct hs_stack_event *e;

	if (hs_hot.sl.shm->stack_mode == HS_STACK_NONE) {
		ips[0] = ((uint64_t *)fp)[1];
		n = 1;
	} else if (hs_hot.sl.shm->stack_mode == HS_STACK_AUTO) {
		n = unwind_walk(t, fp, ips, max);
	} else {
		n = walk(t, fp, ips, max);
	}
	/* Where the stack passes through Python's eval loop, the Python frames it ran. */
	if (__atomic_load_n(&hs_hot.sl.py_ready, __ATOMIC_RELAXED))
		n = py_splice(t, ips, n, max);
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

/* A holder keeps these locks for a few hundred cycles: a waiter spins about that long before
 * it yields. Yielding at once, a thread of a program with more threads than cores gave its
 * core away at each collision and waited for another thread's time slice to end. */
void spin_lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		for (unsigned spins = 0; __atomic_load_n(l, __ATOMIC_RELAXED); spins++)
			if (spins < 64)
				__builtin_ia32_pause();
			else
				sched_yield();
}

void spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* Its entry is the program counter of every dwarf capture: there, as at any function's
 * entry, the return address is at [sp], so the offline unwinder goes from it straight to
 * the hook's caller, and skips it as it skips the allocator a uprobe stopped in. */
__attribute__((noinline, used)) void hs_dwarf_entry(void)
{
	__asm__ volatile("");
}

/* --stack dwarf: the registers as they were at the hook's entry (sp just below its return
 * address, the caller's rbp; the callee-saved others as the hook holds them, which no
 * frame-pointer or sp-based CFA rule needs) and the stack above, up to DWARF_BYTES. The
 * copy stays within the thread's stack. */
static uint64_t capture_dwarf(struct tstate *t, uint64_t fp, uint64_t ts)
{
	uint64_t sp = fp + 8, used = t->stack_hi > sp ? t->stack_hi - sp : 0, len, key;
	struct hs_dwarf_event *e;
	uint32_t need;

	if (sp < t->stack_lo || !used)
		return 0;
	len = used < hs_hot.sl.shm->dwarf_bytes ? used : hs_hot.sl.shm->dwarf_bytes;
	if (len > HS_MAX_DWARF_BYTES)
		len = HS_MAX_DWARF_BYTES;
	if (used > len)
		t->walk_stop = HS_CNT_DWARF_TRUNCATED;
	e = reserve(t, (uint32_t)(offsetof(struct hs_dwarf_event, data) + len), &need);
	if (!e)
		return 0;
	fill_hdr(&e->h, HS_EV_DWARF, 0, t->tid, ts);
	key = ((uint64_t)t->tid << 32) ^ ++t->dwarf_seq ^ (1ull << 63);
	e->key = key;
	e->regs[0] = (uint64_t)(uintptr_t)hs_dwarf_entry;
	e->regs[1] = sp;
	e->regs[2] = ((uint64_t *)fp)[0];
	__asm__ volatile("mov %%rbx, %0\n\tmov %%r12, %1\n\tmov %%r13, %2\n\tmov %%r14, %3\n\tmov %%r15, %4"
			 : "=m"(e->regs[3]), "=m"(e->regs[4]), "=m"(e->regs[5]), "=m"(e->regs[6]), "=m"(e->regs[7]));
	e->len = (uint32_t)len;
	e->used = (uint32_t)used;
	memcpy(e->data, (const void *)(uintptr_t)sp, len);
	commit(t, need);
	return key;
}

void record_alloc(struct tstate *t, void *p, size_t size, uint8_t kind, uint64_t fp)
{
	if (hs_hot.sl.shm->sample_rate && !pool_mine(p) && !sampled_add(p, size))
		return;
	record_alloc_event(t, p, size, kind, fp);
}

void record_alloc_event(struct tstate *t, void *p, size_t size, uint8_t kind, uint64_t fp)
{
	struct hs_alloc_event *e;
	uint64_t ts = now_ns(), h;
	uint32_t need;

	t->walk_stop = -1;
	h = hs_hot.sl.shm->stack_mode == HS_STACK_DWARF ? capture_dwarf(t, fp, ts) : capture(t, fp, ts);
	e = reserve(t, sizeof(*e), &need);
	if (!e) {
		if (t->walk_stop >= 0) /* no event to say it: counted here, as it was done */
			count(t->walk_stop);
		return;
	}
	fill_hdr(&e->h, HS_EV_ALLOC, kind, t->tid, ts);
	e->h.stop = (uint32_t)(t->walk_stop + 1);
	e->ptr = (uint64_t)(uintptr_t)p;
	e->size = size;
	e->stack = h;
	commit(t, need);
	/* The interpreter may have started since (python.c): asked only then, since the
	 * wrappers' state is a line of its own, cold at each sample of a program without one. */
	if (__atomic_load_n(&hs_hot.sl.py_ready, __ATOMIC_RELAXED))
		pymem_on_recorded();
}

/* A realloc failed after its old block went out freed: the block is the caller's again, in
 * the slot the recorder held back for it (as for BPF's restore). Its size comes back from
 * that slot recording every event; sampling, it is SIZE, and the block is sampled again. */
void record_restore(struct tstate *t, void *p, uint64_t size)
{
	struct hs_alloc_event *e;
	uint32_t need;

	if (hs_hot.sl.shm->sample_rate && !pool_mine(p) && !sampled_add(p, size))
		return;
	e = reserve(t, sizeof(*e), &need);
	if (!e)
		return;
	fill_hdr(&e->h, HS_EV_ALLOC, HS_KIND_FLAG_RESTORED, t->tid, now_ns());
	e->ptr = (uint64_t)(uintptr_t)p;
	e->size = size;
	e->stack = 0;
	commit(t, need);
}

void record_free(struct tstate *t, void *p, uint64_t size, uint8_t flags, uint64_t ts)
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

/* The table of sampled blocks (sampled.c) and the key whose destructor gives a thread's ring
 * back: at start-up, before any hook records. */
int events_init(void)
{
	static bool done;
	int ret;

	if (done)
		return 0; /* made already: a process preloaded once, injected now */
	depth_in();
	ret = sampled_init();
	if (!ret)
		ret = pool_init();
	depth_out();
	if (ret)
		return -1;
	if (pthread_key_create(&exit_key, thread_exit))
		return -1;
	done = true;
	return 0;
}
