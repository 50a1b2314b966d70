// SPDX-License-Identifier: MIT
/* The injected way in: the in-process way (recorder/preload/preload_way.c), with libheapsnap.so
 * loaded into the running process of -p instead of preloaded, its memory adopted; and the
 * trampoline's counts of calls made while it loaded. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "preload_shm.h"
#include "preload_way.h"
#include "nspid.h"
#include "output.h"
#include "pipeline.h"
#include "processes.h"
#include "sampling.h"
#include "way.h"

struct inject_way {
	struct preload_way in; /* first: the in-process way's operations take this struct as theirs */
	struct inject *inj;
	uint64_t passed, held, timed_out; /* the stub's counts (inject__counts) */
};

static struct inject_way *inject_of(const struct session *s)
{
	return s->way_state;
}

static int inject_interrupted(void *ctx)
{
	struct session *s = ctx;

	rec_signals__read(&s->sig);
	return s->sig.stop != 0;
}

/* The calls the trampoline held until the hooks were in place, and those it let go on
 * unrecorded (a wait that ran out, a fork child made meanwhile): a loss, said and counted. */
static void inject_counts(struct session *s, bool final)
{
	struct inject_way *j = inject_of(s);
	uint64_t passed, held, timed_out;

	/* Read at the start, every second and at the end: the process may be gone by then, and
	 * its counts with it. They only grow. */
	if (!inject__counts(j->inj, &passed, &held, &timed_out)) {
		j->passed = passed > j->passed ? passed : j->passed;
		j->held = held > j->held ? held : j->held;
		j->timed_out = timed_out > j->timed_out ? timed_out : j->timed_out;
	}
	if (!final)
		return;
	if (s->o->verbose)
		rec_warnx("%" PRIu64 " allocator calls of process %d waited in the trampoline for the hooks", j->held,
			  s->o->pid);
	if (j->passed)
		rec_warnx("warning: %" PRIu64 " allocator calls made while the library loaded went by unrecorded "
			  "(lost.inject_unhooked_calls; %" PRIu64 " of them waited --attach-hold out, the rest were "
			  "made by the dynamic loader (which may hold a lock the library's loading needs), in fork "
			  "children made meanwhile or in modules the library did not hook)",
			  j->passed, j->timed_out);
}

/* The library loaded into the running process; WHY says why not. */
static int inject_load(struct session *s, char *why, size_t why_len, bool *touched)
{
	const struct rec_opts *o = s->o;
	struct inject_way *j = inject_of(s);
	static uint64_t thresholds[HS_NR_THRESHOLDS];
	struct inject_opts io = {
		.sample_rate = o->sample_rate, .stack_mode = (uint32_t)o->stack_mode, .max_stack = o->max_stack,
		.dwarf_bytes = o->dwarf_bytes, .nr_rings = PRELOAD_RINGS, .ring_bytes = preload_ring_bytes(o->sample_rate),
		.thresholds = thresholds, .timeout = o->attach_timeout, .hold = o->attach_hold, .interrupted = inject_interrupted, .ctx = s,
		.verbose = o->verbose > 0,
	};
	uint64_t stopped;
	uint32_t patched, modules;
	int err;

	*touched = false;
	j->in.lib = preload__find_lib();
	if (!j->in.lib) {
		snprintf(why, why_len, "cannot find libheapsnap.so next to heapsnap-record or in ../lib/heapsnap/ (set HEAPSNAP_LIB)");
		return -ENOENT;
	}
	io.lib = j->in.lib;
	if (o->sample_rate)
		sampling_thresholds(o->sample_rate, thresholds);
	err = inject__attach(o->pid, &io, &j->inj, why, why_len, touched);
	if (err)
		return err;
	inject__stats(j->inj, &stopped, &patched, &modules);
	inject_counts(s, false);
	err = nspid__open(o->pid, &s->nsx);
	if (err) {
		snprintf(why, why_len, "reading the PID namespace of process %d: %s", o->pid, strerror(-err));
		return err;
	}
	if (s->nsx && o->verbose)
		rec_warnx("process %d is in another PID namespace: its pids and tids are translated to this one's", o->pid);
	if (o->verbose)
		rec_warnx("injected into %d: stopped %.2f ms, %u GOT entries in %u modules point at the hooks", o->pid,
			  (double)stopped / 1e6, patched, modules);
	return 0;
}

/* Injected: the library in the running process, its memory read as preload's. */
static int inject_start_in(struct session *s, struct run *u, char *why, size_t why_len, bool *touched)
{
	const struct rec_opts *o = s->o;
	struct inject_way *j = inject_of(s);
	struct proc *p;
	int err = inject_load(s, why, why_len, touched);

	if (err)
		return err;
	err = preload__adopt(inject__shm_fd(j->inj), inject__wake_fd(j->inj), &j->in.pre);
	if (err) {
		snprintf(why, why_len, "the memory shared with process %d is not as expected: %s", o->pid, strerror(-err));
		return err;
	}
	u->ring_bytes = preload_ring_bytes(o->sample_rate);
	p = add_proc(s, o->pid);
	if (p)
		rescan_maps(s, p, false, 0);
	return preload_use_rings(s);
}

/* -p: injected where it can be; else (auto) 1, said so: the session records with BPF. */
static int inject_start(struct session *s, struct run *u)
{
	struct inject_way *j = calloc(1, sizeof(*j));
	char why[512] = "";
	bool touched = false;
	int err;

	if (!j)
		return -ENOMEM;
	s->way_state = j;
	err = inject_start_in(s, u, why, sizeof(why), &touched);
	if (!err || err == -EINTR) {
		if (err)
			rec_warnx("%s during start-up: stopping; nothing was recorded", strsignal(s->sig.stop));
		else if (s->o->verbose)
			rec_warnx("recording via %s", s->via_why);
		return err;
	}
	if (s->o->via == VIA_INJECT || err == -ESRCH || err == -EDEADLK || err == -EALREADY) {
		rec_warnx("cannot inject into process %d: %s", s->o->pid, why);
		return err;
	}
	rec_warnx("cannot inject into process %d: %s; recording with BPF uprobes instead (slower: every call traps)",
		  s->o->pid, why);
	return 1;
}

static void inject_polled(struct session *s, uint64_t now, bool tick)
{
	preload_polled(s, now, tick);
	if (tick)
		inject_counts(s, false);
}

static void inject_add_counters(struct session *s, struct counter_set *c)
{
	struct inject_way *j = inject_of(s);

	preload_add_counters(s, c);
	counter_set__add(c, "lost.inject_unhooked_calls", j->passed);
	counter_set__add(c, "inject.calls_held", j->held);
}

/* The library puts every GOT entry back, and says so. */
static void inject_finish(struct session *s)
{
	struct inject_way *j = inject_of(s);

	if (inject__detach(j->inj))
		rec_warnx("libheapsnap.so in process %d did not confirm its detach within 2 s", s->o->pid);
	inject_counts(s, true);
}

static void inject_detach(struct session *s)
{
	struct inject_way *j = inject_of(s);

	if (!j)
		return;
	preload__detach(j->in.pre);
	inject__detach(j->inj);
}

static void inject_free(struct session *s)
{
	struct inject_way *j = inject_of(s);

	if (!j)
		return;
	inject__free(j->inj);
	preload_release(&j->in);
	free(j);
	s->way_state = NULL;
}

const struct way_ops inject_way = {
	.name = "inject",
	.start = inject_start,
	.poll_ms = PRELOAD_POLL_MS,
	.held_ms = PRELOAD_POLL_MS,
	.woken = preload_woken,
	.polled = inject_polled,
	.read_counters = preload_read_counters,
	.add_counters = inject_add_counters,
	.quiesce = preload_quiesce,
	.finish = inject_finish,
	.detach = inject_detach,
	.free = inject_free,
};
