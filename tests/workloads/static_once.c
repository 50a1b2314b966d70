// SPDX-License-Identifier: MIT
/* A static binary: its allocator is its own copy of glibc's, found in the executable. It
 * appends one line to the file named by its argument each time it runs, so a test can see
 * that recording ran it exactly once.
 *
 *   static_alloc   3 x 4321 = 12963 live
 */
#include <stdio.h>
#include <stdlib.h>

static void *volatile keep[3];

__attribute__((noinline)) void static_alloc(void)
{
	for (int i = 0; i < 3; i++)
		keep[i] = malloc(4321);
}

int main(int argc, char **argv)
{
	FILE *f = argc > 1 ? fopen(argv[1], "a") : NULL;

	if (f) {
		fputs("ran\n", f);
		fclose(f);
	}
	static_alloc();
	return 0;
}
