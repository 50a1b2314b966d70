/* SPDX-License-Identifier: MIT */
/* Replays a record file into the live heap at a chosen point, streaming it. */
#ifndef HEAPSNAP_REPLAY_H
#define HEAPSNAP_REPLAY_H
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "exitcode.h"
#include "hmap.h"
#include "model.h"
#include "pycode.h"
#include "record.h"

/* One live block, indexed by its slot. The recorder reuses freed slots first, so the table
 * is as long as the most blocks ever live at once, not as the file. */
struct live_slot {
	uint64_t time;
	uint32_t agg;    /* index into aggs; LIVE_EMPTY when the slot holds no block */
	uint32_t weight; /* 16.16 */
};

#define LIVE_EMPTY UINT32_MAX

struct live_table {
	struct live_slot *s;
	size_t cap; /* slots allocated */
};

/* A --stack dwarf capture: registers at allocator entry and the stack above sp. */
struct dwarf_stack {
	uint64_t regs[8]; /* ip, sp, bp, bx, r12, r13, r14, r15 */
	uint64_t used;    /* stack in use above sp when captured */
	uint32_t len;
	uint8_t *data;
};

/* STOP_META: metadata only, no events replayed; the time range from the footer's frame
 * index (what `info` needs). A file without a footer is replayed whole instead. */
struct replay;

enum replay_stop { STOP_END, STOP_SNAPSHOT, STOP_TIME, STOP_PEAK, STOP_META };

struct replay_target {
	enum replay_stop kind;
	const char *snapshot; /* number (1-based) or label */
	double at_seconds;
	/* --pid, --comm: replay only these processes' events (either list selects). A process
	 * is selected by name while it bears it: a shell that execs the command is not. The pids
	 * in ascending order: a diff's second file may list as many as the first file selects. */
	const uint32_t *pids;
	uint32_t nr_pids;
	const char *comm;
	bool timeline; /* keep the series of the live heap and RSS over time */
	bool temporary; /* count temporary allocations (struct agg's temp_*) */
	/* STOP_END, the default: a process whose Python interpreter marked its finalization (a
	 * python-finalize snapshot, format 5.2) is replayed up to that mark, its events after it
	 * (what finalization frees) left out; every other process to the end. */
	bool py_final;
	/* Moments to call CHECKPOINT at, in order, while the events replay: each just before the
	 * first event at record index >= record or later than time (UINT64_MAX: no limit), or at
	 * the end for those past it (STOP_END only). What the HTML report uses to show the heap at many moments
	 * from one pass. */
	const struct replay_checkpoint *checkpoints;
	uint32_t nr_checkpoints;
	void (*checkpoint)(const struct replay *r, uint32_t i, void *ctx);
	void *checkpoint_ctx;
};

struct replay_checkpoint {
	uint64_t record, time;
};

struct replay {
	const char *path;
	jmp_buf *oom; /* while a pass runs: where running out of memory returns to */
	const struct replay_target *target;
	const struct replay_target *filter; /* the target, when --pid or --comm narrows the replay */
	bool tl_on;
	bool temp_on;
	uint32_t next_cp; /* the next of target->checkpoints */
	struct hmap temp_last; /* (pid, tid) -> agg << 32 | slot + 1 of its last allocation, if still its last event */
	struct hmap temp_undo; /* (pid, tid) -> its temp_last before its FREE just now (temporary_note) */
	struct timeline_point *tl; /* TIMELINE_MAX points, indexed by stretch until packed */
	uint32_t nr_tl;            /* one past the last stretch used; once packed, the points */
	bool tl_done;              /* packed at the end of the pass: no more points */
	bool following; /* replay__follow_open's: events are held back while metadata is applied */
	uint64_t tl_t0, tl_width;
	uint64_t rss_sum; /* the selected processes' last RSS samples */
	/* session */
	bool have_session;
	char *tool_version, *hostname, *kernel, *cmdline, *via;
	uint64_t tick_ns, realtime_start_ns, sample_rate, max_stack;
	uint32_t stack_mode, format_major, format_minor;
	struct hs_probe *probes; /* strings owned */
	uint32_t nr_probes;

	struct process *procs;
	uint32_t nr_procs;
	struct hmap proc_idx; /* pid -> index + 1 */
	uint32_t last_proc;   /* index of the last process looked up */
	struct mapping *maps;
	uint32_t nr_maps;
	bool maps_sorted;
	struct hmap open_maps; /* (pid, start) -> newest open mapping there, index + 1 */
	struct hmap threads; /* (pid, tid) -> strdup'd name pointer */
	struct py_codes py; /* Python code objects (pycode.c) */

	uint64_t **stacks; /* by id: [0] = nr, then frames; dwarf stacks: NULL */
	struct dwarf_stack *dwarf; /* parallel to stacks */
	uint64_t nr_stack_slots;
	uint64_t dwarf_stacks;
	struct hmap stack_idx; /* id -> slot + 1 */

	struct agg *aggs;
	uint32_t nr_aggs, cap_aggs;
	struct hmap agg_idx; /* hash of (pid, tid, stack, size) -> index (chained through equality) */
	struct live_table live;

	struct snapshot_info *snaps;
	uint32_t nr_snaps;
	struct counter_val *counters;
	uint32_t nr_counters;
	struct hmap counter_idx; /* (hash of name, length) -> index + 1 */

	/* totals */
	uint64_t records, events, allocs, frees, unknown_frees, restored, skipped;
	uint64_t implied_frees; /* live blocks whose slot an allocation took (counted in no other total) */
	uint64_t live_slots, peak_live_slots; /* blocks live (each one, whatever its weight): now, at most */
	double live_bytes, live_count, peak_bytes;
	uint64_t peak_time, peak_event;
	/* Times the peak is looked for between: all of them but where a recorder's peak snapshot is
	 * placed in a file of coarse times (find_stop). */
	uint64_t peak_lo, peak_hi;
	uint64_t first_time, last_time, stop_time;
	bool have_time;
	bool stopped_early; /* the pass met an event past its stop (so the stop is inside the recording) */
	const char *stopped_at; /* description of where replay stopped */
	uint32_t py_final_procs;  /* processes replayed to their finalization (py_final) */
	uint64_t py_final_events; /* their events left out */
	/* Their blocks whose free was left out, live still but out of the slot table: the file
	 * gives the slot to the next block allocated there, of any process. */
	struct live_slot *parked;
	uint64_t nr_parked;
	char stop_desc[160];

	enum hs_read_status status;
	char error[600];
	bool refused;    /* the pass ended on a record past a limit: error says which */
	uint64_t offset; /* while a pass runs: where the reader was for the record being applied */
	uint64_t file_size;
	uint64_t frames;
};

/* Replays PATH to TARGET. Returns an EXIT_* code; r->error explains anything but OK. */
int replay__run(struct replay *r, const char *path, const struct replay_target *target);
void replay__free(struct replay *r);
const char *replay__thread_name(const struct replay *r, uint32_t pid, uint32_t tid);
const uint64_t *replay__stack(const struct replay *r, uint64_t id, uint32_t *nr);
/* The dwarf capture for stack ID, or NULL when ID is a frame list (or unknown). */
const struct dwarf_stack *replay__dwarf_stack(const struct replay *r, uint64_t id);
struct process *replay__process(const struct replay *r, uint32_t pid);
/* The mapping of PID that holds ADDR, preferring the one mapped at time T. */
const struct mapping *replay__mapping(const struct replay *r, uint32_t pid, uint64_t addr, uint64_t t);
/* PID's mappings, *NR of them, by start (all of them, over time). */
const struct mapping *replay__maps_of(const struct replay *r, uint32_t pid, size_t *nr);
double replay__seconds(const struct replay *r, uint64_t t);
/* Iterates live allocations: calls CB with the aggregate and the allocation time. */
void replay__for_each_live(const struct replay *r, void (*cb)(const struct agg *a, uint64_t time, double w, void *ctx),
			   void *ctx);
/* A counter's last value by name, 0 if the file has none of that name. */
uint64_t replay__counter(const struct replay *r, const char *name);
/* Events the recorder counted as lost (ring full, live map full, ...): their sum, and in
 * DESC each non-zero counter by name. */
uint64_t replay__lost_events(const struct replay *r, char *desc, size_t len);
/* Processes that stopped recording before the end (lost.processes_stopped): their events
 * after that are neither in the file nor counted. With WHY, what that means, in a clause
 * that follows "and" or "Lost:" (empty when there are none). */
uint64_t replay__stopped(const struct replay *r, char *why, size_t len);
/* Whether the figures lack anything: events lost, or processes stopped early. */
bool replay__lossy(const struct replay *r);
/* The mappings back in the file's order, so that more of them can be read (the lookups sort
 * them on first use): what a follower does after each update. */
void replay__maps_unsort(struct replay *r);

/* ---- following a recording as it is written (the live subcommand) ----
 * One replay, fed what the input holds each time (an update costs the records since the
 * last one), whose state is always the heap at a moment T of the file: every event before
 * the first one later than T, as `--at T` replays (events are nearly in time order, so
 * those from the last moment seen wait until a later one, or a HORIZON record, shows that
 * no event of that moment is still to come). */
struct replay_follow;

/* Opens PATH ("-": standard input) to follow. An EXIT_* code; r->error explains. */
int replay__follow_open(struct replay *r, const char *path, const struct replay_target *target,
			struct replay_follow **out);
/* Applies up to MAX records of what the input holds now. Returns EXIT_OK, or EXIT_FAIL
 * (out of memory, a read error: r->error says). *ENDED once the input has ended (its footer,
 * a pipe's EOF, damage), with r->status and r->error as replay__run leaves them; else
 * record_reader__waiting() says whether it must wait for more. */
int replay__follow_feed(struct replay_follow *f, struct replay *r, uint64_t max, bool *ended);
/* Whether the input has nothing more yet: wait (up to TIMEOUT_MS, or until ALSO_FD is
 * readable, which returns true; -1 for none) before feeding again. */
bool replay__follow_waiting(const struct replay_follow *f);
bool replay__follow_wait(struct replay_follow *f, int timeout_ms, int also_fd);
/* Makes R the heap at its moment for a report (stop_time, stop_desc "live at Ts"): with
 * FINAL, every event read applied, the end. Returns the moment in seconds. */
double replay__follow_moment(struct replay_follow *f, struct replay *r, bool final);
/* After a report: R ready to be fed again. */
void replay__follow_resume(struct replay_follow *f, struct replay *r);
/* Events at or after time T are held, whatever later ones show, until this is called again
 * (UINT64_MAX: none held for this): what lets an export cut at an interval's end. */
void replay__follow_hold_from(struct replay_follow *f, uint64_t t);
/* The latest time the input has shown: of an event read, or a HORIZON. */
uint64_t replay__follow_latest(const struct replay_follow *f);
/* Whether every event before time T has been read: a later one was, or a HORIZON past it. */
bool replay__follow_reached(const struct replay_follow *f, uint64_t t);
/* Makes R the heap just before T (every event before T applied, none after: what --at
 * shows), described as DESC. Returns the moment in seconds. */
double replay__follow_cut(struct replay_follow *f, struct replay *r, uint64_t t, const char *desc);
void replay__follow_free(struct replay_follow *f);
#endif
