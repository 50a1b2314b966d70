// SPDX-License-Identifier: MIT
/* A server between requests, for attaching to: "wake FIFO" says "ready PID", then sleeps in
 * read(2) on FIFO (by a syscall instruction of its own: see raw_read; FIFO opened read-write,
 * so that the open does not wait for a writer). Once a line comes it keeps, at once:
 *
 *   function          live at exit
 *   wake_main_keep    1,000 x 4,000 = 4,000,000   (the woken thread)
 *   wake_thread_keep  1,000 x 3,000 = 3,000,000   (4 threads started then, 250 blocks each)
 *
 * says "done", and exits 0 at the next line. Nothing else calls the allocator after "ready".
 * "wake poll FIFO" idles instead in a loop of poll() on FIFO with a 20 ms timeout: a process
 * that calls no allocator while it idles, but other functions of libc through its GOT.
 * "wake dlopen FIFO", once woken, first dlopens libwake_plugin.so (next to it), whose
 * constructor calls wake_in_dlopen, which keeps 10 x 5,000 = 50,000 bytes: its first
 * allocator call is made with the loader's lock held. */
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define MAIN_BLOCKS 1000
#define THREADS 4
#define THREAD_BLOCKS 250

static void *volatile keep[MAIN_BLOCKS + THREADS * THREAD_BLOCKS];

NOINLINE void wake_main_keep(void)
{
	for (int i = 0; i < MAIN_BLOCKS; i++)
		keep[i] = malloc(4000);
}

NOINLINE void *wake_thread_keep(void *arg)
{
	int base = MAIN_BLOCKS + (int)(long)arg * THREAD_BLOCKS;

	for (int i = 0; i < THREAD_BLOCKS; i++)
		keep[base + i] = malloc(3000);
	return NULL;
}

/* Called by libwake_plugin.so's constructor, inside dlopen. */
static void *volatile dl_keep[10];

NOINLINE void wake_in_dlopen(void)
{
	for (int i = 0; i < 10; i++)
		dl_keep[i] = malloc(5000);
}

/* libwake_plugin.so next to this program, loaded. */
static int load_plugin(const char *self)
{
	char path[4096];
	const char *slash = strrchr(self, '/');
	int n = slash ? (int)(slash - self) : 1;

	snprintf(path, sizeof(path), "%.*s/libwake_plugin.so", n, slash ? self : ".");
	if (!dlopen(path, RTLD_NOW)) {
		fprintf(stderr, "%s\n", dlerror());
		return -1;
	}
	return 0;
}

/* read(2) by a syscall instruction of this program's own (as a Go program makes its calls),
 * not libc's read(): a process asleep in libc's read() is made to load the library from
 * there by the recorder (inject_attach.c, idle_fire), before it wakes, and these tests are of
 * a process that allocates as the library loads. */
static ssize_t raw_read(int fd, void *buf, size_t len)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "0"(0L), "D"((long)fd), "S"(buf), "d"(len) : "rcx", "r11", "memory");
	return (ssize_t)ret;
}

/* A line from FD, or -1. The test writes each line in one write, which one read takes
 * whole: woken, the process's next call through its GOT is then malloc's, which waits in
 * the trampoline for the hooks. A read() through the GOT would take read's trampoline
 * first, which starts the loader without waiting, and a process descheduled then (a busy
 * machine) could find the hooks in place at its first malloc, and no call held. */
static int wait_line(int fd)
{
	char buf[64];

	for (;;) {
		ssize_t n = raw_read(fd, buf, sizeof(buf));

		if (n <= 0)
			return -1;
		if (memchr(buf, '\n', (size_t)n))
			return 0;
	}
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	bool idle_poll = argc == 3 && !strcmp(argv[1], "poll");
	bool in_dlopen = argc == 3 && !strcmp(argv[1], "dlopen");
	const char *fifo = argv[argc - 1];
	int fd;

	if (argc != 2 && !idle_poll && !in_dlopen) {
		fprintf(stderr, "usage: wake [poll|dlopen] FIFO\n");
		return 2;
	}
	fd = open(fifo, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(fifo);
		return 4;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (struct pollfd p = {fd, POLLIN, 0}; idle_poll && poll(&p, 1, 20) == 0;)
		;
	if (wait_line(fd))
		return 4;
	if (in_dlopen && load_plugin(argv[0]))
		return 6;
	wake_main_keep();
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, wake_thread_keep, (void *)i))
			return 5;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	fflush(stdout);
	return wait_line(fd) ? 4 : 0;
}
