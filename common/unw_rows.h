/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Unwind-table rows, shared by the three programs that walk stacks with them: the BPF
 * program, libheapsnap.so and common/unwtab.c, which builds them. Fixed-width fields only. */
#ifndef HEAPSNAP_UNW_ROWS_H
#define HEAPSNAP_UNW_ROWS_H

/* One row of an unwind table (format/unwtab.c builds them from .eh_frame): from `pc` (the
 * module's link-time address) up to the next row's, the caller's frame is found so:
 *   CFA = (cfa == HS_UNW_CFA_SP ? rsp : rbp) + cfa_off; return address at CFA - 8;
 *   rbp = fp == HS_UNW_FP_AT ? [CFA + fp_off] : unchanged (HS_UNW_FP_LOST: unknown).
 * Other values of `cfa` end the walk, each for a reason counted apart. */
enum hs_unw_cfa {
	HS_UNW_CFA_SP = 0,
	HS_UNW_CFA_FP = 1,
	HS_UNW_NONE = 2, /* no FDE covers this address */
	HS_UNW_END = 3,  /* the return address is undefined: the outermost frame (_start) */
	HS_UNW_EXPR = 4, /* the CFA is an expression, in another register, or the RA not at CFA-8 */
};
enum hs_unw_fp { HS_UNW_FP_SAME = 0, HS_UNW_FP_AT = 1, HS_UNW_FP_LOST = 2 };

struct hs_unw_row {
	__u32 pc;
	__s32 cfa_off;
	__u8 cfa;
	__u8 fp;
	__s16 fp_off;
	__u32 pad; /* a BPF array's elements are 8-byte aligned: the mapped array's stride is 16 */
};

/* A row's rule in HS_UNW_PACK_BITS bits, for the caches of rules by return address (BPF's
 * and the in-process recorder's): kind 2 (SP, FP, 3 END), rbp rule 2, CFA offset / 8: 17 (a
 * frame up to 1 MiB), rbp's offset / 8: 8, signed. False for the rare rule that does not fit:
 * it is not cached. */
#define HS_UNW_PACK_BITS 29
#define HS_UNW_PACK_END 3u
static inline int hs_unw_pack(const struct hs_unw_row *r, __u32 *out)
{
	if (r->cfa == HS_UNW_END) {
		*out = HS_UNW_PACK_END;
		return 1;
	}
	if (r->cfa > HS_UNW_CFA_FP || r->cfa_off < 0 || r->cfa_off >= (8 << 17) || (r->cfa_off & 7) ||
	    (r->fp_off & 7) || r->fp_off < -128 * 8 || r->fp_off > 127 * 8)
		return 0;
	/* Shifts, not divisions: BPF has no signed division, and both are multiples of 8. */
	*out = (__u32)r->cfa | (__u32)r->fp << 2 | (__u32)(r->cfa_off >> 3) << 4 | (__u32)((r->fp_off >> 3) & 255) << 21;
	return 1;
}

static inline void hs_unw_unpack(__u32 v, struct hs_unw_row *r)
{
	r->cfa = v & 3;
	r->fp = (v >> 2) & 3;
	r->cfa_off = (__s32)((v >> 4) & ((1u << 17) - 1)) * 8;
	r->fp_off = (__s16)((__s8)(v >> 21) * 8);
	if (r->cfa == HS_UNW_PACK_END)
		r->cfa = HS_UNW_END;
}

#endif
