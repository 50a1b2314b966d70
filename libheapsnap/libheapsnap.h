/* SPDX-License-Identifier: MIT */
/* libheapsnap.so's parts, shared between its files: producer.c writes events into the
 * thread's ring in shared memory, sampled.c keeps which blocks were sampled, hooks.c
 * interposes the allocators, lib_process.c tells the recorder about the process (start,
 * fork, images, names). */
#ifndef HEAPSNAP_LIBHEAPSNAP_H
#define HEAPSNAP_LIBHEAPSNAP_H
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "abi/event_abi.h"
#include "abi/shm.h"
#include "allocators.h"

#define EXPORT __attribute__((visibility("default")))

/* System calls a hook's path makes, through syscall(2) rather than libc's wrappers: those are
 * cancellation points, and a cancellation acted on inside malloc would unwind out of a region
 * of libc's (the loader's dlopen, say) that holds a lock and has no cleanup for it. */
static inline int hs_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0);
}

static inline ssize_t hs_read(int fd, void *buf, size_t n)
{
	return syscall(SYS_read, fd, buf, n);
}

static inline void hs_close(int fd)
{
	syscall(SYS_close, fd);
}

static inline void hs_nanosleep(const struct timespec *ts)
{
	syscall(SYS_nanosleep, ts, NULL);
}
#define HOOK __attribute__((visibility("default"), noinline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The next definitions of what we interpose: glibc's, or an allocator preloaded after us. */
struct real_fns {
	/* each allocator the table (common/allocators.def) hooks but for C++ operators */
#define HS_ALLOC(sym, kind, args, nest, hook, ret, params) HS_ALLOC_IF_REAL(hook, ret(*sym) params;)
#include "allocators.def"
#undef HS_ALLOC
	void *(*dlopen)(const char *, int);
	int (*setname)(pthread_t, const char *);
	int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
};
/* Sampled blocks are kept in shards by address, 64 MiB regions taken modulo 8: glibc gives
 * each thread's arena a 64 MiB heap on its own boundary, so threads that sample and free in
 * their own arenas write their own shard's lock, table and filter, which the others' frees
 * never read. With one table for all, each sample made the other threads' next accesses to
 * those lines cache misses: two threads' samples cost 4 times one thread's. */
#define SAMPLED_SHARD_BITS 3
#define SAMPLED_SHARDS (1u << SAMPLED_SHARD_BITS)
#define SAMPLED_SHARD_SHIFT 26
static inline __attribute__((always_inline)) uint32_t shard_of(const void *p)
{
	return (uint32_t)((uintptr_t)p >> SAMPLED_SHARD_SHIFT) & (SAMPLED_SHARDS - 1);
}

/* A filter of sampled blocks is named by one word, its address shifted up by
 * FILTER_WMASK_BITS over its mask of words (2^k / 64 - 1, k its log2 bits, at most
 * SAMPLED_BUCKET_BITS): a free finds its bit with a shift, an and and a shift, and a filter
 * may start at any word, so that every shard's least filter can sit in hs_hot. */
#define FILTER_MIN_BITS 12
#define FILTER_WMASK_BITS 12
/* What a sample reads of the process and its session besides its thread's state, on one
 * cache line. Sampling at 512 KiB, a sample comes once in about a thousand calls, which have
 * evicted from the first-level cache whatever it read last time: each line is a miss, twice a
 * sample (its allocation and its free). Spread over the variables of four files, these were
 * five of about forty misses a sample (cachegrind, churn). Written when a session starts or
 * ends; the names stand for the fields (below). */
struct hs_sample_line {
	uint64_t pool_base;   /* the pool's reservation, 0 without one */
	uint64_t pool_cookie; /* this session's: a block's first word is it xor the block's address */
	/* A bit a page of the reservation: a block of this session's starts there (or did, and
	 * was freed: its first word says so). */
	uint64_t *pool_live;
	struct hs_shm_hdr *shm;
	int active;           /* attached to a recorder; hooks record */
	/* Bumped at each injected session's start: a thread's state of an earlier one is redone. */
	uint32_t session_gen;
	uint32_t self_pid;
	int injected;
	int py_ready;         /* atomic: py is filled, frames are walked (python.c) */
} __attribute__((aligned(64)));
/* Where malloc's and calloc's pass-bys jump: the real functions while sampling, otherwise
 * their full paths (hooks.c), so that a countdown still running from a session that sampled
 * cannot pass a call by unrecorded. Switched by fast_path, all threads at once, at no cost to
 * the pass-by, which jumps through a word in any case. */
struct hs_pass {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
};
/* What every hook reads, from a page boundary: the shards' filter words on one cache line,
 * then what a pass-by reads besides: where malloc's and calloc's jump, fns.free's copy, the
 * pool's range, whether the other hooks pass by, and the first two real functions (malloc,
 * calloc; realloc is on the next line). Then each shard's least filter. Written only when a
 * session starts or ends, or a filter resizes. */
struct hs_hot {
	uint64_t fw[SAMPLED_SHARDS]; /* filter words; 0 while frees cannot pass by */
	struct hs_pass pass;
	void (*free1)(void *); /* fns.free, set with it (resolve_from) */
	/* Sampled blocks' pages (pool.c) while they are kept there: a free whose block lies
	 * outside passes by. Otherwise 0 and ~0, and the filter decides. */
	uint64_t pool_lo, pool_len;
	/* The gate of every other hook's pass-by (pass_by): sampling, as hs_pass says. */
	uint64_t passing;
	struct real_fns fns;  /* the real functions the hooks forward to */
	struct hs_sample_line sl;
	uint64_t filter_min[SAMPLED_SHARDS][(1u << FILTER_MIN_BITS) / 64] __attribute__((aligned(64)));
};
/* Hidden where declared, not only where defined: the compiler then addresses it from the
 * instruction pointer itself, with no GOT entry's load (which the linker turns into a lea,
 * holding a register on every pass-by). */
extern struct hs_hot hs_hot __attribute__((visibility("hidden")));

/* The filter word of P's shard (hs_hot.fw). */
static inline __attribute__((always_inline)) uint64_t *filter_word_ptr(const void *p)
{
	return &hs_hot.fw[shard_of(p)];
}

/* A thread's last table walk (stack_walk.c), frame by frame: where each frame's return address
 * and rbp were read from and what they held, so that the next walk from the same place can
 * take the callers whose slots are unchanged without looking up their rules. */
struct walk_frame {
	uint64_t sp;     /* the frame's stack pointer (its callee's CFA) */
	uint64_t ip;     /* its return address, read from sp - 8 */
	uint64_t rbp;    /* rbp there, as the walk knew it */
	uint64_t rbp_at; /* where that rbp was read from; 0: carried unchanged */
	uint64_t rbp_ok; /* rbp is known; a word, as the others */
};
struct walk_memo {
	uint32_t n;
	int stop; /* the counter its end counted, or -1 */
	/* A frame's fields together: taking the last walk's callers copies whole frames. */
	struct walk_frame f[HS_MAX_STACK];
};

/* Sampled blocks of 1 and 2 pages freed by a thread: up to 8 each kept for its next samples. */
#define POOL_TCACHE_CLASSES 2
#define POOL_TCACHE 8
struct tstate {
	/* What each sample reads, on the state's first line (its pages are its own, mmapped):
	 * cold at each sample, as hs_sample_line's are. */
	uint32_t gen;   /* the session it was made for (hs_hot.sl.session_gen) */
	int ring;       /* claimed ring, -1 none yet, -2 none to be had */
	uint32_t tid;
	/* Why the stack of the allocation being recorded is short (a counter, HS_CNT_*), or -1:
	 * carried in its event (hs_event_hdr.stop) for the recorder to count. An atomic add to
	 * the shared counters, at nearly every sample of a program whose libc has no frame
	 * pointers, was a locked instruction a sample, and a line moved between cores at each
	 * sample of threads whose walks stop so. */
	int16_t walk_stop;
	/* The pool's blocks kept, by class: a sample reads the count, and one entry below. */
	uint8_t pool_n[POOL_TCACHE_CLASSES];
	uint64_t prod;  /* own copy of the ring's producer position */
	uint64_t cons;  /* the recorder's position, as last read */
	uint64_t ahead; /* the ring's pages are in up to position ahead (populate_ahead) */
	uint64_t stack_lo, stack_hi;
	uint64_t rng;   /* the sampler's stream (draw): its own per thread, reseeded on fork */
	uint64_t *pool_cache[POOL_TCACHE_CLASSES][POOL_TCACHE]; /* freed pages kept (pool.c) */
	uint64_t ahead_end;   /* where populate_ahead stops */
	uint64_t dwarf_seq;   /* dwarf captures' keys: unique per thread */
	uint64_t rate;        /* the sample rate its countdown was drawn at */
	uint64_t sent[256]; /* stack hashes sent lately, direct-mapped */
	struct walk_memo memo[2]; /* the last walk's, and the one being made */
	uint32_t memo_cur;
};
_Static_assert(offsetof(struct tstate, rng) + 8 <= 64 && offsetof(struct tstate, prod) == 16,
	       "a sample's fields of tstate span one line");
_Static_assert(HS_CNT__MAX < INT16_MAX, "tstate.walk_stop holds a counter");

extern int wake_fd;
extern pthread_key_t exit_key;
/* Where the real functions are looked up: RTLD_NEXT preloaded, RTLD_DEFAULT injected. */
extern void *next_handle;
/* The thread's state, how deep it is inside our hooks (what the real allocator calls is the
 * outer call's), and its byte countdown: one thread-local block. An allocation's pass-by
 * reads and writes one word of it, `left`, at a fixed offset from the thread pointer. Inside a
 * hook `left` is parked (0), so that a nested call takes the full path, which forwards it; the
 * countdown then is `parked`. A thread without state has 0: its first call takes the full
 * path, which draws it. */
struct hs_tls {
	struct tstate *t;
	int depth;
	uint64_t left;   /* bytes to the next sample, outermost; 0 while nested */
	uint64_t parked; /* the countdown while nested */
} __attribute__((aligned(64))); /* within one cache line */
extern __thread struct hs_tls hs_tls __attribute__((tls_model("initial-exec")));

/* Whether the process is attached to a recorder, and its hooks record (hs_hot.sl.active). */
static inline __attribute__((always_inline)) bool hs_active(void)
{
	return __atomic_load_n(&hs_hot.sl.active, __ATOMIC_RELAXED);
}

/* How deep the thread is inside our hooks. Read only: the depth changes through depth_in and
 * depth_out, which park the countdown. */
static inline __attribute__((always_inline)) int hook_depth(void)
{
	return hs_tls.depth;
}

static inline __attribute__((always_inline)) void depth_in(void)
{
	if (hs_tls.depth++ == 0) {
		hs_tls.parked = hs_tls.left;
		hs_tls.left = 0;
	}
}

static inline __attribute__((always_inline)) void depth_out(void)
{
	if (--hs_tls.depth == 0)
		hs_tls.left = hs_tls.parked;
}

/* The countdown: the pass-by's word outermost, parked inside a hook. */
static inline __attribute__((always_inline)) uint64_t *countdown(void)
{
	return hs_tls.depth ? &hs_tls.parked : &hs_tls.left;
}

/* hooks.c */
void resolve(void);
void resolve_from(void *handle);
/* malloc's and calloc's full paths: where their pass-bys jump while the session does not
 * sample (hs_pass). */
void *malloc_full(size_t n);
void *calloc_full(size_t n, size_t m);
/* Where they go instead of the real functions while Python's domains wait to be wrapped
 * (pymem_waiting): the real call, after a look at whether the interpreter is ready for it. */
void *malloc_wait(size_t n);
void *calloc_wait(size_t n, size_t m);
/* pymem.c: launched and sampling, calls passed by until the domains are wrapped, or until the
 * interpreter, never initialized, is given up on; 0 when not waiting. */
extern uint32_t pymem_waiting;
void pymem_wait_step(void);
void *boot_alloc(size_t n);
bool boot_in_use(void);
/* A real realloc to call, and whether it frees a block asked for no bytes (realloc_recorded). */
struct realloc_call {
	void *(*fn)(void *ctx, void *old, size_t n, size_t m);
	void *ctx;
	bool zero_frees;
};
void *realloc_recorded(struct tstate *t, void *old, uint64_t total, const struct realloc_call *c, size_t n, size_t m,
		       uint32_t kind, uint64_t fp);

/* producer.c */
uint64_t now_ns(void);
void count(int which);
uint32_t gettid_raw(void);
int64_t draw(void);
/* 64 random bits from the thread's stream (draw's). */
uint64_t draw_bits(void);
void rng_seed(struct tstate *t);
struct tstate *thread_state_new(void);
/* The calling thread's stack into T->stack_lo, stack_hi, taking no lock (thread_stack.c). */
void thread_stack_bounds(struct tstate *t);
bool recorder_ended(void);
void go_dormant(void);
void *reserve(struct tstate *t, uint32_t len, uint32_t *need_out);
void commit(struct tstate *t, uint32_t need);
void fill_hdr(struct hs_event_hdr *h, uint8_t type, uint8_t kind, uint32_t tid, uint64_t ts);
void emit_comm(struct tstate *t);
/* A mark (HS_MARK_*) in the thread's ring, for the recorder to make a snapshot of. */
void emit_mark(struct tstate *t, uint8_t kind);
void spin_lock(int *l);
void spin_unlock(int *l);
void record_alloc(struct tstate *t, void *p, size_t size, uint8_t kind, uint64_t fp);
/* The allocation's event alone, for a block the pool placed and kept (pool_alloc's *KEPT):
 * record_alloc without its test of whose the block is. */
void record_alloc_event(struct tstate *t, void *p, size_t size, uint8_t kind, uint64_t fp);
void record_free(struct tstate *t, void *p, uint64_t size, uint8_t flags, uint64_t ts);
void record_restore(struct tstate *t, void *p, uint64_t size);
int events_init(void);

/* sampled.c */
int sampled_init(void);
bool sampled_add(void *p, uint64_t size);
uint64_t sampled_take(void *p);
void sampled_clear(void);
/* Every shard's lock, as fork must take them (lib_process.c). */
void sampled_lock_all(void);
void sampled_unlock_all(void);

/* stack_walk.c */
uint32_t unwind_walk(struct tstate *t, uint64_t fp, uint64_t *ips, uint32_t max);
void unwind_before_fork(void);
void unwind_after_fork(bool child);

/* lib_process.c */
void emit_maps(void);
extern uint64_t hs_ctor_ns[2];
void process_attach(void);

/* got_hooks.c */
struct hs_inject_slot;
int got_init(void);
bool got_is_hook(const void *fn);
uint32_t got_patch_all(const struct hs_inject_slot *t, uint32_t nt, uint64_t lo, uint64_t hi, uint32_t *modules);
uint32_t got_patch_slots(const struct hs_inject_slot *t, const uint8_t *kind, const uint64_t *hash, uint32_t nt,
			 uint64_t lo, uint64_t hi);
void got_patch_new(void);
void *got_find_definition(const char *name);
void got_restore_all(void);

/* Sampled blocks, in each shard: a table of up to SAMPLED_SLOTS, each block's probe starting
 * from its bucket, and a filter that a free reads (sampled.c): bit i of 2^k for the buckets
 * equal to i modulo 2^k, set while any of them holds a block, sized to the blocks sampled live
 * (under 1% of bits set, 512 bytes to 32 KiB) so that it stays in cache. One word names it
 * (filter_word_make). */
#define SAMPLED_SLOTS (1u << 18)
#define SAMPLED_BUCKET_BITS 18
/* Whether allocation hooks may pass calls by (sampling and attached): hs_hot.pass and passing. */
void fast_path(bool on);
void pass_publish(void);

/* A block's bucket, where its probe in the table of sampled blocks starts: two
 * shifts and an xor, since every free computes it. Blocks are 16-aligned. (a >> 4 ^ a >> 22,
 * written so that the compiler copies the address once.) */
static inline __attribute__((always_inline)) uint32_t bucket(const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;

	return (uint32_t)(((a ^ a >> 18) >> 4) & (SAMPLED_SLOTS - 1));
}

/* The filter word of the filter F of 2^K bits. */
static inline uint64_t filter_word_make(const uint64_t *f, uint32_t k)
{
	return (uint64_t)(uintptr_t)f << FILTER_WMASK_BITS | ((1u << (k - 6)) - 1);
}

/* By filter word W (nonzero), the filter's word that holds bucket B's bit, and *BIT, the
 * bit's place in it. B has SAMPLED_BUCKET_BITS, so B / 64 meets only the mask's bits of W. */
static inline __attribute__((always_inline)) uint64_t *filter_word_at(uint64_t w, uint32_t b, uint32_t *bit)
{
	*bit = b & 63;
	return (uint64_t *)(uintptr_t)(w >> FILTER_WMASK_BITS) + ((b >> 6) & (uint32_t)w);
}

/* Whether P may be a sampled block, by filter word W (nonzero): false for nearly every block. */
static inline __attribute__((always_inline)) bool filter_maybe(uint64_t w, const void *p)
{
	uint32_t bit;

	return *filter_word_at(w, bucket(p), &bit) >> bit & 1;
}

/* Whether P may be a sampled block (true whenever not sampling). */
static inline __attribute__((always_inline)) bool sampled_maybe(const void *p)
{
	uint64_t w = __atomic_load_n(filter_word_ptr(p), __ATOMIC_ACQUIRE);

	return !w || filter_maybe(w, p);
}

/* The thread's countdown (outermost, of a session that samples) not yet run out, and now
 * counted down: one word read and written, at a fixed offset from the thread pointer (hs_tls
 * is initial-exec: its offset is the GOT's entry), with no compare of generation or depth
 * before it, since a call nested in a hook finds it parked at 0. Unsigned, so that 0 passes
 * no size by. Alone, it is the pass-by of a hook that then jumps through hs_hot.pass, which
 * stops passing calls by when the session does not sample: a countdown may outlive the session
 * that drew it (a detach, then an attach that records every event), and no thread's can be
 * reset from another. A state of an earlier session that sampled at the same rate passes
 * calls by until its countdown runs out (thread_state_new). */
static inline __attribute__((always_inline)) bool countdown_pass(size_t size)
{
	uint64_t u = hs_tls.left;

	if (LIKELY(u > size)) {
		hs_tls.left = u - size;
		return true;
	}
	return false; /* the full path draws, and records */
}

/* An outermost call that is not recorded because the process is not attached (dormant, or
 * its recorder gone): malloc's and calloc's pass-bys, jumping to the full path, counted the
 * countdown down, which would run down to a size and stay there, and a later session at the
 * same rate, which keeps a countdown it finds (thread_state_new), would sample that thread's
 * first call of that size for certain. Stopped at 0 instead: it is drawn anew, and until
 * then every call takes the full path, as it did before any session. */
static inline __attribute__((always_inline)) void countdown_stop(void)
{
	if (!hs_tls.depth && !hs_active())
		hs_tls.left = 0;
}

/* Sampling, whether this call is passed by, for a hook whose pass-by calls on without
 * hs_hot.pass: the countdown, gated by whether the session samples at all. */
static inline __attribute__((always_inline)) bool pass_by(size_t size)
{
	return __atomic_load_n(&hs_hot.passing, __ATOMIC_RELAXED) && countdown_pass(size);
}

/* Inside another hook (the real allocator's own calls, operator new's malloc) or the
 * library's own code: the full path would record nothing and only forward. */
static inline __attribute__((always_inline)) bool nested(void)
{
	return UNLIKELY(hs_tls.depth != 0);
}

/* Sampling, whether a free is passed by: a block never sampled, which is nearly every one.
 * Nested or not, such a free records nothing either way. The filter is published only when
 * no boot_alloc memory was ever handed out, which must never reach the real free. */
static inline __attribute__((always_inline)) bool filter_pass_by(const void *p)
{
	uint64_t w = __atomic_load_n(filter_word_ptr(p), __ATOMIC_ACQUIRE);

	return w && !filter_maybe(w, p);
}

/* pool.c: sampled blocks on pages of their own, sampling at this rate or more (each live
 * sampled block costs a page or more: at most 4 KiB for each POOL_MIN_RATE bytes live). The
 * bench builds a library that places samples from 4 KiB, to weigh the sample path on loops
 * sampled densely enough that its cost stands out of the machine's noise. */
#ifndef POOL_MIN_RATE
#define POOL_MIN_RATE (256u << 10)
#endif
#define POOL_BYTES_LOG 33 /* 8 GiB of address space, only that */
#define POOL_BYTES (1ull << POOL_BYTES_LOG)
#define POOL_MAX_ALIGN PAGE /* see pool_block */
#define POOL_CHUNK_IS_MMAPPED 2ull
#define POOL_CLASS_SHIFT 56 /* a block's second word: the size asked for, its class on top */
#define PAGE 4096ull
/* Classes of counts of pages: one per count up to POOL_EXACT, then eight per doubling (a
 * block spans at most 1/8 more pages than it needs), up to POOL_BYTES. */
#define POOL_EXACT 64
#define POOL_CLASSES (POOL_EXACT + 8 * (POOL_BYTES_LOG - 12 - 6))
int pool_init(void);
void pool_resolved(void *handle);
void pool_switch(bool sampling);
void pool_stop(void);
void *pool_alloc(struct tstate *t, size_t n, size_t a, bool zero, bool *kept);
void pool_put(struct tstate *t, void *p, uint64_t *w);
void pool_thread_exit(struct tstate *t);
void pool_lock(void);
void pool_unlock(void);
uint64_t pool_copy_size(void *old, uint64_t n);

static inline uint32_t pool_class_of(uint64_t pages)
{
	uint64_t q = pages - 1;
	uint32_t e;

	if (pages <= POOL_EXACT)
		return (uint32_t)q;
	e = 63 - (uint32_t)__builtin_clzll(q);
	return POOL_EXACT + (e - 6) * 8 + (uint32_t)(q >> (e - 3)) - 8;
}

static inline uint64_t pool_class_pages(uint32_t c)
{
	if (c < POOL_EXACT)
		return c + 1;
	c -= POOL_EXACT;
	return (uint64_t)(9 + c % 8) << (c / 8 + 3);
}

/* The block's first page, if P is a block of the pool's of this session, else NULL. P may be
 * any allocator's (pymalloc's, a replacement operator new's), its neighbours unmapped: the
 * only page read before the pool's map of its blocks says one starts there is P's own (or,
 * P on a page boundary, the page before: a block's user pointer is at most a page past its
 * start, POOL_MAX_ALIGN). Then its words must name it as this session's, and its chunk's
 * header must point back to it and account for its class's pages: a block glibc remapped
 * is not ours. Inline, as free's fast path reaches it: a call there would give that path a
 * frame. */
static inline __attribute__((always_inline)) uint64_t *pool_block(const void *p)
{
	uint64_t in = (uintptr_t)p & (PAGE - 1), w = (uintptr_t)p - (in ? in : PAGE), i, c;
	const uint64_t *ch = (const uint64_t *)p - 2, *b = (const uint64_t *)(uintptr_t)w;

	i = (w - hs_hot.sl.pool_base) / PAGE;
	if ((in & 15) || i >= POOL_BYTES / PAGE || !(__atomic_load_n(&hs_hot.sl.pool_live[i / 64], __ATOMIC_RELAXED) >> (i % 64) & 1))
		return NULL;
	if (b[0] != (__atomic_load_n(&hs_hot.sl.pool_cookie, __ATOMIC_RELAXED) ^ w))
		return NULL;
	c = b[1] >> POOL_CLASS_SHIFT;
	if (c >= POOL_CLASSES || ch[0] != (uintptr_t)p - w - 16 || !(ch[1] & POOL_CHUNK_IS_MMAPPED) ||
	    (ch[1] & ~7ull) + ch[0] != pool_class_pages((uint32_t)c) * PAGE)
		return NULL;
	return (uint64_t *)(uintptr_t)w;
}

/* The block's first page if P is the pool's (pool_block), else NULL. */
static inline __attribute__((always_inline)) uint64_t *pool_mine(const void *p)
{
	return hs_hot.sl.pool_base ? pool_block(p) : NULL;
}

/* The size asked for of the pool's block whose first page is W. */
static inline uint64_t pool_size(const uint64_t *w)
{
	return w[1] & ((1ull << POOL_CLASS_SHIFT) - 1);
}

/* Sampling, whether a free of P passes by wherever sampled blocks are: a block the filter
 * has never seen sampled, which the pool does not hold either (an earlier session's pool
 * block goes to glibc, which unmaps it). For a free that cannot rely on the pool's range:
 * Python's domains and another module's operators keep their samples in the table. */
static inline __attribute__((always_inline)) bool table_pass_by(const void *p)
{
	/* The pool's block first: its lines are the ones the caller just used, where the
	 * filter's, read for nothing, are cold at each sample's free. */
	return !pool_mine(p) && filter_pass_by(p);
}

/* Whether sampled blocks are being placed in the pool. */
static inline __attribute__((always_inline)) bool pool_placing(void)
{
	return __atomic_load_n(&hs_hot.pool_lo, __ATOMIC_RELAXED) != 0;
}

/* Whether P lies outside the pool's pages while sampled blocks are placed there (one compare
 * with the range); always false while they are not (lo 0, len ~0). */
#if !defined(__x86_64__)
#error "outside_pool: its compare is written in x86-64's instructions"
#endif
static inline __attribute__((always_inline)) bool outside_pool(const void *p)
{
	uint64_t d = (uintptr_t)p;
	bool outside;

	/* lo before len: a stop publishes len first. A start publishes lo first, but before
	 * the session goes active (fast_path), when it has no block yet to miss. Written out,
	 * since the compiler will not fold an atomic load into the subtraction (free's pass-by:
	 * 5 instructions with the jump on, against 7). x86 reads memory in program order, so
	 * the instructions' order keeps the loads'; the fence after it, for the compiler, keeps
	 * what the caller reads next (the pool's tests) after them, as an acquire load would. */
	__asm__("sub %[lo], %[d]\n\tcmp %[len], %[d]"
		: [d] "+r"(d), "=@ccae"(outside)
		: [lo] "m"(hs_hot.pool_lo), [len] "m"(hs_hot.pool_len));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return outside;
}

/* Sampling, whether a free (or a realloc's old block) is passed by: outside the pool's pages
 * while sampled blocks are placed there, else as table_pass_by. */
static inline __attribute__((always_inline)) bool free_pass_by(const void *p)
{
	return LIKELY(outside_pool(p)) || table_pass_by(p);
}

/* Whether P is memory of boot_alloc (hooks.c), which no allocator knows. */
extern char boot[1 << 16] __attribute__((visibility("hidden")));
static inline __attribute__((always_inline)) bool is_boot(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot < sizeof(boot);
}

/* The calling thread's state, made on its first event. */
static inline __attribute__((always_inline)) struct tstate *thread_state(void)
{
	return LIKELY(hs_tls.t != NULL && hs_tls.t->gen == __atomic_load_n(&hs_hot.sl.session_gen, __ATOMIC_RELAXED))
		       ? hs_tls.t
		       : thread_state_new();
}

/* Whether this allocation is recorded: always every event; sampled, when the thread's byte
 * countdown runs out (Poisson byte sampling, as the BPF sampler). */
static inline __attribute__((always_inline)) bool sample(size_t size)
{
	uint64_t *c = countdown();
	int64_t left;

	if (!hs_hot.sl.shm->sample_rate)
		return true;
	left = (int64_t)(*c - size);
	if (LIKELY(left > 0)) {
		*c = (uint64_t)left;
		return false;
	}
	/* The bytes from the block's end to the next sample: a Poisson process's are a fresh
	 * draw's, whatever came before (BPF's sampler draws so too). Draws added up until past
	 * the block took its size over the rate of them: at 512 KiB, malloc(INT64_MAX), which
	 * CPython's own tests ask for, held its thread for about a day. */
	*c = (uint64_t)draw();
	/* Not counted here (HS_CNT_SAMPLED): an atomic add to a line every thread writes cost
	 * each sample a cache miss. The recorder counts the samples that reach it. */
	return true;
}

/* The thread's state if this call is to be recorded: attached, not nested in another hook. */
static inline __attribute__((always_inline)) struct tstate *enter(void)
{
	if (UNLIKELY(!hs_hot.free1)) /* on the pass-by's line; fns.free is on the next */
		resolve();
	/* Whether the recorder has detached is asked only of events about to be written
	 * (reserve): a call the sampler passes by writes nothing either way. */
	if (!hs_active() || hook_depth())
		return NULL;
	return thread_state();
}

#endif
