// SPDX-License-Identifier: MIT
/* A free preempted inside libheapsnap's free hook, between its load of the filter word and
 * its load of the block's bit, held for as long as a thread pleases: a reader thread keeps
 * the filter word it read at the start (an array of 2^12 bits) and reads one live block's bit
 * through it, over and over, while the main thread makes the library's filter grow to 2^13
 * bits and shrink back to 2^12, which rebuilds the array that word names. The block stays
 * live throughout, so its bit must read set every time: a rebuild that clears the array
 * before refilling it shows the bit clear, and that free would have gone unrecorded.
 *
 * Run sampled at a mean of 1 byte (every block sampled), preloaded; argument: hs_hot's
 * offset in libheapsnap.so (nm). Prints the reads, those that found the bit clear, and the
 * rebuilds seen; exits 2 when the library or its filter is not where it should be. */
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libheapsnap.h"

#define CYCLES 3000
#define GROW 40 /* live blocks past 32 (4096 / 128) grow the filter; under 16 shrink it */

static uintptr_t lib_base;
static const uint64_t *word;
static uint32_t bit;
static int stop;
static unsigned long reads, clear;

static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (info->dlpi_name && strstr(info->dlpi_name, "libheapsnap.so")) {
		lib_base = info->dlpi_addr;
		return 1;
	}
	return 0;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		__atomic_store_n(&reads, reads + 1, __ATOMIC_RELAXED);
		if (!(__atomic_load_n(word, __ATOMIC_ACQUIRE) >> bit & 1))
			clear++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct hs_hot *hot;
	void *block, *more[GROW];
	uint64_t w, w_now;
	unsigned long grown = 0, back = 0;
	pthread_t t;

	if (argc != 2)
		return 2;
	dl_iterate_phdr(find_lib, NULL);
	if (!lib_base) {
		fprintf(stderr, "filter_reader: libheapsnap.so is not loaded\n");
		return 2;
	}
	hot = (struct hs_hot *)(lib_base + strtoull(argv[1], NULL, 16));
	block = malloc(48);
	w = __atomic_load_n(&hot->fw[shard_of(block)], __ATOMIC_ACQUIRE);
	if (!w || (w & ((1u << FILTER_WMASK_BITS) - 1)) != (1u << (FILTER_MIN_BITS - 6)) - 1) {
		fprintf(stderr, "filter_reader: the filter word is %#llx, not the least filter's\n", (unsigned long long)w);
		return 2;
	}
	if (!filter_maybe(w, block)) {
		fprintf(stderr, "filter_reader: the live block's bit is clear before any rebuild\n");
		return 2;
	}
	word = filter_word_at(w, bucket(block), &bit);
	if (pthread_create(&t, NULL, reader, NULL))
		return 2;
	for (int c = 0; c < CYCLES; c++) {
		for (int i = 0; i < GROW; i++)
			more[i] = malloc(48);
		w_now = __atomic_load_n(&hot->fw[shard_of(block)], __ATOMIC_ACQUIRE);
		grown += w_now != w;
		/* On a machine busy with other work, the reader may not be running: the shrink
		 * waits until it is seen reading, so that it reads while the array is rebuilt. */
		for (unsigned long r = __atomic_load_n(&reads, __ATOMIC_RELAXED); r == __atomic_load_n(&reads, __ATOMIC_RELAXED);)
			sched_yield();
		for (int i = 0; i < GROW; i++)
			free(more[i]);
		w_now = __atomic_load_n(&hot->fw[shard_of(block)], __ATOMIC_ACQUIRE);
		back += w_now == w;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	printf("reads %lu clear %lu grown %lu back %lu\n", reads, clear, grown, back);
	free(block);
	return 0;
}
