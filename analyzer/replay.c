// SPDX-License-Identifier: MIT
/* Replay: a streaming pass over the record file that keeps only the live set, the
 * interned stacks and per-(thread, stack, size) aggregates in memory. This file applies the
 * allocations and frees and runs the passes; replay_meta.c takes the other records,
 * replay_timeline.c and replay_temporary.c keep what the timeline and temporary allocations
 * count along the way. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decoder.h"
#include "replay.h"
#include "replay_int.h"

/* Out of memory while a pass runs: back to pass(), which ends it with an error. Whatever
 * was allocated belongs to R by then (a failed realloc leaves the old block in place), so
 * replay__free releases it. */
_Noreturn void replay_nomem(struct replay *r)
{
	longjmp(*r->oom, 1);
}

/* Every string the model keeps comes from the file: escaped, so no report can carry a
 * terminal escape from a recording. */
char *replay_strdup(struct replay *r, const char *s)
{
	char *d = hs_strdup_printable(s ? s : "");

	if (!d)
		replay_nomem(r);
	return d;
}

void *replay_realloc(struct replay *r, void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		replay_nomem(r);
	return q;
}

/* Room for element N of an array that grows one at a time: doubles at powers of two, so the
 * capacity needs no field of its own and the copying stays linear. */
void *replay_grow(struct replay *r, void *p, uint64_t n, size_t elem)
{
	if (n && (n & (n - 1)))
		return p;
	return replay_realloc(r, p, (n ? 2 * n : 1) * elem);
}

static int fail(struct replay *r, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	return code;
}

/* Whether --pid names PID; with no filter, every process is. */
bool replay_pid_listed(const struct replay *r, uint32_t pid)
{
	uint32_t lo = 0, hi;

	if (!r->filter)
		return true;
	for (hi = r->filter->nr_pids; lo < hi;) {
		uint32_t mid = lo + (hi - lo) / 2, v = r->filter->pids[mid];

		if (v == pid)
			return true;
		if (v < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

struct process *replay_get_process(struct replay *r, uint32_t pid)
{
	struct hmap_slot *s;
	bool created;

	/* Events come in long runs from one process. */
	if (r->nr_procs && r->last_proc < r->nr_procs && r->procs[r->last_proc].pid == pid)
		return &r->procs[r->last_proc];

	s = hmap_put(&r->proc_idx, pid, 0, &created);
	if (!s)
		replay_nomem(r);
	if (created) {
		r->procs = replay_grow(r, r->procs, r->nr_procs, sizeof(*r->procs));
		r->procs[r->nr_procs] = (struct process){.pid = pid, .comm = replay_strdup(r, ""), .cmdline = replay_strdup(r, ""),
							 .exe = replay_strdup(r, ""), .selected = replay_pid_listed(r, pid)};
		s->val = ++r->nr_procs;
	}
	r->last_proc = (uint32_t)s->val - 1;
	return &r->procs[s->val - 1];
}

static uint32_t agg_get(struct replay *r, uint32_t pid, uint32_t tid, uint64_t stack, uint64_t size)
{
	/* The pair folded into one word by the seeded hash: the few that share it chain on
	 * (k2 + 1), which a file could otherwise fill by choosing its pairs. */
	uint64_t k1 = (uint64_t)pid << 32 | tid, k2 = hmap_hash(stack, size);

	for (;; k2++) {
		bool created;
		struct hmap_slot *s = hmap_put(&r->agg_idx, k1, k2, &created);

		if (!s)
			replay_nomem(r);
		if (created) {
			if (r->nr_aggs == r->cap_aggs) {
				r->cap_aggs = r->cap_aggs ? r->cap_aggs * 2 : 256;
				r->aggs = replay_realloc(r, r->aggs, sizeof(*r->aggs) * r->cap_aggs);
			}
			r->aggs[r->nr_aggs] = (struct agg){.pid = pid, .tid = tid, .stack_id = stack, .size = size};
			s->val = r->nr_aggs;
			return r->nr_aggs++;
		}
		struct agg *a = &r->aggs[s->val];

		if (a->pid == pid && a->tid == tid && a->stack_id == stack && a->size == size)
			return (uint32_t)s->val;
	}
}

/* Makes SLOT addressable. Slots only grow one at a time (the reader checks), so the
 * table doubles at most log2(peak live blocks) times. */
static struct live_slot *live_at(struct replay *r, uint64_t slot)
{
	struct live_table *t = &r->live;

	if (slot >= t->cap) {
		size_t ncap = t->cap ? t->cap : 1024;
		struct live_slot *n;

		while (ncap <= slot)
			ncap *= 2;
		n = realloc(t->s, ncap * sizeof(*n));
		if (!n)
			replay_nomem(r);
		for (size_t i = t->cap; i < ncap; i++)
			n[i].agg = LIVE_EMPTY;
		t->s = n;
		t->cap = ncap;
	}
	return &t->s[slot];
}

static void note_time(struct replay *r, uint64_t t)
{
	if (!r->have_time || t < r->first_time)
		r->first_time = t;
	if (!r->have_time || t > r->last_time)
		r->last_time = t;
	r->have_time = true;
}

/* What one sampled block adds to the variance of an estimate of a count (per object) and
 * of bytes: a block is sampled with probability p and stands for w = 1/p blocks, so the
 * Horvitz-Thompson estimator's unbiased variance estimate gets (1 - p) / p^2 = w(w - 1)
 * per block, times its size squared for bytes. Blocks are sampled independently (Poisson
 * sampling of bytes is memoryless), so variances add. Exact recordings (w = 1) add 0. */
static double sample_variance(double w)
{
	return w > 1 ? w * (w - 1) : 0;
}

/* Frees a live block. Returns false when SLOT holds none. */
static bool release(struct replay *r, uint64_t slot)
{
	struct live_slot *e = slot < r->live.cap ? &r->live.s[slot] : NULL;
	struct agg *a;
	struct process *p;
	double w, bytes;

	if (!e || e->agg == LIVE_EMPTY)
		return false;
	a = &r->aggs[e->agg];
	w = e->weight / (double)HS_WEIGHT_ONE;
	bytes = (double)a->size * w;
	a->inuse_objects -= w;
	a->inuse_space -= bytes;
	a->var_inuse_objects -= sample_variance(w);
	a->var_inuse_space -= sample_variance(w) * (double)a->size * (double)a->size;
	r->live_bytes -= bytes;
	r->live_count -= w;
	r->live_slots--;
	/* The recorder names blocks per process, so the freeing process is the block's own. */
	p = replay_get_process(r, a->pid);
	p->live_bytes -= bytes;
	p->live_count -= w;
	p->free_bytes += bytes;
	p->free_count += w;
	e->agg = LIVE_EMPTY;
	return true;
}

static void on_alloc(struct replay *r, const struct replay_event *rec)
{
	bool restored = rec->kind & HS_KIND_RESTORED;
	double w = rec->weight / (double)HS_WEIGHT_ONE, bytes = (double)rec->size * w;
	struct process *p = replay_get_process(r, rec->pid);
	uint32_t ai = agg_get(r, rec->pid, rec->tid, rec->stack_id, rec->size);
	struct live_slot *e;
	struct agg *a = &r->aggs[ai];

	/* An occupied slot: the recorder saw the block's address allocated again before it read
	 * the block's free (lost, or still in another thread's ring). The old block is gone
	 * either way: freed, by an implied free, counted so that allocated - freed = live. */
	if (rec->slot < r->live.cap && r->live.s[rec->slot].agg != LIVE_EMPTY) {
		const struct live_slot *old = &r->live.s[rec->slot];
		double ow = old->weight / (double)HS_WEIGHT_ONE;
		struct process *op = replay_get_process(r, r->aggs[old->agg].pid);

		op->implied_free_count += ow;
		op->implied_free_bytes += ow * (double)r->aggs[old->agg].size;
		r->implied_frees++;
		release(r, rec->slot);
		p = replay_get_process(r, rec->pid); /* the table may have grown */
	}
	if (restored) {
		p->free_bytes -= bytes;
		p->free_count -= w;
		r->restored++;
	} else {
		a->alloc_objects += w;
		a->alloc_space += bytes;
		a->var_alloc_objects += sample_variance(w);
		a->var_alloc_space += sample_variance(w) * (double)rec->size * (double)rec->size;
		p->alloc_bytes += bytes;
		p->alloc_count += w;
		if (rec->size > p->largest)
			p->largest = rec->size;
		r->allocs++;
	}
	a->inuse_objects += w;
	a->inuse_space += bytes;
	a->var_inuse_objects += sample_variance(w);
	a->var_inuse_space += sample_variance(w) * (double)rec->size * (double)rec->size;
	r->live_bytes += bytes;
	r->live_count += w;
	if (++r->live_slots > r->peak_live_slots)
		r->peak_live_slots = r->live_slots;
	p->live_bytes += bytes;
	p->live_count += w;
	if (p->live_bytes > p->peak_bytes) {
		p->peak_bytes = p->live_bytes;
		p->peak_time = rec->time;
	}
	if (r->live_bytes > r->peak_bytes && rec->time >= r->peak_lo && rec->time <= r->peak_hi) {
		r->peak_bytes = r->live_bytes;
		r->peak_time = rec->time;
		r->peak_event = r->records;
	}
	e = live_at(r, rec->slot);
	e->agg = ai;
	e->time = rec->time;
	e->weight = (uint32_t)rec->weight;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct progress {
	bool on;
	double start, last;
};

static void progress_tick(struct progress *pg, uint64_t offset, uint64_t file_size, const char *path)
{
	double t = now_s();

	if (!pg->on || t - pg->last < 0.25 || t - pg->start < 1.0)
		return;
	pg->last = t;
	fprintf(stderr, "\rheapsnap-analyze: reading %s: %3.0f%%", path,
		100.0 * (double)offset / (double)(file_size + 1));
}

static void progress_done(struct progress *pg)
{
	if (pg->on && pg->last > 0)
		fputs("\r\033[K", stderr);
}

static void apply_event(struct replay *r, const struct replay_event *rec)
{
	if (r->filter && !replay_get_process(r, rec->pid)->selected)
		return;
	if (r->py_final_procs && replay_get_process(r, rec->pid)->py_final) {
		struct live_slot *e = rec->slot < r->live.cap ? &r->live.s[rec->slot] : NULL;

		/* Left out; a free's block stays live, its slot given up (no other process's
		 * allocation there frees it by implication). */
		r->py_final_events++;
		if (rec->type == HS_REC_FREE && e && e->agg != LIVE_EMPTY && r->aggs[e->agg].pid == rec->pid) {
			r->parked = replay_grow(r, r->parked, r->nr_parked, sizeof(*r->parked));
			r->parked[r->nr_parked++] = *e;
			e->agg = LIVE_EMPTY;
		}
		return;
	}
	if (r->temp_on)
		replay_temporary_note(r, rec);
	r->events++;
	note_time(r, rec->time);
	if (rec->type != HS_REC_FREE) {
		on_alloc(r, rec);
	} else if (release(r, rec->slot)) {
		r->frees++;
	} else {
		r->unknown_frees++;
		replay_get_process(r, rec->pid)->unknown_frees++;
	}
	if (r->tl_on)
		replay_timeline_note(r, rec->time, true);
	if (r->temp_on)
		replay_temporary_after(r, rec);
}

/* Events wait here a few records, their live-table slot prefetched: with a large live set
 * a free's slot is a cache miss, and overlapping them saves about 4% on 1M live blocks.
 * The events stay in the decoder's batch meanwhile. */
#define LOOKAHEAD 32

struct event_queue {
	const struct replay_event *ev[LOOKAHEAD];
	uint64_t index[LOOKAHEAD];
	unsigned head, n;
};

static void queue_drain(struct replay *r, struct event_queue *q, unsigned keep)
{
	while (q->n > keep) {
		uint64_t saved = r->records;

		r->records = q->index[q->head]; /* peak_event names the record that made the peak */
		apply_event(r, q->ev[q->head]);
		r->records = saved;
		q->head = (q->head + 1) % LOOKAHEAD;
		q->n--;
	}
}

static void queue_push(struct replay *r, struct event_queue *q, const struct replay_event *ev)
{
	unsigned tail = (q->head + q->n) % LOOKAHEAD;

	if (ev->slot < r->live.cap)
		__builtin_prefetch(&r->live.s[ev->slot]);
	q->ev[tail] = ev;
	q->index[tail] = r->records;
	q->n++;
	queue_drain(r, q, LOOKAHEAD - 1);
}

/* Calls the target's checkpoint for each moment the replay has reached before an event at
 * TIME (UINT64_MAX: the end), with every event before it applied. */
static void checkpoints_reached(struct replay *r, struct event_queue *q, uint64_t time)
{
	const struct replay_target *t = r->target;

	while (t && t->kind == STOP_END && r->next_cp < t->nr_checkpoints) {
		const struct replay_checkpoint *c = &t->checkpoints[r->next_cp];

		if (time != UINT64_MAX && r->records < c->record && time <= c->time)
			return;
		queue_drain(r, q, 0);
		t->checkpoint(r, r->next_cp++, t->checkpoint_ctx);
	}
}

/* The records of one pass, from D. */
static int pass_records(struct replay *r, struct decoder *d, uint64_t stop_index, uint64_t stop_time, bool events,
			bool *stopped_out)
{
	struct progress pg = {.on = isatty(2), .start = now_s()};
	struct event_queue q = {0};
	struct decoded item;
	bool stopped = false;
	int ret;

	for (;;) {
		const struct replay_event *ev;

		ret = decoder__next(d, &item);
		if (ret != 1)
			break;
		ev = item.ev;
		r->offset = item.offset;
		if ((r->records & 0xffff) == 0)
			progress_tick(&pg, item.offset, r->file_size, r->path);
		if (ev && !stopped && events)
			checkpoints_reached(r, &q, ev->time);
		if (!stopped && (r->records >= stop_index || (ev && ev->time > stop_time))) {
			queue_drain(r, &q, 0);
			stopped = true;
			r->stop_time = stop_time != UINT64_MAX ? stop_time : r->last_time;
		}
		if (ev) {
			if (!stopped && events)
				queue_push(r, &q, ev);
		} else {
			const struct hs_record *rec = item.meta;

			/* Metadata keeps its place among the events. */
			queue_drain(r, &q, 0);
			replay_meta__apply(r, rec, !stopped);
			if (!stopped && rec->type != HS_REC_SESSION && rec->type != HS_REC_STACK &&
			    rec->type != HS_REC_THREAD_NAME && rec->type != HS_REC_PROBE)
				note_time(r, rec->time);
		}
		r->records++;
		/* The decoder reuses a batch once asked for the next: its events leave the queue first. */
		if (item.batch_end)
			queue_drain(r, &q, 0);
	}
	queue_drain(r, &q, 0);
	if (events && ret == 0)
		checkpoints_reached(r, &q, UINT64_MAX);
	progress_done(&pg);
	*stopped_out = stopped;
	return ret;
}

/* One pass. Events stop at STOP_INDEX records or STOP_TIME; metadata is read to the end. */
static int pass(struct replay *r, struct record_reader *rd, uint64_t stop_index, uint64_t stop_time, bool events)
{
	jmp_buf oom;
	struct decoder *d;
	bool stopped = false;
	int ret;

	if (decoder__start(rd, &d))
		return fail(r, EXIT_FAIL, "%s: out of memory", r->path);
	if (setjmp(oom)) {
		/* From replay_nomem(): D and R are as they were (neither is changed in this frame). */
		r->oom = NULL;
		decoder__free(d);
		replay_timeline_finish(r);
		if (r->refused)
			return EXIT_FAIL;
		return fail(r, EXIT_FAIL, "%s: out of memory after %" PRIu64 " records", r->path, r->records);
	}
	r->oom = &oom;
	ret = pass_records(r, d, stop_index, stop_time, events, &stopped);
	r->oom = NULL;
	decoder__free(d);
	replay_timeline_finish(r);
	r->stopped_early = stopped;
	if (!stopped)
		r->stop_time = r->last_time;
	r->status = record_reader__status(rd);
	r->frames = record_reader__frames(rd);
	r->skipped = record_reader__skipped_records(rd);
	if (ret < 0 || r->status == HS_READ_IO)
		return fail(r, EXIT_FAIL, "%s", record_reader__error(rd));
	if (r->status == HS_READ_CORRUPT || r->status == HS_READ_TRUNCATED)
		snprintf(r->error, sizeof(r->error), "%s", record_reader__error(rd));
	return EXIT_OK;
}

/* A fresh replay of PATH for TARGET: what the target asks of every event, decided once. */
static void start_state(struct replay *r, const char *path, const struct replay_target *target)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	r->target = target;
	if (target && (target->nr_pids || target->comm))
		r->filter = target;
	r->tl_on = target && target->timeline;
	r->temp_on = target && target->temporary;
	r->peak_hi = UINT64_MAX;
}

static void reset_state(struct replay *r)
{
	const char *path = r->path;
	const struct replay_target *target = r->target;

	replay__free(r);
	start_state(r, path, target);
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int footer_times(const struct hs_record *rec, void *ctx)
{
	struct replay *r = ctx;

	for (uint32_t i = 0; rec->type == HS_REC_FRAME_INDEX && i < rec->frame_index.nr; i++) {
		const struct hs_frame_index_entry *e = &rec->frame_index.entries[i];

		note_time(r, e->first_time);
		note_time(r, e->last_time);
	}
	return 0;
}

/* SECONDS in ticks of TICK_NS, at most UINT64_MAX (converting a larger double is undefined). */
static uint64_t seconds_to_ticks(double seconds, uint64_t tick_ns)
{
	/* A relative hair more: 0.3s is 299999.99999999994 us in doubles, and a moment printed
	 * to the tick (live's headers) must read back as that tick. */
	double t = seconds * 1e9 / (double)tick_ns * (1 + 1e-12);

	if (!(t > 0))
		return 0;
	return t >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)t;
}

/* The snapshot TARGET names: its number from 1, its label, or "last"; NULL when none. */
static struct snapshot_info *find_snapshot(struct replay *r, const struct replay_target *target)
{
	if (all_digits(target->snapshot)) {
		unsigned long n = strtoul(target->snapshot, NULL, 10);

		return n >= 1 && n <= r->nr_snaps ? &r->snaps[n - 1] : NULL;
	}
	for (uint32_t i = 0; i < r->nr_snaps; i++)
		if (!strcmp(r->snaps[i].label, target->snapshot))
			return &r->snaps[i];
	if (!strcmp(target->snapshot, "last") && r->nr_snaps)
		return &r->snaps[r->nr_snaps - 1];
	return NULL;
}

/* A recorder's peak snapshot names the peak by its time, written when the run ended. Version 3
 * files time events to a quantum (HS_TIME_QUANTUM_NS) only, so the blocks made and freed within
 * the peak's quantum cannot be told apart by time: the peak is found again among the events
 * within a quantum of it, the highest live total there, and named by its record. */
static int place_peak(struct replay *r, struct record_reader *rd, uint64_t t, uint64_t *stop_index)
{
	char desc[sizeof(r->stop_desc)];
	uint64_t q = r->tick_ns ? HS_TIME_QUANTUM_NS / r->tick_ns + 1 : 1;
	int ret;

	memcpy(desc, r->stop_desc, sizeof(desc));
	reset_state(r);
	record_reader__rewind(rd);
	r->peak_lo = t > q ? t - q : 0;
	r->peak_hi = t + q;
	ret = pass(r, rd, UINT64_MAX, UINT64_MAX, true);
	if (ret)
		return ret;
	if (r->peak_bytes > 0)
		*stop_index = r->peak_event + 1;
	memcpy(r->stop_desc, desc, sizeof(desc));
	return 0;
}

/* For a snapshot or the peak: a first pass finds where to stop (*STOP_INDEX or *STOP_TIME),
 * then the state is reset, its description kept, for the pass that counts. */
static int find_stop(struct replay *r, struct record_reader *rd, const char *path, const struct replay_target *target,
		     uint64_t *stop_index, uint64_t *stop_time)
{
	char desc[sizeof(r->stop_desc)];
	int ret = pass(r, rd, UINT64_MAX, UINT64_MAX, target->kind == STOP_PEAK);

	if (ret)
		return ret;
	if (target->kind == STOP_PEAK) {
		*stop_index = r->peak_event + 1;
		snprintf(r->stop_desc, sizeof(r->stop_desc), "peak (%.0f bytes live at %.3fs)", r->peak_bytes,
			 replay__seconds(r, r->peak_time));
	} else {
		struct snapshot_info *sn = find_snapshot(r, target);

		if (!sn)
			return fail(r, EXIT_NODATA, "%s: no snapshot '%s' (the file has %u; `heapsnap-analyze info` lists them)%s",
				    path, target->snapshot, r->nr_snaps,
				    !strcmp(target->snapshot, "peak")
					    ? "; it was recorded without --snapshot-at-peak: --peak replays to the "
					      "peak the analyzer finds itself"
					    : "");
		if (sn->record_index != UINT64_MAX)
			*stop_index = sn->record_index;
		else
			*stop_time = sn->time;
		snprintf(r->stop_desc, sizeof(r->stop_desc), "snapshot '%s' at %.3fs", sn->label,
			 replay__seconds(r, sn->time));
		if (sn->record_index == UINT64_MAX && record_reader__major(rd) >= 3) {
			if ((ret = place_peak(r, rd, sn->time, stop_index)))
				return ret;
			if (*stop_index != UINT64_MAX)
				*stop_time = UINT64_MAX;
		}
	}
	memcpy(desc, r->stop_desc, sizeof(desc));
	reset_state(r);
	memcpy(r->stop_desc, desc, sizeof(desc));
	r->file_size = record_reader__file_size(rd);
	r->format_major = record_reader__major(rd);
	r->format_minor = record_reader__minor(rd);
	record_reader__rewind(rd);
	return 0;
}

/* After the pass that counts: what it found that makes the replay fail, or EXIT_OK. */
static int check_replayed(struct replay *r, const char *path, const struct replay_target *target, uint64_t stop_time)
{
	if (!r->have_session) {
		char why[sizeof(r->error)];

		snprintf(why, sizeof(why), "%s", r->error);
		return fail(r, r->status == HS_READ_CORRUPT ? EXIT_CORRUPT : EXIT_NODATA, "no session header in %s%s%s",
			    path, why[0] ? "; " : "", why);
	}
	/* Past the end only when no event came after the time: last_time is then the last
	 * event's, not the last one replayed before the time (which is always before it). */
	if (target->kind == STOP_TIME && !r->stopped_early && stop_time > r->last_time && r->status == HS_READ_END)
		return fail(r, EXIT_NODATA, "%s: --at %gs is past the end of the recording (%.3fs); omit --at for the end",
			    path, target->at_seconds, replay__seconds(r, r->last_time));
	if (r->status == HS_READ_CORRUPT)
		return EXIT_CORRUPT;
	if (r->events == 0 && target->kind == STOP_END && r->nr_snaps == 0)
		return fail(r, EXIT_NODATA, "%s: the recording holds no allocation events", path);
	return 0;
}

/* The default stopped processes at their finalization: say so, and where. A recording of
 * one Python process stops there; beside others (those without an interpreter, or whose
 * interpreter never finalized: os._exit, a signal) the others go to the end. */
static void py_final_desc(struct replay *r)
{
	uint32_t others = 0;
	uint64_t last = 0;

	for (uint32_t i = 0; i < r->nr_procs; i++) {
		const struct process *p = &r->procs[i];

		if (p->py_final && p->py_final_time > last)
			last = p->py_final_time;
		else if (!p->py_final && p->selected && (p->alloc_count > 0 || p->free_count > 0))
			others++;
	}
	if (!others) {
		r->stop_time = last;
		if (r->py_final_procs == 1)
			snprintf(r->stop_desc, sizeof(r->stop_desc),
				 "before Python finalization (%.3fs; --at end for the end of the recording)",
				 replay__seconds(r, last));
		else
			snprintf(r->stop_desc, sizeof(r->stop_desc),
				 "before Python finalization (%u processes, each at its own, the last at %.3fs; "
				 "--at end for the end of the recording)",
				 r->py_final_procs, replay__seconds(r, last));
	} else {
		snprintf(r->stop_desc, sizeof(r->stop_desc),
			 "before Python finalization (%u process%s, each at its own; %u other%s at the end of "
			 "the recording; --at end for the end of every one)",
			 r->py_final_procs, r->py_final_procs == 1 ? "" : "es", others, others == 1 ? "" : "s");
	}
}

int replay__run(struct replay *r, const char *path, const struct replay_target *target)
{
	bool events = true;
	struct record_reader *rd;
	char err[512];
	uint64_t stop_index = UINT64_MAX, stop_time = UINT64_MAX;
	int ret;

	start_state(r, path, target);
	ret = record_reader__open(path, &rd, err, sizeof(err));
	if (ret)
		return fail(r, EXIT_FAIL, "%s", err);
	r->file_size = record_reader__file_size(rd);
	r->format_major = record_reader__major(rd);
	r->format_minor = record_reader__minor(rd);

	if (target->kind == STOP_SNAPSHOT || target->kind == STOP_PEAK) {
		ret = find_stop(r, rd, path, target, &stop_index, &stop_time);
		if (ret)
			goto out;
	} else if (target->kind == STOP_TIME) {
		stop_time = seconds_to_ticks(target->at_seconds, 1000); /* refined below once tick_ns is known */
		snprintf(r->stop_desc, sizeof(r->stop_desc), "%.3fs", target->at_seconds);
	} else {
		/* Metadata only, when the footer gives the time range the events would. */
		events = !(target->kind == STOP_META && record_reader__footer(rd, footer_times, r) == 1);
		snprintf(r->stop_desc, sizeof(r->stop_desc), "end of recording");
	}
	if (target->kind == STOP_TIME) {
		/* The session header comes first; read it to turn seconds into ticks. */
		struct hs_record rec;

		if (record_reader__next(rd, &rec) == 1 && rec.type == HS_REC_SESSION && rec.session.tick_ns)
			stop_time = seconds_to_ticks(target->at_seconds, rec.session.tick_ns);
		record_reader__rewind(rd);
	}
	ret = pass(r, rd, stop_index, stop_time, events);
	/* The end of a file the recorder never finished is where it was cut, not the end of the
	 * recording: the header says so, not only a warning on stderr. */
	if (!ret && target->kind == STOP_END && (r->status == HS_READ_TRUNCATED || r->status == HS_READ_CORRUPT))
		snprintf(r->stop_desc, sizeof(r->stop_desc), "%s at %.3fs (%s)",
			 r->status == HS_READ_TRUNCATED ? "end of the file" : "end of the readable part",
			 replay__seconds(r, r->last_time),
			 r->status == HS_READ_TRUNCATED ? "cut short: the recorder did not finish"
							: "the file is damaged after it");
	if (!ret && r->py_final_procs)
		py_final_desc(r);
	if (!ret)
		ret = check_replayed(r, path, target, stop_time);
out:
	record_reader__free(rd);
	return ret;
}

void replay__for_each_live(const struct replay *r, void (*cb)(const struct agg *a, uint64_t time, double w, void *ctx),
			   void *ctx)
{
	for (size_t i = 0; i < r->live.cap; i++) {
		const struct live_slot *e = &r->live.s[i];

		if (e->agg != LIVE_EMPTY)
			cb(&r->aggs[e->agg], e->time, e->weight / (double)HS_WEIGHT_ONE, ctx);
	}
	for (uint64_t i = 0; i < r->nr_parked; i++)
		cb(&r->aggs[r->parked[i].agg], r->parked[i].time, r->parked[i].weight / (double)HS_WEIGHT_ONE, ctx);
}

void replay__free(struct replay *r)
{
	free(r->tl);
	hmap_free(&r->temp_last);
	hmap_free(&r->temp_undo);
	free(r->tool_version);
	free(r->hostname);
	free(r->kernel);
	free(r->cmdline);
	free(r->via);
	for (uint32_t i = 0; i < r->nr_probes; i++) {
		free((char *)r->probes[i].symbol);
		free((char *)r->probes[i].path);
	}
	free(r->probes);
	for (uint32_t i = 0; i < r->nr_procs; i++) {
		free(r->procs[i].comm);
		free(r->procs[i].cmdline);
		free(r->procs[i].exe);
	}
	free(r->procs);
	hmap_free(&r->proc_idx);
	hmap_free(&r->open_maps);
	hmap_free(&r->counter_idx);
	for (uint32_t i = 0; i < r->nr_maps; i++)
		free(r->maps[i].path);
	free(r->maps);
	hmap_for_each(&r->threads, it) free((char *)(uintptr_t)it->val);
	hmap_free(&r->threads);
	for (uint64_t i = 0; i < r->nr_stack_slots; i++) {
		free(r->stacks[i]);
		free(r->dwarf[i].data);
	}
	free(r->stacks);
	free(r->dwarf);
	hmap_free(&r->stack_idx);
	free(r->aggs);
	hmap_free(&r->agg_idx);
	free(r->live.s);
	free(r->parked);
	for (uint32_t i = 0; i < r->nr_snaps; i++)
		free(r->snaps[i].label);
	free(r->snaps);
	for (uint32_t i = 0; i < r->nr_counters; i++)
		free(r->counters[i].name);
	free(r->counters);
	py_codes__free(&r->py);
}

/* ---- following ---- */

/* Events held back at most: past it the oldest is applied anyway (a file whose times go
 * back further than that was not written by a recorder), and the updates are no longer
 * exactly what --at would show, which is said. 16 MiB. */
#define FOLLOW_HELD_MAX (1u << 18)

struct replay_follow {
	struct record_reader *rd;
	struct replay_event *held; /* a ring, in file order: the events after the moment */
	uint64_t *held_index;
	size_t head, n, cap;
	uint64_t t_max;     /* the latest event time read */
	uint64_t applied_max; /* the latest time of an event applied */
	uint64_t horizon;   /* the latest HORIZON: no event still to come is before it */
	uint64_t hold_from; /* events at or after it stay held (replay__follow_hold_from) */
	bool have_event, have_applied, inexact;
};

int replay__follow_open(struct replay *r, const char *path, const struct replay_target *target,
			struct replay_follow **out)
{
	struct replay_follow *f;
	char err[512];
	int ret;

	start_state(r, path, target);
	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return fail(r, EXIT_FAIL, "%s: out of memory", path);
	ret = record_reader__follow(path, &f->rd, err, sizeof(err));
	if (ret) {
		free(f);
		return fail(r, EXIT_FAIL, "%s", err);
	}
	snprintf(r->stop_desc, sizeof(r->stop_desc), "live");
	r->following = true;
	f->hold_from = UINT64_MAX;
	*out = f;
	return EXIT_OK;
}

static void held_apply_head(struct replay *r, struct replay_follow *f)
{
	uint64_t saved = r->records;
	const struct replay_event *ev = &f->held[f->head];

	r->records = f->held_index[f->head]; /* peak_event names the record that made the peak */
	if (!f->have_applied || ev->time > f->applied_max)
		f->applied_max = ev->time;
	f->have_applied = true;
	apply_event(r, ev);
	r->records = saved;
	f->head = (f->head + 1) % f->cap;
	f->n--;
}

/* Applies the events held whose time is before UPTO (and before hold_from), up to the
 * first one that is not. */
static void held_apply_before(struct replay *r, struct replay_follow *f, uint64_t upto)
{
	if (upto > f->hold_from)
		upto = f->hold_from;
	while (f->n && f->held[f->head].time < upto)
		held_apply_head(r, f);
}

static void held_push(struct replay *r, struct replay_follow *f, const struct replay_event *ev)
{
	if (f->n == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 1024;
		struct replay_event *h;
		uint64_t *ix;

		if (f->cap >= FOLLOW_HELD_MAX) {
			held_apply_head(r, f);
			f->inexact = true;
		} else {
			h = replay_realloc(r, NULL, ncap * sizeof(*h));
			ix = malloc(ncap * sizeof(*ix));
			if (!ix) {
				free(h);
				replay_nomem(r);
			}
			for (size_t i = 0; i < f->n; i++) {
				h[i] = f->held[(f->head + i) % f->cap];
				ix[i] = f->held_index[(f->head + i) % f->cap];
			}
			free(f->held);
			free(f->held_index);
			f->held = h;
			f->held_index = ix;
			f->head = 0;
			f->cap = ncap;
		}
	}
	f->held[(f->head + f->n) % f->cap] = *ev;
	f->held_index[(f->head + f->n) % f->cap] = r->records;
	f->n++;
}

/* Up to MAX records into R; record_reader__next's last return. */
static int follow_records(struct replay_follow *f, struct replay *r, uint64_t max)
{
	struct hs_record rec;
	int ret = 1;

	for (uint64_t i = 0; i < max; i++) {
		ret = record_reader__next(f->rd, &rec);
		if (ret != 1)
			break;
		r->offset = record_reader__offset(f->rd);
		if (rec.type == HS_REC_ALLOC || rec.type == HS_REC_ALLOC_SAMPLED || rec.type == HS_REC_FREE) {
			struct replay_event ev = {.time = rec.time, .slot = rec.alloc.slot, .size = rec.alloc.size,
						  .stack_id = rec.alloc.stack_id, .weight = rec.alloc.weight,
						  .type = rec.type, .pid = rec.pid, .tid = rec.tid, .kind = rec.alloc.kind};

			/* A later moment: every event before this one is before it. */
			if (!f->have_event || ev.time > f->t_max) {
				held_apply_before(r, f, UINT64_MAX);
				f->t_max = ev.time;
				f->have_event = true;
			}
			held_push(r, f, &ev);
		} else {
			if (rec.type == HS_REC_HORIZON && rec.time > f->horizon) {
				f->horizon = rec.time;
				held_apply_before(r, f, rec.time);
			}
			replay_meta__apply(r, &rec, true);
			if (rec.type != HS_REC_SESSION && rec.type != HS_REC_STACK && rec.type != HS_REC_THREAD_NAME &&
			    rec.type != HS_REC_PROBE)
				note_time(r, rec.time);
		}
		r->records++;
	}
	return ret;
}

int replay__follow_feed(struct replay_follow *f, struct replay *r, uint64_t max, bool *ended)
{
	jmp_buf oom;
	int ret;

	*ended = false;
	if (setjmp(oom)) {
		r->oom = NULL;
		if (r->refused)
			return EXIT_FAIL;
		return fail(r, EXIT_FAIL, "%s: out of memory after %" PRIu64 " records", r->path, r->records);
	}
	r->oom = &oom;
	ret = follow_records(f, r, max);
	r->oom = NULL;
	r->frames = record_reader__frames(f->rd);
	r->skipped = record_reader__skipped_records(f->rd);
	r->format_major = record_reader__major(f->rd);
	r->format_minor = record_reader__minor(f->rd);
	r->file_size = record_reader__file_size(f->rd);
	if (ret == 1 || record_reader__waiting(f->rd))
		return EXIT_OK;
	r->status = record_reader__status(f->rd);
	*ended = true;
	if (ret < 0 || r->status == HS_READ_IO)
		return fail(r, EXIT_FAIL, "%s", record_reader__error(f->rd));
	if (r->status == HS_READ_CORRUPT || r->status == HS_READ_TRUNCATED)
		snprintf(r->error, sizeof(r->error), "%s", record_reader__error(f->rd));
	return EXIT_OK;
}

bool replay__follow_waiting(const struct replay_follow *f)
{
	return record_reader__waiting(f->rd);
}

bool replay__follow_wait(struct replay_follow *f, int timeout_ms, int also_fd)
{
	return record_reader__wait(f->rd, timeout_ms, also_fd);
}

double replay__follow_moment(struct replay_follow *f, struct replay *r, bool final)
{
	uint64_t t;
	jmp_buf oom;

	if (final) {
		r->oom = &oom;
		if (!setjmp(oom))
			held_apply_before(r, f, UINT64_MAX);
		r->oom = NULL;
	}
	/* The moment: after every event applied, before the first one held (later than it),
	 * and before the horizon when none is held. */
	if (f->n)
		t = f->held[f->head].time ? f->held[f->head].time - 1 : 0;
	else
		t = f->horizon ? f->horizon - 1 : 0;
	if (final)
		t = f->horizon > f->applied_max + 1 ? f->horizon - 1 : f->applied_max;
	else if (f->have_applied && t < f->applied_max)
		t = f->applied_max;
	r->stop_time = t;
	snprintf(r->stop_desc, sizeof(r->stop_desc), "%s at %.*fs%s", final ? "live, the end," : "live",
		 r->tick_ns && r->tick_ns % 1000 == 0 ? 6 : 9, replay__seconds(r, t),
		 f->inexact ? " (events went back in time further than the follower holds: approximate)" : "");
	return replay__seconds(r, t);
}

void replay__follow_hold_from(struct replay_follow *f, uint64_t t)
{
	f->hold_from = t;
}

uint64_t replay__follow_latest(const struct replay_follow *f)
{
	uint64_t t = f->have_event ? f->t_max : 0;

	return f->horizon > t ? f->horizon : t;
}

bool replay__follow_reached(const struct replay_follow *f, uint64_t t)
{
	return (f->have_event && f->t_max >= t) || f->horizon >= t;
}

double replay__follow_cut(struct replay_follow *f, struct replay *r, uint64_t t, const char *desc)
{
	jmp_buf oom;

	r->oom = &oom;
	if (!setjmp(oom))
		held_apply_before(r, f, t);
	r->oom = NULL;
	r->stop_time = t ? t - 1 : 0;
	snprintf(r->stop_desc, sizeof(r->stop_desc), "%s", desc);
	return replay__seconds(r, r->stop_time);
}

void replay__follow_resume(struct replay_follow *f, struct replay *r)
{
	(void)f;
	replay__maps_unsort(r);
}

void replay__follow_free(struct replay_follow *f)
{
	if (!f)
		return;
	record_reader__free(f->rd);
	free(f->held);
	free(f->held_index);
	free(f);
}
