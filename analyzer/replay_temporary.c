// SPDX-License-Identifier: MIT
/* Temporary allocations as the replay applies each event: which frees end the last block
 * their thread allocated. */
#include "hmap.h"
#include "replay_int.h"

/* Temporary allocations, as heaptrack counts them: a block freed by its thread (by free or by
 * realloc) before that thread allocates anything else.
 *
 * A realloc that fails is no event to heaptrack; both ways in write the FREE realloc made
 * before its call, then the block restored (3.0 files of the in-process way, neither). So a
 * restored ALLOC undoes what that FREE did to its thread: its last allocation is again what
 * it was, and a temporary the FREE counted is taken back (temp_undo, cleared by the thread's
 * next event). */
#define TEMP_COUNTED (1ull << 63)

static void temporary_undo(struct replay *r, const struct replay_event *rec, struct hmap_slot *s)
{
	struct hmap_slot *u = hmap_find(&r->temp_undo, rec->pid, rec->tid);
	uint64_t prev;

	if (!u || !u->val) {
		s->val = 0;
		return;
	}
	prev = u->val & ~TEMP_COUNTED;
	if ((u->val & TEMP_COUNTED) && (prev >> 32) < r->nr_aggs) {
		struct agg *a = &r->aggs[prev >> 32];
		double w = rec->weight / (double)HS_WEIGHT_ONE;

		a->temp_objects -= w;
		a->temp_space -= w * (double)a->size;
	}
	s->val = prev;
	u->val = 0;
}

void replay_temporary_note(struct replay *r, const struct replay_event *rec)
{
	struct hmap_slot *s = hmap_put(&r->temp_last, rec->pid, rec->tid, NULL), *u;
	struct live_slot *e;
	bool counted = false;

	if (!s)
		replay_nomem(r);
	if (rec->type != HS_REC_FREE && (rec->kind & HS_KIND_RESTORED)) {
		temporary_undo(r, rec, s);
		return;
	}
	if (rec->type == HS_REC_FREE && s->val && (s->val & 0xffffffffu) - 1 == rec->slot && rec->slot < r->live.cap &&
	    (e = &r->live.s[rec->slot])->agg != LIVE_EMPTY && e->agg == s->val >> 32) {
		struct agg *a = &r->aggs[e->agg];
		double w = e->weight / (double)HS_WEIGHT_ONE;

		a->temp_objects += w;
		a->temp_space += w * (double)a->size;
		counted = true;
	}
	if (rec->type == HS_REC_FREE) {
		u = hmap_put(&r->temp_undo, rec->pid, rec->tid, NULL);
		if (!u)
			replay_nomem(r);
		/* An aggregate past 2^31 (never, in practice) keeps no undo. */
		u->val = s->val >> 63 ? 0 : s->val | (counted ? TEMP_COUNTED : 0);
	} else if ((u = hmap_find(&r->temp_undo, rec->pid, rec->tid))) {
		u->val = 0;
	}
	s->val = 0;
}

void replay_temporary_after(struct replay *r, const struct replay_event *rec)
{
	struct hmap_slot *s;

	if (rec->type == HS_REC_FREE || (rec->kind & HS_KIND_RESTORED) || rec->slot >= 0xfffffffeu ||
	    rec->slot >= r->live.cap || r->live.s[rec->slot].agg == LIVE_EMPTY)
		return;
	s = hmap_find(&r->temp_last, rec->pid, rec->tid);
	if (s)
		s->val = (uint64_t)r->live.s[rec->slot].agg << 32 | (rec->slot + 1);
}
