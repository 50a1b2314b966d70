// SPDX-License-Identifier: MIT
/* Benchmark workloads. Each prints "elapsed SECONDS ops OPS events EVENTS cpu SECONDS" for
 * its timed part only, so recorder start-up and attach are not counted: wall time, and the
 * process's CPU time (all its threads), which a machine shared with other work inflates less.
 *
 *   churn N       N malloc/free pairs, mixed sizes, over a ring of 1024 live blocks
 *   mt THREADS N  the same churn split over THREADS threads, each with its own ring
 *   live N        N live allocations (32..96 bytes), then all freed
 *   rate THREADS SECONDS [use]  the churn in THREADS threads until SECONDS have passed,
 *                 printing "q TIME OPS" each quarter second: its own throughput (TIME is
 *                 CLOCK_BOOTTIME, as /proc/uptime), for a recorder attached and detached.
 *                 With "use", each block is also written whole and read back, as a program
 *                 that allocates does something with its memory; without, nothing but the
 *                 allocator runs: the worst case for anything that interposes it.
 */
#define _GNU_SOURCE /* sched_setaffinity (pin.h) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pin.h"

#define RING 1024

static const size_t sizes[] = {16, 24, 32, 48, 64, 96, 128, 200, 256, 512, 1024, 4096};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

__attribute__((noinline)) static void churn(long n, uint64_t seed)
{
	void *ring[RING] = {0};

	for (long i = 0; i < n; i++) {
		uint64_t r = xorshift(&seed);
		unsigned idx = (unsigned)(r % RING);

		free(ring[idx]);
		ring[idx] = malloc(sizes[(r >> 20) % (sizeof(sizes) / sizeof(sizes[0]))]);
		*(volatile char *)ring[idx] = 1;
	}
	for (int i = 0; i < RING; i++)
		free(ring[i]);
}

struct job {
	long n;
	uint64_t seed;
};

static void *thread_main(void *arg)
{
	struct job *j = arg;

	churn(j->n, j->seed);
	return NULL;
}

__attribute__((noinline)) static void live(long n)
{
	void **v = malloc(sizeof(void *) * (size_t)n);

	for (long i = 0; i < n; i++)
		v[i] = malloc(32 + (size_t)(i % 5) * 16);
	for (long i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static volatile int rate_stop;
static int rate_use;
static long rate_ops[64 * 8]; /* a cache line per thread */
static volatile uint64_t rate_sink;

static void *rate_main(void *arg)
{
	long *ops = arg;
	uint64_t seed = (uint64_t)(uintptr_t)arg | 1, sum = 0;
	void *ring[RING] = {0};

	while (!rate_stop) {
		for (int i = 0; i < 1000; i++) {
			uint64_t r = xorshift(&seed);
			unsigned idx = (unsigned)(r % RING);
			size_t n = sizes[(r >> 20) % 8];

			free(ring[idx]);
			ring[idx] = malloc(n);
			if (rate_use) {
				unsigned char *b = ring[idx];

				memset(b, (int)r, n);
				for (size_t k = 0; k < n; k += 8)
					sum += b[k];
			} else {
				*(volatile char *)ring[idx] = 1;
			}
		}
		__atomic_store_n(ops, *ops + 1000, __ATOMIC_RELAXED);
	}
	rate_sink = sum;
	return NULL;
}

static int rate(int k, double secs)
{
	pthread_t t[64];
	struct timespec q = {0, 250000000}, b;
	long last = 0;
	double end = now() + secs;

	if (k < 1 || k > 64)
		return 2;
	for (int i = 0; i < k; i++)
		pthread_create(&t[i], NULL, rate_main, &rate_ops[i * 8]);
	while (now() < end) {
		long total = 0;

		nanosleep(&q, NULL);
		for (int i = 0; i < k; i++)
			total += __atomic_load_n(&rate_ops[i * 8], __ATOMIC_RELAXED);
		clock_gettime(CLOCK_BOOTTIME, &b);
		printf("q %.3f %ld\n", (double)b.tv_sec + (double)b.tv_nsec / 1e9, total - last);
		fflush(stdout);
		last = total;
	}
	rate_stop = 1;
	for (int i = 0; i < k; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	double t0, t1, c0 = cpu_now();
	long n, events;

	if (argc < 3 || bench_pin())
		return 2;
	if (!strcmp(argv[1], "rate") && (argc == 4 || argc == 5)) {
		rate_use = argc == 5 && !strcmp(argv[4], "use");
		printf("pid %d\n", getpid());
		return rate(atoi(argv[2]), atof(argv[3]));
	}
	if (!strcmp(argv[1], "churn")) {
		n = atol(argv[2]);
		t0 = now();
		churn(n, 88172645463325252ull);
		t1 = now();
		events = 2 * n;
	} else if (!strcmp(argv[1], "mt") && argc == 4) {
		int k = atoi(argv[2]);
		pthread_t t[64];
		struct job jobs[64];

		n = atol(argv[3]);
		if (k < 1 || k > 64)
			return 2;
		t0 = now();
		for (int i = 0; i < k; i++) {
			jobs[i] = (struct job){n / k, 88172645463325252ull + (uint64_t)i * 7919};
			pthread_create(&t[i], NULL, thread_main, &jobs[i]);
		}
		for (int i = 0; i < k; i++)
			pthread_join(t[i], NULL);
		t1 = now();
		events = 2 * n;
	} else if (!strcmp(argv[1], "live")) {
		n = atol(argv[2]);
		t0 = now();
		live(n);
		t1 = now();
		events = 2 * n;
	} else {
		return 2;
	}
	printf("elapsed %.6f ops %ld events %ld cpu %.6f\n", t1 - t0, n, events, cpu_now() - c0);
	return 0;
}
