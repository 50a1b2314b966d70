// SPDX-License-Identifier: MIT
/* The seed of every hash of keys that input chooses: a record file's ids, threads and
 * sizes, a traced process's addresses. Unseeded, keys that collide can be worked out ahead
 * of time and written into a small file, whose tables then probe or chain through all of
 * them on every lookup; drawn afresh by each run, nobody who writes the file knows it. */
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hmap.h"

uint64_t hmap_seed;

__attribute__((constructor)) static void hmap_seed_init(void)
{
	struct timespec ts;

	if (getrandom(&hmap_seed, sizeof(hmap_seed), GRND_NONBLOCK) == (ssize_t)sizeof(hmap_seed))
		return;
	/* No entropy yet (early boot): what a file's writer cannot know either. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	hmap_seed = ((uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid() << 16) *
		    0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&ts;
}
