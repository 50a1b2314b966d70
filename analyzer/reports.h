/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_REPORTS_H
#define HEAPSNAP_REPORTS_H
#include <stdbool.h>
#include <stdio.h>

#include "profile.h"

/* Each returns 0 or -errno (-EIO: the output could not be written). */
struct report_opts {
	bool json;
	int value;     /* V_* */
	int nodecount; /* 0: all rows */
	double min_age; /* leaks, seconds */
	bool no_symbolize; /* pprof: addresses only */
	const char *file_label;
};

int report_collapsed(const struct profile *p, const struct report_opts *o, FILE *out);
int report_top(const struct profile *p, const struct report_opts *o, FILE *out);
int report_summary(const struct profile *p, const struct report_opts *o, FILE *out);
int report_leaks(const struct profile *p, const struct report_opts *o, FILE *out);
int report_stats(const struct profile *p, const struct report_opts *o, FILE *out);
int report_info(const struct replay *r, const struct report_opts *o, FILE *out);
int report_timeline(const struct replay *r, const struct report_opts *o, FILE *out);
int report_temporary(const struct profile *p, const struct report_opts *o, FILE *out);
int report_speedscope(const struct profile *p, const struct report_opts *o, FILE *out);
struct diff_rows;
struct gate_verdict;
/* The diff of A and B as its rows T, with the gate's verdict V when there is a gate. */
int report_diff(const struct diff_rows *t, const struct replay *a, const struct replay *b,
		const struct gate_verdict *v, const struct report_opts *o, FILE *out);
void report_gate_line(const struct diff_rows *t, const struct gate_verdict *v, const struct report_opts *o,
		      FILE *out);

/* Shared with the HTML emitter. */
struct jsonw;
/* The timeline's points, snapshots and peak, as members of the object W is in. */
void report_timeline_json(struct jsonw *w, const struct replay *r);
const char *report_sampling_text(const struct replay *r);
const char *report_snapshot_origin(uint32_t origin);
#endif
