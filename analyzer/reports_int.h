/* SPDX-License-Identifier: MIT */
/* What the text and JSON emitters (reports.c, reports_recording.c) share. */
#ifndef HEAPSNAP_REPORTS_INT_H
#define HEAPSNAP_REPORTS_INT_H
#include <stdbool.h>
#include <stdio.h>

#include "jsonw.h"
#include "reports.h"

/* ERR, or -EIO when OUT had a write error. */
int report_finish(FILE *out, int err);
/* Every report says when events were lost: its figures lack what those events held. */
void report_text_losses(FILE *out, const struct replay *r);
/* The opening every JSON report shares: the file, optionally the stop, the losses. */
void report_json_head(struct jsonw *w, const struct replay *r, const char *file_label, bool snapshot);
void report_json_tail(struct jsonw *w);
#endif
