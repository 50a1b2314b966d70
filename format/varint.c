// SPDX-License-Identifier: MIT
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

size_t hs_get_uvarint(const uint8_t *p, size_t len, uint64_t *v)
{
	uint64_t r = 0;
	size_t i;

	for (i = 0; i < len && i < 10; i++) {
		uint8_t b = p[i];

		/* The tenth byte may only carry the top bit of a 64-bit value. */
		if (i == 9 && b > 1)
			return 0;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			return i + 1;
		}
	}
	return 0;
}

const char *hs_rec_type_name(uint32_t type)
{
	switch (type) {
	case HS_REC_THREAD: return "thread";
	case HS_REC_ALLOC: return "alloc";
	case HS_REC_ALLOC_SAMPLED: return "alloc-sampled";
	case HS_REC_FREE: return "free";
	case HS_REC_SESSION: return "session";
	case HS_REC_PROCESS: return "process";
	case HS_REC_EXIT: return "exit";
	case HS_REC_MAPPING: return "mapping";
	case HS_REC_UNMAP: return "unmap";
	case HS_REC_STACK: return "stack";
	case HS_REC_SNAPSHOT: return "snapshot";
	case HS_REC_RSS: return "rss";
	case HS_REC_HORIZON: return "horizon";
	case HS_REC_COUNTERS: return "counters";
	case HS_REC_END: return "end";
	case HS_REC_THREAD_NAME: return "thread-name";
	case HS_REC_FRAME_INDEX: return "frame-index";
	case HS_REC_PROBE: return "probe";
	case HS_REC_STACK_DWARF: return "stack-dwarf";
	case HS_REC_PY_CODE: return "py-code";
	case HS_REC_STACK_TAIL: return "stack-tail";
	default: return "unknown";
	}
}

char *hs_strdup_printable(const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = strlen(s);
	char *d = malloc(4 * len + 1), *o = d;

	if (!d)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = (uint8_t)s[i];
		/* C1 controls as UTF-8 (U+0080..U+009F): a UTF-8 terminal may act on them too. */
		bool c1 = c == 0xc2 && i + 1 < len && (uint8_t)s[i + 1] >= 0x80 && (uint8_t)s[i + 1] <= 0x9f;

		if (c < 0x20 || c == 0x7f || c1) {
			if (c1)
				c = (uint8_t)s[++i];
			*o++ = '\\';
			*o++ = 'x';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		} else {
			*o++ = (char)c;
		}
	}
	*o = 0;
	return d;
}
