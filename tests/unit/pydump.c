// SPDX-License-Identifier: MIT
/* pydump FILE: the records a Python recording is checked by (tests/pycheck.py), one a line:
 *   via TEXT
 *   code PID ID FIRST_LINE VERSION TABLE_BYTES QUALNAME FILENAME
 *   stack ID FRAME...        (py:ID:OFFSET for a Python frame, hex for a return address)
 *   alloc PID SLOT SIZE STACK_ID
 *   free PID SLOT
 *   mapping PID START END PATH
 *   counter NAME VALUE       (the last counters record's)
 * Read with format/reader.c, as the analyzer reads files: no symbolization, no replay. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <linux/types.h>

#include "event_abi.h"
#include "record.h"

int main(int argc, char **argv)
{
	struct record_reader *rd;
	struct hs_record r;
	char err[256];
	int ret;

	if (argc != 2 || record_reader__open(argv[1], &rd, err, sizeof(err))) {
		fprintf(stderr, "pydump: %s\n", argc == 2 ? err : "usage: pydump FILE");
		return 2;
	}
	while ((ret = record_reader__next(rd, &r)) == 1) {
		switch (r.type) {
		case HS_REC_SESSION:
			printf("via %s\n", r.session.via ? r.session.via : "");
			break;
		case HS_REC_PY_CODE:
			printf("code %u %" PRIu64 " %u %u %u %s %s\n", r.pid, r.py_code.id, r.py_code.first_line,
			       r.py_code.py_version, r.py_code.line_table.len, r.py_code.qualname, r.py_code.filename);
			break;
		case HS_REC_STACK:
			printf("stack %" PRIu64, r.stack.id);
			for (uint32_t i = 0; i < r.stack.nr; i++) {
				uint64_t ip = r.stack.ips[i];

				if (HS_IS_PYFRAME(ip))
					printf(" py:%llu:%llu", (unsigned long long)HS_PYFRAME_CODE(ip),
					       (unsigned long long)HS_PYFRAME_OFF(ip));
				else
					printf(" %" PRIx64, ip);
			}
			printf("\n");
			break;
		case HS_REC_ALLOC:
		case HS_REC_ALLOC_SAMPLED:
			printf("alloc %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", r.pid, r.alloc.slot, r.alloc.size,
			       r.alloc.stack_id);
			break;
		case HS_REC_FREE:
			printf("free %u %" PRIu64 "\n", r.pid, r.free.slot);
			break;
		case HS_REC_MAPPING:
			printf("mapping %u %" PRIx64 " %" PRIx64 " %s\n", r.pid, r.mapping.start, r.mapping.end,
			       r.mapping.path ? r.mapping.path : "");
			break;
		case HS_REC_COUNTERS:
		case HS_REC_END:
			for (uint32_t i = 0; i < r.counters.nr; i++)
				printf("counter %s %" PRIu64 "\n", r.counters.items[i].name, r.counters.items[i].value);
			break;
		}
	}
	if (ret < 0 || record_reader__status(rd) != HS_READ_END) {
		fprintf(stderr, "pydump: %s\n", record_reader__error(rd));
		return 1;
	}
	return 0;
}
