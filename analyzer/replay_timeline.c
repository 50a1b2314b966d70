// SPDX-License-Identifier: MIT
/* The replay's timeline: the live heap and the RSS over time, at most TIMELINE_MAX points,
 * each the highest of its stretch of time, the stretch doubling as the recording grows. */
#include <stdlib.h>
#include <string.h>

#include "replay_int.h"

/* Twice the stretch per point: points 2j and 2j + 1 become point j, the higher of the two
 * live totals (the earlier on a tie) with the higher RSS. */
static void timeline_coarsen(struct replay *r)
{
	for (uint32_t j = 0; j < TIMELINE_MAX / 2; j++) {
		const struct timeline_point *a = &r->tl[2 * j], *b = &r->tl[2 * j + 1];
		struct timeline_point q = !a->used || (b->used && b->live_bytes > a->live_bytes) ? *b : *a;

		if (a->used && b->used)
			q.rss_bytes = a->rss_bytes > b->rss_bytes ? a->rss_bytes : b->rss_bytes;
		q.bucket = j;
		r->tl[j] = q;
	}
	memset(&r->tl[TIMELINE_MAX / 2], 0, sizeof(*r->tl) * (TIMELINE_MAX / 2));
	r->nr_tl = (r->nr_tl + 1) / 2;
	r->tl_width *= 2;
}

/* The point of time T is found from T alone: bucket (T - t0) / width, an index into the
 * TIMELINE_MAX points allocated at the first call. Events a few microseconds out of order
 * (rings of several CPUs or threads) land in the buckets of their own times, so each bucket
 * keeps the highest live total of its events whatever their order, and nothing trusts
 * time to only go forward. A time before t0 counts in the first bucket. Without LIVE_KNOWN
 * (an RSS sample read while following, before the events it follows in the file are
 * applied), only the RSS is noted: a new point's live total is -1, unknown, until an event
 * of its stretch sets it. */
void replay_timeline_note(struct replay *r, uint64_t t, bool live_known)
{
	struct timeline_point *pt;
	uint64_t b;

	if (r->tl_done)
		return;
	if (!r->tl) {
		r->tl = calloc(TIMELINE_MAX, sizeof(*r->tl));
		if (!r->tl)
			replay_nomem(r);
		r->tl_t0 = t;
		r->tl_width = 1;
	}
	if (t < r->tl_t0)
		t = r->tl_t0;
	/* At most 64 doublings: the width never passes 2^63 before the bucket is in range. */
	while ((b = (t - r->tl_t0) / r->tl_width) >= TIMELINE_MAX)
		timeline_coarsen(r);
	pt = &r->tl[b];
	if (!pt->used) {
		*pt = (struct timeline_point){.bucket = b, .time = t, .live_bytes = r->live_bytes,
					      .live_blocks = r->live_count, .rss_bytes = r->rss_sum, .used = true};
		if (!live_known)
			pt->live_bytes = pt->live_blocks = -1;
		if (b >= r->nr_tl)
			r->nr_tl = (uint32_t)b + 1;
		return;
	}
	if (live_known && r->live_bytes > pt->live_bytes) {
		pt->live_bytes = r->live_bytes;
		pt->live_blocks = r->live_count;
		pt->time = t;
	}
	if (r->rss_sum > pt->rss_bytes)
		pt->rss_bytes = r->rss_sum;
}

/* The points in time order without the empty buckets between them: what reports read. */
void replay_timeline_finish(struct replay *r)
{
	uint32_t n = 0;

	for (uint32_t i = 0; r->tl && i < r->nr_tl && i < TIMELINE_MAX; i++)
		if (r->tl[i].used)
			r->tl[n++] = r->tl[i];
	r->nr_tl = n;
	r->tl_done = true;
}
