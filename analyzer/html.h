/* SPDX-License-Identifier: MIT */
/* The HTML report: one self-contained file (the page in analyzer/report.html, built into the
 * program, with the recording's data and tables filled in). Made from two replays: the first
 * finds the time range, snapshots and peak; html__plan picks the moments to keep from it; the
 * second replays with those moments as checkpoints, where html__checkpoint keeps the live heap
 * of each, and is the profile html__write reports the end from. */
#ifndef HEAPSNAP_HTML_H
#define HEAPSNAP_HTML_H
#include <stdio.h>

#include "profile.h"
#include "reports.h"

struct html;

/* Moments from a replay of the whole file with its timeline: evenly spread over the
 * recording, every snapshot (at most HTML_MAX_SNAPSHOTS, evenly chosen), the peak and the
 * end. Fills T's checkpoint fields for the second replay. Returns 0 or -errno. */
int html__plan(const struct replay *first, struct replay_target *t, struct html **out);
/* The replay_target checkpoint callback: keeps the aggregates' values at moment I. */
void html__checkpoint(const struct replay *r, uint32_t i, void *ctx);
/* Writes the report of P (the second replay's profile, at its end). */
int html__write(struct html *h, const struct profile *p, const struct report_opts *o, FILE *out);
void html__free(struct html *h);
#endif
