// SPDX-License-Identifier: MIT
/* Pins the bytes the writer writes and what the reader makes of them, record type by record
 * type, so a change to the schema tables (format/schema.c) that changes the file format shows.
 * t_format_schema compares digests of this program's outputs with those the format code gave
 * before the tables existed (commit b13c7fc, hand-written encode_extended/decode_extended).
 * Usage: schemagen write OUT N SEED BAD   N random records of every type, edge values included;
 *                                         about one in BAD fields out of the reader's range
 *        schemagen check                  every table keeps schema.h's rules
 *        schemagen raw IN                 the data frames' records, uncompressed
 *        schemagen dump IN                every field of every record read, status and error
 *        schemagen corrupt IN OUT SEED    IN with a few raw record bytes changed or cut in some
 *                                         frames, recompressed, so the payload checks are reached */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "record.h"
#include "schema.h"

static uint64_t st;
static uint64_t rnd(void)
{
	st ^= st << 13;
	st ^= st >> 7;
	st ^= st << 17;
	return st;
}

static uint64_t val(void)
{
	switch (rnd() % 8) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX;
	case 2:
		return rnd() & 0x7f;
	case 3:
		return rnd() & 0xffff;
	case 4:
		return (uint32_t)rnd();
	default:
		return rnd();
	}
}

static char sbuf[64][300];
static int si;
static const char *str(void)
{
	char *s = sbuf[si++ % 64];
	unsigned n = rnd() % 4 == 0 ? rnd() % 280 : rnd() % 12;
	if (rnd() % 10 == 0)
		return NULL;
	for (unsigned i = 0; i < n; i++)
		s[i] = (char)(1 + rnd() % 255);
	s[n] = 0;
	return s;
}

static uint8_t bbuf[16][70000];
static int bi;
static struct hs_bytes bytes(uint32_t max)
{
	struct hs_bytes b;
	uint8_t *p = bbuf[bi++ % 16];
	b.len = rnd() % 3 == 0 ? (uint32_t)(rnd() % (max + 1)) : (uint32_t)(rnd() % 30);
	for (uint32_t i = 0; i < b.len; i++)
		p[i] = (uint8_t)rnd();
	b.p = b.len ? p : (rnd() % 2 ? NULL : p);
	return b;
}

static struct hs_probe probes[40];
static void probe(struct hs_probe *p)
{
	p->symbol = str();
	p->path = str();
	p->offset = val();
	p->build_id = bytes(80);
	p->kind = (uint32_t)val();
}

static void s(const char *n, const char *v)
{
	printf(" %s=", n);
	if (!v) {
		printf("(null)");
		return;
	}
	for (; *v; v++)
		printf("%02x", (uint8_t)*v);
}

static void b(const char *n, struct hs_bytes v)
{
	printf(" %s=%u:", n, v.len);
	for (uint32_t i = 0; i < v.len; i++)
		printf("%02x", v.p[i]);
}

static void pr(const struct hs_probe *p)
{
	s("sym", p->symbol);
	s("path", p->path);
	printf(" off=%" PRIu64, p->offset);
	b("bid", p->build_id);
	printf(" kind=%u", p->kind);
}

static void one(const struct hs_record *r)
{
	printf("%u t=%" PRIu64 " %u/%u", r->type, r->time, r->pid, r->tid);
	switch (r->type) {
	case 2:
	case 3:
	case 4:
		printf(" ptr=%" PRIx64 " slot=%" PRIu64 " size=%" PRIu64 " st=%" PRIu64 " w=%" PRIu64 " k=%u",
		       r->alloc.ptr, r->alloc.slot, r->alloc.size, r->alloc.stack_id, r->alloc.weight, r->alloc.kind);
		break;
	case 16:
		s("tv", r->session.tool_version);
		s("h", r->session.hostname);
		s("k", r->session.kernel);
		s("c", r->session.cmdline);
		printf(" %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %u n=%u",
		       r->session.tick_ns, r->session.monotonic_start_ns, r->session.realtime_start_ns,
		       r->session.sample_rate, r->session.max_stack, r->session.flags, r->session.stack_mode,
		       r->session.nr_probes);
		for (uint32_t i = 0; i < r->session.nr_probes; i++)
			pr(&r->session.probes[i]);
		s("via", r->session.via);
		break;
	case 17:
		printf(" %u %u", r->process.ppid, r->process.origin);
		s("comm", r->process.comm);
		s("cmd", r->process.cmdline);
		s("exe", r->process.exe);
		b("bid", r->process.build_id);
		break;
	case 18:
		printf(" st=%" PRId64, r->exit.status);
		break;
	case 19:
		printf(" %" PRIx64 "-%" PRIx64 " %" PRIx64 " %" PRIu64, r->mapping.start, r->mapping.end,
		       r->mapping.offset, r->mapping.inode);
		s("path", r->mapping.path);
		b("bid", r->mapping.build_id);
		break;
	case 20:
		printf(" %" PRIx64 "-%" PRIx64, r->unmap.start, r->unmap.end);
		break;
	case 21:
		printf(" id=%" PRIu64 " n=%u", r->stack.id, r->stack.nr);
		for (uint32_t i = 0; i < r->stack.nr; i++)
			printf(" %" PRIx64, r->stack.ips[i]);
		break;
	case 22:
		s("label", r->snapshot.label);
		printf(" %u %" PRIu64, r->snapshot.origin, r->snapshot.live_bytes);
		break;
	case 23:
		printf(" %" PRIu64 " %" PRIu64, r->rss.rss_bytes, r->rss.vm_bytes);
		break;
	case 24:
	case 25:
		printf(" n=%u", r->counters.nr);
		for (uint32_t i = 0; i < r->counters.nr; i++) {
			s("n", r->counters.items[i].name);
			printf("=%" PRIu64, r->counters.items[i].value);
		}
		break;
	case 26:
		s("comm", r->thread_name.comm);
		break;
	case 27:
		printf(" n=%u", r->frame_index.nr);
		for (uint32_t i = 0; i < r->frame_index.nr; i++)
			printf(" %" PRIu64 ",%" PRIu64 ",%" PRIu64, r->frame_index.entries[i].offset,
			       r->frame_index.entries[i].first_time, r->frame_index.entries[i].last_time);
		break;
	case 28:
		pr(&r->probe);
		break;
	case 29:
		printf(" id=%" PRIu64 " n=%u", r->dwarf.id, r->dwarf.nregs);
		for (uint32_t i = 0; i < r->dwarf.nregs; i++)
			printf(" %" PRIx64, r->dwarf.regs[i]);
		printf(" used=%" PRIu64, r->dwarf.used);
		b("win", r->dwarf.window);
		break;
	}
	printf("\n");
}

static int cb(const struct hs_record *r, void *c)
{
	(void)c;
	printf("F ");
	one(r);
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static uint64_t ips[200], regs[40];
static struct hs_counter cnt[64];
static uint64_t lim; /* one past the highest slot allocated: frees name a slot below it */

/* R's fields for type T, about one in BAD out of the reader's range; false for a type the
 * writer takes no record of (THREAD, FRAME_INDEX: it writes them itself). */
/* An allocation or a free of a slot allocated before (an allocation when none was). */
static void fill_alloc(struct hs_record *r, uint32_t t)
{
	if (t == HS_REC_FREE && !lim)
		r->type = t = HS_REC_ALLOC;
	r->alloc.slot = t == HS_REC_FREE ? rnd() % lim : rnd() % (lim + 1);
	if (t != HS_REC_FREE && r->alloc.slot == lim)
		lim++;
	r->alloc.size = val();
	r->alloc.stack_id = rnd() % 4;
	r->alloc.kind = rnd() % 9;
	r->alloc.weight = val();
	r->pid = rnd() % 3;
	r->tid = rnd() % 3;
}

static void fill_session(struct hs_record *r, int bad)
{
	r->session.tool_version = str();
	r->session.hostname = str();
	r->session.kernel = str();
	r->session.cmdline = str();
	r->session.tick_ns = rnd() % bad ? 1 + val() % 1000 : val();
	r->session.monotonic_start_ns = val();
	r->session.realtime_start_ns = val();
	r->session.sample_rate = val();
	r->session.max_stack = rnd() % bad ? 1 + rnd() % 127 : val();
	r->session.flags = val();
	r->session.stack_mode = (uint32_t)val();
	r->session.nr_probes = rnd() % 40;
	for (uint32_t i = 0; i < r->session.nr_probes; i++)
		probe(&probes[i]);
	r->session.probes = probes;
	r->session.via = str();
}

static bool fill(struct hs_record *r, uint32_t t, int bad)
{
	switch (t) {
	case HS_REC_THREAD:
		return false;
	case HS_REC_ALLOC:
	case HS_REC_ALLOC_SAMPLED:
	case HS_REC_FREE:
		fill_alloc(r, t);
		break;
	case HS_REC_SESSION:
		fill_session(r, bad);
		break;
	case HS_REC_PROCESS:
		r->process.ppid = (uint32_t)val();
		r->process.origin = (uint32_t)val();
		r->process.comm = str();
		r->process.cmdline = str();
		r->process.exe = str();
		r->process.build_id = bytes(100);
		break;
	case HS_REC_EXIT:
		r->exit.status = (int64_t)val();
		break;
	case HS_REC_MAPPING:
		r->mapping.start = rnd() % bad ? rnd() & 0xffffffffffffull : val();
		r->mapping.end = rnd() % bad ? r->mapping.start + val() % 100000 : val();
		r->mapping.offset = val();
		r->mapping.inode = val();
		r->mapping.path = str();
		r->mapping.build_id = bytes(90);
		break;
	case HS_REC_UNMAP:
		r->unmap.start = val();
		r->unmap.end = val();
		break;
	case HS_REC_STACK:
		r->stack.id = val();
		r->stack.nr = rnd() % bad ? rnd() % 3 : rnd() % 200;
		for (uint32_t i = 0; i < r->stack.nr; i++)
			ips[i] = val();
		r->stack.ips = ips;
		break;
	case HS_REC_SNAPSHOT:
		r->snapshot.label = str();
		r->snapshot.origin = (uint32_t)val();
		r->snapshot.live_bytes = val();
		break;
	case HS_REC_RSS:
		r->rss.rss_bytes = val();
		r->rss.vm_bytes = val();
		break;
	case HS_REC_COUNTERS:
	case HS_REC_END:
		r->counters.nr = rnd() % 64;
		for (uint32_t i = 0; i < r->counters.nr; i++) {
			cnt[i].name = str();
			cnt[i].value = val();
		}
		r->counters.items = cnt;
		break;
	case HS_REC_THREAD_NAME:
		r->thread_name.comm = str();
		break;
	case HS_REC_FRAME_INDEX:
		return false;
	case HS_REC_PROBE:
		probe(&r->probe);
		break;
	case HS_REC_STACK_DWARF:
		r->dwarf.id = val();
		r->dwarf.nregs = rnd() % bad ? rnd() % 33 : rnd() % 40;
		for (uint32_t i = 0; i < r->dwarf.nregs; i++)
			regs[i] = val();
		r->dwarf.regs = regs;
		r->dwarf.used = val();
		r->dwarf.window = bytes(rnd() % bad ? 4096 : 66000);
		break;
	}
	return true;
}

static int cmd_write(char **argv)
{
	struct record_writer *w;
	/* Version 2.1: the bytes pinned are that version's; its extended records are version 3's
	 * too, and test_format3 covers version 3's events. */
	struct record_writer_opts o = {.frame_size = 4096, .major = 2};
	long n = atol(argv[2]);
	int bad = atoi(argv[4]);
	st = strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ull + 7;
	if (record_writer__open(argv[1], &o, &w))
		return 1;
	for (long k = 0; k < n; k++) {
		struct hs_record r;
		uint32_t t = 16 + (uint32_t)(rnd() % 14);
		if (rnd() % 3 == 0)
			t = 1 + (uint32_t)(rnd() % 4);
		memset(&r, 0, sizeof(r));
		r.type = t;
		r.time = rnd() % 2 ? val() : (uint64_t)k * 100;
		r.pid = (uint32_t)val();
		r.tid = (uint32_t)val();
		if (!fill(&r, t, bad))
			continue;
		int e = record_writer__write(w, &r);
		printf("%ld type %u -> %d\n", k, r.type, e);
	}
	printf("close %d\n", record_writer__close(w));
	record_writer__free(w);
	return 0;
}

static int cmd_dump(char **argv)
{
	struct record_reader *r;
	struct hs_record rec;
	char err[512];
	int ret;
	if (record_reader__open(argv[1], &r, err, sizeof(err))) {
		printf("open: %s\n", err);
		return 0;
	}
	while ((ret = record_reader__next(r, &rec)) == 1)
		one(&rec);
	printf("ret %d status %d skipped %" PRIu64 " err %s\n", ret, record_reader__status(r),
	       record_reader__skipped_records(r), record_reader__error(r));
	printf("footer %d\n", record_reader__footer(r, cb, NULL));
	record_reader__free(r);
	return 0;
}

static uint8_t buf[16 << 20], raw[HS_MAX_FRAME_RAW], comp[17 << 20];

/* Reads PATH into buf; its length, 0 on failure. */
static size_t load(const char *path)
{
	FILE *in = fopen(path, "rb");
	size_t n;

	if (!in)
		return 0;
	n = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	return n < sizeof(buf) ? n : 0;
}

/* The records as the writer laid them out, before compression: each data frame's raw size,
 * flags and bytes. Neither the compressed bytes nor the footer (whose frame index holds file
 * offsets) are here: they depend on the zstd library's version, not on the schema. */
static int cmd_raw(char **argv)
{
	size_t n = load(argv[1]), off = 16;

	if (!n)
		return 1;
	fwrite(buf, 1, 16, stdout);
	while (off + 16 <= n && le32(buf + off) == 0x42465348u) {
		uint32_t clen = le32(buf + off + 4), rlen = le32(buf + off + 8), flags = le32(buf + off + 12);
		size_t got;

		if (clen > n - off - 16 || (flags & HS_FRAME_FLAG_FOOTER))
			break;
		got = ZSTD_decompress(raw, sizeof(raw), buf + off + 16, clen);
		if (ZSTD_isError(got) || got != rlen)
			return 1;
		printf("\nframe %u %u\n", rlen, flags);
		fwrite(raw, 1, rlen, stdout);
		off += 16 + clen;
	}
	return 0;
}

static int cmd_corrupt(char **argv)
{
	FILE *out = fopen(argv[2], "wb");
	size_t n = load(argv[1]), off = 16;

	if (!out || !n)
		return 1;
	st = strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ull + 3;
	fwrite(buf, 1, 16, out);
	while (off + 16 <= n && le32(buf + off) == 0x42465348u) {
		uint32_t clen = le32(buf + off + 4), rlen = le32(buf + off + 8), flags = le32(buf + off + 12);
		size_t got = clen <= n - off - 16 ? ZSTD_decompress(raw, sizeof(raw), buf + off + 16, clen) : 0, c;
		uint8_t fh[16];

		if (ZSTD_isError(got) || got != rlen)
			break;
		if (rlen && rnd() % 6 == 0) {
			int k = 1 + rnd() % 3;
			while (k--) {
				size_t at = rnd() % rlen;
				switch (rnd() % 6) {
				case 0:
					raw[at] = 0xff;
					break;
				case 1:
					raw[at] = 0x80;
					break;
				case 2:
					raw[at] = (uint8_t)rnd();
					break;
				case 3:
					raw[at] ^= 1;
					break;
				case 4:
					raw[at] = 0;
					break;
				default:
					rlen = (uint32_t)at;
					break;
				}
				if (!rlen)
					break;
			}
		}
		c = ZSTD_compress(comp, sizeof(comp), raw, rlen, 1);
		put32(fh, 0x42465348u);
		put32(fh + 4, (uint32_t)c);
		put32(fh + 8, rlen);
		put32(fh + 12, flags);
		fwrite(fh, 1, 16, out);
		fwrite(comp, 1, c, out);
		off += 16 + clen;
	}
	fwrite(buf + off, 1, n - off, out); /* the trailer, or what follows */
	fclose(out);
	return 0;
}

/* The rules schema.h states for a table, which a new line in schema.c could break. */
static int check_table(const struct hs_schema *s, bool item, const char *type)
{
	bool optional = false;
	int bad = 0;

	for (uint32_t i = 0; i < s->nr; i++) {
		const struct hs_field *f = &s->fields[i];
		const char *why = NULL;

		if (optional && !(f->flags & HS_FF_OPTIONAL))
			why = "a required field after an optional one";
		optional |= !!(f->flags & HS_FF_OPTIONAL);
		if (f->enc == HS_ENC_SPAN) {
			why = "a span whose base is not an earlier u64 field";
			for (uint32_t k = 0; k < i; k++)
				if (s->fields[k].off == f->aux && s->fields[k].enc != HS_ENC_STR)
					why = NULL;
		}
		if ((f->enc == HS_ENC_DELTA || f->enc == HS_ENC_SDELTA) && !item)
			why = "a delta field outside an array item";
		if ((f->enc == HS_ENC_ARRAY || f->enc == HS_ENC_STRUCT) && (!f->sub || !f->sub->size))
			why = "an array or struct without an item table";
		if (f->enc == HS_ENC_BYTES && !f->limit)
			why = "bytes without a limit";
		if (f->enc == HS_ENC_STR && (f->flags & HS_FF_CLIP) && !f->limit)
			why = "a string cut at no limit";
		if (f->enc == HS_ENC_ARRAY && (!f->limit || hs_schema_min_bytes(f->sub) < 1))
			why = "an array without a limit, or items that may take no bytes";
		if (f->enc > HS_ENC_ARRAY)
			why = "an unknown encoding";
		if (why) {
			printf("%s record: %s: %s: %s\n", type, s->name, f->name, why);
			bad++;
		}
		if (f->enc == HS_ENC_ARRAY)
			bad += check_table(f->sub, true, type);
		else if (f->enc == HS_ENC_STRUCT)
			bad += check_table(f->sub, item, type);
	}
	return bad;
}

/* Every extended type this version writes has a table, and every table keeps the rules. */
static int cmd_check(void)
{
	int bad = 0;

	for (uint32_t t = 0; t <= HS_REC_EXT_MAX + 1; t++) {
		const struct hs_schema *s = hs_schema_of(t);
		bool want = t >= HS_REC_SESSION && t <= HS_REC_HORIZON;

		if (!s != !want) {
			printf("type %u: %s\n", t, s ? "a table for a type this version does not write" : "no table");
			bad++;
		}
		if (s)
			bad += check_table(s, false, hs_rec_type_name(t));
	}
	printf("%d tables broken\n", bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "check"))
		return cmd_check();
	if (argc == 6 && !strcmp(argv[1], "write"))
		return cmd_write(argv + 1);
	if (argc == 3 && !strcmp(argv[1], "dump"))
		return cmd_dump(argv + 1);
	if (argc == 3 && !strcmp(argv[1], "raw"))
		return cmd_raw(argv + 1);
	if (argc == 5 && !strcmp(argv[1], "corrupt"))
		return cmd_corrupt(argv + 1);
	fprintf(stderr, "usage: schemagen check | write OUT N SEED BAD | raw IN | dump IN | corrupt IN OUT SEED\n");
	return 2;
}
