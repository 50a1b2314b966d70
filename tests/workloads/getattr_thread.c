// SPDX-License-Identifier: MIT
/* Threads whose first allocator call is made inside pthread_getattr_np, as Rust's thread start
 * makes it (its stack guard): glibc holds the thread's own lock there while it reallocs its
 * CPU set, so a hook that asks pthread_getattr_np for the thread's stack deadlocks.
 *
 *   getattr_thread N      N such threads, one after another
 *   getattr_thread FIFO   fifo_rounds.h's protocol: one such thread a "keep" line, then
 *                         "kept N" on stdout (N threads so far)
 *   getattr_keep          4321 bytes live at exit a thread (one block each, after its getattr)
 *
 * Each thread checks its stack against what pthread_getattr_np said. Exits 0; 2 on bad
 * arguments, 3 if a thread cannot be made, 4 if a thread's stack is not where glibc says. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fifo_rounds.h"

#define NOINLINE __attribute__((noinline))
#define MAX_THREADS 1000

static void *volatile kept[MAX_THREADS];
static volatile int bad;

NOINLINE void getattr_keep(long i)
{
	kept[i] = malloc(4321);
	memset(kept[i], 1, 4321);
}

static void *thread_main(void *arg)
{
	pthread_attr_t a;
	void *lo;
	size_t sz;
	char here;

	if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &sz)) {
		bad = 1;
		return NULL;
	}
	if ((char *)&here < (char *)lo || (char *)&here >= (char *)lo + sz)
		bad = 1;
	pthread_attr_destroy(&a);
	getattr_keep((long)arg);
	return NULL;
}

static int one_thread(long i)
{
	pthread_t th;

	return pthread_create(&th, NULL, thread_main, (void *)i) || pthread_join(th, NULL) ? 3 : bad ? 4 : 0;
}

static NOINLINE void idle_churn(void)
{
	free(malloc(64));
}

static void round_thread(int n)
{
	if (n <= MAX_THREADS && !one_thread(n - 1))
		printf("kept %d\n", n);
}

int main(int argc, char **argv)
{
	char *end;
	long n = argc == 2 ? strtol(argv[1], &end, 10) : 0;

	if (argc == 2 && *end)
		return fifo_rounds("getattr_thread", argc, argv, idle_churn, round_thread, 0);
	if (n < 1 || n > MAX_THREADS) {
		fprintf(stderr, "usage: %s N|FIFO\n", argv[0]);
		return 2;
	}
	for (long i = 0; i < n; i++) {
		int rc = one_thread(i);

		if (rc)
			return rc;
	}
	return 0;
}
