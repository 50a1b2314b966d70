// SPDX-License-Identifier: MIT
/* Two builds of one program, for diffs across builds. `growth SCALE GROW`:
 *
 *   stable_here   SCALE x 500 x 1000 bytes, live at exit, the same in every build and run
 *   grow_here     GROW x SCALE x 100 x 1000 bytes, live at exit
 *
 * So with SCALE 1 the old run (GROW 1) holds 600000 bytes, a new one with GROW 3 grows by
 * exactly 200000, all of it in grow_here, and with GROW 13 by 200% (1800000 bytes).
 * The new build is compiled with -DMOVED: every line below moves down 60, as a release
 * that edits the file above them would. */
#ifdef MOVED
#line 70
#endif
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void *volatile keep;

NOINLINE void stable_here(long n)
{
	for (long i = 0; i < n; i++) {
		void **b = malloc(1000);

		memset(b, 0, 1000);
		b[0] = keep;
		keep = b;
	}
}

NOINLINE void grow_here(long n)
{
	for (long i = 0; i < n; i++) {
		void **b = malloc(1000);

		memset(b, 0, 1000);
		b[0] = keep;
		keep = b;
	}
}

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 1, grow = argc > 2 ? atol(argv[2]) : 1;

	stable_here(500 * scale);
	grow_here(100 * scale * grow);
	return 0;
}
