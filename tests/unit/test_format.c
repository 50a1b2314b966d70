// SPDX-License-Identifier: MIT
/* Record-file format tests: round trip, truncation at every offset, corrupted bytes,
 * a newer major version, and unknown record types. Built with ASan/UBSan. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record.h"

#include "check.h"

static char dir[] = "/tmp/hsfmt.XXXXXX";

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

#define NR_EVENTS 5000

static const struct hs_probe probes[] = {
	{.symbol = "malloc", .path = "/lib/libc.so.6", .offset = 0x98930,
	 .build_id = {(const uint8_t *)"\x01\x02\x03\x04", 4}, .kind = 1},
	{.symbol = "free", .path = "/lib/libc.so.6", .offset = 0x98ef9, .kind = 2},
};
static const uint64_t ips[] = {0x401000, 0x401234, 0x7f0000001000ull, 0x400100};
static const struct hs_counter counters[] = {{"lost.ringbuf_full", 7}, {"allocs", 123456789}};

/* The version the writer writes, for the tests that run once per version: 2.1, or 3 with
 * times exact (a quantum of the sample's tick), which the tests below compare exactly. */
static struct {
	uint32_t major;
	uint64_t quantum_ns;
} ver;

/* Writes a file with every record type and NR_EVENTS alloc/free events. */
static void write_sample(const char *path, uint32_t frame_size, uint64_t *nr_records)
{
	struct record_writer_opts o = {.frame_size = frame_size, .major = ver.major, .time_quantum_ns = ver.quantum_ns};
	struct record_writer *w;
	struct hs_record r;
	uint64_t n = 0;
	int err = record_writer__open(path, &o, &w);

	CHECK(!err, "open writer: %s", strerror(-err));
	if (err)
		exit(1);
#define W(...)                                                                                               \
	do {                                                                                                 \
		r = (struct hs_record){__VA_ARGS__};                                                         \
		err = record_writer__write(w, &r);                                                           \
		CHECK(!err, "write type %u: %s", r.type, strerror(-err));                                    \
		n++;                                                                                         \
	} while (0)
	W(.type = HS_REC_SESSION, .session = {.tool_version = "0.1.0", .hostname = "host", .kernel = "6.18",
					      .cmdline = "./prog a b", .tick_ns = 1000, .monotonic_start_ns = 5,
					      .realtime_start_ns = 1700000000000000000ull, .sample_rate = 524288,
					      .stack_mode = HS_STACK_FP, .max_stack = 127, .nr_probes = 2,
					      .probes = probes});
	W(.type = HS_REC_PROCESS, .time = 1, .pid = 42,
	  .process = {.ppid = 1, .origin = HS_PROC_STARTED, .comm = "prog", .cmdline = "./prog a b",
		      .exe = "/usr/bin/prog", .build_id = {(const uint8_t *)"\xaa\xbb", 2}});
	W(.type = HS_REC_MAPPING, .time = 2, .pid = 42,
	  .mapping = {.start = 0x400000, .end = 0x401000, .offset = 0x1000, .inode = 77, .path = "/usr/bin/prog"});
	W(.type = HS_REC_THREAD_NAME, .pid = 42, .tid = 43, .thread_name = {.comm = "worker"});
	W(.type = HS_REC_STACK, .stack = {.id = 1, .nr = 4, .ips = ips});
	W(.type = HS_REC_STACK_DWARF,
	  .dwarf = {.id = 9, .nregs = 4, .regs = ips, .used = 9000, .window = {(const uint8_t *)"stackbytes", 10}});
	W(.type = HS_REC_PROBE, .time = 3, .pid = 42,
	  .probe = {.symbol = "_Znwm", .path = "/lib/libstdc++.so.6", .offset = 0xabc, .kind = 4});
	/* A Python code object: 3.11's location table of a two-line function, as CPython made it. */
	W(.type = HS_REC_PY_CODE, .time = 4, .pid = 42,
	  .py_code = {.id = (1ull << 28) - 1, .qualname = "Cache.<locals>.build", .filename = "/srv/app/cache.py",
		      .first_line = 120, .py_version = 0x30b,
		      .line_table = {(const uint8_t *)"\x80\x00\xd8\x04\x08\x80\x48\x00", 8}});
	for (int i = 0; i < NR_EVENTS; i++) {
		uint64_t t = 10 + (uint64_t)i * 3;

		/* Slots as the recorder hands them out: in each group of three events the first
		 * block stays live and the second is freed, so group g uses slots g and g + 1. */
		if (i % 3 == 2)
			W(.type = HS_REC_FREE, .time = t, .pid = 42, .tid = 42 + i % 2, .free = {.slot = (uint64_t)i / 3 + 1});
		else if (i % 7 == 0)
			W(.type = HS_REC_ALLOC_SAMPLED, .time = t, .pid = 42, .tid = 42 + i % 2,
			  .alloc = {.slot = (uint64_t)i / 3 + (uint64_t)(i % 3), .size = (uint64_t)i, .stack_id = 1,
				    .weight = 3 * HS_WEIGHT_ONE + 5, .kind = HS_KIND_CALLOC});
		else
			W(.type = HS_REC_ALLOC, .time = t, .pid = 42, .tid = 42 + i % 2,
			  .alloc = {.slot = (uint64_t)i / 3 + (uint64_t)(i % 3), .size = (uint64_t)i, .stack_id = 1,
				    .kind = HS_KIND_MALLOC});
		if (i == NR_EVENTS / 2)
			W(.type = HS_REC_SNAPSHOT, .time = t, .snapshot = {.label = "half", .origin = HS_SNAP_SIGNAL,
									     .live_bytes = 99});
	}
	W(.type = HS_REC_RSS, .time = 20000, .pid = 42, .rss = {.rss_bytes = 1 << 20, .vm_bytes = 1 << 24});
	W(.type = HS_REC_COUNTERS, .time = 20001, .counters = {.nr = 2, .items = counters});
	W(.type = HS_REC_UNMAP, .time = 20002, .pid = 42, .unmap = {.start = 0x400000, .end = 0x401000});
	W(.type = HS_REC_EXIT, .time = 20003, .pid = 42, .exit = {.status = -9});
	W(.type = HS_REC_END, .time = 20004, .counters = {.nr = 2, .items = counters});
#undef W
	err = record_writer__close(w);
	CHECK(!err, "close: %s", strerror(-err));
	record_writer__free(w);
	*nr_records = n;
}

/* Reads everything; returns the number of records and the final status. */
static uint64_t read_all(const char *path, enum hs_read_status *st, uint64_t *events, int *open_err)
{
	struct record_reader *r;
	struct hs_record rec;
	char err[256];
	uint64_t n = 0;
	int ret;

	*events = 0;
	*open_err = record_reader__open(path, &r, err, sizeof(err));
	if (*open_err)
		return 0;
	while ((ret = record_reader__next(r, &rec)) == 1) {
		n++;
		if (rec.type == HS_REC_ALLOC || rec.type == HS_REC_ALLOC_SAMPLED || rec.type == HS_REC_FREE)
			(*events)++;
	}
	*st = record_reader__status(r);
	if (*st != HS_READ_END)
		CHECK(strstr(record_reader__error(r), path) && strstr(record_reader__error(r), "offset"),
		      "error must name the file and offset: %s", record_reader__error(r));
	record_reader__free(r);
	return n;
}

static void test_varint(void)
{
	const uint64_t vals[] = {0, 1, 127, 128, 300, 1ull << 35, UINT64_MAX, UINT64_MAX - 1};
	uint8_t buf[16];
	uint64_t v;

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		size_t n = hs_put_uvarint(buf, vals[i]);

		CHECK(hs_get_uvarint(buf, n, &v) == n && v == vals[i], "varint %" PRIu64, vals[i]);
		CHECK(hs_get_uvarint(buf, n - 1, &v) == 0, "short varint %" PRIu64 " must fail", vals[i]);
	}
	memset(buf, 0xff, sizeof(buf));
	CHECK(hs_get_uvarint(buf, sizeof(buf), &v) == 0, "11-byte varint must fail");
	for (int64_t s = -3; s <= 3; s++)
		CHECK(hs_unzigzag(hs_zigzag(s)) == s, "zigzag %" PRId64, s);
	CHECK(hs_unzigzag(hs_zigzag(INT64_MIN)) == INT64_MIN, "zigzag min");
}

static uint64_t footer_frames;

static int footer_cb(const struct hs_record *fr, void *ctx)
{
	if (fr->type == HS_REC_SNAPSHOT && !strcmp(fr->snapshot.label, "half"))
		(*(int *)ctx)++;
	if (fr->type == HS_REC_FRAME_INDEX)
		CHECK(fr->frame_index.nr == footer_frames, "index covers every frame");
	return 0;
}

static void test_roundtrip(void)
{
	char path[256];
	struct record_reader *r;
	struct hs_record rec;
	uint64_t written, seen = 0, allocs = 0, frees = 0, sampled = 0, last_time = 0;
	char err[256];
	bool have[HS_REC_EXT_MAX + 1] = {0};
	int snaps_in_footer = 0;

	path_of(path, sizeof(path), "rt.hsnap");
	write_sample(path, 2048, &written);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while (record_reader__next(r, &rec) == 1) {
		seen++;
		have[rec.type] = true;
		switch (rec.type) {
		case HS_REC_SESSION:
			CHECK(!strcmp(rec.session.cmdline, "./prog a b") && rec.session.tick_ns == 1000 &&
				      rec.session.sample_rate == 524288 && rec.session.nr_probes == 2 &&
				      !strcmp(rec.session.probes[1].symbol, "free") &&
				      rec.session.probes[1].offset == 0x98ef9 && rec.session.probes[0].build_id.len == 4 &&
				      rec.session.realtime_start_ns == 1700000000000000000ull,
			      "session fields");
			break;
		case HS_REC_PROCESS:
			CHECK(rec.pid == 42 && rec.process.ppid == 1 && !strcmp(rec.process.exe, "/usr/bin/prog") &&
				      rec.process.build_id.len == 2 && rec.process.build_id.p[1] == 0xbb,
			      "process fields");
			break;
		case HS_REC_MAPPING:
			CHECK(rec.mapping.start == 0x400000 && rec.mapping.end == 0x401000 &&
				      rec.mapping.offset == 0x1000 && rec.mapping.inode == 77,
			      "mapping fields");
			break;
		case HS_REC_THREAD_NAME:
			CHECK(rec.tid == 43 && !strcmp(rec.thread_name.comm, "worker"), "thread name");
			break;
		case HS_REC_STACK:
			CHECK(rec.stack.nr == 4 && !memcmp(rec.stack.ips, ips, sizeof(ips)), "stack frames");
			break;
		case HS_REC_ALLOC:
		case HS_REC_ALLOC_SAMPLED: {
			uint64_t i = rec.alloc.size;

			CHECK(rec.alloc.slot == i / 3 + i % 3 && rec.alloc.ptr == 0 && rec.time == 10 + i * 3 && rec.pid == 42 &&
				      rec.tid == 42 + i % 2 && rec.alloc.stack_id == 1,
			      "alloc %" PRIu64, i);
			if (rec.type == HS_REC_ALLOC_SAMPLED) {
				sampled++;
				CHECK(rec.alloc.weight == 3 * HS_WEIGHT_ONE + 5 && rec.alloc.kind == HS_KIND_CALLOC,
				      "sampled weight");
			} else {
				CHECK(rec.alloc.weight == HS_WEIGHT_ONE, "unsampled weight is one");
			}
			allocs++;
			break;
		}
		case HS_REC_FREE:
			CHECK(rec.free.slot == (rec.time - 10) / 9 + 1, "free slot at time %" PRIu64, rec.time);
			frees++;
			break;
		case HS_REC_STACK_DWARF:
			CHECK(rec.dwarf.id == 9 && rec.dwarf.nregs == 4 && rec.dwarf.regs[3] == 0x400100 &&
				      rec.dwarf.used == 9000 && rec.dwarf.window.len == 10 &&
				      !memcmp(rec.dwarf.window.p, "stackbytes", 10), "dwarf stack fields");
			break;
		case HS_REC_PROBE:
			CHECK(rec.pid == 42 && !strcmp(rec.probe.symbol, "_Znwm") && rec.probe.offset == 0xabc &&
				      rec.probe.kind == 4, "probe fields");
			break;
		case HS_REC_PY_CODE: {
			/* Offsets 0-1 on line 120 (code 0), 2-3 and 4-5 on 121 (code 11, then code 0),
			 * columns aside; version 5 writes those lines alone: code 13 for 1 code unit,
			 * line + 0, then for 2, line + 1 (svarint 2). */
			bool v5 = !ver.major || ver.major >= 5;
			const char *want = v5 ? "\xe8\x00\xe9\x02" : "\x80\x00\xd8\x04\x08\x80\x48\x00";
			uint32_t want_len = v5 ? 4 : 8;

			CHECK(rec.pid == 42 && rec.time == 4 && rec.py_code.id == (1ull << 28) - 1 &&
				      !strcmp(rec.py_code.qualname, "Cache.<locals>.build") &&
				      !strcmp(rec.py_code.filename, "/srv/app/cache.py") && rec.py_code.first_line == 120 &&
				      rec.py_code.py_version == 0x30b && rec.py_code.line_table.len == want_len &&
				      !memcmp(rec.py_code.line_table.p, want, want_len),
			      "python code fields (version %u)", ver.major);
			break;
		}
		case HS_REC_EXIT:
			CHECK(rec.exit.status == -9, "exit status");
			break;
		case HS_REC_COUNTERS:
		case HS_REC_END:
			CHECK(rec.counters.nr == 2 && rec.counters.items[1].value == 123456789 &&
				      !strcmp(rec.counters.items[0].name, "lost.ringbuf_full"),
			      "counters");
			break;
		}
		if (rec.time > last_time)
			last_time = rec.time;
	}
	CHECK(record_reader__status(r) == HS_READ_END, "clean end, got %d: %s", record_reader__status(r),
	      record_reader__error(r));
	CHECK(seen == written, "records: wrote %" PRIu64 ", read %" PRIu64, written, seen);
	CHECK(frees == NR_EVENTS / 3 && allocs == NR_EVENTS - NR_EVENTS / 3, "event counts");
	CHECK(sampled > 0, "sampled allocs present");
	CHECK(record_reader__frames(r) > 10, "small frames: %" PRIu64, record_reader__frames(r));
	for (uint32_t t = HS_REC_ALLOC; t <= HS_REC_PY_CODE; t++)
		if (t <= HS_REC_FREE || (t >= HS_REC_SESSION && t != HS_REC_FRAME_INDEX))
			CHECK(have[t], "type %s round-tripped", hs_rec_type_name(t));

	footer_frames = record_reader__frames(r);
	CHECK(record_reader__footer(r, footer_cb, &snaps_in_footer) == 1, "footer present");
	CHECK(snaps_in_footer == 1, "snapshot in footer");
	record_reader__free(r);
}

static int write_prefix(const char *src, const char *dst, size_t len, const uint8_t *data)
{
	int fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	(void)src;
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		return -1;
	close(fd);
	return 0;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n);
	*len = fread(buf, 1, (size_t)n, f);
	fclose(f);
	return buf;
}

static void test_truncation(void)
{
	char path[256], cut[256];
	uint64_t written, full_events, events, prev_events = 0;
	enum hs_read_status st;
	uint8_t *data;
	size_t len;
	int open_err, truncated = 0;

	path_of(path, sizeof(path), "trunc.hsnap");
	path_of(cut, sizeof(cut), "cut.hsnap");
	write_sample(path, 2048, &written);
	read_all(path, &st, &full_events, &open_err);
	data = slurp(path, &len);
	for (size_t n = 0; n < len; n++) {
		write_prefix(path, cut, n, data);
		st = HS_READ_OK;
		read_all(cut, &st, &events, &open_err);
		if (n < 16) {
			CHECK(open_err, "a %zu-byte file has no header", n);
			continue;
		}
		CHECK(!open_err, "prefix %zu opens", n);
		CHECK(st == HS_READ_TRUNCATED || st == HS_READ_END, "prefix %zu: status %d", n, st);
		CHECK(events >= prev_events && events <= full_events, "prefix %zu: events must grow with length", n);
		prev_events = events;
		truncated += st == HS_READ_TRUNCATED;
	}
	CHECK(prev_events == full_events, "the longest prefix keeps every event");
	CHECK(truncated > 0, "truncations detected");
	free(data);
}

static void test_corruption(void)
{
	char path[256], bad[256];
	uint64_t written, full_events, events;
	enum hs_read_status st;
	uint8_t *data;
	size_t len;
	int open_err, corrupt = 0;

	path_of(path, sizeof(path), "corrupt.hsnap");
	path_of(bad, sizeof(bad), "bad.hsnap");
	write_sample(path, 8192, &written);
	read_all(path, &st, &full_events, &open_err);
	data = slurp(path, &len);
	/* Every byte of the file, flipped one at a time: never a crash, and a damaged frame
	 * payload must be reported as corrupt, never decoded into wrong events. */
	for (size_t i = 16; i < len; i++) {
		data[i] ^= 0x5a;
		write_prefix(path, bad, len, data);
		st = HS_READ_OK;
		read_all(bad, &st, &events, &open_err);
		data[i] ^= 0x5a;
		CHECK(!open_err, "byte %zu", i);
		if (st == HS_READ_END)
			CHECK(events <= full_events, "byte %zu", i);
		corrupt += st == HS_READ_CORRUPT;
	}
	CHECK(corrupt > (int)(len / 2), "most flipped bytes are detected as corrupt (%d of %zu)", corrupt, len);
	free(data);
}

static void test_versions(void)
{
	char path[256], err[512];
	struct record_reader *r;
	uint8_t *data;
	size_t len;
	uint64_t written;
	int ret;

	path_of(path, sizeof(path), "ver.hsnap");
	write_sample(path, 0, &written);
	data = slurp(path, &len);
	data[8] = HS_FORMAT_MAJOR + 1;
	data[10] = 0;
	write_prefix(path, path, len, data);
	ret = record_reader__open(path, &r, err, sizeof(err));
	char newer[16];

	snprintf(newer, sizeof(newer), "%u.0 is not", HS_FORMAT_MAJOR + 1);
	CHECK(ret == -EPROTONOSUPPORT && strstr(err, newer) && strstr(err, path), "newer major refused: %s", err);
	data[8] = 0;
	write_prefix(path, path, len, data);
	ret = record_reader__open(path, &r, err, sizeof(err));
	CHECK(ret == -EPROTONOSUPPORT && strstr(err, "0.0"), "major 0 refused: %s", err);
	data[8] = HS_FORMAT_MAJOR;
	data[10] = 7; /* minor 7: still readable */
	write_prefix(path, path, len, data);
	ret = record_reader__open(path, &r, err, sizeof(err));
	CHECK(!ret && record_reader__minor(r) == 7, "newer minor accepted: %s", err);
	if (!ret)
		record_reader__free(r);
	memcpy(data, "GARBAGE!", 8);
	write_prefix(path, path, len, data);
	ret = record_reader__open(path, &r, err, sizeof(err));
	CHECK(ret && strstr(err, "not a heapsnap record file"), "foreign file refused: %s", err);
	free(data);
}

/* A file of one frame of hand-written records, version MAJOR.3, with no footer. */
static void write_raw_file(const char *path, int major, const uint8_t *raw, size_t len)
{
	uint8_t hdr[16] = {0}, fh[16], comp[256];
	size_t clen;
	int fd;

	extern size_t ZSTD_compress(void *, size_t, const void *, size_t, int);
	clen = ZSTD_compress(comp, sizeof(comp), raw, len, 3);
	memcpy(hdr, HS_FILE_MAGIC, 8);
	hdr[8] = (uint8_t)major;
	hdr[10] = 3;
	fh[0] = 'H'; fh[1] = 'S'; fh[2] = 'F'; fh[3] = 'B';
	for (int i = 0; i < 4; i++) {
		fh[4 + i] = (uint8_t)(clen >> (8 * i));
		fh[8 + i] = (uint8_t)(len >> (8 * i));
		fh[12 + i] = 0;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(write(fd, hdr, 16) == 16 && write(fd, fh, 16) == 16 && write(fd, comp, clen) == (ssize_t)clen,
	      "write");
	close(fd);
}

/* A version 1 frame written by hand with an extended record type from a future minor
 * version, a known record with extra trailing fields, and a free of an address never
 * allocated. */
static void test_unknown_types(void)
{
	char path[256], err[256];
	uint8_t raw[64], *p = raw;
	struct record_reader *r;
	struct hs_record rec;
	int n = 0, snaps = 0;

	*p++ = 99; /* unknown extended type */
	*p++ = 3;
	*p++ = 1; *p++ = 2; *p++ = 3;
	*p++ = HS_REC_SNAPSHOT; /* time=5, label "x", origin 0, live 0, then a future field */
	*p++ = 6;
	*p++ = 5; *p++ = 1; *p++ = 'x'; *p++ = 0; *p++ = 0; *p++ = 42;
	*p++ = HS_REC_THREAD; *p++ = 7; *p++ = 8;
	*p++ = HS_REC_FREE; *p++ = 20; *p++ = 64; /* time 10, ptr 32 */
	path_of(path, sizeof(path), "unknown.hsnap");
	write_raw_file(path, 1, raw, (size_t)(p - raw));
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while (record_reader__next(r, &rec) == 1) {
		n++;
		if (rec.type == HS_REC_SNAPSHOT)
			snaps += rec.time == 5 && !strcmp(rec.snapshot.label, "x");
		if (rec.type == HS_REC_FREE)
			CHECK(rec.pid == 7 && rec.tid == 8 && rec.time == 10 && rec.free.ptr == 32 &&
				      rec.free.slot == HS_SLOT_NONE, "v1 free of an unknown address");
	}
	CHECK(n == 2 && snaps == 1, "unknown type skipped, known records kept (n=%d)", n);
	CHECK(record_reader__skipped_records(r) == 1, "one record skipped");
	CHECK(record_reader__status(r) == HS_READ_TRUNCATED, "no footer is reported");
	record_reader__free(r);
}

/* Version 2 packed events byte by byte, as docs/FORMAT.md gives them, and the slot rules:
 * a slot may only grow by one, and a free must name a slot some allocation used. */
static void test_packed_events(void)
{
	static const struct {
		const char *what;
		uint8_t bytes[24];
		size_t len;
		enum hs_read_status want;
		int events;
	} cases[] = {
		/* thread 7/8; alloc t=10 (time escape: 15 + 5 = zigzag 20) slot 0 size 16 stack 1
		 * kind 0; alloc t=80 (15 + 125 = zigzag 140) slot +1, size 300 (2 bytes), same site;
		 * free t=79 (zigzag 1) slot 0; alloc t=79, same slot (0), same site, size 8. */
		{"valid", {1, 7, 8, 0xc0 | 15, 5, 0, 16, 1, 0, 0xd0 | 15, 125, 2, 0xac, 0x02, 0x80 | 1, 0,
			   0xf0, 8}, 18, HS_READ_TRUNCATED, 4},
		{"same site before any site", {1, 7, 8, 0xd0, 0, 16}, 6, HS_READ_CORRUPT, 0},
		{"free with ALLOC-only bits", {1, 7, 8, 0xa0, 0}, 5, HS_READ_CORRUPT, 0},
		{"slot skips ahead", {1, 7, 8, 0xc0, 4, 16, 1, 0}, 8, HS_READ_CORRUPT, 0},
		{"free of a slot never used", {1, 7, 8, 0xc0, 0, 16, 1, 0, 0x80, 1}, 10, HS_READ_CORRUPT, 1},
		{"packed alloc cut short", {1, 7, 8, 0xc0, 0, 16}, 6, HS_READ_CORRUPT, 0},
	};
	char path[256], err[256];

	path_of(path, sizeof(path), "packed.hsnap");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct record_reader *r;
		struct hs_record rec;
		struct hs_record got[8];
		int n = 0;

		write_raw_file(path, 2, cases[c].bytes, cases[c].len);
		CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
		while (n < 8 && record_reader__next(r, &rec) == 1)
			got[n++] = rec;
		CHECK(n == cases[c].events && record_reader__status(r) == cases[c].want, "%s: %d events, status %d: %s",
		      cases[c].what, n, record_reader__status(r), record_reader__error(r));
		if (c == 0 && n == 4) {
			CHECK(got[0].type == HS_REC_ALLOC && got[0].time == 10 && got[0].alloc.slot == 0 &&
				      got[0].alloc.size == 16 && got[0].alloc.stack_id == 1 && got[0].pid == 7 &&
				      got[0].tid == 8 && got[0].alloc.weight == HS_WEIGHT_ONE,
			      "packed alloc");
			CHECK(got[1].time == 80 && got[1].alloc.slot == 1 && got[1].alloc.size == 300 &&
				      got[1].alloc.stack_id == 1, "time escape, same site");
			CHECK(got[2].type == HS_REC_FREE && got[2].time == 79 && got[2].free.slot == 0, "packed free");
			CHECK(got[3].type == HS_REC_ALLOC && got[3].time == 79 && got[3].alloc.slot == 0 &&
				      got[3].alloc.size == 8 && got[3].alloc.stack_id == 1, "same slot, same site");
		}
		record_reader__free(r);
	}
}

/* ---- the footer frame holds its records whole: frame index and snapshot copies ---- */

#define MAX_FRAMES 600000

/* What the data frames hold, read through the stream: each frame's offset and time range. */
struct stream_seen {
	uint64_t *off, *tmin, *tmax;
	uint64_t frames, events, snaps, time_sum, first, last;
	enum hs_read_status st;
	char err[512];
};

/* What the footer holds, checked against the stream. */
struct footer_seen {
	const struct stream_seen *s;
	const char *label_fmt;
	uint64_t entries, copies, first, last;
	int bad; /* first failed check, by line */
};

static void note_frame_time(struct stream_seen *s, uint64_t t)
{
	uint64_t f = s->frames - 1;

	if (t < s->tmin[f])
		s->tmin[f] = t;
	if (t > s->tmax[f])
		s->tmax[f] = t;
	if (t < s->first)
		s->first = t;
	if (t > s->last)
		s->last = t;
}

static void read_stream(const char *path, struct stream_seen *s)
{
	struct record_reader *r;
	struct hs_record rec;
	char err[256];

	memset(s, 0, sizeof(*s));
	s->off = calloc(MAX_FRAMES, sizeof(*s->off));
	s->tmin = calloc(MAX_FRAMES, sizeof(*s->tmin));
	s->tmax = calloc(MAX_FRAMES, sizeof(*s->tmax));
	s->first = UINT64_MAX;
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while (record_reader__next(r, &rec) == 1) {
		uint64_t off = record_reader__offset(r);

		if (!s->frames || s->off[s->frames - 1] != off) {
			CHECK(s->frames < MAX_FRAMES, "too many frames for the test");
			if (s->frames >= MAX_FRAMES)
				break;
			s->off[s->frames] = off;
			s->tmin[s->frames] = UINT64_MAX;
			s->frames++;
		}
		if (rec.type == HS_REC_ALLOC || rec.type == HS_REC_FREE) {
			s->events++;
			s->time_sum += rec.time;
			note_frame_time(s, rec.time);
		} else if (rec.type == HS_REC_SNAPSHOT) {
			s->snaps++;
			note_frame_time(s, rec.time);
		}
	}
	s->st = record_reader__status(r);
	snprintf(s->err, sizeof(s->err), "%s", record_reader__error(r));
	CHECK(s->frames == record_reader__frames(r), "frames %" PRIu64 " vs %" PRIu64, s->frames,
	      record_reader__frames(r));
	record_reader__free(r);
}

#define FCHECK(c)                                                                                            \
	do {                                                                                                 \
		if (!(c) && !f->bad)                                                                         \
			f->bad = __LINE__;                                                                   \
	} while (0)

static int footer_check_cb(const struct hs_record *rec, void *ctx)
{
	struct footer_seen *f = ctx;
	const struct stream_seen *s = f->s;

	if (rec->type == HS_REC_SNAPSHOT) {
		char want[64];

		snprintf(want, sizeof(want), f->label_fmt, (int)f->copies);
		FCHECK(!strncmp(rec->snapshot.label, want, strlen(want))); /* the first ones, in order */
		f->copies++;
		return 0;
	}
	FCHECK(rec->type == HS_REC_FRAME_INDEX && !f->entries && !f->copies);
	f->entries = rec->frame_index.nr;
	f->first = UINT64_MAX;
	for (uint32_t i = 0, k = 0; i < rec->frame_index.nr; i++) {
		const struct hs_frame_index_entry *e = &rec->frame_index.entries[i];
		uint64_t end = i + 1 < rec->frame_index.nr ? rec->frame_index.entries[i + 1].offset : UINT64_MAX;

		/* Each entry starts at a data frame, and the frames up to the next entry's have
		 * every time within its span: a reader seeking by time finds them. */
		FCHECK(k < s->frames && e->offset == s->off[k]);
		FCHECK(e->first_time <= e->last_time);
		for (; k < s->frames && s->off[k] < end; k++)
			FCHECK(s->tmin[k] >= e->first_time && s->tmax[k] <= e->last_time);
		if (i + 1 == rec->frame_index.nr)
			FCHECK(k == s->frames);
		if (e->first_time < f->first)
			f->first = e->first_time;
		if (e->last_time > f->last)
			f->last = e->last_time;
	}
	return 0;
}

/* Writes PATH with frame_size 4096: a session, NR events over NR_SNAPS snapshots evenly
 * spread, a flush every FLUSH_EVERY events (0: none), times out of order across frames when
 * JITTER (every other frame's first event before every event of the frame before: a merged
 * entry must take the earliest first_time of its frames, not its first frame's), labels of
 * LABEL_PAD bytes. */
struct big_opts {
	uint64_t events, snaps, flush_every, time_base, time_step;
	uint32_t footer_max;
	size_t label_pad;
	bool jitter;
};

static void write_big(const char *path, const struct big_opts *b, struct record_writer_footer *foot,
		      uint64_t *time_sum)
{
	struct record_writer_opts o = {.frame_size = 4096, .footer_max = b->footer_max, .major = ver.major,
				       .time_quantum_ns = ver.quantum_ns};
	struct record_writer *w;
	struct hs_record r;
	char *label = malloc(b->label_pad + 32);
	int err = record_writer__open(path, &o, &w);

	CHECK(!err && label, "open writer: %s", strerror(-err));
	if (err || !label)
		exit(1);
	r = (struct hs_record){.type = HS_REC_SESSION,
			       .session = {.tool_version = "t", .hostname = "h", .kernel = "k", .cmdline = "c",
					   .tick_ns = 1000, .max_stack = 64}};
	CHECK(!record_writer__write(w, &r), "session");
	*time_sum = 0;
	for (uint64_t i = 0; i < b->events; i++) {
		uint64_t t = b->time_base + i * b->time_step, slot = (i / 2) % 64;

		if (b->jitter && b->flush_every && i % (2 * b->flush_every) == b->flush_every)
			t -= 20 * b->time_step; /* before the frame before's first event */
		if (i % 2 == 0)
			r = (struct hs_record){.type = HS_REC_ALLOC, .time = t, .pid = 7, .tid = 7,
					       .alloc = {.slot = slot, .size = 16 + i % 1000, .stack_id = 1}};
		else
			r = (struct hs_record){.type = HS_REC_FREE, .time = t, .pid = 7, .tid = 7, .free = {.slot = slot}};
		err = record_writer__write(w, &r);
		if (err) {
			CHECK(!err, "event %" PRIu64 ": %s", i, strerror(-err));
			break;
		}
		*time_sum += t;
		if (b->snaps && i % (b->events / b->snaps) == 0) {
			int n = snprintf(label, 32, "interval-%" PRIu64, i / (b->events / b->snaps));

			memset(label + n, 'x', b->label_pad);
			label[(size_t)n + b->label_pad] = 0;
			r = (struct hs_record){.type = HS_REC_SNAPSHOT, .time = t,
					       .snapshot = {.label = label, .origin = HS_SNAP_INTERVAL, .live_bytes = 16}};
			CHECK(!record_writer__write(w, &r), "snapshot");
		}
		if (b->flush_every && i % b->flush_every == b->flush_every - 1)
			CHECK(!record_writer__flush(w), "flush");
	}
	err = record_writer__close(w);
	CHECK(!err, "close: %s", strerror(-err));
	record_writer__footer(w, foot);
	record_writer__free(w);
	free(label);
}

/* Reads PATH back: a complete file, every event, every snapshot in the data frames, and a
 * footer whose index covers every frame and the whole time range. Returns what the footer had. */
static void check_big(const char *path, const struct big_opts *b, uint64_t time_sum, struct footer_seen *f)
{
	struct stream_seen s;
	struct record_reader *r;
	char err[256];

	read_stream(path, &s);
	CHECK(s.st == HS_READ_END && !s.err[0], "%s: a complete file, got status %d: %s", path, s.st, s.err);
	CHECK(s.frames > 300, "%s: %" PRIu64 " frames", path, s.frames);
	CHECK(s.events == b->events && s.time_sum == time_sum, "%s: %" PRIu64 " of %" PRIu64 " events read back",
	      path, s.events, b->events);
	CHECK(s.snaps == b->snaps, "%s: %" PRIu64 " of %" PRIu64 " snapshots in the data frames", path, s.snaps,
	      b->snaps);
	memset(f, 0, sizeof(*f));
	f->s = &s;
	f->label_fmt = "interval-%d";
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	CHECK(record_reader__footer(r, footer_check_cb, f) == 1, "%s: footer read", path);
	record_reader__free(r);
	CHECK(!f->bad, "%s: footer check at test_format.c:%d failed", path, f->bad);
	CHECK(f->entries >= 1 && f->first == s.first && f->last == s.last,
	      "%s: the index spans %" PRIu64 "..%" PRIu64 ", the events %" PRIu64 "..%" PRIu64, path, f->first,
	      f->last, s.first, s.last);
	free(s.off);
	free(s.tmin);
	free(s.tmax);
}

static void test_big_footer(void)
{
	char path[256];
	struct record_writer_footer foot;
	struct footer_seen f;
	uint64_t sum;
	/* A day of `--interval 1s` is 86,400 snapshots: these 2,000 take ~40 KiB, ten frames. */
	const struct big_opts many = {.events = 600000, .snaps = 2000, .time_base = 1000, .time_step = 2};
	/* Tiny frames and a footer of 4 KiB: the index must be merged, with times out of order
	 * across frames, and the snapshot copies cut. */
	const struct big_opts merged = {.events = 40000, .snaps = 400, .flush_every = 8, .time_base = 1000,
					.time_step = 5, .footer_max = 4096, .jitter = true};
	const struct big_opts huge = {.events = 960000, .snaps = 240, .flush_every = 2, .time_base = 1ull << 63,
				      .time_step = 1ull << 42, .label_pad = 65536};

	path_of(path, sizeof(path), "big.hsnap");
	write_big(path, &many, &foot, &sum);
	check_big(path, &many, sum, &f);
	CHECK(f.entries == foot.frames && foot.index_entries == foot.frames, "every frame indexed: %" PRIu64
	      " entries, %" PRIu64 " frames", f.entries, foot.frames);
	CHECK(f.copies == many.snaps && foot.snapshot_copies == many.snaps && foot.snapshots == many.snaps,
	      "every snapshot copied: %" PRIu64, f.copies);
	printf("footer of %" PRIu64 " frames, %" PRIu64 " snapshots: %" PRIu64 " entries, %" PRIu64 " copies\n",
	       foot.frames, foot.snapshots, f.entries, f.copies);

	path_of(path, sizeof(path), "merged.hsnap");
	write_big(path, &merged, &foot, &sum);
	check_big(path, &merged, sum, &f);
	CHECK(foot.frames > 4000 && f.entries == foot.index_entries && f.entries < foot.frames / 8,
	      "index merged: %" PRIu64 " entries for %" PRIu64 " frames", f.entries, foot.frames);
	CHECK(f.copies == foot.snapshot_copies && f.copies > 0 && f.copies < merged.snaps && foot.snapshots == merged.snaps,
	      "the first %" PRIu64 " of %" PRIu64 " snapshots copied", f.copies, foot.snapshots);
	printf("footer of %" PRIu64 " frames, %" PRIu64 " snapshots: %" PRIu64 " entries, %" PRIu64 " copies\n",
	       foot.frames, foot.snapshots, f.entries, f.copies);

	/* At full size: 15 MiB of snapshot copies leave the index half of the 16 MiB, and
	 * 480,000 frames of ~18-byte entries (times past 2^63) need 8.6 MiB. */
	path_of(path, sizeof(path), "huge.hsnap");
	write_big(path, &huge, &foot, &sum);
	check_big(path, &huge, sum, &f);
	CHECK(f.entries == foot.index_entries && f.entries < foot.frames && f.entries >= foot.frames / 4,
	      "index merged: %" PRIu64 " entries for %" PRIu64 " frames", f.entries, foot.frames);
	CHECK(f.copies == foot.snapshot_copies && f.copies < huge.snaps && f.copies >= huge.snaps / 2,
	      "the first %" PRIu64 " of %" PRIu64 " snapshots copied", f.copies, foot.snapshots);
	printf("footer of %" PRIu64 " frames, %" PRIu64 " snapshots: %" PRIu64 " entries, %" PRIu64 " copies\n",
	       foot.frames, foot.snapshots, f.entries, f.copies);
	unlink(path);
}

/* A PY_CODE whose line table is longer than any the recorder writes (HS_MAX_PY_LINE_TABLE):
 * the reader refuses it, naming the file and offset, and reads nothing of it. The table is
 * 3.10's, which the writer writes as it is given (a location table, 3.11's, it would write
 * without columns: a few bytes of these zeros). */
static void test_py_code_limit(void)
{
	static uint8_t table[HS_MAX_PY_LINE_TABLE + 1];
	char path[256], err[256];
	struct record_writer *w;
	struct record_reader *r;
	struct hs_record rec = {.type = HS_REC_PY_CODE, .pid = 7,
				.py_code = {.id = 1, .qualname = "f", .filename = "f.py", .first_line = 1,
					    .py_version = 0x30a}};
	int ret, seen = 0;

	path_of(path, sizeof(path), "pylimit.hsnap");
	CHECK(!record_writer__open(path, NULL, &w), "open writer");
	rec.py_code.line_table = (struct hs_bytes){table, HS_MAX_PY_LINE_TABLE};
	CHECK(!record_writer__write(w, &rec), "a table at the limit is written");
	rec.py_code.id = 2;
	rec.py_code.line_table.len = HS_MAX_PY_LINE_TABLE + 1;
	record_writer__write(w, &rec);
	record_writer__close(w);
	record_writer__free(w);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while ((ret = record_reader__next(r, &rec)) == 1) {
		seen++;
		CHECK(rec.type != HS_REC_PY_CODE || (rec.py_code.id == 1 && rec.py_code.line_table.len == HS_MAX_PY_LINE_TABLE),
		      "only the table at the limit is read, got code %" PRIu64 " of %u bytes", rec.py_code.id,
		      rec.py_code.line_table.len);
	}
	CHECK(record_reader__status(r) == HS_READ_CORRUPT && strstr(record_reader__error(r), "offset") &&
		      strstr(record_reader__error(r), "py-code"),
	      "a table past the limit is refused, naming the offset and the record: %s", record_reader__error(r));
	record_reader__free(r);
	unlink(path);
}

/* Paths and names from processes are cut to their limits by the writer (the reader refuses
 * longer ones: tests/hostile.py longname), and a string at the limit is kept whole. */
static void test_string_limits(void)
{
	static char long_path[HS_MAX_PATH + 2], long_name[HS_MAX_NAME + 2];
	char path[256], err[256];
	struct record_writer *w;
	struct record_reader *r;
	struct hs_record map = {.type = HS_REC_MAPPING, .pid = 7, .mapping = {.start = 0x1000, .end = 0x2000}},
			 tn = {.type = HS_REC_THREAD_NAME, .pid = 7, .tid = 8}, rec;
	int ret, maps = 0, names = 0;

	memset(long_path, 'p', HS_MAX_PATH + 1);
	memset(long_name, 'n', HS_MAX_NAME + 1);
	path_of(path, sizeof(path), "strlimit.hsnap");
	CHECK(!record_writer__open(path, NULL, &w), "open writer");
	map.mapping.path = long_path;
	tn.thread_name.comm = long_name;
	CHECK(!record_writer__write(w, &map) && !record_writer__write(w, &tn), "a path and a name past their limits");
	long_path[HS_MAX_PATH] = 0;
	long_name[HS_MAX_NAME] = 0;
	CHECK(!record_writer__write(w, &map) && !record_writer__write(w, &tn), "a path and a name at their limits");
	record_writer__close(w);
	record_writer__free(w);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while ((ret = record_reader__next(r, &rec)) == 1) {
		if (rec.type == HS_REC_MAPPING) {
			maps++;
			CHECK(strlen(rec.mapping.path) == HS_MAX_PATH && !strncmp(rec.mapping.path, long_path, HS_MAX_PATH),
			      "a mapping's path of %zu bytes, not cut to %u", strlen(rec.mapping.path), HS_MAX_PATH);
		}
		if (rec.type == HS_REC_THREAD_NAME) {
			names++;
			CHECK(strlen(rec.thread_name.comm) == HS_MAX_NAME, "a thread's name of %zu bytes, not cut to %u",
			      strlen(rec.thread_name.comm), HS_MAX_NAME);
		}
	}
	CHECK(ret == 0 && maps == 2 && names == 2, "read %d mappings and %d names (status %d: %s)", maps, names, ret,
	      record_reader__error(r));
	record_reader__free(r);
	unlink(path);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_varint();
	for (uint32_t v = 2; v <= HS_FORMAT_MAJOR; v++) {
		ver.major = v;
		ver.quantum_ns = 1000;
		test_roundtrip();
		test_truncation();
		test_corruption();
	}
	ver.major = 0;
	ver.quantum_ns = 0;
	test_versions();
	test_unknown_types();
	test_packed_events();
	/* Exact times (a quantum of 1 ns), which the footer's sums compare. */
	ver.quantum_ns = 1;
	test_big_footer();
	test_py_code_limit();
	test_string_limits();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
	printf("test_format: %d failures\n", failures);
	return failures ? 1 : 0;
}
