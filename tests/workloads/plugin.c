// SPDX-License-Identifier: MIT
/* A library loaded with dlopen after recording started: its allocations must resolve. */
#include <stdlib.h>

static void *volatile kept[16];
static int nkept;

__attribute__((noinline)) void plugin_alloc(size_t n)
{
	kept[nkept++ % 16] = malloc(n);
}
