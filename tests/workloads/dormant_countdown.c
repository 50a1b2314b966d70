// SPDX-License-Identifier: MIT
/* A countdown left to run down while the library is dormant (t_inject_after_preload): the
 * process was launched preloaded and sampled at 1 GiB, its recorder has ended, and its calls
 * still reach the hooks. Rounds 1 and 2 ("keep") each spend 20 GiB in blocks of 100 KiB
 * (dormant_spend): past any countdown, since the sampler draws from 1024 quantiles of the
 * exponential, at 1 GiB from about 0.5 MiB to 7.6 GiB. Attached, that is 2 samples or more
 * for certain; dormant, the hooks record nothing and the countdown runs out. Round 3
 * allocates one such block (dormant_probe), kept: attached again at 1 GiB, no countdown
 * drawn for that session is under 100 KiB, so only one stuck at the size of the blocks the
 * dormant calls passed by samples it. Prints "round N"; exits 7 at "exit". */
#include <stdint.h>
#include <stdlib.h>

#include "fifo_rounds.h"

#define BLOCK (100u << 10)
#define SPEND (20ull << 30)

static void *volatile kept;

static void churn(void)
{
	void *volatile p = malloc(100);

	free(p);
}

__attribute__((noinline)) static void dormant_spend(void)
{
	for (uint64_t n = 0; n < SPEND; n += BLOCK) {
		void *volatile p = malloc(BLOCK);

		free(p);
	}
}

__attribute__((noinline)) static void dormant_probe(void)
{
	kept = malloc(BLOCK);
}

static void round_of(int n)
{
	if (n <= 2)
		dormant_spend();
	else
		dormant_probe();
	printf("round %d\n", n);
}

int main(int argc, char **argv)
{
	return fifo_rounds("dormant_countdown", argc, argv, churn, round_of, 7);
}
