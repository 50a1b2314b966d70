// SPDX-License-Identifier: MIT
/* Text and JSON emitters of the profile's reports: each report's rows (rows.h) written as
 * text for people or as JSON (--json) for scripts and CI gates. Nothing here computes a
 * figure another emitter would need. Reports of the recording itself (stats, info,
 * timeline) are in reports_recording.c. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buildid.h"
#include "jsonw.h"
#include "reports.h"
#include "reports_int.h"
#include "rows.h"

int report_finish(FILE *out, int err)
{
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}

/* Every report says when events were lost: its figures lack what those events held. */
void report_text_losses(FILE *out, const struct replay *r)
{
	char desc[256], why[256];
	uint64_t lost = replay__lost_events(r, desc, sizeof(desc)), stopped = replay__stopped(r, why, sizeof(why));

	if (lost)
		fprintf(out, "Lost: %" PRIu64 " events while recording (%s)%s%s; the figures lack what they held\n", lost, desc,
			stopped ? ", and " : "", why);
	else if (stopped)
		fprintf(out, "Lost: %s; the figures lack it\n", why);
}

/* The opening every JSON report shares: the file, optionally the stop, the losses. */
void report_json_head(struct jsonw *w, const struct replay *r, const char *file_label, bool snapshot)
{
	jsonw__obj_begin(w, NULL);
	jsonw__str(w, "file", file_label);
	if (snapshot)
		jsonw__str(w, "snapshot", r->stop_desc);
	jsonw__u64(w, "lost_events", replay__lost_events(r, NULL, 0));
	/* Only where there were some: the reports of every file before it stay as they were. */
	if (replay__stopped(r, NULL, 0))
		jsonw__u64(w, "processes_stopped", replay__stopped(r, NULL, 0));
}

void report_json_tail(struct jsonw *w)
{
	jsonw__obj_end(w);
	fputc('\n', w->f);
}

const char *report_sampling_text(const struct replay *r)
{
	if (r->sample_rate)
		return "Poisson (values are estimates)";
	return replay__lossy(r) ? "every allocation the recorder received" : "every allocation";
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
	return report_finish(out, err);
}

/* ---- top ---- */

/* top's Python functions, when the recording has Python frames: by own (the innermost Python
 * frame: the line of Python that made the block), then cum. In a Python program the leaves are
 * the interpreter's, so the flat table alone shows no Python code. */
static void top_python_json(struct jsonw *w, const struct fn_rows *py, uint32_t shown, bool sampled)
{
	if (!py->nr)
		return;
	jsonw__arr_begin(w, "python_functions");
	for (uint32_t i = 0; i < shown; i++) {
		jsonw__obj_begin(w, NULL);
		jsonw__str(w, "name", py->rows[i].name);
		jsonw__count(w, "own", py->rows[i].flat);
		jsonw__count(w, "cum", py->rows[i].cum);
		if (sampled) {
			jsonw__count(w, "own_se", sqrt(py->rows[i].flat_var));
			jsonw__count(w, "cum_se", sqrt(py->rows[i].cum_var));
		}
		jsonw__obj_end(w);
	}
	jsonw__arr_end(w);
}

static void top_python_text(FILE *out, const struct fn_rows *py, uint32_t shown, double total, bool sampled)
{
	if (!py->nr)
		return;
	fprintf(out, "\nPython functions: %u of %u (own: the innermost Python frame, the line that made the "
		     "block; cum: anywhere in the stack)\n", shown, py->nr);
	fprintf(out, "%12s %7s %12s %7s  ", "own", "own%", "cum", "cum%");
	if (sampled)
		fprintf(out, "%10s %10s  ", "own se", "cum se");
	fprintf(out, "function\n");
	for (uint32_t i = 0; i < shown; i++) {
		const struct fn_row *r = &py->rows[i];

		fprintf(out, "%12.0f %6.2f%% %12.0f %6.2f%%  ", r->flat, total ? 100 * r->flat / total : 0, r->cum,
			total ? 100 * r->cum / total : 0);
		if (sampled)
			fprintf(out, "%10.0f %10.0f  ", sqrt(r->flat_var), sqrt(r->cum_var));
		fprintf(out, "%s\n", r->name);
	}
}

int report_top(const struct profile *p, const struct report_opts *o, FILE *out)
{
	struct fn_rows t;
	double total, sum = 0;
	uint32_t shown;
	bool sampled = p->r->sample_rate != 0;
	struct fn_rows py;
	int err = rows__functions(p, o->value, &t);

	if (err)
		return err;
	err = rows__python_functions(p, o->value, &py);
	if (err) {
		fn_rows__free(&t);
		return err;
	}
	total = t.total;
	shown = shown_of(t.nr, o->nodecount);
	if (o->json) {
		struct jsonw w;

		jsonw__init(&w, out, false);
		report_json_head(&w, p->r, o->file_label, true);
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
		top_python_json(&w, &py, shown_of(py.nr, o->nodecount), sampled);
		report_json_tail(&w);
	} else {
		const char *unit = o->value == V_ALLOC_SPACE || o->value == V_INUSE_SPACE ? "bytes" : "objects";

		fprintf(out, "File: %s\nSnapshot: %s\nType: %s (%s)\n", o->file_label, p->r->stop_desc,
			value_names[o->value], unit);
		report_text_losses(out, p->r);
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
		top_python_text(out, &py, shown_of(py.nr, o->nodecount), total, sampled);
	}
	fn_rows__free(&t);
	fn_rows__free(&py);
	return report_finish(out, 0);
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
	if (pr->implied_free_count > 0) { /* of the freed: blocks whose slot an allocation took */
		jsonw__count(w, "implied_freed_bytes", pr->implied_free_bytes);
		jsonw__count(w, "implied_freed_count", pr->implied_free_count);
	}
	jsonw__count(w, "live_bytes", pr->live_bytes);
	jsonw__count(w, "live_count", pr->live_count);
	if (pr->py_final) /* replayed to it: live_bytes and the rest are of that moment */
		jsonw__secs(w, "python_finalize_time", replay__seconds(r, pr->py_final_time));
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
	if (pr->exited) {
		if (!pr->exit_status_unknown)
			jsonw__i64(w, "exit_status", pr->exit_status);
		jsonw__secs(w, "exit_time", replay__seconds(r, pr->t_exit));
	}
	jsonw__obj_end(w);
}

static void summary_text(FILE *out, const struct replay *r, const struct proc_row *row)
{
	const struct process *pr = row->pr;

	fprintf(out, "\nprocess %u (%s) parent %u: %s\n", pr->pid, pr->comm, pr->ppid, pr->cmdline);
	fprintf(out, "  allocated      %12.0f bytes in %10.0f blocks\n", pr->alloc_bytes, pr->alloc_count);
	fprintf(out, "  freed          %12.0f bytes in %10.0f blocks\n", pr->free_bytes, pr->free_count);
	if (pr->implied_free_count > 0)
		fprintf(out, "    of which     %12.0f bytes in %10.0f blocks implied (their slot allocated again "
			     "before their free was read)\n",
			pr->implied_free_bytes, pr->implied_free_count);
	/* An exited process's blocks were freed by its exit: live until then, not at the end. */
	fprintf(out, "  %-14s %12.0f bytes in %10.0f blocks%s\n",
		pr->py_final ? "live" : pr->exited ? "live at exit" : "live", pr->live_bytes, pr->live_count,
		pr->py_final ? " before Python finalization" : "");
	fprintf(out, "  peak live      %12.0f bytes at %.3fs\n", pr->peak_bytes, replay__seconds(r, pr->peak_time));
	fprintf(out, "  largest request %11" PRIu64 " bytes\n", pr->largest);
	if (row->any_live) {
		fprintf(out, "  oldest live    allocated at %.3fs by %s\n", row->oldest, row->oldest_function);
		fprintf(out, "  average age    %.3fs over live blocks%s\n", row->average_age,
			pr->py_final ? ", at its finalization" : pr->exited ? ", at its exit" : "");
	}
	if (pr->rss_max)
		fprintf(out, "  max RSS        %12" PRIu64 " bytes\n", pr->rss_max);
	if (pr->unknown_frees)
		fprintf(out, "  unknown frees  %12" PRIu64 " (blocks allocated before recording began, or by the parent before a fork)\n",
			pr->unknown_frees);
	if (pr->exited && pr->exit_status_unknown)
		fprintf(out, "  exited         at %.3fs (status not known)\n", replay__seconds(r, pr->t_exit));
	else if (pr->exited)
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
		report_json_head(&w, r, o->file_label, true);
		jsonw__arr_begin(&w, "processes");
		for (uint32_t i = 0; i < t.nr; i++)
			summary_json(&w, r, &t.rows[i]);
		jsonw__arr_end(&w);
		report_json_tail(&w);
	} else {
		fprintf(out, "File: %s\nSnapshot: %s\nSampling: %s\n", o->file_label, r->stop_desc, report_sampling_text(r));
		report_text_losses(out, r);
		for (uint32_t i = 0; i < t.nr; i++)
			summary_text(out, r, &t.rows[i]);
		if (r->unknown_frees || (r->nr_snaps == 0 && r->status == HS_READ_TRUNCATED))
			fprintf(out, "\nnote: live bytes exclude memory allocated before recording began, and a fork "
				     "child's the memory it inherited from its parent\n");
	}
	proc_rows__free(&t);
	return report_finish(out, 0);
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
		report_json_head(&w, p->r, o->file_label, false);
		jsonw__secs(&w, "min_age", o->min_age);
		jsonw__arr_begin(&w, "leaks");
	} else {
		fprintf(out, "File: %s\nSnapshot: %s\nLive allocations older than %.3fs: %.0f bytes in %u stacks\n",
			o->file_label, p->r->stop_desc, o->min_age, t.total, t.nr);
		report_text_losses(out, p->r);
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

			if (f->file && f->line)
				fprintf(out, "      %s (%s:%u)\n", f->name, basename(f->file), f->line);
			else
				fprintf(out, "      %s\n", f->name);
		}
	}
	if (o->json) {
		jsonw__arr_end(&w);
		report_json_tail(&w);
	}
	leak_rows__free(&t);
	return report_finish(out, 0);
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
		report_json_tail(&w);
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
	return report_finish(out, 0);
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
		report_json_tail(&w);
	}
	for (uint32_t i = 0; stacks && i < p->nr_samples; i++)
		free(stacks[i]);
	free(stacks);
	free(depth);
	names__free(&frames);
	return report_finish(out, err);
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
		report_json_head(&w, p->r, o->file_label, false);
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
		report_json_tail(&w);
	} else {
		fprintf(out, "File: %s\n", o->file_label);
		report_text_losses(out, p->r);
		fprintf(out, "Temporary allocations (freed before their thread's next allocation): %.0f of %.0f (%.1f%%)\n",
			t.temporary, t.allocations, t.allocations > 0 ? 100 * t.temporary / t.allocations : 0);
		fprintf(out, "%12s %14s %7s  %s\n", "temporary", "bytes", "% own", "function");
		for (uint32_t i = 0; i < shown; i++)
			fprintf(out, "%12.0f %14.0f %6.1f%%  %s\n", t.rows[i].temporary, t.rows[i].temporary_bytes,
				t.rows[i].allocations > 0 ? 100 * t.rows[i].temporary / t.rows[i].allocations : 0,
				t.rows[i].name);
	}
	temp_rows__free(&t);
	return report_finish(out, 0);
}
