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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"

/* Intervals with no event at all passed at once at most (a time far ahead in a damaged
 * file would otherwise make billions of them): past it, the cut moves to the event. */
#define IDLE_INTERVALS_MAX 1000
/* Aggregates built into profiles while replaying a backlog (a finished file, a stream
 * behind), at most, before its intervals are made twice as long: each interval's profile
 * costs every aggregate, so a file of many intervals each with new ones would cost their
 * product. Some seconds of CPU. */
#define BACKLOG_WORK_MAX (1ull << 26)

struct exporter {
	const struct opts *o;
	struct symbolizer *sym;
	struct export_sink *sink;
	struct replay r;
	struct replay_follow *f;
	uint64_t every;    /* the interval in ticks */
	uint64_t last_cut; /* the previous cut, in ticks (0: the session's start) */
	uint64_t sent_cut; /* the end of the last interval sent: the next one's start */
	uint64_t events_at_cut; /* events applied at the previous cut */
	uint64_t work;     /* aggregates built into profiles of a backlog since the last widening */
	uint32_t seq;
	/* By aggregate: its allocations' running totals at the previous cut, and their
	 * variances (a sampled recording's draws are independent: an interval's variance is
	 * the difference too). */
	struct alloc_totals {
		double objects, space, var_objects, var_space;
	} *prev;
	uint32_t nr_prev;
	struct prof_sample *samples; /* the interval's copy of the profile's samples */
	uint32_t *pids, *first; /* the interval's processes, and where each one's samples start */
	bool last_sent; /* the last interval sent (SIGUSR2), before the input's end */
};

/* heapsnap-record's SIGUSR2: it has written every event, so that the last interval can be
 * sent, and what became of it said, while its counters are still to be written. */
static volatile sig_atomic_t last_asked;

static void on_last(int sig)
{
	(void)sig;
	last_asked = 1;
}

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

static int cmp_sample(const void *a, const void *b)
{
	const struct prof_sample *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->agg < y->agg ? -1 : x->agg > y->agg;
}

/* The interval from last_cut to the heap's moment now (R's stop_time + 1), sent. */
static int send_interval(struct exporter *x, uint64_t end)
{
	struct replay *r = &x->r;
	struct profile p, q;
	struct export_interval iv;
	uint32_t nr_pids = 0, last_pid = 0;
	bool gone = false;
	int err;

	err = profile__build(&p, r, x->sym);
	if (err) {
		fprintf(stderr, "heapsnap-analyze: export: building the profile of %s: %s\n", r->path, strerror(-err));
		return EXIT_FAIL;
	}
	q = p;
	free(x->samples);
	free(x->pids);
	free(x->first);
	x->samples = malloc(sizeof(*x->samples) * (p.nr_samples ? p.nr_samples : 1));
	x->pids = malloc(sizeof(*x->pids) * (p.nr_samples ? p.nr_samples : 1));
	x->first = malloc(sizeof(*x->first) * (p.nr_samples + 1));
	if (!x->samples || !x->pids || !x->first) {
		profile__free(&p);
		fprintf(stderr, "heapsnap-analyze: export: out of memory\n");
		return EXIT_FAIL;
	}
	q.samples = x->samples;
	q.nr_samples = 0;
	memset(q.total, 0, sizeof(q.total));
	memset(q.total_var, 0, sizeof(q.total_var));
	for (uint32_t i = 0; i < p.nr_samples; i++) {
		struct prof_sample s = p.samples[i];

		if (s.agg < x->nr_prev) {
			const struct alloc_totals *t = &x->prev[s.agg];

			s.v[V_ALLOC_OBJECTS] -= t->objects;
			s.v[V_ALLOC_SPACE] -= t->space;
			s.var[V_ALLOC_OBJECTS] = s.var[V_ALLOC_OBJECTS] > t->var_objects ? s.var[V_ALLOC_OBJECTS] - t->var_objects : 0;
			s.var[V_ALLOC_SPACE] = s.var[V_ALLOC_SPACE] > t->var_space ? s.var[V_ALLOC_SPACE] - t->var_space : 0;
		}
		if (llround(s.v[V_ALLOC_OBJECTS]) == 0 && llround(s.v[V_INUSE_OBJECTS]) == 0)
			continue;
		/* A process gone before the interval began has nothing more to say: what it left
		 * live was in the interval it ended in. */
		if (s.pid != last_pid) {
			const struct process *pr = replay__process(r, s.pid);

			last_pid = s.pid;
			gone = pr && pr->exited && pr->t_exit < x->sent_cut;
		}
		if (gone)
			continue;
		for (int k = 0; k < V__COUNT; k++) {
			q.total[k] += s.v[k];
			q.total_var[k] += s.var[k];
		}
		q.samples[q.nr_samples++] = s;
	}
	/* By process, so that each one's profile costs its own samples. */
	qsort(q.samples, q.nr_samples, sizeof(*q.samples), cmp_sample);
	for (uint32_t i = 0; i < q.nr_samples; i++) {
		if (nr_pids && x->pids[nr_pids - 1] == q.samples[i].pid)
			continue;
		x->pids[nr_pids] = q.samples[i].pid;
		x->first[nr_pids++] = i;
	}
	x->first[nr_pids] = q.nr_samples;
	iv = (struct export_interval){.p = &q, .pids = x->pids, .first = x->first, .nr_pids = nr_pids, .service_name = x->o->service_name,
				      .no_symbolize = x->o->no_sym, .seq = ++x->seq,
				      .start_ns = r->realtime_start_ns + x->sent_cut * r->tick_ns,
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
		struct alloc_totals *t = realloc(x->prev, sizeof(*t) * r->nr_aggs);

		if (!t) {
			fprintf(stderr, "heapsnap-analyze: export: out of memory\n");
			return EXIT_FAIL;
		}
		x->prev = t;
	}
	for (uint32_t i = 0; i < r->nr_aggs; i++) {
		const struct agg *a = &r->aggs[i];

		x->prev[i] = (struct alloc_totals){a->alloc_objects, a->alloc_space, a->var_alloc_objects, a->var_alloc_space};
	}
	x->nr_prev = r->nr_aggs;
	x->last_cut = x->sent_cut = end;
	x->events_at_cut = r->events;
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
		bool backlog;
		int ret;

		if (!replay__follow_reached(x->f, cut))
			return EXIT_OK;
		/* A time far ahead (a damaged file): the intervals up to it are not made one by one. */
		if (replay__follow_latest(x->f) / x->every > cut / x->every + IDLE_INTERVALS_MAX && x->seq &&
		    r->events == x->events_at_cut) {
			x->last_cut = replay__follow_latest(x->f) / x->every * x->every;
			replay__follow_hold_from(x->f, x->last_cut + x->every);
			continue;
		}
		snprintf(desc, sizeof(desc), "export interval %u", x->seq + 1);
		replay__follow_cut(x->f, r, cut, desc);
		/* Replaying a backlog, a run of intervals without an event is sent with the next
		 * one that has some (its heap was the last one's); followed as it is written, every
		 * interval is, as time passes. */
		backlog = !replay__follow_waiting(x->f);
		if (backlog && x->seq && r->events == x->events_at_cut) {
			x->last_cut = cut;
			replay__follow_hold_from(x->f, cut + x->every);
			continue;
		}
		ret = send_interval(x, cut);
		if (ret)
			return ret;
		x->work = backlog ? x->work + r->nr_aggs + 1 : 0;
		if (x->work > BACKLOG_WORK_MAX) {
			x->every *= 2;
			x->work = 0;
			fprintf(stderr,
				"heapsnap-analyze: export: %s holds more intervals of more stacks than can be replayed in "
				"time: its intervals are now %.6gs long\n",
				r->path, replay__seconds(r, x->every));
		}
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

/* The last interval, up to every event read, and the queue drained. */
static int send_last(struct exporter *x)
{
	struct replay *r = &x->r;
	int ret = EXIT_OK;

	x->last_sent = true;
	replay__follow_hold_from(x->f, UINT64_MAX);
	replay__follow_moment(x->f, r, true);
	if (r->stop_time + 1 > x->sent_cut || !x->seq)
		ret = send_interval(x, r->stop_time + 1);
	export_sink__drain(x->sink);
	return ret;
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
	if (!x->last_sent) {
		int ret2 = send_last(x);

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
	if (o->status_fd >= 0)
		sigaction(SIGUSR2, &(struct sigaction){.sa_handler = on_last}, NULL);
	while (!ret && !ended && !cmd__follow_stop) {
		ret = replay__follow_feed(x.f, &x.r, 1u << 16, &ended);
		if (!ret && !x.last_sent)
			ret = send_due(&x);
		if (!ret && !ended && replay__follow_waiting(x.f)) {
			/* Asked for the last interval, and everything written before the ask read. */
			if (last_asked && !x.last_sent && x.r.have_session) {
				ret = send_last(&x);
				tell_recorder(&x, "last");
				continue;
			}
			replay__follow_wait(x.f, 500, -1);
		}
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
	free(x.prev);
	free(x.samples);
	free(x.pids);
	free(x.first);
	return ret;
}
