/* SPDX-License-Identifier: MIT */
/* A symbolized profile built from a replay: what every output format reads. */
#ifndef HEAPSNAP_PROFILE_H
#define HEAPSNAP_PROFILE_H
#include <stdint.h>
#include <stdio.h>

#include "replay.h"
#include "symbolize.h"
#include "dwarf_unwind.h"

enum { V_ALLOC_OBJECTS, V_ALLOC_SPACE, V_INUSE_OBJECTS, V_INUSE_SPACE, V__COUNT };

struct prof_line {
	const char *function, *system_name, *file; /* owned by the symbolizer (or the replay's Python codes); may be NULL */
	uint32_t line;
	uint32_t start_line; /* the function's first line, where known (Python functions) */
};

struct prof_loc {
	uint64_t addr; /* the looked-up address: return address - 1; a Python frame's tagged entry as is */
	const struct mapping *map; /* NULL for a Python frame */
	uint32_t pid; /* of the process it is in: a location is one process's */
	int module;
	uint32_t first_line, nr_lines;
	/* A Python frame (HS_IS_PYFRAME): one line, the Python function's, whose system_name is
	 * "qualname (file.py)", the name reports show (a qualified name alone is not unique:
	 * every module has a <module>). */
	bool python;
};

struct prof_sample {
	uint32_t pid, tid;
	uint32_t agg; /* the replay's aggregate it was made from */
	uint64_t size;
	uint32_t first_loc, nr_locs; /* into loc_refs, leaf first */
	double v[V__COUNT];
	double var[V__COUNT]; /* sampled recordings: each value's estimated variance */
};

struct profile {
	struct replay *r;
	struct symbolizer *sym;
	struct prof_sample *samples;
	uint32_t nr_samples;
	struct prof_loc *locs;
	uint32_t nr_locs;
	uint32_t *loc_refs;
	uint32_t nr_loc_refs;
	struct prof_line *lines;
	uint32_t nr_lines;
	double total[V__COUNT];
	double total_var[V__COUNT];
	uint64_t missing_stacks;
	uint64_t cut_frames; /* frames dropped after a walk left the executable mappings */
	struct unwinder *unw; /* created on the first --stack dwarf capture */
};

/* 0, or -ENOMEM with P left empty (profile__free is still safe). */
int profile__build(struct profile *p, struct replay *r, struct symbolizer *sym);
/* The frames of stack ID in PID, return addresses innermost first: a recorded frame list,
 * or a --stack dwarf capture unwound (once) on demand. */
const uint64_t *profile__stack(const struct profile *p, uint32_t pid, uint64_t id, uint32_t *nr);
/* What a report groups stacks by: a hash of the frames. A stack copy (--stack dwarf, or
 * --stack auto's fallback) has an id of its own, as its bytes differ: copies and frame lists
 * of the same frames are one stack. */
uint64_t profile__stack_key(const struct profile *p, uint32_t pid, uint64_t id);
void profile__free(struct profile *p);
/* A frame's display name: the function, or module+0xOFFSET, or the address. Writes into BUF. */
const char *profile__line_name(const struct profile *p, const struct prof_loc *l, const struct prof_line *ln,
			       char *buf, size_t len);
int value_index(const char *name);
extern const char *const value_names[V__COUNT];
#endif
