// SPDX-License-Identifier: MIT
/* Text reports, each also available as JSON (--json) for scripts and CI gates. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buildid.h"
#include "hmap.h"
#include "reports.h"

/* ---- small helpers ---- */


/* Every report says when events were lost: its figures lack what those events held. */
static void print_losses(FILE *out, const struct replay *r, bool json)
{
	char desc[256];
	uint64_t lost = replay__lost_events(r, desc, sizeof(desc));

	if (json)
		fprintf(out, ",\"lost_events\":%" PRIu64, lost);
	else if (lost)
		fprintf(out, "Lost: %" PRIu64 " events while recording (%s); the figures lack what they held\n", lost, desc);
}

static const char *sampling_text(const struct replay *r)
{
	if (r->sample_rate)
		return "Poisson (values are estimates)";
	return replay__lost_events(r, NULL, 0) ? "every allocation the recorder received" : "every allocation";
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static uint64_t fnv(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* A table of named rows with values, keyed by string. */
struct named {
	char *name;
	double v[2]; /* top: flat, cum; diff: A, B */
	double extra[2];
};

struct named_table {
	struct named *rows;
	uint32_t nr, cap;
	struct hmap idx;
};

static struct named *named_get(struct named_table *t, const char *name)
{
	uint64_t h = fnv(name);

	for (uint64_t k2 = strlen(name);; k2 += 1ull << 32) {
		bool created;
		struct hmap_slot *s = hmap_put(&t->idx, h, k2, &created);

		if (!s)
			exit(EXIT_FAIL);
		if (created) {
			if (t->nr == t->cap) {
				t->cap = t->cap ? t->cap * 2 : 256;
				t->rows = realloc(t->rows, sizeof(*t->rows) * t->cap);
				if (!t->rows)
					exit(EXIT_FAIL);
			}
			t->rows[t->nr] = (struct named){.name = strdup(name)};
			s->val = t->nr;
			return &t->rows[t->nr++];
		}
		if (!strcmp(t->rows[s->val].name, name))
			return &t->rows[s->val];
	}
}

static void named_free(struct named_table *t)
{
	for (uint32_t i = 0; i < t->nr; i++)
		free(t->rows[i].name);
	free(t->rows);
	hmap_free(&t->idx);
}

/* Expands a sample into frame names, leaf (innermost inline) first. */
static int sample_frames(const struct profile *p, const struct prof_sample *s, const char ***out, char (**bufs)[160])
{
	int n = 0, cap = 0;
	const char **names = NULL;
	char(*b)[160] = NULL;

	for (uint32_t i = 0; i < s->nr_locs; i++) {
		const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + i]];
		uint32_t nl = l->nr_lines ? l->nr_lines : 1;

		for (uint32_t k = 0; k < nl; k++) {
			if (n == cap) {
				cap = cap ? cap * 2 : 32;
				names = realloc(names, sizeof(*names) * (size_t)cap);
				b = realloc(b, sizeof(*b) * (size_t)cap);
				if (!names || !b)
					exit(EXIT_FAIL);
			}
			names[n] = profile__line_name(p, l, l->nr_lines ? &p->lines[l->first_line + k] : NULL, b[n],
						      sizeof(b[n]));
			if (names[n] == b[n])
				names[n] = NULL; /* points into b: fixed up below, after b stops moving */
			n++;
		}
	}
	for (int i = 0, j = 0; i < (int)s->nr_locs; i++) {
		const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + (uint32_t)i]];
		uint32_t nl = l->nr_lines ? l->nr_lines : 1;

		for (uint32_t k = 0; k < nl; k++, j++)
			if (!names[j])
				names[j] = b[j];
	}
	*out = names;
	*bufs = b;
	return n;
}

static const char *fmt_bytes(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%.0f", v);
	return buf;
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

int report_collapsed(const struct profile *p, const struct report_opts *o, FILE *out)
{
	struct coll *rows = calloc(p->nr_samples ? p->nr_samples : 1, sizeof(*rows));
	uint32_t nr = 0;

	if (!rows)
		return EXIT_FAIL;
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];
		const char **names;
		char(*bufs)[160];
		char *line = NULL;
		size_t len = 0;
		FILE *m;
		int n;

		if (llround(s->v[o->value]) == 0)
			continue;
		n = sample_frames(p, s, &names, &bufs);
		m = open_memstream(&line, &len);
		for (int k = n - 1; k >= 0; k--) {
			if (k != n - 1)
				fputc(';', m);
			/* ';' separates frames and the last space the value: neither may appear in a name. */
			for (const char *c = names[k]; *c; c++)
				fputc(*c == ';' ? ':' : (*c == '\n' ? ' ' : *c), m);
		}
		if (!n)
			fputs("[no stack]", m);
		fclose(m);
		rows[nr++] = (struct coll){line, s->v[o->value]};
		free(names);
		free(bufs);
	}
	if (nr)
		qsort(rows, nr, sizeof(*rows), coll_cmp);
	for (uint32_t i = 0; i < nr;) {
		double v = 0;
		uint32_t j = i;

		for (; j < nr && !strcmp(rows[j].stack, rows[i].stack); j++)
			v += rows[j].v;
		fprintf(out, "%s %.0f\n", rows[i].stack, v);
		for (; i < j; i++)
			free(rows[i].stack);
	}
	free(rows);
	return EXIT_OK;
}

/* ---- top ---- */

static int cmp_flat(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	if (x->v[0] != y->v[0])
		return x->v[0] < y->v[0] ? 1 : -1;
	if (x->v[1] != y->v[1])
		return x->v[1] < y->v[1] ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void function_totals(const struct profile *p, int value, struct named_table *t)
{
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];
		double v = s->v[value];
		const char **names;
		char(*bufs)[160];
		int n;

		if (v == 0)
			continue;
		n = sample_frames(p, s, &names, &bufs);
		for (int k = 0; k < n; k++) {
			bool seen = false;

			/* Recursion counts once toward cum. */
			for (int j = 0; j < k && !seen; j++)
				seen = !strcmp(names[j], names[k]);
			struct named *row = named_get(t, names[k]);

			if (k == 0)
				row->v[0] += v;
			if (!seen)
				row->v[1] += v;
		}
		free(names);
		free(bufs);
	}
}

int report_top(const struct profile *p, const struct report_opts *o, FILE *out)
{
	struct named_table t = {0};
	double total = p->total[o->value], sum = 0;
	uint32_t shown;

	function_totals(p, o->value, &t);
	if (t.nr)
		qsort(t.rows, t.nr, sizeof(*t.rows), cmp_flat);
	shown = o->nodecount && (uint32_t)o->nodecount < t.nr ? (uint32_t)o->nodecount : t.nr;
	if (o->json) {
		fprintf(out, "{\"file\":");
		json_str(out, o->file_label);
		fprintf(out, ",\"snapshot\":");
		json_str(out, p->r->stop_desc);
		print_losses(out, p->r, true);
		fprintf(out, ",\"value\":\"%s\",\"total\":%.0f,\"functions\":[", value_names[o->value], total);
		for (uint32_t i = 0; i < shown; i++) {
			fprintf(out, "%s{\"name\":", i ? "," : "");
			json_str(out, t.rows[i].name);
			fprintf(out, ",\"flat\":%.0f,\"cum\":%.0f}", t.rows[i].v[0], t.rows[i].v[1]);
		}
		fprintf(out, "]}\n");
	} else {
		const char *unit = o->value == V_ALLOC_SPACE || o->value == V_INUSE_SPACE ? "bytes" : "objects";

		fprintf(out, "File: %s\nSnapshot: %s\nType: %s (%s)\n", o->file_label, p->r->stop_desc,
			value_names[o->value], unit);
		print_losses(out, p->r, false);
		for (uint32_t i = 0; i < shown; i++)
			sum += t.rows[i].v[0];
		fprintf(out, "Showing %u of %u functions, accounting for %.0f of %.0f total\n", shown, t.nr, sum, total);
		fprintf(out, "%12s %7s %7s %12s %7s  %s\n", "flat", "flat%", "sum%", "cum", "cum%", "function");
		sum = 0;
		for (uint32_t i = 0; i < shown; i++) {
			const struct named *r = &t.rows[i];

			sum += r->v[0];
			fprintf(out, "%12.0f %6.2f%% %6.2f%% %12.0f %6.2f%%  %s\n", r->v[0],
				total ? 100 * r->v[0] / total : 0, total ? 100 * sum / total : 0, r->v[1],
				total ? 100 * r->v[1] / total : 0, r->name);
		}
	}
	named_free(&t);
	return EXIT_OK;
}

/* ---- summary ---- */

struct live_stats {
	uint32_t pid;
	double oldest, age_sum, weight;
	uint64_t oldest_stack;
	bool any;
};

struct live_ctx {
	const struct replay *r;
	struct live_stats *st;
	uint32_t nr;
};

static void live_cb(const struct agg *a, uint64_t time, double w, void *ctx)
{
	struct live_ctx *c = ctx;
	double t = replay__seconds(c->r, time), end = replay__seconds(c->r, c->r->stop_time);

	for (uint32_t i = 0; i < c->nr; i++) {
		struct live_stats *s = &c->st[i];

		if (s->pid != a->pid)
			continue;
		if (!s->any || t < s->oldest) {
			s->oldest = t;
			s->oldest_stack = a->stack_id;
		}
		s->any = true;
		s->age_sum += (end - t) * w;
		s->weight += w;
		return;
	}
}

/* The name of the innermost frame at return address IP of PID. */
static const char *frame_name(const struct profile *p, uint32_t pid, uint64_t ip, char *buf, size_t len,
			      struct prof_line *line_out)
{
	const struct mapping *m = replay__mapping(p->r, pid, ip - 1, p->r->stop_time);
	struct prof_loc l = {.addr = ip - 1, .map = m};
	struct prof_line ln = {0};
	struct sym_result res;
	const char *name;

	symbolizer__lookup(p->sym, m, ip - 1, &res);
	if (res.nr)
		ln = (struct prof_line){.function = res.frames[0].function, .file = res.frames[0].file,
					.line = res.frames[0].line};
	name = profile__line_name(p, &l, res.nr ? &ln : NULL, buf, len);
	if (name != buf) {
		snprintf(buf, len, "%s", name);
		name = buf;
	}
	if (line_out)
		*line_out = ln;
	return name;
}

static const char *stack_leaf(const struct profile *p, uint32_t pid, uint64_t stack_id, char *buf, size_t len)
{
	uint32_t nr;
	const uint64_t *ips = profile__stack(p, pid, stack_id, &nr);

	if (!ips || !nr) {
		snprintf(buf, len, "(stack %" PRIu64 " not recorded)", stack_id);
		return buf;
	}
	return frame_name(p, pid, ips[0], buf, len, NULL);
}

int report_summary(const struct profile *p, const struct report_opts *o, FILE *out)
{
	const struct replay *r = p->r;
	struct live_ctx c = {.r = r, .nr = r->nr_procs};
	char b1[32], b2[32], b3[32], leaf[160];

	c.st = calloc(r->nr_procs ? r->nr_procs : 1, sizeof(*c.st));
	if (!c.st)
		return EXIT_FAIL;
	for (uint32_t i = 0; i < r->nr_procs; i++)
		c.st[i].pid = r->procs[i].pid;
	replay__for_each_live(r, live_cb, &c);
	if (o->json)
		fprintf(out, "{\"file\":"), json_str(out, o->file_label), fprintf(out, ",\"snapshot\":"),
			json_str(out, r->stop_desc), print_losses(out, r, true), fprintf(out, ",\"processes\":[");
	else
		fprintf(out, "File: %s\nSnapshot: %s\nSampling: %s\n", o->file_label, r->stop_desc, sampling_text(r)),
			print_losses(out, r, false);
	for (uint32_t i = 0, shown = 0; i < r->nr_procs; i++) {
		const struct process *pr = &r->procs[i];
		const struct live_stats *ls = &c.st[i];
		double avg_age = ls->weight > 0 ? ls->age_sum / ls->weight : 0;
		const char *oldest_fn;

		if (!pr->selected) /* --pid, --comm */
			continue;
		oldest_fn = ls->any ? stack_leaf(p, pr->pid, ls->oldest_stack, leaf, sizeof(leaf)) : "";
		if (o->json) {
			fprintf(out, "%s{\"pid\":%u,\"ppid\":%u,\"comm\":", shown++ ? "," : "", pr->pid, pr->ppid);
			json_str(out, pr->comm);
			fprintf(out, ",\"cmdline\":");
			json_str(out, pr->cmdline);
			fprintf(out,
				",\"allocated_bytes\":%.0f,\"allocated_count\":%.0f,\"freed_bytes\":%.0f,\"freed_count\":%.0f,"
				"\"live_bytes\":%.0f,\"live_count\":%.0f,\"peak_bytes\":%.0f,\"peak_time\":%.6f,"
				"\"largest_request\":%" PRIu64 ",\"unknown_frees\":%" PRIu64 ",\"rss_max\":%" PRIu64,
				pr->alloc_bytes, pr->alloc_count, pr->free_bytes, pr->free_count, pr->live_bytes,
				pr->live_count, pr->peak_bytes, replay__seconds(r, pr->peak_time), pr->largest,
				pr->unknown_frees, pr->rss_max);
			if (ls->any) {
				fprintf(out, ",\"oldest_live_time\":%.6f,\"oldest_live_function\":", ls->oldest);
				json_str(out, oldest_fn);
				fprintf(out, ",\"average_live_age\":%.6f", avg_age);
			}
			if (pr->exited)
				fprintf(out, ",\"exit_status\":%" PRId64, pr->exit_status);
			fputc('}', out);
			continue;
		}
		fprintf(out, "\nprocess %u (%s) parent %u: %s\n", pr->pid, pr->comm, pr->ppid, pr->cmdline);
		fprintf(out, "  allocated      %12.0f bytes in %10.0f blocks\n", pr->alloc_bytes, pr->alloc_count);
		fprintf(out, "  freed          %12.0f bytes in %10.0f blocks\n", pr->free_bytes, pr->free_count);
		fprintf(out, "  live           %12.0f bytes in %10.0f blocks\n", pr->live_bytes, pr->live_count);
		fprintf(out, "  peak live      %12s bytes at %.3fs\n", fmt_bytes(pr->peak_bytes, b1, sizeof(b1)),
			replay__seconds(r, pr->peak_time));
		fprintf(out, "  largest request %11s bytes\n", fmt_bytes((double)pr->largest, b2, sizeof(b2)));
		if (ls->any) {
			fprintf(out, "  oldest live    allocated at %.3fs by %s\n", ls->oldest, oldest_fn);
			fprintf(out, "  average age    %.3fs over live blocks\n", avg_age);
		}
		if (pr->rss_max)
			fprintf(out, "  max RSS        %12s bytes\n", fmt_bytes((double)pr->rss_max, b3, sizeof(b3)));
		if (pr->unknown_frees)
			fprintf(out, "  unknown frees  %12" PRIu64 " (blocks allocated before recording began)\n",
				pr->unknown_frees);
		if (pr->exited)
			fprintf(out, "  exited         status %" PRId64 " at %.3fs\n", pr->exit_status,
				replay__seconds(r, pr->t_exit));
	}
	if (o->json)
		fprintf(out, "]}\n");
	if (!o->json && (r->unknown_frees || (r->nr_snaps == 0 && r->status == HS_READ_TRUNCATED)))
		fprintf(out, "\nnote: live bytes exclude memory allocated before recording began\n");
	free(c.st);
	return EXIT_OK;
}

/* ---- leaks ---- */

struct leak_row {
	uint32_t pid;
	uint64_t stack_id;
	double bytes, count, oldest;
};

struct leak_ctx {
	const struct replay *r;
	const struct profile *p;
	double min_age;
	struct hmap idx;
	struct leak_row *rows;
	uint32_t nr, cap;
};

static void leak_cb(const struct agg *a, uint64_t time, double w, void *ctx)
{
	struct leak_ctx *c = ctx;
	double t = replay__seconds(c->r, time);
	struct hmap_slot *s;
	bool created;

	if (replay__seconds(c->r, c->r->stop_time) - t < c->min_age)
		return;
	s = hmap_put(&c->idx, a->pid, profile__stack_key(c->p, a->pid, a->stack_id), &created);
	if (!s)
		exit(EXIT_FAIL);
	if (created) {
		if (c->nr == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 64;
			c->rows = realloc(c->rows, sizeof(*c->rows) * c->cap);
			if (!c->rows)
				exit(EXIT_FAIL);
		}
		c->rows[c->nr] = (struct leak_row){.pid = a->pid, .stack_id = a->stack_id, .oldest = t};
		s->val = c->nr++;
	}
	struct leak_row *row = &c->rows[s->val];

	row->bytes += (double)a->size * w;
	row->count += w;
	if (t < row->oldest)
		row->oldest = t;
}

static int cmp_leak(const void *a, const void *b)
{
	const struct leak_row *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Writes up to 12 frames of a stack, leaf first. */
static void print_stack(const struct profile *p, uint32_t pid, uint64_t stack_id, FILE *out, bool json)
{
	uint32_t nr;
	const uint64_t *ips = profile__stack(p, pid, stack_id, &nr);

	for (uint32_t i = 0; i < nr && i < 12; i++) {
		struct prof_line ln;
		char buf[160];
		const char *name = frame_name(p, pid, ips[i], buf, sizeof(buf), &ln);

		if (json) {
			fprintf(out, "%s", i ? "," : "");
			json_str(out, name);
		} else if (ln.file && ln.line) {
			const char *base = strrchr(ln.file, '/');

			fprintf(out, "      %s (%s:%u)\n", name, base ? base + 1 : ln.file, ln.line);
		} else {
			fprintf(out, "      %s\n", name);
		}
	}
}

int report_leaks(const struct profile *p, const struct report_opts *o, FILE *out)
{
	struct leak_ctx c = {.r = p->r, .p = p, .min_age = o->min_age};
	uint32_t shown;

	replay__for_each_live(p->r, leak_cb, &c);
	if (c.nr)
		qsort(c.rows, c.nr, sizeof(*c.rows), cmp_leak);
	shown = o->nodecount && (uint32_t)o->nodecount < c.nr ? (uint32_t)o->nodecount : c.nr;
	if (o->json) {
		fprintf(out, "{\"file\":");
		json_str(out, o->file_label);
		print_losses(out, p->r, true);
		fprintf(out, ",\"min_age\":%.6f,\"leaks\":[", o->min_age);
	} else {
		double total = 0;

		for (uint32_t i = 0; i < c.nr; i++)
			total += c.rows[i].bytes;
		fprintf(out, "File: %s\nSnapshot: %s\nLive allocations older than %.3fs: %.0f bytes in %u stacks\n",
			o->file_label, p->r->stop_desc, o->min_age, total, c.nr);
		print_losses(out, p->r, false);
	}
	for (uint32_t i = 0; i < shown; i++) {
		const struct leak_row *row = &c.rows[i];

		if (o->json) {
			fprintf(out,
				"%s{\"pid\":%u,\"bytes\":%.0f,\"count\":%.0f,\"oldest\":%.6f,\"stack\":[", i ? "," : "",
				row->pid, row->bytes, row->count, row->oldest);
			print_stack(p, row->pid, row->stack_id, out, true);
			fprintf(out, "]}");
		} else {
			fprintf(out, "\n%12.0f bytes in %.0f blocks, pid %u, oldest allocated at %.3fs\n", row->bytes,
				row->count, row->pid, row->oldest);
			print_stack(p, row->pid, row->stack_id, out, false);
		}
	}
	if (o->json)
		fprintf(out, "]}\n");
	hmap_free(&c.idx);
	free(c.rows);
	return EXIT_OK;
}

/* ---- stats ---- */


int report_stats(const struct profile *p, const struct report_opts *o, FILE *out)
{
	const struct replay *r = p->r;
	uint64_t stacks = r->nr_stack_slots;

	if (o->json) {
		fprintf(out, "{\"file\":");
		json_str(out, o->file_label);
		fprintf(out, ",\"records\":%" PRIu64 ",\"events\":%" PRIu64 ",\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64
			     ",\"unknown_frees\":%" PRIu64 ",\"restored\":%" PRIu64 ",\"stacks\":%" PRIu64
			     ",\"mappings\":%u,\"frames\":%" PRIu64 ",\"skipped_records\":%" PRIu64
			     ",\"sample_rate\":%" PRIu64 ",\"peak_live_bytes\":%.0f,\"probes\":%u,\"counters\":{",
			r->records, r->events, r->allocs, r->frees, r->unknown_frees, r->restored, stacks, r->nr_maps,
			r->frames, r->skipped, r->sample_rate, r->peak_bytes, r->nr_probes);
		for (uint32_t i = 0; i < r->nr_counters; i++) {
			fprintf(out, "%s", i ? "," : "");
			json_str(out, r->counters[i].name);
			fprintf(out, ":%" PRIu64, r->counters[i].value);
		}
		fprintf(out, "}}\n");
		return EXIT_OK;
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
	return EXIT_OK;
}

/* ---- info ---- */

static const char *origin_name(uint32_t o)
{
	static const char *const n[] = {"attached", "started", "forked", "exec"};

	return o < 4 ? n[o] : "unknown";
}

static const char *snap_origin(uint32_t o)
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

int report_info(const struct replay *r, const struct report_opts *o, FILE *out)
{
	char hex[2 * HS_MAX_BUILD_ID + 1];

	if (o->json) {
		fprintf(out, "{\"file\":");
		json_str(out, o->file_label);
		fprintf(out, ",\"format\":\"%d.%u\",\"status\":\"%s\",\"tool_version\":", r->format_major, r->format_minor,
			status_name(r->status));
		json_str(out, r->tool_version);
		fprintf(out, ",\"hostname\":");
		json_str(out, r->hostname);
		fprintf(out, ",\"kernel\":");
		json_str(out, r->kernel);
		fprintf(out, ",\"command\":");
		json_str(out, r->cmdline);
		fprintf(out, ",\"via\":");
		json_str(out, r->via);
		fprintf(out, ",\"sample_rate\":%" PRIu64 ",\"stack_mode\":\"%s\",\"first_time\":%.6f,\"last_time\":%.6f",
			r->sample_rate, stack_mode_name(r->stack_mode), replay__seconds(r, r->first_time),
			replay__seconds(r, r->last_time));
		fprintf(out, ",\"processes\":[");
		for (uint32_t i = 0; i < r->nr_procs; i++) {
			fprintf(out, "%s{\"pid\":%u,\"ppid\":%u,\"origin\":\"%s\",\"comm\":", i ? "," : "", r->procs[i].pid,
				r->procs[i].ppid, origin_name(r->procs[i].origin));
			json_str(out, r->procs[i].comm);
			fprintf(out, ",\"exe\":");
			json_str(out, r->procs[i].exe);
			fputc('}', out);
		}
		fprintf(out, "],\"mappings\":[");
		for (uint32_t i = 0; i < r->nr_maps; i++) {
			const struct mapping *m = &r->maps[i];

			fprintf(out, "%s{\"pid\":%u,\"start\":%" PRIu64 ",\"end\":%" PRIu64 ",\"offset\":%" PRIu64 ",\"path\":",
				i ? "," : "", m->pid, m->start, m->end, m->offset);
			json_str(out, m->path);
			fprintf(out, ",\"build_id\":\"%s\"}", hs_hex(m->build_id, m->build_id_len, hex));
		}
		fprintf(out, "],\"snapshots\":[");
		for (uint32_t i = 0; i < r->nr_snaps; i++) {
			fprintf(out, "%s{\"index\":%u,\"time\":%.6f,\"origin\":\"%s\",\"label\":", i ? "," : "", i + 1,
				replay__seconds(r, r->snaps[i].time), snap_origin(r->snaps[i].origin));
			json_str(out, r->snaps[i].label);
			fprintf(out, ",\"live_bytes\":%" PRIu64 "}", r->snaps[i].live_bytes);
		}
		fprintf(out, "]}\n");
		return EXIT_OK;
	}
	fprintf(out, "File: %s\nFormat: %d.%u, %s (%" PRIu64 " bytes, %" PRIu64 " frames)\n", o->file_label,
		r->format_major, r->format_minor, status_name(r->status), r->file_size, r->frames);
	if (r->status != HS_READ_END && r->error[0])
		fprintf(out, "  %s\n", r->error);
	fprintf(out, "Recorder: heapsnap %s on %s, kernel %s\n", r->tool_version, r->hostname, r->kernel);
	fprintf(out, "Command: %s\n", r->cmdline && *r->cmdline ? r->cmdline : "(attached to a running process)");
	if (r->via && *r->via)
		fprintf(out, "Recorded via %s\n", r->via);
	fprintf(out, "Sampling: %s", r->sample_rate ? "Poisson, mean " : sampling_text(r));
	if (r->sample_rate)
		fprintf(out, "%" PRIu64 " bytes", r->sample_rate);
	if (r->stack_mode == HS_STACK_DWARF)
		fprintf(out, "; stacks: dwarf (%" PRIu64 " captures, unwound offline)\n", r->dwarf_stacks);
	else
		fprintf(out, "; stacks: %s, up to %" PRIu64 " frames\n", stack_mode_name(r->stack_mode), r->max_stack);
	fprintf(out, "Time range: %.3fs to %.3fs\n", replay__seconds(r, r->first_time), replay__seconds(r, r->last_time));
	fprintf(out, "Processes: %u\n", r->nr_procs);
	for (uint32_t i = 0; i < r->nr_procs; i++) {
		const struct process *p = &r->procs[i];

		fprintf(out, "  %u (%s, %s, parent %u) %s build-id %s\n", p->pid, p->comm, origin_name(p->origin), p->ppid,
			p->exe, p->build_id_len ? hs_hex(p->build_id, p->build_id_len, hex) : "none");
	}
	fprintf(out, "Mappings: %u\n", r->nr_maps);
	for (uint32_t i = 0; i < r->nr_maps; i++) {
		const struct mapping *m = &r->maps[i];

		fprintf(out, "  %u %016" PRIx64 "-%016" PRIx64 " @%" PRIx64 " %s build-id %s%s\n", m->pid, m->start, m->end,
			m->offset, m->path, m->build_id_len ? hs_hex(m->build_id, m->build_id_len, hex) : "none",
			m->t_unmap != UINT64_MAX ? " (unmapped later)" : "");
	}
	fprintf(out, "Snapshots: %u\n", r->nr_snaps);
	for (uint32_t i = 0; i < r->nr_snaps; i++)
		fprintf(out, "  %u  %-12s %10.3fs  %-8s live %" PRIu64 " bytes\n", i + 1, r->snaps[i].label,
			replay__seconds(r, r->snaps[i].time), snap_origin(r->snaps[i].origin), r->snaps[i].live_bytes);
	return EXIT_OK;
}

/* ---- diff ---- */

/* A stack's identity across files: symbolized function, file and line of every frame,
 * because addresses move with ASLR and rebuilds. */
static char *stack_key(const struct profile *p, const struct prof_sample *s)
{
	char *key = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&key, &len);

	for (uint32_t i = 0; i < s->nr_locs; i++) {
		const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + i]];

		for (uint32_t k = 0; k < (l->nr_lines ? l->nr_lines : 1); k++) {
			const struct prof_line *ln = l->nr_lines ? &p->lines[l->first_line + k] : NULL;
			char buf[160];

			if (ln && ln->function) {
				const char *base = ln->file ? strrchr(ln->file, '/') : NULL;

				fprintf(m, "%s%s (%s:%u)", i || k ? " <- " : "", ln->function,
					ln->file ? (base ? base + 1 : ln->file) : "?", ln->line);
			} else {
				/* Unsymbolized: module and offset are stable across ASLR. */
				fprintf(m, "%s%s", i || k ? " <- " : "", profile__line_name(p, l, NULL, buf, sizeof(buf)));
			}
		}
	}
	fclose(m);
	return key;
}

static void diff_add(struct named_table *stacks, struct named_table *funcs, const struct profile *p, int side,
		     int value)
{
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];
		char *key = stack_key(p, s);

		named_get(stacks, key)->v[side] += s->v[value];
		free(key);
	}
	struct named_table t = {0};

	function_totals(p, value, &t);
	for (uint32_t i = 0; i < t.nr; i++) {
		struct named *row = named_get(funcs, t.rows[i].name);

		row->v[side] += t.rows[i].v[0];
		row->extra[side] += t.rows[i].v[1];
	}
	named_free(&t);
}

static int cmp_growth(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	double dx = x->v[1] - x->v[0], dy = y->v[1] - y->v[0];

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void diff_rows(FILE *out, struct named_table *t, const struct report_opts *o, bool json, const char *what)
{
	uint32_t shown = 0;

	if (t->nr)
		qsort(t->rows, t->nr, sizeof(*t->rows), cmp_growth);
	if (!json)
		fprintf(out, "\n%s by growth in %s:\n%14s %14s %14s  %s\n", what, value_names[o->value], "delta", "from",
			"to", what);
	for (uint32_t i = 0; i < t->nr; i++) {
		const struct named *r = &t->rows[i];

		if (llround(r->v[1] - r->v[0]) == 0)
			continue;
		if (o->nodecount && shown >= (uint32_t)o->nodecount)
			break;
		if (json) {
			fprintf(out, "%s{\"name\":", shown ? "," : "");
			json_str(out, r->name);
			fprintf(out, ",\"from\":%.0f,\"to\":%.0f,\"delta\":%.0f}", r->v[0], r->v[1], r->v[1] - r->v[0]);
		} else {
			fprintf(out, "%+14.0f %14.0f %14.0f  %s\n", r->v[1] - r->v[0], r->v[0], r->v[1], r->name);
		}
		shown++;
	}
}

int report_diff(const struct profile *a, const struct profile *b, const struct report_opts *o, FILE *out)
{
	struct named_table stacks = {0}, funcs = {0};

	diff_add(&stacks, &funcs, a, 0, o->value);
	diff_add(&stacks, &funcs, b, 1, o->value);
	if (o->json) {
		fprintf(out, "{\"value\":\"%s\",\"from\":{\"file\":", value_names[o->value]);
		json_str(out, a->r->path);
		fprintf(out, ",\"snapshot\":");
		json_str(out, a->r->stop_desc);
		fprintf(out, ",\"total\":%.0f},\"to\":{\"file\":", a->total[o->value]);
		json_str(out, b->r->path);
		fprintf(out, ",\"snapshot\":");
		json_str(out, b->r->stop_desc);
		fprintf(out, ",\"total\":%.0f},\"delta\":%.0f,\"functions\":[", b->total[o->value],
			b->total[o->value] - a->total[o->value]);
		diff_rows(out, &funcs, o, true, "functions");
		fprintf(out, "],\"stacks\":[");
		diff_rows(out, &stacks, o, true, "stacks");
		fprintf(out, "]}\n");
	} else {
		fprintf(out, "From: %s, %s: %.0f\nTo:   %s, %s: %.0f\nDelta %s: %+.0f\n", a->r->path, a->r->stop_desc,
			a->total[o->value], b->r->path, b->r->stop_desc, b->total[o->value], value_names[o->value],
			b->total[o->value] - a->total[o->value]);
		diff_rows(out, &funcs, o, false, "functions (flat)");
		diff_rows(out, &stacks, o, false, "stacks (leaf first)");
	}
	named_free(&stacks);
	named_free(&funcs);
	return EXIT_OK;
}

/* ---- timeline ---- */

/* The live heap and RSS over time (replayed with the target's `timeline`), with the
 * snapshots and the peak beside the points. */
int report_timeline(const struct replay *r, const struct report_opts *o, FILE *out)
{
	if (o->json) {
		fprintf(out, "{\"file\":");
		json_str(out, o->file_label);
		print_losses(out, r, true);
		fprintf(out, ",\"points\":[");
		for (uint32_t i = 0; i < r->nr_tl; i++) {
			const struct timeline_point *t = &r->tl[i];

			fprintf(out, "%s{\"time\":%.6f,\"live_bytes\":%.0f,\"live_blocks\":%.0f,\"rss_bytes\":%" PRIu64 "}",
				i ? "," : "", replay__seconds(r, t->time), t->live_bytes, t->live_blocks, t->rss_bytes);
		}
		fprintf(out, "],\"snapshots\":[");
		for (uint32_t i = 0; i < r->nr_snaps; i++) {
			fprintf(out, "%s{\"label\":", i ? "," : "");
			json_str(out, r->snaps[i].label);
			fprintf(out, ",\"origin\":\"%s\",\"time\":%.6f,\"live_bytes\":%" PRIu64 "}",
				snap_origin(r->snaps[i].origin), replay__seconds(r, r->snaps[i].time), r->snaps[i].live_bytes);
		}
		fprintf(out, "],\"peak\":{\"time\":%.6f,\"live_bytes\":%.0f}}\n", replay__seconds(r, r->peak_time),
			r->peak_bytes);
		return ferror(out) ? -EIO : 0;
	}
	fprintf(out, "File: %s\n", o->file_label);
	print_losses(out, r, false);
	fprintf(out, "Peak: %.0f bytes at %.3fs\n", r->peak_bytes, replay__seconds(r, r->peak_time));
	for (uint32_t i = 0; i < r->nr_snaps; i++)
		fprintf(out, "Snapshot %u: %s at %.3fs (%s), %" PRIu64 " bytes live\n", i + 1, r->snaps[i].label,
			replay__seconds(r, r->snaps[i].time), snap_origin(r->snaps[i].origin), r->snaps[i].live_bytes);
	fprintf(out, "%12s %14s %12s %14s\n", "time(s)", "live_bytes", "live_blocks", "rss_bytes");
	for (uint32_t i = 0; i < r->nr_tl; i++) {
		const struct timeline_point *t = &r->tl[i];

		fprintf(out, "%12.6f %14.0f %12.0f %14" PRIu64 "\n", replay__seconds(r, t->time), t->live_bytes,
			t->live_blocks, t->rss_bytes);
	}
	return ferror(out) ? -EIO : 0;
}

/* ---- speedscope ---- */

static void json_num(FILE *out, double v)
{
	if (v == (double)(int64_t)v)
		fprintf(out, "%" PRId64, (int64_t)v);
	else
		fprintf(out, "%.3f", v);
}

/* speedscope's own file format (https://www.speedscope.app/file-format-schema.json): the
 * frames shared, one "sampled" profile per sample type, each sample a stack root first with
 * its weight. Frames are functions (inline ones included) as the other reports name them. */
int report_speedscope(const struct profile *p, const struct report_opts *o, FILE *out)
{
	static const int order[] = {V_INUSE_SPACE, V_INUSE_OBJECTS, V_ALLOC_SPACE, V_ALLOC_OBJECTS};
	struct named_table frames = {0};
	uint32_t **stacks = calloc(p->nr_samples ? p->nr_samples : 1, sizeof(*stacks));
	int *depth = calloc(p->nr_samples ? p->nr_samples : 1, sizeof(*depth));

	if (!stacks || !depth)
		exit(EXIT_FAIL);
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const char **names;
		char(*bufs)[160];
		int n = sample_frames(p, &p->samples[i], &names, &bufs);

		stacks[i] = malloc(sizeof(**stacks) * (size_t)(n ? n : 1));
		if (!stacks[i])
			exit(EXIT_FAIL);
		for (int k = 0; k < n; k++) /* leaf first in, root first out */
			stacks[i][n - 1 - k] = (uint32_t)(named_get(&frames, names[k]) - frames.rows);
		depth[i] = n;
		free(names);
		free(bufs);
	}
	fprintf(out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"name\":");
	json_str(out, o->file_label);
	fprintf(out, ",\"exporter\":\"heapsnap-analyze %s\",\"activeProfileIndex\":0,\"shared\":{\"frames\":[",
		HEAPSNAP_VERSION);
	for (uint32_t i = 0; i < frames.nr; i++) {
		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, frames.rows[i].name);
		fputc('}', out);
	}
	fprintf(out, "]},\"profiles\":[");
	for (size_t t = 0; t < sizeof(order) / sizeof(order[0]); t++) {
		int v = order[t];
		bool first = true;

		fprintf(out, "%s{\"type\":\"sampled\",\"name\":\"%s\",\"unit\":\"%s\",\"startValue\":0,\"endValue\":", t ? "," : "",
			value_names[v], v == V_INUSE_SPACE || v == V_ALLOC_SPACE ? "bytes" : "none");
		json_num(out, p->total[v]);
		fprintf(out, ",\"samples\":[");
		for (uint32_t i = 0; i < p->nr_samples; i++) {
			if (p->samples[i].v[v] <= 0)
				continue;
			fprintf(out, "%s[", first ? "" : ",");
			for (int k = 0; k < depth[i]; k++)
				fprintf(out, "%s%u", k ? "," : "", stacks[i][k]);
			fputc(']', out);
			first = false;
		}
		fprintf(out, "],\"weights\":[");
		first = true;
		for (uint32_t i = 0; i < p->nr_samples; i++) {
			if (p->samples[i].v[v] <= 0)
				continue;
			fprintf(out, "%s", first ? "" : ",");
			json_num(out, p->samples[i].v[v]);
			first = false;
		}
		fprintf(out, "]}");
	}
	fprintf(out, "]}\n");
	for (uint32_t i = 0; i < p->nr_samples; i++)
		free(stacks[i]);
	free(stacks);
	free(depth);
	named_free(&frames);
	return ferror(out) ? -EIO : 0;
}

/* ---- temporary ---- */

static int cmp_temporary(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	if (x->v[0] != y->v[0])
		return x->v[0] < y->v[0] ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Temporary allocations by the function that made them: see the replay's temporary_note()
 * for the definition, and `temporary` in --help for why that one. */
int report_temporary(const struct profile *p, const struct report_opts *o, FILE *out)
{
	const struct replay *r = p->r;
	struct named_table t = {0};
	double tot_temp = 0, tot_alloc = 0;
	uint32_t shown;

	for (uint32_t i = 0; i < r->nr_aggs; i++) {
		const struct agg *a = &r->aggs[i];
		char buf[160];
		struct named *n;

		if (a->alloc_objects <= 0)
			continue;
		n = named_get(&t, stack_leaf(p, a->pid, a->stack_id, buf, sizeof(buf)));
		n->v[0] += a->temp_objects;
		n->v[1] += a->temp_space;
		n->extra[0] += a->alloc_objects;
		n->extra[1] += a->alloc_space;
		tot_temp += a->temp_objects;
		tot_alloc += a->alloc_objects;
	}
	if (t.nr)
		qsort(t.rows, t.nr, sizeof(*t.rows), cmp_temporary);
	shown = o->nodecount && (uint32_t)o->nodecount < t.nr ? (uint32_t)o->nodecount : t.nr;
	while (shown && t.rows[shown - 1].v[0] <= 0)
		shown--;
	if (o->json) {
		fprintf(out, "{\"file\":");
		json_str(out, o->file_label);
		print_losses(out, r, true);
		fprintf(out, ",\"temporary\":%.0f,\"allocations\":%.0f,\"functions\":[", tot_temp, tot_alloc);
		for (uint32_t i = 0; i < shown; i++) {
			fprintf(out, "%s{\"function\":", i ? "," : "");
			json_str(out, t.rows[i].name);
			fprintf(out, ",\"temporary\":%.0f,\"temporary_bytes\":%.0f,\"allocations\":%.0f}", t.rows[i].v[0],
				t.rows[i].v[1], t.rows[i].extra[0]);
		}
		fprintf(out, "]}\n");
	} else {
		fprintf(out, "File: %s\n", o->file_label);
		print_losses(out, r, false);
		fprintf(out, "Temporary allocations (freed before their thread's next allocation): %.0f of %.0f (%.1f%%)\n",
			tot_temp, tot_alloc, tot_alloc > 0 ? 100 * tot_temp / tot_alloc : 0);
		fprintf(out, "%12s %14s %7s  %s\n", "temporary", "bytes", "% own", "function");
		for (uint32_t i = 0; i < shown; i++)
			fprintf(out, "%12.0f %14.0f %6.1f%%  %s\n", t.rows[i].v[0], t.rows[i].v[1],
				t.rows[i].extra[0] > 0 ? 100 * t.rows[i].v[0] / t.rows[i].extra[0] : 0, t.rows[i].name);
	}
	named_free(&t);
	return ferror(out) ? -EIO : 0;
}
