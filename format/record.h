/* SPDX-License-Identifier: MIT */
/* heapsnap record file: the one library both heapsnap-record and heapsnap-analyze use.
 * docs/FORMAT.md is the byte-level specification of what this code reads and writes. */
#ifndef HEAPSNAP_RECORD_H
#define HEAPSNAP_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "abi/event_abi.h"

#define HS_FORMAT_MAJOR 5
#define HS_FORMAT_MINOR 3
/* The oldest major version the reader still reads: version 1 named blocks by address. */
#define HS_FORMAT_MAJOR_OLDEST 1

#define HS_FILE_MAGIC "\x89HSNP\r\n\x1a"
#define HS_FILE_HEADER_SIZE 16
#define HS_FRAME_MAGIC 0x42465348u /* "HSFB" little-endian */
#define HS_FRAME_HEADER_SIZE 16
#define HS_TRAILER_MAGIC "HSNPEND\n"
#define HS_TRAILER_SIZE 16

/* Bounds the reader enforces whatever the file claims. */
#define HS_MAX_FRAME_RAW (16u << 20)
/* The recorder's own limits (common/abi/event_abi.h): a file that claims more was not written by it,
 * and would only make the analyzer spend memory no recording needs. */
#define HS_MAX_STACK_FRAMES HS_MAX_STACK
#define HS_MAX_PROBES 4096
#define HS_MAX_COUNTERS 1024
#define HS_MAX_BUILD_ID 64
#define HS_MAX_DWARF_REGS 32
#define HS_MAX_DWARF_WINDOW HS_MAX_DWARF_BYTES
#define HS_MAX_PY_LINE_TABLE (256u << 10)
/* Strings a report shows for every frame or sample that names them: paths (of mappings, of
 * executables; PATH_MAX and " (deleted)", twice over) and names (commands, threads, Python
 * functions and files, probes, counters). The writer cuts a longer one, since they come from
 * processes and files nobody here wrote; a file that holds a longer one is corrupt there: one
 * 16 MiB name shown for each of a million frames would be terabytes of work. */
#define HS_MAX_PATH 8192
#define HS_MAX_NAME 4096

#define HS_FRAME_FLAG_FOOTER 1u

enum hs_rec_type {
	/* Core records: fixed layout, no length prefix; every v1 reader knows them. */
	HS_REC_THREAD = 1,
	HS_REC_ALLOC = 2,
	HS_REC_ALLOC_SAMPLED = 3,
	HS_REC_FREE = 4,
	HS_REC_CORE_MAX = 15,
	/* Extended records: varint length prefix; unknown ones are skipped. */
	HS_REC_SESSION = 16,
	HS_REC_PROCESS = 17,
	HS_REC_EXIT = 18,
	HS_REC_MAPPING = 19,
	HS_REC_UNMAP = 20,
	HS_REC_STACK = 21,
	HS_REC_SNAPSHOT = 22,
	HS_REC_RSS = 23,
	HS_REC_COUNTERS = 24,
	HS_REC_END = 25,
	HS_REC_THREAD_NAME = 26,
	HS_REC_FRAME_INDEX = 27,
	HS_REC_PROBE = 28,
	HS_REC_STACK_DWARF = 29,
	HS_REC_PY_CODE = 30,
	HS_REC_STACK_TAIL = 31, /* version 5: the reader returns it as the HS_REC_STACK it stands for */
	HS_REC_HORIZON = 32,    /* 5.3: no event after it in the file has an earlier time */
	HS_REC_EXT_MAX = 127,
};

/* Version 2: a type byte with the top bit set is a packed ALLOC or FREE (docs/FORMAT.md).
 * Bit 6 is set for ALLOC. An ALLOC's bit 5 says its slot is the previous event's, and
 * bit 4 that its stack and kind are the previous packed ALLOC's in the frame. Bits 0-3
 * hold the zigzag time delta, or HS_PACKED_TIME_ESC followed by a varint of the rest. */
#define HS_PACKED_EVENT 0x80u
#define HS_PACKED_ALLOC 0x40u
#define HS_PACKED_SAME_SLOT 0x20u
#define HS_PACKED_SAME_SITE 0x10u
#define HS_PACKED_TIME_ESC 15u

/* enum hs_alloc_kind and enum hs_stack_mode are the event ABI's (common/abi/event_abi.h):
 * a record carries the values its events did. */

/* EXIT.flags: the process ended, its status is not known (the in-process recorder's library
 * sees a process end, not how). */
#define HS_EXIT_STATUS_UNKNOWN 1u

enum hs_process_origin { HS_PROC_ATTACHED = 0, HS_PROC_STARTED = 1, HS_PROC_FORKED = 2, HS_PROC_EXEC = 3 };

enum hs_snapshot_origin {
	HS_SNAP_SIGNAL = 0,
	HS_SNAP_INTERVAL = 1,
	HS_SNAP_EXIT = 2,
	HS_SNAP_PEAK = 3,
	HS_SNAP_END = 4,
	/* 5.2: a Python interpreter began to finalize (its atexit callbacks run), in process `pid` */
	HS_SNAP_PY_FINALIZE = 5,
};

/* Set in an alloc record's kind when it re-creates the block a failed realloc released:
 * it undoes the preceding free and is not a new allocation. */
#define HS_KIND_RESTORED 0x80u

/* A free whose block the file never allocated. Only the reader produces it, for a
 * version 1 file's free of an address that was not live. */
#define HS_SLOT_NONE UINT64_MAX

/* Weights are unsigned 16.16 fixed point; an unsampled event weighs exactly 1. */
#define HS_WEIGHT_ONE 65536u

struct hs_bytes {
	const uint8_t *p;
	uint32_t len;
};

struct hs_probe {
	const char *symbol;
	const char *path;
	uint64_t offset;
	struct hs_bytes build_id;
	uint32_t kind; /* enum hs_probe_kind of the recorder, informational */
};

struct hs_counter {
	const char *name;
	uint64_t value;
};

struct hs_frame_index_entry {
	uint64_t offset;
	uint64_t first_time;
	uint64_t last_time;
};

/* One decoded record. Strings, byte strings and arrays point into reader- or
 * caller-owned memory that stays valid until the next record is read. */
struct hs_record {
	uint32_t type;
	uint64_t time; /* absolute, in session ticks */
	uint32_t pid, tid;
	union {
		/* A block is named by its slot: a small number the recorder reuses once the block
		 * is freed, so live blocks always use the lowest few. The address is the
		 * recorder's business: the writer does not store it and the reader returns 0
		 * (version 1 files: the address, and a slot the reader assigns). */
		struct {
			uint64_t ptr, slot, size, stack_id;
			uint64_t weight; /* 16.16 fixed point */
			uint32_t kind;
		} alloc;
		struct {
			uint64_t ptr, slot; /* in the same places as alloc.ptr and alloc.slot */
		} free;
		struct {
			const char *tool_version, *hostname, *kernel, *cmdline;
			uint64_t tick_ns, monotonic_start_ns, realtime_start_ns;
			uint64_t sample_rate, max_stack, flags;
			uint32_t stack_mode;
			uint32_t nr_probes;
			const struct hs_probe *probes;
			const char *via; /* 2.1: how events were taken, and why ("" if not said) */
		} session;
		struct {
			uint32_t ppid, origin;
			const char *comm, *cmdline, *exe;
			struct hs_bytes build_id;
		} process;
		struct {
			int64_t status;
			uint32_t flags; /* 5.1: HS_EXIT_STATUS_UNKNOWN */
		} exit;
		struct {
			uint64_t start, end, offset, inode;
			const char *path;
			struct hs_bytes build_id;
		} mapping;
		struct {
			uint64_t start, end;
		} unmap;
		struct {
			uint64_t id;
			uint32_t nr;
			const uint64_t *ips;
		} stack;
		struct {
			const char *label;
			uint32_t origin;
			uint64_t live_bytes;
		} snapshot;
		struct {
			uint64_t rss_bytes, vm_bytes;
		} rss;
		struct {
			uint32_t nr;
			const struct hs_counter *items;
		} counters; /* HS_REC_COUNTERS and HS_REC_END */
		struct {
			const char *comm;
		} thread_name;
		struct {
			uint32_t nr;
			const struct hs_frame_index_entry *entries;
		} frame_index;
		struct hs_probe probe; /* HS_REC_PROBE: a probe attached after the session header */
		struct {
			uint64_t id;
			uint32_t nregs;
			const uint64_t *regs; /* ip, sp, bp, bx, r12, r13, r14, r15 */
			uint64_t used;        /* stack bytes in use above sp; > len when truncated */
			struct hs_bytes window; /* the stack from sp upwards */
		} dwarf;
		/* A Python code object of process `pid`, named in its stacks by HS_PYFRAME(id, offset)
		 * (common/abi/event_abi.h): once per code object and process. */
		struct {
			uint64_t id;
			const char *qualname, *filename;
			uint32_t first_line;
			uint32_t py_version;    /* major << 8 | minor: which line-table format */
			struct hs_bytes line_table; /* co_lnotab (3.8, 3.9) or co_linetable (3.10+), as is */
		} py_code;
		/* A stack written as its own inner frames and the outer `shared` frames of the stack
		 * `id - back`, written before it (format/stacks5.h). Only tests and fuzzers write one
		 * themselves: the writer makes them of HS_REC_STACK, the reader makes HS_REC_STACK of
		 * them again. */
		struct {
			uint64_t id;
			uint64_t skip; /* in the file: id less the id of the STACK or tail before, less 1 */
			uint64_t back;
			uint32_t shared, nr;
			const uint64_t *d; /* the own frames, outermost first, as differences (stacks5.c) */
		} stack_tail;
	};
};

/* ---- writer ---- */

struct record_writer;

struct record_writer_opts {
	uint32_t frame_size; /* raw bytes per frame before it is compressed; 0 = 2 MiB */
	int zstd_level;      /* 0: by the last frame's ratio (writer.c, level_after) */
	const char **why;    /* set to a sentence when open fails for a reason errno does not name */
	uint32_t footer_max; /* raw bytes the footer frame may hold; 0 = HS_MAX_FRAME_RAW (tests set less) */
	uint32_t major;      /* 0 = HS_FORMAT_MAJOR; 2 writes version 2.1 (tests, fixtures) */
	/* Version 3 writes an event's time to within this (the step TIME records move in):
	 * 0 = HS_TIME_QUANTUM_NS; at most the session's tick_ns is exact. */
	uint64_t time_quantum_ns;
};
#define HS_TIME_QUANTUM_NS 1000000ull

/* Starts a file for PATH and writes the file header. The file gets its name only when
 * published (record_writer__publish, or at close): see outfile.h for what is refused. */
int record_writer__open(const char *path, const struct record_writer_opts *opts, struct record_writer **out);
/* Appends one record to the current frame; the frame is compressed and written when full. */
int record_writer__write(struct record_writer *w, const struct hs_record *rec);
/* Compresses and writes the current frame now, so a crash loses nothing before this point. */
int record_writer__flush(struct record_writer *w);
/* Gives the file its name, so it is seen only once it is readable: call it after a flush
 * that wrote the first records. */
int record_writer__publish(struct record_writer *w);
/* Writes the last frame, the footer (frame index and snapshots) and the trailer, and
 * publishes the file. */
int record_writer__close(struct record_writer *w);
void record_writer__free(struct record_writer *w);
uint64_t record_writer__bytes_written(const struct record_writer *w);
uint64_t record_writer__raw_bytes(const struct record_writer *w);
/* What the file holds: the records of the frames written whole. A frame whose write failed
 * (a full disk) is cut off the file again and not counted, so the file reads to its last
 * whole frame and these say what a reader finds there. */
struct record_writer_counts {
	uint64_t allocs; /* HS_REC_ALLOC and HS_REC_ALLOC_SAMPLED */
	uint64_t frees;
	uint64_t stacks; /* HS_REC_STACK and HS_REC_STACK_DWARF */
};
void record_writer__counts(const struct record_writer *w, struct record_writer_counts *out);
/* What close put in the footer frame. Its records are kept whole in that one frame, up to
 * footer_max: a frame index too large for it has adjacent entries merged (the time range it
 * gives is unchanged), and only the first snapshot copies that fit are kept (every snapshot
 * is still in the data frames, where the analyzer reads it). */
struct record_writer_footer {
	uint64_t frames;          /* data frames in the file */
	uint64_t index_entries;   /* frame index entries: fewer than frames when merged */
	uint64_t snapshots;       /* SNAPSHOT records in the data frames */
	uint64_t snapshot_copies; /* of them, copied into the footer */
};
void record_writer__footer(const struct record_writer *w, struct record_writer_footer *out);
/* The first write error, as -errno (0: none); every call after it fails with it. */
int record_writer__error(const struct record_writer *w);

/* ---- reader ---- */

struct record_reader;

enum hs_read_status {
	HS_READ_OK = 0,        /* still reading */
	HS_READ_END = 1,       /* clean end: footer and trailer present */
	HS_READ_TRUNCATED = 2, /* the file stops after its last complete frame */
	HS_READ_CORRUPT = 3,   /* a frame or record failed validation */
	HS_READ_IO = 4,
	HS_READ_WAIT = 5,      /* following: the next frame is not all there yet (record_reader__follow) */
};

int record_reader__open(const char *path, struct record_reader **out, char *err, size_t errlen);
/* Follows PATH ("-": standard input) as it is written: a regular file another recorder is
 * writing, or a pipe. It is read once, in order, never seeking (no rewind, no footer
 * lookup). Where a frame (or the header, or a footer's trailer) is not all there yet,
 * __next returns 0 with the status HS_READ_WAIT, and the next call tries again: it is not
 * an end, whatever it holds so far. Every other check holds as for a file. The input ends
 * with the footer and trailer, or with a pipe's EOF (judged then as the end of a file).
 * Memory: a frame and what was read ahead of it, 256 KiB at a time. */
int record_reader__follow(const char *path, struct record_reader **out, char *err, size_t errlen);
/* Following, after __next returned 0 with HS_READ_WAIT: waits up to TIMEOUT_MS for more of
 * the input (a pipe's data, or, for a file, a while before looking again), or for ALSO_FD
 * (-1: none) to be readable, which it returns true for. */
bool record_reader__wait(struct record_reader *r, int timeout_ms, int also_fd);
bool record_reader__waiting(const struct record_reader *r);
/* Returns 1 with *rec filled, 0 at the end of the data (see __status), or a negative errno. */
int record_reader__next(struct record_reader *r, struct hs_record *rec);
enum hs_read_status record_reader__status(const struct record_reader *r);
/* Human-readable reason for TRUNCATED/CORRUPT/IO, naming the file and offset. */
const char *record_reader__error(const struct record_reader *r);
uint64_t record_reader__offset(const struct record_reader *r); /* file offset of the current frame */
uint64_t record_reader__file_size(const struct record_reader *r);
uint64_t record_reader__frames(const struct record_reader *r);
uint32_t record_reader__major(const struct record_reader *r);
uint32_t record_reader__minor(const struct record_reader *r);
uint64_t record_reader__skipped_records(const struct record_reader *r);
/* Starts again from the first frame. */
int record_reader__rewind(struct record_reader *r);
/* Reads the footer through the trailer without moving the stream. Returns 1 and calls CB for
 * each footer record, 0 when the file has no footer, negative on a damaged footer. */
int record_reader__footer(struct record_reader *r, int (*cb)(const struct hs_record *rec, void *ctx), void *ctx);
void record_reader__free(struct record_reader *r);

const char *hs_rec_type_name(uint32_t type);
/* A copy of S with control characters (C0, DEL, C1 as UTF-8) written as \xHH: for strings
 * from a file or a binary on their way to a report. NULL when out of memory. */
char *hs_strdup_printable(const char *s);

/* ---- encoding helpers (exposed for tests) ---- */
/* Inline: the writer calls it several times per event. */
static inline size_t hs_put_uvarint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}
/* Returns bytes consumed, or 0 when the varint is unterminated within LEN or longer than 10 bytes. */
size_t hs_get_uvarint(const uint8_t *p, size_t len, uint64_t *v);
static inline uint64_t hs_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t hs_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

#endif
