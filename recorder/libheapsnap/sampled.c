// SPDX-License-Identifier: MIT
/* libheapsnap.so, which blocks were sampled: the table a free looks its block up in, the
 * filter in front of it that turns away frees of blocks never sampled, and the switch that
 * lets hooks pass calls by while sampling. Only sampled events take its lock. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "libheapsnap.h"

/* Sampled blocks live, for frees: a free of a block never sampled is turned away by one bit
 * of the filter; a hit looks in the exact table under a lock, which only sampled events take.
 * The table is open-addressed (linear probing from the block's bucket, deletion by shifting
 * the probe back, so no tombstones) and sized to the blocks live, 2^TABLE_MIN_BITS slots and
 * up, at most half full: a sample touches a line or two of a table that stays in cache (16
 * KiB while few blocks are live), where one of 4 MiB cost a cache and a TLB miss each. */
#define TABLE_MIN_BITS 10
static uint64_t filter_cur; /* the filter kept up to date, published in filter_word while sampling */
static bool filter_on;
static uint64_t *filters[SAMPLED_BUCKET_BITS + 1]; /* one per size, 2^k bits each */
static uint64_t filter_next[(1u << SAMPLED_BUCKET_BITS) / 64]; /* a filter being built */
static struct sampled_ent {
	uint64_t ptr, size;
} *sampled, *sampled_spare; /* the spare is where the table is moved to when it resizes */
static uint32_t table_bits = TABLE_MIN_BITS;
/* Written at every sample, so on a cache line of their own: next to what every hook reads
 * (tls_slot, filter_word), each write would cost all the target's threads a miss. */
struct sampled_w sampled_w;

/* Sampling's fast path on (attached, sampling) or off: a hook then always takes the full path. */
void fast_path(bool on)
{
	__atomic_store_n(&tls_slot, on ? TLS_SLOT_LIVE : 0, __ATOMIC_RELEASE);
	/* Frees pass by only while sampling: recording every event, each one is recorded. */
	spin_lock(&sampled_lock);
	filter_on = on && !boot_in_use();
	__atomic_store_n(&filter_word, filter_on ? filter_cur : 0, __ATOMIC_RELEASE);
	spin_unlock(&sampled_lock);
}

/* Under sampled_lock: the filter of 2^K bits, built from the table, published. It is built
 * apart and copied in a word at a time, never cleared first: a free that read the filter word
 * while this size was last in use, and was preempted before reading its bit, may read this
 * array now, after a shrink and a grow back. Its block, live all along, has its bit in the
 * old words and in the new, so no word it can read lacks it. */
static void filter_build(uint32_t k)
{
	uint64_t *f = filters[k];
	uint32_t mask = (1u << k) - 1;
	size_t words = ((size_t)1 << k) / 64;

	memset(filter_next, 0, words * sizeof(*f));
	for (uint32_t s = 0; s < 1u << table_bits; s++) {
		uint32_t b;

		if (!sampled[s].ptr)
			continue;
		b = bucket((const void *)(uintptr_t)sampled[s].ptr) & mask;
		filter_next[b >> 6] |= 1ull << (b & 63);
	}
	for (size_t i = 0; i < words; i++)
		if (f[i] != filter_next[i])
			__atomic_store_n(&f[i], filter_next[i], __ATOMIC_RELAXED);
	filter_cur = (uint64_t)(uintptr_t)f | mask;
	__atomic_store_n(&filter_word, filter_on ? filter_cur : 0, __ATOMIC_RELEASE);
}

/* Under sampled_lock: a filter of about 128 bits per live block (under 1% of frees of blocks
 * never sampled then look in the table, under its lock), changed by halves or doubles, and
 * never of fewer bits than the table has slots (filter_clear relies on it). */
static void filter_fit(void)
{
	uint32_t k = (uint32_t)__builtin_ctzll((filter_cur & (FILTER_ALIGN - 1)) + 1), want = k;

	while (want < SAMPLED_BUCKET_BITS && (uint64_t)sampled_live * 128 > (1ull << want))
		want++;
	while (want > FILTER_MIN_BITS && (uint64_t)sampled_live * 512 < (1ull << want))
		want--;
	if (want < table_bits)
		want = table_bits;
	if (want != k)
		filter_build(want);
}

/* Under sampled_lock: bucket B holds a block. Only writers holding the lock change a filter:
 * a plain store publishes the word, and a bit already set is not written again, since each
 * write costs every other core that reads the line a miss. */
static void filter_set(uint32_t b)
{
	uint32_t bit;
	uint64_t *f = filter_word_at(filter_cur, b, &bit);

	if (!(*f >> bit & 1))
		__atomic_store_n(f, *f | 1ull << bit, __ATOMIC_RELEASE);
}

/* Under sampled_lock: bucket B lost a block, whose slot the table has emptied. Its bit clears
 * unless another block shares it. The filter has at least as many bits as the table slots
 * (filter_fit), so such a block has the same home slot, B's: it lies in the probe run from
 * there, which linear probing keeps unbroken and the table's load keeps short. No count per
 * bit is kept: it would be one more line that each sample writes. */
static void filter_clear(uint32_t b)
{
	uint32_t m = (1u << table_bits) - 1, fm = (uint32_t)(filter_cur & (FILTER_ALIGN - 1)), i, bit;
	uint64_t *f = filter_word_at(filter_cur, b, &bit);

	for (i = b & m; sampled[i].ptr; i = (i + 1) & m)
		if (((bucket((const void *)(uintptr_t)sampled[i].ptr) ^ b) & fm) == 0)
			return;
	__atomic_store_n(f, *f & ~(1ull << bit), __ATOMIC_RELEASE);
}

/* Before taking sampled_lock for P: the lock's line, and those of P's slot and filter word,
 * fetched for writing at once, so that a sample waits for one round trip to the core that
 * last wrote them rather than one after another under the lock. The table and the filter may
 * change meanwhile: a stale guess only costs a wasted prefetch. */
static void sampled_prefetch(const void *p)
{
	uint32_t b = bucket(p), m = (1u << __atomic_load_n(&table_bits, __ATOMIC_RELAXED)) - 1, bit;

	__builtin_prefetch(&sampled_lock, 1);
	__builtin_prefetch(&__atomic_load_n(&sampled, __ATOMIC_RELAXED)[b & m], 1);
	__builtin_prefetch(filter_word_at(__atomic_load_n(&filter_cur, __ATOMIC_RELAXED), b, &bit), 1);
}

/* Under sampled_lock: the table moved into the spare at 2^BITS slots, which becomes the table.
 * Grown when half full, shrunk when a sixteenth: each resize comes a number of adds or takes
 * proportional to its size after the last one. */
static void table_resize(uint32_t bits)
{
	struct sampled_ent *t = sampled_spare;
	uint32_t m = (1u << bits) - 1, old = 1u << table_bits;

	memset(t, 0, ((size_t)m + 1) * sizeof(*t));
	for (uint32_t k = 0; k < old; k++) {
		uint32_t i;

		if (!sampled[k].ptr)
			continue;
		for (i = bucket((const void *)(uintptr_t)sampled[k].ptr) & m; t[i].ptr; i = (i + 1) & m)
			;
		t[i] = sampled[k];
	}
	sampled_spare = sampled;
	sampled = t;
	table_bits = bits;
}

/* Under sampled_lock: slot I emptied, and the entries after it in its run moved back so that
 * every one stays reachable from its bucket without a tombstone: an entry may fill the hole
 * unless its bucket lies (cyclically) after the hole and no later than the entry itself. */
static void table_delete(uint32_t i)
{
	uint32_t m = (1u << table_bits) - 1;

	for (uint32_t j = (i + 1) & m; sampled[j].ptr; j = (j + 1) & m) {
		uint32_t k = bucket((const void *)(uintptr_t)sampled[j].ptr) & m;

		if (j > i ? k <= i || k > j : k <= i && k > j) {
			sampled[i] = sampled[j];
			i = j;
		}
	}
	sampled[i] = (struct sampled_ent){0, 0};
}

/* Remembers a sampled block. False when the table is full (counted as the live map's). */
bool sampled_add(void *p, uint64_t size)
{
	bool ok = false;

	sampled_prefetch(p);
	spin_lock(&sampled_lock);
	if ((sampled_live + 1) * 2 > 1u << table_bits && table_bits < SAMPLED_BUCKET_BITS)
		table_resize(table_bits + 1);
	if (sampled_live < SAMPLED_SLOTS / 2) {
		uint32_t m = (1u << table_bits) - 1, i;

		for (i = bucket(p) & m; sampled[i].ptr; i = (i + 1) & m)
			;
		sampled[i] = (struct sampled_ent){(uint64_t)(uintptr_t)p, size};
		sampled_live++;
		filter_set(bucket(p));
		filter_fit();
		ok = true;
	}
	spin_unlock(&sampled_lock);
	if (!ok)
		count(HS_CNT_LIVE_FULL);
	return ok;
}

/* A sampled block's size, forgotten; 0 if P was not sampled. */
uint64_t sampled_take(void *p)
{
	uint64_t size = 0;
	uint32_t m, i;

	if (LIKELY(!sampled_maybe(p)))
		return 0;
	sampled_prefetch(p);
	spin_lock(&sampled_lock);
	m = (1u << table_bits) - 1;
	for (i = bucket(p) & m; sampled[i].ptr; i = (i + 1) & m) {
		if (sampled[i].ptr == (uint64_t)(uintptr_t)p) {
			size = sampled[i].size;
			table_delete(i);
			sampled_live--;
			filter_clear(bucket(p));
			filter_fit();
			if (table_bits > TABLE_MIN_BITS && (uint64_t)sampled_live * 16 < 1u << table_bits)
				table_resize(table_bits - 1);
			break;
		}
	}
	spin_unlock(&sampled_lock);
	return size;
}

/* A new session knows none of the blocks an earlier one sampled. */
void sampled_clear(void)
{
	spin_lock(&sampled_lock);
	table_bits = TABLE_MIN_BITS;
	memset(sampled, 0, ((size_t)1 << table_bits) * sizeof(*sampled));
	sampled_live = 0;
	filter_build(FILTER_MIN_BITS);
	spin_unlock(&sampled_lock);
}

/* The table at its largest and every filter size, mapped once at start-up (events_init):
 * a resize never allocates. -ENOMEM when they cannot be mapped. */
int sampled_init(void)
{
	/* Every larger filter size at once, each on its boundary: a resize never allocates, and
	 * only the pages a filter uses are ever touched. */
	size_t nf = SAMPLED_BUCKET_BITS - FILTER_MIN_BITS;
	uint8_t *fm = mmap(NULL, (nf + 1) * FILTER_ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t fa = ((uintptr_t)fm + FILTER_ALIGN - 1) & ~(uintptr_t)(FILTER_ALIGN - 1);

	for (uint32_t k = FILTER_MIN_BITS + 1; fm != MAP_FAILED && k <= SAMPLED_BUCKET_BITS; k++)
		filters[k] = (uint64_t *)(fa + (k - FILTER_MIN_BITS - 1) * (size_t)FILTER_ALIGN);
	filters[FILTER_MIN_BITS] = hs_hot.filter_min;
	sampled = mmap(NULL, SAMPLED_SLOTS * sizeof(*sampled), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	sampled_spare = mmap(NULL, SAMPLED_SLOTS * sizeof(*sampled), PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fm == MAP_FAILED || sampled == MAP_FAILED || sampled_spare == MAP_FAILED)
		return -ENOMEM;
	filter_build(FILTER_MIN_BITS);
	return 0;
}
