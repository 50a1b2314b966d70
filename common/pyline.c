// SPDX-License-Identifier: MIT
/* CPython's three line-table formats, decoded as the interpreter decodes them (the
 * reference being what co_lines() and dis.findlinestarts() report). Every read is checked
 * against the table's end and every loop moves forward at least one byte, so a hostile
 * table costs at most its length. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "pyline.h"

int pyline__format(uint32_t v)
{
	if (v == 0x308 || v == 0x309)
		return PYLINE_LNOTAB;
	if (v == 0x30a)
		return PYLINE_LINETABLE310;
	/* 3.11 to 3.14 share the location table (Objects/locations.md). */
	if (v >= 0x30b && v <= 0x30e)
		return PYLINE_LOCATIONS;
	return 0;
}

struct ranges {
	struct pyline_range *v;
	uint32_t nr;
};

static void emit(struct ranges *r, uint64_t start, uint64_t end, int64_t line)
{
	if (end > UINT32_MAX)
		end = UINT32_MAX;
	if (start >= end) /* empty: the interpreter skips these too */
		return;
	if (r->v) /* else counted only */
		r->v[r->nr] = (struct pyline_range){.start = (uint32_t)start, .end = (uint32_t)end, .line = line};
	r->nr++;
}

/* 3.8, 3.9: (address increment, signed line increment) byte pairs. An address's line is the
 * first line plus the increments of every pair whose address is at or below it. */
static void lnotab(struct ranges *r, const uint8_t *t, uint32_t len, int64_t line)
{
	uint64_t addr = 0;

	for (uint32_t i = 0; i + 1 < len; i += 2) {
		emit(r, addr, addr + t[i], line);
		addr += t[i];
		line += (int8_t)t[i + 1];
	}
	emit(r, addr, UINT32_MAX, line);
}

/* 3.10: (address delta, signed line delta) pairs, each its own range; a line delta of -128
 * marks a range without a line. */
static void linetable310(struct ranges *r, const uint8_t *t, uint32_t len, int64_t line)
{
	uint64_t end = 0;

	for (uint32_t i = 0; i + 1 < len; i += 2) {
		uint64_t start = end;
		int8_t ld = (int8_t)t[i + 1];

		end += t[i];
		if (ld == -128) {
			emit(r, start, end, -1);
			continue;
		}
		line += ld;
		emit(r, start, end, line);
	}
}

/* An unsigned varint of the location table (6 bits a byte, 0x40 = more) from T[*I], read as
 * CPython reads it but stopping at the table's end and past 32 bits. */
static uint32_t varint(const uint8_t *t, uint32_t len, uint32_t *i)
{
	uint32_t val, shift = 0;
	uint8_t b;

	if (*i >= len)
		return 0;
	b = t[(*i)++];
	val = b & 63;
	while ((b & 64) && *i < len && shift < 30) {
		b = t[(*i)++];
		shift += 6;
		val |= (uint32_t)(b & 63) << shift;
	}
	return val;
}

static int64_t svarint(const uint8_t *t, uint32_t len, uint32_t i)
{
	uint32_t u = varint(t, len, &i);

	return u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
}

/* 3.11+: entries whose first byte has bit 7 set: bits 3-6 a code, bits 0-2 the length in
 * code units less one. Code 15 has no location; 14 (long form) and 13 (no columns) start
 * with a signed line delta; 10 to 12 move the line by code - 10; 0 to 9 keep it. */
static void locations(struct ranges *r, const uint8_t *t, uint32_t len, int64_t line)
{
	uint64_t end = 0;
	uint32_t i = 0;

	while (i < len) {
		uint8_t b = t[i];
		unsigned code = (b >> 3) & 15;
		uint64_t start = end;

		if (code == 13 || code == 14)
			line += svarint(t, len, i + 1);
		else if (code >= 10 && code <= 12)
			line += code - 10;
		end += ((b & 7) + 1) * 2;
		emit(r, start, end, code == 15 ? -1 : line);
		/* The next entry starts at the next byte with bit 7 set, as the interpreter finds it. */
		do
			i++;
		while (i < len && !(t[i] & 128));
	}
}

static void decode(int fmt, struct ranges *r, const uint8_t *table, uint32_t len, int64_t first_line)
{
	if (fmt == PYLINE_LNOTAB)
		lnotab(r, table, len, first_line);
	else if (fmt == PYLINE_LINETABLE310)
		linetable310(r, table, len, first_line);
	else
		locations(r, table, len, first_line);
}

uint32_t pyline__count(uint32_t py_version, const uint8_t *table, uint32_t len, int64_t first_line)
{
	int fmt = pyline__format(py_version);
	struct ranges r = {0};

	if (fmt)
		decode(fmt, &r, table, len, first_line);
	return r.nr;
}

int pyline__ranges(uint32_t py_version, const uint8_t *table, uint32_t len, int64_t first_line,
		   struct pyline_range **out, uint32_t *nr)
{
	int fmt = pyline__format(py_version);
	struct ranges r = {0};

	*out = NULL;
	*nr = 0;
	if (!fmt)
		return -EINVAL;
	/* Counted first and made to measure: a table of one-byte entries would otherwise cost
	 * 16 bytes of ranges a byte, where real ones have a range every few bytes. */
	r.v = malloc(sizeof(*r.v) * ((size_t)pyline__count(py_version, table, len, first_line) + 1));
	if (!r.v)
		return -ENOMEM;
	decode(fmt, &r, table, len, first_line);
	*out = r.v;
	*nr = r.nr;
	return 0;
}

int64_t pyline__lookup(const struct pyline_range *r, uint32_t nr, uint32_t offset)
{
	uint32_t lo = 0, hi = nr;

	/* Ranges come in bytecode order without overlap: the last starting at or below OFFSET. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r[mid].start <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || offset >= r[lo - 1].end)
		return -1;
	return r[lo - 1].line;
}

/* A signed varint of the location table: the sign in bit 0, then 6 bits a byte. */
static uint32_t put_svarint(uint8_t *o, int64_t v)
{
	uint64_t u = v < 0 ? (uint64_t)-v << 1 | 1 : (uint64_t)v << 1;
	uint32_t n = 0;

	while (u >= 64) {
		o[n++] = 64 | (u & 63);
		u >>= 6;
	}
	o[n++] = (uint8_t)u;
	return n;
}

uint32_t pyline__lines_only(uint32_t py_version, const uint8_t *table, uint32_t len, int64_t first_line,
			    uint8_t *out)
{
	struct pyline_range *r;
	int64_t prev = first_line;
	uint32_t nr, n = 0;

	/* A table that cannot be made (no memory) is written as it is: just as true, larger. */
	if (pyline__format(py_version) != PYLINE_LOCATIONS || pyline__ranges(py_version, table, len, first_line, &r, &nr))
		return 0;
	for (uint32_t i = 0; i < nr;) {
		uint32_t j = i + 1, units;
		int64_t line = r[i].line;

		/* Ranges on one line, one after the other, as one (the columns told them apart). */
		while (j < nr && r[j].line == line && r[j].start == r[j - 1].end)
			j++;
		/* A gap (an empty range the decoder dropped) or a line the decoder cannot read back
		 * (its varints stop at 32 bits): the table stays as it is. */
		if ((i ? r[i].start != r[i - 1].end : r[i].start != 0) ||
		    (line != -1 && (line - prev > (1 << 28) || prev - line > (1 << 28)))) {
			n = 0;
			goto out;
		}
		for (units = (r[j - 1].end - r[i].start) / 2; units;) {
			uint32_t k = units < 8 ? units : 8;

			/* Each entry at most 1 + 5 bytes: past LEN, this is no smaller. */
			if (n + 6 > len) {
				n = 0;
				goto out;
			}
			units -= k;
			if (line == -1) {
				out[n++] = (uint8_t)(0x80 | 15 << 3 | (k - 1));
				continue;
			}
			out[n++] = (uint8_t)(0x80 | 13 << 3 | (k - 1));
			n += put_svarint(out + n, line - prev);
			prev = line;
		}
		i = j;
	}
out:
	free(r);
	return n;
}
