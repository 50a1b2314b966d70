// SPDX-License-Identifier: MIT
/* A process that lives a few milliseconds: allocates, keeps, and exits at once, before a
 * recorder reading /proc at its first event could find it. For `-a` and fork storms.
 *
 *   quick_alloc      3 x 1000 = 3000 bytes live at exit
 */
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile kept[3];

NOINLINE void quick_alloc(void)
{
	for (int i = 0; i < 3; i++)
		kept[i] = malloc(1000);
}

int main(void)
{
	quick_alloc();
	_exit(0);
}
