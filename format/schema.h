/* SPDX-License-Identifier: MIT */
/* The schema of the extended records (docs/FORMAT.md, Extended records): one field table per
 * record type, which the writer walks to encode a struct hs_record and the reader walks to
 * decode one, so the two cannot drift apart. A field added to a record is its member in struct
 * hs_record and one line at the end of its table in schema.c, marked HS_FF_OPTIONAL so that
 * files written before it still read (and a line in docs/FORMAT.md). t_format_schema checks
 * the tables keep the rules below, and that the bytes of the existing fields do not change.
 * The core records (ALLOC, FREE, THREAD and the packed events) are not here: their encoding
 * depends on the frame's delta state (docs/FORMAT.md, Core records). */
#ifndef HEAPSNAP_SCHEMA_H
#define HEAPSNAP_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

enum hs_field_enc {
	HS_ENC_U64,    /* uvarint; the value is a uint64_t */
	HS_ENC_U32,    /* uvarint; a uint32_t, and the reader refuses a value above 32 bits */
	HS_ENC_S64,    /* svarint (zigzag); an int64_t */
	HS_ENC_SPAN,   /* uvarint of the uint64_t minus the uint64_t at .aux, a field before it */
	HS_ENC_DELTA,  /* uvarint of the uint64_t minus the same field of the item before (0 first) */
	HS_ENC_SDELTA, /* as HS_ENC_DELTA, as an svarint */
	HS_ENC_STR,    /* string: uvarint length, bytes; a const char *, NULL written as "", at
			  most .limit bytes when it is not 0 */
	HS_ENC_BYTES,  /* bytes: uvarint length, bytes; a struct hs_bytes of at most .limit bytes */
	HS_ENC_STRUCT, /* the fields of .sub, inline, at .off */
	HS_ENC_ARRAY,  /* uvarint count (the uint32_t at .off, at most .limit), then count x .sub,
			  the items at the pointer at .aux */
};

/* The writer cuts a longer value to .limit bytes: build IDs come from binaries nobody here
 * wrote, and paths and names from processes. Without it the limit is the recorder's own, and
 * a longer value is written as it is (and refused by the reader). */
#define HS_FF_CLIP 1u
/* Appended by a later minor version: a payload that ends before it leaves it empty (""
 * for a string, else 0). Every field after an optional one must be optional too. */
#define HS_FF_OPTIONAL 2u
/* An array of at most the session's max_stack items, as well as at most .limit. */
#define HS_FF_MAX_STACK 4u

struct hs_schema;

struct hs_field {
	const char *name;
	uint8_t enc;   /* enum hs_field_enc */
	uint8_t flags; /* HS_FF_* */
	uint16_t off;  /* of the value in the struct the table describes */
	uint16_t aux;  /* HS_ENC_SPAN: offset of the base; HS_ENC_ARRAY: offset of the items' pointer */
	uint32_t limit; /* HS_ENC_BYTES, HS_ENC_STR: most bytes (a string: none if 0); HS_ENC_ARRAY: most items */
	const struct hs_schema *sub; /* HS_ENC_STRUCT, HS_ENC_ARRAY */
};

struct hs_schema {
	const char *name;
	uint32_t size; /* of the struct described: an array item's stride */
	uint32_t nr;
	const struct hs_field *fields;
};

/* ---- the fixed-size structures around the records (docs/FORMAT.md, File layout) ---- */

/* Each a struct of its fields, and a table of where each lies in the file's bytes:
 * little-endian integers of 2, 4 or 8 bytes, or a byte string (a magic). Bytes no field
 * names are reserved: written as zero, not read. */
struct hs_file_header {
	uint8_t magic[8]; /* HS_FILE_MAGIC */
	uint16_t major, minor;
};

struct hs_frame_header {
	uint32_t magic; /* HS_FRAME_MAGIC */
	uint32_t comp_size, raw_size, flags;
};

struct hs_trailer {
	uint64_t footer_offset; /* of the footer frame's header */
	uint8_t magic[8];       /* HS_TRAILER_MAGIC */
};

struct hs_fixed_field {
	const char *name;
	uint8_t at;    /* offset in the file's bytes */
	uint8_t width; /* bytes */
	bool bytes;    /* a byte string, not an integer */
	uint16_t off;  /* of the value in the struct */
};

struct hs_fixed_layout {
	const char *name;
	uint32_t size; /* bytes in the file */
	uint32_t nr;
	const struct hs_fixed_field *fields;
};

extern const struct hs_fixed_layout hs_file_header_layout; /* HS_FILE_HEADER_SIZE, struct hs_file_header */
extern const struct hs_fixed_layout hs_frame_header_layout; /* HS_FRAME_HEADER_SIZE, struct hs_frame_header */
extern const struct hs_fixed_layout hs_trailer_layout; /* HS_TRAILER_SIZE, struct hs_trailer */

/* Writes the struct at SRC as L->size bytes at DST. */
void hs_fixed_put(const struct hs_fixed_layout *l, const void *src, uint8_t *dst);
/* Reads L->size bytes at SRC into the struct at DST. */
void hs_fixed_get(const struct hs_fixed_layout *l, const uint8_t *src, void *dst);

/* ---- the extended records ---- */

/* The table of extended record type TYPE (struct hs_record), or NULL when TYPE has none:
 * a core type, or an extended one this version does not know (the reader skips those). */
const struct hs_schema *hs_schema_of(uint32_t type);
/* The fewest payload bytes one S takes: a count of N items needs N times this many bytes
 * behind it, which the reader checks before it believes the count. */
uint32_t hs_schema_min_bytes(const struct hs_schema *s);

#endif
