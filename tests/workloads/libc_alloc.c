// SPDX-License-Identifier: MIT
/* A program that calls glibc's allocator by its internal name, __libc_malloc, as programs that
 * define a malloc of their own do to reach glibc's: every way in must see those calls too
 * (common/allocators.def has the line).
 *
 *   libc_malloc_kept   5 x 12345 = 61725 bytes from __libc_malloc, live at exit
 *   malloc_kept        3 x 1000  =  3000 bytes from malloc, live at exit
 *   libc_free_temp     4 x 5555  = 22220 bytes from __libc_malloc, each given back with
 *                      __libc_free: none live
 *
 * Usage: libc_alloc [FIFO]. With FIFO, prints "ready PID" and allocates only after a line
 * arrives there (to be attached to first), polling it every 20 ms through the GOT meanwhile: an
 * injection's safe point that is not an allocator. Exits with status 0. */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

void *__libc_malloc(size_t n);
void __libc_free(void *p);

static void *volatile kept[8];

NOINLINE void libc_malloc_kept(void)
{
	for (int i = 0; i < 5; i++) {
		kept[i] = __libc_malloc(12345);
		memset(kept[i], 1, 12345);
	}
}

NOINLINE void libc_free_temp(void)
{
	void *volatile p[4];

	/* All live at once and given back last: no later block takes one's address, which would
	 * end it without its free. */
	for (int i = 0; i < 4; i++) {
		p[i] = __libc_malloc(5555);
		memset(p[i], 3, 5555);
	}
	for (int i = 0; i < 4; i++)
		__libc_free(p[i]);
}

NOINLINE void malloc_kept(void)
{
	for (int i = 0; i < 3; i++) {
		kept[5 + i] = malloc(1000);
		memset(kept[5 + i], 2, 1000);
	}
}

int main(int argc, char **argv)
{
	char line[64];

	if (argc == 2) {
		int fd = open(argv[1], O_RDWR | O_NONBLOCK); /* read and write: no wait for a writer */
		struct pollfd pfd = {.fd = fd, .events = POLLIN};

		if (fd < 0)
			return 3;
		printf("ready %d\n", getpid());
		fflush(stdout);
		while (poll(&pfd, 1, 20) == 0)
			;
		if (read(fd, line, sizeof(line)) <= 0)
			return 4;
		close(fd);
	}
	libc_malloc_kept();
	malloc_kept();
	libc_free_temp();
	return 0;
}
