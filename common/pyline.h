/* SPDX-License-Identifier: MIT */
/* CPython line tables, read offline: a code object's co_lnotab (3.8, 3.9), co_linetable
 * (3.10) or location table (3.11 and later) turned into the line of a bytecode offset.
 * Freestanding (libc only): tests/unit/test_pyline.c checks it against CPython itself. */
#ifndef HEAPSNAP_PYLINE_H
#define HEAPSNAP_PYLINE_H
#include <stdint.h>

enum pyline_format { PYLINE_LNOTAB = 1, PYLINE_LINETABLE310, PYLINE_LOCATIONS };

/* Bytes [start, end) of a code's bytecode run on LINE, -1 where the table gives none. */
struct pyline_range {
	uint32_t start, end;
	int64_t line;
};

/* The table format of interpreter version PY_VERSION (major << 8 | minor), or 0 for a
 * version this decoder does not know. */
int pyline__format(uint32_t py_version);

/* The ranges of TABLE, in bytecode order, empty ones dropped, into a malloc'd *OUT of as many
 * as there are. Work and memory are linear in LEN (at most one range per table byte).
 * Returns 0, -EINVAL for an unknown version, or -ENOMEM. */
int pyline__ranges(uint32_t py_version, const uint8_t *table, uint32_t len, int64_t first_line,
		   struct pyline_range **out, uint32_t *nr);

/* How many ranges pyline__ranges makes of TABLE (0 for an unknown version): what its
 * caller may weigh before they are made. */
uint32_t pyline__count(uint32_t py_version, const uint8_t *table, uint32_t len, int64_t first_line);

/* The line of the instruction at byte OFFSET in ranges R (from pyline__ranges), -1 when no
 * range holds it or its range has no line. */
int64_t pyline__lookup(const struct pyline_range *r, uint32_t nr, uint32_t offset);
/* TABLE, a location table (3.11 and later), with the columns left out: into OUT (room for
 * LEN bytes), a table of the same format that gives every offset the line TABLE gives it,
 * neighbours on one line made one entry (code 13, or 15 where there is no line). Returns its
 * length, or 0 where it might not fit in LEN bytes or the version has no columns: TABLE stays
 * then.
 * CPython's own tables (tests/pylines.py) keep 27% of their bytes; the PY_CODE records of
 * bench/py_json.py's recording took 26 KB of its file where they took 95. */
uint32_t pyline__lines_only(uint32_t py_version, const uint8_t *table, uint32_t len, int64_t first_line,
			    uint8_t *out);
#endif
