// SPDX-License-Identifier: MIT
/* A peak that lasts microseconds: 100 blocks of 1000 bytes kept, then 50 blocks of 5,000,000 + r
 * bytes each made and freed at once, so that the peak, 100,000 + 5,000,049 = 5,100,049 bytes live,
 * lies between two events a few microseconds apart (t_analyzer_transient_peak). */
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void *volatile kept[100];

NOINLINE void keep_small(void)
{
	for (int i = 0; i < 100; i++) {
		kept[i] = malloc(1000);
		memset(kept[i], 1, 1000);
	}
}

NOINLINE void spike(int r)
{
	char *volatile p = malloc(5000000 + (size_t)r);

	p[0] = 1;
	free(p);
}

int main(void)
{
	keep_small();
	for (int r = 0; r < 50; r++)
		spike(r);
	for (int i = 0; i < 100; i++)
		free(kept[i]);
	return 0;
}
