// SPDX-License-Identifier: MIT
/* .eh_frame -> rows of (pc, CFA rule, rbp rule), for x86-64. Only what a return-address walk
 * needs is tracked: the CFA (from rsp or rbp plus an offset), where rbp was saved, and whether
 * the return address is at CFA - 8 or undefined (the outermost frame). Anything else a frame
 * does (a CFA expression, the CFA in another register) becomes a row the walk stops at, and
 * counts. No allocator and no libc beyond what a compiler inlines: libheapsnap.so runs this
 * inside malloc. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "unwtab.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
#define MAX_REMEMBER 16
#define MAX_CIE_PROGRAM 64

struct cur {
	const uint8_t *p, *end, *base; /* base: the section's first byte */
	uint64_t base_addr;            /* its link-time address */
	bool bad;
};

static uint64_t rd(struct cur *c, unsigned n)
{
	uint64_t v = 0;

	/* A cursor past its end (an entry whose length is shorter than the fields read before
	 * its end was set) reads nothing: end - p would wrap to a huge count. */
	if (c->bad || c->p > c->end || (uint64_t)(c->end - c->p) < n) {
		c->bad = true;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t uleb(struct cur *c)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b = (uint8_t)rd(c, 1);

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80) || c->bad)
			return v;
	}
	c->bad = true;
	return 0;
}

static int64_t sleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (shift >= 64) {
			c->bad = true;
			return 0;
		}
		b = (uint8_t)rd(c, 1);
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !c->bad);
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

/* A DW_EH_PE-encoded pointer. Only absolute and pc-relative ones are meaningful here; the
 * others (text-, data-, function-relative) make the entry unusable. */
static uint64_t encoded(struct cur *c, uint8_t enc, bool *ok)
{
	uint64_t here = c->base_addr + (uint64_t)(c->p - c->base), v;

	if (enc == 0xff) { /* DW_EH_PE_omit */
		*ok = false;
		return 0;
	}
	switch (enc & 0x0f) {
	case 0x00: v = rd(c, 8); break;
	case 0x01: v = uleb(c); break;
	case 0x02: v = rd(c, 2); break;
	case 0x03: v = rd(c, 4); break;
	case 0x04: v = rd(c, 8); break;
	case 0x09: v = (uint64_t)sleb(c); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd(c, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd(c, 4); break;
	case 0x0c: v = rd(c, 8); break;
	default: c->bad = true; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += here; break;
	default: *ok = false; /* relative to something we do not know */
	}
	if (enc & 0x80) /* indirect: the value is where the pointer is, not the pointer */
		*ok = false;
	return v;
}

struct rule {
	uint8_t cfa_reg_ok; /* the CFA is rsp or rbp plus an offset */
	uint8_t cfa_reg;
	int64_t cfa_off;
	uint8_t fp;         /* enum hs_unw_fp */
	int64_t fp_off;
	uint8_t ra;         /* 0 at CFA-8, 1 undefined, 2 elsewhere */
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	bool aug_z;
	const uint8_t *insns, *insns_end;
};

static bool parse_cie(struct cur *c, const uint8_t *end, struct cie *ci)
{
	char aug[8];
	unsigned na = 0;
	uint8_t version = (uint8_t)rd(c, 1);

	if (version != 1 && version != 3 && version != 4)
		return false;
	for (;;) {
		char ch = (char)rd(c, 1);

		if (c->bad)
			return false;
		if (!ch)
			break;
		if (na + 1 >= sizeof(aug))
			return false;
		aug[na++] = ch;
	}
	aug[na] = 0;
	if (version == 4) { /* address size, segment selector size */
		if (rd(c, 1) != 8 || rd(c, 1) != 0)
			return false;
	}
	ci->code_align = uleb(c);
	ci->data_align = sleb(c);
	if (version == 1)
		rd(c, 1);
	else
		uleb(c);
	ci->fde_enc = 0; /* absptr */
	ci->aug_z = false;
	if (na && aug[0] == 'z') {
		uint64_t alen = uleb(c);
		const uint8_t *aend;

		if (c->bad || alen > (uint64_t)(end - c->p))
			return false;
		aend = c->p + alen;
		ci->aug_z = true;
		for (unsigned i = 1; i < na && !c->bad; i++) {
			bool ok = true;

			switch (aug[i]) {
			case 'R': ci->fde_enc = (uint8_t)rd(c, 1); break;
			case 'L': rd(c, 1); break;
			case 'P': { uint8_t e = (uint8_t)rd(c, 1); encoded(c, e & 0x7f, &ok); break; }
			case 'S': break; /* signal frame: its rows are ordinary, the walk reads them so */
			default: c->p = aend; i = na; break; /* unknown, but 'z' says how long */
			}
		}
		c->p = aend;
	} else if (na) {
		return false; /* "eh" and other pre-'z' augmentations: not on x86-64 */
	}
	ci->insns = c->p;
	ci->insns_end = end;
	/* A CIE's program runs again for each of its FDEs: one of a few bytes, as compilers
	 * write, keeps that linear in the section; a crafted long one would make it quadratic. */
	return !c->bad && ci->code_align && end - c->p <= MAX_CIE_PROGRAM;
}

static void to_row(const struct rule *r, uint64_t pc, struct hs_unw_row *row)
{
	row->pc = (uint32_t)pc;
	row->pad = 0;
	row->cfa_off = 0;
	row->fp = HS_UNW_FP_SAME;
	row->fp_off = 0;
	if (r->ra == 1) {
		row->cfa = HS_UNW_END;
		return;
	}
	if (!r->cfa_reg_ok || r->ra != 0 || (r->cfa_reg != REG_RSP && r->cfa_reg != REG_RBP) ||
	    r->cfa_off < INT32_MIN || r->cfa_off > INT32_MAX) {
		row->cfa = HS_UNW_EXPR;
		return;
	}
	row->cfa = r->cfa_reg == REG_RSP ? HS_UNW_CFA_SP : HS_UNW_CFA_FP;
	row->cfa_off = (int32_t)r->cfa_off;
	row->fp = r->fp;
	if (r->fp == HS_UNW_FP_AT) {
		if (r->fp_off < INT16_MIN || r->fp_off > INT16_MAX)
			row->fp = HS_UNW_FP_LOST;
		else
			row->fp_off = (int16_t)r->fp_off;
	}
}

struct out {
	struct hs_unw_row *rows; /* NULL: count only */
	uint64_t cap, n;
	uint64_t fde_first;      /* this FDE's first row, to replace a row at the same pc */
	bool range;              /* an address beyond 32 bits */
	bool debug_frame;        /* .debug_frame: a CIE's id is ~0, an FDE's the CIE's offset */
	/* Probing one address instead: the last row at or below `want` (an FDE's rows come
	 * in address order). */
	bool probe, found;
	uint64_t want;
	struct hs_unw_row hit;
};

static void emit(struct out *o, uint64_t pc, const struct rule *r, uint8_t kind)
{
	struct hs_unw_row row;

	if (pc > UINT32_MAX) {
		o->range = true;
		return;
	}
	if (kind == HS_UNW_NONE) {
		row = (struct hs_unw_row){.pc = (uint32_t)pc, .cfa = HS_UNW_NONE};
	} else {
		to_row(r, pc, &row);
	}
	if (o->probe) {
		if (pc <= o->want) {
			o->hit = row;
			o->found = true;
		}
		return;
	}
	if (!o->rows) {
		o->n++;
		return;
	}
	/* Several rules at one address (advances of zero): the last one holds. */
	if (o->n > o->fde_first && o->n <= o->cap && kind != HS_UNW_NONE && o->rows[o->n - 1].pc == row.pc) {
		o->rows[o->n - 1] = row;
		return;
	}
	if (o->n < o->cap)
		o->rows[o->n] = row;
	o->n++;
}

/* An offset times the data alignment factor, wrapping as the hardware does: a crafted one
 * overflows, and the result is then only a rule that to_row() finds out of range. */
static int64_t scaled(uint64_t v, int64_t factor)
{
	return (int64_t)(v * (uint64_t)factor);
}

static void set_reg(struct rule *r, uint64_t reg, uint8_t how, int64_t off)
{
	/* how: 0 saved at CFA+off, 1 undefined, 2 same value, 3 anything else */
	if (reg == REG_RBP) {
		r->fp = how == 0 ? HS_UNW_FP_AT : how == 2 ? HS_UNW_FP_SAME : HS_UNW_FP_LOST;
		r->fp_off = off;
	} else if (reg == REG_RA) {
		r->ra = how == 0 ? (off == -8 ? 0 : 2) : how == 1 ? 1 : 2;
	}
}

static void restore_reg(struct rule *r, const struct rule *init, uint64_t reg)
{
	if (!init)
		return;
	if (reg == REG_RBP) {
		r->fp = init->fp;
		r->fp_off = init->fp_off;
	} else if (reg == REG_RA) {
		r->ra = init->ra;
	}
}

/* Runs CFA instructions; with `o`, emits a row at each address the rules change. Returns
 * false on an instruction it cannot read (the FDE's later rows are then left out). */
static bool run(struct cur *c, const struct cie *ci, struct rule *r, const struct rule *init, uint64_t *loc,
		uint8_t fde_enc, struct out *o)
{
	struct rule stack[MAX_REMEMBER];
	unsigned depth = 0;

	while (c->p < c->end && !c->bad) {
		uint8_t op = (uint8_t)rd(c, 1), low = op & 0x3f;
		uint64_t reg, delta = 0;
		bool ok = true;

		switch (op >> 6) {
		case 1: delta = low; goto advance;
		case 2: set_reg(r, low, 0, scaled(uleb(c), ci->data_align)); continue;
		case 3: restore_reg(r, init, low); continue;
		}
		switch (op) {
		case 0x00: continue; /* nop */
		case 0x01: { /* set_loc */
			uint64_t to = encoded(c, fde_enc, &ok);

			if (!ok || to < *loc)
				return false;
			delta = (to - *loc) / ci->code_align;
			goto advance;
		}
		case 0x02: delta = rd(c, 1); goto advance;
		case 0x03: delta = rd(c, 2); goto advance;
		case 0x04: delta = rd(c, 4); goto advance;
		case 0x05: reg = uleb(c); set_reg(r, reg, 0, scaled(uleb(c), ci->data_align)); continue;
		case 0x06: restore_reg(r, init, uleb(c)); continue;
		case 0x07: set_reg(r, uleb(c), 1, 0); continue;
		case 0x08: set_reg(r, uleb(c), 2, 0); continue;
		case 0x09: reg = uleb(c); uleb(c); set_reg(r, reg, 3, 0); continue;
		case 0x0a:
			if (depth == MAX_REMEMBER)
				return false;
			stack[depth++] = *r;
			continue;
		case 0x0b:
			if (!depth)
				return false;
			*r = stack[--depth];
			continue;
		case 0x0c:
			r->cfa_reg = (uint8_t)(reg = uleb(c));
			r->cfa_reg_ok = reg < 17;
			r->cfa_off = (int64_t)uleb(c);
			continue;
		case 0x0d:
			r->cfa_reg = (uint8_t)(reg = uleb(c));
			r->cfa_reg_ok = reg < 17;
			continue;
		case 0x0e: r->cfa_off = (int64_t)uleb(c); continue;
		case 0x0f: { /* def_cfa_expression */
			uint64_t n = uleb(c);

			if (c->bad || n > (uint64_t)(c->end - c->p))
				return false;
			c->p += n;
			r->cfa_reg_ok = 0;
			continue;
		}
		case 0x10:
		case 0x16: { /* expression, val_expression */
			uint64_t n;

			reg = uleb(c);
			n = uleb(c);
			if (c->bad || n > (uint64_t)(c->end - c->p))
				return false;
			c->p += n;
			set_reg(r, reg, 3, 0);
			continue;
		}
		case 0x11: reg = uleb(c); set_reg(r, reg, 0, scaled((uint64_t)sleb(c), ci->data_align)); continue;
		case 0x12:
			r->cfa_reg = (uint8_t)(reg = uleb(c));
			r->cfa_reg_ok = reg < 17;
			r->cfa_off = scaled((uint64_t)sleb(c), ci->data_align);
			continue;
		case 0x13: r->cfa_off = scaled((uint64_t)sleb(c), ci->data_align); continue;
		case 0x14: reg = uleb(c); uleb(c); set_reg(r, reg, 3, 0); continue;
		case 0x15: reg = uleb(c); sleb(c); set_reg(r, reg, 3, 0); continue;
		case 0x2e: uleb(c); continue; /* GNU_args_size */
		case 0x2f: reg = uleb(c); set_reg(r, reg, 0, scaled(0 - uleb(c), ci->data_align)); continue;
		default: return false;
		}
advance:
		if (o)
			emit(o, *loc, r, 0);
		*loc += delta * ci->code_align;
	}
	return !c->bad;
}

static inline uint64_t sort_key(const struct hs_unw_row *r)
{
	return (uint64_t)r->pc * 2 + (r->cfa != HS_UNW_NONE);
}

/* Heapsort's sift-down of rows[i] within rows[0, n). */
static void sift(struct hs_unw_row *rows, uint64_t i, uint64_t n)
{
	for (;;) {
		uint64_t ch = 2 * i + 1;
		struct hs_unw_row t;

		if (ch >= n)
			break;
		if (ch + 1 < n && sort_key(&rows[ch + 1]) > sort_key(&rows[ch]))
			ch++;
		if (sort_key(&rows[i]) >= sort_key(&rows[ch]))
			break;
		t = rows[i], rows[i] = rows[ch], rows[ch] = t;
		i = ch;
	}
}

static bool same_rule(const struct hs_unw_row *a, const struct hs_unw_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->fp == b->fp && a->fp_off == b->fp_off;
}

/* The CIE or FDE at `at` in .eh_frame [eh, eh + len): an FDE's rows go to `o`. Returns where
 * the next entry starts, NULL at the terminator or an entry whose length cannot be read. */
static const uint8_t *entry(const uint8_t *eh, uint64_t len, uint64_t eh_addr, const uint8_t *at, struct out *o,
			    bool *is_fde)
{
	struct cur c = {.p = at, .end = eh + len, .base = eh, .base_addr = eh_addr};
	const uint8_t *end, *id_at;
	uint64_t length = rd(&c, 4), id, begin, range, loc;
	struct rule init = {0}, r;
	struct cie ci;
	struct cur cc;
	bool ok = true;

	*is_fde = false;
	if (c.bad || !length) /* the terminator */
		return NULL;
	if (length == 0xffffffffu)
		length = rd(&c, 8);
	if (c.bad || length > (uint64_t)(c.end - c.p))
		return NULL;
	end = c.p + length;
	/* 64-bit DWARF's .debug_frame has 8-byte ids: compilers for x86-64 do not write it. */
	if (o->debug_frame && c.p - at > 4)
		return end;
	id_at = c.p;
	id = rd(&c, 4);
	/* A length under 4 ends the entry inside its own id: nothing of it can be read. */
	if (c.bad || c.p > end || id == (o->debug_frame ? 0xffffffffu : 0)) /* a CIE: read with each of its FDEs */
		return end;
	/* An FDE: id is the distance back to its CIE, or in .debug_frame its offset. */
	if (o->debug_frame ? id >= len : id > (uint64_t)(id_at - eh))
		return end;
	cc = (struct cur){.p = o->debug_frame ? eh + id : id_at - id, .end = c.end, .base = eh, .base_addr = eh_addr};
	{
		uint64_t clen = rd(&cc, 4);

		if (cc.bad || clen == 0xffffffffu || clen > (uint64_t)(cc.end - cc.p) ||
		    rd(&cc, 4) != (o->debug_frame ? 0xffffffffu : 0))
			return end;
		cc.end = cc.p - 4 + clen;
		if (!parse_cie(&cc, cc.end, &ci))
			return end;
	}
	c.end = end;
	begin = encoded(&c, ci.fde_enc, &ok);
	range = encoded(&c, ci.fde_enc & 0x0f, &ok);
	if (ci.aug_z) {
		uint64_t alen = uleb(&c);

		if (c.bad || alen > (uint64_t)(end - c.p))
			return end;
		c.p += alen;
	}
	if (c.bad || !ok || !range || begin + range < begin)
		return end;
	/* The CIE's initial rules: x86-64 compilers give CFA = rsp + 8, RA at CFA - 8. */
	init.ra = 2;
	loc = begin;
	cc.p = ci.insns;
	cc.end = ci.insns_end;
	if (!run(&cc, &ci, &init, NULL, &loc, ci.fde_enc, NULL))
		return end;
	r = init;
	loc = begin;
	o->fde_first = o->n;
	*is_fde = true;
	if (!run(&c, &ci, &r, &init, &loc, ci.fde_enc, o) || loc > begin + range) {
		/* Rules it could not read: from there on the frame is not expressible. */
		r.cfa_reg_ok = 0;
	}
	if (loc < begin + range)
		emit(o, loc, &r, 0);
	emit(o, begin + range, &r, HS_UNW_NONE);
	return end;
}

static long build(const uint8_t *eh, uint64_t len, uint64_t eh_addr, const uint8_t *dbg, uint64_t dbg_len,
		  struct hs_unw_row *rows, uint64_t cap)
{
	struct out o = {.rows = rows, .cap = cap};
	uint64_t fdes = 0;

	for (int pass = 0; pass < 2; pass++) {
		const uint8_t *sec = pass ? dbg : eh, *p = sec;
		uint64_t n = pass ? dbg_len : len;

		o.debug_frame = pass;
		while (sec && p && p < sec + n) {
			bool is_fde;

			p = entry(sec, n, pass ? 0 : eh_addr, p, &o, &is_fde);
			fdes += is_fde;
		}
	}
	if (o.range)
		return -ERANGE;
	if (!fdes)
		return -EINVAL;
	if (!rows)
		return (long)o.n;
	if (o.n > cap)
		return -ERANGE;

	/* Sort by pc, an FDE's own rows after a gap row at the same pc (heapsort: in place, no
	 * allocator, n log n whatever the input's order). */
	for (uint64_t k = o.n / 2; k-- > 0;)
		sift(rows, k, o.n);
	for (uint64_t end = o.n; end-- > 1;) {
		struct hs_unw_row t = rows[0];

		rows[0] = rows[end], rows[end] = t;
		sift(rows, 0, end);
	}
	/* Merge: one row per pc (the last), and none that repeats the rule before it. */
	{
		uint64_t w = 0;

		for (uint64_t i = 0; i < o.n; i++) {
			const struct hs_unw_row *x = &rows[i];

			if (w && rows[w - 1].pc == x->pc) {
				rows[w - 1] = *x;
			} else if (w && same_rule(&rows[w - 1], x)) {
				continue;
			} else {
				rows[w++] = *x;
			}
			/* A row replaced at the same pc may now repeat the one before. */
			if (w > 1 && same_rule(&rows[w - 2], &rows[w - 1]))
				w--;
		}
		if (w > HS_UNW_MAX_ROWS)
			return -ERANGE;
		return (long)w;
	}
}

long unwtab__build(const uint8_t *eh, uint64_t len, uint64_t eh_addr, struct hs_unw_row *rows, uint64_t cap)
{
	return build(eh, len, eh_addr, NULL, 0, rows, cap);
}

long unwtab__build_file(const uint8_t *eh, uint64_t len, uint64_t eh_addr, const uint8_t *dbg, uint64_t dbg_len,
			struct hs_unw_row *rows, uint64_t cap)
{
	return build(eh, len, eh_addr, dbg, dbg_len, rows, cap);
}

int unwtab__lookup(const uint8_t *hdr, uint64_t hdr_len, uint64_t hdr_addr, const uint8_t *eh, uint64_t eh_len,
		   uint64_t eh_addr, uint64_t pc, struct hs_unw_row *out)
{
	struct cur c = {.p = hdr, .end = hdr + hdr_len, .base = hdr, .base_addr = hdr_addr};
	struct out o = {.probe = true, .want = pc};
	uint8_t enc, count_enc, table_enc;
	uint64_t count, lo = 0, hi, fde;
	const uint8_t *table;
	bool ok = true, is_fde;

	if (rd(&c, 1) != 1)
		return -EINVAL;
	enc = (uint8_t)rd(&c, 1);
	count_enc = (uint8_t)rd(&c, 1);
	table_enc = (uint8_t)rd(&c, 1);
	encoded(&c, enc, &ok);
	count = encoded(&c, count_enc, &ok);
	/* The search table as every linker writes it: pairs of 4-byte offsets from the header. */
	if (c.bad || !ok || table_enc != 0x3b || count > (uint64_t)(c.end - c.p) / 8)
		return -ENOTSUP;
	table = c.p;
	hi = count;
	if (!count || pc < hdr_addr + (uint64_t)(int64_t)(int32_t)rd32(table))
		return -ENOENT;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (hdr_addr + (uint64_t)(int64_t)(int32_t)rd32(table + mid * 8) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	fde = hdr_addr + (uint64_t)(int64_t)(int32_t)rd32(table + lo * 8 + 4);
	if (fde < eh_addr || fde - eh_addr >= eh_len)
		return -EINVAL;
	entry(eh, eh_len, eh_addr, eh + (fde - eh_addr), &o, &is_fde);
	if (!is_fde || !o.found || o.hit.cfa == HS_UNW_NONE)
		return -ENOENT;
	*out = o.hit;
	return 0;
}

uint64_t unwtab__eh_frame_from_hdr(const uint8_t *hdr, uint64_t len, uint64_t hdr_addr)
{
	struct cur c = {.p = hdr, .end = hdr + len, .base = hdr, .base_addr = hdr_addr};
	uint8_t version = (uint8_t)rd(&c, 1), enc = (uint8_t)rd(&c, 1);
	bool ok = true;
	uint64_t v;

	rd(&c, 2); /* the FDE count's and table's encodings */
	if (c.bad || version != 1)
		return 0;
	v = encoded(&c, enc, &ok);
	return c.bad || !ok ? 0 : v;
}
