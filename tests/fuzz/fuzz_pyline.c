// SPDX-License-Identifier: MIT
/* libFuzzer target: CPython line tables (common/pyline.c), which come from recordings made
 * anywhere. Input: a version byte (its low 3 bits pick 3.8 to 3.14, or one no interpreter
 * has), 4 bytes of bytecode offset, then the table. Ranges must be non-empty, in order and no
 * more than the table's bytes plus one; nothing may be read outside the input (ASan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pyline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t versions[] = {0x308, 0x309, 0x30a, 0x30b, 0x30c, 0x30d, 0x30e, 0x307};
	struct pyline_range *r;
	uint32_t nr, off;
	uint8_t *table;
	size_t len;

	if (size < 5 || size - 5 > UINT32_MAX)
		return 0;
	memcpy(&off, data + 1, 4);
	len = size - 5;
	/* The table alone on the heap, so a read past it is caught. */
	table = malloc(len ? len : 1);
	if (!table)
		return 0;
	memcpy(table, data + 5, len);
	if (pyline__ranges(versions[data[0] & 7], table, (uint32_t)len, 1, &r, &nr) == 0) {
		if (nr > len + 1)
			abort();
		for (uint32_t i = 0; i < nr; i++)
			if (r[i].start >= r[i].end || (i && r[i - 1].end > r[i].start))
				abort();
		(void)pyline__lookup(r, nr, off);
		free(r);
	}
	free(table);
	return 0;
}
