// SPDX-License-Identifier: MIT
/* Events into records: stack interning, the live set that names blocks by slot, the
 * handling of each event type, counters, snapshots and RSS. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nspid.h"
#include "pipeline.h"
#include "processes.h"
#include "procfs.h"
#include "sampling.h"
#include "session.h"
#include "py_code.h"
#include "way.h"

/* ---- events ---- */

static uint64_t stack_id(struct session *s, uint64_t hash)
{
	bool created;
	struct hmap_slot *slot;

	/* Allocations come in runs from one call path: skip the table for a repeat. */
	if (hash == s->last_hash && s->last_id)
		return s->last_id;
	slot = hmap_put(&s->stacks, hash, 0, &created);
	if (!slot) {
		s->out.err = -ENOMEM;
		return 0;
	}
	if (created)
		slot->val = ++s->next_stack_id << 1;
	s->last_hash = hash;
	s->last_id = slot->val >> 1;
	return s->last_id;
}

static void update_peak(struct session *s, uint64_t t)
{
	if (s->live_est > s->peak_est) {
		s->peak_est = s->live_est;
		s->peak_time = t;
	}
}

static uint32_t pool_get(struct session *s)
{
	uint32_t i;

	if (s->pool_free != UINT32_MAX) {
		i = s->pool_free;
		s->pool_free = s->pool[i].next_free;
		return i;
	}
	if (s->nr_pool == s->cap_pool) {
		struct live_info *np;

		s->cap_pool = s->cap_pool ? s->cap_pool * 2 : 4096;
		np = realloc(s->pool, sizeof(*np) * s->cap_pool);
		if (!np) {
			s->out.err = -ENOMEM;
			return 0;
		}
		s->pool = np;
	}
	return s->nr_pool++;
}

static void pool_put(struct session *s, uint32_t i)
{
	s->pool[i].next_free = s->pool_free;
	s->pool_free = i;
}

/* The block ALLOC describes joins the live set and gets its slot. Returns false when the
 * record should not be written (a restore with nothing to restore). */
static bool ulive_alloc(struct session *s, struct hs_record *r, uint32_t tid)
{
	struct hmap_slot *pend;
	struct ptrmap_ent *slot;
	bool created;
	uint32_t i;

	pend = hmap_find(&s->pending, r->pid, tid);
	if (r->alloc.kind & HS_KIND_RESTORED) {
		/* realloc failed: the block it released at entry is the caller's again. */
		if (!pend)
			return false;
		i = (uint32_t)pend->val;
		hmap_remove_slot(&s->pending, pend);
		r->alloc.size = s->pool[i].size;
		r->alloc.stack_id = s->pool[i].stack_id;
		r->alloc.kind = s->pool[i].kind | HS_KIND_RESTORED;
	} else {
		if (pend && (r->alloc.kind & ~HS_KIND_RESTORED) == HS_KIND_REALLOC) {
			/* The realloc succeeded: the slot it held back is free now. */
			pool_put(s, (uint32_t)pend->val);
			hmap_remove_slot(&s->pending, pend);
		}
		i = UINT32_MAX;
	}
	slot = ptrmap_put(&s->ulive, r->pid, r->alloc.ptr, &created);
	if (!slot) {
		s->out.err = -ENOMEM;
		return false;
	}
	if (!created) {
		/* A live address handed out again: its free was lost (or is still in another
		 * thread's ring). The new block takes the old one's slot, which tells the analyzer
		 * the old block is freed by implication; the live estimate drops it too, so that
		 * "live at the end" is the analyzer's live total. */
		if (i != UINT32_MAX)
			pool_put(s, i);
		i = (uint32_t)slot->val;
		s->live_est -= (double)s->pool[i].size * (double)sampling_weight(s->o->sample_rate, s->pool[i].size) /
			       HS_WEIGHT_ONE;
	} else if (i == UINT32_MAX) {
		i = pool_get(s);
		if (s->out.err) {
			ptrmap_remove(&s->ulive, slot);
			return false;
		}
	}
	if (!(r->alloc.kind & HS_KIND_RESTORED))
		s->pool[i] = (struct live_info){.size = r->alloc.size, .stack_id = r->alloc.stack_id,
						.kind = r->alloc.kind};
	slot->val = i;
	r->alloc.slot = i;
	return true;
}

/* A free. Returns the block's size, or -1 for a pointer not live. *SLOT gets its slot. */
static int64_t ulive_free(struct session *s, uint32_t pid, uint32_t tid, uint64_t ptr, bool by_realloc,
			  uint64_t *slot_out)
{
	struct ptrmap_ent *slot = ptrmap_find(&s->ulive, pid, ptr);
	struct hmap_slot *pend;
	uint32_t i;
	bool created;

	if (!slot) {
		s->user_unknown_frees++;
		return -1;
	}
	i = (uint32_t)slot->val;
	*slot_out = i;
	ptrmap_remove(&s->ulive, slot);
	if (!by_realloc) {
		pool_put(s, i);
		return (int64_t)s->pool[i].size;
	}
	/* Held back until the realloc returns: if it fails, the block comes back in this slot. */
	pend = hmap_put(&s->pending, pid, tid, &created);
	if (!pend) {
		s->out.err = -ENOMEM;
		return -1;
	}
	if (!created)
		pool_put(s, (uint32_t)pend->val);
	pend->val = i;
	return (int64_t)s->pool[i].size;
}

/* A --stack dwarf window. Identical windows (same registers, same bytes) share one record:
 * a loop allocating from one frame sends the same window again and again. */
static void on_dwarf_event(struct session *s, const struct hs_dwarf_event *e, size_t len)
{
	struct hs_record r = {.type = HS_REC_STACK_DWARF};
	uint64_t h = 0xcbf29ce484222325ull, id;
	struct hmap_slot *slot, *content;
	bool created;

	if (len < offsetof(struct hs_dwarf_event, data) || e->len > HS_MAX_DWARF_BYTES ||
	    len < offsetof(struct hs_dwarf_event, data) + e->len)
		return;
	if (e->used > e->len && e->used > s->dwarf_used_max)
		s->dwarf_used_max = e->used;
	for (int i = 0; i < HS_DWARF_NREGS; i++)
		h = (h ^ e->regs[i]) * 0x100000001b3ull;
	{
		/* Four independent lanes: a window is kilobytes, and one chain of multiplies
		 * would wait on each before the next. */
		uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
		uint32_t i = 0;

		for (; i + 32 <= e->len; i += 32) {
			uint64_t w[4];

			memcpy(w, e->data + i, 32);
			for (int k = 0; k < 4; k++)
				lane[k] = (lane[k] ^ w[k]) * 0x100000001b3ull;
		}
		for (; i + 8 <= e->len; i += 8) {
			uint64_t w;

			memcpy(&w, e->data + i, 8);
			lane[0] = (lane[0] ^ w) * 0x100000001b3ull;
		}
		h = lane[0] ^ (lane[1] * 0x9e3779b97f4a7c15ull) ^ (lane[2] * 0xc2b2ae3d27d4eb4full) ^
		    (lane[3] * 0xd6e8feb86659fd93ull);
	}
	h ^= e->len;
	content = hmap_put(&s->dwarf_windows, h, e->len, &created);
	if (!content) {
		s->out.err = -ENOMEM;
		return;
	}
	slot = hmap_put(&s->stacks, e->key, 0, NULL);
	if (!slot) {
		s->out.err = -ENOMEM;
		return;
	}
	if (slot->val & 1)
		return; /* this capture is in the file already */
	/* An allocation merged ahead of its window (the rings are merged by time only within
	 * MERGE_SLACK_NS, and the window is on the ring of the CPU its entry probe ran on) was
	 * given an id for it already: the window is written under that id, even when the same
	 * window is in the file under another, or the allocation would name no stack. */
	if (slot->val) {
		id = slot->val >> 1;
		if (created)
			content->val = id;
	} else if (!created) {
		slot->val = content->val << 1 | 1; /* the same window is in the file already */
		return;
	} else {
		id = ++s->next_stack_id;
		content->val = id;
	}
	slot->val = id << 1 | 1;
	r.dwarf.id = id;
	r.dwarf.nregs = HS_DWARF_NREGS;
	r.dwarf.regs = (const uint64_t *)e->regs;
	r.dwarf.used = e->used;
	r.dwarf.window = (struct hs_bytes){e->data, e->len};
	write_rec(&s->out, &r);
	s->stacks_written++;
}

static const size_t min_len[] = {
	[HS_EV_ALLOC] = sizeof(struct hs_alloc_event),
	[HS_EV_FREE] = sizeof(struct hs_free_event),
	[HS_EV_STACK] = offsetof(struct hs_stack_event, ips),
	[HS_EV_FORK] = sizeof(struct hs_proc_event),
	[HS_EV_EXEC] = sizeof(struct hs_proc_event),
	[HS_EV_EXIT] = sizeof(struct hs_proc_event),
	[HS_EV_MMAP] = sizeof(struct hs_mmap_event),
	[HS_EV_COMM] = sizeof(struct hs_comm_event),
	[HS_EV_DWARF] = offsetof(struct hs_dwarf_event, data),
	[HS_EV_PYCODE] = offsetof(struct hs_pycode_event, data),
	[HS_EV_MARK] = sizeof(struct hs_mark_event),
};

/* A target in another PID namespace (injected): its events' pids and tids made the host's,
 * in place, before anything reads them (the in-process rings are memory shared with the
 * target, mapped writable here; the target never reads a record back). */
static void nspid_event(struct session *s, struct hs_event_hdr *h, size_t len)
{
	uint32_t ns = h->pid;

	if (h->type == HS_EV_FORK)
		nspid__forget(s->nsx, ns);
	h->pid = nspid__pid(s->nsx, ns);
	h->tid = h->tid == ns ? h->pid : nspid__tid(s->nsx, h->pid, h->tid);
	if ((h->type == HS_EV_FORK || h->type == HS_EV_EXEC || h->type == HS_EV_EXIT) &&
	    len >= offsetof(struct hs_proc_event, exit_code)) {
		struct hs_proc_event *e = (struct hs_proc_event *)h;

		if (e->ppid)
			e->ppid = nspid__pid(s->nsx, e->ppid);
	}
}

static void on_alloc_event(struct session *s, const struct hs_alloc_event *e, uint64_t t)
{
	const struct hs_event_hdr *h = &e->h;
	uint64_t w = sampling_weight(s->o->sample_rate, e->size);
	struct hs_record r; /* not zeroed: the event fills what the writer reads */

	/* Threads are named by HS_EV_COMM from BPF: no /proc read on this path. */
	if (s->o->all && h->pid != s->last_pid) {
		if (!proc_find(s, (pid_t)h->pid))
			track_process(s, (pid_t)h->pid, HS_PROC_ATTACHED, 0, NULL);
		s->last_pid = h->pid;
	}
	r.type = s->o->sample_rate ? HS_REC_ALLOC_SAMPLED : HS_REC_ALLOC;
	r.time = t;
	r.pid = h->pid;
	r.tid = h->tid;
	r.alloc.ptr = e->ptr;
	r.alloc.size = e->size;
	/* A restore's stack comes from the block it restores: BPF sends it sampling, libheapsnap
	 * never (it keeps no stack of a sampled block). */
	r.alloc.stack_id = (h->kind & HS_KIND_FLAG_RESTORED) && (!s->o->sample_rate || !e->stack) ? 0 : stack_id(s, e->stack);
	r.alloc.kind = h->kind;
	r.alloc.weight = w;
	if (s->o->sample_rate && !(h->kind & HS_KIND_FLAG_RESTORED))
		s->sampled_allocs++;
	if (h->stop && hs_cnt_is_stack_stop(h->stop - 1))
		s->stops[h->stop - 1]++;
	if (!ulive_alloc(s, &r, h->tid))
		return;
	write_rec(&s->out, &r);
	s->n_alloc++;
	s->bytes_alloc += (double)r.alloc.size * (double)w / HS_WEIGHT_ONE;
	s->live_est += (double)r.alloc.size * (double)w / HS_WEIGHT_ONE;
	update_peak(s, t);
}

static void on_free_event(struct session *s, const struct hs_free_event *e, uint64_t t)
{
	const struct hs_event_hdr *h = &e->h;
	struct hs_record r; /* not zeroed: the event fills what the writer reads */
	int64_t size;

	size = ulive_free(s, h->pid, h->tid, e->ptr, h->kind & HS_FREE_FLAG_REALLOC, &r.free.slot);
	if (size < 0)
		return; /* allocated before recording began, or by a fork child's parent: counted, not written */
	if (s->o->sample_rate)
		size = (int64_t)e->size;
	r.type = HS_REC_FREE;
	r.time = t;
	r.pid = h->pid;
	r.tid = h->tid;
	r.free.ptr = e->ptr;
	write_rec(&s->out, &r);
	s->n_free++;
	s->live_est -= (double)size * (double)sampling_weight(s->o->sample_rate, (uint64_t)size) / HS_WEIGHT_ONE;
}

static void on_stack_event(struct session *s, const struct hs_stack_event *e, size_t len)
{
	uint64_t id = stack_id(s, e->hash);
	struct hmap_slot *slot = hmap_find(&s->stacks, e->hash, 0);
	struct hs_record r = {.type = HS_REC_STACK};
	uint32_t nr = e->h.nr;

	if (!slot || (slot->val & 1))
		return; /* already in the file: the kernel forgot it and sent it again */
	if (len < offsetof(struct hs_stack_event, ips) + nr * sizeof(uint64_t) || nr > HS_MAX_STACK)
		return;
	slot->val |= 1;
	r.stack.id = id;
	r.stack.nr = nr;
	r.stack.ips = (const uint64_t *)e->ips;
	write_rec(&s->out, &r);
	s->stacks_written++;
}

static void on_comm_event(struct session *s, const struct hs_comm_event *e)
{
	struct hs_record r = {.type = HS_REC_THREAD_NAME, .pid = e->h.pid, .tid = e->h.tid};
	char comm[17];

	memcpy(comm, e->comm, 16);
	comm[16] = 0;
	thread_named(s, (pid_t)e->h.pid, (pid_t)e->h.tid);
	r.thread_name.comm = comm;
	write_rec(&s->out, &r);
}

/* A moment the target marked: a snapshot here, where the merge has handled every event
 * stamped before it. Of a process the session records (a wild write in the memory shared
 * with the target names no other). */
static void on_mark_event(struct session *s, const struct hs_mark_event *e, uint64_t t)
{
	if (e->h.kind == HS_MARK_PY_FINALIZE && proc_find(s, (pid_t)e->h.pid))
		snapshot(s, HS_SNAP_PY_FINALIZE, "python-finalize", t, e->h.pid);
}

int handle_event(struct session *s, const void *data, size_t len)
{
	const struct hs_event_hdr *h = data;
	uint64_t t;

	/* Each event at least as long as its type says: an in-process producer's memory is the
	 * target's, and a wild write there must not make the recorder read past a record. */
	if (len < sizeof(*h) || (h->type < sizeof(min_len) / sizeof(min_len[0]) && len < min_len[h->type]))
		return 0;
	if (s->nsx)
		nspid_event(s, (struct hs_event_hdr *)data, len);
	t = ticks(&s->out, h->ts);
	switch (h->type) {
	case HS_EV_ALLOC:
		on_alloc_event(s, data, t);
		break;
	case HS_EV_FREE:
		on_free_event(s, data, t);
		break;
	case HS_EV_STACK:
		on_stack_event(s, data, len);
		break;
	case HS_EV_DWARF:
		on_dwarf_event(s, data, len);
		break;
	case HS_EV_PYCODE:
		on_pycode_event(s, data, len, t);
		break;
	case HS_EV_COMM:
		on_comm_event(s, data);
		break;
	case HS_EV_MARK:
		on_mark_event(s, data, t);
		break;
	case HS_EV_MMAP:
		on_mmap_event(s, data, t);
		break;
	case HS_EV_FORK:
	case HS_EV_EXEC:
	case HS_EV_EXIT:
		on_proc_event(s, data, t);
		break;
	}
	return s->out.err ? -1 : 0;
}

/* ---- counters, snapshots, RSS ---- */

void read_counters(struct session *s)
{
	if (s->way->read_counters)
		s->way->read_counters(s);
	s->cnt[HS_CNT_UNKNOWN_FREE] += s->user_unknown_frees;
}

/* The counters beside the BPF/shared ones: their number, so that the array is sized by it. */
#define EXTRA_COUNTERS 13

void counter_set__add(struct counter_set *c, const char *name, uint64_t v)
{
	/* A counter added without raising EXTRA_COUNTERS would overflow: refused loudly. */
	if (c->n >= c->cap) {
		fprintf(stderr, "heapsnap-record: internal error: counter %s past EXTRA_COUNTERS, not written\n", name);
		return;
	}
	c->items[c->n++] = (struct hs_counter){name, v};
}

void write_counters(struct session *s, uint32_t type)
{
	struct hs_counter items[HS_CNT__MAX + EXTRA_COUNTERS];
	struct counter_set c = {items, 0, HS_CNT__MAX + EXTRA_COUNTERS};
	struct hs_record r = {.type = type, .time = ticks(&s->out, mono_ns())};

	for (int k = 0; k < HS_CNT__MAX; k++)
		counter_set__add(&c, counter_names[k], s->cnt[k]);
	counter_set__add(&c, "events.alloc", s->n_alloc);
	counter_set__add(&c, "events.free", s->n_free);
	counter_set__add(&c, "stacks.written", s->stacks_written);
	counter_set__add(&c, "map.live_max", s->o->max_live);
	if (s->o->export_url) {
		/* As the exporter last said: at the end, after its last interval was sent. */
		counter_set__add(&c, "export.intervals", s->exp.intervals);
		counter_set__add(&c, "export.profiles_sent", s->exp.sent);
		counter_set__add(&c, "lost.export_profiles", s->exp.lost);
		counter_set__add(&c, "lost.export_rejected", s->exp.rejected);
	}
	/* probes.attached and probes.failed, and the way's own. */
	if (s->way->add_counters)
		s->way->add_counters(s, &c);
	r.counters.nr = c.n;
	r.counters.items = items;
	write_rec(&s->out, &r);
}

static void warn_stacks(struct session *s);

void warn_losses(struct session *s)
{
	/* Events lost, and only those: a frame-pointer walk that stops early loses no event. */
	static const int lossy[] = {HS_CNT_RINGBUF_FULL, HS_CNT_LIVE_FULL, HS_CNT_THREAD_FULL, HS_CNT_MISSED_URETPROBE};

	for (size_t i = 0; i < sizeof(lossy) / sizeof(lossy[0]); i++) {
		int k = lossy[i];

		if (s->cnt[k] > s->cnt_warned[k]) {
			rec_warnx("warning: %" PRIu64 " more events lost (%s, %" PRIu64 " in all)%s",
			      s->cnt[k] - s->cnt_warned[k], counter_names[k], s->cnt[k],
			      k == HS_CNT_RINGBUF_FULL ? "; raise --ringbuf-size or use --sample-rate"
			      : k == HS_CNT_LIVE_FULL ? "; raise --max-live" : "");
			s->cnt_warned[k] = s->cnt[k];
		}
	}
	if (s->cnt[HS_CNT_RECORDER_STALLED] > s->cnt_warned[HS_CNT_RECORDER_STALLED]) {
		uint64_t n = s->cnt[HS_CNT_RECORDER_STALLED] - s->cnt_warned[HS_CNT_RECORDER_STALLED];

		rec_warnx("warning: %" PRIu64 " process%s stopped recording (%s, %" PRIu64 " in all): a thread "
			  "waited 2 s for this recorder to read its ring or free one, and heard nothing (was it "
			  "stopped, or its output blocked?); what %s did after that is missing from the recording",
			  n, n == 1 ? "" : "es", counter_names[HS_CNT_RECORDER_STALLED], s->cnt[HS_CNT_RECORDER_STALLED],
			  n == 1 ? "it" : "they");
		s->cnt_warned[HS_CNT_RECORDER_STALLED] = s->cnt[HS_CNT_RECORDER_STALLED];
	}
	warn_stacks(s);
}

/* Stacks cut short lose no event but do lose callers: said once per reason, with what to
 * do about it. The counts are in the file's counters, for `heapsnap-analyze stats`. */
static void warn_stacks(struct session *s)
{
	static const struct {
		int k;
		const char *what;
	} why[] = {
		{HS_CNT_STACK_TRUNCATED, "cut at --max-stack; it goes up to 127, its default"},
		{HS_CNT_STACK_ERROR, "ended at a frame pointer that was not one (code built without frame "
				     "pointers); --stack auto walks such code with unwind tables"},
		{HS_CNT_UNW_NO_MODULE, "reached code in no module (JIT code, or a module unloaded); "
				       "--stack dwarf copies the stack instead"},
		{HS_CNT_UNW_NO_TABLE, "reached a module without .eh_frame (or, BPF, beyond --unwind-rows)"},
		{HS_CNT_UNW_NO_ROW, "reached an address no .eh_frame entry covers (hand-written assembly?)"},
		{HS_CNT_UNW_EXPRESSION, "reached a frame whose CFA is a DWARF expression (a signal frame, "
					"or stack realignment); --stack dwarf unwinds those offline"},
		{HS_CNT_UNW_BAD_FRAME, "reached a frame whose CFA was outside the stack (corrupt stack, or "
				       ".eh_frame that does not match the code)"},
		{HS_CNT_UNW_FP_LOST, "needed rbp where a callee's .eh_frame does not say where it went"},
		{HS_CNT_UNW_FP_INSTEAD, "were walked by frame pointers: their process's modules were not known "
					"yet and the ring had no room for a stack copy; a larger --ringbuf-size "
					"leaves more"},
	};

	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
		int k = why[i].k;
		const char *what = why[i].what;

		/* No advice to do what is being done: raise --max-stack past its most, or use
		 * the --stack mode in use. */
		if (k == HS_CNT_STACK_TRUNCATED && s->o->max_stack >= HS_MAX_STACK)
			what = "cut at 127 frames, the most a record file holds (--max-stack's default)";
		else if (k == HS_CNT_STACK_ERROR && s->o->stack_mode == HS_STACK_AUTO)
			what = "ended at a frame pointer that was not one (code built without frame pointers, "
			       "where --stack auto had no unwind table to walk it by)";
		if (s->cnt[k] && !s->cnt_warned[k]) {
			rec_warnx("warning: %" PRIu64 " stacks %s (%s)", s->cnt[k], what, counter_names[k]);
			s->cnt_warned[k] = s->cnt[k];
		}
	}
	if (s->cnt[HS_CNT_DWARF_TRUNCATED] && !s->cnt_warned[HS_CNT_DWARF_TRUNCATED]) {
		uint64_t want = (s->dwarf_used_max + 255) & ~255ull;

		/* `used` runs to the stack mapping's end, argv and environment included: a window
		 * this size holds every frame, and a smaller one may already. */
		if (want <= HS_MAX_DWARF_BYTES)
			rec_warnx("warning: %" PRIu64 " stack copies were shorter than the stack in use (%s): "
				  "callers beyond them may be missing (heapsnap-analyze stats counts those); "
				  "--stack dwarf=%" PRIu64 " holds all of them",
				  s->cnt[HS_CNT_DWARF_TRUNCATED], counter_names[HS_CNT_DWARF_TRUNCATED], want);
		else
			rec_warnx("warning: %" PRIu64 " stack copies were shorter than the stack in use (%s), "
				  "some beyond --stack dwarf's 32k: callers beyond them may be missing "
				  "(heapsnap-analyze stats counts those); --stack auto walks whole stacks",
				  s->cnt[HS_CNT_DWARF_TRUNCATED], counter_names[HS_CNT_DWARF_TRUNCATED]);
		s->cnt_warned[HS_CNT_DWARF_TRUNCATED] = s->cnt[HS_CNT_DWARF_TRUNCATED];
	}
}

void snapshot(struct session *s, uint32_t origin, const char *label, uint64_t t, uint32_t pid)
{
	struct hs_record r = {.type = HS_REC_SNAPSHOT, .time = t, .pid = pid};
	char buf[32];

	if (!label) {
		snprintf(buf, sizeof(buf), "%.3fs", (double)t * TICK_NS / 1e9);
		label = buf;
	}
	r.snapshot.label = label;
	r.snapshot.origin = origin;
	r.snapshot.live_bytes = s->live_est > 0 ? (uint64_t)llround(s->live_est) : 0;
	write_rec(&s->out, &r);
}

void sample_rss(struct session *s)
{
	for (int i = 0; i < s->nr_procs; i++) {
		struct hs_record r = {.type = HS_REC_RSS, .time = ticks(&s->out, mono_ns())};

		if (!s->procs[i].alive || proc_rss(s->procs[i].pid, &r.rss.rss_bytes, &r.rss.vm_bytes))
			continue;
		r.pid = (uint32_t)s->procs[i].pid;
		write_rec(&s->out, &r);
	}
}

void pipeline_free(struct session *s)
{
	free(s->probes);
	hmap_free(&s->stacks);
	hmap_free(&s->dwarf_windows);
	ptrmap_free(&s->ulive);
	hmap_free(&s->pending);
	free(s->pool);
}
