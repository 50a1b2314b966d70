// SPDX-License-Identifier: MIT
/* Built with -fomit-frame-pointer: an fp walk loses the callers of nofp_level3, and a
 * --stack dwarf capture unwound offline keeps them.
 *
 *   nofp_level3   20 x 1000 = 20000 live
 *                 called from nofp_level2 <- nofp_level1 <- main
 */
#include <stdlib.h>

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

int main(void)
{
	nofp_level1();
	return sink == 12345;
}
