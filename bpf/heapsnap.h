/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between bpf/heapsnap.bpf.c and the recorder: fixed-width fields only. */
#ifndef HEAPSNAP_BPF_SHARED_H
#define HEAPSNAP_BPF_SHARED_H

#define HS_MAX_STACK 127
#define HS_MAX_DWARF_BYTES 32768
/* Registers copied for --stack dwarf, in this order. */
#define HS_DWARF_NREGS 8 /* ip, sp, bp, bx, r12, r13, r14, r15 */
#define HS_NR_THRESHOLDS 1024

enum hs_ev_type {
	HS_EV_ALLOC = 1,
	HS_EV_FREE = 2,
	HS_EV_STACK = 3,
	HS_EV_FORK = 4,
	HS_EV_EXEC = 5,
	HS_EV_EXIT = 6,
	HS_EV_MMAP = 7,
	HS_EV_COMM = 8,
	HS_EV_DWARF = 9,
};

/* The attach cookie of every allocator probe: what the function is, and how to treat it. */
#define HS_COOKIE_KIND_MASK 0xffu  /* enum hs_alloc_kind of format/record.h */
#define HS_COOKIE_WRAPPER 0x100u   /* a free that calls another probed free (delete, __rust_dealloc) */
/* The probe is a session probe (Linux 6.13): its entry program decides whether the return
 * half runs, so a call that needs no return (nested, not sampled) saves that trap. */
#define HS_COOKIE_SESSION 0x200u
/* An allocator that calls no other probed allocator (glibc's malloc, calloc, memalign):
 * when a sampling draw passes it by, nothing needs its return. */
#define HS_COOKIE_LEAF 0x400u
/* In an alloc event's kind: the block of a failed realloc, live again (undoes its free). */
#define HS_KIND_FLAG_RESTORED 0x80u
/* In an exit event's kind: the sender does not know the status (the in-process recorder
 * sees a process end, not how); the recorder writes no EXIT record from it. */
#define HS_EXIT_FLAG_NO_STATUS 0x1u
/* In a free event's kind: realloc released this block at its entry (every-event mode). */
#define HS_FREE_FLAG_REALLOC 0x40u

enum hs_counter_id {
	HS_CNT_RINGBUF_FULL,     /* events dropped: ring buffer full */
	HS_CNT_LIVE_FULL,        /* allocations dropped: live map full */
	HS_CNT_STACK_TRUNCATED,  /* stacks cut at --max-stack */
	HS_CNT_MISSED_URETPROBE, /* outer allocator calls whose return was never seen */
	HS_CNT_UNKNOWN_FREE,     /* frees of pointers allocated before attach (or lost) */
	HS_CNT_STACK_ERROR,      /* a frame-pointer walk stopped before the outermost frame (no event lost) */
	HS_CNT_THREAD_FULL,      /* per-thread state map full */
	HS_CNT_ALLOC_CALLS,      /* outermost allocator calls seen */
	HS_CNT_FREE_CALLS,       /* free calls seen (non-NULL) */
	HS_CNT_NESTED,           /* allocator calls inside another probed allocator */
	HS_CNT_SAMPLED,          /* allocations chosen by the sampler */
	HS_CNT_FAILED_ALLOC,     /* allocator returned NULL */
	HS_CNT_STACKS_NEW,       /* distinct stacks sent to user space */
	HS_CNT_DWARF_TRUNCATED,  /* dwarf windows smaller than the stack mapping above sp (argv and
				  * environment included: the analyzer tells whether frames were missed) */
	/* --stack auto: why a table walk stopped before the outermost frame (the frames before
	 * it are kept). One counter per reason, so that no truncation is silent. */
	HS_CNT_UNW_NO_MODULE,    /* a return address in no module known (JIT code, or mapped just now) */
	HS_CNT_UNW_NO_TABLE,     /* a module without .eh_frame, or whose table did not fit */
	HS_CNT_UNW_NO_ROW,       /* an address no FDE of its module covers */
	HS_CNT_UNW_EXPRESSION,   /* a frame whose CFA is a DWARF expression or in another register */
	HS_CNT_UNW_BAD_FRAME,    /* a CFA outside the stack, or not above the frame before */
	HS_CNT_UNW_FP_LOST,      /* a CFA based on rbp where the callee's table lost track of rbp */
	HS_CNT_UNW_DWARF_COPY,   /* BPF: the process's modules not known yet, the stack copied instead */
	HS_CNT_UNW_FP_INSTEAD,   /* BPF: the same, but the ring too full for a copy: frame pointers */
	HS_CNT__MAX,
};

struct hs_event_hdr {
	__u8 type;
	__u8 kind;
	__u16 nr; /* HS_EV_STACK: number of frames */
	__u32 pid;
	__u32 tid;
	__u32 pad;
	__u64 ts; /* CLOCK_MONOTONIC ns */
};

struct hs_alloc_event {
	struct hs_event_hdr h;
	__u64 ptr;
	__u64 size;
	__u64 stack;
};

struct hs_free_event {
	struct hs_event_hdr h;
	__u64 ptr;
	__u64 size;
};

struct hs_stack_event {
	struct hs_event_hdr h;
	__u64 hash;
	__u64 ips[HS_MAX_STACK];
};

#define HS_EXEC_PATH_MAX 256
#define HS_EXEC_ARGS_MAX 512

/* What a process is, carried by its fork, exec and exit events: a process that lives a few
 * milliseconds is gone before user space can read /proc. */
struct hs_proc_event {
	struct hs_event_hdr h;
	__u32 ppid;
	__s32 exit_code;
	/* HS_EV_EXEC: the new image's text, in case the process is gone before its maps are read */
	__u64 start_code, end_code, exe_ino;
	__u32 exe_dev; /* kernel encoding: major << 20 | minor */
	__u32 args_len; /* HS_EV_EXEC: bytes of args, NUL-separated */
	char comm[16];
	char path[HS_EXEC_PATH_MAX];  /* HS_EV_EXEC: the file exec'd, as named to execve */
	char args[HS_EXEC_ARGS_MAX];  /* HS_EV_EXEC: the start of the new command line */
};

struct hs_mmap_event {
	struct hs_event_hdr h;
	__u64 addr, len, off, ino;
	__u32 dev; /* kernel encoding: major << 20 | minor */
	__u32 pad;
	/* The file, when the sender knows its name (the in-process recorder); BPF leaves it
	 * empty and the recorder finds the file by device and inode. */
	char path[HS_EXEC_PATH_MAX];
};

/* --stack dwarf: the registers at allocator entry and the stack from sp upwards. */
struct hs_dwarf_event {
	struct hs_event_hdr h;
	__u64 key; /* what the allocation's `stack` field refers to */
	__u64 regs[HS_DWARF_NREGS];
	__u32 len;  /* bytes of data that follow */
	__u32 used; /* bytes of stack in use above sp (may exceed len: truncated) */
	__u8 data[HS_MAX_DWARF_BYTES];
};

struct hs_comm_event {
	struct hs_event_hdr h;
	char comm[16];
};

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
