// SPDX-License-Identifier: MIT
/* Record-level fuzzing: re-encodes a record file with fields replaced by random or extreme
 * values. The result is valid zstd and valid varints, so it gets past the frame checks and
 * reaches the analyzer's replay, symbolization and output code. Seed 0 mutates nothing:
 * the output is IN re-encoded by this version's writer, or by its encoding of version MAJOR
 * (2 to 5; the newest by default).
 * Usage: mutate IN OUT SEED [MAJOR] */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static uint64_t state;
static bool mutating;

static uint64_t rnd(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

/* A random value, biased to the edges where arithmetic breaks. */
static uint64_t wild(uint64_t orig)
{
	switch (rnd() % 8) {
	case 0: return 0;
	case 1: return UINT64_MAX;
	case 2: return UINT64_MAX / 2 + 1;
	case 3: return orig + 1;
	case 4: return orig - 1;
	case 5: return rnd() & 0xffff;
	default: return rnd();
	}
}

#define MAYBE(field) do { if (rnd() % 6 == 0) (field) = (__typeof__(field))wild((uint64_t)(field)); } while (0)

int main(int argc, char **argv)
{
	struct record_reader *r;
	struct record_writer *w;
	struct hs_record rec;
	uint64_t ips[HS_MAX_STACK_FRAMES];
	char err[256];

	struct record_writer_opts o = {0};

	if (argc != 4 && argc != 5)
		return 2;
	state = strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
	mutating = state != 1;
	if (argc == 5)
		o.major = (uint32_t)atoi(argv[4]);
	if (record_reader__open(argv[1], &r, err, sizeof(err)) || record_writer__open(argv[2], &o, &w)) {
		fprintf(stderr, "mutate: %s\n", err);
		return 1;
	}
	while (record_reader__next(r, &rec) == 1) {
		/* A version 1 free of an address never allocated: version 2 files leave it out. */
		if (rec.type == HS_REC_FREE && rec.free.slot == HS_SLOT_NONE)
			continue;
		if (mutating && rnd() % 4 == 0) {
			MAYBE(rec.time);
			MAYBE(rec.pid);
			MAYBE(rec.tid);
			switch (rec.type) {
			case HS_REC_ALLOC:
			case HS_REC_ALLOC_SAMPLED:
				MAYBE(rec.alloc.slot);
				MAYBE(rec.alloc.size);
				MAYBE(rec.alloc.stack_id);
				MAYBE(rec.alloc.weight);
				MAYBE(rec.alloc.kind);
				break;
			case HS_REC_FREE:
				MAYBE(rec.free.slot);
				break;
			case HS_REC_MAPPING:
				MAYBE(rec.mapping.start);
				MAYBE(rec.mapping.offset);
				if (rec.mapping.end < rec.mapping.start)
					rec.mapping.end = rec.mapping.start;
				break;
			case HS_REC_STACK:
				MAYBE(rec.stack.id);
				memcpy(ips, rec.stack.ips, sizeof(uint64_t) * rec.stack.nr);
				for (uint32_t i = 0; i < rec.stack.nr; i++)
					MAYBE(ips[i]);
				rec.stack.ips = ips;
				break;
			case HS_REC_SESSION:
				MAYBE(rec.session.sample_rate);
				if (rnd() % 2)
					rec.session.tick_ns = 1 + (rnd() % 3) * 999;
				break;
			case HS_REC_SNAPSHOT:
				MAYBE(rec.snapshot.origin);
				break;
			}
		}
		if (rec.type == HS_REC_FRAME_INDEX)
			continue;
		if (record_writer__write(w, &rec))
			break;
	}
	record_writer__close(w);
	record_writer__free(w);
	record_reader__free(r);
	return 0;
}
