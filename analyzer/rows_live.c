// SPDX-License-Identifier: MIT
/* The live view's table: every function with its own live bytes and blocks, its total (live
 * bytes anywhere in its stacks) and what it allocated so far, of one process or thread or
 * all, over merged, native or Python frames, in one pass over the profile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rows.h"

struct acc {
	struct names names;
	struct live_row *v; /* by name number; .name unset until taken */
	uint32_t *cum_by;   /* the last sample (index + 1) that added to a row's total */
	uint32_t cap;
};

static struct live_row *acc_row(struct acc *a, const char *name, uint32_t *index)
{
	int64_t i = names__intern(&a->names, name);

	if (i < 0)
		return NULL;
	if (a->cap < a->names.cap) {
		struct live_row *v = realloc(a->v, sizeof(*v) * a->names.cap);
		uint32_t *c;

		if (!v)
			return NULL;
		a->v = v;
		c = realloc(a->cum_by, sizeof(*c) * a->names.cap);
		if (!c)
			return NULL;
		a->cum_by = c;
		memset(v + a->cap, 0, sizeof(*v) * (a->names.cap - a->cap));
		memset(c + a->cap, 0, sizeof(*c) * (a->names.cap - a->cap));
		a->cap = a->names.cap;
	}
	*index = (uint32_t)i;
	return &a->v[i];
}

/* Adds sample S (number I) to the row of frame NAME: to its own figures when OWN, to its
 * total once per sample. */
static int acc_add(struct acc *a, const struct prof_sample *s, uint32_t i, const char *name, bool own)
{
	uint32_t r;
	struct live_row *row = acc_row(a, name, &r);

	if (!row)
		return -ENOMEM;
	if (own) {
		row->own += s->v[V_INUSE_SPACE];
		row->own_var += s->var[V_INUSE_SPACE];
		row->blocks += s->v[V_INUSE_OBJECTS];
		row->allocated += s->v[V_ALLOC_SPACE];
		row->allocs += s->v[V_ALLOC_OBJECTS];
	}
	if (a->cum_by[r] != i + 1) {
		a->cum_by[r] = i + 1;
		row->total += s->v[V_INUSE_SPACE];
	}
	return 0;
}

/* Python frames: the innermost one owns the sample, as top's Python table charges it. */
static int add_python(struct acc *a, const struct profile *p, const struct prof_sample *s, uint32_t i)
{
	bool own = true;

	for (uint32_t k = 0; k < s->nr_locs; k++) {
		const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + k]];
		int err;

		if (!l->python || !l->nr_lines)
			continue;
		err = acc_add(a, s, i, profile__line_name(p, l, &p->lines[l->first_line], NULL, 0), own);
		if (err)
			return err;
		own = false;
	}
	return 0;
}

/* Every frame (inline ones too), or the native ones alone: the innermost owns the sample. */
static int add_frames(struct acc *a, const struct profile *p, const struct prof_sample *s, uint32_t i, bool native)
{
	bool own = true;
	char buf[ROWS_NAME_MAX];

	for (uint32_t k = 0; k < s->nr_locs; k++) {
		const struct prof_loc *l = &p->locs[p->loc_refs[s->first_loc + k]];
		uint32_t nl = l->nr_lines ? l->nr_lines : 1;

		if (native && l->python)
			continue;
		for (uint32_t j = 0; j < nl; j++) {
			const char *name =
				profile__line_name(p, l, l->nr_lines ? &p->lines[l->first_line + j] : NULL, buf, sizeof(buf));
			int err = acc_add(a, s, i, name, own);

			if (err)
				return err;
			own = false;
		}
	}
	return 0;
}

static int cmp_own(const void *x, const void *y)
{
	const struct live_row *a = x, *b = y;

	if (a->own != b->own)
		return a->own < b->own ? 1 : -1;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	return strcmp(a->name, b->name);
}

int rows__live(const struct profile *p, const struct live_filter *f, struct live_rows *out)
{
	struct acc a = {0};
	int err = 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; !err && i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];

		if ((f->pid && s->pid != f->pid) || (f->tid && s->tid != f->tid))
			continue;
		out->live += s->v[V_INUSE_SPACE];
		out->blocks += s->v[V_INUSE_OBJECTS];
		out->allocated += s->v[V_ALLOC_SPACE];
		out->allocs += s->v[V_ALLOC_OBJECTS];
		if (s->v[V_INUSE_SPACE] == 0 && s->v[V_ALLOC_SPACE] == 0)
			continue;
		err = f->frames == LIVE_PYTHON ? add_python(&a, p, s, i)
					       : add_frames(&a, p, s, i, f->frames == LIVE_NATIVE);
	}
	if (!err && a.names.nr && !(out->rows = malloc(sizeof(*out->rows) * a.names.nr)))
		err = -ENOMEM;
	for (uint32_t i = 0; !err && i < a.names.nr; i++) {
		out->rows[i] = a.v[i];
		out->rows[i].name = a.names.v[i];
		a.names.v[i] = NULL;
	}
	if (!err) {
		out->nr = a.names.nr;
		if (out->nr)
			qsort(out->rows, out->nr, sizeof(*out->rows), cmp_own);
	}
	names__free(&a.names);
	free(a.v);
	free(a.cum_by);
	return err;
}

void live_rows__free(struct live_rows *t)
{
	for (uint32_t i = 0; t && i < t->nr; i++)
		free(t->rows[i].name);
	if (t) {
		free(t->rows);
		memset(t, 0, sizeof(*t));
	}
}
