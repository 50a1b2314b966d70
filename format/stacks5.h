/* SPDX-License-Identifier: MIT */
/* Version 5's stacks as the tails of others (docs/FORMAT.md, Stack tails). A program's call
 * paths share their outer frames: Python's stacks, whose interpreter frames and Python frames
 * run 60 deep, differ in three frames on average. The writer keeps a tree of the stacks it
 * wrote, outermost frame at the root, and writes a new one as an earlier stack's outer frames
 * and its own inner ones; the reader keeps every stack it read, to put them back together.
 * A tail spans frames, as slots do: a reader starts at the file's first frame. */
#ifndef HEAPSNAP_STACKS5_H
#define HEAPSNAP_STACKS5_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* The writer's tree stops growing here (19 MiB at most, with its table of twice as many
 * entries): stacks after it still share the outer frames it holds. A json dump and load of a
 * 200,000-entry dict by python3 made 74,464 nodes, its 23,243 stacks' 1.4 million frames. */
#define HS_STACK_TREE_NODES (1u << 17)

struct stack_tree;

int stack_tree__new(struct stack_tree **out);
void stack_tree__free(struct stack_tree *t);
/* Stack ID of NR frames IPS, innermost first: fills TAIL (its d from D, room for NR items) and
 * returns 1 when it is to be written as a tail, 0 when whole (no frame shared, or an id
 * written before); -ENOMEM. Either way the stack is one the tree knows from then on. */
int stack_tree__encode(struct stack_tree *t, uint64_t id, const uint64_t *ips, uint32_t nr, uint64_t *d,
		       struct hs_record *tail);

/* A stack ID written by other means (a STACK_TAIL the caller made): the tree makes no tail
 * of a later stack of that id. 1 if it is new, 0 if written before, -ENOMEM. */
int stack_tree__note(struct stack_tree *t, uint64_t id);

struct stack_store;

int stack_store__new(struct stack_store **out);
void stack_store__free(struct stack_store *s);
/* Forgets every stack (the reader is rewound). */
void stack_store__reset(struct stack_store *s);
/* The frames the store keeps, at most: 2^22, and 1024 for each byte of the file read so far.
 * A tail of 127 frames takes 6 bytes, the same 6 bytes each time, which zstd packs to nothing:
 * without this a file of 264 bytes made the reader ask for 222 MB. Python's JSON run keeps
 * 3 frames a byte of its file, a program whose stacks all differ in one frame of 127 could keep
 * 60: a real recording is far from it. */
#define HS_STACK_FRAMES_FLOOR (1ull << 22)
#define HS_STACK_FRAMES_PER_FILE_BYTE 1024ull

/* Keeps the frames of HS_REC_STACK REC unless its id was read before (the first is kept, as
 * the analyzer keeps it); FILE_BYTES, the file's bytes up to the end of the frame being read.
 * NULL, or why not: why the file is bad, or *err -ENOMEM. */
const char *stack_store__add(struct stack_store *s, const struct hs_record *rec, uint64_t file_bytes, int *err);
/* Turns HS_REC_STACK_TAIL REC into the HS_REC_STACK it stands for, its frames in the store (or
 * in the store's scratch when its id was read before), valid until the next call. NULL, or
 * why the file is bad (*err -ENOMEM when it is memory). */
const char *stack_store__resolve(struct stack_store *s, struct hs_record *rec, uint32_t max_frames, uint64_t file_bytes,
				 int *err);

#endif
