/* SPDX-License-Identifier: MIT */
/* Open-addressing hash map from a 128-bit key to a 64-bit value, with backward-shift
 * deletion, so live sets with heavy churn never accumulate tombstones. */
#ifndef HEAPSNAP_HMAP_H
#define HEAPSNAP_HMAP_H
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct hmap_slot {
	uint64_t k1, k2, val;
	uint64_t used;
};

struct hmap {
	struct hmap_slot *s;
	size_t mask, nr;
};

/* Drawn at start-up (hmap.c): keys that input chooses cannot be made to collide. Xored into
 * the keys before they are multiplied, since with an added seed two keys' difference, and so
 * their collision, would not depend on it. */
extern uint64_t hmap_seed;

static inline uint64_t hmap_hash(uint64_t a, uint64_t b)
{
	uint64_t s2 = (hmap_seed >> 7 | hmap_seed << 57) ^ 0x632be59bd9b4e019ull; /* b's own seed */
	uint64_t h = (a ^ hmap_seed) * 0x9e3779b97f4a7c15ull ^ (b ^ s2) * 0xc2b2ae3d27d4eb4full;

	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ull;
	return h ^ (h >> 32);
}

/* A string's key for the maps (FNV-1a, from a seeded basis: names chosen to share one key
 * would chain): every table keyed by a name uses it, with the length as the second key. */
static inline uint64_t hmap_str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull ^ hmap_seed;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static inline void hmap_free(struct hmap *m)
{
	free(m->s);
	m->s = NULL;
	m->mask = m->nr = 0;
}

static inline struct hmap_slot *hmap_find(const struct hmap *m, uint64_t k1, uint64_t k2)
{
	if (!m->s)
		return NULL;
	for (size_t i = hmap_hash(k1, k2) & m->mask;; i = (i + 1) & m->mask) {
		struct hmap_slot *s = &m->s[i];

		if (!s->used)
			return NULL;
		if (s->k1 == k1 && s->k2 == k2)
			return s;
	}
}

static inline int hmap_grow(struct hmap *m)
{
	size_t ncap = m->s ? (m->mask + 1) * 2 : 64;
	struct hmap_slot *ns = calloc(ncap, sizeof(*ns)), *old = m->s;
	size_t ocap = m->s ? m->mask + 1 : 0;

	if (!ns)
		return -ENOMEM;
	m->s = ns;
	m->mask = ncap - 1;
	for (size_t i = 0; i < ocap; i++) {
		if (!old[i].used)
			continue;
		size_t j = hmap_hash(old[i].k1, old[i].k2) & m->mask;

		while (ns[j].used)
			j = (j + 1) & m->mask;
		ns[j] = old[i];
	}
	free(old);
	return 0;
}

/* Returns the slot for the key, inserting it with value 0 if absent (*created set). */
static inline struct hmap_slot *hmap_put(struct hmap *m, uint64_t k1, uint64_t k2, bool *created)
{
	size_t i;

	if ((m->nr + 1) * 10 > (m->s ? m->mask + 1 : 0) * 7 && hmap_grow(m))
		return NULL;
	for (i = hmap_hash(k1, k2) & m->mask;; i = (i + 1) & m->mask) {
		struct hmap_slot *s = &m->s[i];

		if (!s->used) {
			*s = (struct hmap_slot){.k1 = k1, .k2 = k2, .used = 1};
			m->nr++;
			if (created)
				*created = true;
			return s;
		}
		if (s->k1 == k1 && s->k2 == k2) {
			if (created)
				*created = false;
			return s;
		}
	}
}

static inline void hmap_remove_slot(struct hmap *m, struct hmap_slot *s)
{
	size_t i = (size_t)(s - m->s), j = i;

	for (;;) {
		j = (j + 1) & m->mask;
		if (!m->s[j].used)
			break;
		size_t home = hmap_hash(m->s[j].k1, m->s[j].k2) & m->mask;

		/* Move j back to i unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			m->s[i] = m->s[j];
			i = j;
		}
	}
	m->s[i].used = 0;
	m->nr--;
}

#define hmap_for_each(m, it) \
	for (struct hmap_slot *it = (m)->s; (m)->s && it <= &(m)->s[(m)->mask]; it++) \
		if (it->used)
#endif
