// SPDX-License-Identifier: MIT
/* A non-PIE program (-no-pie -fno-pic) that takes the addresses of malloc, calloc, realloc
 * and free: the linker gives each a canonical PLT entry, an undefined dynamic symbol with a
 * value, so every module's lookup of "malloc" finds this program's PLT stub, a jump through
 * its own GOT entry. Debian's python3 and node are built so. tests/run.sh attaches to it
 * (heapsnap-record -p) again and again.
 *
 * Usage: canon_plt FIFO. Prints "ready PID"; a thread churns 64-byte blocks in canon_churn
 * all along (an injection loads at an allocator call). Each line "keep" on FIFO runs one
 * round, whose figures come from this source alone:
 *
 *   function       live after the round      allocated in the round
 *   canon_keep     9 x 3003 = 27027          27027 (malloc through a pointer to it)
 *   canon_calloc   2 x 4004 = 8008           8008 (calloc, called directly)
 *   canon_realloc  1 x 5005                  1001 + 5005 (malloc, then realloc)
 *   canon_temp     0                         3 x 6006 = 18018 (freed through a pointer)
 *
 * then prints "kept N" (N: the round's number). "exit" ends it with status 9. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fifo_rounds.h"

#define NOINLINE __attribute__((noinline))

/* Set in main's code: an address taken there, in code that is not PIC, is what makes the
 * entries canonical (one in initialized data would be a dynamic relocation instead). */
static void *(*volatile p_malloc)(size_t);
static void *(*volatile p_calloc)(size_t, size_t);
static void *(*volatile p_realloc)(void *, size_t);
static void (*volatile p_free)(void *);

static void *volatile kept[1 << 12];
static unsigned nkept;

static void park(void *p)
{
	if (!p)
		abort();
	kept[nkept++ % (1 << 12)] = p;
}

NOINLINE void canon_keep(void)
{
	for (int i = 0; i < 9; i++)
		park(p_malloc(3003));
}

NOINLINE void canon_calloc(void)
{
	for (int i = 0; i < 2; i++)
		park(calloc(1, 4004));
}

NOINLINE void canon_realloc(void)
{
	void *p = malloc(1001);

	park(p_realloc(p, 5005));
}

NOINLINE void canon_temp(void)
{
	void *v[3];

	for (int i = 0; i < 3; i++)
		v[i] = p_calloc(6006, 1);
	for (int i = 0; i < 3; i++)
		p_free(v[i]);
}

NOINLINE void canon_churn(void)
{
	void *p = p_malloc(64); /* through the pointers: a malloc and free the compiler sees pair up go */

	memset(p, 1, 64);
	p_free(p);
}

/* One round: what the test counts, each a size only this program asks for. */
static void canon_round(int n)
{
	canon_keep();
	canon_calloc();
	canon_realloc();
	canon_temp();
	printf("kept %d\n", n);
}

int main(int argc, char **argv)
{
	p_malloc = malloc;
	p_calloc = calloc;
	p_realloc = realloc;
	p_free = free;
	return fifo_rounds("canon_plt", argc, argv, canon_churn, canon_round, 9);
}
