// SPDX-License-Identifier: MIT
/* pprof output: a gzip-compressed perftools.profiles.Profile built with protobuf-c. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "hmap.h"
#include "pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__ValueType PbValueType;

struct pprof_mapping {
	uint64_t start, limit, offset;
	const char *filename, *build_id;
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct pprof_label {
	const char *key;
	const char *str; /* a string label when set, else numeric */
	int64_t num;
	const char *num_unit;
};

struct pprof_builder {
	PbProfile p;
	char **strings;
	size_t cap_strings;
	struct hmap string_idx; /* (fnv hash, length) -> index; collisions append a duplicate */
	struct hmap func_idx;   /* (name << 32 | system name, file) -> function id */
	size_t cap_samples, cap_mappings, cap_locations, cap_functions;
	/* Out of memory: back to pprof_write_profile, which frees what was built. Everything
	 * allocated is in the profile (with its count) before anything else is, so
	 * pprof_builder__free finds it. */
	jmp_buf *oom;
};

static _Noreturn void nomem(struct pprof_builder *b)
{
	longjmp(*b->oom, 1);
}

static void *xcalloc(struct pprof_builder *b, size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p)
		nomem(b);
	return p;
}

/* Room for one more in ARR, before the item is made. */
#define RESERVE(b, arr, n, cap)                                                            \
	do {                                                                               \
		if ((n) == (cap)) {                                                        \
			void *grown_ = realloc((arr), sizeof(*(arr)) * ((cap) ? (cap) * 2 : 64)); \
			if (!grown_)                                                       \
				nomem(b);                                                  \
			(arr) = grown_;                                                    \
			(cap) = (cap) ? (cap) * 2 : 64;                                    \
		}                                                                          \
	} while (0)

static int64_t pprof_builder__string(struct pprof_builder *b, const char *s)
{
	struct hmap_slot *slot;
	bool created;

	slot = hmap_put(&b->string_idx, hmap_str_hash(s), strlen(s), &created);
	if (!slot)
		nomem(b);
	if (!created && !strcmp(b->p.string_table[slot->val], s))
		return (int64_t)slot->val;
	RESERVE(b, b->p.string_table, b->p.n_string_table, b->cap_strings);
	b->p.string_table[b->p.n_string_table] = strdup(s);
	if (!b->p.string_table[b->p.n_string_table])
		nomem(b);
	b->p.n_string_table++;
	if (created)
		slot->val = b->p.n_string_table - 1;
	return (int64_t)b->p.n_string_table - 1;
}

/* B zeroed, with its oom set. */
static void pprof_builder__init(struct pprof_builder *b, const char *const *types, const char *const *units, int n,
				const char *period_type, const char *period_unit, int64_t period)
{
	PbValueType *pt;

	perftools__profiles__profile__init(&b->p);
	pprof_builder__string(b, ""); /* index 0 is the empty string, as pprof requires */
	b->p.sample_type = xcalloc(b, (size_t)n, sizeof(*b->p.sample_type));
	for (int i = 0; i < n; i++) {
		PbValueType *vt = xcalloc(b, 1, sizeof(*vt));

		perftools__profiles__value_type__init(vt);
		b->p.sample_type[b->p.n_sample_type++] = vt;
		vt->type = pprof_builder__string(b, types[i]);
		vt->unit = pprof_builder__string(b, units[i]);
	}
	pt = xcalloc(b, 1, sizeof(*pt));
	perftools__profiles__value_type__init(pt);
	b->p.period_type = pt;
	pt->type = pprof_builder__string(b, period_type);
	pt->unit = pprof_builder__string(b, period_unit);
	b->p.period = period;
}

static void pprof_builder__set_default_type(struct pprof_builder *b, const char *type)
{
	b->p.default_sample_type = pprof_builder__string(b, type);
}

static void pprof_builder__set_time(struct pprof_builder *b, int64_t time_ns, int64_t duration_ns)
{
	b->p.time_nanos = time_ns;
	b->p.duration_nanos = duration_ns;
}

static void pprof_builder__add_comment(struct pprof_builder *b, const char *text)
{
	int64_t id = pprof_builder__string(b, text);
	int64_t *c = realloc(b->p.comment, sizeof(*b->p.comment) * (b->p.n_comment + 1));

	if (!c)
		nomem(b);
	b->p.comment = c;
	b->p.comment[b->p.n_comment++] = id;
}

static uint64_t pprof_builder__add_mapping(struct pprof_builder *b, const struct pprof_mapping *m)
{
	PbMapping *pm;

	RESERVE(b, b->p.mapping, b->p.n_mapping, b->cap_mappings);
	pm = xcalloc(b, 1, sizeof(*pm));
	perftools__profiles__mapping__init(pm);
	pm->id = b->p.n_mapping + 1;
	pm->memory_start = m->start;
	pm->memory_limit = m->limit;
	pm->file_offset = m->offset;
	pm->filename = pprof_builder__string(b, m->filename);
	pm->build_id = pprof_builder__string(b, m->build_id);
	pm->has_functions = m->has_functions;
	pm->has_filenames = m->has_filenames;
	pm->has_line_numbers = m->has_line_numbers;
	pm->has_inline_frames = m->has_inline_frames;
	b->p.mapping[b->p.n_mapping++] = pm;
	return pm->id;
}

static uint64_t pprof_builder__function(struct pprof_builder *b, const char *name, const char *system_name,
				 const char *file)
{
	int64_t n = pprof_builder__string(b, name), sn = pprof_builder__string(b, system_name ? system_name : name);
	int64_t f = pprof_builder__string(b, file ? file : "");
	struct hmap_slot *slot;
	PbFunction *fn;
	bool created;

	slot = hmap_put(&b->func_idx, (uint64_t)n << 32 | (uint64_t)sn, (uint64_t)f, &created);
	if (!slot)
		nomem(b);
	if (!created)
		return slot->val;
	RESERVE(b, b->p.function, b->p.n_function, b->cap_functions);
	fn = xcalloc(b, 1, sizeof(*fn));
	perftools__profiles__function__init(fn);
	fn->id = b->p.n_function + 1;
	fn->name = n;
	fn->system_name = sn;
	fn->filename = f;
	b->p.function[b->p.n_function++] = fn;
	slot->val = fn->id;
	return fn->id;
}

static uint64_t pprof_builder__add_location(struct pprof_builder *b, uint64_t mapping_id, uint64_t address,
				     const uint64_t *function_ids, const int64_t *lines, int nr_lines)
{
	PbLocation *l;

	RESERVE(b, b->p.location, b->p.n_location, b->cap_locations);
	l = xcalloc(b, 1, sizeof(*l));
	perftools__profiles__location__init(l);
	b->p.location[b->p.n_location++] = l;
	l->id = b->p.n_location;
	l->mapping_id = mapping_id;
	l->address = address;
	l->line = xcalloc(b, (size_t)nr_lines, sizeof(*l->line));
	for (int i = 0; i < nr_lines; i++) {
		PbLine *ln = xcalloc(b, 1, sizeof(*ln));

		perftools__profiles__line__init(ln);
		ln->function_id = function_ids[i];
		ln->line = lines[i];
		l->line[l->n_line++] = ln;
	}
	return l->id;
}

static void pprof_builder__add_sample(struct pprof_builder *b, const uint64_t *locs, int nr_locs, const int64_t *values,
			       const struct pprof_label *labels, int nr_labels)
{
	PbSample *s;

	RESERVE(b, b->p.sample, b->p.n_sample, b->cap_samples);
	s = xcalloc(b, 1, sizeof(*s));
	perftools__profiles__sample__init(s);
	b->p.sample[b->p.n_sample++] = s;
	s->location_id = xcalloc(b, (size_t)nr_locs, sizeof(uint64_t));
	s->n_location_id = (size_t)nr_locs;
	if (nr_locs)
		memcpy(s->location_id, locs, sizeof(uint64_t) * (size_t)nr_locs);
	s->value = xcalloc(b, b->p.n_sample_type, sizeof(int64_t));
	s->n_value = b->p.n_sample_type;
	memcpy(s->value, values, sizeof(int64_t) * s->n_value);
	s->label = xcalloc(b, (size_t)nr_labels, sizeof(*s->label));
	for (int i = 0; i < nr_labels; i++) {
		PbLabel *l = xcalloc(b, 1, sizeof(*l));

		perftools__profiles__label__init(l);
		s->label[s->n_label++] = l;
		l->key = pprof_builder__string(b, labels[i].key);
		if (labels[i].str)
			l->str = pprof_builder__string(b, labels[i].str);
		else {
			l->num = labels[i].num;
			if (labels[i].num_unit)
				l->num_unit = pprof_builder__string(b, labels[i].num_unit);
		}
	}
}

static int pprof_builder__write(struct pprof_builder *b, FILE *out)
{
	size_t len = perftools__profiles__profile__get_packed_size(&b->p), gz_len;
	uint8_t *buf = malloc(len ? len : 1), *gz;
	int ret;

	if (!buf)
		return -ENOMEM;
	perftools__profiles__profile__pack(&b->p, buf);
	ret = gzip_compress(buf, len, &gz, &gz_len);
	free(buf);
	if (ret)
		return ret;
	if (fwrite(gz, 1, gz_len, out) != gz_len)
		ret = -EIO;
	free(gz);
	return ret;
}

/* Frees what B holds (not B). */
static void pprof_builder__release(struct pprof_builder *b)
{
	for (size_t i = 0; i < b->p.n_string_table; i++)
		free(b->p.string_table[i]);
	free(b->p.string_table);
	for (size_t i = 0; i < b->p.n_sample_type; i++)
		free(b->p.sample_type[i]);
	free(b->p.sample_type);
	free(b->p.period_type);
	for (size_t i = 0; i < b->p.n_sample; i++) {
		PbSample *s = b->p.sample[i];

		for (size_t j = 0; j < s->n_label; j++)
			free(s->label[j]);
		free(s->label);
		free(s->location_id);
		free(s->value);
		free(s);
	}
	free(b->p.sample);
	for (size_t i = 0; i < b->p.n_mapping; i++)
		free(b->p.mapping[i]);
	free(b->p.mapping);
	for (size_t i = 0; i < b->p.n_location; i++) {
		for (size_t j = 0; j < b->p.location[i]->n_line; j++)
			free(b->p.location[i]->line[j]);
		free(b->p.location[i]->line);
		free(b->p.location[i]);
	}
	free(b->p.location);
	for (size_t i = 0; i < b->p.n_function; i++)
		free(b->p.function[i]);
	free(b->p.function);
	free(b->p.comment);
	hmap_free(&b->string_idx);
	hmap_free(&b->func_idx);
}

/* ---- a replayed heap as a pprof heap profile ---- */

/* What pprof_write_profile builds, on the heap: after running out of memory, it is freed
 * from here (a frame's own variables changed after setjmp would be indeterminate). */
struct pprof_state {
	struct pprof_builder b;
	uint64_t *loc_ids, *stack, *fids;
	int64_t *lines;
	struct hmap map_ids; /* mapping pointer -> pprof id */
	struct hmap loc_lazy; /* one process's profile: location index -> pprof id */
	size_t cap_fids, cap_lines;
};

/* Room for N in *ARR of *CAP elements of SIZE. */
static void *room(struct pprof_builder *b, void *arr, size_t *cap, size_t n, size_t size)
{
	void *grown;

	if (n <= *cap)
		return arr;
	grown = realloc(arr, size * n * 2);
	if (!grown)
		nomem(b);
	*cap = n * 2;
	return grown;
}

/* The profile's comments: who recorded it, what it shows, how it was sampled, what was lost. */
static void add_comments(struct pprof_builder *b, const struct profile *p, const struct pprof_opts *o)
{
	const struct replay *r = p->r;
	char buf[512], desc[256];
	uint64_t lost;

	snprintf(buf, sizeof(buf), "heapsnap %s on %s, kernel %s", r->tool_version, r->hostname, r->kernel);
	pprof_builder__add_comment(b, buf);
	snprintf(buf, sizeof(buf), "command: %s", r->cmdline && *r->cmdline ? r->cmdline : "(attached)");
	pprof_builder__add_comment(b, buf);
	snprintf(buf, sizeof(buf), "snapshot: %s", o->snapshot_desc ? o->snapshot_desc : r->stop_desc);
	pprof_builder__add_comment(b, buf);
	if (r->sample_rate)
		snprintf(buf, sizeof(buf), "sampling: Poisson, one sample per %" PRIu64 " bytes on average",
			 r->sample_rate);
	else
		snprintf(buf, sizeof(buf), "sampling: every allocation");
	pprof_builder__add_comment(b, buf);
	if (r->sample_rate) {
		/* pprof has no field for an error: the totals' standard errors go in a comment. */
		snprintf(buf, sizeof(buf),
			 "standard errors (Horvitz-Thompson, from the samples): inuse_space %.0f +- %.0f, inuse_objects "
			 "%.0f +- %.0f, alloc_space %.0f +- %.0f, alloc_objects %.0f +- %.0f",
			 p->total[V_INUSE_SPACE], sqrt(p->total_var[V_INUSE_SPACE]), p->total[V_INUSE_OBJECTS],
			 sqrt(p->total_var[V_INUSE_OBJECTS]), p->total[V_ALLOC_SPACE], sqrt(p->total_var[V_ALLOC_SPACE]),
			 p->total[V_ALLOC_OBJECTS], sqrt(p->total_var[V_ALLOC_OBJECTS]));
		pprof_builder__add_comment(b, buf);
	}
	lost = replay__lost_events(r, desc, sizeof(desc));
	if (lost) {
		snprintf(buf, sizeof(buf), "lost: %" PRIu64 " events while recording (%s)", lost, desc);
		pprof_builder__add_comment(b, buf);
	}
	if (replay__stopped(r, desc, sizeof(desc))) {
		snprintf(buf, sizeof(buf), "lost: %s", desc);
		pprof_builder__add_comment(b, buf);
	}
}

/* The pprof id of a location's mapping, added on its first location; 0 for none. */
static uint64_t mapping_id(struct pprof_state *st, const struct profile *p, const struct prof_loc *l,
			   const struct pprof_opts *o)
{
	struct pprof_builder *b = &st->b;
	bool created;
	struct hmap_slot *slot;

	if (!l->map)
		return 0;
	slot = hmap_put(&st->map_ids, (uint64_t)(uintptr_t)l->map, 0, &created);
	if (!slot)
		nomem(b);
	if (created) {
		struct pprof_mapping pm = {.start = l->map->start, .limit = l->map->end,
					   .offset = l->map->offset, .filename = l->map->path};
		char hex[2 * HS_MAX_BUILD_ID + 1];

		hs_hex(l->map->build_id, l->map->build_id_len, hex);
		pm.build_id = hex;
		if (!o->no_symbolize)
			symbolizer__module_flags(p->sym, l->module, &pm.has_functions, &pm.has_filenames,
						 &pm.has_line_numbers, &pm.has_inline_frames);
		slot->val = pprof_builder__add_mapping(b, &pm);
	}
	return slot->val;
}

/* Profile location I as a pprof location: its id. */
static uint64_t add_location(struct pprof_state *st, const struct profile *p, uint32_t i, const struct pprof_opts *o)
{
	struct pprof_builder *b = &st->b;
	const struct prof_loc *l = &p->locs[i];
	uint64_t mid = mapping_id(st, p, l, o);
	/* A Python frame is named whatever the options: nothing after could name it. */
	int n = o->no_symbolize && !l->python ? 0 : (int)l->nr_lines;

	/* Room for the lines, or for the one name given to an address in no mapping. */
	st->fids = room(b, st->fids, &st->cap_fids, (size_t)n + 1, sizeof(*st->fids));
	st->lines = room(b, st->lines, &st->cap_lines, (size_t)n + 1, sizeof(*st->lines));
	for (int k = 0; k < n; k++) {
		const struct prof_line *ln = &p->lines[l->first_line + (uint32_t)k];
		char nb[128];

		st->fids[k] = pprof_builder__function(b, l->python ? ln->function : profile__line_name(p, l, ln, nb, sizeof(nb)),
						  ln->system_name, ln->file);
		st->lines[k] = ln->line;
		if (ln->start_line)
			b->p.function[st->fids[k] - 1]->start_line = ln->start_line;
	}
	/* Unsymbolized frames in a symbolized profile still get a name pprof can show,
	 * module+0xOFFSET as the text reports give it: a location without a function is
	 * dropped by some viewers, its bytes charged to its caller (speedscope does). */
	if (!n && !o->no_symbolize) {
		char nb[128];

		st->fids[0] = pprof_builder__function(b, profile__line_name(p, l, NULL, nb, sizeof(nb)), NULL, NULL);
		st->lines[0] = 0;
		n = 1;
	}
	/* A Python frame has no address: its location is its line. */
	return pprof_builder__add_location(b, mid, l->python ? 0 : l->addr, st->fids, st->lines, n);
}

/* Every location, in order; for one process's profile, none yet: its samples make theirs
 * (the work is then its own samples', whatever the other processes hold). */
static void add_locations(struct pprof_state *st, const struct profile *p, const struct pprof_opts *o)
{
	if (o->pid)
		return;
	st->loc_ids = xcalloc(&st->b, p->nr_locs, sizeof(uint64_t));
	for (uint32_t i = 0; i < p->nr_locs; i++)
		st->loc_ids[i] = add_location(st, p, i, o);
}

static uint64_t location_id(struct pprof_state *st, const struct profile *p, uint32_t i, const struct pprof_opts *o)
{
	struct hmap_slot *slot;
	bool created;

	if (!o->pid)
		return st->loc_ids[i];
	slot = hmap_put(&st->loc_lazy, i, 0, &created);
	if (!slot)
		nomem(&st->b);
	if (created)
		slot->val = add_location(st, p, i, o);
	return slot->val;
}

static void add_samples(struct pprof_state *st, const struct profile *p, const struct pprof_opts *o)
{
	struct pprof_builder *b = &st->b;
	size_t cap_stack = 0;

	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];
		int64_t v[V__COUNT];
		struct pprof_label labels[3];
		char pid[16];
		const char *tname = replay__thread_name(p->r, s->pid, s->tid);
		int nl = 0;
		bool any = false;

		if (o->pid && s->pid != o->pid)
			continue;
		for (int k = 0; k < V__COUNT; k++) {
			v[k] = llround(s->v[k]);
			any |= v[k] != 0;
		}
		if (!any)
			continue;
		st->stack = room(b, st->stack, &cap_stack, s->nr_locs, sizeof(*st->stack));
		for (uint32_t k = 0; k < s->nr_locs; k++)
			st->stack[k] = location_id(st, p, p->loc_refs[s->first_loc + k], o);
		snprintf(pid, sizeof(pid), "%u", s->pid);
		labels[nl++] = (struct pprof_label){.key = "bytes", .num = (int64_t)s->size, .num_unit = "bytes"};
		labels[nl++] = (struct pprof_label){.key = "pid", .str = pid};
		if (tname)
			labels[nl++] = (struct pprof_label){.key = "thread", .str = tname};
		pprof_builder__add_sample(b, st->stack, (int)s->nr_locs, v, labels, nl);
	}
}

static int build_and_write(struct pprof_state *st, const struct profile *p, const struct pprof_opts *o, FILE *out)
{
	static const char *const types[V__COUNT] = {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"};
	static const char *const units[V__COUNT] = {"count", "bytes", "count", "bytes"};
	const struct replay *r = p->r;
	struct pprof_builder *b = &st->b;

	pprof_builder__init(b, types, units, V__COUNT, "space", "bytes", (int64_t)r->sample_rate);

	pprof_builder__set_default_type(b, "inuse_space");
	if (o->time_ns)
		pprof_builder__set_time(b, o->time_ns, o->duration_ns);
	else
		pprof_builder__set_time(b, (int64_t)(r->realtime_start_ns + r->stop_time * r->tick_ns),
					(int64_t)((r->last_time - r->first_time) * r->tick_ns));
	add_comments(b, p, o);
	add_locations(st, p, o);
	add_samples(st, p, o);
	return pprof_builder__write(b, out);
}

int pprof_write_profile(const struct profile *p, const struct pprof_opts *o, FILE *out)
{
	struct pprof_state *st = calloc(1, sizeof(*st));
	jmp_buf oom;
	int ret;

	if (!st)
		return -ENOMEM;
	st->b.oom = &oom;
	if (setjmp(oom))
		ret = -ENOMEM;
	else
		ret = build_and_write(st, p, o, out);
	pprof_builder__release(&st->b);
	free(st->loc_ids);
	free(st->stack);
	free(st->fids);
	free(st->lines);
	hmap_free(&st->map_ids);
	hmap_free(&st->loc_lazy);
	free(st);
	return ret;
}
