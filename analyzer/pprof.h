/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_PPROF_H
#define HEAPSNAP_PPROF_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "buildid.h"
#include "profile.h"

struct pprof_builder;

struct pprof_mapping {
	uint64_t start, limit, offset;
	const char *filename, *build_id;
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct pprof_label {
	const char *key;
	const char *str; /* a string label when set, else numeric */
	int64_t num;
	const char *num_unit;
};

struct pprof_builder *pprof_builder__new(const char *const *types, const char *const *units, int n,
					 const char *period_type, const char *period_unit, int64_t period);
int64_t pprof_builder__string(struct pprof_builder *b, const char *s);
void pprof_builder__set_default_type(struct pprof_builder *b, const char *type);
void pprof_builder__set_time(struct pprof_builder *b, int64_t time_ns, int64_t duration_ns);
void pprof_builder__add_comment(struct pprof_builder *b, const char *text);
uint64_t pprof_builder__add_mapping(struct pprof_builder *b, const struct pprof_mapping *m);
uint64_t pprof_builder__function(struct pprof_builder *b, const char *name, const char *system_name,
				 const char *file);
uint64_t pprof_builder__add_location(struct pprof_builder *b, uint64_t mapping_id, uint64_t address,
				     const uint64_t *function_ids, const int64_t *lines, int nr_lines);
void pprof_builder__add_sample(struct pprof_builder *b, const uint64_t *locs, int nr_locs, const int64_t *values,
			       const struct pprof_label *labels, int nr_labels);
/* Serializes and gzips the profile to OUT. */
int pprof_builder__write(struct pprof_builder *b, FILE *out);
void pprof_builder__free(struct pprof_builder *b);

struct pprof_opts {
	bool no_symbolize;
	const char *snapshot_desc;
};

int pprof_write_profile(const struct profile *p, const struct pprof_opts *o, FILE *out);
#endif
