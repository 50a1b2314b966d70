// SPDX-License-Identifier: MIT
/* Text and JSON emitters: each report's rows (rows.h) or the replay's model, written as text
 * for people or as JSON (--json) for scripts and CI gates. Nothing here computes a figure
 * another emitter would need. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buildid.h"
#include "jsonw.h"
#include "reports.h"
#include "rows.h"

static int finish(FILE *out, int err)
{
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}

/* Every report says when events were lost: its figures lack what those events held. */
static void text_losses(FILE *out, const struct replay *r)
{
	char desc[256];
	uint64_t lost = replay__lost_events(r, desc, sizeof(desc));

	if (lost)
		fprintf(out, "Lost: %" PRIu64 " events while recording (%s); the figures lack what they held\n", lost, desc);
}

/* The opening every JSON report shares: the file, optionally the stop, the losses. */
static void json_head(struct jsonw *w, const struct replay *r, const char *file_label, bool snapshot)
{
	jsonw__obj_begin(w, NULL);
	jsonw__str(w, "file", file_label);
	if (snapshot)
		jsonw__str(w, "snapshot", r->stop_desc);
	jsonw__u64(w, "lost_events", replay__lost_events(r, NULL, 0));
}

static void json_tail(struct jsonw *w)
{
	jsonw__obj_end(w);
	fputc('\n', w->f);
}

const char *report_sampling_text(const struct replay *r)
{
	if (r->sample_rate)
		return "Poisson (values are estimates)";
	return replay__lost_events(r, NULL, 0) ? "every allocation the recorder received" : "every allocation";
}

static uint32_t shown_of(uint32_t nr, int nodecount)
{
	return nodecount && (uint32_t)nodecount < nr ? (uint32_t)nodecount : nr;
}

/* ---- collapsed ---- */

struct coll {
	char *stack;
	double v;
};

static int coll_cmp(const void *a, const void *b)
{
	return strcmp(((const struct coll *)a)->stack, ((const struct coll *)b)->stack);
}

/* One line per stack, root first: frames joined by ';', then the value. */
static char *collapsed_line(const struct profile *p, const struct prof_sample *s)
{
	const char **names;
	char(*bufs)[ROWS_NAME_MAX];
	char *line = NULL;
	size_t len = 0;
	FILE *m;
	int n = rows__sample_frames(p, s, &names, &bufs);

	if (n < 0)
		return NULL;
	m = open_memstream(&line, &len);
	if (m) {
		for (int k = n - 1; k >= 0; k--) {
			if (k != n - 1)
				fputc(';', m);
			/* ';' separates frames and the last space the value: neither may appear in a name. */
			for (const char *c = names[k]; *c; c++)
				fputc(*c == ';' ? ':' : (*c == '\n' ? ' ' : *c), m);
		}
		if (!n)
			fputs("[no stack]", m);
		if (fclose(m)) {
			free(line);
			line = NULL;
		}
	}
	free(names);
	free(bufs);
	return line;
}

int report_collapsed(const struct profile *p, const struct report_opts *o, FILE *out)
{
	struct coll *rows = calloc(p->nr_samples ? p->nr_samples : 1, sizeof(*rows));
	uint32_t nr = 0;
	int err = 0;

	if (!rows)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nr_samples && !err; i++) {
		const struct prof_sample *s = &p->samples[i];

		if (llround(s->v[o->value]) == 0)
			continue;
		rows[nr].stack = collapsed_line(p, s);
		rows[nr].v = s->v[o->value];
		if (!rows[nr++].stack)
			err = -ENOMEM;
	}
	if (!err && nr)
		qsort(rows, nr, sizeof(*rows), coll_cmp);
	for (uint32_t i = 0; i < nr;) {
		double v = 0;
		uint32_t j = i;

		for (; !err && j < nr && !strcmp(rows[j].stack, rows[i].stack); j++)
			v += rows[j].v;
		if (!err)
			fprintf(out, "%s %.0f\n", rows[i].stack, v);
		for (j = j > i ? j : i + 1; i < j; i++)
			free(rows[i].stack);
	}
	free(rows);
	return finish(out, err);
}

/* ---- top ---- */

int report_top(const struct profile *p, const struct report_opts *o, FILE *out)
{
	struct fn_rows t;
	double total, sum = 0;
	uint32_t shown;
	bool sampled = p->r->sample_rate != 0;
	int err = rows__functions(p, o->value, &t);

	if (err)
		return err;
	total = t.total;
	shown = shown_of(t.nr, o->nodecount);
	if (o->json) {
		struct jsonw w;

		jsonw__init(&w, out, false);
		json_head(&w, p->r, o->file_label, true);
		jsonw__str(&w, "value", value_names[o->value]);
		jsonw__count(&w, "total", total);
		if (sampled)
			jsonw__count(&w, "total_se", sqrt(t.total_var));
		jsonw__arr_begin(&w, "functions");
		for (uint32_t i = 0; i < shown; i++) {
			jsonw__obj_begin(&w, NULL);
			jsonw__str(&w, "name", t.rows[i].name);
			jsonw__count(&w, "flat", t.rows[i].flat);
			jsonw__count(&w, "cum", t.rows[i].cum);
			if (sampled) {
				jsonw__count(&w, "flat_se", sqrt(t.rows[i].flat_var));
				jsonw__count(&w, "cum_se", sqrt(t.rows[i].cum_var));
			}
			jsonw__obj_end(&w);
		}
		jsonw__arr_end(&w);
		json_tail(&w);
	} else {
		const char *unit = o->value == V_ALLOC_SPACE || o->value == V_INUSE_SPACE ? "bytes" : "objects";

		fprintf(out, "File: %s\nSnapshot: %s\nType: %s (%s)\n", o->file_label, p->r->stop_desc,
			value_names[o->value], unit);
		text_losses(out, p->r);
		for (uint32_t i = 0; i < shown; i++)
			sum += t.rows[i].flat;
		fprintf(out, "Showing %u of %u functions, accounting for %.0f of %.0f total\n", shown, t.nr, sum, total);
		if (sampled)
			fprintf(out, "Sampled: estimates, each with its standard error (se) from the samples themselves; "
				     "total %.0f, se %.0f\n", total, sqrt(t.total_var));
		fprintf(out, "%12s %7s %7s %12s %7s  ", "flat", "flat%", "sum%", "cum", "cum%");
		if (sampled)
			fprintf(out, "%10s %10s  ", "flat se", "cum se");
		fprintf(out, "function\n");
		sum = 0;
		for (uint32_t i = 0; i < shown; i++) {
			const struct fn_row *r = &t.rows[i];

			sum += r->flat;
			fprintf(out, "%12.0f %6.2f%% %6.2f%% %12.0f %6.2f%%  ", r->flat, total ? 100 * r->flat / total : 0,
				total ? 100 * sum / total : 0, r->cum, total ? 100 * r->cum / total : 0);
			if (sampled)
				fprintf(out, "%10.0f %10.0f  ", sqrt(r->flat_var), sqrt(r->cum_var));
			fprintf(out, "%s\n", r->name);
		}
	}
	fn_rows__free(&t);
	return finish(out, 0);
}

/* ---- summary ---- */

static void summary_json(struct jsonw *w, const struct replay *r, const struct proc_row *row)
{
	const struct process *pr = row->pr;

	jsonw__obj_begin(w, NULL);
	jsonw__u64(w, "pid", pr->pid);
	jsonw__u64(w, "ppid", pr->ppid);
	jsonw__str(w, "comm", pr->comm);
	jsonw__str(w, "cmdline", pr->cmdline);
	jsonw__count(w, "allocated_bytes", pr->alloc_bytes);
	jsonw__count(w, "allocated_count", pr->alloc_count);
	jsonw__count(w, "freed_bytes", pr->free_bytes);
	jsonw__count(w, "freed_count", pr->free_count);
	jsonw__count(w, "live_bytes", pr->live_bytes);
	jsonw__count(w, "live_count", pr->live_count);
	jsonw__count(w, "peak_bytes", pr->peak_bytes);
	jsonw__secs(w, "peak_time", replay__seconds(r, pr->peak_time));
	jsonw__u64(w, "largest_request", pr->largest);
	jsonw__u64(w, "unknown_frees", pr->unknown_frees);
	jsonw__u64(w, "rss_max", pr->rss_max);
	if (row->any_live) {
		jsonw__secs(w, "oldest_live_time", row->oldest);
		jsonw__str(w, "oldest_live_function", row->oldest_function);
		jsonw__secs(w, "average_live_age", row->average_age);
	}
	if (pr->exited)
		jsonw__i64(w, "exit_status", pr->exit_status);
	jsonw__obj_end(w);
}

static void summary_text(FILE *out, const struct replay *r, const struct proc_row *row)
{
	const struct process *pr = row->pr;

	fprintf(out, "\nprocess %u (%s) parent %u: %s\n", pr->pid, pr->comm, pr->ppid, pr->cmdline);
	fprintf(out, "  allocated      %12.0f bytes in %10.0f blocks\n", pr->alloc_bytes, pr->alloc_count);
	fprintf(out, "  freed          %12.0f bytes in %10.0f blocks\n", pr->free_bytes, pr->free_count);
	fprintf(out, "  live           %12.0f bytes in %10.0f blocks\n", pr->live_bytes, pr->live_count);
	fprintf(out, "  peak live      %12.0f bytes at %.3fs\n", pr->peak_bytes, replay__seconds(r, pr->peak_time));
	fprintf(out, "  largest request %11" PRIu64 " bytes\n", pr->largest);
	if (row->any_live) {
		fprintf(out, "  oldest live    allocated at %.3fs by %s\n", row->oldest, row->oldest_function);
		fprintf(out, "  average age    %.3fs over live blocks\n", row->average_age);
	}
	if (pr->rss_max)
		fprintf(out, "  max RSS        %12" PRIu64 " bytes\n", pr->rss_max);
	if (pr->unknown_frees)
		fprintf(out, "  unknown frees  %12" PRIu64 " (blocks allocated before recording began)\n", pr->unknown_frees);
	if (pr->exited)
		fprintf(out, "  exited         status %" PRId64 " at %.3fs\n", pr->exit_status, replay__seconds(r, pr->t_exit));
}

int report_summary(const struct profile *p, const struct report_opts *o, FILE *out)
{
	const struct replay *r = p->r;
	struct proc_rows t;
	int err = rows__processes(p, &t);

	if (err)
		return err;
	if (o->json) {
		struct jsonw w;

		jsonw__init(&w, out, false);
		json_head(&w, r, o->file_label, true);
		jsonw__arr_begin(&w, "processes");
		for (uint32_t i = 0; i < t.nr; i++)
			summary_json(&w, r, &t.rows[i]);
		jsonw__arr_end(&w);
		json_tail(&w);
	} else {
		fprintf(out, "File: %s\nSnapshot: %s\nSampling: %s\n", o->file_label, r->stop_desc, report_sampling_text(r));
		text_losses(out, r);
		for (uint32_t i = 0; i < t.nr; i++)
			summary_text(out, r, &t.rows[i]);
		if (r->unknown_frees || (r->nr_snaps == 0 && r->status == HS_READ_TRUNCATED))
			fprintf(out, "\nnote: live bytes exclude memory allocated before recording began\n");
	}
	proc_rows__free(&t);
	return finish(out, 0);
}

/* ---- leaks ---- */

int report_leaks(const struct profile *p, const struct report_opts *o, FILE *out)
{
	struct leak_rows t;
	uint32_t shown;
	struct jsonw w;
	int err = rows__leaks(p, o->min_age, o->nodecount > 0 ? (uint32_t)o->nodecount : 0, &t);

	if (err)
		return err;
	shown = shown_of(t.nr, o->nodecount);
	if (o->json) {
		jsonw__init(&w, out, false);
		json_head(&w, p->r, o->file_label, false);
		jsonw__secs(&w, "min_age", o->min_age);
		jsonw__arr_begin(&w, "leaks");
	} else {
		fprintf(out, "File: %s\nSnapshot: %s\nLive allocations older than %.3fs: %.0f bytes in %u stacks\n",
			o->file_label, p->r->stop_desc, o->min_age, t.total, t.nr);
		text_losses(out, p->r);
	}
	for (uint32_t i = 0; i < shown; i++) {
		const struct leak_row *row = &t.rows[i];

		if (o->json) {
			jsonw__obj_begin(&w, NULL);
			jsonw__u64(&w, "pid", row->pid);
			jsonw__count(&w, "bytes", row->bytes);
			jsonw__count(&w, "count", row->count);
			jsonw__secs(&w, "oldest", row->oldest);
			jsonw__arr_begin(&w, "stack");
			for (uint32_t k = 0; k < row->nr_frames; k++)
				jsonw__str(&w, NULL, row->frames[k].name);
			jsonw__arr_end(&w);
			jsonw__obj_end(&w);
			continue;
		}
		fprintf(out, "\n%12.0f bytes in %.0f blocks, pid %u, oldest allocated at %.3fs\n", row->bytes, row->count,
			row->pid, row->oldest);
		for (uint32_t k = 0; k < row->nr_frames; k++) {
			const struct frame_row *f = &row->frames[k];
			const char *base = f->file ? strrchr(f->file, '/') : NULL;

			if (f->file && f->line)
				fprintf(out, "      %s (%s:%u)\n", f->name, base ? base + 1 : f->file, f->line);
			else
				fprintf(out, "      %s\n", f->name);
		}
	}
	if (o->json) {
		jsonw__arr_end(&w);
		json_tail(&w);
	}
	leak_rows__free(&t);
	return finish(out, 0);
}

/* ---- stats ---- */

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
		jsonw__u64(&w, "restored", r->restored);
		jsonw__u64(&w, "stacks", stacks);
		jsonw__u64(&w, "mappings", r->nr_maps);
		jsonw__u64(&w, "frames", r->frames);
		jsonw__u64(&w, "skipped_records", r->skipped);
		jsonw__u64(&w, "sample_rate", r->sample_rate);
		jsonw__count(&w, "peak_live_bytes", r->peak_bytes);
		jsonw__u64(&w, "probes", r->nr_probes);
		jsonw__obj_begin(&w, "counters");
		for (uint32_t i = 0; i < r->nr_counters; i++)
			jsonw__u64(&w, r->counters[i].name, r->counters[i].value);
		jsonw__obj_end(&w);
		json_tail(&w);
		return finish(out, 0);
	}
	fprintf(out, "File: %s (%" PRIu64 " bytes, %" PRIu64 " frames)\n", o->file_label, r->file_size, r->frames);
	fprintf(out, "Events: %" PRIu64 " (%" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
		     " frees of unknown pointers, %" PRIu64 " restored by a failed realloc)\n",
		r->events, r->allocs, r->frees, r->unknown_frees, r->restored);
	fprintf(out, "Record file: %.2f bytes per event\n", r->events ? (double)r->file_size / (double)r->events : 0.0);
	fprintf(out, "Stacks: %" PRIu64 " interned; mappings: %u; records skipped (unknown types): %" PRIu64 "\n",
		stacks, r->nr_maps, r->skipped);
	fprintf(out, "Probes: %u\n", r->nr_probes);
	for (uint32_t i = 0; i < r->nr_probes; i++)
		fprintf(out, "  %-40s %s +0x%" PRIx64 "\n", r->probes[i].symbol, r->probes[i].path, r->probes[i].offset);
	if (r->sample_rate) {
		uint64_t sampled = replay__counter(r, "sampler.sampled"), calls = replay__counter(r, "calls.alloc");

		fprintf(out, "Sampler: Poisson, mean %" PRIu64 " bytes; %" PRIu64 " of %" PRIu64
			     " allocation calls sampled (%.3f%%); estimated %.0f bytes allocated\n",
			r->sample_rate, sampled, calls, calls ? 100.0 * (double)sampled / (double)calls : 0.0,
			p->total[V_ALLOC_SPACE]);
	} else {
		fprintf(out, "Sampler: off (every allocation recorded)\n");
	}
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
	fprintf(out, "Live map: peak %.0f live blocks of %" PRIu64 " slots\n", r->peak_bytes > 0 ? r->live_count : 0,
		replay__counter(r, "map.live_max"));
	fprintf(out, "Counters:\n");
	for (uint32_t i = 0; i < r->nr_counters; i++)
		fprintf(out, "  %-24s %" PRIu64 "%s\n", r->counters[i].name, r->counters[i].value,
			!strncmp(r->counters[i].name, "lost.", 5) && r->counters[i].value ? "  <- loss" : "");
	return finish(out, 0);
}

/* ---- info ---- */

static const char *origin_name(uint32_t o)
{
	static const char *const n[] = {"attached", "started", "forked", "exec"};

	return o < 4 ? n[o] : "unknown";
}

const char *report_snapshot_origin(uint32_t o)
{
	static const char *const n[] = {"signal", "interval", "exit", "peak", "end"};

	return o < 5 ? n[o] : "unknown";
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
	json_tail(&w);
}

int report_info(const struct replay *r, const struct report_opts *o, FILE *out)
{
	char hex[2 * HS_MAX_BUILD_ID + 1];
	uint32_t nr_procs = 0, nr_maps = 0;

	if (o->json) {
		info_json(r, o, out);
		return finish(out, 0);
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
	return finish(out, 0);
}

/* ---- diff ---- */

static void diff_json_rows(struct jsonw *w, const char *key, const struct diff_row *rows, uint32_t nr, uint32_t shown,
			   bool sampled)
{
	jsonw__arr_begin(w, key);
	for (uint32_t i = 0; i < nr && i < shown; i++) {
		jsonw__obj_begin(w, NULL);
		jsonw__str(w, "name", rows[i].name);
		jsonw__count(w, "from", rows[i].from);
		jsonw__count(w, "to", rows[i].to);
		jsonw__count(w, "delta", rows[i].to - rows[i].from);
		if (sampled)
			jsonw__count(w, "delta_se", sqrt(rows[i].from_var + rows[i].to_var));
		jsonw__obj_end(w);
	}
	jsonw__arr_end(w);
}

static void diff_text_rows(FILE *out, const char *what, const struct report_opts *o, const struct diff_row *rows,
			   uint32_t nr, uint32_t shown, bool sampled)
{
	fprintf(out, "\n%s by growth in %s:\n%14s %s%14s %14s  %s\n", what, value_names[o->value], "delta",
		sampled ? "   95% +-     " : "", "from", "to", what);
	for (uint32_t i = 0; i < nr && i < shown; i++) {
		fprintf(out, "%+14.0f ", rows[i].to - rows[i].from);
		if (sampled)
			fprintf(out, "+-%-11.0f ", Z95_TWO_SIDED * sqrt(rows[i].from_var + rows[i].to_var));
		fprintf(out, "%14.0f %14.0f  %s\n", rows[i].from, rows[i].to, rows[i].name);
	}
}

static void diff_json_side(struct jsonw *w, const char *key, const struct replay *r, double total, double var,
			   bool sampled)
{
	jsonw__obj_begin(w, key);
	jsonw__str(w, "file", r->path);
	jsonw__str(w, "snapshot", r->stop_desc);
	jsonw__count(w, "total", total);
	if (sampled)
		jsonw__count(w, "total_se", sqrt(var));
	jsonw__obj_end(w);
}

/* The one line a CI log shows for a gate: the growth and the functions that grew most. */
void report_gate_line(const struct diff_rows *t, const struct gate_verdict *v, const struct report_opts *o,
		      FILE *out)
{
	fprintf(out, "heapsnap-analyze: %s grew by %+.0f", value_names[o->value], v->growth);
	if (t->from_total > 0)
		fprintf(out, " (%+.1f%%)", 100 * v->growth / t->from_total);
	if (v->se > 0)
		fprintf(out, " +- %.0f (95%%: at least %+.0f)", Z95_TWO_SIDED * v->se, v->lower);
	fprintf(out, ", %s the limit of %.0f", v->exceeded ? "over" : "within", v->limit);
	for (uint32_t i = 0, n = 0; i < t->nr_functions && n < 3; i++) {
		if (t->functions[i].to - t->functions[i].from <= 0)
			break;
		fprintf(out, "%s %s %+.0f", n++ ? "," : "; grew most:", t->functions[i].name,
			t->functions[i].to - t->functions[i].from);
	}
	fputc('\n', out);
}

int report_diff(const struct diff_rows *t, const struct replay *a, const struct replay *b,
		const struct gate_verdict *v, const struct report_opts *o, FILE *out)
{
	uint32_t nf = shown_of(t->nr_functions, o->nodecount), ns = shown_of(t->nr_stacks, o->nodecount);
	bool sampled = a->sample_rate || b->sample_rate;
	double delta = t->to_total - t->from_total, se = sqrt(t->from_var + t->to_var);

	if (o->json) {
		struct jsonw w;

		jsonw__init(&w, out, false);
		jsonw__obj_begin(&w, NULL);
		jsonw__str(&w, "value", value_names[o->value]);
		diff_json_side(&w, "from", a, t->from_total, t->from_var, sampled);
		diff_json_side(&w, "to", b, t->to_total, t->to_var, sampled);
		jsonw__count(&w, "delta", delta);
		if (sampled)
			jsonw__count(&w, "delta_se", se);
		if (v) {
			jsonw__obj_begin(&w, "gate");
			jsonw__count(&w, "limit", v->limit);
			jsonw__count(&w, "growth", v->growth);
			jsonw__count(&w, "lower_bound_95", v->lower);
			jsonw__bool(&w, "exceeded", v->exceeded);
			jsonw__obj_end(&w);
		}
		diff_json_rows(&w, "functions", t->functions, t->nr_functions, nf, sampled);
		diff_json_rows(&w, "stacks", t->stacks, t->nr_stacks, ns, sampled);
		json_tail(&w);
	} else {
		fprintf(out, "From: %s, %s: %.0f\nTo:   %s, %s: %.0f\nDelta %s: %+.0f", a->path, a->stop_desc,
			t->from_total, b->path, b->stop_desc, t->to_total, value_names[o->value], delta);
		if (sampled)
			fprintf(out, " +- %.0f (95%% interval; standard error %.0f)", Z95_TWO_SIDED * se, se);
		fputc('\n', out);
		if (v)
			fprintf(out, "Gate: %s the limit of %.0f%s\n", v->exceeded ? "over" : "within", v->limit,
				sampled ? " (with 95% confidence)" : "");
		diff_text_rows(out, "functions (flat)", o, t->functions, t->nr_functions, nf, sampled);
		diff_text_rows(out, "stacks (leaf first)", o, t->stacks, t->nr_stacks, ns, sampled);
	}
	return finish(out, 0);
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
		json_head(&w, r, o->file_label, false);
		report_timeline_json(&w, r);
		json_tail(&w);
		return finish(out, 0);
	}
	fprintf(out, "File: %s\n", o->file_label);
	text_losses(out, r);
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
	return finish(out, 0);
}

/* ---- speedscope ---- */

/* speedscope's own file format (https://www.speedscope.app/file-format-schema.json): the
 * frames shared, one "sampled" profile per sample type, each sample a stack root first with
 * its weight. Frames are functions (inline ones included) as the other reports name them. */
int report_speedscope(const struct profile *p, const struct report_opts *o, FILE *out)
{
	static const int order[] = {V_INUSE_SPACE, V_INUSE_OBJECTS, V_ALLOC_SPACE, V_ALLOC_OBJECTS};
	struct names frames = {0};
	uint32_t **stacks = calloc(p->nr_samples ? p->nr_samples : 1, sizeof(*stacks));
	int *depth = calloc(p->nr_samples ? p->nr_samples : 1, sizeof(*depth));
	char exporter[64];
	struct jsonw w;
	int err = stacks && depth ? 0 : -ENOMEM;

	for (uint32_t i = 0; i < p->nr_samples && !err; i++) {
		const char **names;
		char(*bufs)[ROWS_NAME_MAX];
		int n = rows__sample_frames(p, &p->samples[i], &names, &bufs);

		if (n < 0) {
			err = n;
			break;
		}
		stacks[i] = malloc(sizeof(**stacks) * (size_t)(n ? n : 1));
		if (!stacks[i])
			err = -ENOMEM;
		for (int k = 0; k < n && !err; k++) { /* leaf first in, root first out */
			int64_t id = names__intern(&frames, names[k]);

			if (id < 0)
				err = (int)id;
			else
				stacks[i][n - 1 - k] = (uint32_t)id;
		}
		depth[i] = n;
		free(names);
		free(bufs);
	}
	if (!err) {
		jsonw__init(&w, out, false);
		jsonw__obj_begin(&w, NULL);
		jsonw__str(&w, "$schema", "https://www.speedscope.app/file-format-schema.json");
		jsonw__str(&w, "name", o->file_label);
		snprintf(exporter, sizeof(exporter), "heapsnap-analyze %s", HEAPSNAP_VERSION);
		jsonw__str(&w, "exporter", exporter);
		jsonw__u64(&w, "activeProfileIndex", 0);
		jsonw__obj_begin(&w, "shared");
		jsonw__arr_begin(&w, "frames");
		for (uint32_t i = 0; i < frames.nr; i++) {
			jsonw__obj_begin(&w, NULL);
			jsonw__str(&w, "name", frames.v[i]);
			jsonw__obj_end(&w);
		}
		jsonw__arr_end(&w);
		jsonw__obj_end(&w);
		jsonw__arr_begin(&w, "profiles");
		for (size_t t = 0; t < sizeof(order) / sizeof(order[0]); t++) {
			int v = order[t];

			jsonw__obj_begin(&w, NULL);
			jsonw__str(&w, "type", "sampled");
			jsonw__str(&w, "name", value_names[v]);
			jsonw__str(&w, "unit", v == V_INUSE_SPACE || v == V_ALLOC_SPACE ? "bytes" : "none");
			jsonw__u64(&w, "startValue", 0);
			jsonw__num(&w, "endValue", p->total[v]);
			jsonw__arr_begin(&w, "samples");
			for (uint32_t i = 0; i < p->nr_samples; i++) {
				if (p->samples[i].v[v] <= 0)
					continue;
				jsonw__arr_begin(&w, NULL);
				for (int k = 0; k < depth[i]; k++)
					jsonw__u64(&w, NULL, stacks[i][k]);
				jsonw__arr_end(&w);
			}
			jsonw__arr_end(&w);
			jsonw__arr_begin(&w, "weights");
			for (uint32_t i = 0; i < p->nr_samples; i++)
				if (p->samples[i].v[v] > 0)
					jsonw__num(&w, NULL, p->samples[i].v[v]);
			jsonw__arr_end(&w);
			jsonw__obj_end(&w);
		}
		jsonw__arr_end(&w);
		json_tail(&w);
	}
	for (uint32_t i = 0; stacks && i < p->nr_samples; i++)
		free(stacks[i]);
	free(stacks);
	free(depth);
	names__free(&frames);
	return finish(out, err);
}

/* ---- temporary ---- */

/* Temporary allocations by the function that made them: see the replay's temporary_note()
 * for the definition, and `temporary` in --help for why that one. */
int report_temporary(const struct profile *p, const struct report_opts *o, FILE *out)
{
	struct temp_rows t;
	uint32_t shown;
	int err = rows__temporary(p, &t);

	if (err)
		return err;
	shown = shown_of(t.nr, o->nodecount);
	if (o->json) {
		struct jsonw w;

		jsonw__init(&w, out, false);
		json_head(&w, p->r, o->file_label, false);
		jsonw__count(&w, "temporary", t.temporary);
		jsonw__count(&w, "allocations", t.allocations);
		jsonw__arr_begin(&w, "functions");
		for (uint32_t i = 0; i < shown; i++) {
			jsonw__obj_begin(&w, NULL);
			jsonw__str(&w, "function", t.rows[i].name);
			jsonw__count(&w, "temporary", t.rows[i].temporary);
			jsonw__count(&w, "temporary_bytes", t.rows[i].temporary_bytes);
			jsonw__count(&w, "allocations", t.rows[i].allocations);
			jsonw__obj_end(&w);
		}
		jsonw__arr_end(&w);
		json_tail(&w);
	} else {
		fprintf(out, "File: %s\n", o->file_label);
		text_losses(out, p->r);
		fprintf(out, "Temporary allocations (freed before their thread's next allocation): %.0f of %.0f (%.1f%%)\n",
			t.temporary, t.allocations, t.allocations > 0 ? 100 * t.temporary / t.allocations : 0);
		fprintf(out, "%12s %14s %7s  %s\n", "temporary", "bytes", "% own", "function");
		for (uint32_t i = 0; i < shown; i++)
			fprintf(out, "%12.0f %14.0f %6.1f%%  %s\n", t.rows[i].temporary, t.rows[i].temporary_bytes,
				t.rows[i].allocations > 0 ? 100 * t.rows[i].temporary / t.rows[i].allocations : 0,
				t.rows[i].name);
	}
	temp_rows__free(&t);
	return finish(out, 0);
}
