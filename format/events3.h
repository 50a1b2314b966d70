/* SPDX-License-Identifier: MIT */
/* Version 3 events (docs/FORMAT.md, Version 3 events): what the writer and the reader both
 * keep per frame so that a steady state of allocations and frees is written as the same few
 * bytes again and again. Each side updates this state the same way after every event, so
 * the writer's choice of a short form and the reader's reading of it cannot drift apart.
 * Everything here is bounded: fixed windows and a table of at most HS3_PAIRS entries, all
 * reset at the start of every frame. */
#ifndef HEAPSNAP_EVENTS3_H
#define HEAPSNAP_EVENTS3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "classes3.h"
#include "hmap.h"
#include "record.h"

/* Core records of version 3 besides THREAD (1): TIME (5), COLUMNS (6), THREAD_AGAIN (7). */
#define HS3_REC_TIME 5
#define HS3_REC_COLUMNS 6
#define HS3_REC_THREAD_AGAIN 7

/* THREAD_AGAIN names one of the last HS3_THREADS threads of the frame, most recent first. */
#define HS3_THREADS 16

/* A FREE may name its block by age: one of the last HS3_AGES allocations of the frame (a
 * window of 64 or 256, ages past 16 in a column, made random workloads' files 2 to 11% larger
 * and Python's 1.5% smaller). Whether a block is live is kept in a table of HS3_LIVE entries
 * indexed by slot, so that finding a block's age is one look on both sides; of two live slots
 * that share an entry, the older loses its age, and is freed by slot. */
#define HS3_AGES 16
#define HS3_LIVE 1024
/* An ALLOC may name its slot as the one freed last in the frame and not taken again: the top
 * of a stack of the frame's frees, of which the last HS3_FREED are kept. The recorder hands
 * out the slot freed last first, so this is every allocation of a freed slot but those whose
 * free was in an earlier frame (or past HS3_FREED frees back): with 16 kept, a Python run
 * (PYTHONMALLOC=malloc) wrote out 16.3% of its allocations' slots, with 4096 15.4%, and its
 * file was 2.2% smaller. */
#define HS3_FREED 4096
/* (size, stack, kind, weight) pairs an ALLOC may name by index; past it, pairs are literal. */
#define HS3_PAIRS 4096

/* Event type bytes. ALLOC: 1 1 s s p p 0 0; FREE: 1 0 a d n n n n; version 4's FREE by
 * class: 1 0 1 1 t t t t, t the TIME records back (15: 15 more than the TNO column's). */
#define HS3_ALLOC 0xc0u
#define HS3_SLOT_SHIFT 4
#define HS3_PAIR_SHIFT 2
#define HS3_FREE_AGE 0x20u
#define HS3_ALLOC_RESERVED 0x03u
#define HS3_FREE_NEAR 0x10u
#define HS3_FREE_CLASS 0x30u
#define HS3_CLASS_TNO_ESC 15u
/* The writer's window for FREE near the last one (zigzag of the difference): see near_adapt. */
#define HS3_NEAR_WIDE 256
#define HS3_NEAR_RUN 1024

enum hs3_slot_form {
	HS3_SLOT_FREED = 0,    /* the top of the frame's stack of frees, which it pops */
	HS3_SLOT_NEW = 1,      /* one past the highest slot allocated in the frame */
	HS3_SLOT_RESERVED = 2, /* corrupt */
	HS3_SLOT_EXPLICIT = 3, /* low byte in the slot-low column, the rest in the slot-high one */
};

enum hs3_pair_form {
	HS3_PAIR_SAME = 0,    /* the previous ALLOC's pair in the frame */
	HS3_PAIR_INDEX = 1,   /* pair number REF of the frame's table */
	HS3_PAIR_NEW = 2,     /* defined in the pair column, and added to the table */
	HS3_PAIR_LITERAL = 3, /* defined in the pair column; the table is full */
};

/* The columns: byte streams that follow a frame's records, so that each holds values of
 * one distribution, which zstd's entropy coder then codes close to it. */
enum hs3_col { HS3_COL_REF, HS3_COL_SLOTLO, HS3_COL_SLOTHI, HS3_COL_PAIR, HS3_COL_NEAR, HS3_COL_TNO, HS3_NR_COLS };
/* Version 3.0 has the first five; version 4 all six. */
#define HS3_NR_COLS_V3 5

struct hs3_pair {
	uint64_t size, stack_id, weight;
	uint32_t kind;
	bool sampled;
};

struct hs3_live {
	uint64_t slot, n; /* n: the allocation's number in the frame */
	uint32_t gen;     /* the frame's (hs3_state's gen) that set it: else unused */
	bool live;
};

/* Reset at every frame: hs3_state__reset. The arrays at the end are not cleared with the rest,
 * which a frame of a few bytes would otherwise pay 56 KiB of stores for: the stack of frees
 * and the ring of ages are read only where this frame wrote them, and an entry of live counts
 * only if it bears the frame's gen. */
struct hs3_state {
	uint64_t time; /* of the events that follow, set by TIME */
	bool have_time;
	uint64_t next_new;
	uint64_t last_free; /* the slot of the frame's last FREE */
	uint64_t freed_top;
	uint32_t nr_freed; /* entries on the stack, at most HS3_FREED */
	uint32_t gen;      /* the frame's number, for live's entries */
	uint64_t nr_allocs;
	struct {
		uint32_t pid, tid;
	} threads[HS3_THREADS]; /* threads[0]: the current one */
	uint32_t nr_threads;
	uint64_t tno; /* TIME records in the frame so far */
	struct hs3_classes *cls; /* version 4's index for FREE by class; NULL in version 3 */
	struct hs3_pair *pairs; /* HS3_PAIRS entries, owned by the caller */
	uint32_t nr_pairs;
	int32_t last_pair; /* -1: none */
	/* Not cleared by hs3_state__reset: */
	uint64_t freed[HS3_FREED]; /* ring: the top at (freed_top - 1) % HS3_FREED */
	uint64_t age_slot[HS3_AGES]; /* ring: the slot of the allocation numbered n at n % HS3_AGES */
	struct hs3_live live[HS3_LIVE]; /* at slot % HS3_LIVE */
};

void hs3_state__reset(struct hs3_state *s);
/* Age of the live block in SLOT among the frame's last HS3_AGES allocations, or -1. */
int hs3_age_find(const struct hs3_state *s, uint64_t slot);
/* What every ALLOC and FREE does to the state, on both sides; FROM_FREED: the ALLOC took the
 * top of the stack of frees; PAIR: its number in the frame's table, -1 for a literal one. */
void hs3_note_alloc(struct hs3_state *s, uint64_t slot, bool from_freed, int32_t pair);
void hs3_note_free(struct hs3_state *s, uint64_t slot);
/* Index of the thread among the frame's recent ones, or -1; and what THREAD and
 * THREAD_AGAIN do to them: the thread moves to the front. */
int hs3_thread_find(const struct hs3_state *s, uint32_t pid, uint32_t tid);
void hs3_note_thread(struct hs3_state *s, uint32_t pid, uint32_t tid);
bool hs3_pair_eq(const struct hs3_pair *a, const struct hs3_pair *b);

/* ---- writer ---- */

struct hs3_buf {
	uint8_t *p;
	size_t len, cap;
};

/* Open addressing over the frame's pairs: twice their number, stale entries told by gen. */
#define HS3_PAIR_HASH (2 * HS3_PAIRS)
struct hs3_hent {
	uint32_t gen, idx;
};

struct hs3_writer {
	struct hs3_state st;
	struct hs3_classes classes;
	/* FREE by class names the newest block of the freed one's class: the writer then swaps
	 * the two blocks' slots, its callers' slot -> file slot (map) and back (inv), for slots
	 * under HS3_MAP_MAX (above it slots are their own, and never swapped). */
	uint32_t *map, *inv;
	uint64_t *moved; /* a bit per caller's slot: map[slot] is not slot (read only then) */
	size_t map_len, map_cap;
	/* Per thread of the frame, the file slot its last event allocated, plus one (0: its last
	 * event was a free): the analyzer's temporary allocations, which no swap may change. */
	struct hmap lastev;
	struct hmap_slot *lastev_cur; /* the entry of the thread of the last event, or NULL */
	uint32_t ncols; /* HS3_NR_COLS_V3 or HS3_NR_COLS */
	struct hs3_buf col[HS3_NR_COLS];
	struct hs3_hent *hash; /* HS3_PAIR_HASH */
	uint32_t gen;
	uint64_t quantum; /* ticks of coarse time; 1 = exact */
	uint64_t near_max, near_seen, near_close; /* near_adapt */
};

#define HS3_MAP_MAX (1u << 28)
/* MAJOR 3 writes version 3.0's events, 4 version 4's. */
int hs3_writer__init(struct hs3_writer *w, uint32_t major);
void hs3_writer__fini(struct hs3_writer *w);
void hs3_writer__reset(struct hs3_writer *w); /* at every frame */
size_t hs3_writer__cols_len(const struct hs3_writer *w);
/* Encodes the ALLOC, ALLOC_SAMPLED or FREE R, with the TIME record before it when its time
 * moves, into MAIN (room for 32 bytes) and the columns. Returns -errno. COARSE gets the time
 * a reader will return for it. */
int hs3_encode(struct hs3_writer *w, const struct hs_record *r, uint8_t **main, uint64_t *coarse);
/* The COLUMNS record that starts the frame, into OUT (room for 1 + 10 * (1 + HS3_NR_COLS)). */
size_t hs3_columns_header(const struct hs3_writer *w, uint8_t *out);

/* ---- reader ---- */

struct hs3_cursor {
	const uint8_t *p, *end;
};

/* Reads a frame's COLUMNS record at *P (main records end at END), of NCOLS columns: sets the
 * columns to the last bytes of the frame and *MAIN_END to where the records stop. NULL or
 * why not. */
const char *hs3_columns_read(const uint8_t **p, const uint8_t *end, uint32_t ncols, struct hs3_cursor col[HS3_NR_COLS],
			     const uint8_t **main_end);
/* Decodes the event whose type byte TYPE was just read from *P (the main records, up to
 * END) into REC (time, type, slot and the alloc fields). Returns NULL or why it is corrupt. */
const char *hs3_decode(struct hs3_state *s, struct hs3_cursor col[HS3_NR_COLS], uint8_t type, struct hs_record *rec);
/* A TIME record's field at *P. */
const char *hs3_decode_time(struct hs3_state *s, const uint8_t **p, const uint8_t *end);

#endif
