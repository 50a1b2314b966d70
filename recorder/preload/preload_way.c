// SPDX-License-Identifier: MIT
/* The in-process way in: libheapsnap.so preloaded into the command, writing into rings in
 * memory it shares with the recorder; the rings of threads and processes gone given back. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "preload_shm.h"
#include "preload_way.h"
#include "nspid.h"
#include "output.h"
#include "pipeline.h"
#include "procfs.h"
#include "ring_reader.h"
#include "way.h"

int preload_use_rings(struct session *s)
{
	struct preload *pre = preload_of(s)->pre;
	uint32_t nr, bytes;
	int fds[2];

	preload__geometry(pre, &nr, &bytes);
	s->nr_rings = (int)nr;
	s->ring_bytes = bytes;
	s->rings = calloc(nr, sizeof(*s->rings));
	if (!s->rings)
		return -ENOMEM;
	for (uint32_t i = 0; i < nr; i++) {
		struct hs_shm_ring *r = &preload__hdr(pre)->rings[i];

		ring_use_memory(&s->rings[i], &r->cons, &r->prod, preload__ring_data(pre, i), bytes);
	}
	preload__heartbeat(pre, mono_ns());
	fds[0] = preload__wake_fd(pre);
	fds[1] = preload__listen_fd(pre);
	return loop_epoll_add(s, fds, 2);
}

/* In-process: the shared memory and its rings, read as the BPF rings are. */
static int preload_start(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	struct preload_way *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	s->way_state = w;
	w->lib = preload__find_lib();
	if (!w->lib) {
		rec_warnx("cannot find libheapsnap.so next to heapsnap-record or in ../lib/heapsnap/ (set HEAPSNAP_LIB)");
		return -ENOENT;
	}
	check_command_allocator(s, u->exe);
	/* A ring per thread of the targets, claimed at its first event. */
	u->ring_bytes = preload_ring_bytes(o->sample_rate);
	err = preload__open(PRELOAD_RINGS, u->ring_bytes, o->sample_rate, (uint32_t)o->stack_mode, o->max_stack,
			    o->dwarf_bytes, &w->pre);
	if (err) {
		rec_warnx("cannot create the memory shared with the command: %s", strerror(-err));
		return err;
	}
	return preload_use_rings(s);
}

static int preload_child_env(const struct session *s)
{
	const struct preload_way *w = preload_of(s);

	return preload__setenv(w->pre, w->lib);
}

void preload_woken(struct session *s)
{
	preload__ack(preload_of(s)->pre);
}

/* Whether PID has ended: gone, or a zombie (its threads are all gone, its ring too). */
static bool pid_ended(pid_t pid)
{
	return (kill(pid, 0) && errno == ESRCH) || proc_is_zombie(pid);
}

/* In-process rings whose thread has exited, or whose process is gone, go back to the pool
 * once read to the end. */
static void reclaim_rings(struct session *s, struct preload *pre, bool check_pids)
{
	/* At once when a thread found every ring held: some may be of processes gone. */
	bool starved = preload__starved(pre);

	check_pids |= starved;
	for (int i = 0; i < s->nr_rings; i++) {
		uint64_t owner = preload__owner(pre, (uint32_t)i), prod;
		struct ring *r = &s->rings[i];

		if (!owner)
			continue;
		/* A process gone: its rings are closing, as an exited thread's, so that a thread
		 * that needs one waits for them to be read rather than go without. */
		if (!(owner & HS_SHM_CLOSING) && check_pids) {
			/* The owner's pid is its namespace's (an injected target in another PID
			 * namespace): asked of this one's by its number here. */
			pid_t opid = (pid_t)(owner >> 32 & 0x7fffffff);

			if (s->nsx)
				opid = (pid_t)nspid__pid(s->nsx, (uint32_t)opid);
			if (pid_ended(opid) && preload__close(pre, (uint32_t)i, owner))
				owner |= HS_SHM_CLOSING;
		}
		prod = __atomic_load_n(r->prod, __ATOMIC_ACQUIRE);
		if (r->pos != prod || !(owner & HS_SHM_CLOSING))
			continue;
		preload__release(pre, (uint32_t)i, owner, r->pos);
		r->published = r->end = r->pos;
	}
	if (starved)
		preload__fed(pre);
}

/* What the library had to say in the target, said here. */
static void say_notes(struct session *s)
{
	char note[HS_SHM_NOTE_BYTES];

	while (preload__take_note(preload_of(s)->pre, note, sizeof(note)))
		rec_warnx("%s", note);
}

/* After a drain: children that asked for the memory (a child's fork is known by then), the
 * heartbeat, rings given back; once a second, descendants running unrecorded. */
void preload_polled(struct session *s, uint64_t now, bool tick)
{
	struct preload *pre = preload_of(s)->pre;

	serve_children(s);
	say_notes(s);
	preload__heartbeat(pre, now);
	reclaim_rings(s, pre, tick);
	if (tick)
		scan_children(s);
}

void preload_read_counters(struct session *s)
{
	say_notes(s);
	preload__counters(preload_of(s)->pre, s->cnt);
	/* The library counts no sample (sample() in libheapsnap.h): those chosen are those
	 * that came, and those the table of sampled blocks had no room for. */
	s->cnt[HS_CNT_SAMPLED] = s->sampled_allocs + s->cnt[HS_CNT_LIVE_FULL];
	/* Nor the stacks it cut short: their allocations' events say so (hdr.stop). */
	for (int k = 0; k < HS_CNT__MAX; k++)
		s->cnt[k] += s->stops[k];
}

void preload_add_counters(struct session *s, struct counter_set *c)
{
	/* Nothing is probed; the names are every recording's. */
	counter_set__add(c, "probes.attached", 0);
	counter_set__add(c, "probes.failed", 0);
	counter_set__add(c, "lost.processes_unrecorded", preload_of(s)->procs_unrecorded);
}

/* In-process, the command's status comes from waitpid: its library saw it end, not how. */
static void preload_child_reaped(struct session *s)
{
	struct hs_record r = {.type = HS_REC_EXIT, .time = ticks(&s->out, mono_ns()), .pid = (uint32_t)s->child};

	r.exit.status = WIFSIGNALED(s->child_status) ? -(int64_t)WTERMSIG(s->child_status)
						    : WEXITSTATUS(s->child_status);
	write_rec(&s->out, &r);
}

/* Hooks still running in processes left behind go dormant. */
void preload_quiesce(struct session *s)
{
	if (preload_of(s))
		preload__detach(preload_of(s)->pre);
}

void preload_release(struct preload_way *w)
{
	preload__free(w->pre);
	hmap_free(&w->seen_images);
	hmap_free(&w->own_alloc_exes);
	hmap_free(&w->own_alloc_procs);
	free(w->lib);
}

static void preload_free(struct session *s)
{
	struct preload_way *w = preload_of(s);

	if (!w)
		return;
	preload_release(w);
	free(w);
	s->way_state = NULL;
}

const struct way_ops preload_way = {
	.name = "preload",
	.start = preload_start,
	.child_env = preload_child_env,
	.mappings = check_own_allocator,
	.poll_ms = PRELOAD_POLL_MS,
	.held_ms = PRELOAD_POLL_MS,
	.woken = preload_woken,
	.polled = preload_polled,
	.read_counters = preload_read_counters,
	.add_counters = preload_add_counters,
	.child_reaped = preload_child_reaped,
	.quiesce = preload_quiesce,
	.detach = preload_quiesce,
	.free = preload_free,
};
