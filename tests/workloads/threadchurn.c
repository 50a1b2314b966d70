// SPDX-License-Identifier: MIT
/* Thread churn: N short-lived threads, never more than AT_ONCE alive, each keeping one block.
 * The in-process recorder's rings of exited threads must be taken back, or the later
 * threads find none (the limit is on threads alive at once, not on threads ever made).
 *
 *   threadchurn N AT_ONCE [FIFO [TEMP]]
 *   churn_keep       N x 1234 bytes live at exit (one block per thread)
 *   churn_temp       N x TEMP blocks of 64 bytes, each freed at once (TEMP default 0):
 *                    a thread's events outnumbering the threads, most read after it exits
 *
 * AT_ONCE "all": the N threads (at most 1024) all alive together, each waiting for the
 * others once it has its block (past the recorder's 256 rings, the rest must be counted).
 *
 * With FIFO: "ready PID" on stdout, then a line read from FIFO (the recorder attached by
 * then), then the threads. While it waits, the main thread allocates and frees a block in
 * idle_poll every millisecond: an injection takes effect at an allocator call. Exits 0; 2 on bad arguments, 3 if a thread cannot be made. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define MAX_THREADS 100000
#define MAX_AT_ONCE 1024

static void *volatile kept[MAX_THREADS];

NOINLINE void churn_keep(long i)
{
	kept[i] = malloc(1234);
}

NOINLINE void churn_temp(void)
{
	void *volatile t = malloc(64);

	free(t);
}

static pthread_barrier_t together;
static int hold;
static long temp;

static void *thread_main(void *arg)
{
	churn_keep((long)arg);
	for (long k = 0; k < temp; k++)
		churn_temp();
	if (hold)
		pthread_barrier_wait(&together);
	return NULL;
}

/* Thread i waits for thread i - AT_ONCE to be joined: a window of AT_ONCE alive at most. */
static int churn(long n, long at_once)
{
	static pthread_t th[MAX_AT_ONCE];

	for (long i = 0; i < n; i++) {
		if (i >= at_once && pthread_join(th[i % at_once], NULL))
			return 3;
		if (pthread_create(&th[i % at_once], NULL, thread_main, (void *)i))
			return 3;
	}
	for (long i = n > at_once ? n - at_once : 0; i < n; i++)
		if (pthread_join(th[i % at_once], NULL))
			return 3;
	return 0;
}

NOINLINE void idle_poll(void)
{
	static void *volatile idle;

	idle = malloc(100);
	free(idle);
}

/* Reads FIFO without blocking in the kernel, an allocator call every millisecond meanwhile. */
static int wait_fifo(const char *fifo)
{
	struct timespec ms = {0, 1000000};
	int fd = open(fifo, O_RDONLY | O_NONBLOCK);
	char c;

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t n = read(fd, &c, 1);

		if (n == 1)
			break;
		if (n < 0 && errno != EAGAIN) {
			close(fd);
			return -1;
		}
		idle_poll();
		nanosleep(&ms, NULL);
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	long n, at_once;

	if (argc < 3 || argc > 5)
		return 2;
	if (argc == 5 && (temp = atol(argv[4])) < 0)
		return 2;
	n = atol(argv[1]);
	hold = !strcmp(argv[2], "all");
	at_once = hold ? n : atol(argv[2]);
	if (hold && (n > MAX_AT_ONCE || pthread_barrier_init(&together, NULL, (unsigned)n)))
		return 2;
	if (n < 1 || n > MAX_THREADS || at_once < 1 || at_once > MAX_AT_ONCE)
		return 2;
	if (argc >= 4) {
		printf("ready %d\n", getpid());
		fflush(stdout);
		if (wait_fifo(argv[3]))
			return 4;
	}
	return churn(n, at_once);
}
