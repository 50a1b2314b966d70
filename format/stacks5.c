// SPDX-License-Identifier: MIT
/* Stacks as the tails of others (stacks5.h). Both sides put a tail's frames in the same
 * order, outermost first, position t counted from the outermost frame (0) inward, and take
 * each own frame as its difference from a frame both have: the base's frame at the same
 * position, where the base is that deep (the calls the two paths make from where they part
 * are often near each other: two lines of one function, two offsets of one Python code),
 * else the frame just outside it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hmap.h"
#include "stacks5.h"

/* ---- the writer's tree ---- */

/* A node is a frame at a position under its parent. `owner` is the stack whose writing made
 * it; that stack's deeper frames are the chain of first_child from it, since a stack makes
 * all its nodes below the point where it leaves the tree, or none. */
struct tree_node {
	uint64_t ip, owner;
	uint32_t first_child; /* the owner's next frame inward; 0: the owner ends here */
};

/* Keys of the tree's table: (parent node, ip) for a node, (IDS, id) for a stack id written. */
#define IDS UINT64_MAX

struct stack_tree {
	struct hmap map;
	struct tree_node *nodes; /* [0] is the root, above every outermost frame */
	uint32_t nr, cap;
};

int stack_tree__new(struct stack_tree **out)
{
	struct stack_tree *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->nr = 1;
	t->cap = 1024;
	t->nodes = calloc(t->cap, sizeof(*t->nodes));
	if (!t->nodes) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void stack_tree__free(struct stack_tree *t)
{
	if (!t)
		return;
	hmap_free(&t->map);
	free(t->nodes);
	free(t);
}

/* Ids are kept only while the tree may grow, and the tree grows only while ids are kept: an
 * id not kept makes no node, so no tail names it, and a second stack of it cannot be mistaken
 * for the first. Stacks alike in every frame make ids and no nodes: both are bounded. */
static bool full(const struct stack_tree *t)
{
	return t->nr >= HS_STACK_TREE_NODES || t->map.nr >= 2 * HS_STACK_TREE_NODES;
}

static int add_nodes(struct stack_tree *t, uint64_t id, const uint64_t *ips, uint32_t nr, uint32_t from,
		     uint32_t parent)
{
	uint32_t need = t->nr + (nr - from);

	if (need > HS_STACK_TREE_NODES || full(t))
		return 0;
	if (need > t->cap) {
		uint32_t cap = t->cap;
		struct tree_node *n;

		while (cap < need)
			cap *= 2;
		if (cap > HS_STACK_TREE_NODES)
			cap = HS_STACK_TREE_NODES;
		n = realloc(t->nodes, sizeof(*n) * cap);
		if (!n)
			return -ENOMEM;
		t->nodes = n;
		t->cap = cap;
	}
	for (uint32_t pos = from; pos < nr; pos++) {
		uint64_t ip = ips[nr - 1 - pos];
		struct hmap_slot *s = hmap_put(&t->map, parent, ip, NULL);

		if (!s)
			return -ENOMEM;
		s->val = t->nr;
		t->nodes[t->nr] = (struct tree_node){.ip = ip, .owner = id};
		if (pos > from)
			t->nodes[parent].first_child = t->nr;
		parent = t->nr++;
	}
	return 0;
}

int stack_tree__note(struct stack_tree *t, uint64_t id)
{
	struct hmap_slot *s;
	bool created;

	if (full(t))
		return 1;
	s = hmap_put(&t->map, IDS, id, &created);
	return !s ? -ENOMEM : created;
}

int stack_tree__encode(struct stack_tree *t, uint64_t id, const uint64_t *ips, uint32_t nr, uint64_t *d,
		       struct hs_record *tail)
{
	uint32_t node = 0, shared = 0, base_next;
	struct hmap_slot *s;
	/* An id written twice is written whole, and stays out of the tree: the reader keeps
	 * the first stack of an id, so a tail must never name the second. (Once the tree is
	 * full an id is not looked for: the second may then be a tail, of a stack the reader
	 * has, and no later tail names it, as no node is made.) */
	int err = stack_tree__note(t, id);

	if (err <= 0)
		return err;
	while (shared < nr && (s = hmap_find(&t->map, node, ips[nr - 1 - shared]))) {
		node = (uint32_t)s->val;
		shared++;
	}
	if (!shared)
		return add_nodes(t, id, ips, nr, 0, 0);

	*tail = (struct hs_record){.type = HS_REC_STACK_TAIL}; /* the writer sets skip */
	tail->stack_tail.id = id;
	tail->stack_tail.back = id - t->nodes[node].owner;
	tail->stack_tail.shared = shared;
	tail->stack_tail.nr = nr - shared;
	tail->stack_tail.d = d;
	base_next = t->nodes[node].first_child;
	for (uint32_t pos = shared; pos < nr; pos++) {
		uint64_t ref = base_next ? t->nodes[base_next].ip : ips[nr - pos];

		d[pos - shared] = ips[nr - 1 - pos] - ref;
		base_next = base_next ? t->nodes[base_next].first_child : 0;
	}
	err = add_nodes(t, id, ips, nr, shared, node);

	return err ? err : 1;
}

/* ---- the reader's store ---- */

struct stored {
	uint64_t off; /* in frames[] */
	uint32_t nr;
};

struct stack_store {
	struct hmap ids; /* id -> index in stacks[] + 1 */
	struct stored *stacks;
	size_t nr_stacks, cap_stacks;
	uint64_t *frames;
	size_t nr_frames, cap_frames;
	uint64_t last_id; /* of the last STACK or tail read: a tail's id follows it */
	uint64_t scratch[HS_MAX_STACK_FRAMES];
};

int stack_store__new(struct stack_store **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void stack_store__reset(struct stack_store *s)
{
	hmap_free(&s->ids);
	s->nr_stacks = s->nr_frames = 0;
	s->last_id = 0;
}

void stack_store__free(struct stack_store *s)
{
	if (!s)
		return;
	hmap_free(&s->ids);
	free(s->stacks);
	free(s->frames);
	free(s);
}

/* Keeps NR frames of stack ID (the caller checked the id is new); *at: where they are. */
static const char *keep(struct stack_store *s, uint64_t id, const uint64_t *ips, uint32_t nr, uint64_t file_bytes,
			const uint64_t **at, int *err)
{
	bool created;
	struct hmap_slot *slot;

	if (s->nr_frames + nr > HS_STACK_FRAMES_FLOOR + HS_STACK_FRAMES_PER_FILE_BYTE * file_bytes)
		return "the stacks so far hold more frames than 2^22 and 1024 a byte of the file before them";

	if (hs_grow((void **)&s->frames, &s->cap_frames, s->nr_frames + nr, sizeof(*s->frames), 256) ||
	    hs_grow((void **)&s->stacks, &s->cap_stacks, s->nr_stacks + 1, sizeof(*s->stacks), 256) ||
	    !(slot = hmap_put(&s->ids, id, 0, &created))) {
		*err = -ENOMEM;
		return "out of memory keeping the stacks";
	}
	memcpy(s->frames + s->nr_frames, ips, sizeof(*ips) * nr);
	s->stacks[s->nr_stacks] = (struct stored){.off = s->nr_frames, .nr = nr};
	slot->val = ++s->nr_stacks;
	*at = s->frames + s->nr_frames;
	s->nr_frames += nr;
	return NULL;
}

const char *stack_store__add(struct stack_store *s, const struct hs_record *rec, uint64_t file_bytes, int *err)
{
	const uint64_t *at;

	s->last_id = rec->stack.id;
	if (hmap_find(&s->ids, rec->stack.id, 0))
		return NULL;
	return keep(s, rec->stack.id, rec->stack.ips, rec->stack.nr, file_bytes, &at, err);
}

const char *stack_store__resolve(struct stack_store *s, struct hs_record *rec, uint32_t max_frames, uint64_t file_bytes,
				 int *err)
{
	uint64_t id = s->last_id + 1 + rec->stack_tail.skip, base_id = id - rec->stack_tail.back;
	uint32_t shared = rec->stack_tail.shared, own = rec->stack_tail.nr, nr = shared + own;
	struct hmap_slot *slot = hmap_find(&s->ids, base_id, 0);
	const uint64_t *base, *at;
	const struct stored *b;
	uint64_t *f = s->scratch;

	s->last_id = id;
	if (!slot)
		return "its base is no stack read before it";
	b = &s->stacks[slot->val - 1];
	if (shared < 1 || shared > b->nr)
		return "it shares no frame of its base, or more than its base has";
	if (nr > max_frames)
		return "stack deeper than the session's max_stack";
	base = s->frames + b->off;
	/* f[] innermost first, as every stack: position pos is f[nr - 1 - pos]. */
	memcpy(f + own, base + (b->nr - shared), sizeof(*f) * shared);
	for (uint32_t pos = shared; pos < nr; pos++) {
		uint64_t ref = pos < b->nr ? base[b->nr - 1 - pos] : f[nr - pos];

		f[nr - 1 - pos] = ref + rec->stack_tail.d[pos - shared];
	}
	*rec = (struct hs_record){.type = HS_REC_STACK, .stack = {.id = id, .nr = nr, .ips = f}};
	if (hmap_find(&s->ids, id, 0))
		return NULL;
	const char *why = keep(s, id, f, nr, file_bytes, &at, err);

	if (!why)
		rec->stack.ips = at;
	return why;
}
