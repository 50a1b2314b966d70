/* SPDX-License-Identifier: MIT */
/* The injection stub's memory, shared by three programs: the recorder writes it into the
 * target (recorder/inject/inject_attach.c), the stub's machine code reads and writes it in the target
 * (recorder/inject/inject_stub.S), and libheapsnap.so's entry takes it as its argument
 * (libheapsnap/inject_entry.c). The offsets are macros so that the assembler sees them; the C
 * struct below is checked against them. Fixed-width fields only: the recorder and the
 * library may be different builds, which the version tells apart. */
#ifndef HEAPSNAP_INJECT_ABI_H
#define HEAPSNAP_INJECT_ABI_H

#define HS_INJ_MAGIC 0x54434a4e49534855 /* "UHSINJCT", little-endian */
#define HS_INJ_VERSION 2

/* The stub: two pages of code (a page of trampoline entries, then the rest), then the data. */
#define HS_STUB_CODE_BYTES (2 * 4096)
#define HS_STUB_DATA_BYTES (4 * 4096)
#define HS_STUB_BYTES (HS_STUB_CODE_BYTES + HS_STUB_DATA_BYTES)

/* Offsets in the data. Filled by the recorder: */
#define HS_INJ_OFF_MAGIC 0
#define HS_INJ_OFF_FN_PTHREAD_CREATE 16
#define HS_INJ_OFF_FN_ATTR_INIT 24
#define HS_INJ_OFF_FN_ATTR_DETACH 32
#define HS_INJ_OFF_FN_DLOPEN 40
#define HS_INJ_OFF_FN_DLSYM 48
#define HS_INJ_OFF_FN_DLERROR 56
#define HS_INJ_OFF_DLOPEN_FLAGS 64
#define HS_INJ_OFF_TARGET_PID 72
/* Written in the target by the stub: */
#define HS_INJ_OFF_FIRED 80        /* 1 once a thread of the target took the trampoline */
#define HS_INJ_OFF_THREAD 88       /* the loader thread's pthread_t */
#define HS_INJ_OFF_CREATE_RET 96   /* pthread_create's result */
#define HS_INJ_OFF_LOADER_STATE 104
#define HS_INJ_OFF_ATTR 112        /* pthread_attr_t, 64 bytes */
#define HS_INJ_OFF_LIB_PATH 176    /* 128 bytes */
#define HS_INJ_OFF_ENTRY 304       /* 32 bytes */
#define HS_INJ_OFF_DL_MSG 336      /* 256 bytes: dlerror()'s text, copied */
/* The hold (a target's thread that takes the trampoline waits there for the hooks): */
#define HS_INJ_OFF_GATE 592        /* u32, 0 while loading; set (and futex-woken) once no thread need wait */
#define HS_INJ_OFF_LOADER_TID 600  /* the loader thread's tid: it never waits */
#define HS_INJ_OFF_DEADLINE 608    /* CLOCK_MONOTONIC ns past which no thread waits; 0: not set yet */
#define HS_INJ_OFF_HOLD_NS 616     /* filled by the recorder: how long the first call may wait */
#define HS_INJ_OFF_PASSED 624      /* calls that went on to the allocator unrecorded (atomic) */
#define HS_INJ_OFF_HELD 632        /* calls that waited and then went to the hooks (atomic) */
#define HS_INJ_OFF_TIMED_OUT 640   /* calls whose wait ran out (atomic; also in passed) */
#define HS_INJ_OFF_PATCHING 648    /* u32, set by the library before it rewrites any GOT entry */
#define HS_INJ_OFF_INFLIGHT 656    /* calls inside the trampoline (or below it: a call it made) */
#define HS_INJ_OFF_READY_NS 664    /* CLOCK_MONOTONIC ns when the library opened the gate, hooks in */
#define HS_INJ_OFF_FIRING_TID 672  /* the tid of the thread starting the loader (in `fire`): it never waits */
#define HS_INJ_OFF_LDSO_LO 680     /* filled by the recorder: the dynamic loader's code, whose calls */
#define HS_INJ_OFF_LDSO_HI 688     /* never wait (it may hold the locks dlopen needs) */
#define HS_INJ_OFF_SCRATCH 696     /* 16 bytes the recorder has a stopped thread's system calls use */
#define HS_INJ_OFF_TIMES 712      /* u64 per HS_T_*: CLOCK_MONOTONIC ns of each step, for -v */
/* The loader thread made on the first thread's CPU (fire): */
#define HS_INJ_OFF_PIN 848         /* filled by the recorder: 1 if the stub may (seccomp allows it) */
#define HS_INJ_OFF_PINNED 856      /* 1 once the first thread pinned itself, the loader inheriting it */
#define HS_INJ_OFF_CPUS_LEN 864    /* bytes of the first thread's own mask, as read */
#define HS_INJ_OFF_GETCPU 872      /* u32: the first thread's CPU */
/* Written by the library, for -v: */
#define HS_INJ_OFF_NR_FIRST 880    /* GOT entries hooked before the gate opened (got_patch_slots) */
#define HS_INJ_OFF_REST_NS 888     /* CLOCK_MONOTONIC ns: the rest hooked, after the gate (got_patch_all) */
#define HS_INJ_OFF_SLOT_KIND 1024  /* u8 per slot: HS_SLOT_* */
#define HS_INJ_OFF_CPUS 1280       /* 128 bytes: the first thread's CPU mask, put back after */
#define HS_INJ_OFF_CPU_ONE 1408    /* 128 bytes: the mask of its CPU alone */
#define HS_CPU_MASK_BYTES 128
#define HS_INJ_OFF_LIB 1536        /* struct hs_inject_lib: between recorder and library */
#define HS_INJ_OFF_SLOT_HASH 2048  /* u64 per slot, filled by the recorder: gw_name_hash of an allocator
				    * entry's imported name, by which the library hooks it in the window
				    * (0: not given; the library then finds it by its walk) */
#define HS_INJ_OFF_THRESHOLDS 4096 /* the sampler's thresholds, HS_NR_THRESHOLDS of them */
#define HS_INJ_OFF_SLOTS 12288     /* trampoline slots: {GOT address, original value} */
#define HS_INJ_MAX_SLOTS 256       /* one page of 16-byte trampoline entries */

/* fired: the trampoline starts the loader only from 0, which the recorder writes once every
 * entry is in place (a thread that took it sooner could load the library, which would find
 * entries still to be rewritten by the recorder, and lose them to it). */
#define HS_FIRED_ARMED 0
#define HS_FIRED_TAKEN 1
#define HS_FIRED_CREATED 2   /* create_ret is valid */
#define HS_FIRED_UNARMED 3   /* disarmed: the injection gave up, the entries are put back */
#define HS_FIRED_PREARM 4    /* written so at first: entries are still being taken over */

/* lib_state's offset in struct hs_inject_lib, for the stub */
#define HS_INJ_LIB_OFF_STATE 64
#define HS_LIB_STATE_DETACHED 3 /* HS_LIB_DETACHED, for the stub */

/* The steps between the first call and the hooks in place, timed (times[]; 0: not reached).
 * The stub writes the first three, the library the rest. */
#define HS_T_CREATED 0     /* the first thread's pthread_create returned */
#define HS_T_LOADER 1      /* the loader thread runs */
#define HS_T_DLOPENED 2    /* dlopen returned (the constructor run) */
#define HS_T_CTOR_IN 3     /* the library's constructor began */
#define HS_T_CTOR_OUT 4    /* ... and ended */
#define HS_T_SESSION 5     /* the entry has the session lock */
#define HS_T_RESOLVED 6    /* the hook table and the real functions looked up */
#define HS_T_SHM 7         /* the shared memory made */
#define HS_T_SET 8         /* the session's settings in it */
#define HS_T_PATCHED 9     /* the GOT entries whose calls wait point at the hooks */
#define HS_T_MAPS 10       /* the mappings emitted */
#define HS_T_PY 11         /* the interpreter looked for */
#define HS_T_READY 12      /* ready_ns: the gate opens */
#define HS_T_CPU 13        /* not a time: the loader thread's CPU ns at ready */
#define HS_T_NIVCSW 14     /* not a time: its involuntary context switches then */
#define HS_T_NVCSW 15      /* not a time: its voluntary ones */
#define HS_T_FDS_HIGH 16   /* after the gate: the memory's descriptors moved to high numbers */
#define HS_NR_T 17

/* slot kinds */
#define HS_SLOT_ALLOC 0      /* an allocator's entry: calls wait for the hooks, or are counted */
#define HS_SLOT_SAFE_POINT 1 /* another call's: only starts the loader */

/* gate */
#define HS_GATE_CLOSED 0
#define HS_GATE_OPEN 1

/* loader_state */
#define HS_LOADER_CALLING 1   /* the library is loaded; its entry runs */
#define HS_LOADER_NO_LIB 2    /* dlopen failed: dl_msg says why */
#define HS_LOADER_NO_ENTRY 3  /* dlsym failed: dl_msg says why */
#define HS_LOADER_RETURNED 4  /* the entry returned: the session is over */

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "event_abi.h"

/* lib_state */
enum {
	HS_LIB_STARTING = 0,
	HS_LIB_READY = 1,  /* hooks in place, recording; shm_fd and wake_fd valid */
	HS_LIB_FAILED = 2, /* lib_err and lib_msg say why; nothing was changed */
	HS_LIB_DETACHED = 3, /* every rewritten entry is restored */
};

struct hs_inject_slot {
	uint64_t got, orig;
};

/* The part the recorder and the library exchange. */
struct hs_inject_lib {
	int32_t pipe_fd;     /* read end: EOF when the recorder detaches or dies */
	int32_t lib_fd;      /* the memfd the library was loaded from, -1 if it was loaded already */
	uint64_t sample_rate;
	uint32_t stack_mode, max_stack, dwarf_bytes, nr_rings, ring_bytes, nr_slots;
	uint64_t recorder_pid;
	uint64_t stub_lo, stub_hi; /* the stub's range: GOT entries pointing here hold the trampoline */
	/* The library's answer. */
	uint32_t lib_state;  /* atomic */
	int32_t lib_err;     /* errno */
	int32_t shm_fd, wake_fd;
	uint32_t nr_patched, nr_modules;
	char lib_msg[256];
};

struct hs_inject_data {
	uint64_t magic;
	uint32_t version, size;
	uint64_t fn_pthread_create, fn_attr_init, fn_attr_detach, fn_dlopen, fn_dlsym, fn_dlerror;
	uint64_t dlopen_flags, target_pid;
	uint64_t fired, thread;
	int64_t create_ret;
	uint64_t loader_state;
	uint8_t attr[64];
	char lib_path[128];
	char entry[32];
	char dl_msg[256];
	uint32_t gate, pad_gate;
	uint64_t loader_tid, deadline, hold_ns, passed, held, timed_out;
	uint32_t patching, pad_patching;
	uint64_t inflight, ready_ns;
	uint64_t firing_tid, ldso_lo, ldso_hi;
	uint8_t scratch[16];
	uint64_t times[HS_NR_T];
	uint64_t pin, pinned, cpus_len;
	uint32_t getcpu, pad_getcpu;
	uint64_t nr_first, rest_ns;
	uint8_t pad0[HS_INJ_OFF_SLOT_KIND - HS_INJ_OFF_REST_NS - 8];
	uint8_t slot_kind[HS_INJ_MAX_SLOTS];
	uint8_t cpus[HS_CPU_MASK_BYTES], cpu_one[HS_CPU_MASK_BYTES];
	struct hs_inject_lib lib;
	uint8_t pad2[HS_INJ_OFF_SLOT_HASH - HS_INJ_OFF_LIB - sizeof(struct hs_inject_lib)];
	uint64_t slot_hash[HS_INJ_MAX_SLOTS];
	uint64_t thresholds[HS_NR_THRESHOLDS];
	struct hs_inject_slot slots[HS_INJ_MAX_SLOTS];
};

_Static_assert(offsetof(struct hs_inject_data, fn_pthread_create) == HS_INJ_OFF_FN_PTHREAD_CREATE, "abi");
_Static_assert(offsetof(struct hs_inject_data, fn_dlerror) == HS_INJ_OFF_FN_DLERROR, "abi");
_Static_assert(offsetof(struct hs_inject_data, target_pid) == HS_INJ_OFF_TARGET_PID, "abi");
_Static_assert(offsetof(struct hs_inject_data, loader_state) == HS_INJ_OFF_LOADER_STATE, "abi");
_Static_assert(offsetof(struct hs_inject_data, attr) == HS_INJ_OFF_ATTR, "abi");
_Static_assert(offsetof(struct hs_inject_data, lib_path) == HS_INJ_OFF_LIB_PATH, "abi");
_Static_assert(offsetof(struct hs_inject_data, entry) == HS_INJ_OFF_ENTRY, "abi");
_Static_assert(offsetof(struct hs_inject_data, dl_msg) == HS_INJ_OFF_DL_MSG, "abi");
_Static_assert(offsetof(struct hs_inject_data, gate) == HS_INJ_OFF_GATE, "abi");
_Static_assert(offsetof(struct hs_inject_data, loader_tid) == HS_INJ_OFF_LOADER_TID, "abi");
_Static_assert(offsetof(struct hs_inject_data, deadline) == HS_INJ_OFF_DEADLINE, "abi");
_Static_assert(offsetof(struct hs_inject_data, hold_ns) == HS_INJ_OFF_HOLD_NS, "abi");
_Static_assert(offsetof(struct hs_inject_data, passed) == HS_INJ_OFF_PASSED, "abi");
_Static_assert(offsetof(struct hs_inject_data, held) == HS_INJ_OFF_HELD, "abi");
_Static_assert(offsetof(struct hs_inject_data, timed_out) == HS_INJ_OFF_TIMED_OUT, "abi");
_Static_assert(offsetof(struct hs_inject_data, patching) == HS_INJ_OFF_PATCHING, "abi");
_Static_assert(offsetof(struct hs_inject_data, inflight) == HS_INJ_OFF_INFLIGHT, "abi");
_Static_assert(offsetof(struct hs_inject_data, ready_ns) == HS_INJ_OFF_READY_NS, "abi");
_Static_assert(offsetof(struct hs_inject_data, firing_tid) == HS_INJ_OFF_FIRING_TID, "abi");
_Static_assert(offsetof(struct hs_inject_data, ldso_lo) == HS_INJ_OFF_LDSO_LO, "abi");
_Static_assert(offsetof(struct hs_inject_data, ldso_hi) == HS_INJ_OFF_LDSO_HI, "abi");
_Static_assert(offsetof(struct hs_inject_data, scratch) == HS_INJ_OFF_SCRATCH, "abi");
_Static_assert(offsetof(struct hs_inject_data, times) == HS_INJ_OFF_TIMES, "abi");
_Static_assert(offsetof(struct hs_inject_data, pin) == HS_INJ_OFF_PIN, "abi");
_Static_assert(offsetof(struct hs_inject_data, pinned) == HS_INJ_OFF_PINNED, "abi");
_Static_assert(offsetof(struct hs_inject_data, cpus_len) == HS_INJ_OFF_CPUS_LEN, "abi");
_Static_assert(offsetof(struct hs_inject_data, getcpu) == HS_INJ_OFF_GETCPU, "abi");
_Static_assert(offsetof(struct hs_inject_data, cpus) == HS_INJ_OFF_CPUS, "abi");
_Static_assert(offsetof(struct hs_inject_data, nr_first) == HS_INJ_OFF_NR_FIRST, "abi");
_Static_assert(offsetof(struct hs_inject_data, rest_ns) == HS_INJ_OFF_REST_NS, "abi");
_Static_assert(offsetof(struct hs_inject_data, cpu_one) == HS_INJ_OFF_CPU_ONE, "abi");
_Static_assert(offsetof(struct hs_inject_data, slot_kind) == HS_INJ_OFF_SLOT_KIND, "abi");
_Static_assert(offsetof(struct hs_inject_data, slots) == HS_INJ_OFF_SLOTS, "abi");
_Static_assert(offsetof(struct hs_inject_data, lib) == HS_INJ_OFF_LIB, "abi");
_Static_assert(offsetof(struct hs_inject_data, thresholds) == HS_INJ_OFF_THRESHOLDS, "abi");
_Static_assert(offsetof(struct hs_inject_data, slot_hash) == HS_INJ_OFF_SLOT_HASH, "abi");
_Static_assert(offsetof(struct hs_inject_lib, lib_state) == HS_INJ_LIB_OFF_STATE, "abi");
_Static_assert(HS_LIB_DETACHED == HS_LIB_STATE_DETACHED, "abi");
_Static_assert(sizeof(struct hs_inject_data) <= HS_STUB_DATA_BYTES, "abi");

/* The library's entry, looked up by name by the stub. */
#define HS_INJECT_ENTRY "heapsnap_inject"
#define HS_LIB_SONAME "libheapsnap.so"
#endif
#endif
