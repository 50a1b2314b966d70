// SPDX-License-Identifier: MIT
/* Benchmark workloads. Each prints "elapsed SECONDS ops OPS events EVENTS" for its timed
 * part only, so recorder start-up and attach are not counted.
 *
 *   churn N       N malloc/free pairs, mixed sizes, over a ring of 1024 live blocks
 *   mt THREADS N  the same churn split over THREADS threads, each with its own ring
 *   live N        N live allocations (32..96 bytes), then all freed
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 1024

static const size_t sizes[] = {16, 24, 32, 48, 64, 96, 128, 200, 256, 512, 1024, 4096};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
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

int main(int argc, char **argv)
{
	double t0, t1;
	long n, events;

	if (argc < 3)
		return 2;
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
	printf("elapsed %.6f ops %ld events %ld\n", t1 - t0, n, events);
	return 0;
}
