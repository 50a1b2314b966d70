// SPDX-License-Identifier: MIT
/* Blocks allocated on one CPU and freed on another, with addresses reused across threads:
 * the order of a free and the allocation that reuses its address is only right if the
 * recorder merges its per-CPU rings by time. Expected (every event recorded):
 *
 *   function        alloc_space              inuse_space
 *   handoff_make    200000 x 48 = 9600000    0           (all freed by the other thread)
 *   handoff_keep    1000 x 48 = 48000        48000       (kept, the same size: it reuses freed addresses)
 *
 * and no free of an unknown block. The producer runs on CPU 0 and the consumer on CPU 1
 * when there are two CPUs; the queue is a lock-free ring of pointers.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define N 200000
#define KEEP_EVERY 200
#define QSIZE 1024

static void *_Atomic queue[QSIZE];
static void *kept[N / KEEP_EVERY];

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* best effort */
}

NOINLINE void *handoff_make(void)
{
	return malloc(48);
}

NOINLINE void *handoff_keep(void)
{
	return malloc(48);
}

static void *producer(void *arg)
{
	(void)arg;
	pin(0);
	for (int i = 0; i < N; i++) {
		void *p = handoff_make();
		void *expected = NULL;

		*(volatile char *)p = 1;
		while (!atomic_compare_exchange_weak(&queue[i % QSIZE], &expected, p))
			expected = NULL;
		if (i % KEEP_EVERY == 0)
			kept[i / KEEP_EVERY] = handoff_keep();
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	pin(1);
	for (int i = 0; i < N; i++) {
		void *p;

		while (!(p = atomic_exchange(&queue[i % QSIZE], NULL)))
			;
		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t a, b;

	pthread_create(&b, NULL, consumer, NULL);
	pthread_create(&a, NULL, producer, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("kept %p\n", (void *)kept);
	return 0;
}
