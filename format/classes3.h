/* SPDX-License-Identifier: MIT */
/* Version 4's FREE by class (docs/FORMAT.md, Frees by class): the frame's live allocations
 * indexed by what the analyzer can tell apart, their thread, their (size, stack, kind, weight)
 * pair and their TIME record. Blocks of one class are alike in every report: a free names the
 * class and the block is its newest member, which the writer makes true by swapping the
 * names of two blocks of the class (hs3_writer). A random free then costs its pair and its
 * time, as in heaptrack's files, not the ten bits or more that tell one live block among a
 * thousand.
 *
 * Both sides keep this index alike after every event. It is bounded: the last
 * HS3_CLASS_WINDOW allocations of the frame, at most HS3_CLASS_WINDOW classes, a slot table
 * of HS3_CLASS_WINDOW entries; and reset at every frame by a generation, not a clear. */
#ifndef HEAPSNAP_CLASSES3_H
#define HEAPSNAP_CLASSES3_H

#include <stdbool.h>
#include <stdint.h>

#define HS3_CLASS_WINDOW (1u << 16)
#define HS3_CLASS_HASH (2 * HS3_CLASS_WINDOW)

/* An allocation of the frame, at its number n modulo the window. Numbers within a frame fit
 * 32 bits: a frame holds at most HS_MAX_FRAME_RAW bytes, an event at least one. Kept small,
 * as every event looks here: 32 bytes a node, 28 a class. */
struct hs3_node {
	uint64_t slot;
	uint32_t n;
	uint32_t prev, next; /* neighbours' n + 1, older and newer; 0: none */
	uint32_t gen, cls;   /* cls: its class's entry, or UINT32_MAX: not a member */
};

struct hs3_class {
	uint32_t tno;  /* the TIME record's number in the frame */
	uint32_t head; /* the newest member's n + 1; 0: none live */
	uint32_t gen, pid, tid, pair;
	uint32_t members; /* live */
};

struct hs3_classes {
	struct hs3_node *node;   /* HS3_CLASS_WINDOW */
	uint32_t *member;        /* HS3_CLASS_WINDOW, at slot % window: the n of its block */
	struct hs3_class *hash;  /* HS3_CLASS_HASH */
	uint32_t gen, nr;        /* the frame's generation; classes made in it */
	uint32_t next_n;         /* the frame's allocations so far */
};

int hs3_classes__init(struct hs3_classes *c);
void hs3_classes__fini(struct hs3_classes *c);
void hs3_classes__reset(struct hs3_classes *c); /* at every frame */
/* Allocation N of the frame took SLOT, by thread (PID, TID), with pair PAIR of the frame's
 * table (-1: a literal pair, not indexed) in the frame's TIME record TNO. Whatever block
 * was indexed under SLOT, or at N's place in the window, leaves the index. */
void hs3_classes__alloc(struct hs3_classes *c, uint64_t n, uint64_t slot, uint32_t pid, uint32_t tid, int32_t pair,
			uint64_t tno);
void hs3_classes__free(struct hs3_classes *c, uint64_t slot);
/* The newest live block of class (PID, TID, PAIR, TNO): its slot, or false. */
bool hs3_classes__pick(const struct hs3_classes *c, uint32_t pid, uint32_t tid, uint32_t pair, uint64_t tno,
		       uint64_t *slot);
/* The class of the block in SLOT, if it is indexed (its thread, pair and TIME record's
 * number in K), and the slot of the class's newest member. */
bool hs3_classes__of(const struct hs3_classes *c, uint64_t slot, struct hs3_class *k, uint64_t *head_slot);

#endif
