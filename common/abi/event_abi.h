/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The event ABI: what every source of events writes and heapsnap-record reads. The BPF
 * program (bpf/heapsnap.bpf.c) writes these into its rings, libheapsnap.so into the rings of
 * the memory it shares with the recorder (common/abi/shm.h), both framed the same way;
 * recorder/ring_reader.c reads either. Fixed-width fields only: it compiles for BPF too
 * (__u64 and friends come from vmlinux.h there, from <linux/types.h> here). */
#ifndef HEAPSNAP_EVENT_ABI_H
#define HEAPSNAP_EVENT_ABI_H

#define HS_MAX_STACK 127
#define HS_MAX_DWARF_BYTES 32768
/* Registers copied for --stack dwarf, in this order. */
#define HS_DWARF_NREGS 8 /* ip, sp, bp, bx, r12, r13, r14, r15 */
#define HS_NR_THRESHOLDS_BITS 10
#define HS_NR_THRESHOLDS (1u << HS_NR_THRESHOLDS_BITS)

/* What made a block: an allocation event's kind (low 7 bits), an allocator probe's cookie
 * (HS_COOKIE_KIND_MASK), common/allocators.def's kind column, and the record file's ALLOC
 * kind (format/record.h takes these values, it does not define them). */
enum hs_alloc_kind {
	HS_KIND_MALLOC = 0,
	HS_KIND_CALLOC,
	HS_KIND_REALLOC,
	HS_KIND_MEMALIGN, /* memalign, aligned_alloc, posix_memalign, valloc, pvalloc */
	HS_KIND_NEW,
	HS_KIND_NEW_ARRAY,
	HS_KIND_RUST,
	HS_KIND_CUSTOM,
	HS_KIND__COUNT,
};

/* How stacks are taken (the session's --stack, the record file's header). HS_STACK_AUTO:
 * return addresses walked with unwind tables from .eh_frame (the stacks are lists of
 * addresses, as with HS_STACK_FP). */
enum hs_stack_mode { HS_STACK_NONE = 0, HS_STACK_FP = 1, HS_STACK_DWARF = 2, HS_STACK_AUTO = 3 };

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
	HS_EV_PYCODE = 10,
	HS_EV_MARK = 11,
};

/* The attach cookie of every allocator probe: what the function is, and how to treat it. */
#define HS_COOKIE_KIND_MASK 0xffu  /* enum hs_alloc_kind, above */
#define HS_COOKIE_WRAPPER 0x100u   /* a free that calls another probed free (delete, __rust_dealloc) */
/* The probe is a session probe (Linux 6.13): its entry program decides whether the return
 * half runs, so a call that needs no return (nested, not sampled) saves that trap. */
#define HS_COOKIE_SESSION 0x200u
/* An allocator that calls no other probed allocator (glibc's malloc, calloc, memalign):
 * when a sampling draw passes it by, nothing needs its return. */
#define HS_COOKIE_LEAF 0x400u
/* An operator new that may throw (libstdc++'s _Znwm, _Znam and their aligned forms): probed
 * at entry only, since a uretprobe's trampoline in place of its return address is a frame
 * the C++ unwinder cannot pass (std::bad_alloc ended the program in std::terminate). The
 * allocator it calls (malloc, aligned_alloc) returns for it: that return ends the call and
 * carries the pointer. Never with HS_COOKIE_LEAF. */
#define HS_COOKIE_NORET 0x800u
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
	/* Python (libheapsnap.so; the BPF way reads no Python frames). */
	HS_CNT_PY_CODES,         /* code objects named (one PY_CODE each) */
	HS_CNT_PY_WALK_STOPPED,  /* a Python frame walk stopped at memory it could not vouch for */
	HS_CNT_PY_UNMATCHED,     /* eval-loop frames of a stack with no Python frame left for them (kept) */
	HS_CNT_PY_NOT_WALKED,    /* stacks in the eval loop whose thread has no state, or a subinterpreter's */
	HS_CNT_PY_TABLE_DROPPED, /* code objects whose line table was too large to send (no lines) */
	HS_CNT_PY_PYMEM,         /* processes whose object and mem allocator domains were wrapped */
	HS_CNT_PY_MAPS_READ,     /* reads of /proc/self/maps for the walk's readable ranges */
	HS_CNT_PY_UNSUPPORTED,   /* interpreters not read: another version, free-threaded, a subinterpreter */
	HS_CNT_DWARF_END_UNKNOWN, /* BPF: dwarf windows taken without their stack mapping's end (its lookup busy) */
	/* In-process: processes that stopped recording before the end, a thread having waited 2 s
	 * for room (its ring full, or none free) without hearing from the recorder (stopped, or
	 * blocked writing): what they did after is not in the recording, and not counted. */
	HS_CNT_RECORDER_STALLED,
	/* In-process, sampling at 256 KiB or more over glibc: sessions whose sampled blocks stopped
	 * going to the library's own pages (a block past the pool's limits, or 16384 out), and went
	 * to the allocator, found again by the filter and table, from then on. Nothing lost. */
	HS_CNT_POOL_STOPPED,
	HS_CNT__MAX,
};

/* Whether counter C says why a stack was cut short: the only ones an allocation's event may
 * carry (hs_event_hdr.stop), since the recorder takes them from a ring the target writes. */
static inline int hs_cnt_is_stack_stop(unsigned int c)
{
	return c == HS_CNT_STACK_TRUNCATED || c == HS_CNT_STACK_ERROR || c == HS_CNT_DWARF_TRUNCATED ||
	       (c >= HS_CNT_UNW_NO_MODULE && c <= HS_CNT_UNW_FP_LOST);
}

struct hs_event_hdr {
	__u8 type;
	__u8 kind;
	__u16 nr; /* HS_EV_STACK: number of frames */
	__u32 pid;
	__u32 tid;
	/* HS_EV_ALLOC from libheapsnap.so: 1 + the counter (HS_CNT_*) on which its stack's
	 * capture stopped short, which the recorder adds to; 0 for a whole stack, and from BPF. */
	__u32 stop;
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

/* A moment the target marks in its own events (libheapsnap.so): the recorder makes it a
 * SNAPSHOT where it reads it, every event stamped before it read first (the rings are merged
 * by time). KIND says which: */
#define HS_MARK_PY_FINALIZE 1 /* the interpreter began to finalize: its atexit callbacks run */
struct hs_mark_event {
	struct hs_event_hdr h;
};

struct hs_comm_event {
	struct hs_event_hdr h;
	char comm[16];
};

/* A Python code object, once per process and object (libheapsnap.so), before or after the
 * stacks that name it: DATA holds the qualified name, the file name and the line table, in
 * that order, name_len + file_len + table_len bytes (no terminators). */
#define HS_PYCODE_MAX_NAME 512
#define HS_PYCODE_MAX_FILE 1024
#define HS_PYCODE_MAX_TABLE 16384
struct hs_pycode_event {
	struct hs_event_hdr h;
	__u64 id;          /* HS_PYFRAME's code id, 1 to 2^28 - 1 */
	__u32 first_line;
	__u32 py_version;  /* major << 8 | minor */
	__u32 name_len, file_len, table_len, pad;
	__u8 data[HS_PYCODE_MAX_NAME + HS_PYCODE_MAX_FILE + HS_PYCODE_MAX_TABLE];
};

/* A Python frame in a stack: libheapsnap.so writes these where the interpreter's eval loop
 * ran, in the order the frames ran. No user-space return address has these top bits (user
 * addresses fit 47 bits). The code object is named per process by a PY_CODE record
 * (docs/FORMAT.md) with the same code id; the offset is the byte offset of the instruction
 * running in that code's bytecode, HS_PYFRAME_OFF_NONE where it is not known. */
#define HS_PYFRAME_TAG 0xfff0000000000000ull
#define HS_PYFRAME_CODE_BITS 28
#define HS_PYFRAME_OFF_BITS 24
#define HS_PYFRAME_OFF_NONE ((1ull << HS_PYFRAME_OFF_BITS) - 1)
#define HS_PYFRAME(code, off) \
	(HS_PYFRAME_TAG | ((__u64)(code) << HS_PYFRAME_OFF_BITS) | ((__u64)(off) & HS_PYFRAME_OFF_NONE))
#define HS_IS_PYFRAME(ip) (((ip) & HS_PYFRAME_TAG) == HS_PYFRAME_TAG)
#define HS_PYFRAME_CODE(ip) (((ip) >> HS_PYFRAME_OFF_BITS) & ((1ull << HS_PYFRAME_CODE_BITS) - 1))
#define HS_PYFRAME_OFF(ip) ((ip) & HS_PYFRAME_OFF_NONE)

#endif
