// SPDX-License-Identifier: MIT
/* An interval as an OTLP profiles request (proto/otlp_profiles.proto, protobuf-c). Since a
 * Profile of this version holds one sample type, each process gets four, whose samples
 * share the request's one dictionary of stacks, locations, functions, mappings and
 * strings. Every message lives in one arena, freed at once. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "buildid.h"
#include "export.h"
#include "hmap.h"
#include "otlp_profiles.pb-c.h"

typedef Heapsnap__Otlp__ExportProfilesServiceRequest OtRequest;
typedef Heapsnap__Otlp__ProfilesDictionary OtDict;
typedef Heapsnap__Otlp__ResourceProfiles OtResource;
typedef Heapsnap__Otlp__ScopeProfiles OtScope;
typedef Heapsnap__Otlp__Profile OtProfile;
typedef Heapsnap__Otlp__Sample OtSample;
typedef Heapsnap__Otlp__Mapping OtMapping;
typedef Heapsnap__Otlp__Location OtLocation;
typedef Heapsnap__Otlp__Line OtLine;
typedef Heapsnap__Otlp__Function OtFunction;
typedef Heapsnap__Otlp__Stack OtStack;
typedef Heapsnap__Otlp__KeyValue OtKeyValue;
typedef Heapsnap__Otlp__KeyValueAndUnit OtKeyValueAndUnit;
typedef Heapsnap__Otlp__AnyValue OtAnyValue;
typedef Heapsnap__Otlp__ValueType OtValueType;

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

/* What an encoding builds: the arena, the dictionary's tables and their indexes. */
struct otlp_state {
	jmp_buf *oom;
	struct arena_chunk *chunks;
	OtDict *d;
	size_t cap_strings, cap_functions, cap_mappings, cap_locations, cap_stacks, cap_attrs;
	struct hmap strings;   /* (hash, length) -> index; a collision appends a duplicate */
	struct hmap functions; /* (name << 32 | system name, file) -> index */
	struct hmap mappings;  /* struct mapping pointer -> index */
	struct hmap stacks;    /* (hash of its locations, count) -> index, chained by equality */
	struct hmap attrs;     /* a sample's attribute: (enum sample_attr, its value) -> index */
	int32_t *loc_index;    /* by profile location: its index in location_table, 0 if none yet */
	int32_t *stack_of;     /* by profile sample: its stack's index, 0 if none yet */
};

static _Noreturn void nomem(struct otlp_state *st)
{
	longjmp(*st->oom, 1);
}

/* N zeroed bytes that live as long as the encoding. */
static void *arena_alloc(struct otlp_state *st, size_t n)
{
	struct arena_chunk *c = st->chunks;

	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (!c || c->cap - c->used < n) {
		size_t cap = n > (64u << 10) ? n : 64u << 10;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			nomem(st);
		c->next = st->chunks;
		c->used = 0;
		c->cap = cap;
		st->chunks = c;
	}
	void *p = (char *)c->data + c->used;

	c->used += n;
	memset(p, 0, n);
	return p;
}

static char *arena_strdup(struct otlp_state *st, const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(arena_alloc(st, n), s, n);
}

/* Room for one more in the malloc'd table ARR of *CAP (the tables outgrow any chunk). */
static void *grow(struct otlp_state *st, void *arr, size_t n, size_t *cap, size_t size)
{
	void *g;

	if (n < *cap)
		return arr;
	g = realloc(arr, size * (*cap ? *cap * 2 : 64));
	if (!g)
		nomem(st);
	*cap = *cap ? *cap * 2 : 64;
	return g;
}

static int32_t string_index(struct otlp_state *st, const char *s)
{
	OtDict *d = st->d;
	struct hmap_slot *slot;
	bool created;

	slot = hmap_put(&st->strings, hmap_str_hash(s), strlen(s), &created);
	if (!slot)
		nomem(st);
	if (!created && !strcmp(d->string_table[slot->val], s))
		return (int32_t)slot->val;
	d->string_table = grow(st, d->string_table, d->n_string_table, &st->cap_strings, sizeof(char *));
	d->string_table[d->n_string_table] = arena_strdup(st, s);
	if (created)
		slot->val = d->n_string_table;
	return (int32_t)d->n_string_table++;
}

static OtValueType *value_type(struct otlp_state *st, const char *type, const char *unit)
{
	OtValueType *vt = arena_alloc(st, sizeof(*vt));

	heapsnap__otlp__value_type__init(vt);
	vt->type_strindex = string_index(st, type);
	vt->unit_strindex = string_index(st, unit);
	return vt;
}

static int32_t function_index(struct otlp_state *st, const char *name, const char *system_name, const char *file,
			      uint32_t start_line)
{
	int32_t n = string_index(st, name), sn = string_index(st, system_name ? system_name : name);
	int32_t f = string_index(st, file ? file : "");
	OtDict *d = st->d;
	struct hmap_slot *slot;
	OtFunction *fn;
	bool created;

	slot = hmap_put(&st->functions, (uint64_t)(uint32_t)n << 32 | (uint32_t)sn, (uint64_t)(uint32_t)f, &created);
	if (!slot)
		nomem(st);
	if (!created)
		return (int32_t)slot->val;
	fn = arena_alloc(st, sizeof(*fn));
	heapsnap__otlp__function__init(fn);
	fn->name_strindex = n;
	fn->system_name_strindex = sn;
	fn->filename_strindex = f;
	fn->start_line = start_line;
	d->function_table = grow(st, d->function_table, d->n_function_table, &st->cap_functions, sizeof(fn));
	d->function_table[d->n_function_table] = fn;
	slot->val = d->n_function_table++;
	return (int32_t)slot->val;
}

static OtAnyValue *string_value(struct otlp_state *st, const char *s)
{
	OtAnyValue *v = arena_alloc(st, sizeof(*v));

	heapsnap__otlp__any_value__init(v);
	v->value_case = HEAPSNAP__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
	v->string_value = arena_strdup(st, s);
	return v;
}

/* KV appended to the dictionary's attributes: its index. */
static int32_t attr_append(struct otlp_state *st, OtKeyValueAndUnit *kv)
{
	OtDict *d = st->d;

	d->attribute_table = grow(st, d->attribute_table, d->n_attribute_table, &st->cap_attrs, sizeof(kv));
	d->attribute_table[d->n_attribute_table] = kv;
	return (int32_t)d->n_attribute_table++;
}

/* A new attribute KEY (in UNIT, "" for none), its value to be set. */
static OtKeyValueAndUnit *attr_new(struct otlp_state *st, const char *key, const char *unit)
{
	OtKeyValueAndUnit *kv = arena_alloc(st, sizeof(*kv));

	heapsnap__otlp__key_value_and_unit__init(kv);
	kv->key_strindex = string_index(st, key);
	kv->unit_strindex = string_index(st, unit);
	return kv;
}

/* An attribute of the dictionary (a mapping's build-id): its index. */
static int32_t attribute_index(struct otlp_state *st, const char *key, const char *value)
{
	OtKeyValueAndUnit *kv = attr_new(st, key, "");

	kv->value = string_value(st, value);
	return attr_append(st, kv);
}

/* What a sample carries, as pprof's labels do (pprof.c): its block's size, as pprof's
 * "bytes" (Go's heap profiles' key), and its thread, as the semantic conventions name it. */
enum sample_attr { ATTR_BYTES = 1, ATTR_THREAD_ID, ATTR_THREAD_NAME };

/* The slot of KIND's value KEY among the sample attributes, each made once and shared by
 * every sample with it; *CREATED: a new one, whose value (its index) the caller sets. */
static struct hmap_slot *sample_attr_slot(struct otlp_state *st, enum sample_attr kind, uint64_t key, bool *created)
{
	struct hmap_slot *slot = hmap_put(&st->attrs, kind, key, created);

	if (!slot)
		nomem(st);
	return slot;
}

/* The sample attribute KEY = V, an integer in UNIT ("" for none), for KIND's value V. */
static int32_t int_attribute(struct otlp_state *st, enum sample_attr kind, const char *key, int64_t v, const char *unit)
{
	bool created;
	struct hmap_slot *slot = sample_attr_slot(st, kind, (uint64_t)v, &created);
	OtKeyValueAndUnit *kv;

	if (!created)
		return (int32_t)slot->val;
	kv = attr_new(st, key, unit);
	kv->value = arena_alloc(st, sizeof(*kv->value));
	heapsnap__otlp__any_value__init(kv->value);
	kv->value->value_case = HEAPSNAP__OTLP__ANY_VALUE__VALUE_INT_VALUE;
	kv->value->int_value = v;
	return (int32_t)(slot->val = (uint64_t)attr_append(st, kv));
}

/* Thread TID of process PID's name, NAME, as thread.name. */
static int32_t thread_name_attribute(struct otlp_state *st, uint32_t pid, uint32_t tid, const char *name)
{
	bool created;
	struct hmap_slot *slot = sample_attr_slot(st, ATTR_THREAD_NAME, (uint64_t)pid << 32 | tid, &created);
	OtKeyValueAndUnit *kv;

	if (!created)
		return (int32_t)slot->val;
	kv = attr_new(st, "thread.name", "");
	kv->value = string_value(st, name);
	return (int32_t)(slot->val = (uint64_t)attr_append(st, kv));
}

/* Sample S's attributes, into OS. */
static void sample_attributes(struct otlp_state *st, const struct replay *r, const struct prof_sample *s, OtSample *os)
{
	const char *name = replay__thread_name(r, s->pid, s->tid);

	os->attribute_indices = arena_alloc(st, 3 * sizeof(int32_t));
	os->attribute_indices[os->n_attribute_indices++] =
		int_attribute(st, ATTR_BYTES, "bytes", (int64_t)s->size, "bytes");
	os->attribute_indices[os->n_attribute_indices++] = int_attribute(st, ATTR_THREAD_ID, "thread.id", s->tid, "");
	if (name)
		os->attribute_indices[os->n_attribute_indices++] = thread_name_attribute(st, s->pid, s->tid, name);
}

/* A location's mapping, added on its first location, with its build-id; 0 for none. */
static int32_t mapping_index(struct otlp_state *st, const struct mapping *m)
{
	OtDict *d = st->d;
	struct hmap_slot *slot;
	OtMapping *om;
	bool created;

	if (!m)
		return 0;
	slot = hmap_put(&st->mappings, (uint64_t)(uintptr_t)m, 0, &created);
	if (!slot)
		nomem(st);
	if (!created)
		return (int32_t)slot->val;
	om = arena_alloc(st, sizeof(*om));
	heapsnap__otlp__mapping__init(om);
	om->memory_start = m->start;
	om->memory_limit = m->end;
	om->file_offset = m->offset;
	om->filename_strindex = string_index(st, m->path ? m->path : "");
	if (m->build_id_len) {
		char hex[2 * HS_MAX_BUILD_ID + 1];

		hs_hex(m->build_id, m->build_id_len, hex);
		om->attribute_indices = arena_alloc(st, sizeof(int32_t));
		om->attribute_indices[0] = attribute_index(st, "process.executable.build_id.gnu", hex);
		om->n_attribute_indices = 1;
	}
	d->mapping_table = grow(st, d->mapping_table, d->n_mapping_table, &st->cap_mappings, sizeof(om));
	d->mapping_table[d->n_mapping_table] = om;
	slot->val = d->n_mapping_table++;
	return (int32_t)slot->val;
}

/* Profile location I as a dictionary location (once): its lines, inlined first. */
static int32_t location_index(struct otlp_state *st, const struct export_interval *iv, uint32_t i)
{
	const struct profile *p = iv->p;
	const struct prof_loc *l = &p->locs[i];
	OtDict *d = st->d;
	OtLocation *ol;
	/* A Python frame is named whatever the options: nothing after could name it. */
	uint32_t n = iv->no_symbolize && !l->python ? 0 : l->nr_lines;
	bool unnamed = !n && !iv->no_symbolize;

	if (st->loc_index[i])
		return st->loc_index[i];
	ol = arena_alloc(st, sizeof(*ol));
	heapsnap__otlp__location__init(ol);
	ol->mapping_index = mapping_index(st, l->map);
	ol->address = l->python ? 0 : l->addr;
	ol->lines = arena_alloc(st, sizeof(*ol->lines) * (n + unnamed));
	for (uint32_t k = 0; k < n; k++) {
		const struct prof_line *ln = &p->lines[l->first_line + k];
		OtLine *line = arena_alloc(st, sizeof(*line));
		char nb[128];

		heapsnap__otlp__line__init(line);
		line->function_index = function_index(
			st, l->python ? ln->function : profile__line_name(p, l, ln, nb, sizeof(nb)), ln->system_name,
			ln->file, ln->start_line);
		line->line = ln->line;
		ol->lines[ol->n_lines++] = line;
	}
	/* As in pprof: an unsymbolized frame of a symbolized profile is named module+0xOFFSET. */
	if (unnamed) {
		OtLine *line = arena_alloc(st, sizeof(*line));
		char nb[128];

		heapsnap__otlp__line__init(line);
		line->function_index = function_index(st, profile__line_name(p, l, NULL, nb, sizeof(nb)), NULL, NULL, 0);
		ol->lines[ol->n_lines++] = line;
	}
	d->location_table = grow(st, d->location_table, d->n_location_table, &st->cap_locations, sizeof(ol));
	d->location_table[d->n_location_table] = ol;
	st->loc_index[i] = (int32_t)d->n_location_table++;
	return st->loc_index[i];
}

/* Sample I's stack (leaf first), shared by every sample of the same locations. */
static int32_t stack_index(struct otlp_state *st, const struct export_interval *iv, uint32_t i)
{
	const struct prof_sample *s = &iv->p->samples[i];
	const uint32_t *refs = &iv->p->loc_refs[s->first_loc];
	uint64_t h = 0xcbf29ce484222325ull;
	OtDict *d = st->d;
	struct hmap_slot *slot;
	OtStack *os;
	bool created;
	uint64_t k2;

	if (st->stack_of[i])
		return st->stack_of[i];
	for (uint32_t k = 0; k < s->nr_locs; k++)
		h = (h ^ refs[k]) * 0x100000001b3ull;
	/* Equal hashes of other locations chain on through the second key. */
	for (k2 = s->nr_locs;; k2 += 1ull << 32) {
		slot = hmap_put(&st->stacks, h, k2, &created);
		if (!slot)
			nomem(st);
		if (created)
			break;
		os = d->stack_table[slot->val];
		if (os->n_location_indices == s->nr_locs) {
			uint32_t k = 0;

			while (k < s->nr_locs && os->location_indices[k] == st->loc_index[refs[k]])
				k++;
			if (k == s->nr_locs)
				return st->stack_of[i] = (int32_t)slot->val;
		}
	}
	os = arena_alloc(st, sizeof(*os));
	heapsnap__otlp__stack__init(os);
	os->location_indices = arena_alloc(st, sizeof(int32_t) * s->nr_locs);
	for (uint32_t k = 0; k < s->nr_locs; k++)
		os->location_indices[k] = location_index(st, iv, refs[k]);
	os->n_location_indices = s->nr_locs;
	d->stack_table = grow(st, d->stack_table, d->n_stack_table, &st->cap_stacks, sizeof(os));
	d->stack_table[d->n_stack_table] = os;
	slot->val = d->n_stack_table++;
	return st->stack_of[i] = (int32_t)slot->val;
}

static OtKeyValue *resource_attr(struct otlp_state *st, const char *key, const char *str, int64_t num)
{
	OtKeyValue *kv = arena_alloc(st, sizeof(*kv));

	heapsnap__otlp__key_value__init(kv);
	kv->key = arena_strdup(st, key);
	if (str) {
		kv->value = string_value(st, str);
	} else {
		kv->value = arena_alloc(st, sizeof(*kv->value));
		heapsnap__otlp__any_value__init(kv->value);
		kv->value->value_case = HEAPSNAP__OTLP__ANY_VALUE__VALUE_INT_VALUE;
		kv->value->int_value = num;
	}
	return kv;
}

/* The Resource of process PR: semantic conventions' service, host and process keys. */
static void add_resource(struct otlp_state *st, const struct export_interval *iv, const struct process *pr,
			 OtResource *rp)
{
	const char *exe = pr->exe && *pr->exe ? pr->exe : NULL;
	const char *name = exe && strrchr(exe, '/') ? strrchr(exe, '/') + 1 : pr->comm ? pr->comm : "";

	rp->resource = arena_alloc(st, sizeof(*rp->resource));
	heapsnap__otlp__resource__init(rp->resource);
	rp->resource->attributes = arena_alloc(st, 6 * sizeof(OtKeyValue *));
	OtKeyValue **a = rp->resource->attributes;
	size_t n = 0;

	a[n++] = resource_attr(st, "service.name", export__service(iv, pr), 0);
	a[n++] = resource_attr(st, "host.name", iv->p->r->hostname ? iv->p->r->hostname : "", 0);
	a[n++] = resource_attr(st, "process.pid", NULL, pr->pid);
	a[n++] = resource_attr(st, "process.executable.name", name, 0);
	if (exe)
		a[n++] = resource_attr(st, "process.executable.path", exe, 0);
	if (pr->cmdline && *pr->cmdline)
		a[n++] = resource_attr(st, "process.command_line", pr->cmdline, 0);
	rp->resource->n_attributes = n;
}

/* Process I's four profiles, each a sample for every stack with a value of its type. */
static void add_process(struct otlp_state *st, const struct export_interval *iv, uint32_t i_pid, OtResource *rp)
{
	static const int order[4] = {V_INUSE_SPACE, V_INUSE_OBJECTS, V_ALLOC_SPACE, V_ALLOC_OBJECTS};
	const struct profile *p = iv->p;
	uint32_t lo = iv->first[i_pid], hi = iv->first[i_pid + 1];
	OtScope *sc = arena_alloc(st, sizeof(*sc));

	heapsnap__otlp__scope_profiles__init(sc);
	sc->scope = arena_alloc(st, sizeof(*sc->scope));
	heapsnap__otlp__instrumentation_scope__init(sc->scope);
	sc->scope->name = "heapsnap";
	sc->scope->version = HEAPSNAP_VERSION;
	sc->profiles = arena_alloc(st, 4 * sizeof(OtProfile *));
	rp->scope_profiles = arena_alloc(st, sizeof(OtScope *));
	rp->scope_profiles[0] = sc;
	rp->n_scope_profiles = 1;
	for (int t = 0; t < 4; t++) {
		int k = order[t];
		OtProfile *op = arena_alloc(st, sizeof(*op));
		uint32_t n = 0;

		heapsnap__otlp__profile__init(op);
		op->sample_type = value_type(st, value_names[k], k == V_INUSE_SPACE || k == V_ALLOC_SPACE ? "bytes" : "count");
		op->time_unix_nano = iv->start_ns;
		op->duration_nano = iv->end_ns - iv->start_ns;
		op->period_type = value_type(st, "space", "bytes");
		op->period = p->r->sample_rate ? (int64_t)p->r->sample_rate : 1;
		for (uint32_t i = lo; i < hi; i++)
			n += llround(p->samples[i].v[k]) != 0;
		op->samples = arena_alloc(st, sizeof(OtSample *) * n);
		for (uint32_t i = lo; i < hi; i++) {
			const struct prof_sample *s = &p->samples[i];
			OtSample *os;

			if (llround(s->v[k]) == 0)
				continue;
			os = arena_alloc(st, sizeof(*os));
			heapsnap__otlp__sample__init(os);
			os->stack_index = stack_index(st, iv, i);
			sample_attributes(st, p->r, s, os);
			os->values = arena_alloc(st, sizeof(int64_t));
			os->values[0] = llround(s->v[k]);
			os->n_values = 1;
			op->samples[op->n_samples++] = os;
		}
		sc->profiles[sc->n_profiles++] = op;
	}
}

/* Every table's entry 0 is its zero value, as the proto requires. */
static void dictionary_init(struct otlp_state *st)
{
	OtDict *d = arena_alloc(st, sizeof(*d));
	Heapsnap__Otlp__Link *link = arena_alloc(st, sizeof(*link));
	OtMapping *m = arena_alloc(st, sizeof(*m));
	OtLocation *l = arena_alloc(st, sizeof(*l));
	OtFunction *f = arena_alloc(st, sizeof(*f));
	OtStack *s = arena_alloc(st, sizeof(*s));
	OtKeyValueAndUnit *kv = arena_alloc(st, sizeof(*kv));

	heapsnap__otlp__profiles_dictionary__init(d);
	st->d = d;
	heapsnap__otlp__link__init(link);
	/* The zero Link is all-zero ids of their full lengths. */
	link->trace_id = (ProtobufCBinaryData){16, arena_alloc(st, 16)};
	link->span_id = (ProtobufCBinaryData){8, arena_alloc(st, 8)};
	d->link_table = arena_alloc(st, sizeof(link));
	d->link_table[d->n_link_table++] = link;
	heapsnap__otlp__mapping__init(m);
	d->mapping_table = grow(st, NULL, 0, &st->cap_mappings, sizeof(m));
	d->mapping_table[d->n_mapping_table++] = m;
	heapsnap__otlp__location__init(l);
	d->location_table = grow(st, NULL, 0, &st->cap_locations, sizeof(l));
	d->location_table[d->n_location_table++] = l;
	heapsnap__otlp__function__init(f);
	d->function_table = grow(st, NULL, 0, &st->cap_functions, sizeof(f));
	d->function_table[d->n_function_table++] = f;
	heapsnap__otlp__stack__init(s);
	d->stack_table = grow(st, NULL, 0, &st->cap_stacks, sizeof(s));
	d->stack_table[d->n_stack_table++] = s;
	heapsnap__otlp__key_value_and_unit__init(kv);
	d->attribute_table = grow(st, NULL, 0, &st->cap_attrs, sizeof(kv));
	d->attribute_table[d->n_attribute_table++] = kv;
	string_index(st, "");
}

static void encode(struct otlp_state *st, const struct export_interval *iv, uint8_t **out, size_t *len)
{
	OtRequest *req = arena_alloc(st, sizeof(*req));

	heapsnap__otlp__export_profiles_service_request__init(req);
	dictionary_init(st);
	req->dictionary = st->d;
	st->loc_index = calloc(iv->p->nr_locs ? iv->p->nr_locs : 1, sizeof(int32_t));
	st->stack_of = calloc(iv->p->nr_samples ? iv->p->nr_samples : 1, sizeof(int32_t));
	if (!st->loc_index || !st->stack_of)
		nomem(st);
	req->resource_profiles = arena_alloc(st, sizeof(OtResource *) * iv->nr_pids);
	for (uint32_t i = 0; i < iv->nr_pids; i++) {
		const struct process *pr = replay__process(iv->p->r, iv->pids[i]);
		OtResource *rp;

		if (!pr)
			continue;
		rp = arena_alloc(st, sizeof(*rp));
		heapsnap__otlp__resource_profiles__init(rp);
		add_resource(st, iv, pr, rp);
		add_process(st, iv, i, rp);
		req->resource_profiles[req->n_resource_profiles++] = rp;
	}
	*len = heapsnap__otlp__export_profiles_service_request__get_packed_size(req);
	*out = malloc(*len ? *len : 1);
	if (!*out)
		nomem(st);
	heapsnap__otlp__export_profiles_service_request__pack(req, *out);
}

int otlp__encode(const struct export_interval *iv, uint8_t **out, size_t *len)
{
	struct otlp_state *st = calloc(1, sizeof(*st));
	jmp_buf oom;
	volatile int ret = 0;

	*out = NULL;
	*len = 0;
	if (!st)
		return -ENOMEM;
	st->oom = &oom;
	if (setjmp(oom)) {
		free(*out);
		*out = NULL;
		ret = -ENOMEM;
	} else {
		encode(st, iv, out, len);
	}
	if (st->d) {
		free(st->d->string_table);
		free(st->d->function_table);
		free(st->d->mapping_table);
		free(st->d->location_table);
		free(st->d->stack_table);
		free(st->d->attribute_table);
	}
	while (st->chunks) {
		struct arena_chunk *c = st->chunks;

		st->chunks = c->next;
		free(c);
	}
	hmap_free(&st->strings);
	hmap_free(&st->functions);
	hmap_free(&st->mappings);
	hmap_free(&st->stacks);
	hmap_free(&st->attrs);
	free(st->loc_index);
	free(st->stack_of);
	free(st);
	return ret;
}
