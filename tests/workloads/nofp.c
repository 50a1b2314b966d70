// SPDX-License-Identifier: MIT
/* Built with -fomit-frame-pointer: an fp walk loses the callers of nofp_level3, and a
 * --stack dwarf capture unwound offline keeps them.
 *
 *   nofp_level3   20 x 1000 = 20000 live
 *                 called from nofp_level2 <- nofp_level1 <- main
 *
 * `nofp alt`: the same 20 blocks, from callers that take turns and differ only in the return
 * address in one frame of the stack (same depth, same frame sizes):
 *   nofp_level3   20 x 1000 = 20000 live, from nofp_level2 <- nofp_left or nofp_right <- main
 *   nofp_left     10 x 1000 = 10000 cum
 *   nofp_right    10 x 1000 = 10000 cum
 *
 * `nofp FIFO`: prints "ready PID" and waits for a line on FIFO before allocating, calling
 * malloc and free (8 bytes, nothing live) meanwhile, so that a recorder can attach, by BPF
 * or by injection (which needs an allocator call), and has read the maps by then.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile keep[32];
static volatile int sink;

NOINLINE void nofp_level3(int i)
{
	keep[i] = malloc(1000);
	sink += i; /* work after the call: no tail call */
}

NOINLINE void nofp_level2(int i)
{
	volatile char pad[48];

	pad[0] = (char)i;
	nofp_level3(i);
	sink += pad[0];
}

NOINLINE void nofp_level1(void)
{
	for (int i = 0; i < 20; i++)
		nofp_level2(i);
	sink++;
}

NOINLINE void nofp_left(int i)
{
	volatile char pad[16];

	pad[0] = (char)i;
	nofp_level2(i);
	sink += pad[0];
}

NOINLINE void nofp_right(int i)
{
	volatile char pad[16];

	pad[0] = (char)i;
	nofp_level2(i);
	sink -= pad[0];
}

static int wait_for(const char *fifo)
{
	int fd = open(fifo, O_RDONLY | O_NONBLOCK);
	char c;

	if (fd < 0)
		return -1;
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (read(fd, &c, 1) != 1) {
		void *volatile p = malloc(8); /* volatile: the pair is not optimised away */

		free(p);
		usleep(2000);
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "alt")) {
		for (int i = 0; i < 20; i++)
			(i & 1 ? nofp_left : nofp_right)(i);
		return sink == 12345;
	}
	if (argc > 1 && wait_for(argv[1]))
		return 4;
	nofp_level1();
	return sink == 12345;
}
