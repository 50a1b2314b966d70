// SPDX-License-Identifier: MIT
/* Text and JSON reports of the recording itself, from the replay's model: stats (events,
 * probes, counters), info (header, processes, mappings, snapshots) and timeline. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buildid.h"
#include "reports_int.h"

/* ---- stats ---- */

/* The events as the file holds them, and the frees it does not hold: every figure named by
 * where it comes from, the replay's count or the recorder's counter. */
static void stats_events_text(const struct replay *r, FILE *out)
{
	uint64_t unwritten = replay__counter(r, "frees.unknown");

	fprintf(out, "Events: %" PRIu64 " (%" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
		     " restored by a failed realloc, %" PRIu64 " frees of no live block)\n",
		r->events, r->allocs, r->frees, r->restored, r->unknown_frees);
	if (r->implied_frees)
		fprintf(out, "Implied frees: %" PRIu64 " blocks whose slot an allocation took while they were live "
			     "(their free was not read before it); counted as freed\n",
			r->implied_frees);
	fprintf(out, "Frees of unknown pointers: %" PRIu64 " (%" PRIu64 " counted by the recorder and not written "
		     "(frees.unknown): blocks allocated before recording began, or in a forked child by its parent "
		     "before the fork; %" PRIu64 " in the file)\n",
		unwritten + r->unknown_frees, unwritten,
		r->unknown_frees);
}

static void stats_sampler_text(const struct profile *p, FILE *out)
{
	const struct replay *r = p->r;
	uint64_t sampled = replay__counter(r, "sampler.sampled"), calls = replay__counter(r, "calls.alloc");

	if (!r->sample_rate) {
		fprintf(out, "Sampler: off (every allocation recorded)\n");
		return;
	}
	fprintf(out, "Sampler: Poisson, mean %" PRIu64 " bytes; %" PRIu64 " allocations sampled", r->sample_rate, sampled);
	/* The in-process recorder counts no calls: a ratio to 0 would be no figure at all. */
	if (calls)
		fprintf(out, " of %" PRIu64 " allocation calls (%.3f%%)", calls, 100.0 * (double)sampled / (double)calls);
	else
		fprintf(out, " (the recorder did not count allocation calls)");
	fprintf(out, "; %" PRIu64 " in the file; estimated %.0f bytes allocated\n", r->allocs, p->total[V_ALLOC_SPACE]);
}

int report_stats(const struct profile *p, const struct report_opts *o, FILE *out)
{
	const struct replay *r = p->r;
	uint64_t stacks = r->nr_stack_slots;

	if (o->json) {
		struct jsonw w;

		jsonw__init(&w, out, false);
		jsonw__obj_begin(&w, NULL);
		jsonw__str(&w, "file", o->file_label);
		jsonw__u64(&w, "records", r->records);
		jsonw__u64(&w, "events", r->events);
		jsonw__u64(&w, "allocs", r->allocs);
		jsonw__u64(&w, "frees", r->frees);
		jsonw__u64(&w, "unknown_frees", r->unknown_frees);
		jsonw__u64(&w, "implied_frees", r->implied_frees);
		jsonw__u64(&w, "peak_live_blocks", r->peak_live_slots);
		jsonw__u64(&w, "restored", r->restored);
		jsonw__u64(&w, "stacks", stacks);
		jsonw__u64(&w, "mappings", r->nr_maps);
		jsonw__u64(&w, "python_codes", r->py.nr);
		jsonw__u64(&w, "python_codes_repeated", r->py.duplicates);
		jsonw__u64(&w, "frames", r->frames);
		jsonw__u64(&w, "skipped_records", r->skipped);
		jsonw__u64(&w, "sample_rate", r->sample_rate);
		jsonw__count(&w, "peak_live_bytes", r->peak_bytes);
		jsonw__u64(&w, "probes", r->nr_probes);
		jsonw__obj_begin(&w, "counters");
		for (uint32_t i = 0; i < r->nr_counters; i++)
			jsonw__u64(&w, r->counters[i].name, r->counters[i].value);
		jsonw__obj_end(&w);
		report_json_tail(&w);
		return report_finish(out, 0);
	}
	fprintf(out, "File: %s (%" PRIu64 " bytes, %" PRIu64 " frames)\n", o->file_label, r->file_size, r->frames);
	stats_events_text(r, out);
	fprintf(out, "Record file: %.3g bytes per event\n", r->events ? (double)r->file_size / (double)r->events : 0.0);
	fprintf(out, "Stacks: %" PRIu64 " interned; mappings: %u; records skipped (unknown types): %" PRIu64 "\n",
		stacks, r->nr_maps, r->skipped);
	if (r->py.nr)
		fprintf(out, "Python code objects: %u (%" PRIu64 " bytes of names and line tables)%s\n", r->py.nr,
			r->py.bytes, r->py.duplicates ? "; a code id of a process named again: the first kept" : "");
	fprintf(out, "Probes: %u\n", r->nr_probes);
	for (uint32_t i = 0; i < r->nr_probes; i++)
		fprintf(out, "  %-40s %s +0x%" PRIx64 "\n", r->probes[i].symbol, r->probes[i].path, r->probes[i].offset);
	stats_sampler_text(p, out);
	if (r->dwarf_stacks) {
		const struct unwind_stats *us = p->unw ? unwinder__stats(p->unw) : NULL;

		fprintf(out, "DWARF stacks: %" PRIu64 " captures", r->dwarf_stacks);
		if (us) {
			fprintf(out, "; %" PRIu64 " unwinds (%" PRIu64 " cached) at %.0f/s, %.1f frames each; failures:",
				us->unwinds, us->cache_hits, us->seconds > 0 ? (double)us->unwinds / us->seconds : 0.0,
				us->unwinds ? (double)us->frames / (double)us->unwinds : 0.0);
			for (int k = UNW_NO_BINARY; k < UNW__COUNT; k++)
				fprintf(out, " %s %" PRIu64 "%s", unwind_fail_names[k], us->fail[k], k + 1 < UNW__COUNT ? "," : "");
		}
		fputc('\n', out);
	}
	/* The kernel's map holds sampled blocks (one entry each, whatever it stands for) of a
	 * sampled BPF recording; other ways keep no such map, so there is nothing to compare. */
	if (r->sample_rate && r->via && !strncmp(r->via, "bpf", 3) && replay__counter(r, "map.live_max"))
		fprintf(out, "Live map: at most %" PRIu64 " sampled blocks live at once, of %" PRIu64 " entries\n",
			r->peak_live_slots, replay__counter(r, "map.live_max"));
	fprintf(out, "Counters:\n");
	for (uint32_t i = 0; i < r->nr_counters; i++)
		fprintf(out, "  %-24s %" PRIu64 "%s\n", r->counters[i].name, r->counters[i].value,
			!strncmp(r->counters[i].name, "lost.", 5) && r->counters[i].value ? "  <- loss" : "");
	return report_finish(out, 0);
}

/* ---- info ---- */

static const char *origin_name(uint32_t o)
{
	static const char *const n[] = {"attached", "started", "forked", "exec"};

	return o < 4 ? n[o] : "unknown";
}

const char *report_snapshot_origin(uint32_t o)
{
	static const char *const n[] = {"signal", "interval", "exit", "peak", "end", "python-finalize"};

	return o < 6 ? n[o] : "unknown";
}

static const char *stack_mode_name(uint32_t m)
{
	return m == HS_STACK_FP ? "fp" : m == HS_STACK_DWARF ? "dwarf" : m == HS_STACK_AUTO ? "auto" : "none (call site)";
}

static const char *status_name(enum hs_read_status s)
{
	switch (s) {
	case HS_READ_END: return "complete";
	case HS_READ_TRUNCATED: return "truncated";
	case HS_READ_CORRUPT: return "corrupt";
	default: return "unreadable";
	}
}

static void info_json(const struct replay *r, const struct report_opts *o, FILE *out)
{
	char hex[2 * HS_MAX_BUILD_ID + 1], fmt[32];
	struct jsonw w;

	jsonw__init(&w, out, false);
	jsonw__obj_begin(&w, NULL);
	jsonw__str(&w, "file", o->file_label);
	snprintf(fmt, sizeof(fmt), "%u.%u", r->format_major, r->format_minor);
	jsonw__str(&w, "format", fmt);
	jsonw__str(&w, "status", status_name(r->status));
	jsonw__str(&w, "tool_version", r->tool_version);
	jsonw__str(&w, "hostname", r->hostname);
	jsonw__str(&w, "kernel", r->kernel);
	jsonw__str(&w, "command", r->cmdline);
	jsonw__str(&w, "via", r->via);
	jsonw__u64(&w, "sample_rate", r->sample_rate);
	jsonw__str(&w, "stack_mode", stack_mode_name(r->stack_mode));
	jsonw__secs(&w, "first_time", replay__seconds(r, r->first_time));
	jsonw__secs(&w, "last_time", replay__seconds(r, r->last_time));
	jsonw__arr_begin(&w, "processes");
	for (uint32_t i = 0; i < r->nr_procs; i++) {
		const struct process *p = &r->procs[i];

		if (!p->selected)
			continue;
		jsonw__obj_begin(&w, NULL);
		jsonw__u64(&w, "pid", p->pid);
		jsonw__u64(&w, "ppid", p->ppid);
		jsonw__str(&w, "origin", origin_name(p->origin));
		jsonw__str(&w, "comm", p->comm);
		jsonw__str(&w, "exe", p->exe);
		jsonw__obj_end(&w);
	}
	jsonw__arr_end(&w);
	jsonw__arr_begin(&w, "mappings");
	for (uint32_t i = 0; i < r->nr_maps; i++) {
		const struct mapping *m = &r->maps[i];
		const struct process *p = replay__process(r, m->pid);

		if (p && !p->selected)
			continue;
		jsonw__obj_begin(&w, NULL);
		jsonw__u64(&w, "pid", m->pid);
		jsonw__u64(&w, "start", m->start);
		jsonw__u64(&w, "end", m->end);
		jsonw__u64(&w, "offset", m->offset);
		jsonw__str(&w, "path", m->path);
		jsonw__str(&w, "build_id", hs_hex(m->build_id, m->build_id_len, hex));
		jsonw__obj_end(&w);
	}
	jsonw__arr_end(&w);
	jsonw__arr_begin(&w, "snapshots");
	for (uint32_t i = 0; i < r->nr_snaps; i++) {
		jsonw__obj_begin(&w, NULL);
		jsonw__u64(&w, "index", i + 1);
		jsonw__secs(&w, "time", replay__seconds(r, r->snaps[i].time));
		jsonw__str(&w, "origin", report_snapshot_origin(r->snaps[i].origin));
		jsonw__str(&w, "label", r->snaps[i].label);
		jsonw__u64(&w, "live_bytes", r->snaps[i].live_bytes);
		jsonw__obj_end(&w);
	}
	jsonw__arr_end(&w);
	report_json_tail(&w);
}

int report_info(const struct replay *r, const struct report_opts *o, FILE *out)
{
	char hex[2 * HS_MAX_BUILD_ID + 1];
	uint32_t nr_procs = 0, nr_maps = 0;

	if (o->json) {
		info_json(r, o, out);
		return report_finish(out, 0);
	}
	for (uint32_t i = 0; i < r->nr_procs; i++)
		nr_procs += r->procs[i].selected;
	for (uint32_t i = 0; i < r->nr_maps; i++) {
		const struct process *p = replay__process(r, r->maps[i].pid);

		nr_maps += !p || p->selected;
	}
	fprintf(out, "File: %s\nFormat: %d.%u, %s (%" PRIu64 " bytes, %" PRIu64 " frames)\n", o->file_label,
		r->format_major, r->format_minor, status_name(r->status), r->file_size, r->frames);
	if (r->status != HS_READ_END && r->error[0])
		fprintf(out, "  %s\n", r->error);
	fprintf(out, "Recorder: heapsnap %s on %s, kernel %s\n", r->tool_version, r->hostname, r->kernel);
	fprintf(out, "Command: %s\n", r->cmdline && *r->cmdline ? r->cmdline : "(attached to a running process)");
	if (r->via && *r->via)
		fprintf(out, "Recorded via %s\n", r->via);
	fprintf(out, "Sampling: %s", r->sample_rate ? "Poisson, mean " : report_sampling_text(r));
	if (r->sample_rate)
		fprintf(out, "%" PRIu64 " bytes", r->sample_rate);
	if (r->stack_mode == HS_STACK_DWARF)
		fprintf(out, "; stacks: dwarf (%" PRIu64 " captures, unwound offline)\n", r->dwarf_stacks);
	else
		fprintf(out, "; stacks: %s, up to %" PRIu64 " frames\n", stack_mode_name(r->stack_mode), r->max_stack);
	fprintf(out, "Time range: %.3fs to %.3fs\n", replay__seconds(r, r->first_time), replay__seconds(r, r->last_time));
	fprintf(out, "Processes: %u\n", nr_procs);
	for (uint32_t i = 0; i < r->nr_procs; i++) {
		const struct process *p = &r->procs[i];

		if (p->selected)
			fprintf(out, "  %u (%s, %s, parent %u) %s build-id %s\n", p->pid, p->comm, origin_name(p->origin),
				p->ppid, p->exe, p->build_id_len ? hs_hex(p->build_id, p->build_id_len, hex) : "none");
	}
	fprintf(out, "Mappings: %u\n", nr_maps);
	for (uint32_t i = 0; i < r->nr_maps; i++) {
		const struct mapping *m = &r->maps[i];
		const struct process *p = replay__process(r, m->pid);

		if (p && !p->selected)
			continue;
		fprintf(out, "  %u %016" PRIx64 "-%016" PRIx64 " @%" PRIx64 " %s build-id %s%s\n", m->pid, m->start, m->end,
			m->offset, m->path, m->build_id_len ? hs_hex(m->build_id, m->build_id_len, hex) : "none",
			m->t_unmap != UINT64_MAX ? " (unmapped later)" : "");
	}
	fprintf(out, "Snapshots: %u\n", r->nr_snaps);
	for (uint32_t i = 0; i < r->nr_snaps; i++)
		fprintf(out, "  %u  %-12s %10.3fs  %-8s live %" PRIu64 " bytes\n", i + 1, r->snaps[i].label,
			replay__seconds(r, r->snaps[i].time), report_snapshot_origin(r->snaps[i].origin),
			r->snaps[i].live_bytes);
	return report_finish(out, 0);
}

/* ---- timeline ---- */

/* The live heap and RSS over time (replayed with the target's `timeline`), with the
 * snapshots and the peak beside the points. */
void report_timeline_json(struct jsonw *w, const struct replay *r)
{
	jsonw__arr_begin(w, "points");
	for (uint32_t i = 0; i < r->nr_tl; i++) {
		const struct timeline_point *t = &r->tl[i];

		jsonw__obj_begin(w, NULL);
		jsonw__secs(w, "time", replay__seconds(r, t->time));
		jsonw__count(w, "live_bytes", t->live_bytes);
		jsonw__count(w, "live_blocks", t->live_blocks);
		jsonw__u64(w, "rss_bytes", t->rss_bytes);
		jsonw__obj_end(w);
	}
	jsonw__arr_end(w);
	jsonw__arr_begin(w, "snapshots");
	for (uint32_t i = 0; i < r->nr_snaps; i++) {
		jsonw__obj_begin(w, NULL);
		jsonw__str(w, "label", r->snaps[i].label);
		jsonw__str(w, "origin", report_snapshot_origin(r->snaps[i].origin));
		jsonw__secs(w, "time", replay__seconds(r, r->snaps[i].time));
		jsonw__u64(w, "live_bytes", r->snaps[i].live_bytes);
		jsonw__obj_end(w);
	}
	jsonw__arr_end(w);
	jsonw__obj_begin(w, "peak");
	jsonw__secs(w, "time", replay__seconds(r, r->peak_time));
	jsonw__count(w, "live_bytes", r->peak_bytes);
	jsonw__obj_end(w);
}

int report_timeline(const struct replay *r, const struct report_opts *o, FILE *out)
{
	if (o->json) {
		struct jsonw w;

		jsonw__init(&w, out, false);
		report_json_head(&w, r, o->file_label, false);
		report_timeline_json(&w, r);
		report_json_tail(&w);
		return report_finish(out, 0);
	}
	fprintf(out, "File: %s\n", o->file_label);
	report_text_losses(out, r);
	fprintf(out, "Peak: %.0f bytes at %.3fs\n", r->peak_bytes, replay__seconds(r, r->peak_time));
	for (uint32_t i = 0; i < r->nr_snaps; i++)
		fprintf(out, "Snapshot %u: %s at %.3fs (%s), %" PRIu64 " bytes live\n", i + 1, r->snaps[i].label,
			replay__seconds(r, r->snaps[i].time), report_snapshot_origin(r->snaps[i].origin),
			r->snaps[i].live_bytes);
	fprintf(out, "%12s %14s %12s %14s\n", "time(s)", "live_bytes", "live_blocks", "rss_bytes");
	for (uint32_t i = 0; i < r->nr_tl; i++) {
		const struct timeline_point *t = &r->tl[i];

		fprintf(out, "%12.6f %14.0f %12.0f %14" PRIu64 "\n", replay__seconds(r, t->time), t->live_bytes,
			t->live_blocks, t->rss_bytes);
	}
	return report_finish(out, 0);
}
