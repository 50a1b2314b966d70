// SPDX-License-Identifier: MIT
/* The replay's metadata: session, processes, mappings, stacks, thread names, snapshots,
 * counters and probes into the model, and the lookups reports make in it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_int.h"

struct process *replay__process(const struct replay *r, uint32_t pid)
{
	struct hmap_slot *s = hmap_find(&r->proc_idx, pid, 0);

	return s ? &r->procs[s->val - 1] : NULL;
}

const char *replay__thread_name(const struct replay *r, uint32_t pid, uint32_t tid)
{
	struct hmap_slot *s = hmap_find(&r->threads, pid, tid);

	return s ? (const char *)(uintptr_t)s->val : NULL;
}

const uint64_t *replay__stack(const struct replay *r, uint64_t id, uint32_t *nr)
{
	struct hmap_slot *s = hmap_find(&r->stack_idx, id, 0);

	if (!s || !r->stacks[s->val - 1]) {
		*nr = 0;
		return NULL;
	}
	*nr = (uint32_t)r->stacks[s->val - 1][0];
	return r->stacks[s->val - 1] + 1;
}

const struct dwarf_stack *replay__dwarf_stack(const struct replay *r, uint64_t id)
{
	struct hmap_slot *s = hmap_find(&r->stack_idx, id, 0);

	return s && !r->stacks[s->val - 1] ? &r->dwarf[s->val - 1] : NULL;
}

double replay__seconds(const struct replay *r, uint64_t t)
{
	return (double)t * (double)(r->tick_ns ? r->tick_ns : 1000) / 1e9;
}

static void copy_build_id(uint8_t *dst, uint32_t *len, struct hs_bytes b)
{
	*len = b.len > HS_MAX_BUILD_ID ? HS_MAX_BUILD_ID : b.len;
	memcpy(dst, b.p, *len);
}

/* Names that said "lost" of what lost no event, as recorders before 0.2 wrote them. */
static const char *const renamed[][2] = {
	{"lost.stack_truncated", "stacks.cut_at_max_stack"},
	{"lost.stack_error", "stacks.fp_walk_stopped"},
	{"lost.unknown_free", "frees.unknown"},
	{"lost.dwarf_window_truncated", "stacks.dwarf_window_short"},
};

/* The counters that count events the recording does not hold. */
static const char *const lost_events[] = {"lost.ringbuf_full", "lost.live_map_full", "lost.thread_map_full",
					   "lost.missed_uretprobe", "lost.inject_unhooked_calls"};

uint64_t replay__counter(const struct replay *r, const char *name)
{
	struct hmap_slot *s = hmap_find(&r->counter_idx, hmap_str_hash(name), strlen(name));

	return s && !strcmp(r->counters[s->val - 1].name, name) ? r->counters[s->val - 1].value : 0;
}

uint64_t replay__lost_events(const struct replay *r, char *desc, size_t len)
{
	uint64_t sum = 0;
	size_t off = 0;

	if (len)
		desc[0] = 0;
	for (size_t k = 0; k < sizeof(lost_events) / sizeof(lost_events[0]); k++) {
		uint64_t v = replay__counter(r, lost_events[k]);
		int n;

		if (!v)
			continue;
		sum += v;
		if (!desc || off >= len)
			continue;
		n = snprintf(desc + off, len - off, "%s%s %" PRIu64, off ? ", " : "", lost_events[k], v);
		if (n > 0)
			off += (size_t)n;
	}
	return sum;
}

uint64_t replay__stopped(const struct replay *r, char *why, size_t len)
{
	uint64_t n = replay__counter(r, "lost.processes_stopped");

	if (len && n)
		snprintf(why, len, "everything %" PRIu64 " process%s did after %s stopped recording (lost.processes_stopped %"
				   PRIu64 ": the recorder not heard from for 2 s by a thread waiting for room)",
			 n, n == 1 ? "" : "es", n == 1 ? "it" : "they", n);
	else if (len)
		why[0] = 0;
	return n;
}

bool replay__lossy(const struct replay *r)
{
	return replay__lost_events(r, NULL, 0) || replay__stopped(r, NULL, 0);
}

static void set_counters(struct replay *r, const struct hs_record *rec)
{
	for (uint32_t i = 0; i < rec->counters.nr; i++) {
		struct hs_counter cv = rec->counters.items[i], *c = &cv;
		bool created;
		struct hmap_slot *slot;

		for (size_t k = 0; k < sizeof(renamed) / sizeof(renamed[0]); k++)
			if (!strcmp(c->name, renamed[k][0]))
				c->name = renamed[k][1];
		/* By name through a hash: a file of many distinct names must not cost a scan each. A
		 * recorder writes a few dozen; past HS_MAX_COUNTERS names, new ones are ignored. */
		if (r->nr_counters >= HS_MAX_COUNTERS && !hmap_find(&r->counter_idx, hmap_str_hash(c->name), strlen(c->name)))
			continue;
		slot = hmap_put(&r->counter_idx, hmap_str_hash(c->name), strlen(c->name), &created);
		if (!slot)
			replay_nomem(r);
		if (created) {
			r->counters = replay_grow(r, r->counters, r->nr_counters, sizeof(*r->counters));
			r->counters[r->nr_counters++] = (struct counter_val){.name = replay_strdup(r, c->name)};
			slot->val = r->nr_counters;
		}
		/* Two names of one hash: the first keeps the slot. */
		if (!strcmp(r->counters[slot->val - 1].name, c->name))
			r->counters[slot->val - 1].value = c->value;
	}
}

static void add_probe(struct replay *r, const struct hs_probe *p)
{
	r->probes = replay_grow(r, r->probes, r->nr_probes, sizeof(*r->probes));
	r->probes[r->nr_probes] = *p;
	r->probes[r->nr_probes].symbol = replay_strdup(r, p->symbol);
	r->probes[r->nr_probes].path = replay_strdup(r, p->path);
	r->probes[r->nr_probes].build_id = (struct hs_bytes){0};
	r->nr_probes++;
}

static void apply_session(struct replay *r, const struct hs_record *rec)
{
	if (r->have_session)
		return;
	r->have_session = true;
	r->tool_version = replay_strdup(r, rec->session.tool_version);
	r->hostname = replay_strdup(r, rec->session.hostname);
	r->kernel = replay_strdup(r, rec->session.kernel);
	r->cmdline = replay_strdup(r, rec->session.cmdline);
	r->via = replay_strdup(r, rec->session.via);
	r->tick_ns = rec->session.tick_ns;
	r->realtime_start_ns = rec->session.realtime_start_ns;
	r->sample_rate = rec->session.sample_rate;
	r->max_stack = rec->session.max_stack;
	r->stack_mode = rec->session.stack_mode;
	for (uint32_t i = 0; i < rec->session.nr_probes; i++)
		add_probe(r, &rec->session.probes[i]);
}

static void apply_process(struct replay *r, const struct hs_record *rec)
{
	struct process *p = replay_get_process(r, rec->pid);

	free(p->comm);
	free(p->cmdline);
	free(p->exe);
	p->comm = replay_strdup(r, rec->process.comm);
	p->cmdline = replay_strdup(r, rec->process.cmdline);
	p->exe = replay_strdup(r, rec->process.exe);
	if (r->filter && r->filter->comm)
		p->selected = replay_pid_listed(r, rec->pid) || !strcmp(p->comm, r->filter->comm);
	if (rec->process.origin != HS_PROC_EXEC) {
		p->ppid = rec->process.ppid;
		p->t_start = rec->time;
	}
	p->origin = rec->process.origin;
	copy_build_id(p->build_id, &p->build_id_len, rec->process.build_id);
}

static void apply_mapping(struct replay *r, const struct hs_record *rec)
{
	struct mapping *m;
	struct hmap_slot *open;

	if (r->nr_maps == UINT32_MAX)
		return;
	/* The mappings still open at each (pid, start), newest first, chained: an UNMAP
	 * closes the newest without a scan. */
	open = hmap_put(&r->open_maps, rec->pid, rec->mapping.start, NULL);
	if (!open)
		replay_nomem(r);
	r->maps = replay_grow(r, r->maps, r->nr_maps, sizeof(*r->maps));
	m = &r->maps[r->nr_maps++];
	*m = (struct mapping){.pid = rec->pid, .start = rec->mapping.start, .end = rec->mapping.end,
			      .offset = rec->mapping.offset, .inode = rec->mapping.inode, .t_map = rec->time,
			      .t_unmap = UINT64_MAX, .path = replay_strdup(r, rec->mapping.path),
			      .prev_open = (uint32_t)open->val, .reach = UINT64_MAX, .seq = r->nr_maps - 1};
	open->val = r->nr_maps;
	copy_build_id(m->build_id, &m->build_id_len, rec->mapping.build_id);
}

static void apply_unmap(struct replay *r, const struct hs_record *rec)
{
	struct hmap_slot *open = hmap_find(&r->open_maps, rec->pid, rec->unmap.start);

	if (!open || !open->val || r->maps_sorted)
		return;
	r->maps[open->val - 1].t_unmap = rec->time;
	open->val = r->maps[open->val - 1].prev_open;
}

static void apply_stack(struct replay *r, const struct hs_record *rec)
{
	bool created;
	struct hmap_slot *s = hmap_put(&r->stack_idx, rec->stack.id, 0, &created);
	uint64_t *v;

	if (!s || !created)
		return;
	v = replay_realloc(r, NULL, sizeof(uint64_t) * (rec->stack.nr + 1));
	v[0] = rec->stack.nr;
	memcpy(v + 1, rec->stack.ips, sizeof(uint64_t) * rec->stack.nr);
	r->stacks = replay_grow(r, r->stacks, r->nr_stack_slots, sizeof(*r->stacks));
	r->dwarf = replay_grow(r, r->dwarf, r->nr_stack_slots, sizeof(*r->dwarf));
	memset(&r->dwarf[r->nr_stack_slots], 0, sizeof(*r->dwarf));
	r->stacks[r->nr_stack_slots++] = v;
	s->val = r->nr_stack_slots;
}

static void apply_stack_dwarf(struct replay *r, const struct hs_record *rec)
{
	bool created;
	struct hmap_slot *s = hmap_put(&r->stack_idx, rec->dwarf.id, 0, &created);
	struct dwarf_stack *d;

	if (!s || !created)
		return;
	r->stacks = replay_grow(r, r->stacks, r->nr_stack_slots, sizeof(*r->stacks));
	r->dwarf = replay_grow(r, r->dwarf, r->nr_stack_slots, sizeof(*r->dwarf));
	r->stacks[r->nr_stack_slots] = NULL;
	d = &r->dwarf[r->nr_stack_slots++];
	memset(d, 0, sizeof(*d));
	for (uint32_t i = 0; i < rec->dwarf.nregs && i < 8; i++)
		d->regs[i] = rec->dwarf.regs[i];
	d->used = rec->dwarf.used;
	d->len = rec->dwarf.window.len;
	d->data = replay_realloc(r, NULL, d->len);
	memcpy(d->data, rec->dwarf.window.p, d->len);
	s->val = r->nr_stack_slots;
	r->dwarf_stacks++;
}

static void apply_thread_name(struct replay *r, const struct hs_record *rec)
{
	bool created;
	struct hmap_slot *s = hmap_put(&r->threads, rec->pid, rec->tid, &created);

	/* The latest name wins: threads are usually named just after they start. */
	if (s) {
		if (!created)
			free((char *)(uintptr_t)s->val);
		s->val = (uint64_t)(uintptr_t)replay_strdup(r, rec->thread_name.comm);
	}
}

static void apply_rss(struct replay *r, const struct hs_record *rec)
{
	struct process *p = replay_get_process(r, rec->pid);

	if (rec->rss.rss_bytes > p->rss_max)
		p->rss_max = rec->rss.rss_bytes;
	if (p->selected) {
		r->rss_sum += rec->rss.rss_bytes - p->rss_last;
		p->rss_last = rec->rss.rss_bytes;
		if (r->tl_on)
			replay_timeline_note(r, rec->time, !r->following);
	}
}

/* Metadata is applied wherever it sits; events only up to the stop point. */
void replay_meta__apply(struct replay *r, const struct hs_record *rec, bool before_stop)
{
	switch (rec->type) {
	case HS_REC_SESSION:
		apply_session(r, rec);
		break;
	case HS_REC_PROBE:
		add_probe(r, &rec->probe);
		break;
	case HS_REC_PROCESS:
		apply_process(r, rec);
		break;
	case HS_REC_MAPPING:
		apply_mapping(r, rec);
		break;
	case HS_REC_UNMAP:
		apply_unmap(r, rec);
		break;
	case HS_REC_STACK:
		apply_stack(r, rec);
		break;
	case HS_REC_STACK_DWARF:
		apply_stack_dwarf(r, rec);
		break;
	case HS_REC_THREAD_NAME:
		apply_thread_name(r, rec);
		break;
	case HS_REC_SNAPSHOT:
		r->snaps = replay_grow(r, r->snaps, r->nr_snaps, sizeof(*r->snaps));
		r->snaps[r->nr_snaps++] = (struct snapshot_info){
			.time = rec->time, .origin = rec->snapshot.origin, .live_bytes = rec->snapshot.live_bytes,
			.record_index = rec->snapshot.origin == HS_SNAP_PEAK ? UINT64_MAX : r->records,
			.label = replay_strdup(r, rec->snapshot.label)};
		/* The default's stop for this process: its events from here on are left out. */
		if (before_stop && r->target && r->target->kind == STOP_END && r->target->py_final &&
		    rec->snapshot.origin == HS_SNAP_PY_FINALIZE && rec->pid) {
			struct process *p = replay_get_process(r, rec->pid);

			if (!p->py_final && p->selected) {
				p->py_final = true;
				p->py_final_time = rec->time;
				r->py_final_procs++;
			}
		}
		break;
	case HS_REC_EXIT:
		if (before_stop) {
			struct process *p = replay_get_process(r, rec->pid);

			p->exited = true;
			p->t_exit = rec->time;
			p->exit_status = rec->exit.status;
			p->exit_status_unknown = rec->exit.flags & HS_EXIT_STATUS_UNKNOWN;
		}
		break;
	case HS_REC_RSS:
		if (before_stop)
			apply_rss(r, rec);
		break;
	case HS_REC_PY_CODE:
		replay_py__apply(r, rec);
		break;
	case HS_REC_COUNTERS:
	case HS_REC_END:
		if (before_stop || rec->type == HS_REC_END)
			set_counters(r, rec);
		break;
	}
}

static int map_cmp(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->t_map < y->t_map ? -1 : x->t_map > y->t_map;
}

/* The mappings by pid and start, each with its reach: sorted once, on first use, after the
 * file has been read. */
static void maps_sort(const struct replay *r)
{
	if (r->maps_sorted)
		return;
	if (r->nr_maps)
		qsort(r->maps, r->nr_maps, sizeof(*r->maps), map_cmp);
	for (size_t i = 0; i < r->nr_maps; i++) {
		struct mapping *m = &r->maps[i];

		m->reach = i && m[-1].pid == m->pid && m[-1].reach > m->end ? m[-1].reach : m->end;
	}
	((struct replay *)r)->maps_sorted = true;
}

static int map_seq_cmp(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void replay__maps_unsort(struct replay *r)
{
	if (!r->maps_sorted)
		return;
	if (r->nr_maps)
		qsort(r->maps, r->nr_maps, sizeof(*r->maps), map_seq_cmp);
	r->maps_sorted = false;
}

const struct mapping *replay__maps_of(const struct replay *r, uint32_t pid, size_t *nr)
{
	size_t lo = 0, hi = r->nr_maps, first;

	maps_sort(r);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->maps[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	for (hi = r->nr_maps; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->maps[mid].pid <= pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*nr = lo - first;
	return r->maps + first;
}

static const struct mapping *own_mapping(const struct replay *r, uint32_t pid, uint64_t addr, uint64_t t);

/* ADDR in PID's mappings at T, or, in none of them, in its parent's at its fork while it has
 * not exec'd since: a fork child runs in its parent's image. A child gone before the
 * recorder could read its maps was given its parent's as last read, and a parent that
 * exec'd meanwhile (a shell's subshell, then `exec sleep`) had the new image's: the
 * child's frames read as bare addresses. A chain of forks is followed up to 16 parents. */
const struct mapping *replay__mapping(const struct replay *r, uint32_t pid, uint64_t addr, uint64_t t)
{
	const struct mapping *m = own_mapping(r, pid, addr, t);

	for (int depth = 0; !m && depth < 16; depth++) {
		const struct process *p = replay__process(r, pid);

		if (!p || p->origin != HS_PROC_FORKED || !p->ppid || p->ppid == pid)
			break;
		pid = p->ppid;
		t = p->t_start;
		m = own_mapping(r, pid, addr, t);
	}
	return m;
}

static const struct mapping *own_mapping(const struct replay *r, uint32_t pid, uint64_t addr, uint64_t t)
{
	const struct mapping *best = NULL;
	size_t lo = 0, hi = r->nr_maps;

	maps_sort(r);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct mapping *m = &r->maps[mid];

		if (m->pid < pid || (m->pid == pid && m->start <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Walk back over mappings of PID starting at or below ADDR, as long as one of them may
	 * still hold it (their reach), and over no more than 4096 (the same range mapped again
	 * and again over time): small mappings below ADDR cost nothing unless one further down
	 * reaches past it, and then at most that many are looked at. The profile looks each
	 * address up once (profile__build). */
	for (size_t i = lo, seen = 0; i-- > 0 && seen++ < 4096;) {
		const struct mapping *m = &r->maps[i];

		if (m->pid != pid || m->reach <= addr)
			break;
		if (addr >= m->end)
			continue;
		if (m->t_map <= t && t < m->t_unmap)
			return m;
		if (!best)
			best = m;
		if (addr - m->start > (1ull << 36))
			break;
	}
	return best;
}
