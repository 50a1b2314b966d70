// SPDX-License-Identifier: MIT
/* Writes a synthetic record file of N events for the analyzer benchmark: churn over a
 * constant live set of LIVE blocks, so peak memory must not depend on N.
 * Usage: genfile OUT EVENTS LIVE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

int main(int argc, char **argv)
{
	struct record_writer *w;
	struct hs_record r;
	uint64_t n, live, *ring, *free_slots, nr_free = 0, next_slot = 0, s = 88172645463325252ull, t = 0;
	static const uint64_t ips[][4] = {{0x401100, 0x401200, 0x401300, 0x401400},
					  {0x401110, 0x401210, 0x401300, 0x401400},
					  {0x401120, 0x401220, 0x401310, 0x401400},
					  {0x401130, 0x401230, 0x401320, 0x401400}};
	int err;

	if (argc != 4)
		return 2;
	n = strtoull(argv[2], NULL, 10);
	live = strtoull(argv[3], NULL, 10);
	ring = calloc(live, sizeof(*ring)); /* slot + 1 of the block at each place, 0 = none */
	free_slots = calloc(live, sizeof(*free_slots));
	if (!ring || !free_slots || (err = record_writer__open(argv[1], NULL, &w))) {
		fprintf(stderr, "genfile: cannot write %s\n", argv[1]);
		return 1;
	}
	r = (struct hs_record){.type = HS_REC_SESSION};
	r.session.tool_version = "genfile";
	r.session.hostname = "bench";
	r.session.kernel = "synthetic";
	r.session.cmdline = "synthetic churn";
	r.session.tick_ns = 1000;
	r.session.stack_mode = HS_STACK_FP;
	r.session.max_stack = 64;
	record_writer__write(w, &r);
	r = (struct hs_record){.type = HS_REC_MAPPING, .pid = 1};
	r.mapping.start = 0x400000;
	r.mapping.end = 0x500000;
	r.mapping.path = "/nonexistent/bench";
	record_writer__write(w, &r);
	for (int i = 0; i < 4; i++) {
		r = (struct hs_record){.type = HS_REC_STACK};
		r.stack.id = (uint64_t)i + 1;
		r.stack.nr = 4;
		r.stack.ips = ips[i];
		record_writer__write(w, &r);
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t idx;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		idx = s % live;
		t += 1 + (s >> 60);
		if (ring[idx]) {
			r = (struct hs_record){.type = HS_REC_FREE, .time = t, .pid = 1, .tid = 1};
			r.free.slot = ring[idx] - 1;
			free_slots[nr_free++] = r.free.slot;
			ring[idx] = 0;
		} else {
			r = (struct hs_record){.type = HS_REC_ALLOC, .time = t, .pid = 1, .tid = 1};
			/* Slots as the recorder hands them out: the last freed first. */
			r.alloc.slot = nr_free ? free_slots[--nr_free] : next_slot++;
			ring[idx] = r.alloc.slot + 1;
			r.alloc.size = 16 << ((s >> 33) & 3);
			r.alloc.stack_id = 1 + ((s >> 50) & 3);
			r.alloc.kind = HS_KIND_MALLOC;
			r.alloc.weight = HS_WEIGHT_ONE;
		}
		if ((err = record_writer__write(w, &r)))
			break;
	}
	if (!err)
		err = record_writer__close(w);
	record_writer__free(w);
	free(ring);
	free(free_slots);
	return err ? 1 : 0;
}
