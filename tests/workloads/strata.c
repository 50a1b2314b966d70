// SPDX-License-Identifier: MIT
/* The sampler's draws, one from the next: `strata M` makes 256 stacks, each by a path of 8
 * calls through zero() and one() that spells its number in binary, and each allocates M
 * blocks of 1000 bytes in a row, keeps them, then frees them. Sampled, each stack's count of
 * samples is then one of 256 counts over M back-to-back allocations: independent draws give
 * them Poisson's spread (t_sampler_strata), draws that follow one another a wider one. */
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define LEVELS 8

static long m = 2000;
static void **blocks;

NOINLINE static void stratum(void)
{
	for (long i = 0; i < m; i++) {
		blocks[i] = malloc(1000);
		memset(blocks[i], 1, 64);
	}
	for (long i = 0; i < m; i++)
		free(blocks[i]);
}

NOINLINE void zero(unsigned bits, int n);
NOINLINE void one(unsigned bits, int n);

/* Each works after its call: no tail call for the compiler to turn into a jump. */
static volatile unsigned sink;
#define DESCEND(bits, n)                                       \
	do {                                                   \
		if (n == 0)                                    \
			stratum();                             \
		else if (bits & 1)                             \
			one(bits >> 1, n - 1);                 \
		else                                           \
			zero(bits >> 1, n - 1);                \
		sink = bits;                                   \
	} while (0)

NOINLINE void zero(unsigned bits, int n) { DESCEND(bits, n); }
NOINLINE void one(unsigned bits, int n) { DESCEND(bits, n); }

int main(int argc, char **argv)
{
	if (argc > 1)
		m = atol(argv[1]);
	if (m < 1 || !(blocks = malloc((size_t)m * sizeof(*blocks))))
		return 2;
	for (unsigned s = 0; s < 1u << LEVELS; s++)
		zero(s, LEVELS);
	free(blocks);
	return 0;
}
