// SPDX-License-Identifier: MIT
/* heapsnap-analyze export: follows a recording as live does and cuts it at every
 * --interval of its own time (from the session's start), so that a finished file and one
 * being written give the same intervals. At each cut the heap is exactly what `--at T`
 * shows (events at or after T are held back); each process's profile holds the blocks live
 * then and what was allocated since the last cut, which the aggregates' running totals give
 * by difference. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"

/* Intervals with no event at all passed at once at most (a time far ahead in a damaged
 * file would otherwise make billions of them): past it, the cut moves to the event. */
#define IDLE_INTERVALS_MAX 1000

struct exporter {
	const struct opts *o;
	struct symbolizer *sym;
	struct export_sink *sink;
	struct replay r;
	struct replay_follow *f;
	uint64_t every;    /* the interval in ticks */
	uint64_t last_cut; /* the previous cut, in ticks (0: the session's start) */
	uint32_t seq;
	/* By aggregate: its allocations' running totals at the previous cut. */
	double *prev_objects, *prev_space;
	uint32_t nr_prev;
	struct prof_sample *samples; /* the interval's copy of the profile's samples */
	uint32_t *pids;
};

/* A line for heapsnap-record --export: how the export goes, so that it can count it. */
static void tell_recorder(const struct exporter *x, const char *what)
{
	struct export_stats st;
	char line[256];
	int n;

	if (x->o->status_fd < 0)
		return;
	export_sink__stats(x->sink, &st);
	n = snprintf(line, sizeof(line),
		     "%s intervals=%" PRIu64 " sent=%" PRIu64 " lost=%" PRIu64 " rejected=%" PRIu64 " retries=%" PRIu64
		     "\n",
		     what, st.intervals, st.profiles_sent, st.lost_profiles, st.lost_rejected, st.retries);
	/* The recorder gone: nothing to tell. */
	if (write(x->o->status_fd, line, (size_t)n) < 0)
		return;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The interval from last_cut to the heap's moment now (R's stop_time + 1), sent. */
static int send_interval(struct exporter *x, uint64_t end)
{
	struct replay *r = &x->r;
	struct profile p, q;
	struct export_interval iv;
	uint32_t nr_pids = 0;
	int err;

	err = profile__build(&p, r, x->sym);
	if (err) {
		fprintf(stderr, "heapsnap-analyze: export: building the profile of %s: %s\n", r->path, strerror(-err));
		return EXIT_FAIL;
	}
	q = p;
	free(x->samples);
	free(x->pids);
	x->samples = malloc(sizeof(*x->samples) * (p.nr_samples ? p.nr_samples : 1));
	x->pids = malloc(sizeof(*x->pids) * (p.nr_samples ? p.nr_samples : 1));
	if (!x->samples || !x->pids) {
		profile__free(&p);
		fprintf(stderr, "heapsnap-analyze: export: out of memory\n");
		return EXIT_FAIL;
	}
	q.samples = x->samples;
	q.nr_samples = 0;
	memset(q.total, 0, sizeof(q.total));
	for (uint32_t i = 0; i < p.nr_samples; i++) {
		struct prof_sample s = p.samples[i];

		if (s.agg < x->nr_prev) {
			s.v[V_ALLOC_OBJECTS] -= x->prev_objects[s.agg];
			s.v[V_ALLOC_SPACE] -= x->prev_space[s.agg];
			/* Sampled: the interval's variance is the difference too (independent draws). */
			s.var[V_ALLOC_OBJECTS] = 0;
			s.var[V_ALLOC_SPACE] = 0;
		}
		if (llround(s.v[V_ALLOC_OBJECTS]) == 0 && llround(s.v[V_INUSE_OBJECTS]) == 0)
			continue;
		for (int k = 0; k < V__COUNT; k++)
			q.total[k] += s.v[k];
		q.samples[q.nr_samples++] = s;
		if (!nr_pids || x->pids[nr_pids - 1] != s.pid)
			x->pids[nr_pids++] = s.pid;
	}
	qsort(x->pids, nr_pids, sizeof(*x->pids), cmp_u32);
	{
		uint32_t w = 0;

		for (uint32_t i = 0; i < nr_pids; i++)
			if (!w || x->pids[w - 1] != x->pids[i])
				x->pids[w++] = x->pids[i];
		nr_pids = w;
	}
	iv = (struct export_interval){.p = &q, .pids = x->pids, .nr_pids = nr_pids, .service_name = x->o->service_name,
				      .no_symbolize = x->o->no_sym, .seq = ++x->seq,
				      .start_ns = r->realtime_start_ns + x->last_cut * r->tick_ns,
				      .end_ns = r->realtime_start_ns + end * r->tick_ns};
	err = export_sink__put(x->sink, &iv);
	profile__free(&p);
	if (err) {
		fprintf(stderr, "heapsnap-analyze: export: interval %u to %s: %s\n", iv.seq, export_sink__url(x->sink),
			strerror(-err));
		return EXIT_FAIL;
	}
	/* The running totals now, for the next interval's differences. */
	if (r->nr_aggs > x->nr_prev) {
		double *o = realloc(x->prev_objects, sizeof(double) * r->nr_aggs);
		double *s = o ? realloc(x->prev_space, sizeof(double) * r->nr_aggs) : NULL;

		if (o)
			x->prev_objects = o;
		if (!s) {
			fprintf(stderr, "heapsnap-analyze: export: out of memory\n");
			return EXIT_FAIL;
		}
		x->prev_space = s;
	}
	for (uint32_t i = 0; i < r->nr_aggs; i++) {
		x->prev_objects[i] = r->aggs[i].alloc_objects;
		x->prev_space[i] = r->aggs[i].alloc_space;
	}
	x->nr_prev = r->nr_aggs;
	x->last_cut = end;
	replay__follow_resume(x->f, r);
	tell_recorder(x, "interval");
	return EXIT_OK;
}

/* Every interval whose end the input has passed, cut and sent. */
static int send_due(struct exporter *x)
{
	struct replay *r = &x->r;
	char desc[64];

	if (!x->every) {
		if (!r->have_session || !r->tick_ns)
			return EXIT_OK;
		x->every = (uint64_t)llround(x->o->interval * 1e9 / (double)r->tick_ns);
		if (!x->every)
			x->every = 1;
		replay__follow_hold_from(x->f, x->every);
	}
	for (;;) {
		uint64_t cut = x->last_cut + x->every;
		int ret;

		if (!replay__follow_reached(x->f, cut))
			return EXIT_OK;
		snprintf(desc, sizeof(desc), "export interval %u", x->seq + 1);
		replay__follow_cut(x->f, r, cut, desc);
		ret = send_interval(x, cut);
		if (ret)
			return ret;
		/* Past a long stretch without events, from the interval of the next one. */
		if (r->last_time > x->last_cut + IDLE_INTERVALS_MAX * x->every)
			x->last_cut = r->last_time / x->every * x->every;
		replay__follow_hold_from(x->f, x->last_cut + x->every);
	}
}

static void say_stats(struct exporter *x)
{
	struct export_stats st;

	export_sink__stats(x->sink, &st);
	fprintf(stderr,
		"heapsnap-analyze: export: %" PRIu64 " intervals, %" PRIu64 " profiles (one per process and interval) "
		"sent to %s in %" PRIu64 " requests, %" PRIu64 " bytes; lost.export_profiles %" PRIu64
		", lost.export_rejected %" PRIu64 "\n",
		st.intervals, st.profiles_sent, export_sink__url(x->sink), st.requests_sent, st.bytes_sent,
		st.lost_profiles, st.lost_rejected);
}

/* The last interval: up to the end of the recording (or to where it was stopped). */
static int finish(struct exporter *x, int ret)
{
	struct replay *r = &x->r;

	if (ret)
		return ret;
	if (!r->have_session) {
		fprintf(stderr, "heapsnap-analyze: no session header in %s%s%s\n", r->path, r->error[0] ? "; " : "",
			r->error);
		return r->status == HS_READ_CORRUPT ? EXIT_CORRUPT : EXIT_NODATA;
	}
	ret = cmd__report_load(r, r->status == HS_READ_CORRUPT ? EXIT_CORRUPT : EXIT_OK);
	replay__follow_hold_from(x->f, UINT64_MAX);
	replay__follow_moment(x->f, r, true);
	if (r->stop_time + 1 > x->last_cut || !x->seq) {
		int ret2 = send_interval(x, r->stop_time + 1);

		ret = ret2 ? ret2 : ret;
	}
	return ret;
}

int run_export(const struct opts *o, struct symbolizer *sym)
{
	struct replay_target t = {.kind = STOP_END, .pids = o->pids, .nr_pids = o->nr_pids, .comm = o->comm};
	struct export_sink_opts so = {.url = o->to, .header_file = o->header_file, .cacert = o->cacert, .keep = o->keep,
				      .queue = o->queue,
				      .timeout = 10, .backoff_max = o->interval < 30 ? o->interval : 30};
	struct exporter x = {.o = o, .sym = sym};
	char err[600] = "";
	bool ended = false;
	int ret;

	ret = export_sink__open(&x.sink, &so, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "heapsnap-analyze: export: %s\n", err);
		return ret == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
	}
	ret = replay__follow_open(&x.r, o->files[0], &t, &x.f);
	if (ret) {
		fprintf(stderr, "heapsnap-analyze: %s\n", x.r.error);
		goto cleanup;
	}
	/* Nothing is applied before the first cut is known (the session gives the tick). */
	replay__follow_hold_from(x.f, 0);
	tell_recorder(&x, "ready");
	cmd__follow_signals();
	while (!ret && !ended && !cmd__follow_stop) {
		ret = replay__follow_feed(x.f, &x.r, 1u << 16, &ended);
		if (!ret)
			ret = send_due(&x);
		if (!ret && !ended && replay__follow_waiting(x.f))
			replay__follow_wait(x.f, 500, -1);
	}
	if (!ret || ended)
		ret = finish(&x, ret);
	else
		cmd__report_load(&x.r, ret);
	export_sink__drain(x.sink);
	say_stats(&x);
	tell_recorder(&x, "end");
cleanup:
	replay__follow_free(x.f);
	replay__free(&x.r);
	export_sink__free(x.sink);
	free(x.prev_objects);
	free(x.prev_space);
	free(x.samples);
	free(x.pids);
	return ret;
}
