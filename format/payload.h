/* SPDX-License-Identifier: MIT */
/* A record's payload, read through a cursor that checks every byte against the end of its
 * record: varints one at a time (what the core records' decoders in reader.c use), and whole
 * records by their schema table (schema.h), each length and count against its limit. The
 * first reason a payload is bad stays in the cursor, and every read after it yields 0. */
#ifndef HEAPSNAP_PAYLOAD_H
#define HEAPSNAP_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "schema.h"
#include "record.h"

/* Where a record's strings and arrays go: sized from the payload's length before decoding
 * (FORMAT.md gives the worst case per byte), so pointers into it never move. */
struct hs_arena {
	uint8_t *p;
	size_t cap, len;
};

struct hs_cur {
	const uint8_t *p, *end;
	struct hs_arena *arena; /* for strings and arrays: NULL where none is decoded */
	uint32_t max_frames;    /* the session's max_stack: no stack array may be longer */
	const char *bad;        /* first reason the payload failed */
};

static inline uint64_t hs_cur_u64(struct hs_cur *c)
{
	uint64_t v = 0;
	size_t n;

	if (c->bad)
		return 0;
	/* Most fields of most records are one byte. */
	if (c->p < c->end && *c->p < 0x80)
		return *c->p++;
	n = hs_get_uvarint(c->p, (size_t)(c->end - c->p), &v);
	if (!n) {
		c->bad = c->p >= c->end ? "record ends inside a field" : "malformed varint";
		return 0;
	}
	c->p += n;
	return v;
}

static inline uint32_t hs_cur_u32(struct hs_cur *c)
{
	uint64_t v = hs_cur_u64(c);

	if (v > UINT32_MAX && !c->bad)
		c->bad = "value does not fit 32 bits";
	return (uint32_t)v;
}

/* The fields of table S into the struct at BASE. PREV carries a delta field's value from one
 * array item to the next (0 to start). */
void hs_payload__decode(struct hs_cur *c, const struct hs_schema *s, void *base, uint64_t *prev);

#endif
