/* SPDX-License-Identifier: MIT */
/* Rings read in place: BPF's per-CPU rings and libheapsnap's per-thread rings share one
 * framing; one reader merges them by time and hands each event to the pipeline. */
#ifndef HEAPSNAP_RING_READER_H
#define HEAPSNAP_RING_READER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct session;

/* How long an event may take from its timestamp to its ring: a BPF program can be
 * preempted between the two. While more than one ring holds events, they are merged only
 * once they are this old. */
#define MERGE_SLACK_NS 10000000ull

/* One ring, read where its producer wrote it: handling an event in place spares a copy
 * that costs a cache miss per line. The consumer page is ours to write; the producer page
 * and the data, mapped twice in a row so that no record wraps, are read-only. An event
 * stays in the ring, holding its space, until it is handled and the position published. */
struct ring {
	uint64_t *cons;
	const uint64_t *prod;
	const uint8_t *data;
	size_t map_len;
	uint64_t mask;
	uint64_t pos;       /* the next record to handle */
	uint64_t published; /* the last position given back to the producer */
	uint64_t end;       /* the producer's position when last looked at */
	uint64_t goal;      /* the producer's position when the final drain began */
	bool no_wrap;       /* in-process: records never cross the end of the ring */
	bool broken;        /* a record claimed more than its producer had written */
};

/* A kernel ring buffer (its map FD, SIZE bytes of data), mapped. */
int ring_map(struct ring *r, int fd, uint32_t size);
void ring_use_memory(struct ring *r, uint64_t *cons, const uint64_t *prod, const uint8_t *data, uint32_t size);
void ring_unmap(struct ring *r);
/* Handles what the rings hold (ALL: everything, at the end), none stamped after UPTO
 * (UINT64_MAX: no such bound); returns the time up to which the file is complete; *HELD:
 * events wait for the merge's slack; *PRESSED: they keep a ring a quarter full or more, so
 * that its producer will not wake the recorder for more. */
uint64_t drain(struct session *s, bool all, uint64_t upto, bool *held, bool *pressed);
/* Handles every event stamped up to UPTO and none after; the clock must be MERGE_SLACK_NS
 * past UPTO. */
void drain_upto(struct session *s, uint64_t upto);
/* Adds the signalfd and FDS (those < 0 skipped) to the loop's epoll set, level-triggered,
 * making the set if there is none yet. */
int loop_epoll_add(struct session *s, const int *fds, int n);
/* Sleeps until a producer wakes the recorder or TIMEOUT_MS pass. */
int wait_rings(struct session *s, int timeout_ms);
#endif
