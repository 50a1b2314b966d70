/* SPDX-License-Identifier: MIT */
/* A small JSON writer, as bpftool's jsonw: it places the commas, so no emitter formats JSON
 * by hand. In HTML mode strings also escape '<', '>' and '&', so that a name from a crafted
 * recording cannot end the <script> element the data sits in. */
#ifndef HEAPSNAP_JSONW_H
#define HEAPSNAP_JSONW_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSONW_MAX_DEPTH 16

struct jsonw {
	FILE *f;
	bool html;
	int depth;
	bool more[JSONW_MAX_DEPTH]; /* a value was written at this depth: the next needs a comma */
};

void jsonw__init(struct jsonw *w, FILE *f, bool html);
/* KEY is the member name inside an object, NULL inside an array or at the top. */
void jsonw__obj_begin(struct jsonw *w, const char *key);
void jsonw__obj_end(struct jsonw *w);
void jsonw__arr_begin(struct jsonw *w, const char *key);
void jsonw__arr_end(struct jsonw *w);
void jsonw__str(struct jsonw *w, const char *key, const char *s);
/* A figure rounded to a whole number (bytes, counts, estimates). */
void jsonw__count(struct jsonw *w, const char *key, double v);
void jsonw__u64(struct jsonw *w, const char *key, uint64_t v);
void jsonw__i64(struct jsonw *w, const char *key, int64_t v);
/* Seconds, to the microsecond. */
void jsonw__secs(struct jsonw *w, const char *key, double v);
void jsonw__bool(struct jsonw *w, const char *key, bool v);
/* A number in the shortest form that keeps it: whole numbers without a fraction. */
void jsonw__num(struct jsonw *w, const char *key, double v);
#endif
