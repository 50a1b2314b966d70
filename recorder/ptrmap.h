/* SPDX-License-Identifier: MIT */
/* The recorder's live set: (pid, address) -> slot. Every allocation and free does one
 * lookup here, so entries are 16 bytes (four to a cache line) and the table stays at most
 * half full. The hash is the tables' seeded one (hmap.h): with one multiply, addresses that
 * differ only in their high bits shared a home whatever the seed, and a traced program's
 * own allocator chooses its addresses. Address 0 marks an empty entry: a failed allocation
 * is never recorded. */
#ifndef HEAPSNAP_PTRMAP_H
#define HEAPSNAP_PTRMAP_H
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "hmap.h"

struct ptrmap_ent {
	uint64_t ptr;
	uint32_t pid;
	uint32_t val;
};

struct ptrmap {
	struct ptrmap_ent *e;
	size_t mask, nr;
};

static inline size_t ptrmap_home(const struct ptrmap *m, uint32_t pid, uint64_t ptr)
{
	return (size_t)hmap_hash(ptr, pid) & m->mask;
}

static inline struct ptrmap_ent *ptrmap_find(const struct ptrmap *m, uint32_t pid, uint64_t ptr)
{
	if (!m->e)
		return NULL;
	for (size_t i = ptrmap_home(m, pid, ptr);; i = (i + 1) & m->mask) {
		struct ptrmap_ent *x = &m->e[i];

		if (!x->ptr)
			return NULL;
		if (x->ptr == ptr && x->pid == pid)
			return x;
	}
}

static inline int ptrmap_grow(struct ptrmap *m)
{
	size_t ocap = m->e ? m->mask + 1 : 0, ncap = ocap ? ocap * 2 : 4096;
	struct ptrmap_ent *old = m->e, *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	m->e = n;
	m->mask = ncap - 1;
	for (size_t i = 0; i < ocap; i++) {
		size_t j;

		if (!old[i].ptr)
			continue;
		for (j = ptrmap_home(m, old[i].pid, old[i].ptr); n[j].ptr; j = (j + 1) & m->mask)
			;
		n[j] = old[i];
	}
	free(old);
	return 0;
}

/* The entry for (PID, PTR), added with value 0 when absent (*CREATED says which);
 * NULL when out of memory. PTR must not be 0. */
static inline struct ptrmap_ent *ptrmap_put(struct ptrmap *m, uint32_t pid, uint64_t ptr, bool *created)
{
	size_t i;

	if ((m->nr + 1) * 2 > (m->e ? m->mask + 1 : 0) && ptrmap_grow(m))
		return NULL;
	for (i = ptrmap_home(m, pid, ptr); m->e[i].ptr; i = (i + 1) & m->mask) {
		if (m->e[i].ptr == ptr && m->e[i].pid == pid) {
			*created = false;
			return &m->e[i];
		}
	}
	m->e[i] = (struct ptrmap_ent){.ptr = ptr, .pid = pid};
	m->nr++;
	*created = true;
	return &m->e[i];
}

/* Backward-shift deletion: no tombstones under any amount of churn. */
static inline void ptrmap_remove(struct ptrmap *m, struct ptrmap_ent *x)
{
	size_t i = (size_t)(x - m->e), j = i;

	for (;;) {
		j = (j + 1) & m->mask;
		if (!m->e[j].ptr)
			break;
		size_t home = ptrmap_home(m, m->e[j].pid, m->e[j].ptr);

		/* Move j back to i unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->e[i] = m->e[j];
			i = j;
		}
	}
	m->e[i].ptr = 0;
	m->nr--;
}

static inline void ptrmap_free(struct ptrmap *m)
{
	free(m->e);
	m->e = NULL;
	m->mask = m->nr = 0;
}
#endif
