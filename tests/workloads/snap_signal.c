// SPDX-License-Identifier: MIT
/* A snapshot marked by SIGUSR1 holds every event made before the signal (t_snapshot_signal_drained).
 *
 *   snap_keep    N x 100 live when the signal is sent, freed after the snapshot is taken
 *
 * "snap_signal N FIFO": says "ready PID", reads the recorder's pid from FIFO (a line "parent"
 * for the process that launched it), keeps N blocks from snap_keep, sends SIGUSR1 to the
 * recorder with no pause and says "signalled"; it then waits for a line "free" (the test
 * has seen the snapshot in the file), frees every block and exits 0. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void **blocks;

/* A line from FD; polled every 20 ms through the program's GOT, so that an injection
 * waiting for such a call (a safe point) meets one while the workload waits. */
static int read_line(int fd, char *line, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		char c;

		if (poll(&p, 1, 20) <= 0)
			continue;
		if (read(fd, &c, 1) != 1)
			return -1;
		line[n++] = c;
		if (c == '\n')
			break;
	}
	line[n] = 0;
	return 0;
}

NOINLINE static void snap_keep(long n)
{
	for (long i = 0; i < n; i++)
		blocks[i] = malloc(100);
}

int main(int argc, char **argv)
{
	char line[64];
	long n;
	pid_t rec;
	int fd;

	if (argc != 3 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: snap_signal N FIFO\n");
		return 2;
	}
	/* Opened read and write: no EOF between the test's writers. */
	if ((fd = open(argv[2], O_RDWR)) < 0 || !(blocks = calloc((size_t)n, sizeof(*blocks))))
		return 3;
	printf("ready %d\n", getpid());
	fflush(stdout);
	if (read_line(fd, line, sizeof(line)))
		return 3;
	rec = strcmp(line, "parent\n") ? (pid_t)atol(line) : getppid();
	snap_keep(n);
	if (kill(rec, SIGUSR1))
		return 4;
	printf("signalled\n");
	fflush(stdout);
	while (!read_line(fd, line, sizeof(line)) && strcmp(line, "free\n"))
		;
	for (long i = 0; i < n; i++)
		free(blocks[i]);
	free(blocks);
	return 0;
}
