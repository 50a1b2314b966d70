// SPDX-License-Identifier: MIT
/* libheapsnap.so, which blocks were sampled: the table a free looks its block up in, the
 * filter in front of it that turns away frees of blocks never sampled, and the switch that
 * lets hooks pass calls by while sampling; one of each per shard of the address space
 * (shard_of). Only sampled events take a shard's lock. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "libheapsnap.h"

/* Sampled blocks live, for frees: a free of a block never sampled is turned away by one bit
 * of its shard's filter; a hit looks in the shard's exact table under its lock, which only
 * sampled events take. The table is open-addressed (linear probing from the block's bucket,
 * deletion by shifting the probe back, so no tombstones) and sized to the blocks live,
 * 2^TABLE_MIN_BITS slots and up, at most half full: a sample touches a line or two of a table
 * that stays in cache (16 KiB while few blocks are live), where one of 4 MiB cost a cache and
 * a TLB miss each. */
#define TABLE_MIN_BITS 10
struct sampled_ent {
	uint64_t ptr, size;
};
static struct shard {
	/* The first line, written at every sample; what the rest holds changes only when the
	 * table or the filter resizes. */
	int lock;
	uint32_t live;
	uint32_t table_bits;
	uint64_t filter_cur; /* the filter kept up to date, published in the filter word while sampling */
	struct sampled_ent *table, *spare; /* the spare is where the table moves to when it resizes */
	uint64_t *filters[SAMPLED_BUCKET_BITS + 1]; /* one per size, 2^k bits each */
} __attribute__((aligned(64))) shards[SAMPLED_SHARDS];
static bool filter_on;
/* A filter being built, for one shard at a time (build_lock, taken under the shard's). */
static uint64_t filter_next[(1u << SAMPLED_BUCKET_BITS) / 64];
static int build_lock;

void sampled_lock_all(void)
{
	for (uint32_t i = 0; i < SAMPLED_SHARDS; i++)
		spin_lock(&shards[i].lock);
}

void sampled_unlock_all(void)
{
	for (uint32_t i = SAMPLED_SHARDS; i-- > 0;)
		spin_unlock(&shards[i].lock);
}

/* The shard's filter word as published: its filter while frees may pass by. */
static void filter_publish(uint32_t i)
{
	__atomic_store_n(&hs_hot.fw[i], filter_on ? shards[i].filter_cur : 0, __ATOMIC_RELEASE);
}

static bool pass_wanted;
static int pass_lock;

/* Where the allocation hooks' pass-bys go (hs_pass), as pass_wanted and the real functions
 * say: called by fast_path, and by resolve_from once they are known. A constructor whose
 * resolve() found another thread resolving, and returned, asks to sample before the real
 * functions are there: their pass-bys then jump to the full paths, which would count the
 * countdown down a second time, until the other thread's resolve_from publishes them. Under
 * a lock, so that whichever of the two publishes last reads both. While Python's domains
 * wait to be wrapped, malloc_wait and calloc_wait instead of the real functions. */
void pass_publish(void)
{
	bool pass, wait;

	spin_lock(&pass_lock);
	wait = __atomic_load_n(&pymem_waiting, __ATOMIC_ACQUIRE) != 0;
	pass = pass_wanted && hs_hot.fns.malloc && hs_hot.fns.calloc;
	__atomic_store_n(&hs_hot.pass.malloc, pass ? wait ? malloc_wait : hs_hot.fns.malloc : malloc_full,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&hs_hot.pass.calloc, pass ? wait ? calloc_wait : hs_hot.fns.calloc : calloc_full,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&hs_hot.passing, pass, __ATOMIC_RELEASE);
	spin_unlock(&pass_lock);
}

/* Sampling's fast path on (attached, sampling) or off: a hook then always takes the full path. */
void fast_path(bool on)
{
	__atomic_store_n(&pass_wanted, on, __ATOMIC_RELEASE);
	pass_publish();
	/* Frees pass by only while sampling: recording every event, each one is recorded. */
	sampled_lock_all();
	filter_on = on && !boot_in_use();
	pool_switch(filter_on);
	for (uint32_t i = 0; i < SAMPLED_SHARDS; i++)
		filter_publish(i);
	sampled_unlock_all();
}

/* Under shard I's lock: its filter of 2^K bits, built from its table, published. It is built
 * apart and copied in a word at a time, never cleared first: a free that read the filter word
 * while this size was last in use, and was preempted before reading its bit, may read this
 * array now, after a shrink and a grow back. Its block, live all along, has its bit in the
 * old words and in the new, so no word it can read lacks it. */
static void filter_build(uint32_t i, uint32_t k)
{
	struct shard *sh = &shards[i];
	uint64_t *f = sh->filters[k];
	uint32_t mask = (1u << k) - 1;
	size_t words = ((size_t)1 << k) / 64;

	spin_lock(&build_lock);
	memset(filter_next, 0, words * sizeof(*f));
	for (uint32_t s = 0; s < 1u << sh->table_bits; s++) {
		uint32_t b;

		if (!sh->table[s].ptr)
			continue;
		b = bucket((const void *)(uintptr_t)sh->table[s].ptr) & mask;
		filter_next[b >> 6] |= 1ull << (b & 63);
	}
	for (size_t w = 0; w < words; w++)
		if (f[w] != filter_next[w])
			__atomic_store_n(&f[w], filter_next[w], __ATOMIC_RELAXED);
	spin_unlock(&build_lock);
	sh->filter_cur = filter_word_make(f, k);
	filter_publish(i);
}

/* Under shard I's lock: a filter of about 128 bits per live block (under 1% of frees of blocks
 * never sampled then look in the table, under its lock), changed by halves or doubles, and
 * never of fewer bits than the table has slots (filter_clear relies on it). */
static void filter_fit(uint32_t i)
{
	struct shard *sh = &shards[i];
	uint32_t k = (uint32_t)__builtin_ctzll((sh->filter_cur & ((1u << FILTER_WMASK_BITS) - 1)) + 1) + 6, want = k;

	while (want < SAMPLED_BUCKET_BITS && (uint64_t)sh->live * 128 > (1ull << want))
		want++;
	while (want > FILTER_MIN_BITS && (uint64_t)sh->live * 512 < (1ull << want))
		want--;
	if (want < sh->table_bits)
		want = sh->table_bits;
	if (want != k)
		filter_build(i, want);
}

/* Under the shard's lock: bucket B holds a block. Only writers holding the lock change a
 * filter: a plain store publishes the word, and a bit already set is not written again, since
 * each write costs every other core that reads the line a miss. */
static void filter_set(struct shard *sh, uint32_t b)
{
	uint32_t bit;
	uint64_t *f = filter_word_at(sh->filter_cur, b, &bit);

	if (!(*f >> bit & 1))
		__atomic_store_n(f, *f | 1ull << bit, __ATOMIC_RELEASE);
}

/* Under the shard's lock: bucket B lost a block, whose slot the table has emptied. Its bit
 * clears unless another block shares it. The filter has at least as many bits as the table
 * slots (filter_fit), so such a block has the same home slot, B's: it lies in the probe run
 * from there, which linear probing keeps unbroken and the table's load keeps short. No count
 * per bit is kept: it would be one more line that each sample writes. */
static void filter_clear(struct shard *sh, uint32_t b)
{
	uint32_t m = (1u << sh->table_bits) - 1, i, bit;
	/* the filter's mask of buckets */
	uint32_t fm = (uint32_t)(sh->filter_cur & ((1u << FILTER_WMASK_BITS) - 1)) << 6 | 63;
	uint64_t *f = filter_word_at(sh->filter_cur, b, &bit);

	for (i = b & m; sh->table[i].ptr; i = (i + 1) & m)
		if (((bucket((const void *)(uintptr_t)sh->table[i].ptr) ^ b) & fm) == 0)
			return;
	__atomic_store_n(f, *f & ~(1ull << bit), __ATOMIC_RELEASE);
}

/* Before taking the shard's lock for P: the lock's line, and those of P's slot and filter
 * word, fetched for writing at once, so that a sample waits for one round trip to the core
 * that last wrote them rather than one after another under the lock. The table and the
 * filter may change meanwhile: a stale guess only costs a wasted prefetch. */
static void sampled_prefetch(struct shard *sh, const void *p)
{
	uint32_t b = bucket(p), m = (1u << __atomic_load_n(&sh->table_bits, __ATOMIC_RELAXED)) - 1, bit;

	__builtin_prefetch(&sh->lock, 1);
	__builtin_prefetch(&__atomic_load_n(&sh->table, __ATOMIC_RELAXED)[b & m], 1);
	__builtin_prefetch(filter_word_at(__atomic_load_n(&sh->filter_cur, __ATOMIC_RELAXED), b, &bit), 1);
}

/* Under the shard's lock: its table moved into the spare at 2^BITS slots, which becomes the
 * table. Grown when half full, shrunk when a sixteenth: each resize comes a number of adds or
 * takes proportional to its size after the last one. */
static void table_resize(struct shard *sh, uint32_t bits)
{
	struct sampled_ent *t = sh->spare;
	uint32_t m = (1u << bits) - 1, old = 1u << sh->table_bits;

	memset(t, 0, ((size_t)m + 1) * sizeof(*t));
	for (uint32_t k = 0; k < old; k++) {
		uint32_t i;

		if (!sh->table[k].ptr)
			continue;
		for (i = bucket((const void *)(uintptr_t)sh->table[k].ptr) & m; t[i].ptr; i = (i + 1) & m)
			;
		t[i] = sh->table[k];
	}
	sh->spare = sh->table;
	sh->table = t;
	sh->table_bits = bits;
}

/* Under the shard's lock: slot I emptied, and the entries after it in its run moved back so
 * that every one stays reachable from its bucket without a tombstone: an entry may fill the
 * hole unless its bucket lies (cyclically) after the hole and no later than the entry itself. */
static void table_delete(struct shard *sh, uint32_t i)
{
	struct sampled_ent *t = sh->table;
	uint32_t m = (1u << sh->table_bits) - 1;

	for (uint32_t j = (i + 1) & m; t[j].ptr; j = (j + 1) & m) {
		uint32_t k = bucket((const void *)(uintptr_t)t[j].ptr) & m;

		if (j > i ? k <= i || k > j : k <= i && k > j) {
			t[i] = t[j];
			i = j;
		}
	}
	t[i] = (struct sampled_ent){0, 0};
}

/* Remembers a sampled block. False when its shard's table is full (counted as the live map's). */
bool sampled_add(void *p, uint64_t size)
{
	uint32_t si = shard_of(p);
	struct shard *sh = &shards[si];
	bool ok = false;

	sampled_prefetch(sh, p);
	spin_lock(&sh->lock);
	if ((sh->live + 1) * 2 > 1u << sh->table_bits && sh->table_bits < SAMPLED_BUCKET_BITS)
		table_resize(sh, sh->table_bits + 1);
	if (sh->live < SAMPLED_SLOTS / 2) {
		uint32_t m = (1u << sh->table_bits) - 1, i;

		for (i = bucket(p) & m; sh->table[i].ptr; i = (i + 1) & m)
			;
		sh->table[i] = (struct sampled_ent){(uint64_t)(uintptr_t)p, size};
		sh->live++;
		filter_set(sh, bucket(p));
		filter_fit(si);
		ok = true;
	}
	spin_unlock(&sh->lock);
	if (!ok)
		count(HS_CNT_LIVE_FULL);
	return ok;
}

/* A sampled block's size, forgotten; 0 if P was not sampled. */
uint64_t sampled_take(void *p)
{
	uint32_t si = shard_of(p), m, i;
	struct shard *sh = &shards[si];
	uint64_t size = 0;

	if (LIKELY(!sampled_maybe(p)))
		return 0;
	sampled_prefetch(sh, p);
	spin_lock(&sh->lock);
	m = (1u << sh->table_bits) - 1;
	for (i = bucket(p) & m; sh->table[i].ptr; i = (i + 1) & m) {
		if (sh->table[i].ptr == (uint64_t)(uintptr_t)p) {
			size = sh->table[i].size;
			table_delete(sh, i);
			sh->live--;
			filter_clear(sh, bucket(p));
			filter_fit(si);
			if (sh->table_bits > TABLE_MIN_BITS && (uint64_t)sh->live * 16 < 1u << sh->table_bits)
				table_resize(sh, sh->table_bits - 1);
			break;
		}
	}
	spin_unlock(&sh->lock);
	return size;
}

/* A new session knows none of the blocks an earlier one sampled. */
void sampled_clear(void)
{
	for (uint32_t i = 0; i < SAMPLED_SHARDS; i++) {
		struct shard *sh = &shards[i];

		spin_lock(&sh->lock);
		sh->table_bits = TABLE_MIN_BITS;
		memset(sh->table, 0, ((size_t)1 << sh->table_bits) * sizeof(*sh->table));
		sh->live = 0;
		filter_build(i, FILTER_MIN_BITS);
		spin_unlock(&sh->lock);
	}
}

/* Each shard's table at its largest and its filters of every size past the least (which is
 * in hs_hot), mapped once at start-up (events_init): a resize never allocates. Only the pages
 * used are ever touched, so the reservation is address space (MAP_NORESERVE), not memory.
 * -ENOMEM when they cannot be mapped, or lie too high for a filter word. */
int sampled_init(void)
{
	size_t fb = 0, tb = SAMPLED_SLOTS * sizeof(struct sampled_ent), off;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	uint8_t *fm, *tm;

	/* Each filter on a page of its own, or pages: 2^13 to 2^18 bits. */
	for (uint32_t k = FILTER_MIN_BITS + 1; k <= SAMPLED_BUCKET_BITS; k++)
		fb += (((size_t)1 << k) / 8 + 4095) & ~(size_t)4095;
	fm = mmap(NULL, SAMPLED_SHARDS * fb, PROT_READ | PROT_WRITE, flags, -1, 0);
	tm = mmap(NULL, SAMPLED_SHARDS * 2 * tb, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (fm == MAP_FAILED || tm == MAP_FAILED ||
	    ((uintptr_t)fm + SAMPLED_SHARDS * fb) >> (64 - FILTER_WMASK_BITS) != 0 ||
	    (uintptr_t)(&hs_hot + 1) >> (64 - FILTER_WMASK_BITS) != 0) {
		if (fm != MAP_FAILED)
			munmap(fm, SAMPLED_SHARDS * fb);
		if (tm != MAP_FAILED)
			munmap(tm, SAMPLED_SHARDS * 2 * tb);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < SAMPLED_SHARDS; i++) {
		struct shard *sh = &shards[i];

		sh->filters[FILTER_MIN_BITS] = hs_hot.filter_min[i];
		off = i * fb;
		for (uint32_t k = FILTER_MIN_BITS + 1; k <= SAMPLED_BUCKET_BITS; k++) {
			sh->filters[k] = (uint64_t *)(fm + off);
			off += (((size_t)1 << k) / 8 + 4095) & ~(size_t)4095;
		}
		sh->table = (struct sampled_ent *)(tm + 2 * i * tb);
		sh->spare = (struct sampled_ent *)(tm + (2 * i + 1) * tb);
		sh->table_bits = TABLE_MIN_BITS;
		filter_build(i, FILTER_MIN_BITS);
	}
	return 0;
}
