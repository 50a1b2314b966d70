// SPDX-License-Identifier: MIT
/* The extended records' field tables (schema.h): the one place their layout is written down
 * in code. Each line is one field, in file order; docs/FORMAT.md describes the same bytes. */
#include <string.h>

#include "schema.h"

/* The offset of member M of S, which must be of type T: a table that says U64 of a uint32_t
 * (or a string of anything but a const char *) does not compile. */
#define TYPED(S, M, T) ((uint16_t)(offsetof(S, M) + 0 * sizeof(_Generic(((S *)0)->M, T: 1))))

#define U64(S, M) {.name = #M, .enc = HS_ENC_U64, .off = TYPED(S, M, uint64_t)}
#define U32(S, M, ...) {.name = #M, .enc = HS_ENC_U32, .off = TYPED(S, M, uint32_t), __VA_ARGS__}
#define S64(S, M) {.name = #M, .enc = HS_ENC_S64, .off = TYPED(S, M, int64_t)}
#define SPAN(S, M, BASE) \
	{.name = #M, .enc = HS_ENC_SPAN, .off = TYPED(S, M, uint64_t), .aux = TYPED(S, BASE, uint64_t)}
#define DELTA(S, M) {.name = #M, .enc = HS_ENC_DELTA, .off = TYPED(S, M, uint64_t)}
#define STR(S, M, ...) {.name = #M, .enc = HS_ENC_STR, .off = TYPED(S, M, const char *), __VA_ARGS__}
/* A path or a name (record.h: HS_MAX_PATH, HS_MAX_NAME), cut by the writer past its limit. */
#define PATH(S, M) STR(S, M, .flags = HS_FF_CLIP, .limit = HS_MAX_PATH)
#define NAME(S, M) STR(S, M, .flags = HS_FF_CLIP, .limit = HS_MAX_NAME)
#define BYTES(S, M, LIMIT, FLAGS) \
	{.name = #M, .enc = HS_ENC_BYTES, .flags = FLAGS, .off = TYPED(S, M, struct hs_bytes), .limit = LIMIT}
#define STRUCT(S, M, T, SUB) {.name = #M, .enc = HS_ENC_STRUCT, .off = TYPED(S, M, T), .sub = &SUB}
#define ARRAY(S, NR, ITEMS, T, SUB, LIMIT, FLAGS) \
	{.name = #ITEMS, .enc = HS_ENC_ARRAY, .flags = FLAGS, .off = TYPED(S, NR, uint32_t), \
	 .aux = TYPED(S, ITEMS, const T *), .limit = LIMIT, .sub = &SUB}

#define SCHEMA(VAR, S, ...) \
	static const struct hs_field VAR##_fields[] = {__VA_ARGS__}; \
	static const struct hs_schema VAR = { \
		#VAR, sizeof(S), sizeof(VAR##_fields) / sizeof(VAR##_fields[0]), VAR##_fields}

#define R struct hs_record
#define PROBE struct hs_probe
#define COUNTER struct hs_counter
#define INDEX struct hs_frame_index_entry

/* ---- the fixed-size structures ---- */

#define LE(S, AT, M, T) {.name = #M, .at = AT, .width = sizeof(T), .off = TYPED(S, M, T)}
#define MAGIC(S, AT, M) \
	{.name = #M, .at = AT, .width = sizeof(((S *)0)->M), .bytes = true, .off = TYPED(S, M, uint8_t *)}
#define FIXED(VAR, S, SIZE, ...) \
	static const struct hs_fixed_field VAR##_fields[] = {__VA_ARGS__}; \
	const struct hs_fixed_layout VAR = {#VAR, SIZE, sizeof(VAR##_fields) / sizeof(VAR##_fields[0]), VAR##_fields}

#define FILEH struct hs_file_header
#define FRAMEH struct hs_frame_header
#define TRAILER struct hs_trailer

FIXED(hs_file_header_layout, FILEH, HS_FILE_HEADER_SIZE,
      MAGIC(FILEH, 0, magic),
      LE(FILEH, 8, major, uint16_t),
      LE(FILEH, 10, minor, uint16_t)); /* 12..15 reserved */

FIXED(hs_frame_header_layout, FRAMEH, HS_FRAME_HEADER_SIZE,
      LE(FRAMEH, 0, magic, uint32_t),
      LE(FRAMEH, 4, comp_size, uint32_t),
      LE(FRAMEH, 8, raw_size, uint32_t),
      LE(FRAMEH, 12, flags, uint32_t));

FIXED(hs_trailer_layout, TRAILER, HS_TRAILER_SIZE,
      LE(TRAILER, 0, footer_offset, uint64_t),
      MAGIC(TRAILER, 8, magic));

static uint64_t load(const void *v, uint32_t width)
{
	switch (width) {
	case 2: return *(const uint16_t *)v;
	case 4: return *(const uint32_t *)v;
	default: return *(const uint64_t *)v;
	}
}

static void store(void *v, uint32_t width, uint64_t x)
{
	switch (width) {
	case 2: *(uint16_t *)v = (uint16_t)x; break;
	case 4: *(uint32_t *)v = (uint32_t)x; break;
	default: *(uint64_t *)v = x; break;
	}
}

void hs_fixed_put(const struct hs_fixed_layout *l, const void *src, uint8_t *dst)
{
	memset(dst, 0, l->size);
	for (uint32_t i = 0; i < l->nr; i++) {
		const struct hs_fixed_field *f = &l->fields[i];
		const uint8_t *v = (const uint8_t *)src + f->off;
		uint64_t x;

		if (f->bytes) {
			memcpy(dst + f->at, v, f->width);
			continue;
		}
		x = load(v, f->width);
		for (uint32_t k = 0; k < f->width; k++)
			dst[f->at + k] = (uint8_t)(x >> (8 * k));
	}
}

void hs_fixed_get(const struct hs_fixed_layout *l, const uint8_t *src, void *dst)
{
	for (uint32_t i = 0; i < l->nr; i++) {
		const struct hs_fixed_field *f = &l->fields[i];
		uint8_t *v = (uint8_t *)dst + f->off;
		uint64_t x = 0;

		if (f->bytes) {
			memcpy(v, src + f->at, f->width);
			continue;
		}
		for (uint32_t k = 0; k < f->width; k++)
			x |= (uint64_t)src[f->at + k] << (8 * k);
		store(v, f->width, x);
	}
}

/* ---- array items and embedded structs ---- */

/* A STACK's return addresses: each the difference from the one before, as they are close. */
static const struct hs_field ip_fields[] = {{.name = "ip", .enc = HS_ENC_SDELTA, .off = 0}};
static const struct hs_schema ip_item = {"ip", sizeof(uint64_t), 1, ip_fields};

/* A STACK_TAIL's own frames: each the difference from a frame the reader already has. */
static const struct hs_field tail_fields[] = {{.name = "d", .enc = HS_ENC_S64, .off = 0}};
static const struct hs_schema tail_item = {"d", sizeof(uint64_t), 1, tail_fields};

static const struct hs_field reg_fields[] = {{.name = "reg", .enc = HS_ENC_U64, .off = 0}};
static const struct hs_schema reg_item = {"reg", sizeof(uint64_t), 1, reg_fields};

/* PROBE-BODY: shared by SESSION's probe list and PROBE records. */
SCHEMA(probe_body, PROBE,
       NAME(PROBE, symbol),
       PATH(PROBE, path),
       U64(PROBE, offset),
       BYTES(PROBE, build_id, HS_MAX_BUILD_ID, HS_FF_CLIP),
       U32(PROBE, kind));

SCHEMA(counter_item, COUNTER,
       NAME(COUNTER, name),
       U64(COUNTER, value));

SCHEMA(index_item, INDEX,
       DELTA(INDEX, offset),
       U64(INDEX, first_time),
       SPAN(INDEX, last_time, first_time));

/* ---- records ---- */

SCHEMA(session, R,
       STR(R, session.tool_version),
       STR(R, session.hostname),
       STR(R, session.kernel),
       STR(R, session.cmdline),
       U64(R, session.tick_ns),
       U64(R, session.monotonic_start_ns),
       U64(R, session.realtime_start_ns),
       U64(R, session.sample_rate),
       U32(R, session.stack_mode),
       U64(R, session.max_stack),
       U64(R, session.flags),
       ARRAY(R, session.nr_probes, session.probes, PROBE, probe_body, HS_MAX_PROBES, 0),
       STR(R, session.via, .flags = HS_FF_OPTIONAL)); /* 2.1 */

SCHEMA(process, R,
       U64(R, time),
       U32(R, pid),
       U32(R, process.ppid),
       U32(R, process.origin),
       NAME(R, process.comm),
       STR(R, process.cmdline),
       PATH(R, process.exe),
       BYTES(R, process.build_id, HS_MAX_BUILD_ID, HS_FF_CLIP));

SCHEMA(exit_, R,
       U64(R, time),
       U32(R, pid),
       S64(R, exit.status),
       U32(R, exit.flags, .flags = HS_FF_OPTIONAL)); /* 5.1 */

SCHEMA(mapping, R,
       U64(R, time),
       U32(R, pid),
       U64(R, mapping.start),
       SPAN(R, mapping.end, mapping.start),
       U64(R, mapping.offset),
       U64(R, mapping.inode),
       PATH(R, mapping.path),
       BYTES(R, mapping.build_id, HS_MAX_BUILD_ID, HS_FF_CLIP));

SCHEMA(unmap, R,
       U64(R, time),
       U32(R, pid),
       U64(R, unmap.start),
       SPAN(R, unmap.end, unmap.start));

SCHEMA(stack, R,
       U64(R, stack.id),
       ARRAY(R, stack.nr, stack.ips, uint64_t, ip_item, HS_MAX_STACK_FRAMES, HS_FF_MAX_STACK));

SCHEMA(snapshot, R,
       U64(R, time),
       STR(R, snapshot.label),
       U32(R, snapshot.origin),
       U64(R, snapshot.live_bytes),
       U32(R, pid, .flags = HS_FF_OPTIONAL)); /* 5.2: the process it marks, 0 for all */

SCHEMA(rss, R,
       U64(R, time),
       U32(R, pid),
       U64(R, rss.rss_bytes),
       U64(R, rss.vm_bytes));

/* COUNTERS and END */
SCHEMA(counters, R,
       U64(R, time),
       ARRAY(R, counters.nr, counters.items, COUNTER, counter_item, HS_MAX_COUNTERS, 0));

SCHEMA(thread_name, R,
       U32(R, pid),
       U32(R, tid),
       NAME(R, thread_name.comm));

SCHEMA(frame_index, R,
       ARRAY(R, frame_index.nr, frame_index.entries, INDEX, index_item, UINT32_MAX, 0));

SCHEMA(probe, R,
       U64(R, time),
       U32(R, pid),
       STRUCT(R, probe, PROBE, probe_body));

SCHEMA(stack_dwarf, R,
       U64(R, dwarf.id),
       ARRAY(R, dwarf.nregs, dwarf.regs, uint64_t, reg_item, HS_MAX_DWARF_REGS, 0),
       U64(R, dwarf.used),
       BYTES(R, dwarf.window, HS_MAX_DWARF_WINDOW, 0));

SCHEMA(py_code, R,
       U64(R, time),
       U32(R, pid),
       U64(R, py_code.id),
       NAME(R, py_code.qualname),
       PATH(R, py_code.filename),
       U32(R, py_code.first_line),
       U32(R, py_code.py_version),
       BYTES(R, py_code.line_table, HS_MAX_PY_LINE_TABLE, 0));

SCHEMA(stack_tail, R,
       U64(R, stack_tail.skip),
       U64(R, stack_tail.back),
       U32(R, stack_tail.shared),
       ARRAY(R, stack_tail.nr, stack_tail.d, uint64_t, tail_item, HS_MAX_STACK_FRAMES, HS_FF_MAX_STACK));

/* 5.3: every event after it in the file has a time of at least this one (a follower may
 * show the heap up to it: docs/FORMAT.md). */
SCHEMA(horizon, R,
       U64(R, time));

static const struct hs_schema *const by_type[HS_REC_EXT_MAX + 1] = {
	[HS_REC_SESSION] = &session,
	[HS_REC_PROCESS] = &process,
	[HS_REC_EXIT] = &exit_,
	[HS_REC_MAPPING] = &mapping,
	[HS_REC_UNMAP] = &unmap,
	[HS_REC_STACK] = &stack,
	[HS_REC_SNAPSHOT] = &snapshot,
	[HS_REC_RSS] = &rss,
	[HS_REC_COUNTERS] = &counters,
	[HS_REC_END] = &counters,
	[HS_REC_THREAD_NAME] = &thread_name,
	[HS_REC_FRAME_INDEX] = &frame_index,
	[HS_REC_PROBE] = &probe,
	[HS_REC_STACK_DWARF] = &stack_dwarf,
	[HS_REC_PY_CODE] = &py_code,
	[HS_REC_STACK_TAIL] = &stack_tail,
	[HS_REC_HORIZON] = &horizon,
};

const struct hs_schema *hs_schema_of(uint32_t type)
{
	return type < sizeof(by_type) / sizeof(by_type[0]) ? by_type[type] : NULL;
}

uint32_t hs_schema_min_bytes(const struct hs_schema *s)
{
	uint32_t n = 0;

	/* Every field but an embedded struct is at least one byte (a varint, or a length). */
	for (uint32_t i = 0; i < s->nr; i++)
		n += s->fields[i].enc == HS_ENC_STRUCT ? hs_schema_min_bytes(s->fields[i].sub) : 1;
	return n;
}
