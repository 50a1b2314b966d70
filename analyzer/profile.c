// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

const char *const value_names[V__COUNT] = {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"};

int value_index(const char *name)
{
	for (int i = 0; i < V__COUNT; i++)
		if (!strcmp(name, value_names[i]))
			return i;
	return -1;
}

/* Room for one more in ARR, or to `nomem` (the profile is freed there). */
#define GROW(arr, nr, cap)                                                                 \
	do {                                                                               \
		if ((nr) == (cap)) {                                                       \
			void *grown_ = realloc((arr), sizeof(*(arr)) * ((cap) ? (cap) * 2 : 256)); \
			if (!grown_)                                                       \
				goto nomem;                                                \
			(arr) = grown_;                                                    \
			(cap) = (cap) ? (cap) * 2 : 256;                                   \
		}                                                                          \
	} while (0)

const uint64_t *profile__stack(const struct profile *cp, uint32_t pid, uint64_t id, uint32_t *nr)
{
	struct profile *p = (struct profile *)cp; /* the unwinder is a cache */

	if (!replay__dwarf_stack(p->r, id))
		return replay__stack(p->r, id, nr);
	if (!p->unw)
		p->unw = unwinder__new(p->r, p->sym);
	return p->unw ? unwinder__stack(p->unw, pid, id, nr) : NULL;
}

uint64_t profile__stack_key(const struct profile *p, uint32_t pid, uint64_t id)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const uint64_t *ips;
	uint32_t nr;

	ips = profile__stack(p, pid, id, &nr);
	if (!ips)
		return id;
	for (uint32_t i = 0; i < nr; i++)
		h = (h ^ ips[i]) * 0x100000001b3ull;
	return h | 1ull << 63; /* recorded ids are counters: far below */
}

/* Python frame IP of PID as location L, its one line LN. */
static int profile__python_loc(struct profile *p, uint32_t pid, uint64_t ip, struct prof_loc *l, struct prof_line *ln)
{
	struct py_frame f;

	if (py_codes__frame(&p->r->py, pid, ip, &f))
		return -ENOMEM;
	*l = (struct prof_loc){.addr = ip, .pid = pid, .module = -1, .first_line = p->nr_lines, .nr_lines = 1, .python = true};
	*ln = (struct prof_line){.function = f.function, .system_name = f.display, .file = f.file,
				 .line = f.known ? f.line : 0, .start_line = f.first_line};
	return 0;
}

/* loc_idx's value for an address outside every mapping, where no location is made. */
#define LOC_OUTSIDE UINT64_MAX

int profile__build(struct profile *p, struct replay *r, struct symbolizer *sym)
{
	uint32_t cap_samples = 0, cap_locs = 0, cap_refs = 0, cap_lines = 0;
	struct hmap loc_idx = {0}; /* (pid, addr) -> loc */

	memset(p, 0, sizeof(*p));
	p->r = r;
	p->sym = sym;
	for (uint32_t i = 0; i < r->nr_aggs; i++) {
		const struct agg *a = &r->aggs[i];
		struct prof_sample *s;
		const uint64_t *ips;
		uint32_t nr;

		if (a->alloc_objects < 1e-9 && a->inuse_objects < 1e-9)
			continue;
		ips = profile__stack(p, a->pid, a->stack_id, &nr);
		if (!ips)
			p->missing_stacks++;
		GROW(p->samples, p->nr_samples, cap_samples);
		s = &p->samples[p->nr_samples++];
		*s = (struct prof_sample){.pid = a->pid, .tid = a->tid, .agg = i, .size = a->size, .first_loc = p->nr_loc_refs};
		s->v[V_ALLOC_OBJECTS] = a->alloc_objects;
		s->v[V_ALLOC_SPACE] = a->alloc_space;
		s->v[V_INUSE_OBJECTS] = a->inuse_objects;
		s->v[V_INUSE_SPACE] = a->inuse_space;
		s->var[V_ALLOC_OBJECTS] = a->var_alloc_objects;
		s->var[V_ALLOC_SPACE] = a->var_alloc_space;
		s->var[V_INUSE_OBJECTS] = a->var_inuse_objects;
		s->var[V_INUSE_SPACE] = a->var_inuse_space;
		for (int k = 0; k < V__COUNT; k++) {
			if (s->var[k] < 0) /* rounding, after frees */
				s->var[k] = 0;
			p->total[k] += s->v[k];
			p->total_var[k] += s->var[k];
		}
		for (uint32_t f = 0; f < nr; f++) {
			bool py = HS_IS_PYFRAME(ips[f]);
			/* Every native frame is a return address; a Python frame is a code and an offset. */
			uint64_t addr = py ? ips[f] : ips[f] ? ips[f] - 1 : 0;
			struct hmap_slot *slot = hmap_find(&loc_idx, a->pid, addr);
			const struct mapping *map = NULL;
			bool outside = slot && slot->val == LOC_OUTSIDE, created = !slot || outside;

			/* A native frame's mapping, looked up once per address: a location known
			 * already carries it, and an address outside every mapping is remembered as
			 * such. A frame-pointer walk through code built without them wanders into
			 * data: stop at the first frame outside every executable mapping. */
			if (!py && !outside)
				map = slot ? p->locs[slot->val].map : replay__mapping(r, a->pid, addr, r->stop_time);
			if (!slot && !(slot = hmap_put(&loc_idx, a->pid, addr, NULL)))
				goto nomem;
			if (f > 0 && !py && !map) {
				if (created)
					slot->val = LOC_OUTSIDE;
				p->cut_frames += nr - f;
				break;
			}
			if (created) {
				struct prof_loc *l;
				struct sym_result res;

				GROW(p->locs, p->nr_locs, cap_locs);
				l = &p->locs[p->nr_locs];
				if (py) {
					GROW(p->lines, p->nr_lines, cap_lines);
					if (profile__python_loc(p, a->pid, addr, l, &p->lines[p->nr_lines]))
						goto nomem;
					p->nr_lines++;
					slot->val = p->nr_locs++;
					goto ref;
				}
				*l = (struct prof_loc){.addr = addr, .map = map, .pid = a->pid};
				symbolizer__lookup(sym, map, addr, &res);
				l->module = res.module;
				l->first_line = p->nr_lines;
				l->nr_lines = res.nr;
				for (uint32_t k = 0; k < res.nr; k++) {
					GROW(p->lines, p->nr_lines, cap_lines);
					p->lines[p->nr_lines++] = (struct prof_line){
						.function = res.frames[k].function, .system_name = res.frames[k].system_name,
						.file = res.frames[k].file, .line = res.frames[k].line};
				}
				slot->val = p->nr_locs++;
			}
ref:
			GROW(p->loc_refs, p->nr_loc_refs, cap_refs);
			p->loc_refs[p->nr_loc_refs++] = (uint32_t)slot->val;
			s->nr_locs++;
		}
	}
	hmap_free(&loc_idx);
	return 0;
nomem:
	hmap_free(&loc_idx);
	profile__free(p);
	return -ENOMEM;
}

const char *profile__line_name(const struct profile *p, const struct prof_loc *l, const struct prof_line *ln,
			       char *buf, size_t len)
{
	if (l->python && ln && ln->system_name)
		return ln->system_name;
	if (ln && ln->function)
		return ln->function;
	if (l->map) {
		snprintf(buf, len, "%s+0x%" PRIx64, basename(l->map->path),
			 l->addr - l->map->start + l->map->offset);
	} else {
		snprintf(buf, len, "0x%" PRIx64, l->addr);
	}
	return buf;
}

void profile__free(struct profile *p)
{
	unwinder__free(p->unw);
	free(p->samples);
	free(p->locs);
	free(p->loc_refs);
	free(p->lines);
	memset(p, 0, sizeof(*p));
}
