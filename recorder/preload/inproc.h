/* SPDX-License-Identifier: MIT */
/* libheapsnap.so's parts, shared between its files: events.c writes events into the
 * thread's ring in shared memory, hooks.c interposes the allocators, process.c tells the
 * recorder about the process (start, fork, images, names). */
#ifndef HEAPSNAP_INPROC_H
#define HEAPSNAP_INPROC_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/record.h"
#include "shm.h"

#define EXPORT __attribute__((visibility("default")))
#define HOOK __attribute__((visibility("default"), noinline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The next definitions of what we interpose: glibc's, or an allocator preloaded after us. */
struct real_fns {
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
};
extern struct real_fns real;

struct tstate {
	uint32_t gen;   /* the session it was made for (session_gen) */
	int ring;       /* claimed ring, -1 none yet, -2 none to be had */
	uint32_t tid;
	uint64_t prod;  /* own copy of the ring's producer position */
	uint64_t cons;  /* the recorder's position, as last read */
	int64_t until_sample;
	uint64_t stack_lo, stack_hi;
	uint64_t events;
	uint64_t dwarf_seq;   /* dwarf captures' keys: unique per thread */
	uint64_t sent[256]; /* stack hashes sent lately, direct-mapped */
};

extern struct hs_shm_hdr *shm;
extern uint8_t *shm_data;
extern int wake_fd;
extern int active;
extern uint32_t self_pid;
extern pthread_key_t exit_key;
/* Bumped at each injected session's start: a thread's state of an earlier one is redone. */
extern uint32_t session_gen;
/* Where the real functions are looked up: RTLD_NEXT preloaded, RTLD_DEFAULT injected. */
extern void *next_handle;
extern int injected;
extern __thread struct tstate *tsp __attribute__((tls_model("initial-exec")));
/* Inside one of our hooks: what the real allocator calls is the outer call's. */
extern __thread int tdepth __attribute__((tls_model("initial-exec")));

/* hooks.c */
void resolve(void);
void resolve_from(void *handle);
void *boot_alloc(size_t n);
bool is_boot(const void *p);

/* events.c */
uint64_t now_ns(void);
void count(int which);
uint32_t gettid_raw(void);
int64_t draw(void);
struct tstate *thread_state_new(void);
void go_dormant(void);
void *reserve(struct tstate *t, uint32_t len, uint32_t *need_out);
void commit(struct tstate *t, uint32_t need);
void fill_hdr(struct hs_event_hdr *h, uint8_t type, uint8_t kind, uint32_t tid, uint64_t ts);
void emit_comm(struct tstate *t);
void spin_lock(int *l);
void spin_unlock(int *l);
bool sampled_add(void *p, uint64_t size);
uint64_t sampled_take(void *p);
void record_alloc(struct tstate *t, void *p, size_t size, uint8_t kind, uint64_t fp);
void record_free(struct tstate *t, void *p, uint64_t size, uint8_t flags, uint64_t ts);
int events_init(void);
extern int sampled_lock;

/* process.c */
void emit_maps(void);
void process_attach(void);

/* got.c */
struct hs_inject_slot;
int got_init(void);
bool got_is_hook(const void *fn);
uint32_t got_patch_all(const struct hs_inject_slot *t, uint32_t nt, uint64_t lo, uint64_t hi, uint32_t *modules);
void got_patch_new(void);
void got_restore_all(void);

/* events.c */
void sampled_clear(void);

/* Sampled blocks: a table of SAMPLED_SLOTS, and a count of them per home slot (events.c). */
#define SAMPLED_SLOTS (1u << 18)
extern uint8_t *sampled_count;

/* A block's home slot in the table of sampled blocks, and its bucket in sampled_count. */
static inline __attribute__((always_inline)) uint32_t bucket(const void *p)
{
	return (uint32_t)(((uint64_t)(uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 46);
}

/* Whether P may be a sampled block: false for nearly every block when sampling. */
static inline __attribute__((always_inline)) bool sampled_maybe(const void *p)
{
	return __atomic_load_n(&sampled_count[bucket(p)], __ATOMIC_RELAXED);
}

/* The calling thread's state, made on its first event. */
static inline __attribute__((always_inline)) struct tstate *thread_state(void)
{
	return LIKELY(tsp != NULL && tsp->gen == __atomic_load_n(&session_gen, __ATOMIC_RELAXED)) ? tsp
												 : thread_state_new();
}

/* Whether this allocation is recorded: always every event; sampled, when the thread's byte
 * countdown runs out (Poisson byte sampling, as the BPF sampler). */
static inline __attribute__((always_inline)) bool sample(struct tstate *t, size_t size)
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

/* The thread's state if this call is to be recorded: attached, not nested in another hook. */
static inline __attribute__((always_inline)) struct tstate *enter(void)
{
	if (UNLIKELY(!real.free))
		resolve();
	/* Whether the recorder has detached is asked only of events about to be written
	 * (reserve): a call the sampler passes by writes nothing either way. */
	if (!__atomic_load_n(&active, __ATOMIC_RELAXED) || tdepth)
		return NULL;
	return thread_state();
}

#endif
