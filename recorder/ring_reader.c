// SPDX-License-Identifier: MIT
/* Reading rings in place: the BPF per-CPU rings and the in-process per-thread rings share
 * one framing, so one reader handles both, merging them by time. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "output.h"
#include "pipeline.h"
#include "ring_reader.h"
#include "session.h"
#include "signals.h"

int ring_map(struct ring *r, int fd, uint32_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->cons = p;
	p = mmap(NULL, pg + 2 * (size_t)size, PROT_READ, MAP_SHARED, fd, (off_t)pg);
	if (p == MAP_FAILED)
		return -errno;
	r->map_len = pg + 2 * (size_t)size;
	r->prod = p;
	r->data = (const uint8_t *)p + pg;
	r->mask = size - 1;
	r->pos = r->published = r->end = __atomic_load_n(r->cons, __ATOMIC_ACQUIRE);
	return 0;
}

/* A ring in memory shared with a producer in another process (in-process recording): the
 * same framing, no double mapping, because that producer never lets a record wrap. */
void ring_use_memory(struct ring *r, uint64_t *cons, const uint64_t *prod, const uint8_t *data, uint32_t size)
{
	r->cons = cons;
	r->prod = prod;
	r->data = data;
	r->mask = size - 1;
	r->no_wrap = true;
	r->pos = r->published = r->end = __atomic_load_n(cons, __ATOMIC_ACQUIRE);
}

void ring_unmap(struct ring *r)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	if (r->cons)
		munmap(r->cons, pg);
	if (r->prod)
		munmap((void *)r->prod, r->map_len);
}

/* Reads how far the producer got. Returns true if the ring holds anything not handled,
 * committed or not. */
static bool ring_look(struct ring *r)
{
	r->end = __atomic_load_n(r->prod, __ATOMIC_ACQUIRE);
	return r->pos != r->end;
}

/* The bytes a record of LEN takes in the ring: its 8-byte header, then the event, 8-byte aligned. */
static uint64_t ring_rec_bytes(uint32_t len)
{
	return ((uint64_t)len + BPF_RINGBUF_HDR_SZ + 7) & ~7ull;
}

/* The event at the read position, or NULL at the end of what the producer had written when
 * last looked at, or at a record still being written. Skips discarded records. */
static const struct hs_event_hdr *ring_head(struct ring *r, uint32_t *len)
{
	while (r->pos < r->end) {
		const uint32_t *hdr = (const uint32_t *)(r->data + (r->pos & r->mask));
		uint32_t l = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
		uint64_t n = ring_rec_bytes(l & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT));

		/* The kernel never writes such a record; an in-process producer whose memory was
		 * overwritten could. Nothing past it can be trusted: the ring is given up, loudly,
		 * rather than read outside its mapping. */
		if (r->pos + n > r->end || (r->no_wrap && (r->pos & r->mask) + n > r->mask + 1)) {
			if (!r->broken)
				rec_warnx("warning: a ring held a record of %u bytes past what its producer wrote; "
					  "the %" PRIu64 " bytes after it are not read", l, r->end - r->pos);
			r->broken = true;
			r->pos = r->end;
			return NULL;
		}
		if (l & BPF_RINGBUF_BUSY_BIT)
			return NULL;
		if (!(l & BPF_RINGBUF_DISCARD_BIT) && l >= sizeof(struct hs_event_hdr)) {
			*len = l;
			return (const void *)((const uint8_t *)hdr + BPF_RINGBUF_HDR_SZ);
		}
		r->pos += ring_rec_bytes(l & ~BPF_RINGBUF_DISCARD_BIT);
	}
	return NULL;
}

/* Gives handled space back to the producer. Every store makes the producer's next reserve
 * miss its cache line, so a drain publishes in steps of 1/16 of the ring, and at its end. */
static void ring_publish(struct ring *r, bool force)
{
	if (r->pos != r->published && (force || r->pos - r->published >= (r->mask + 1) / 16)) {
		__atomic_store_n(r->cons, r->pos, __ATOMIC_RELEASE);
		r->published = r->pos;
	}
}

/* Handles one ring's events up to where it was last looked at. */
static void ring_handle_all(struct session *s, struct ring *r)
{
	const struct hs_event_hdr *h;
	uint32_t len;

	while (!s->out.err && (h = ring_head(r, &len))) {
		handle_event(s, h, len);
		r->pos += ring_rec_bytes(len);
		ring_publish(r, false);
	}
	ring_publish(r, true);
}

/* A ring in the merge, by its head's time: a min-heap on that time, so that the ring to read
 * next costs log(rings) to find, and rings without events cost nothing. Scanning every ring
 * per run instead, two threads whose events alternate made the recorder look at all 256
 * in-process rings for each event. */
struct merge_ent {
	uint64_t ts;
	int ring;
};

static void heap_down(struct merge_ent *h, int n, int i)
{
	for (;;) {
		int c = 2 * i + 1;
		struct merge_ent tmp;

		if (c >= n)
			return;
		if (c + 1 < n && h[c + 1].ts < h[c].ts)
			c++;
		if (h[i].ts <= h[c].ts)
			return;
		tmp = h[i];
		h[i] = h[c];
		h[c] = tmp;
		i = c;
	}
}

/* Handles the events stamped up to LIMIT (CLOCK_MONOTONIC ns) of all rings, oldest first.
 * Each ring is in order already, so events go in runs: a ring is read while its head is no
 * later than every other ring's. */
static void merge_rings(struct session *s, uint64_t limit)
{
	struct merge_ent *h = s->merge;
	const struct hs_event_hdr *e;
	uint32_t len;
	int n = 0;

	if (!h && !(h = s->merge = calloc((size_t)s->nr_rings, sizeof(*h)))) {
		rec_warnx("merging %d rings: %s", s->nr_rings, strerror(ENOMEM));
		s->out.err = -ENOMEM;
		return;
	}
	for (int i = 0; i < s->nr_rings; i++)
		if ((e = ring_head(&s->rings[i], &len)))
			h[n++] = (struct merge_ent){e->ts, i};
	for (int i = n / 2 - 1; i >= 0; i--)
		heap_down(h, n, i);
	while (n && h[0].ts <= limit && !s->out.err) {
		struct ring *best = &s->rings[h[0].ring];
		uint64_t next_ts = limit;

		/* The second earliest head is one of the root's children. */
		for (int c = 1; c <= 2 && c < n; c++)
			if (h[c].ts < next_ts)
				next_ts = h[c].ts;
		while ((e = ring_head(best, &len)) && e->ts <= next_ts && !s->out.err) {
			handle_event(s, e, len);
			best->pos += ring_rec_bytes(len);
			ring_publish(best, false);
		}
		if (e)
			h[0].ts = e->ts;
		else
			h[0] = h[--n];
		heap_down(h, n, 0);
	}
	for (int i = 0; i < s->nr_rings; i++)
		ring_publish(&s->rings[i], true);
}

/* Handles what the rings hold, in an order that keeps each block's free before the next
 * allocation at its address. When one ring alone holds events, all of them go at once: an
 * event on another CPU that came first (a free of an address this ring's allocation
 * reuses) was committed first, so looking at the other rings after this one's producer
 * position shows it. Otherwise the rings are merged by timestamp, MERGE_SLACK_NS behind;
 * with ALL, at the end, everything. No event stamped after UPTO is handled (a snapshot
 * waits at UPTO: see drain_upto). Returns the time up to which the file is complete: a
 * snapshot taken now marks that moment. Sets *HELD if events wait for the slack, and *PRESSED
 * if they leave a ring a quarter full or more, past which its producer no longer wakes us. */
uint64_t drain(struct session *s, bool all, uint64_t upto, bool *held, bool *pressed)
{
	uint64_t t = mono_ns();

	*held = *pressed = false;
	for (int i = 0; all && i < s->nr_rings; i++)
		s->rings[i].goal = __atomic_load_n(s->rings[i].prod, __ATOMIC_ACQUIRE);
	for (;;) {
		int busy = 0, only = -1;
		uint64_t before = 0, after = 0;
		bool reached = true;

		for (int i = 0; i < s->nr_rings; i++) {
			if (ring_look(&s->rings[i])) {
				busy++;
				only = i;
			}
			before += s->rings[i].pos;
		}
		if (!busy)
			return t;
		for (int i = 0; busy == 1 && i < s->nr_rings; i++)
			if (i != only && __atomic_load_n(s->rings[i].prod, __ATOMIC_ACQUIRE) != s->rings[i].pos)
				busy++;
		if (busy == 1 && upto == UINT64_MAX) {
			ring_handle_all(s, &s->rings[only]);
			if (!all)
				return t;
		} else {
			uint64_t limit = all ? UINT64_MAX : (t > MERGE_SLACK_NS ? t - MERGE_SLACK_NS : 0);

			if (limit > upto)
				limit = upto;
			merge_rings(s, limit);
			if (!all) {
				for (int i = 0; i < s->nr_rings; i++) {
					struct ring *r = &s->rings[i];

					*held |= r->pos != r->end;
					*pressed |= r->end - r->published >= (r->mask + 1) / 4;
				}
				return limit;
			}
		}
		for (int i = 0; i < s->nr_rings; i++) {
			after += s->rings[i].pos;
			reached &= s->rings[i].pos >= s->rings[i].goal;
		}
		/* The end: what the rings held when it began is handled, or only records still
		 * being written are left. A target that keeps allocating cannot hold it up. */
		if (after == before || reached || s->out.err)
			return mono_ns();
	}
}

/* Handles every event stamped up to UPTO, in every ring, and none after it: what a snapshot
 * marked at UPTO holds. Called once the clock is MERGE_SLACK_NS past UPTO, by when every
 * such event is in its ring (a producer commits within the slack of its timestamp; the
 * thread that sent the signal committed all of its events before it). A producer that
 * waited for room in a full ring commits its event once this reading makes room: the rings
 * are looked at again until a pass handles nothing. */
void drain_upto(struct session *s, uint64_t upto)
{
	for (;;) {
		uint64_t before = 0, after = 0;

		for (int i = 0; i < s->nr_rings; i++) {
			ring_look(&s->rings[i]);
			before += s->rings[i].pos;
		}
		merge_rings(s, upto);
		for (int i = 0; i < s->nr_rings; i++)
			after += s->rings[i].pos;
		if (after == before || s->out.err)
			return;
	}
}

/* The epoll set the loop sleeps on: the signalfd and, for in-process rings, the eventfd
 * producers write past a quarter of a ring and the socket children that closed their
 * inherited descriptors ask for them on; all level-triggered, read every time round. */
int loop_epoll_add(struct session *s, const int *fds, int n)
{
	if (s->epfd < 0)
		s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return -errno;
	for (int i = -1; i < n; i++) {
		int fd = i < 0 ? rec_signals__fd() : fds[i];
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX - (uint32_t)(i + 1)};

		if (fd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev))
			return -errno;
	}
	return 0;
}

int wait_rings(struct session *s, int timeout_ms)
{
	struct epoll_event evs[16];

	return epoll_wait(s->epfd, evs, 16, timeout_ms) < 0 && errno != EINTR ? -errno : 0;
}
