/* SPDX-License-Identifier: MIT */
/* A workload the tests attach to again and again (t_inject_real_canon_plt, _linked_alloc): one
 * thread calls CHURN every millisecond, so that an attach always meets allocator calls, while the
 * main thread says "ready PID" and then runs ROUND once per "keep" line read from the FIFO (opened
 * read and write: it never reads EOF between the test's writers) until "exit". */
#ifndef HEAPSNAP_FIFO_ROUNDS_H
#define HEAPSNAP_FIFO_ROUNDS_H
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int fifo_stop;

static void *fifo_churner(void *arg)
{
	void (*churn)(void) = (void (*)(void))arg;
	struct timespec ms = {0, 1000000};

	while (!fifo_stop) {
		churn();
		nanosleep(&ms, NULL);
	}
	return NULL;
}

/* EXIT_CODE once "exit" is read; 2 without a FIFO named, 3 when it cannot be opened. */
static int fifo_rounds(const char *name, int argc, char **argv, void (*churn)(void), void (*round)(int n),
		       int exit_code)
{
	char line[64];
	pthread_t th;
	FILE *f;
	int n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FIFO\n", name);
		return 2;
	}
	f = fopen(argv[1], "r+");
	if (!f || pthread_create(&th, NULL, fifo_churner, (void *)churn))
		return 3;
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), f)) {
		if (!strcmp(line, "keep\n")) {
			round(++n);
			fflush(stdout);
		} else if (!strcmp(line, "exit\n")) {
			break;
		}
	}
	fifo_stop = 1;
	pthread_join(th, NULL);
	return exit_code;
}
#endif
