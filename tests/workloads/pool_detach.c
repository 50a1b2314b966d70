// SPDX-License-Identifier: MIT
/* Sampled blocks that outlive an injected session (t_inject_pool_detach): libheapsnap.so
 * places them on pages of its own laid out as glibc's mmapped chunks (libheapsnap/
 * pool.c), and once the library has detached glibc itself must realloc and free them.
 *
 * Rounds, one per "keep" line on the FIFO (fifo_rounds.h):
 *   odd:  pool_keep mallocs 16 blocks of 1 MiB and fills them, then prints "kept N mmapped
 *         M", M glibc's own count of mmapped bytes (mallinfo2): under 16 MiB when the pool
 *         holds some of the blocks (sampled at 256 KiB, each with a probability of 1 - e^-4).
 *   even: reallocs the first 4 up to 2 MiB and the next 4 down to 256 KiB (glibc remaps an
 *         mmapped chunk in place to shrink it), checks every byte kept, frees all 16, then mallocs
 *         and frees 64 blocks of 1 MiB more (glibc reusing what it unmapped), and prints
 *         "released N".
 * Exits 1 on any byte lost, 9 at "exit". */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fifo_rounds.h"

#define MIB (1024u * 1024u)
static unsigned char *blocks[16];

static void churn(void)
{
	free(malloc(100));
}

__attribute__((noinline)) static void pool_keep(int n)
{
	for (int i = 0; i < 16; i++) {
		blocks[i] = malloc(MIB);
		if (!blocks[i])
			exit(1);
		memset(blocks[i], i + n, MIB);
	}
	printf("kept %d mmapped %zu\n", n, mallinfo2().hblkhd);
}

__attribute__((noinline)) static void pool_release(int n)
{
	for (int i = 0; i < 8; i++) {
		size_t keep = i < 4 ? MIB : MIB / 4;
		unsigned char *p = realloc(blocks[i], i < 4 ? 2 * MIB : MIB / 4);

		if (!p)
			exit(1);
		for (size_t j = 0; j < keep; j++)
			if (p[j] != (unsigned char)(i + n - 1)) {
				fprintf(stderr, "pool_detach: block %d lost byte %zu across realloc\n", i, j);
				exit(1);
			}
		blocks[i] = p;
	}
	for (int i = 8; i < 16; i++)
		for (size_t j = 0; j < MIB; j += 4096)
			if (blocks[i][j] != (unsigned char)(i + n - 1)) {
				fprintf(stderr, "pool_detach: block %d changed\n", i);
				exit(1);
			}
	for (int i = 0; i < 16; i++)
		free(blocks[i]);
	for (int i = 0; i < 64; i++) {
		void *p = malloc(MIB);

		if (!p)
			exit(1);
		memset(p, 1, MIB);
		free(p);
	}
	printf("released %d\n", n);
}

static void round_(int n)
{
	if (n & 1)
		pool_keep(n);
	else
		pool_release(n);
}

int main(int argc, char **argv)
{
	return fifo_rounds("pool_detach", argc, argv, churn, round_, 9);
}
