/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_REPORTS_H
#define HEAPSNAP_REPORTS_H
#include <stdbool.h>
#include <stdio.h>

#include "profile.h"

struct report_opts {
	bool json;
	int value;     /* V_* */
	int nodecount; /* 0: all rows */
	double min_age; /* leaks, seconds */
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
int report_diff(const struct profile *a, const struct profile *b, const struct report_opts *o, FILE *out);
#endif
