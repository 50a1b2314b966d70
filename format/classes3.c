// SPDX-License-Identifier: MIT
/* The frame's live allocations by class, for version 4's FREE by class (classes3.h). */
#include <errno.h>
#include <stdlib.h>

#include "classes3.h"
#include "hmap.h"

#define NONE UINT32_MAX

int hs3_classes__init(struct hs3_classes *c)
{
	c->node = calloc(HS3_CLASS_WINDOW, sizeof(*c->node));
	c->member = calloc(HS3_CLASS_WINDOW, sizeof(*c->member));
	c->hash = calloc(HS3_CLASS_HASH, sizeof(*c->hash));
	c->gen = 1;
	c->nr = 0;
	return c->node && c->member && c->hash ? 0 : -ENOMEM;
}

void hs3_classes__fini(struct hs3_classes *c)
{
	free(c->node);
	free(c->member);
	free(c->hash);
	c->node = NULL;
	c->member = NULL;
	c->hash = NULL;
}

/* Entries of an earlier frame are told by their generation: nothing is cleared. */
void hs3_classes__reset(struct hs3_classes *c)
{
	c->nr = 0;
	c->next_n = 0;
	if (++c->gen == 0) {
		for (uint32_t i = 0; i < HS3_CLASS_WINDOW; i++)
			c->node[i].gen = 0;
		for (uint32_t i = 0; i < HS3_CLASS_HASH; i++)
			c->hash[i].gen = 0;
		c->gen = 1;
	}
}

static uint32_t class_home(uint32_t pid, uint32_t tid, uint32_t pair, uint32_t tno)
{
	/* Seeded: a file's threads could otherwise be chosen to share one home (hmap.c). */
	return (uint32_t)hmap_hash((uint64_t)pid << 32 | tid, (uint64_t)pair << 32 | tno) & (HS3_CLASS_HASH - 1);
}

/* The class's entry, made when CREATE and there is room (at most HS3_CLASS_WINDOW of the
 * HS3_CLASS_HASH entries are used: a probe always ends). NONE when absent. */
static uint32_t class_find(struct hs3_classes *c, uint32_t pid, uint32_t tid, uint32_t pair, uint32_t tno,
			   bool create)
{
	for (uint32_t i = class_home(pid, tid, pair, tno);; i = (i + 1) & (HS3_CLASS_HASH - 1)) {
		struct hs3_class *k = &c->hash[i];

		if (k->gen != c->gen) {
			if (!create || c->nr == HS3_CLASS_WINDOW)
				return NONE;
			*k = (struct hs3_class){.tno = tno, .gen = c->gen, .pid = pid, .tid = tid, .pair = pair};
			c->nr++;
			return i;
		}
		if (k->pid == pid && k->tid == tid && k->pair == pair && k->tno == tno)
			return i;
	}
}

/* The node of the indexed block in SLOT, or NULL. An entry naming an allocation outside the
 * window (a free of a block from long ago, or an entry of an earlier frame) is turned away
 * before its node is read: with a large heap that node is a cache miss. */
static struct hs3_node *member_node(const struct hs3_classes *c, uint64_t slot)
{
	uint32_t n = c->member[slot & (HS3_CLASS_WINDOW - 1)];
	struct hs3_node *x;

	if (n >= c->next_n || c->next_n - n > HS3_CLASS_WINDOW)
		return NULL;
	x = &c->node[n & (HS3_CLASS_WINDOW - 1)];
	return x->gen == c->gen && x->n == n && x->slot == slot && x->cls != NONE ? x : NULL;
}

static void unlink_node(struct hs3_classes *c, struct hs3_node *x)
{
	struct hs3_class *k = &c->hash[x->cls];

	if (x->prev)
		c->node[(x->prev - 1) & (HS3_CLASS_WINDOW - 1)].next = x->next;
	if (x->next)
		c->node[(x->next - 1) & (HS3_CLASS_WINDOW - 1)].prev = x->prev;
	else
		k->head = x->prev;
	k->members--;
	x->cls = NONE;
}

void hs3_classes__alloc(struct hs3_classes *c, uint64_t n, uint64_t slot, uint32_t pid, uint32_t tid, int32_t pair,
			uint64_t tno)
{
	struct hs3_node *x = &c->node[n & (HS3_CLASS_WINDOW - 1)], *y;
	uint32_t m = c->member[slot & (HS3_CLASS_WINDOW - 1)];
	uint32_t cls;

	/* The allocation a window back leaves; so does the block this slot held (its free was
	 * lost), or the one whose slot shares its entry. */
	if (x->gen == c->gen && x->cls != NONE)
		unlink_node(c, x);
	y = &c->node[m & (HS3_CLASS_WINDOW - 1)];
	if (y->gen == c->gen && y->n == m && y->cls != NONE &&
	    ((y->slot ^ slot) & (HS3_CLASS_WINDOW - 1)) == 0) /* not an entry left from an earlier frame */
		unlink_node(c, y);
	c->member[slot & (HS3_CLASS_WINDOW - 1)] = (uint32_t)n;
	c->next_n = (uint32_t)n + 1;
	*x = (struct hs3_node){.slot = slot, .n = (uint32_t)n, .gen = c->gen, .cls = NONE};
	if (pair < 0 || (cls = class_find(c, pid, tid, (uint32_t)pair, (uint32_t)tno, true)) == NONE)
		return;
	x->cls = cls;
	x->prev = c->hash[cls].head;
	if (x->prev)
		c->node[(x->prev - 1) & (HS3_CLASS_WINDOW - 1)].next = (uint32_t)n + 1;
	c->hash[cls].head = (uint32_t)n + 1;
	c->hash[cls].members++;
}

void hs3_classes__free(struct hs3_classes *c, uint64_t slot)
{
	struct hs3_node *x = member_node(c, slot);

	if (x)
		unlink_node(c, x);
}

bool hs3_classes__pick(const struct hs3_classes *c, uint32_t pid, uint32_t tid, uint32_t pair, uint64_t tno,
		       uint64_t *slot)
{
	uint32_t cls = tno > UINT32_MAX ? NONE : class_find((struct hs3_classes *)c, pid, tid, pair, (uint32_t)tno, false);

	if (cls == NONE || !c->hash[cls].head)
		return false;
	*slot = c->node[(c->hash[cls].head - 1) & (HS3_CLASS_WINDOW - 1)].slot;
	return true;
}

bool hs3_classes__of(const struct hs3_classes *c, uint64_t slot, struct hs3_class *k, uint64_t *head_slot)
{
	const struct hs3_node *x = member_node(c, slot);

	if (!x)
		return false;
	*k = c->hash[x->cls];
	*head_slot = c->node[(k->head - 1) & (HS3_CLASS_WINDOW - 1)].slot;
	return true;
}
