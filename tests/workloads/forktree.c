// SPDX-License-Identifier: MIT
/* A server's process tree, for attaching to with and without --children: "forktree OLD NEW
 * FIFO" forks OLD children, which wait in read() on a pipe each, says "old PID" for each and
 * then "ready PID", and polls FIFO (opened read-write) every 20 ms. At a line on FIFO:
 *
 *   who                      function          bytes allocated
 *   the parent               tree_parent_keep  4 x 777 = 3,108 (kept)
 *   old child i (0-based)    tree_old_keep     3 x 1,000 x (i + 1) (kept until it exits)
 *   new child j (0-based)    tree_new_first    2 x 500 x (j % 64 + 1), its first calls after fork
 *
 * the parent wakes the old children one at a time (each says it has allocated on a pipe
 * back), then forks NEW children one at a time, each of which allocates at once after
 * fork and exits, says "new PID" for each, ends the old children, reaps them all, says
 * "done" and exits 0. Before "ready" every process allocates 100 bytes in
 * tree_before_attach, which an attach made later must not show. */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define MAX_KIDS 64

static void *volatile keep[8];

NOINLINE void tree_before_attach(void)
{
	keep[7] = malloc(100);
}

NOINLINE void tree_parent_keep(void)
{
	for (int i = 0; i < 4; i++)
		keep[i] = malloc(777);
}

NOINLINE void tree_old_keep(int i)
{
	for (int k = 0; k < 3; k++)
		keep[k] = malloc(1000 * (size_t)(i + 1));
}

NOINLINE void tree_new_first(int j)
{
	keep[0] = malloc(500 * (size_t)(j % 64 + 1));
	keep[1] = malloc(500 * (size_t)(j % 64 + 1));
}

/* Old child I: waits for a byte, allocates, says so, waits for the end (EOF). */
static void old_child(int i, int in, int out)
{
	char c;

	tree_before_attach();
	if (read(in, &c, 1) != 1)
		_exit(0); /* ended before it was woken */
	tree_old_keep(i);
	if (write(out, "k", 1) != 1)
		_exit(1);
	while (read(in, &c, 1) > 0)
		;
	_exit(0);
}

int main(int argc, char **argv)
{
	int nold, nnew, fifo, in[MAX_KIDS], back[2];
	pid_t old[MAX_KIDS];
	char buf[64], c;

	if (argc != 4 || (nold = atoi(argv[1])) < 0 || nold > MAX_KIDS || (nnew = atoi(argv[2])) < 0) {
		fprintf(stderr, "usage: forktree OLD NEW FIFO (OLD 0 to %d)\n", MAX_KIDS);
		return 2;
	}
	fifo = open(argv[3], O_RDWR);
	if (fifo < 0 || pipe(back)) {
		perror(argv[3]);
		return 1;
	}
	tree_before_attach();
	for (int i = 0; i < nold; i++) {
		int p[2];

		if (pipe(p))
			return 1;
		old[i] = fork();
		if (old[i] < 0)
			return 1;
		if (!old[i]) {
			close(p[1]);
			old_child(i, p[0], back[1]);
		}
		close(p[0]);
		in[i] = p[1];
		printf("old %d\n", (int)old[i]);
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	/* poll() every 20 ms, as an idle server's loop: a call through the GOT, where the library
	 * can be injected before the line comes. */
	for (struct pollfd pf = {.fd = fifo, .events = POLLIN}; poll(&pf, 1, 20) <= 0;)
		;
	if (read(fifo, buf, sizeof(buf)) <= 0)
		return 1;
	tree_parent_keep();
	for (int i = 0; i < nold; i++)
		if (write(in[i], "g", 1) != 1 || read(back[0], &c, 1) != 1)
			return 1;
	for (int j = 0; j < nnew; j++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (!pid) {
			tree_new_first(j);
			_exit(0);
		}
		printf("new %d\n", (int)pid);
		if (waitpid(pid, NULL, 0) != pid)
			return 1;
	}
	for (int i = 0; i < nold; i++)
		close(in[i]);
	for (int i = 0; i < nold; i++)
		if (waitpid(old[i], NULL, 0) != old[i])
			return 1;
	printf("done\n");
	return 0;
}
