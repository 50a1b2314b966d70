// SPDX-License-Identifier: MIT
/* Two shapes of real runtimes that an injection (heapsnap-record -p) must attach to within
 * milliseconds, built non-PIE (-no-pie -fno-pic) with the addresses of malloc and free taken:
 * their PLT entries are canonical, so that libc's and the loader's own calls to them go
 * through this program's GOT, as in Debian's python3 and node.
 *
 *   attach_shapes stacks FIFO   threads are made and joined all along, one after another,
 *                               so that glibc's cache of thread stacks is never empty: a
 *                               pthread_create that reuses a stack frees its old TLS
 *                               through free@plt (python3's http.server makes a thread per
 *                               connection)
 *   attach_shapes dlopen FIFO   a thread dlopens a library that is nowhere, all along: the
 *                               loader allocates its error through malloc@plt holding its
 *                               lock, which the injection's own dlopen needs
 *   attach_shapes select FIFO   the main thread sleeps in select() with no timeout, the
 *                               only thread, and calls nothing else until FIFO is written
 *                               (an idle PostgreSQL postmaster)
 *
 * Prints "ready PID". Each "keep" line read from FIFO runs attach_keep: 5 blocks of 7007 bytes
 * kept (35035 bytes live), then "kept N" (N: the round). "exit" ends it with status 0. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

/* Set in main's code: an address taken in code that is not PIC makes the entries canonical. */
static void *(*volatile p_malloc)(size_t);
static void (*volatile p_free)(void *);
static volatile int stop;

static void *volatile kept[1024];
static unsigned nkept;

NOINLINE void attach_keep(void)
{
	for (int i = 0; i < 5; i++) {
		void *p = p_malloc(7007);

		if (!p)
			abort();
		memset(p, 3, 7007);
		kept[nkept++ % 1024] = p;
	}
}

NOINLINE static void *attach_worker(void *arg)
{
	void *p = p_malloc(100);

	(void)arg;
	memset(p, 1, 100);
	p_free(p);
	return NULL;
}

/* Four stacks into the cache first; then one thread at a time, so that three stay cached. */
static void *attach_churner(void *arg)
{
	pthread_t t[4];

	(void)arg;
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, attach_worker, NULL))
			abort();
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	while (!stop) {
		if (pthread_create(&t[0], NULL, attach_worker, NULL))
			abort();
		pthread_join(t[0], NULL);
	}
	return NULL;
}

static void *attach_dlopener(void *arg)
{
	(void)arg;
	while (!stop) {
		if (dlopen("libheapsnap-attach-shapes-nowhere.so", RTLD_NOW))
			abort();
	}
	return NULL;
}

/* A line from FD (opened read and write: no EOF between the test's writers), select() first. */
static int next_line(int fd, bool wait_in_select, char *line, size_t size)
{
	size_t n = 0;

	for (;;) {
		char c;

		if (wait_in_select) {
			fd_set r;

			FD_ZERO(&r);
			FD_SET(fd, &r);
			if (select(fd + 1, &r, NULL, NULL, NULL) < 0)
				continue;
		}
		if (read(fd, &c, 1) != 1)
			return -1;
		if (c == '\n' || n + 1 == size) {
			line[n] = 0;
			return 0;
		}
		line[n++] = c;
	}
}

int main(int argc, char **argv)
{
	bool idle;
	pthread_t th;
	char line[64];
	int fd, n = 0;

	p_malloc = malloc;
	p_free = free;
	if (argc != 3 || (strcmp(argv[1], "stacks") && strcmp(argv[1], "select") && strcmp(argv[1], "dlopen"))) {
		fprintf(stderr, "usage: %s stacks|dlopen|select FIFO\n", argv[0]);
		return 2;
	}
	idle = !strcmp(argv[1], "select");
	fd = open(argv[2], O_RDWR);
	if (fd < 0)
		return 3;
	if (!idle && pthread_create(&th, NULL, strcmp(argv[1], "dlopen") ? attach_churner : attach_dlopener, NULL))
		return 3;
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (!next_line(fd, idle, line, sizeof(line))) {
		if (!strcmp(line, "keep")) {
			attach_keep();
			printf("kept %d\n", ++n);
			fflush(stdout);
		} else if (!strcmp(line, "exit")) {
			break;
		}
	}
	stop = 1;
	if (!idle)
		pthread_join(th, NULL);
	return 0;
}
