// SPDX-License-Identifier: MIT
/* Report rows, computed once for every emitter. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "rows.h"

int64_t names__intern(struct names *n, const char *name)
{
	uint64_t h = hmap_str_hash(name);

	/* Names of one hash and length chain through the second key. */
	for (uint64_t k2 = strlen(name);; k2 += 1ull << 32) {
		bool created;
		struct hmap_slot *s = hmap_put(&n->idx, h, k2, &created);
		char *copy;

		if (!s)
			return -ENOMEM;
		if (!created) {
			if (!strcmp(n->v[s->val], name))
				return (int64_t)s->val;
			continue;
		}
		if (n->nr == n->cap) {
			uint32_t ncap = n->cap ? n->cap * 2 : 256;
			char **v = realloc(n->v, sizeof(*v) * ncap);

			if (!v) {
				hmap_remove_slot(&n->idx, s);
				return -ENOMEM;
			}
			n->v = v;
			n->cap = ncap;
		}
		copy = strdup(name);
		if (!copy) {
			hmap_remove_slot(&n->idx, s);
			return -ENOMEM;
		}
		n->v[n->nr] = copy;
		s->val = n->nr;
		return n->nr++;
	}
}

void names__free(struct names *n)
{
	for (uint32_t i = 0; n && i < n->nr; i++)
		free(n->v[i]);
	if (n) {
		free(n->v);
		hmap_free(&n->idx);
		memset(n, 0, sizeof(*n));
	}
}

/* Values keyed by name: what every by-function or by-stack report accumulates into. */
struct named_table {
	struct names names;
	double (*v)[4];
	char **shown; /* diff's stacks: the name to show, when it is not the key */
	/* By row, the last sample (its index + 1) that added to its cum: a function that recurs
	 * counts once per stack, found in one look, where a scan of the frames before was
	 * quadratic in the stack's depth. */
	uint32_t *cum_by;
	uint32_t cap;
};

/* The values of NAME's row, created zero (its number in *INDEX when not NULL); NULL when out
 * of memory. */
static double *named_row(struct named_table *t, const char *name, uint32_t *index)
{
	int64_t i = names__intern(&t->names, name);

	if (i < 0)
		return NULL;
	if (t->cap < t->names.cap) {
		double(*v)[4] = realloc(t->v, sizeof(*v) * t->names.cap);
		char **shown;
		uint32_t *cum_by;

		if (!v)
			return NULL;
		t->v = v;
		shown = realloc(t->shown, sizeof(*shown) * t->names.cap);
		if (!shown)
			return NULL;
		t->shown = shown;
		cum_by = realloc(t->cum_by, sizeof(*cum_by) * t->names.cap);
		if (!cum_by)
			return NULL;
		t->cum_by = cum_by;
		memset(v + t->cap, 0, sizeof(*v) * (t->names.cap - t->cap));
		memset(shown + t->cap, 0, sizeof(*shown) * (t->names.cap - t->cap));
		memset(cum_by + t->cap, 0, sizeof(*cum_by) * (t->names.cap - t->cap));
		t->cap = t->names.cap;
	}
	if (index)
		*index = (uint32_t)i;
	return t->v[i];
}

static double *named_get(struct named_table *t, const char *name)
{
	return named_row(t, name, NULL);
}

/* Takes row I's name from T. */
static char *named_take(struct named_table *t, uint32_t i)
{
	char *s = t->names.v[i];

	t->names.v[i] = NULL;
	return s;
}

static void named_free(struct named_table *t)
{
	for (uint32_t i = 0; t->shown && i < t->names.nr; i++)
		free(t->shown[i]);
	free(t->shown);
	free(t->cum_by);
	names__free(&t->names);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

int rows__sample_frames(const struct profile *p, const struct prof_sample *s, const char ***out,
			char (**bufs)[ROWS_NAME_MAX])
{
	uint32_t n = 0;
	const char **names;
	char(*b)[ROWS_NAME_MAX];

	for (uint32_t i = 0; i < s->nr_locs; i++) {
		const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + i]];

		n += l->nr_lines ? l->nr_lines : 1;
	}
	names = malloc(sizeof(*names) * (n ? n : 1));
	b = malloc(sizeof(*b) * (n ? n : 1));
	if (!names || !b) {
		free(names);
		free(b);
		return -ENOMEM;
	}
	n = 0;
	for (uint32_t i = 0; i < s->nr_locs; i++) {
		const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + i]];
		uint32_t nl = l->nr_lines ? l->nr_lines : 1;

		for (uint32_t k = 0; k < nl; k++, n++)
			names[n] = profile__line_name(p, l, l->nr_lines ? &p->lines[l->first_line + k] : NULL, b[n],
						      sizeof(b[n]));
	}
	*out = names;
	*bufs = b;
	return (int)n;
}

/* A Python frame: its function alone (the file and line go in *LINE_OUT, which the reports
 * show beside it). */
static const char *python_frame_name(const struct profile *p, uint32_t pid, uint64_t ip, char *buf, size_t len,
				     struct prof_line *line_out)
{
	struct py_frame f;

	if (py_codes__frame(&p->r->py, pid, ip, &f))
		f = (struct py_frame){.function = "[python frame: out of memory]"};
	snprintf(buf, len, "%s", f.function);
	if (line_out)
		*line_out = (struct prof_line){.function = f.function, .system_name = f.display, .file = f.file,
					       .line = f.known ? f.line : 0, .start_line = f.first_line};
	return buf;
}

const char *rows__frame_name(const struct profile *p, uint32_t pid, uint64_t ip, char *buf, size_t len,
			     struct prof_line *line_out)
{
	const struct mapping *m;
	struct prof_loc l;
	struct prof_line ln = {0};
	struct sym_result res;
	const char *name;

	if (HS_IS_PYFRAME(ip))
		return python_frame_name(p, pid, ip, buf, len, line_out);
	m = replay__mapping(p->r, pid, ip - 1, p->r->stop_time);
	l = (struct prof_loc){.addr = ip - 1, .map = m};
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
	return rows__frame_name(p, pid, ips[0], buf, len, NULL);
}

/* ---- functions ---- */

/* Adds each function's flat (v[0]) and cum (v[1]) of VALUE to T, and their variances
 * (v[2], v[3]). */
static int function_totals(const struct profile *p, int value, struct named_table *t)
{
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];
		double v = s->v[value], var = s->var[value];
		const char **names;
		char(*bufs)[ROWS_NAME_MAX];
		int n;

		if (v == 0)
			continue;
		n = rows__sample_frames(p, s, &names, &bufs);
		if (n < 0)
			return n;
		for (int k = 0; k < n; k++) {
			uint32_t r;
			double *row = named_row(t, names[k], &r);

			if (!row) {
				free(names);
				free(bufs);
				return -ENOMEM;
			}
			if (k == 0) {
				row[0] += v;
				row[2] += var;
			}
			if (t->cum_by[r] != i + 1) {
				t->cum_by[r] = i + 1;
				row[1] += v;
				row[3] += var;
			}
		}
		free(names);
		free(bufs);
	}
	return 0;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct fn_row *x = a, *y = b;

	if (x->flat != y->flat)
		return x->flat < y->flat ? 1 : -1;
	if (x->cum != y->cum)
		return x->cum < y->cum ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Adds each Python function's own (v[0]: the innermost Python frame, the code whose line made
 * the block) and cum (v[1]) of VALUE to T, with their variances (v[2], v[3]). */
static int python_totals(const struct profile *p, int value, struct named_table *t)
{
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];
		double v = s->v[value], var = s->var[value];
		bool own = true;

		for (uint32_t k = 0; v != 0 && k < s->nr_locs; k++) {
			const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + k]];
			uint32_t r;
			double *row;

			if (!l->python || !l->nr_lines)
				continue;
			row = named_row(t, profile__line_name(p, l, &p->lines[l->first_line], NULL, 0), &r);
			if (!row)
				return -ENOMEM;
			if (own) {
				row[0] += v;
				row[2] += var;
				own = false;
			}
			if (t->cum_by[r] != i + 1) {
				t->cum_by[r] = i + 1;
				row[1] += v;
				row[3] += var;
			}
		}
	}
	return 0;
}

static int fn_rows_of(const struct profile *p, int value, bool python, struct fn_rows *out)
{
	struct named_table t = {0};
	int err = python ? python_totals(p, value, &t) : function_totals(p, value, &t);

	memset(out, 0, sizeof(*out));
	out->total = p->total[value];
	out->total_var = p->total_var[value];
	if (!err && t.names.nr) {
		out->rows = malloc(sizeof(*out->rows) * t.names.nr);
		if (!out->rows)
			err = -ENOMEM;
	}
	if (err) {
		named_free(&t);
		return err;
	}
	for (uint32_t i = 0; i < t.names.nr; i++)
		out->rows[i] = (struct fn_row){.name = named_take(&t, i), .flat = t.v[i][0], .cum = t.v[i][1],
					       .flat_var = t.v[i][2], .cum_var = t.v[i][3]};
	out->nr = t.names.nr;
	if (out->nr)
		qsort(out->rows, out->nr, sizeof(*out->rows), cmp_fn);
	named_free(&t);
	return 0;
}

int rows__functions(const struct profile *p, int value, struct fn_rows *out)
{
	return fn_rows_of(p, value, false, out);
}

int rows__python_functions(const struct profile *p, int value, struct fn_rows *out)
{
	return fn_rows_of(p, value, true, out);
}

void fn_rows__free(struct fn_rows *t)
{
	for (uint32_t i = 0; t && i < t->nr; i++)
		free(t->rows[i].name);
	if (t) {
		free(t->rows);
		memset(t, 0, sizeof(*t));
	}
}

/* When a block of PID's stops ageing: at its process's exit, which frees it, if that came
 * before END (the moment replayed to), or at its interpreter's finalization where the
 * replay stopped it there. Aged to the end of the recording, the blocks of a process that
 * exited at 0.383 s read 11.848 s old. */
static double block_end(const struct replay *r, uint32_t pid, double end)
{
	const struct process *pr = replay__process(r, pid);
	double t;

	if (pr && pr->py_final)
		t = replay__seconds(r, pr->py_final_time);
	else if (!pr || !pr->exited)
		return end;
	else
		t = replay__seconds(r, pr->t_exit);
	return t < end ? t : end;
}

/* ---- leaks ---- */

struct leak_ctx {
	const struct profile *p;
	double min_age, end;
	struct hmap idx; /* (pid, stack key) -> row */
	struct leak_rows *out;
	uint32_t cap;
	int err;
};

static void leak_cb(const struct agg *a, uint64_t time, double w, void *ctx)
{
	struct leak_ctx *c = ctx;
	double t = replay__seconds(c->p->r, time);
	struct leak_rows *o = c->out;
	struct hmap_slot *s;
	struct leak_row *row;
	bool created;

	if (c->err || block_end(c->p->r, a->pid, c->end) - t < c->min_age)
		return;
	s = hmap_put(&c->idx, a->pid, profile__stack_key(c->p, a->pid, a->stack_id), &created);
	if (!s) {
		c->err = -ENOMEM;
		return;
	}
	if (created) {
		if (o->nr == c->cap) {
			uint32_t ncap = c->cap ? c->cap * 2 : 64;
			struct leak_row *n = realloc(o->rows, sizeof(*n) * ncap);

			if (!n) {
				c->err = -ENOMEM;
				return;
			}
			o->rows = n;
			c->cap = ncap;
		}
		o->rows[o->nr] = (struct leak_row){.pid = a->pid, .stack_id = a->stack_id, .oldest = t};
		s->val = o->nr++;
	}
	row = &o->rows[s->val];
	row->bytes += (double)a->size * w;
	row->count += w;
	o->total += (double)a->size * w;
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

int rows__leaks(const struct profile *p, double min_age, uint32_t limit, struct leak_rows *out)
{
	struct leak_ctx c = {.p = p, .min_age = min_age, .end = replay__seconds(p->r, p->r->stop_time), .out = out};

	memset(out, 0, sizeof(*out));
	out->min_age = min_age;
	replay__for_each_live(p->r, leak_cb, &c);
	hmap_free(&c.idx);
	if (c.err)
		return c.err;
	if (out->nr)
		qsort(out->rows, out->nr, sizeof(*out->rows), cmp_leak);
	for (uint32_t i = 0; i < out->nr && (!limit || i < limit); i++) {
		struct leak_row *row = &out->rows[i];
		uint32_t nr;
		const uint64_t *ips = profile__stack(p, row->pid, row->stack_id, &nr);

		if (!ips)
			continue;
		nr = nr < LEAK_FRAMES ? nr : LEAK_FRAMES;
		row->frames = calloc(nr ? nr : 1, sizeof(*row->frames));
		if (!row->frames)
			return -ENOMEM;
		for (uint32_t k = 0; k < nr; k++) {
			struct prof_line ln;

			rows__frame_name(p, row->pid, ips[k], row->frames[k].name, sizeof(row->frames[k].name), &ln);
			row->frames[k].file = ln.file;
			row->frames[k].line = ln.line;
		}
		row->nr_frames = nr;
	}
	return 0;
}

void leak_rows__free(struct leak_rows *t)
{
	for (uint32_t i = 0; t && i < t->nr; i++)
		free(t->rows[i].frames);
	if (t) {
		free(t->rows);
		memset(t, 0, sizeof(*t));
	}
}

/* ---- temporary ---- */

static int cmp_temp(const void *a, const void *b)
{
	const struct temp_row *x = a, *y = b;

	if (x->temporary != y->temporary)
		return x->temporary < y->temporary ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* A leaf below Python code is named with the innermost Python function too ("PyBytes_FromSize
 * in parse (app.py)"): the interpreter's leaves are the same for every Python function. */
static const char *temp_python_caller(const struct profile *p, const struct prof_sample *s, const char *leaf,
				      char *buf, size_t len)
{
	for (uint32_t i = 1; i < s->nr_locs; i++) {
		const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + i]];
		char own[ROWS_NAME_MAX];

		if (!l->python || !l->nr_lines)
			continue;
		snprintf(own, sizeof(own), "%s", leaf); /* LEAF may be BUF */
		if (snprintf(buf, len, "%s in %s", own, profile__line_name(p, l, &p->lines[l->first_line], NULL, 0)) >= (int)len)
			buf[len - 1] = 0; /* cut, as every name is at ROWS_NAME_MAX */
		return buf;
	}
	return leaf;
}

int rows__temporary(const struct profile *p, struct temp_rows *out)
{
	const struct replay *r = p->r;
	struct named_table t = {0};
	uint32_t n = 0;

	memset(out, 0, sizeof(*out));
	/* Every aggregate that allocated is a sample, its leaf already symbolized. */
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];
		const struct agg *a = &r->aggs[s->agg];
		char buf[ROWS_NAME_MAX];
		const char *name;
		double *row;

		if (a->alloc_objects <= 0)
			continue;
		if (s->nr_locs) {
			const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc]];

			name = profile__line_name(p, l, l->nr_lines ? &p->lines[l->first_line] : NULL, buf, sizeof(buf));
			name = temp_python_caller(p, s, name, buf, sizeof(buf));
		} else {
			snprintf(buf, sizeof(buf), "(stack %" PRIu64 " not recorded)", a->stack_id);
			name = buf;
		}
		row = named_get(&t, name);
		if (!row) {
			named_free(&t);
			return -ENOMEM;
		}
		row[0] += a->temp_objects;
		row[1] += a->temp_space;
		row[2] += a->alloc_objects;
		out->temporary += a->temp_objects;
		out->allocations += a->alloc_objects;
	}
	out->rows = malloc(sizeof(*out->rows) * (t.names.nr ? t.names.nr : 1));
	if (!out->rows) {
		named_free(&t);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t.names.nr; i++) {
		if (t.v[i][0] <= 0)
			continue;
		out->rows[n++] = (struct temp_row){.name = named_take(&t, i), .temporary = t.v[i][0],
						   .temporary_bytes = t.v[i][1], .allocations = t.v[i][2]};
	}
	out->nr = n;
	if (n)
		qsort(out->rows, n, sizeof(*out->rows), cmp_temp);
	named_free(&t);
	return 0;
}

void temp_rows__free(struct temp_rows *t)
{
	for (uint32_t i = 0; t && i < t->nr; i++)
		free(t->rows[i].name);
	if (t) {
		free(t->rows);
		memset(t, 0, sizeof(*t));
	}
}

/* ---- processes ---- */

struct proc_acc {
	double oldest, age_sum, weight;
	uint64_t oldest_stack;
	bool any;
};

struct proc_ctx {
	const struct replay *r;
	struct proc_acc *acc; /* by index into r->procs */
	double end;
};

static void proc_cb(const struct agg *a, uint64_t time, double w, void *ctx)
{
	struct proc_ctx *c = ctx;
	const struct process *pr = replay__process(c->r, a->pid);
	struct proc_acc *s;
	double t = replay__seconds(c->r, time);

	if (!pr)
		return;
	s = &c->acc[pr - c->r->procs];
	if (!s->any || t < s->oldest) {
		s->oldest = t;
		s->oldest_stack = a->stack_id;
	}
	s->any = true;
	s->age_sum += (block_end(c->r, a->pid, c->end) - t) * w;
	s->weight += w;
}

int rows__processes(const struct profile *p, struct proc_rows *out)
{
	const struct replay *r = p->r;
	struct proc_ctx c = {.r = r, .end = replay__seconds(r, r->stop_time)};

	memset(out, 0, sizeof(*out));
	c.acc = calloc(r->nr_procs ? r->nr_procs : 1, sizeof(*c.acc));
	out->rows = calloc(r->nr_procs ? r->nr_procs : 1, sizeof(*out->rows));
	if (!c.acc || !out->rows) {
		free(c.acc);
		free(out->rows);
		out->rows = NULL;
		return -ENOMEM;
	}
	replay__for_each_live(r, proc_cb, &c);
	for (uint32_t i = 0; i < r->nr_procs; i++) {
		const struct proc_acc *s = &c.acc[i];
		struct proc_row *row;

		if (!r->procs[i].selected) /* --pid, --comm */
			continue;
		row = &out->rows[out->nr++];
		row->pr = &r->procs[i];
		row->any_live = s->any;
		if (s->any) {
			row->oldest = s->oldest;
			row->average_age = s->weight > 0 ? s->age_sum / s->weight : 0;
			stack_leaf(p, r->procs[i].pid, s->oldest_stack, row->oldest_function,
				   sizeof(row->oldest_function));
		}
	}
	free(c.acc);
	return 0;
}

void proc_rows__free(struct proc_rows *t)
{
	if (t) {
		free(t->rows);
		memset(t, 0, sizeof(*t));
	}
}

/* ---- diff ---- */

/* A stack's identity across files: the symbolized functions of its frames, inline ones
 * included, and with LINES their files and lines; unsymbolized frames by module and offset,
 * which ASLR does not move. */
static char *stack_key(const struct profile *p, const struct prof_sample *s, bool lines)
{
	char *key = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&key, &len);

	if (!m)
		return NULL;
	for (uint32_t i = 0; i < s->nr_locs; i++) {
		const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + i]];

		for (uint32_t k = 0; k < (l->nr_lines ? l->nr_lines : 1); k++) {
			const struct prof_line *ln = l->nr_lines ? &p->lines[l->first_line + k] : NULL;
			char buf[ROWS_NAME_MAX];

			if (ln && ln->function && lines && ln->file) {
				fprintf(m, "%s%s (%s:%u)", i || k ? " <- " : "", ln->function, basename(ln->file), ln->line);
			} else if (ln && ln->function) {
				/* A Python function by its name and file: every module has a <module>. */
				fprintf(m, "%s%s", i || k ? " <- " : "", l->python && ln->system_name ? ln->system_name : ln->function);
			} else {
				/* Unsymbolized: module and offset are stable across ASLR. */
				fprintf(m, "%s%s", i || k ? " <- " : "", profile__line_name(p, l, NULL, buf, sizeof(buf)));
			}
		}
	}
	if (fclose(m)) {
		free(key);
		return NULL;
	}
	return key;
}

/* Adds P's VALUE to side SIDE (0: from, 1: to) of the stacks and functions tables, its
 * variance to SIDE + 2. */
static int diff_add(struct named_table *stacks, struct named_table *funcs, const struct profile *p, int side,
		    int value, bool lines)
{
	struct named_table t = {0};
	int err;

	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];
		char *key = stack_key(p, s, lines);
		uint32_t k = 0;
		double *row = key ? named_row(stacks, key, &k) : NULL;

		free(key);
		if (!row)
			return -ENOMEM;
		row[side] += s->v[value];
		row[side + 2] += s->var[value];
		/* Shown with lines, the newer recording's where it has the stack. */
		if (!lines && (side == 1 || !stacks->shown[k]) && s->v[value] != 0) {
			char *shown = stack_key(p, s, true);

			if (!shown)
				return -ENOMEM;
			free(stacks->shown[k]);
			stacks->shown[k] = shown;
		}
	}
	err = function_totals(p, value, &t);
	for (uint32_t i = 0; !err && i < t.names.nr; i++) {
		double *row = named_get(funcs, t.names.v[i]);

		if (!row) {
			err = -ENOMEM;
		} else {
			row[side] += t.v[i][0];
			row[side + 2] += t.v[i][2];
		}
	}
	named_free(&t);
	return err;
}

static int cmp_growth(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;
	double dx = x->to - x->from, dy = y->to - y->from;

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The rows of T that changed, sorted by growth; T's names move to them. */
static int diff_take(struct named_table *t, struct diff_row **out, uint32_t *nr)
{
	uint32_t n = 0;

	*out = malloc(sizeof(**out) * (t->names.nr ? t->names.nr : 1));
	if (!*out)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->names.nr; i++) {
		char *name;

		if (llround(t->v[i][1] - t->v[i][0]) == 0)
			continue;
		if (t->shown && t->shown[i]) {
			name = t->shown[i];
			t->shown[i] = NULL;
		} else {
			name = named_take(t, i);
		}
		(*out)[n++] = (struct diff_row){.name = name, .from = t->v[i][0], .to = t->v[i][1],
						.from_var = t->v[i][2], .to_var = t->v[i][3]};
	}
	*nr = n;
	if (n)
		qsort(*out, n, sizeof(**out), cmp_growth);
	return 0;
}

int rows__diff(const struct profile *a, const struct profile *b, int value, bool lines, struct diff_rows *out)
{
	struct named_table stacks = {0}, funcs = {0};
	int err;

	memset(out, 0, sizeof(*out));
	out->from_total = a->total[value];
	out->to_total = b->total[value];
	out->from_var = a->total_var[value];
	out->to_var = b->total_var[value];
	err = diff_add(&stacks, &funcs, a, 0, value, lines);
	if (!err)
		err = diff_add(&stacks, &funcs, b, 1, value, lines);
	if (!err)
		err = diff_take(&funcs, &out->functions, &out->nr_functions);
	if (!err)
		err = diff_take(&stacks, &out->stacks, &out->nr_stacks);
	named_free(&stacks);
	named_free(&funcs);
	if (err)
		diff_rows__free(out);
	return err;
}

void rows__gate(const struct diff_rows *t, const struct growth_gate *g, struct gate_verdict *v)
{
	v->growth = t->to_total - t->from_total;
	/* Two recordings sample apart, so their variances add. Two snapshots of one recording
	 * share the blocks live at both, which cancel in the difference: adding the variances
	 * overstates its error there, and the gate errs toward passing. */
	v->se = sqrt(t->from_var + t->to_var);
	v->limit = g->percent ? t->from_total * g->amount / 100 : g->amount;
	v->lower = v->growth - Z95_ONE_SIDED * v->se;
	v->exceeded = v->lower > v->limit;
}

void diff_rows__free(struct diff_rows *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nr_functions; i++)
		free(t->functions[i].name);
	for (uint32_t i = 0; i < t->nr_stacks; i++)
		free(t->stacks[i].name);
	free(t->functions);
	free(t->stacks);
	memset(t, 0, sizeof(*t));
}
