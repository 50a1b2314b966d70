// SPDX-License-Identifier: MIT
/* A record's payload by its schema table (payload.h): strings, byte strings and arrays
 * checked against the bytes left in the record and against their limits before any is
 * copied. */
#include <string.h>

#include "payload.h"

static void *arena_alloc(struct hs_arena *a, size_t n)
{
	void *p;

	n = (n + 7) & ~(size_t)7;
	if (!a || a->len + n > a->cap)
		return NULL; /* cannot happen: the arena is sized from the payload length */
	p = a->p + a->len;
	a->len += n;
	return p;
}

static const char *cstr(struct hs_cur *c, uint32_t max)
{
	uint64_t n = hs_cur_u64(c);
	char *s;

	if (c->bad)
		return "";
	if (n > (uint64_t)(c->end - c->p)) {
		c->bad = "string longer than its record";
		return "";
	}
	if (max && n > max) {
		c->bad = "string longer than any recorder writes there";
		return "";
	}
	s = arena_alloc(c->arena, n + 1);
	if (!s) {
		c->bad = "internal arena overflow";
		return "";
	}
	memcpy(s, c->p, n);
	s[n] = 0;
	c->p += n;
	return s;
}

static struct hs_bytes cbytes(struct hs_cur *c, size_t max)
{
	struct hs_bytes b = {0};
	uint64_t n = hs_cur_u64(c);

	if (c->bad)
		return b;
	if (n > (uint64_t)(c->end - c->p) || n > max) {
		c->bad = "byte string too long";
		return b;
	}
	b.p = c->p;
	b.len = (uint32_t)n;
	c->p += n;
	return b;
}

static uint64_t count(struct hs_cur *c, uint64_t max, size_t min_item_bytes)
{
	uint64_t n = hs_cur_u64(c);

	if (c->bad)
		return 0;
	if (n > max || n * min_item_bytes > (uint64_t)(c->end - c->p)) {
		c->bad = "count larger than the record can hold";
		return 0;
	}
	return n;
}

static void decode_array(struct hs_cur *c, const struct hs_field *f, uint32_t *nr, void *items);

void hs_payload__decode(struct hs_cur *c, const struct hs_schema *s, void *base, uint64_t *prev)
{
	uint8_t *b = base;

	for (uint32_t i = 0; i < s->nr; i++) {
		const struct hs_field *f = &s->fields[i];
		void *v = b + f->off;

		if ((f->flags & HS_FF_OPTIONAL) && !c->bad && c->p >= c->end) {
			/* Older files end here; the caller zeroed the record. */
			if (f->enc == HS_ENC_STR)
				*(const char **)v = "";
			continue;
		}
		switch (f->enc) {
		case HS_ENC_U64:
			*(uint64_t *)v = hs_cur_u64(c);
			break;
		case HS_ENC_U32:
			*(uint32_t *)v = hs_cur_u32(c);
			break;
		case HS_ENC_S64:
			*(int64_t *)v = hs_unzigzag(hs_cur_u64(c));
			break;
		case HS_ENC_SPAN:
			*(uint64_t *)v = *(const uint64_t *)(b + f->aux) + hs_cur_u64(c);
			break;
		case HS_ENC_DELTA:
			*prev += hs_cur_u64(c);
			*(uint64_t *)v = *prev;
			break;
		case HS_ENC_SDELTA:
			*prev += (uint64_t)hs_unzigzag(hs_cur_u64(c));
			*(uint64_t *)v = *prev;
			break;
		case HS_ENC_STR:
			*(const char **)v = cstr(c, f->limit);
			break;
		case HS_ENC_BYTES:
			*(struct hs_bytes *)v = cbytes(c, f->limit);
			break;
		case HS_ENC_STRUCT:
			hs_payload__decode(c, f->sub, v, prev);
			break;
		case HS_ENC_ARRAY:
			decode_array(c, f, v, b + f->aux);
			break;
		}
	}
}

/* An array field F: its count at NR, its items (in the arena) at ITEMS. */
static void decode_array(struct hs_cur *c, const struct hs_field *f, uint32_t *nr, void *items)
{
	uint32_t n = (uint32_t)count(c, f->limit, hs_schema_min_bytes(f->sub));
	uint64_t prev = 0;
	uint8_t *a;

	/* No stack may be deeper than the session said it records. */
	if ((f->flags & HS_FF_MAX_STACK) && n > c->max_frames) {
		c->bad = "stack deeper than the session's max_stack";
		n = 0;
	}
	a = arena_alloc(c->arena, (size_t)f->sub->size * n);
	if (!a && n && !c->bad)
		c->bad = "internal arena overflow";
	*nr = n;
	memcpy(items, &a, sizeof(a)); /* a pointer of the item's type, stored through its bytes */
	for (uint32_t k = 0; k < n && !c->bad; k++)
		hs_payload__decode(c, f->sub, a + (size_t)k * f->sub->size, &prev);
}
