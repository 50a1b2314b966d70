// SPDX-License-Identifier: MIT
/* libFuzzer target: unwind tables from .eh_frame and .debug_frame (common/unwtab.c), which the
 * recorder builds from any binary a traced process maps. Input: a 2-byte length, that many
 * bytes of .eh_frame_hdr, then a section read both as .eh_frame and as .debug_frame. Rows must
 * be in order and within the first pass's bound, and nothing may be read outside the input
 * (ASan), nor grow past what the input holds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwtab.h"

#define EH_ADDR 0x10000u
#define HDR_ADDR 0x8000u

/* The same bytes as .debug_frame: its own CIE ids and offsets. */
static void as_debug_frame(const uint8_t *sec, size_t len)
{
	long bound = unwtab__build_file(NULL, 0, 0, sec, len, NULL, 0), n;
	struct hs_unw_row *rows;

	if (bound <= 0)
		return;
	if ((size_t)bound > 4 * len + 16)
		abort();
	rows = calloc((size_t)bound, sizeof(*rows));
	if (!rows)
		return;
	n = unwtab__build_file(NULL, 0, 0, sec, len, rows, (uint64_t)bound);
	if (n > bound)
		abort();
	for (long i = 1; i < n; i++)
		if (rows[i].pc <= rows[i - 1].pc)
			abort();
	free(rows);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *hdr, *eh;
	size_t hlen, elen;
	struct hs_unw_row *rows;
	long bound, n;

	if (size < 2)
		return 0;
	hlen = (size_t)data[0] | (size_t)data[1] << 8;
	if (hlen > size - 2)
		hlen = size - 2;
	hdr = data + 2;
	eh = hdr + hlen;
	elen = size - 2 - hlen;
	as_debug_frame(eh, elen);
	bound = unwtab__build(eh, elen, EH_ADDR, NULL, 0);
	if (bound <= 0)
		return 0;
	/* Rows are bounded by the bytes that make them: at most a few per byte of input. */
	if ((size_t)bound > 4 * elen + 16)
		abort();
	rows = calloc((size_t)bound, sizeof(*rows));
	if (!rows)
		return 0;
	n = unwtab__build(eh, elen, EH_ADDR, rows, (uint64_t)bound);
	if (n > bound)
		abort();
	for (long i = 1; i < n; i++)
		if (rows[i].pc <= rows[i - 1].pc)
			abort();
	for (long i = 0; i < n && i < 64; i++) {
		struct hs_unw_row l;
		const struct hs_unw_row *r = unwtab__find(rows, (uint32_t)n, rows[i].pc);

		if (r != &rows[i])
			abort();
		/* The search table is any bytes here: only memory safety is in question. */
		(void)unwtab__lookup(hdr, hlen, HDR_ADDR, eh, elen, EH_ADDR, rows[i].pc, &l);
	}
	free(rows);
	return 0;
}
