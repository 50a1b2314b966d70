/* SPDX-License-Identifier: MIT */
/* Python code objects of a recording (PY_CODE records) and the Python frames of its stacks
 * (HS_PYFRAME entries, common/abi/event_abi.h): what a frame names, resolved offline. */
#ifndef HEAPSNAP_PYCODE_H
#define HEAPSNAP_PYCODE_H
#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "abi/event_abi.h"
#include "hmap.h"
#include "pyline.h"
#include "record.h"

/* What a file may hold: more code objects, or more bytes of their names, line tables and
 * the lines those decode to, and it is refused (a process loads a few thousand; a large
 * application a few hundred thousand). */
#define PY_CODES_MAX (1u << 21)
#define PY_CODES_MAX_BYTES (1ull << 30)

struct py_code {
	uint32_t pid;
	uint64_t id;
	char *qualname, *filename; /* printable copies */
	char *display; /* "qualname (file.py)": what reports show */
	uint32_t first_line, py_version;
	uint8_t *table;
	uint32_t len;
	struct pyline_range *ranges; /* decoded on first use */
	uint32_t nr_ranges;
	bool decoded;
};

struct py_codes {
	struct py_code *v;
	uint32_t nr;
	struct hmap idx; /* (pid, id) -> index + 1 */
	uint64_t bytes;       /* of names and line tables */
	uint64_t range_bytes; /* of the lines the tables decode to, made as their frames are */
	uint64_t duplicates; /* a second record of a (pid, id) already read: the first kept */
	struct hmap unknown; /* code id -> "[python code N not recorded]" */
};

/* One Python frame, resolved. The strings are the table's, valid until py_codes__free. */
struct py_frame {
	const char *function, *display; /* display: "qualname (file.py)", or as function */
	const char *file; /* NULL when the code is not recorded */
	uint32_t first_line, line;
	bool known;
};

/* REC (a PY_CODE record) into C. Returns 0, -ENOMEM, or -E2BIG past a limit above with ERR
 * saying which. */
int py_codes__add(struct py_codes *c, const struct hs_record *rec, char *err, size_t errlen);
/* The frame IP (HS_IS_PYFRAME(ip)) of process PID names. Returns 0 or -ENOMEM. */
int py_codes__frame(struct py_codes *c, uint32_t pid, uint64_t ip, struct py_frame *out);
void py_codes__free(struct py_codes *c);
#endif
