// SPDX-License-Identifier: MIT
/* Python code objects by (process, code id), and the frames that name them. A stack's Python
 * frame is no return address: it is never looked up in the mappings nor moved back a byte;
 * its code id and bytecode offset give the function, its file and the line, through the
 * code's line table (pyline.c), decoded once per code and then searched. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pycode.h"
#include "replay_int.h"

/* What reports show of a code: its qualified name and its file's name, with the package's
 * when the file's name alone says nothing (every package has an __init__.py). Python
 * functions of two runs match by this name, as native ones match by theirs. */
static char *display_name(const char *qualname, const char *path)
{
	const char *base = strrchr(path, '/');
	char *s;

	base = base ? base + 1 : path;
	if (base > path + 1 && (!strcmp(base, "__init__.py") || !strcmp(base, "__main__.py"))) {
		const char *dir = base - 1;

		while (dir > path && dir[-1] != '/')
			dir--;
		base = dir;
	}
	if (!*base)
		return strdup(qualname);
	return asprintf(&s, "%s (%s)", qualname, base) < 0 ? NULL : s;
}

int py_codes__add(struct py_codes *c, const struct hs_record *rec, char *err, size_t errlen)
{
	const char *qn = rec->py_code.qualname ? rec->py_code.qualname : "";
	const char *fn = rec->py_code.filename ? rec->py_code.filename : "";
	uint64_t bytes = strlen(qn) + strlen(fn) + rec->py_code.line_table.len, ranges;
	struct hmap_slot *s;
	struct py_code *pc;
	bool created;

	s = hmap_put(&c->idx, rec->pid, rec->py_code.id, &created);
	if (!s)
		return -ENOMEM;
	if (!created) {
		c->duplicates++;
		return 0;
	}
	/* The lines its table decodes to are weighed now, though made at its first frame: a
	 * table can hold a range a byte, each 16 bytes. */
	ranges = (uint64_t)pyline__count(rec->py_code.py_version, rec->py_code.line_table.p, rec->py_code.line_table.len,
					 rec->py_code.first_line) *
		 sizeof(struct pyline_range);
	if (c->nr >= PY_CODES_MAX || c->bytes + c->range_bytes + bytes + ranges > PY_CODES_MAX_BYTES) {
		hmap_remove_slot(&c->idx, s);
		snprintf(err, errlen,
			 "more Python code objects than this analyzer reads (at most %u, or %llu bytes of names, "
			 "line tables and their lines decoded): PY_CODE record of code %" PRIu64 " in process %u refused",
			 PY_CODES_MAX, PY_CODES_MAX_BYTES, rec->py_code.id, rec->pid);
		return -E2BIG;
	}
	if (!(c->nr & (c->nr - 1))) { /* doubles at powers of two */
		struct py_code *v = realloc(c->v, sizeof(*v) * (c->nr ? 2 * (size_t)c->nr : 1));

		if (!v) {
			hmap_remove_slot(&c->idx, s);
			return -ENOMEM;
		}
		c->v = v;
	}
	pc = &c->v[c->nr];
	*pc = (struct py_code){.pid = rec->pid, .id = rec->py_code.id, .first_line = rec->py_code.first_line,
			       .py_version = rec->py_code.py_version, .len = rec->py_code.line_table.len};
	pc->qualname = hs_strdup_printable(qn);
	pc->filename = hs_strdup_printable(fn);
	pc->display = pc->qualname && pc->filename ? display_name(pc->qualname, pc->filename) : NULL;
	pc->table = malloc(pc->len ? pc->len : 1);
	if (!pc->qualname || !pc->filename || !pc->display || !pc->table) {
		free(pc->qualname);
		free(pc->filename);
		free(pc->display);
		free(pc->table);
		hmap_remove_slot(&c->idx, s);
		return -ENOMEM;
	}
	if (pc->len)
		memcpy(pc->table, rec->py_code.line_table.p, pc->len);
	c->bytes += bytes;
	c->range_bytes += ranges;
	s->val = ++c->nr;
	return 0;
}

static const char *unknown_name(struct py_codes *c, uint64_t code)
{
	bool created;
	struct hmap_slot *s = hmap_put(&c->unknown, code, 0, &created);
	char *name;

	if (!s)
		return NULL;
	if (!created)
		return (const char *)(uintptr_t)s->val;
	if (asprintf(&name, "[python code %" PRIu64 " not recorded]", code) < 0) {
		hmap_remove_slot(&c->unknown, s);
		return NULL;
	}
	s->val = (uint64_t)(uintptr_t)name;
	return name;
}

int py_codes__frame(struct py_codes *c, uint32_t pid, uint64_t ip, struct py_frame *out)
{
	uint64_t code = HS_PYFRAME_CODE(ip), off = HS_PYFRAME_OFF(ip);
	struct hmap_slot *s = hmap_find(&c->idx, pid, code);
	struct py_code *pc;
	int64_t line = -1;

	memset(out, 0, sizeof(*out));
	if (!s) {
		out->function = out->display = unknown_name(c, code);
		return out->function ? 0 : -ENOMEM;
	}
	pc = &c->v[s->val - 1];
	if (!pc->decoded && pyline__format(pc->py_version)) {
		int e = pyline__ranges(pc->py_version, pc->table, pc->len, pc->first_line, &pc->ranges, &pc->nr_ranges);

		if (e == -ENOMEM)
			return e;
	}
	pc->decoded = true;
	if (off != HS_PYFRAME_OFF_NONE)
		line = pyline__lookup(pc->ranges, pc->nr_ranges, (uint32_t)off);
	*out = (struct py_frame){.function = pc->qualname, .display = pc->display, .file = pc->filename,
				 .first_line = pc->first_line, .known = true};
	/* No line for the offset (an instruction the table gives none, an offset not known, a
	 * version whose table this analyzer does not read): the function's first line. */
	out->line = line > 0 && line <= UINT32_MAX ? (uint32_t)line : pc->first_line;
	return 0;
}

void py_codes__free(struct py_codes *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->nr; i++) {
		free(c->v[i].qualname);
		free(c->v[i].filename);
		free(c->v[i].display);
		free(c->v[i].table);
		free(c->v[i].ranges);
	}
	free(c->v);
	hmap_free(&c->idx);
	hmap_for_each(&c->unknown, it) free((char *)(uintptr_t)it->val);
	hmap_free(&c->unknown);
	memset(c, 0, sizeof(*c));
}

void replay_py__apply(struct replay *r, const struct hs_record *rec)
{
	char why[300];
	int e = py_codes__add(&r->py, rec, why, sizeof(why));

	if (e == -ENOMEM)
		replay_nomem(r);
	if (e) {
		snprintf(r->error, sizeof(r->error), "%s: frame at offset %" PRIu64 ", record %" PRIu64 ": %s", r->path,
			 r->offset, r->records, why);
		r->refused = true;
		replay_nomem(r); /* ends the pass as running out of memory does; the error is kept */
	}
}
