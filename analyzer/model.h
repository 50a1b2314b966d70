/* SPDX-License-Identifier: MIT */
/* The model a replay builds and every report reads: processes, their mappings, the
 * aggregates of allocations, snapshots, counters and the timeline. */
#ifndef HEAPSNAP_MODEL_H
#define HEAPSNAP_MODEL_H
#include <stdbool.h>
#include <stdint.h>

#include "record.h"

struct mapping {
	uint32_t pid;
	uint64_t start, end, offset, inode;
	uint64_t t_map, t_unmap; /* t_unmap = UINT64_MAX while mapped */
	uint32_t prev_open; /* while reading: the mapping open before it at this start, index + 1 */
	uint64_t reach; /* once sorted: the highest end of its process's mappings up to this one */
	uint32_t seq;   /* its place in the file's order (replay__maps_unsort) */
	char *path;
	uint8_t build_id[HS_MAX_BUILD_ID];
	uint32_t build_id_len;
};

struct process {
	uint32_t pid, ppid, origin;
	char *comm, *cmdline, *exe;
	uint8_t build_id[HS_MAX_BUILD_ID];
	uint32_t build_id_len;
	uint64_t t_start, t_exit;
	bool exited;
	bool exit_status_unknown; /* its EXIT said it ended, not how */
	bool selected; /* by --pid or --comm, or no filter */
	uint64_t rss_last; /* its last RSS sample */
	int64_t exit_status;
	double alloc_bytes, alloc_count, free_bytes, free_count, live_bytes, live_count, peak_bytes;
	/* Of the frees: blocks whose slot an allocation took while they were live (their free
	 * was not read before it), freed by implication. */
	double implied_free_bytes, implied_free_count;
	uint64_t peak_time, largest, rss_max, unknown_frees;
	/* Replayed to its interpreter's finalization (replay_target.py_final): the time of its
	 * python-finalize snapshot, after which its events are left out. */
	bool py_final;
	uint64_t py_final_time;
};

/* One aggregate: allocations of one size from one stack on one thread. */
struct agg {
	uint32_t pid, tid;
	uint64_t stack_id, size;
	double alloc_objects, alloc_space, inuse_objects, inuse_space;
	double temp_objects, temp_space; /* freed before their thread's next allocation */
	/* Sampled recordings: the estimated variance of each figure above (Horvitz-Thompson: a
	 * block of weight w adds w(w-1) times its value squared; see sample_variance()). */
	double var_alloc_objects, var_alloc_space, var_inuse_objects, var_inuse_space;
};

struct snapshot_info {
	uint64_t time;
	uint32_t origin;
	uint64_t live_bytes;
	uint64_t record_index; /* records read before it; UINT64_MAX for time-based (peak) */
	char *label;
};

struct counter_val {
	char *name;
	uint64_t value;
};

/* The live heap over time in at most TIMELINE_MAX points, each the highest live total of an
 * equal stretch of time (so the series' maximum is the peak), with the RSS then. The
 * stretches double when the points would pass the limit: the series stays small however
 * long the recording. While a replay runs, point i is stretch i (empty ones unused); at its
 * end the used ones are packed in order. While following a recording, a point's live
 * total may be -1: not known yet (replay_timeline_note). */
#define TIMELINE_MAX 1024
struct timeline_point {
	uint64_t bucket; /* stretch number: time - t0 over the width */
	uint64_t time;   /* of the highest live total in it */
	double live_bytes, live_blocks;
	uint64_t rss_bytes;
	bool used; /* while replaying: an event fell in this stretch */
};
#endif
