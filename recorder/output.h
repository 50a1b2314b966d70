/* SPDX-License-Identifier: MIT */
/* The recorder's base layer: what every part of it uses and nothing of it is above. The file being
 * written (and the first error writing it), the clock records are stamped with, warnings on
 * stderr, and the names of the counters the producers keep. Nothing here knows a way in, a
 * process or an event. */
#ifndef HEAPSNAP_OUTPUT_H
#define HEAPSNAP_OUTPUT_H
#include <stdbool.h>
#include <stdint.h>

#include "record.h"

/* A record's time is in ticks of TICK_NS since the session's start. */
#define TICK_NS 1000ull

struct record_writer;

struct output {
	struct record_writer *w;
	const char *path;    /* -o, for messages */
	uint64_t mono_start; /* CLOCK_MONOTONIC ns at tick 0 */
	bool header_written; /* the SESSION record is out: later records go straight to the file */
	int err;             /* the first fatal error, -errno: nothing is written after it */
};

void rec_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t mono_ns(void);
uint64_t ticks(const struct output *out, uint64_t ns);
/* Writes R unless an error came first; the first error is kept in OUT->err and said. */
void write_rec(struct output *out, const struct hs_record *r);

/* The producers' counters (BPF's map, libheapsnap's shared memory), by enum hs_counter. */
extern const char *const counter_names[HS_CNT__MAX];
#endif
