/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_DECODER_H
#define HEAPSNAP_DECODER_H
#include <stdbool.h>
#include <stdint.h>

#include "record.h"

/* An allocation or free, as the replay needs it: the hot fields of a struct hs_record. */
struct replay_event {
	uint64_t time, slot, size, stack_id, weight;
	uint32_t type, pid, tid, kind;
};

/* One record in file order: an event, or a metadata record (its pointers valid until the
 * next call). OFFSET: how far into the file the reader is, for progress. */
struct decoded {
	const struct replay_event *ev;
	const struct hs_record *meta;
	uint64_t offset;
	bool batch_end; /* the last record of its batch: the next call reuses the batch's memory */
};

/* Decodes a record file on a thread of its own, a batch of events ahead of the replay,
 * so that decompressing and decoding overlap with applying. The reader is the thread's
 * until decoder__free(). */
struct decoder;

int decoder__start(struct record_reader *rd, struct decoder **out);
/* Returns 1 with *OUT filled, 0 at the end of the records, or record_reader__next()'s
 * negative error. */
int decoder__next(struct decoder *d, struct decoded *out);
/* Stops the thread, if running, and frees D. Accepts NULL. */
void decoder__free(struct decoder *d);
#endif
