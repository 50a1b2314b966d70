// SPDX-License-Identifier: MIT
/* Recursion, for reports that count a function once per stack however often it recurs:
 *
 *   nest(3) -> nest(2) -> nest(1), each level keeping 1000 x level bytes, called by outer:
 *   nest    flat 1000 + 2000 + 3000 = 6000, cum 6000 (not 6000 + 3000 + 1000)
 *   outer   flat 0, cum 6000 */
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void *volatile kept[4];

NOINLINE void nest(int level)
{
	if (level > 1)
		nest(level - 1);
	/* After the call: no tail call for the compiler to turn into a loop. */
	kept[level] = malloc(1000 * (size_t)level);
	memset(kept[level], level, 1000 * (size_t)level);
}

NOINLINE void outer(void)
{
	nest(3);
}

int main(void)
{
	outer();
	return 0;
}
