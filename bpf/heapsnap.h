/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The BPF unit's shared header: what bpf/heapsnap.bpf.c and its loader
 * (recorder/bpf/bpf_way.c, bpf_probes.c, bpf_unwind_tables.c) read, beside the events every way in shares
 * (common/abi/event_abi.h) and the unwind rows (common/unw_rows.h). Fixed-width fields only. */
#ifndef HEAPSNAP_BPF_SHARED_H
#define HEAPSNAP_BPF_SHARED_H

#include "abi/event_abi.h"
#include "unw_rows.h"

/* BPF's cache entry: valid when ra reads the same before and after the rest (a program
 * preempted on its CPU by another that rewrites the slot sees ra change). */
#define HS_UNW_CACHE_BITS 14
struct hs_unw_cache_ent {
	__u64 ra;
	__u32 tgid;
	__u32 gen; /* the process's mappings as sent that time (hs_unw_proc.gen) */
	__u32 rule;
	__u32 pad;
};

/* BPF: a process's executable mappings, sorted by start, each with its module's rows. */
#define HS_UNW_MAX_MAPS 256
struct hs_unw_map {
	__u64 start, end;
	__u64 bias;      /* address - bias = the module's link-time address */
	__u32 row_start; /* in the rows array */
	__u32 row_count; /* 0: the module has no table */
};

struct hs_unw_proc {
	__u32 n;
	__u32 gen; /* new at every update: rules cached for older mappings (before an exec, a
		    * dlclose) are not taken for these */
	struct hs_unw_map m[HS_UNW_MAX_MAPS];
};

struct hs_live_key {
	__u64 ptr;
	__u32 tgid;
	__u32 pad;
};

struct hs_live_val {
	__u64 size;
	__u64 stack;
	__u32 kind;
	__u32 pad;
};

#endif
