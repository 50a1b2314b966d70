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
	uint64_t n, live, *ring, s = 88172645463325252ull, t = 0;
	static const uint64_t ips[][4] = {{0x401100, 0x401200, 0x401300, 0x401400},
					  {0x401110, 0x401210, 0x401300, 0x401400},
					  {0x401120, 0x401220, 0x401310, 0x401400},
					  {0x401130, 0x401230, 0x401320, 0x401400}};
	int err;

	if (argc != 4)
		return 2;
	n = strtoull(argv[2], NULL, 10);
	live = strtoull(argv[3], NULL, 10);
	ring = calloc(live, sizeof(*ring));
	if (!ring || (err = record_writer__open(argv[1], NULL, &w))) {
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
			r.free.ptr = ring[idx];
			ring[idx] = 0;
		} else {
			r = (struct hs_record){.type = HS_REC_ALLOC, .time = t, .pid = 1, .tid = 1};
			ring[idx] = 0x10000000 + idx * 64 + ((s >> 40) & 3) * 16;
			r.alloc.ptr = ring[idx];
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
	return err ? 1 : 0;
}
