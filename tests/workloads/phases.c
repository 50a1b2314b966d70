// SPDX-License-Identifier: MIT
/* Two phases with different heaps, for the HTML report's moments and ranges:
 *
 *   phase_one   3000 x 1000 = 3000000 bytes live at the peak, all freed before phase two
 *   phase_two   1000 x 1000 = 1000000 bytes live at exit, allocated after the peak
 *
 * So the heap at the peak is phase_one's alone, at the end phase_two's alone, and what grew
 * (or was allocated) from the peak to the end is phase_two's 1000000 bytes. */
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void *volatile one[3000], *volatile two[1000];

NOINLINE void phase_one(void)
{
	for (int i = 0; i < 3000; i++) {
		one[i] = malloc(1000);
		memset(one[i], 1, 1000);
	}
	for (int i = 0; i < 3000; i++)
		free(one[i]);
}

NOINLINE void phase_two(void)
{
	for (int i = 0; i < 1000; i++) {
		two[i] = malloc(1000);
		memset(two[i], 2, 1000);
	}
}

int main(void)
{
	phase_one();
	phase_two();
	return 0;
}
