/* SPDX-License-Identifier: MIT */
/* The in-process way in's own state, shared by its files: preload_way.c (its way_ops: the
 * shared memory, its rings, rings given back), preload_children.c (the command's descendants)
 * and the injected way, which is this way with a library loaded into a running process
 * instead of preloaded (struct inject_way begins with a struct preload_way). */
#ifndef HEAPSNAP_PRELOAD_WAY_H
#define HEAPSNAP_PRELOAD_WAY_H
#include <stdbool.h>
#include <stdint.h>

#include "hmap.h"
#include "session.h"

struct preload;
struct counter_set;

/* In-process rings: one per thread of the targets at once, claimed at its first event.
 * Memory is touched only as rings are used. */
#define PRELOAD_RINGS 256
/* A ring's bytes: sampled, 1 MiB; every event, 4 MiB. While more than one ring holds events
 * the recorder takes only those 10 ms old (MERGE_SLACK_NS), so a thread that fills its ring
 * sooner waits: two threads recording every event ran 62 times native's wall time with 1 MiB
 * rings, 16 with 4 MiB (bench/workload mt 2). A thread that records touches its ring's pages,
 * which both processes count as shared memory. */
#define PRELOAD_RING_BYTES (1u << 20)
#define PRELOAD_RING_BYTES_EVERY (4u << 20)
/* How often the recorder looks at in-process rings unasked, with events waiting for the merge
 * or not. A producer wakes it each time its ring fills past a quarter, and waits for it when
 * the ring is full, so events held cost only ring space; a thread that finds no ring, a child
 * asking for the memory, a signal or the command's end wake it at once. Each look unasked is a
 * wake-up on a CPU the program may be running on: looking every 5 ms, and 10 ms after a read
 * that left events for the merge, a 2-thread loop passing every call by took 1.048 of the
 * floor's CPU time, and 1.036 so (21 interleaved rounds, faster in 18). */
#define PRELOAD_POLL_MS 100

static inline uint32_t preload_ring_bytes(uint64_t sample_rate)
{
	return sample_rate ? PRELOAD_RING_BYTES : PRELOAD_RING_BYTES_EVERY;
}

struct preload_way {
	struct preload *pre;       /* the memory shared with the targets */
	char *lib;                 /* libheapsnap.so */
	uint64_t procs_unrecorded; /* processes refused or found without the library */
	struct hmap seen_images;   /* (pid, image key) of the command's descendants: 1 seen, 2 checked */
	/* Executables by (device, inode): 1 with an allocator of their own, 2 without; and
	 * (pid, inode) of the processes running one, each counted once. */
	struct hmap own_alloc_exes, own_alloc_procs;
	bool seen_full;
};

static inline struct preload_way *preload_of(const struct session *s)
{
	return s->way_state;
}

/* preload_way.c, for the injected way too */
/* The shared memory's rings as session.rings, and its descriptors in the loop's epoll set. */
int preload_use_rings(struct session *s);
void preload_woken(struct session *s);
void preload_polled(struct session *s, uint64_t now, bool tick);
void preload_read_counters(struct session *s);
void preload_add_counters(struct session *s, struct counter_set *c);
void preload_quiesce(struct session *s);
/* Frees what struct preload_way holds, not the struct. */
void preload_release(struct preload_way *w);

/* preload_children.c: hands the shared memory to the command's descendants that ask the
 * socket; once a second, says which of them run without being recorded. */
void serve_children(struct session *s);
void scan_children(struct session *s);
/* Says, before it starts, that the command's executable EXE defines its own allocator. */
void check_command_allocator(struct session *s, const char *exe);
/* The way's mappings op: says a process whose executable defines its own allocator. */
void check_own_allocator(struct session *s, struct proc *p, bool attach);
#endif
