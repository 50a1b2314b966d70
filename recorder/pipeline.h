/* SPDX-License-Identifier: MIT */
/* Events into records: stacks, the live set, counters, snapshots, RSS. */
#ifndef HEAPSNAP_PIPELINE_H
#define HEAPSNAP_PIPELINE_H
#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct session;

/* Counters for one COUNTERS or END record. */
struct counter_set {
	struct hs_counter *items;
	uint32_t n, cap;
};
void counter_set__add(struct counter_set *c, const char *name, uint64_t v);

int handle_event(struct session *s, const void *data, size_t len);
void read_counters(struct session *s);
void write_counters(struct session *s, uint32_t type);
void warn_losses(struct session *s);
/* A SNAPSHOT record now; PID the process it marks, 0 for the whole recording. */
void snapshot(struct session *s, uint32_t origin, const char *label, uint64_t t, uint32_t pid);
void sample_rss(struct session *s);
void pipeline_free(struct session *s);
#endif
