// SPDX-License-Identifier: MIT
/* Version 3 events: the per-frame state both sides keep, the writer's encoding and the
 * reader's decoding (docs/FORMAT.md, Version 3 events). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "events3.h"
#include "grow.h"

void hs3_state__reset(struct hs3_state *s)
{
	struct hs3_pair *pairs = s->pairs;
	struct hs3_classes *cls = s->cls;
	uint32_t gen = s->gen + 1;

	memset(s, 0, offsetof(struct hs3_state, freed));
	s->pairs = pairs;
	s->cls = cls;
	if (cls)
		hs3_classes__reset(cls);
	s->last_pair = -1;
	/* Past 2^32 frames a gen comes round again: every entry is cleared then. */
	if (!gen) {
		memset(s->live, 0, sizeof(s->live));
		gen = 1;
	}
	s->gen = gen;
}

/* The frame's current thread: (0, 0) before its first THREAD. */
static void cur_thread(const struct hs3_state *s, uint32_t *pid, uint32_t *tid)
{
	*pid = s->nr_threads ? s->threads[0].pid : 0;
	*tid = s->nr_threads ? s->threads[0].tid : 0;
}

static bool freed_top(const struct hs3_state *s, uint64_t *slot)
{
	if (!s->nr_freed)
		return false;
	*slot = s->freed[(s->freed_top - 1) % HS3_FREED];
	return true;
}

static uint32_t nr_ages(const struct hs3_state *s)
{
	return s->nr_allocs < HS3_AGES ? (uint32_t)s->nr_allocs : HS3_AGES;
}

int hs3_age_find(const struct hs3_state *s, uint64_t slot)
{
	const struct hs3_live *e = &s->live[slot % HS3_LIVE];

	if (e->gen != s->gen || !e->live || e->slot != slot || s->nr_allocs - 1 - e->n >= HS3_AGES)
		return -1;
	return (int)(s->nr_allocs - 1 - e->n);
}

/* The slot of the block AGE allocations ago, if it is live: what hs3_age_find would have
 * given that age for. */
static bool age_slot(const struct hs3_state *s, uint32_t age, uint64_t *slot)
{
	uint64_t n = s->nr_allocs - 1 - age, sl = s->age_slot[n % HS3_AGES];
	const struct hs3_live *e = &s->live[sl % HS3_LIVE];

	*slot = sl;
	return e->gen == s->gen && e->live && e->slot == sl && e->n == n;
}

void hs3_note_alloc(struct hs3_state *s, uint64_t slot, bool from_freed, int32_t pair)
{
	if (s->cls) {
		uint32_t pid, tid;

		cur_thread(s, &pid, &tid);
		hs3_classes__alloc(s->cls, s->nr_allocs, slot, pid, tid, pair, s->tno);
	}
	if (from_freed) {
		s->freed_top--;
		s->nr_freed--;
	}
	if (slot >= s->next_new)
		s->next_new = slot + 1;
	/* A live slot allocated again (its free was lost) or one sharing its entry: the entry
	 * is this block's now. */
	s->live[slot % HS3_LIVE] = (struct hs3_live){slot, s->nr_allocs, s->gen, true};
	s->age_slot[s->nr_allocs % HS3_AGES] = slot;
	s->nr_allocs++;
}

void hs3_note_free(struct hs3_state *s, uint64_t slot)
{
	if (s->cls)
		hs3_classes__free(s->cls, slot);
	s->last_free = slot;
	struct hs3_live *e = &s->live[slot % HS3_LIVE];

	if (e->gen == s->gen && e->slot == slot)
		e->live = false;
	/* Past HS3_FREED, the oldest entry is overwritten: the stack keeps its top. */
	s->freed[s->freed_top++ % HS3_FREED] = slot;
	if (s->nr_freed < HS3_FREED)
		s->nr_freed++;
}

int hs3_thread_find(const struct hs3_state *s, uint32_t pid, uint32_t tid)
{
	for (uint32_t i = 0; i < s->nr_threads; i++)
		if (s->threads[i].pid == pid && s->threads[i].tid == tid)
			return (int)i;
	return -1;
}

void hs3_note_thread(struct hs3_state *s, uint32_t pid, uint32_t tid)
{
	int i = hs3_thread_find(s, pid, tid);
	uint32_t n = i >= 0 ? (uint32_t)i : s->nr_threads < HS3_THREADS ? s->nr_threads++ : HS3_THREADS - 1;

	memmove(&s->threads[1], &s->threads[0], n * sizeof(s->threads[0]));
	s->threads[0].pid = pid;
	s->threads[0].tid = tid;
}

bool hs3_pair_eq(const struct hs3_pair *a, const struct hs3_pair *b)
{
	return a->size == b->size && a->stack_id == b->stack_id && a->kind == b->kind && a->sampled == b->sampled &&
	       (!a->sampled || a->weight == b->weight);
}

/* ---- writer ---- */

int hs3_writer__init(struct hs3_writer *w, uint32_t major)
{
	w->st.pairs = calloc(HS3_PAIRS, sizeof(*w->st.pairs));
	w->hash = calloc(HS3_PAIR_HASH, sizeof(*w->hash));
	if (!w->st.pairs || !w->hash)
		return -ENOMEM;
	w->ncols = HS3_NR_COLS_V3;
	if (major >= 4) {
		if (hs3_classes__init(&w->classes))
			return -ENOMEM;
		w->st.cls = &w->classes;
		w->ncols = HS3_NR_COLS;
	}
	w->quantum = 1;
	hs3_writer__reset(w);
	return 0;
}

void hs3_writer__fini(struct hs3_writer *w)
{
	free(w->st.pairs);
	free(w->hash);
	for (int i = 0; i < HS3_NR_COLS; i++)
		free(w->col[i].p);
	hs3_classes__fini(&w->classes);
	free(w->map);
	free(w->inv);
	free(w->moved);
	hmap_free(&w->lastev);
}

void hs3_writer__reset(struct hs3_writer *w)
{
	hs3_state__reset(&w->st);
	for (int i = 0; i < HS3_NR_COLS; i++)
		w->col[i].len = 0;
	/* A thread's last event matters to a swap only when it was this frame's. */
	hmap_free(&w->lastev);
	w->lastev_cur = NULL;
	/* The hash's entries of the frame before are stale once the generation moves on. */
	if (++w->gen == 0) {
		memset(w->hash, 0, HS3_PAIR_HASH * sizeof(*w->hash));
		w->gen = 1;
	}
}

size_t hs3_writer__cols_len(const struct hs3_writer *w)
{
	size_t n = 0;

	for (int i = 0; i < HS3_NR_COLS; i++)
		n += w->col[i].len;
	return n;
}

static int col_reserve(struct hs3_buf *b, size_t n)
{
	return hs_grow((void **)&b->p, &b->cap, b->len + n, 1, 4096);
}

static void col_u(struct hs3_buf *b, uint64_t v)
{
	b->len += hs_put_uvarint(b->p + b->len, v);
}

static uint64_t pair_hash(const struct hs3_pair *p)
{
	uint64_t h = p->size * 0x9e3779b97f4a7c15ull;

	h ^= (p->stack_id + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
	h ^= ((uint64_t)p->kind << 1 | p->sampled) * 0x165667b19e3779f9ull;
	if (p->sampled)
		h ^= p->weight * 0x27d4eb2f165667c5ull;
	return h ^ (h >> 29);
}

/* The pair's number in the frame's table, adding it when there is room. Sets *FORM. */
static int32_t pair_lookup(struct hs3_writer *w, const struct hs3_pair *p, enum hs3_pair_form *form)
{
	struct hs3_state *s = &w->st;
	uint32_t i = (uint32_t)pair_hash(p) & (HS3_PAIR_HASH - 1);

	if (s->last_pair >= 0 && hs3_pair_eq(&s->pairs[s->last_pair], p)) {
		*form = HS3_PAIR_SAME;
		return s->last_pair;
	}
	/* At most HS3_PAIRS of the HS3_PAIR_HASH entries are used: a probe always ends. */
	for (;; i = (i + 1) & (HS3_PAIR_HASH - 1)) {
		struct hs3_hent *e = &w->hash[i];

		if (e->gen != w->gen)
			break;
		if (hs3_pair_eq(&s->pairs[e->idx], p)) {
			*form = HS3_PAIR_INDEX;
			return (int32_t)e->idx;
		}
	}
	if (s->nr_pairs == HS3_PAIRS) {
		*form = HS3_PAIR_LITERAL;
		return -1;
	}
	w->hash[i] = (struct hs3_hent){w->gen, s->nr_pairs};
	s->pairs[s->nr_pairs] = *p;
	*form = HS3_PAIR_NEW;
	return (int32_t)s->nr_pairs++;
}

/* The file's slot for the caller's SLOT (the same until a FREE by class swaps two). */
static int file_slot(struct hs3_writer *w, uint64_t slot, uint64_t *file)
{
	if (!w->st.cls || slot >= HS3_MAP_MAX) {
		*file = slot;
		return 0;
	}
	if (slot >= w->map_len) {
		size_t ncap = w->map_cap ? w->map_cap : 4096;

		while (ncap <= slot)
			ncap *= 2;
		if (ncap > w->map_cap) {
			uint32_t *m = realloc(w->map, ncap * sizeof(*m)), *v;
			uint64_t *b;

			if (!m)
				return -ENOMEM;
			w->map = m;
			v = realloc(w->inv, ncap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			w->inv = v;
			b = realloc(w->moved, ncap / 64 * sizeof(*b));
			if (!b)
				return -ENOMEM;
			memset(b + w->map_cap / 64, 0, (ncap - w->map_cap) / 64 * sizeof(*b));
			w->moved = b;
			w->map_cap = ncap;
		}
		/* Slots never seen are their own: the swaps permute only slots seen before. */
		for (size_t i = w->map_len; i <= slot; i++)
			w->map[i] = w->inv[i] = (uint32_t)i;
		w->map_len = slot + 1;
	}
	*file = w->moved[slot / 64] >> (slot % 64) & 1 ? w->map[slot] : slot;
	return 0;
}

/* The thread's last event in this frame: an ALLOC of FILE (or a FREE, FILE = UINT64_MAX). */
static int note_last_event(struct hs3_writer *w, const struct hs_record *r, uint64_t file)
{
	struct hmap_slot *e;

	if (!w->st.cls)
		return 0;
	/* A thread's events come in runs: its entry is kept until the thread changes (the map
	 * only grows, or is freed, when another thread's entry is made). */
	e = w->lastev_cur;
	if (!e || e->k1 != r->pid || e->k2 != r->tid) {
		e = w->lastev_cur = hmap_put(&w->lastev, r->pid, r->tid, NULL);
		if (!e)
			return -ENOMEM;
	}
	e->val = file + 1;
	return 0;
}

/* A FREE of the block in file slot F by its class, when F is indexed and of this thread:
 * the class's newest block G is freed in the file instead, and the caller's slots of F and
 * G swap. Not when either is the block the thread's last event allocated, which the
 * analyzer counts as temporary if the thread's next event frees it. Returns the slot the
 * file frees, or UINT64_MAX when F is not freed by class. */
static uint64_t free_by_class(struct hs3_writer *w, uint64_t f, uint8_t **main)
{
	struct hs3_state *s = &w->st;
	struct hs3_class k;
	struct hmap_slot *e;
	uint64_t g, dt, last;
	uint32_t pid, tid;

	/* A class of one block names it at the cost of its pair and time, which the slot (a
	 * few bits more or less) does not repay. */
	if (!s->cls || !hs3_classes__of(s->cls, f, &k, &g) || k.members < 2)
		return UINT64_MAX;
	cur_thread(s, &pid, &tid);
	if (k.pid != pid || k.tid != tid)
		return UINT64_MAX;
	if (g != f) {
		if (f >= w->map_len || g >= w->map_len)
			return UINT64_MAX;
		e = hmap_find(&w->lastev, pid, tid);
		last = e ? e->val : 0;
		if (last == f + 1 || last == g + 1)
			return UINT64_MAX;
		uint32_t rf = w->inv[f], rg = w->inv[g];

		w->map[rf] = (uint32_t)g;
		w->inv[g] = rf;
		w->map[rg] = (uint32_t)f;
		w->inv[f] = rg;
		w->moved[rf / 64] |= 1ull << (rf % 64);
		w->moved[rg / 64] |= 1ull << (rg % 64);
	}
	dt = s->tno - k.tno;
	*(*main)++ = (uint8_t)(HS_PACKED_EVENT | HS3_FREE_CLASS | (dt < HS3_CLASS_TNO_ESC ? dt : HS3_CLASS_TNO_ESC));
	col_u(&w->col[HS3_COL_REF], k.pair);
	if (dt >= HS3_CLASS_TNO_ESC)
		col_u(&w->col[HS3_COL_TNO], dt - HS3_CLASS_TNO_ESC);
	return g;
}

static void put_slot(struct hs3_writer *w, uint64_t slot)
{
	w->col[HS3_COL_SLOTLO].p[w->col[HS3_COL_SLOTLO].len++] = (uint8_t)slot;
	col_u(&w->col[HS3_COL_SLOTHI], slot >> 8);
}

static int encode_alloc(struct hs3_writer *w, const struct hs_record *r, uint8_t **main)
{
	struct hs3_state *s = &w->st;
	uint64_t slot;
	struct hs3_pair p = {.size = r->alloc.size, .stack_id = r->alloc.stack_id, .kind = r->alloc.kind,
			     .sampled = r->type == HS_REC_ALLOC_SAMPLED};
	enum hs3_slot_form sf;
	enum hs3_pair_form pf;
	uint64_t top;
	int32_t k;

	p.weight = p.sampled ? r->alloc.weight : HS_WEIGHT_ONE;
	if (file_slot(w, r->alloc.slot, &slot))
		return -ENOMEM;
	if (freed_top(s, &top) && top == slot)
		sf = HS3_SLOT_FREED;
	else if (slot == s->next_new)
		sf = HS3_SLOT_NEW;
	else
		sf = HS3_SLOT_EXPLICIT;
	k = pair_lookup(w, &p, &pf);
	*(*main)++ = (uint8_t)(HS3_ALLOC | sf << HS3_SLOT_SHIFT | pf << HS3_PAIR_SHIFT);
	if (sf == HS3_SLOT_EXPLICIT)
		put_slot(w, slot);
	if (pf == HS3_PAIR_INDEX)
		col_u(&w->col[HS3_COL_REF], (uint64_t)k);
	if (pf == HS3_PAIR_NEW || pf == HS3_PAIR_LITERAL) {
		struct hs3_buf *c = &w->col[HS3_COL_PAIR];

		col_u(c, p.size);
		col_u(c, p.stack_id);
		col_u(c, (uint64_t)p.kind << 1 | p.sampled);
		if (p.sampled)
			col_u(c, p.weight);
	}
	s->last_pair = k;
	hs3_note_alloc(s, slot, sf == HS3_SLOT_FREED, k);
	return note_last_event(w, r, slot);
}

/* Whether a FREE may name its slot by its difference from the frame's last free's. That pays
 * when a program frees what it allocated together (Python's objects, PYTHONMALLOC=malloc: a
 * third smaller file); random frees pay for the form and a wider spread (the churn: 7.9%
 * larger, cxx 5.4%). So the writer uses it while more than half of the last HS3_NEAR_RUN frees
 * it wrote by slot were within the window (churn, cxx and mt: within 0.3% of without it). */
static void near_adapt(struct hs3_writer *w, uint64_t near)
{
	w->near_seen++;
	w->near_close += near < HS3_NEAR_WIDE;
	if (w->near_seen < HS3_NEAR_RUN)
		return;
	w->near_max = w->near_close * 2 > w->near_seen ? HS3_NEAR_WIDE : 0;
	w->near_seen = w->near_close = 0;
}

int hs3_encode(struct hs3_writer *w, const struct hs_record *r, uint8_t **main, uint64_t *coarse)
{
	struct hs3_state *s = &w->st;
	uint64_t t = r->time, q = t - t % w->quantum, slot;

	for (int i = 0; i < HS3_NR_COLS; i++)
		if (col_reserve(&w->col[i], 48))
			return -ENOMEM;
	/* Time moves on in steps of a quantum, and back only when an event (another CPU's,
	 * drained late) is a whole quantum behind: a time read back is within a quantum of the
	 * event's, and a steady stream of events between two steps is the same bytes. */
	if (!s->have_time || q > s->time || t + w->quantum <= s->time) {
		*(*main)++ = HS3_REC_TIME;
		*main += hs_put_uvarint(*main, hs_zigzag((int64_t)(q - s->time)));
		s->time = q;
		s->have_time = true;
		s->tno++;
	}
	*coarse = s->time;
	if (r->type != HS_REC_FREE)
		return encode_alloc(w, r, main);
	if (file_slot(w, r->free.slot, &slot))
		return -ENOMEM;
	int age = hs3_age_find(s, slot);
	uint64_t near = hs_zigzag((int64_t)(slot - s->last_free)), g;

	if (age < 0)
		near_adapt(w, near);
	/* By age, else near the last free while that pays (Python's objects: by class they
	 * were 6% larger), else by class (random frees: the churn a third smaller), else by
	 * slot. */
	if (age >= 0) {
		*(*main)++ = (uint8_t)(HS_PACKED_EVENT | HS3_FREE_AGE | (uint32_t)age);
	} else if (near < w->near_max) {
		*(*main)++ = (uint8_t)(HS_PACKED_EVENT | HS3_FREE_NEAR);
		col_u(&w->col[HS3_COL_NEAR], near);
	} else if ((g = free_by_class(w, slot, main)) != UINT64_MAX) {
		slot = g;
	} else {
		*(*main)++ = HS_PACKED_EVENT;
		put_slot(w, slot);
	}
	hs3_note_free(s, slot);
	return note_last_event(w, r, UINT64_MAX);
}

size_t hs3_columns_header(const struct hs3_writer *w, uint8_t *out)
{
	size_t n = 0;

	out[n++] = HS3_REC_COLUMNS;
	n += hs_put_uvarint(out + n, w->ncols);
	for (uint32_t i = 0; i < w->ncols; i++)
		n += hs_put_uvarint(out + n, w->col[i].len);
	return n;
}

/* ---- reader ---- */

static bool get_u(struct hs3_cursor *c, uint64_t *v)
{
	size_t n = hs_get_uvarint(c->p, (size_t)(c->end - c->p), v);

	c->p += n;
	return n > 0;
}

const char *hs3_columns_read(const uint8_t **p, const uint8_t *end, uint32_t ncols, struct hs3_cursor col[HS3_NR_COLS],
			     const uint8_t **main_end)
{
	struct hs3_cursor c = {*p, end};
	uint64_t nr, len[HS3_NR_COLS] = {0}, left;

	if (c.p >= end || *c.p++ != HS3_REC_COLUMNS)
		return "a version 3 or 4 frame does not start with its COLUMNS record";
	if (!get_u(&c, &nr))
		return "COLUMNS record: malformed or cut varint";
	if (nr != ncols)
		return ncols == HS3_NR_COLS ? "COLUMNS record: not 6 columns" : "COLUMNS record: not 5 columns";
	left = (uint64_t)(end - c.p);
	for (uint32_t i = 0; i < ncols; i++) {
		if (!get_u(&c, &len[i]))
			return "COLUMNS record: malformed or cut varint";
		left = (uint64_t)(end - c.p);
	}
	for (int i = HS3_NR_COLS - 1; i >= 0; i--) {
		if (len[i] > left)
			return "COLUMNS record: the columns are longer than the frame";
		left -= len[i];
		end -= len[i];
		col[i] = (struct hs3_cursor){end, end + len[i]};
	}
	*p = c.p;
	*main_end = end;
	return NULL;
}

const char *hs3_decode_time(struct hs3_state *s, const uint8_t **p, const uint8_t *end)
{
	struct hs3_cursor c = {*p, end};
	uint64_t d;

	if (!get_u(&c, &d))
		return "TIME record: malformed or cut varint";
	s->time += (uint64_t)hs_unzigzag(d);
	s->have_time = true;
	s->tno++;
	*p = c.p;
	return NULL;
}

static const char *get_slot(struct hs3_cursor col[HS3_NR_COLS], uint64_t *slot)
{
	struct hs3_cursor *lo = &col[HS3_COL_SLOTLO];
	uint64_t hi;

	if (lo->p >= lo->end)
		return "the slot-low column ends before its events";
	if (!get_u(&col[HS3_COL_SLOTHI], &hi))
		return "the slot-high column ends before its events, or holds a malformed varint";
	if (hi >> 56)
		return "slot above 64 bits";
	*slot = hi << 8 | *lo->p++;
	return NULL;
}

static const char *get_pair(struct hs3_cursor *c, struct hs3_pair *p)
{
	uint64_t kk;

	if (!get_u(c, &p->size) || !get_u(c, &p->stack_id) || !get_u(c, &kk))
		return "the pair column ends before its events, or holds a malformed varint";
	if (kk >> 1 > UINT32_MAX)
		return "allocation kind does not fit 32 bits";
	p->kind = (uint32_t)(kk >> 1);
	p->sampled = kk & 1;
	p->weight = HS_WEIGHT_ONE;
	if (p->sampled && !get_u(c, &p->weight))
		return "the pair column ends before its events, or holds a malformed varint";
	return NULL;
}

static const char *decode_alloc(struct hs3_state *s, struct hs3_cursor col[HS3_NR_COLS], uint8_t type,
				struct hs_record *rec)
{
	enum hs3_slot_form sf = (type >> HS3_SLOT_SHIFT) & 3;
	enum hs3_pair_form pf = (type >> HS3_PAIR_SHIFT) & 3;
	struct hs3_pair lit;
	const struct hs3_pair *p = &lit;
	const char *bad = NULL;
	uint64_t slot = 0, k;

	if (type & HS3_ALLOC_RESERVED)
		return "packed ALLOC with reserved bits set";
	switch (sf) {
	case HS3_SLOT_FREED:
		if (!freed_top(s, &slot))
			return "takes the slot freed last, but no free in this frame left one";
		break;
	case HS3_SLOT_NEW:
		slot = s->next_new;
		break;
	case HS3_SLOT_RESERVED:
		return "packed ALLOC with the reserved slot form";
	case HS3_SLOT_EXPLICIT:
		bad = get_slot(col, &slot);
		break;
	}
	if (bad)
		return bad;
	switch (pf) {
	case HS3_PAIR_SAME:
		if (s->last_pair < 0)
			return "repeats the pair of an allocation that did not name one in the table";
		p = &s->pairs[s->last_pair];
		break;
	case HS3_PAIR_INDEX:
		if (!get_u(&col[HS3_COL_REF], &k))
			return "the reference column ends before its events, or holds a malformed varint";
		if (k >= s->nr_pairs)
			return "pair index beyond the frame's pair table";
		s->last_pair = (int32_t)k;
		p = &s->pairs[k];
		break;
	case HS3_PAIR_NEW:
		if (s->nr_pairs == HS3_PAIRS)
			return "defines a pair past the frame's table of 4096";
		bad = get_pair(&col[HS3_COL_PAIR], &s->pairs[s->nr_pairs]);
		s->last_pair = (int32_t)s->nr_pairs;
		p = &s->pairs[s->nr_pairs++];
		break;
	case HS3_PAIR_LITERAL:
		if (s->nr_pairs < HS3_PAIRS)
			return "a literal pair while the frame's pair table has room";
		bad = get_pair(&col[HS3_COL_PAIR], &lit);
		s->last_pair = -1;
		break;
	}
	if (bad)
		return bad;
	rec->type = p->sampled ? HS_REC_ALLOC_SAMPLED : HS_REC_ALLOC;
	rec->alloc.slot = slot;
	rec->alloc.size = p->size;
	rec->alloc.stack_id = p->stack_id;
	rec->alloc.kind = p->kind;
	rec->alloc.weight = p->sampled ? p->weight : HS_WEIGHT_ONE;
	hs3_note_alloc(s, slot, sf == HS3_SLOT_FREED, s->last_pair);
	return NULL;
}

/* Version 4's FREE by class: the newest live block of the current thread's class of pair
 * REF and TIME record t back. */
static const char *decode_free_by_class(struct hs3_state *s, struct hs3_cursor col[HS3_NR_COLS], uint8_t type,
					uint64_t *slot)
{
	uint64_t k, t = type & 15u, more;
	uint32_t pid, tid;

	if (!s->cls)
		return "packed FREE with both age and near set (a FREE by class, which version 3 has not)";
	if (!get_u(&col[HS3_COL_REF], &k))
		return "the reference column ends before its events, or holds a malformed varint";
	if (k >= s->nr_pairs)
		return "FREE by class: pair index beyond the frame's pair table";
	if (t == HS3_CLASS_TNO_ESC) {
		if (!get_u(&col[HS3_COL_TNO], &more))
			return "the TIME-record column ends before its events, or holds a malformed varint";
		if (more > s->tno)
			return "FREE by class: names a TIME record before the frame's first";
		t += more;
	}
	if (t >= s->tno)
		return "FREE by class: names a TIME record before the frame's first";
	cur_thread(s, &pid, &tid);
	if (!hs3_classes__pick(s->cls, pid, tid, (uint32_t)k, s->tno - t, slot))
		return "FREE by class: no live block of the frame's has that thread, pair and TIME record";
	return NULL;
}

const char *hs3_decode(struct hs3_state *s, struct hs3_cursor col[HS3_NR_COLS], uint8_t type, struct hs_record *rec)
{
	const char *bad;
	uint64_t slot;

	if (!s->have_time)
		return "an event before the frame's first TIME record";
	rec->time = s->time;
	rec->alloc.ptr = 0;
	rec->alloc.size = rec->alloc.stack_id = 0;
	rec->alloc.kind = 0;
	rec->alloc.weight = HS_WEIGHT_ONE;
	if (type & HS_PACKED_ALLOC)
		return decode_alloc(s, col, type, rec);
	rec->type = HS_REC_FREE;
	if ((type & HS3_FREE_CLASS) == HS3_FREE_CLASS) {
		bad = decode_free_by_class(s, col, type, &slot);
		if (bad)
			return bad;
	} else if (type & HS3_FREE_NEAR) {
		uint64_t d;

		if (type & (HS3_FREE_AGE | 15u))
			return "packed FREE near the last one with an age set";
		if (!get_u(&col[HS3_COL_NEAR], &d))
			return "the near column ends before its events, or holds a malformed varint";
		slot = s->last_free + (uint64_t)hs_unzigzag(d);
	} else if (type & HS3_FREE_AGE) {
		uint32_t age = type & 15u;

		if (age >= nr_ages(s))
			return "frees by age a block older than the frame's allocations it may name";
		if (!age_slot(s, age, &slot))
			return "frees by age a block that is not live";
	} else {
		if (type & 15u)
			return "packed FREE by slot with an age set";
		bad = get_slot(col, &slot);
		if (bad)
			return bad;
	}
	rec->free.slot = slot;
	hs3_note_free(s, slot);
	return NULL;
}
