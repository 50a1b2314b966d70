// SPDX-License-Identifier: MIT
/* Frees that version 4 names by class (docs/FORMAT.md): `classes N` runs three threads, each
 * N times taking one of these steps at random over a ring of 256 blocks of a few sizes from
 * two call sites, so that many live blocks are alike and frees pick among them at random:
 *
 *   replace  free a ring block, allocate its successor (ring_a or ring_b)
 *   temp     allocate and free at once (temp_alloc)
 *   grow     realloc a ring block (grow)
 *   fail     a temp, then a realloc that fails, leaving the block as it was (grow_fail)
 *   post     swap a ring block with the mailbox, freeing what was there: another thread's
 *
 * It counts as it goes what the analyzer must count: each free (or realloc) of the block its
 * thread allocated last, with no allocator call between, is temporary (heaptrack's
 * definition), and prints "temporary T". Thread 0 keeps its ring at exit: 256 blocks. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define RING 256

static long steps = 100000;
static pthread_mutex_t box_lock = PTHREAD_MUTEX_INITIALIZER;
static void *mailbox;
static long temporary_total;
static void *volatile sink;

static const size_t sizes[] = {32, 64, 100, 4000};

struct worker {
	int id;
	uint64_t seed;
	void *ring[RING];
	void *last; /* the thread's last allocation, while no allocator call followed it */
	long temporary;
};

static uint64_t rnd(struct worker *w)
{
	w->seed ^= w->seed << 13;
	w->seed ^= w->seed >> 7;
	w->seed ^= w->seed << 17;
	return w->seed;
}

NOINLINE void *ring_a(size_t n) { return malloc(n); }
NOINLINE void *ring_b(size_t n) { return malloc(n); }
NOINLINE void *temp_alloc(size_t n) { return malloc(n); }
NOINLINE void *grow(void *p, size_t n) { return realloc(p, n); }
NOINLINE void *grow_fail(void *p) { return realloc(p, (size_t)1 << 62); }

/* free(NULL) is no event: the thread's last allocation stays its last. */
static void release(struct worker *w, void *p)
{
	if (!p)
		return;
	if (p == w->last)
		w->temporary++;
	free(p);
	w->last = NULL;
}

static void step(struct worker *w)
{
	uint64_t r = rnd(w);
	unsigned i = (unsigned)(r >> 8) % RING, op = r & 15;
	size_t size = sizes[(r >> 20) & 3];
	void *p, *old;

	switch (op) {
	case 0:
		p = temp_alloc(size);
		memset(p, 1, 16);
		sink = p;
		w->last = p;
		release(w, p);
		return;
	case 1:
		if (w->ring[i] && w->ring[i] == w->last)
			w->temporary++; /* realloc frees the block first */
		p = grow(w->ring[i], size + 8);
		if (p) {
			w->ring[i] = p;
			w->last = p;
		}
		return;
	case 2:
		/* A failed realloc is a free and the block restored (recorders before this
		 * one's wrote nothing in-process). Either way, after a free there is no last
		 * allocation to disturb. */
		if (!w->ring[i])
			return;
		p = temp_alloc(size);
		w->last = p;
		release(w, p);
		if (grow_fail(w->ring[i]))
			abort();
		return;
	case 3:
		pthread_mutex_lock(&box_lock);
		old = mailbox;
		mailbox = w->ring[i];
		pthread_mutex_unlock(&box_lock);
		w->ring[i] = NULL;
		release(w, old);
		return;
	default:
		release(w, w->ring[i]);
		w->ring[i] = (r >> 30) & 1 ? ring_a(size) : ring_b(size);
		w->last = w->ring[i];
		return;
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < RING; i++)
		w->last = w->ring[i] = ring_a(sizes[i & 3]);
	for (long k = 0; k < steps; k++)
		step(w);
	if (w->id) {
		for (int i = 0; i < RING; i++)
			release(w, w->ring[i]);
	} else {
		for (int i = 0; i < RING; i++)
			if (!w->ring[i])
				w->ring[i] = ring_a(sizes[i & 3]);
	}
	pthread_mutex_lock(&box_lock);
	temporary_total += w->temporary;
	pthread_mutex_unlock(&box_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker w[3];
	pthread_t t[3];

	if (argc > 1)
		steps = atol(argv[1]);
	for (int k = 0; k < 3; k++) {
		w[k].id = k;
		w[k].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1);
		if (pthread_create(&t[k], NULL, work, &w[k]))
			return 1;
	}
	for (int k = 0; k < 3; k++)
		pthread_join(t[k], NULL);
	free(mailbox);
	printf("temporary %ld\n", temporary_total);
	return 0;
}
