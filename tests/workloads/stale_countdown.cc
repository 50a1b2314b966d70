// SPDX-License-Identifier: MIT
/* Countdowns left from a session that sampled, then a session that records every event
 * (t_inject_stale_countdown). Three threads each draw theirs at their first call that reaches
 * the library's full path, in the first session: at 1 GiB it is left near a GiB, far more
 * than anything here allocates, so that in the second session each thread's calls would pass
 * the countdown. Each must be recorded all the same. A thread's first call of a session
 * resets its countdown (the full path draws it for the new rate), so each thread makes one
 * kind of call only, the first of its session: stale_new calls operator new for 4 blocks of
 * 250 bytes, stale_calloc callocs 3 of 500, stale_malloc mallocs 5 of 1000.
 *
 * Rounds, one per "keep" line on the FIFO (fifo_rounds.h): each thread in turn makes its
 * calls, every block kept live to the end; then "round N". Exits 6 at "exit", 1 on a failure
 * to start a thread. */
#include <pthread.h>
#include <semaphore.h>
#include <cstdlib>
#include <new>

#include "fifo_rounds.h"

#define ROUNDS 16
static void *kept[3][ROUNDS][5];
static sem_t go[3], done[3];
static int rounds;

static void churn(void)
{
	void *volatile p = malloc(100); /* not folded away: an attach meets allocator calls */

	free(p);
}

__attribute__((noinline)) static void stale_new(void **k)
{
	for (int i = 0; i < 4; i++)
		k[i] = ::operator new(250);
}

__attribute__((noinline)) static void stale_calloc(void **k)
{
	for (int i = 0; i < 3; i++)
		k[i] = calloc(1, 500);
}

__attribute__((noinline)) static void stale_malloc(void **k)
{
	for (int i = 0; i < 5; i++)
		k[i] = malloc(1000);
}

static void (*const kinds[3])(void **) = {stale_new, stale_calloc, stale_malloc};

static void *worker(void *arg)
{
	long w = (long)arg;

	for (;;) {
		while (sem_wait(&go[w]))
			;
		kinds[w](kept[w][rounds % ROUNDS]);
		sem_post(&done[w]);
	}
	return NULL;
}

static void round(int n)
{
	rounds = n;
	for (int w = 0; w < 3; w++) {
		sem_post(&go[w]);
		while (sem_wait(&done[w]))
			;
	}
	printf("round %d\n", n);
}

int main(int argc, char **argv)
{
	pthread_t t;

	for (long w = 0; w < 3; w++)
		if (sem_init(&go[w], 0, 0) || sem_init(&done[w], 0, 0) || pthread_create(&t, NULL, worker, (void *)w))
			return 1;
	return fifo_rounds("stale_countdown", argc, argv, churn, round, 6);
}
