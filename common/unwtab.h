/* SPDX-License-Identifier: MIT */
/* Unwind tables from .eh_frame: for each address range of a module, how to find its caller's
 * frame (struct hs_unw_row of common/unw_rows.h). The same code builds them for the BPF
 * program (in the recorder, from the file) and in the target (libheapsnap.so, from memory),
 * so it calls no allocator: the caller provides the rows' memory, sized by a first pass. */
#ifndef HEAPSNAP_UNWTAB_H
#define HEAPSNAP_UNWTAB_H
#include <stdint.h>

#include <linux/types.h>

#include "unw_rows.h"

/* A module's table larger than this is refused (its rows' pc is 32 bits, too). */
#define HS_UNW_MAX_ROWS (1u << 22)

/* .eh_frame's bytes [eh, eh + len) as loaded at link-time address `eh_addr`. With rows NULL,
 * returns an upper bound of the rows (for sizing); else fills at most `cap` rows, sorted by
 * pc with consecutive equal rules merged, and returns how many. -ERANGE: an address beyond
 * 32 bits, or more than `cap` rows; -EINVAL: no parsable FDE. */
long unwtab__build(const uint8_t *eh, uint64_t len, uint64_t eh_addr, struct hs_unw_row *rows, uint64_t cap);
/* The same from a file's .eh_frame (EH may be NULL) and .debug_frame [dbg, dbg + dbg_len) (DBG
 * may be NULL), one table: code built with -fno-asynchronous-unwind-tables -g has its own
 * frames only in .debug_frame, which is not loaded, while its C runtime's are in .eh_frame.
 * .debug_frame's addresses are absolute (DW_EH_PE_absptr), wherever the section is. */
long unwtab__build_file(const uint8_t *eh, uint64_t len, uint64_t eh_addr, const uint8_t *dbg, uint64_t dbg_len,
			struct hs_unw_row *rows, uint64_t cap);

/* The row that covers `pc` (a link-time address), or NULL when it is below the first. */
static inline const struct hs_unw_row *unwtab__find(const struct hs_unw_row *rows, uint32_t n, uint64_t pc)
{
	uint32_t lo = 0, hi = n;

	if (!n || pc < rows[0].pc || pc > UINT32_MAX)
		return 0;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return &rows[lo];
}

/* The rule at link-time address `pc` without building a table: the FDE found by binary search
 * in .eh_frame_hdr's table ([hdr, hdr + hdr_len) at `hdr_addr`) and its program run up to pc,
 * as unwtab__build() would have made the row. -ENOENT: no FDE covers pc; -ENOTSUP: a search
 * table not in the form linkers write (build a table instead). */
int unwtab__lookup(const uint8_t *hdr, uint64_t hdr_len, uint64_t hdr_addr, const uint8_t *eh, uint64_t eh_len,
		   uint64_t eh_addr, uint64_t pc, struct hs_unw_row *out);

/* .eh_frame_hdr's pointer to .eh_frame, at link-time address `hdr_addr`: 0 if it has none. */
uint64_t unwtab__eh_frame_from_hdr(const uint8_t *hdr, uint64_t len, uint64_t hdr_addr);
#endif
