// SPDX-License-Identifier: MIT
/* A program that links an allocator of its own (libcountalloc.so, tests/workloads/countalloc.c,
 * found through a SysV hash table only): attached to, the hooks must pass its calls to that
 * allocator, as its own calls went before, not to glibc's.
 *
 * Usage: linked_alloc FIFO. Prints "ready PID"; a thread churns 64-byte blocks all along. Each
 * line "keep" on FIFO runs linked_keep, which keeps 4 x 2222 = 8888 bytes (malloc) and frees
 * one block of 3333 it allocated first (linked_temp), then prints "kept R calls C": R the
 * round, C the calls libcountalloc.so saw from this thread meanwhile (5 mallocs and 1 free:
 * 6 when they reach it). "exit" ends it with status 6. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fifo_rounds.h"

#define NOINLINE __attribute__((noinline))

unsigned long countalloc_thread_calls(void);

static void *volatile kept[1 << 12];
static unsigned nkept;
static void *volatile sink; /* a block stored here escapes: its malloc and free stay calls */

NOINLINE void linked_temp(void)
{
	sink = malloc(3333);
	memset(sink, 3, 3333);
	free(sink);
}

NOINLINE void linked_keep(void)
{
	linked_temp();
	for (int i = 0; i < 4; i++)
		kept[nkept++ % (1 << 12)] = malloc(2222);
}

NOINLINE void linked_churn(void)
{
	sink = malloc(64);
	memset(sink, 1, 64);
	free(sink);
}

/* One round, with the allocator calls the linked allocator saw this thread make in it. */
static void linked_round(int n)
{
	unsigned long c0 = countalloc_thread_calls();

	linked_keep();
	printf("kept %d calls %lu\n", n, countalloc_thread_calls() - c0);
}

int main(int argc, char **argv)
{
	return fifo_rounds("linked_alloc", argc, argv, linked_churn, linked_round, 6);
}
