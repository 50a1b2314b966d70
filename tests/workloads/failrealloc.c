// SPDX-License-Identifier: MIT
/* A realloc that fails is no event for temporary allocations (heaptrack's definition), however
 * a recorder writes it (t_failed_realloc_temporary). Temporary, by allocating function:
 *
 *   fr_one 1    allocated, a failed realloc of it, freed
 *   fr_two 0    allocated, then fr_three's, a failed realloc of it; freed after fr_three's
 *   fr_three 1  allocated after fr_two's, freed next (the failed realloc between is no event)
 *   fr_four 0   allocated, a failed realloc of it, fr_five's allocated, freed
 *   fr_five 0   freed after fr_four's (a free between ends it too, as in heaptrack) */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define HUGE ((size_t)1 << 62)

NOINLINE void *fr_one(size_t n) { return malloc(n); }
NOINLINE void *fr_two(size_t n) { return malloc(n); }
NOINLINE void *fr_three(size_t n) { return malloc(n); }
NOINLINE void *fr_four(size_t n) { return malloc(n); }
NOINLINE void *fr_five(size_t n) { return malloc(n); }

static void *volatile sink;

/* Fails, leaving P as it was. */
static void fail(void *p)
{
	sink = realloc(p, HUGE);
	if (sink)
		abort();
}

int main(void)
{
	void *p, *q;

	p = fr_one(100);
	fail(p);
	free(p);

	p = fr_two(200);
	q = fr_three(300);
	fail(p);
	free(q);
	free(p);

	p = fr_four(400);
	fail(p);
	q = fr_five(500);
	free(p);
	free(q);
	return 0;
}
