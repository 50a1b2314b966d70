// SPDX-License-Identifier: MIT
/* Version 3 events (docs/FORMAT.md, Version 3 events): frames written by hand, byte by byte
 * as the document gives them, valid and damaged; times to within the writer's quantum; and
 * the writer's bounded dictionaries past their limits. Built with ASan/UBSan. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "events3.h"
#include "record.h"

#include "check.h"

static char dir[] = "/tmp/hsfmt3.XXXXXX";

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

/* A file of version MAJOR (3: 3.0, 4) of one frame: the COLUMNS record for NCOLS columns, MAIN,
 * then the columns; no footer. */
static void write_frame(const char *path, int major, int ncols, const uint8_t *main, size_t mlen,
			const uint8_t *const col[6], const size_t clen[6])
{
	uint8_t raw[512], comp[1024], hdr[16] = {0}, fh[16];
	size_t n = 0, z;
	int fd;

	raw[n++] = HS3_REC_COLUMNS;
	raw[n++] = (uint8_t)ncols;
	for (int i = 0; i < ncols; i++)
		raw[n++] = (uint8_t)clen[i];
	memcpy(raw + n, main, mlen);
	n += mlen;
	for (int i = 0; i < ncols; i++) {
		/* A column claimed longer than the 16 bytes a case holds is left out. */
		if (clen[i] && clen[i] <= 16) {
			memcpy(raw + n, col[i], clen[i]);
			n += clen[i];
		}
	}
	z = ZSTD_compress(comp, sizeof(comp), raw, n, 3);
	memcpy(hdr, HS_FILE_MAGIC, 8);
	hdr[8] = (uint8_t)major;
	memcpy(fh, "HSFB", 4);
	for (int i = 0; i < 4; i++) {
		fh[4 + i] = (uint8_t)(z >> (8 * i));
		fh[8 + i] = (uint8_t)(n >> (8 * i));
		fh[12 + i] = 0;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, hdr, 16) == 16 && write(fd, fh, 16) == 16 && write(fd, comp, z) == (ssize_t)z,
	      "write %s", path);
	close(fd);
}

static void write_v3(const char *path, const uint8_t *main, size_t mlen, const uint8_t *const col[5],
		     const size_t clen[5])
{
	const size_t c6[6] = {clen[0], clen[1], clen[2], clen[3], clen[4], 0};

	write_frame(path, 3, 5, main, mlen, (const uint8_t *const[]){col[0], col[1], col[2], col[3], col[4], NULL}, c6);
}

struct v3case {
	const char *what;
	uint8_t main[32];
	size_t mlen;
	uint8_t col[6][16];
	size_t clen[6];
	enum hs_read_status want;
	int events;
	const char *why; /* in the reader's error */
	int major, ncols; /* 0: 3 and 5 */
};

static int read_case(const char *path, struct hs_record *got, int max, struct record_reader **rp)
{
	char err[256];
	struct hs_record rec;
	int n = 0;

	CHECK(!record_reader__open(path, rp, err, sizeof(err)), "open: %s", err);
	while (record_reader__next(*rp, &rec) == 1)
		if (n < max)
			got[n++] = rec;
	return n;
}

/* THREAD 7/8, TIME 10; ALLOC new slot (0), new pair (16, stack 1, malloc); ALLOC new slot
 * (1), same pair; FREE by age 1 (slot 0); ALLOC of the slot freed last (0, popped), new pair (300,
 * stack 1, sampled, weight 70000); FREE of slot 1 by its number; ALLOC of slot 1 by number,
 * pair 0 by index; THREAD 9/9, TIME 12, THREAD_AGAIN 1 (7/8 again); FREE by age 0 (slot 1);
 * ALLOC new slot (2), same pair; FREE near the last free (slot 1 + 1). */
static const struct v3case valid = {
	"valid",
	{1, 7, 8, 5, 20, 0xd8, 0xd0, 0xa1, 0xc8, 0x80, 0xf4, 1, 9, 9, 5, 4, 7, 1, 0xa0, 0xd0, 0x90},
	21,
	{{0}, {1, 1}, {0, 0}, {16, 1, 0, 0xac, 0x02, 1, 1, 0xf0, 0xa2, 0x04}, {2}},
	{1, 2, 2, 10, 1},
	HS_READ_TRUNCATED,
	9,
	"no footer",
	3,
	5,
};

static const struct v3case bad[] = {
	{"pair index beyond the table", {1, 7, 8, 5, 0, 0xd4}, 6, {{0}}, {1, 0, 0, 0}, HS_READ_CORRUPT, 0,
	 "pair index beyond the frame's pair table", 3, 5},
	{"age of a block already freed", {1, 7, 8, 5, 0, 0xd8, 0xa0, 0xa0}, 8, {{0}, {0}, {0}, {16, 1, 0}},
	 {0, 0, 0, 3}, HS_READ_CORRUPT, 2, "frees by age a block that is not live", 3, 5},
	{"age beyond the frame's allocations", {1, 7, 8, 5, 0, 0xd8, 0xa3}, 7, {{0}, {0}, {0}, {16, 1, 0}},
	 {0, 0, 0, 3}, HS_READ_CORRUPT, 1, "frees by age a block older", 3, 5},
	{"reserved slot form", {1, 7, 8, 5, 0, 0xe8}, 6, {{0}, {0}, {0}, {16, 1, 0}}, {1, 0, 0, 3},
	 HS_READ_CORRUPT, 0, "reserved slot form", 3, 5},
	{"slot freed last, none freed", {1, 7, 8, 5, 0, 0xc8}, 6, {{0}, {0}, {0}, {16, 1, 0}}, {0, 0, 0, 3},
	 HS_READ_CORRUPT, 0, "no free in this frame", 3, 5},
	{"THREAD_AGAIN beyond the frame's threads", {1, 7, 8, 7, 1}, 5, {{0}}, {0}, HS_READ_CORRUPT, 0,
	 "THREAD_AGAIN names a thread beyond", 3, 5},
	{"event before TIME", {1, 7, 8, 0xd8}, 4, {{0}, {0}, {0}, {16, 1, 0}}, {0, 0, 0, 3}, HS_READ_CORRUPT, 0,
	 "before the frame's first TIME", 3, 5},
	{"free of a slot never used", {1, 7, 8, 5, 0, 0x80}, 6, {{0}, {3}, {0}}, {0, 1, 1, 0}, HS_READ_CORRUPT, 0,
	 "frees a slot no allocation used", 3, 5},
	{"pair column cut short", {1, 7, 8, 5, 0, 0xd8}, 6, {{0}, {0}, {0}, {16}}, {0, 0, 0, 1}, HS_READ_CORRUPT, 0,
	 "the pair column ends", 3, 5},
	{"slot-high column missing", {1, 7, 8, 5, 0, 0x80}, 6, {{0}, {0}}, {0, 1, 0, 0}, HS_READ_CORRUPT, 0,
	 "slot-high column ends", 3, 5},
	{"reserved ALLOC bits", {1, 7, 8, 5, 0, 0xd9}, 6, {{0}, {0}, {0}, {16, 1, 0}}, {0, 0, 0, 3},
	 HS_READ_CORRUPT, 0, "reserved bits", 3, 5},
	{"COLUMNS inside the frame", {1, 7, 8, HS3_REC_COLUMNS, 5, 0, 0, 0, 0, 0}, 10, {{0}}, {0}, HS_READ_CORRUPT, 0,
	 "after the start of its frame", 3, 5},
	{"near with an age set", {1, 7, 8, 5, 0, 0xd8, 0x91}, 7, {{0}, {0}, {0}, {16, 1, 0}, {0}}, {0, 0, 0, 3, 1},
	 HS_READ_CORRUPT, 1, "near the last one with an age set", 3, 5},
	{"near column cut short", {1, 7, 8, 5, 0, 0xd8, 0x90}, 7, {{0}, {0}, {0}, {16, 1, 0}}, {0, 0, 0, 3, 0},
	 HS_READ_CORRUPT, 1, "the near column ends", 3, 5},
	{"columns longer than the frame", {1, 7, 8}, 3, {{0}}, {200, 0, 0, 0}, HS_READ_CORRUPT, 0,
	 "columns are longer than the frame", 3, 5},
};

/* Version 4: THREAD 7/8, TIME 10; three ALLOCs of new slots (0, 1, 2), one pair (16, stack 1);
 * two FREEs by class 0 back, pair 0 (slots 2 and 1: the class's newest first); TIME 11; ALLOC
 * of a new slot (3), the same pair; FREE by class 1 back (slot 0, the first TIME's last
 * member), FREE by class 0 back (slot 3). */
static const struct v3case valid4 = {
	"valid 4",
	{1, 7, 8, 5, 20, 0xd8, 0xd0, 0xd0, 0xb0, 0xb0, 5, 2, 0xd0, 0xb1, 0xb0},
	15,
	{{0, 0, 0, 0}, {0}, {0}, {16, 1, 0}},
	{4, 0, 0, 3, 0, 0},
	HS_READ_TRUNCATED,
	8,
	"no footer",
	4,
	6,
};

static const struct v3case bad4[] = {
	{"by class, a TIME record before the first", {1, 7, 8, 5, 0, 0xd8, 0xb1}, 7, {{0}, {0}, {0}, {16, 1, 0}},
	 {1, 0, 0, 3}, HS_READ_CORRUPT, 1, "names a TIME record before the frame's first", 4, 6},
	{"by class, no live member left", {1, 7, 8, 5, 0, 0xd8, 0xb0, 0xb0}, 8, {{0, 0}, {0}, {0}, {16, 1, 0}},
	 {2, 0, 0, 3}, HS_READ_CORRUPT, 2, "no live block of the frame's has that thread", 4, 6},
	{"by class, another thread's", {1, 7, 8, 5, 0, 0xd8, 1, 9, 9, 0xb0}, 10, {{0}, {0}, {0}, {16, 1, 0}},
	 {1, 0, 0, 3}, HS_READ_CORRUPT, 1, "no live block of the frame's has that thread", 4, 6},
	{"by class, pair beyond the table", {1, 7, 8, 5, 0, 0xd8, 0xb0}, 7, {{1}, {0}, {0}, {16, 1, 0}},
	 {1, 0, 0, 3}, HS_READ_CORRUPT, 1, "FREE by class: pair index beyond", 4, 6},
	{"by class, TIME-record column cut short", {1, 7, 8, 5, 0, 0xd8, 0xbf}, 7, {{0}, {0}, {0}, {16, 1, 0}},
	 {1, 0, 0, 3, 0, 0}, HS_READ_CORRUPT, 1, "the TIME-record column ends", 4, 6},
	{"by class in version 3.0", {1, 7, 8, 5, 0, 0xd8, 0xb0}, 7, {{0}, {0}, {0}, {16, 1, 0}}, {1, 0, 0, 3},
	 HS_READ_CORRUPT, 1, "which version 3 has not", 3, 5},
	{"five columns in version 4", {1, 7, 8, 5, 0, 0xd8}, 6, {{0}, {0}, {0}, {16, 1, 0}}, {0, 0, 0, 3},
	 HS_READ_CORRUPT, 0, "not 6 columns", 4, 5},
};

static void check_bad(const char *path, const struct v3case *k)
{
	struct hs_record got[10];
	struct record_reader *r;
	int n;

	write_frame(path, k->major ? k->major : 3, k->ncols ? k->ncols : 5, k->main, k->mlen,
		    (const uint8_t *const[]){k->col[0], k->col[1], k->col[2], k->col[3], k->col[4], k->col[5]}, k->clen);
	n = read_case(path, got, 10, &r);
	CHECK(n == k->events && record_reader__status(r) == k->want && strstr(record_reader__error(r), k->why) &&
		      strstr(record_reader__error(r), "frame at offset 16"),
	      "%s: %d events, status %d: %s", k->what, n, record_reader__status(r), record_reader__error(r));
	record_reader__free(r);
}

static void test_hand_written4(void)
{
	char path[256];
	struct hs_record got[10];
	struct record_reader *r;
	const uint64_t freed[4] = {2, 1, 0, 3};
	int n, i, f = 0;

	path_of(path, sizeof(path), "v4.hsnap");
	write_frame(path, 4, 6, valid4.main, valid4.mlen,
		    (const uint8_t *const[]){valid4.col[0], valid4.col[1], valid4.col[2], valid4.col[3], valid4.col[4],
					     valid4.col[5]},
		    valid4.clen);
	n = read_case(path, got, 10, &r);
	CHECK(n == 8 && record_reader__status(r) == HS_READ_TRUNCATED, "valid 4: %d events: %s", n,
	      record_reader__error(r));
	for (i = 0; i < n; i++) {
		if (got[i].type != HS_REC_FREE)
			continue;
		CHECK(f < 4 && got[i].free.slot == freed[f], "free by class %d: slot %" PRIu64 ", not %" PRIu64, f,
		      got[i].free.slot, freed[f < 4 ? f : 0]);
		f++;
	}
	CHECK(f == 4 && got[5].alloc.slot == 3 && got[5].time == 11, "four frees by class, slot 3 at 11");
	record_reader__free(r);
	for (size_t c = 0; c < sizeof(bad4) / sizeof(bad4[0]); c++)
		check_bad(path, &bad4[c]);
}

static void test_hand_written(void)
{
	char path[256];
	struct hs_record got[10];
	struct record_reader *r;
	int n;

	path_of(path, sizeof(path), "v3.hsnap");
	write_v3(path, valid.main, valid.mlen,
		 (const uint8_t *const[]){valid.col[0], valid.col[1], valid.col[2], valid.col[3], valid.col[4]}, valid.clen);
	n = read_case(path, got, 10, &r);
	CHECK(n == 9 && record_reader__status(r) == HS_READ_TRUNCATED, "valid: %d events: %s", n, record_reader__error(r));
	if (n == 9) {
		CHECK(got[0].type == HS_REC_ALLOC && got[0].time == 10 && got[0].alloc.slot == 0 && got[0].alloc.size == 16 &&
			      got[0].alloc.stack_id == 1 && got[0].alloc.kind == 0 && got[0].pid == 7 && got[0].tid == 8 &&
			      got[0].alloc.weight == HS_WEIGHT_ONE,
		      "new slot, new pair");
		CHECK(got[1].type == HS_REC_ALLOC && got[1].alloc.slot == 1 && got[1].alloc.size == 16, "new slot, same pair");
		CHECK(got[2].type == HS_REC_FREE && got[2].free.slot == 0, "free by age 1");
		CHECK(got[3].type == HS_REC_ALLOC_SAMPLED && got[3].alloc.slot == 0 && got[3].alloc.size == 300 &&
			      got[3].alloc.weight == 70000,
		      "slot freed last, sampled pair");
		CHECK(got[4].type == HS_REC_FREE && got[4].free.slot == 1, "free by slot number");
		CHECK(got[5].type == HS_REC_ALLOC && got[5].alloc.slot == 1 && got[5].alloc.size == 16 &&
			      got[5].alloc.stack_id == 1,
		      "slot by number, pair by index");
		CHECK(got[6].type == HS_REC_FREE && got[6].free.slot == 1 && got[6].tid == 8 && got[6].time == 12,
		      "THREAD_AGAIN, TIME, free by age 0: slot %" PRIu64 " tid %u time %" PRIu64, got[6].free.slot,
		      got[6].tid, got[6].time);
		CHECK(got[7].type == HS_REC_ALLOC && got[7].alloc.slot == 2 && got[8].type == HS_REC_FREE &&
			      got[8].free.slot == 2,
		      "free near the last one: slot %" PRIu64, got[8].free.slot);
	}
	record_reader__free(r);
	for (size_t c = 0; c < sizeof(bad) / sizeof(bad[0]); c++)
		check_bad(path, &bad[c]);
}

/* Times: with the default quantum (1 ms at a tick of 1 us) every event reads back within a
 * quantum of its time, on a step of it, whether it came a few ticks out of order or not. */
static void test_time(void)
{
	char path[256], err[256];
	struct record_writer *w;
	struct record_reader *r;
	struct hs_record rec;
	uint64_t i = 0, worst = 0, n = 0;
	struct record_writer_opts o = {0};

	path_of(path, sizeof(path), "time.hsnap");
	CHECK(!record_writer__open(path, &o, &w), "open writer");
	record_writer__write(w, &(struct hs_record){.type = HS_REC_SESSION, .session = {.tick_ns = 1000, .max_stack = 8}});
	for (i = 0; i < 20000; i++) {
		uint64_t t = 5000 + i * 7 - (i % 5 == 0 ? 10 : 0);
		struct hs_record a = {.type = HS_REC_ALLOC, .time = t, .pid = 1, .tid = 1,
				      .alloc = {.slot = 0, .size = 16, .stack_id = 1}};
		struct hs_record f = {.type = HS_REC_FREE, .time = t + 1, .pid = 1, .tid = 1, .free = {.slot = 0}};

		CHECK(!record_writer__write(w, &a) && !record_writer__write(w, &f), "write %" PRIu64, i);
	}
	CHECK(!record_writer__close(w), "close");
	record_writer__free(w);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	i = 0;
	while (record_reader__next(r, &rec) == 1) {
		uint64_t k = i / 2, t = 5000 + k * 7 - (k % 5 == 0 ? 10 : 0) + i % 2, d;

		if (rec.type != HS_REC_ALLOC && rec.type != HS_REC_FREE)
			continue;
		d = rec.time > t ? rec.time - t : t - rec.time;
		worst = d > worst ? d : worst;
		CHECK(d < 1000 && rec.time % 1000 == 0, "event %" PRIu64 " at %" PRIu64 " read as %" PRIu64, i, t, rec.time);
		i++;
	}
	n = i;
	CHECK(n == 40000 && record_reader__status(r) == HS_READ_END, "%" PRIu64 " events: %s", n, record_reader__error(r));
	printf("times within %" PRIu64 " ticks of a 1000-tick quantum\n", worst);
	record_reader__free(r);
}

/* Past the dictionaries' limits: 5000 pairs in one frame (the table keeps 4096, the rest are
 * literal) and 40 threads (16 remembered), each event read back exactly. */
static void test_bounds(void)
{
	char path[256], err[256];
	struct record_writer *w;
	struct record_reader *r;
	struct hs_record rec;
	struct record_writer_opts o = {.frame_size = 8u << 20};
	uint64_t i = 0, ok = 0;

	path_of(path, sizeof(path), "bounds.hsnap");
	CHECK(!record_writer__open(path, &o, &w), "open writer");
	for (i = 0; i < 3 * 5000; i++) {
		struct hs_record a = {.type = HS_REC_ALLOC, .time = i, .pid = 1, .tid = (uint32_t)(i % 40),
				      .alloc = {.slot = i, .size = i % 5000, .stack_id = i % 7}};

		CHECK(!record_writer__write(w, &a), "write %" PRIu64, i);
	}
	CHECK(!record_writer__close(w), "close");
	record_writer__free(w);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	i = 0;
	while (record_reader__next(r, &rec) == 1) {
		if (rec.type != HS_REC_ALLOC)
			continue;
		ok += rec.time == i && rec.tid == i % 40 && rec.alloc.slot == i && rec.alloc.size == i % 5000 &&
		      rec.alloc.stack_id == i % 7;
		i++;
	}
	CHECK(ok == 15000 && record_reader__frames(r) == 1 && record_reader__status(r) == HS_READ_END,
	      "%" PRIu64 " of 15000 read back in %" PRIu64 " frames: %s", ok, record_reader__frames(r),
	      record_reader__error(r));
	record_reader__free(r);
}

/* Version 4's frees by class: random frees of one of about 2000 live blocks, by 3 threads, in
 * 300,000 events in one frame (each thread a run of 50), written both as version 3.0 (slot by slot) and as version 4. The
 * file's slots are not the program's, but every free must end a block alike to the one the
 * program freed: same thread, size, stack and time. Past the limits (65,536 allocations and
 * classes a frame): 39 pairs, a TIME record every 20 events; alike blocks: 8 pairs, a TIME record
 * every 200 events, where version 4 must be the smaller (by 9%; the churn's blocks, more alike, 32%). */
struct blk {
	uint64_t slot, size, stack, time;
	uint32_t tid;
};

static size_t write_random(const char *path, uint32_t major, bool alike, struct blk *freed, size_t *nfreed)
{
	struct record_writer_opts o = {.frame_size = 8u << 20, .major = major};
	static struct blk live[3][2048];
	static uint64_t pool[1 << 16];
	uint64_t seed = 88172645463325252ull, next_slot = 0;
	size_t nlive[3] = {0}, npool = 0;
	struct record_writer *w;
	struct stat st;

	*nfreed = 0;
	CHECK(!record_writer__open(path, &o, &w), "open writer %u", major);
	for (uint64_t i = 0; i < 300000; i++) {
		uint64_t r = (seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17);
		uint32_t tid = (uint32_t)(i / 50) % 3; /* each thread a run of events */
		struct hs_record e = {.time = i / (alike ? 200 : 20), .pid = 1, .tid = tid};
		size_t *n = &nlive[tid];

		if (*n < 300 || (*n < 2000 && (r & 1))) {
			struct blk *b = &live[tid][(*n)++];

			b->slot = npool ? pool[--npool] : next_slot++;
			b->size = 16 + (r >> 8) % (alike ? 4 : 13);
			b->stack = 1 + (r >> 16) % (alike ? 2 : 3);
			b->time = e.time;
			b->tid = tid;
			e.type = HS_REC_ALLOC;
			e.alloc.slot = b->slot;
			e.alloc.size = b->size;
			e.alloc.stack_id = b->stack;
		} else {
			size_t k = (r >> 20) % *n;

			/* By its own thread: a free by class needs that. */
			e.type = HS_REC_FREE;
			e.free.slot = live[tid][k].slot;
			freed[(*nfreed)++] = live[tid][k];
			pool[npool++] = live[tid][k].slot;
			live[tid][k] = live[tid][--(*n)];
		}
		CHECK(!record_writer__write(w, &e), "write %" PRIu64, i);
	}
	CHECK(!record_writer__close(w), "close");
	record_writer__free(w);
	CHECK(!stat(path, &st), "stat %s", path);
	return (size_t)st.st_size;
}

static void check_classes(bool alike)
{
	static struct blk freed[300000], live[1 << 16];
	char path[256], err[256];
	struct record_reader *r;
	struct hs_record rec;
	size_t nfreed, z3, z4, f = 0, same = 0;

	path_of(path, sizeof(path), "classes3.hsnap");
	z3 = write_random(path, 3, alike, freed, &nfreed);
	path_of(path, sizeof(path), "classes4.hsnap");
	z4 = write_random(path, 4, alike, freed, &nfreed);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while (record_reader__next(r, &rec) == 1) {
		if (rec.type == HS_REC_ALLOC && rec.alloc.slot < (1 << 16)) {
			live[rec.alloc.slot] = (struct blk){rec.alloc.slot, rec.alloc.size, rec.alloc.stack_id, rec.time, rec.tid};
		} else if (rec.type == HS_REC_FREE && rec.free.slot < (1 << 16) && f < nfreed) {
			const struct blk *a = &live[rec.free.slot], *b = &freed[f++];

			same += a->size == b->size && a->stack == b->stack && a->time == b->time && a->tid == b->tid &&
				rec.tid == b->tid;
		}
	}
	CHECK(f == nfreed && same == nfreed && record_reader__status(r) == HS_READ_END && record_reader__frames(r) == 1,
	      "%zu of %zu frees end a block alike to the program's, in %" PRIu64 " frames: %s", same, nfreed,
	      record_reader__frames(r), record_reader__error(r));
	CHECK(!alike || z4 * 100 < z3 * 95, "version 4 %zu bytes, 3.0 %zu", z4, z3);
	printf("random frees (%s): %zu, version 4 %zu bytes, 3.0 %zu\n", alike ? "alike" : "past the limits", nfreed,
	       z4, z3);
	record_reader__free(r);
}

/* A program's steady state, written with zstd's level chosen frame by frame (writer.c,
 * level_after) and at level 2 throughout: rows of a loop, each making blocks of 6 call sites
 * (one size among 3 by the row), each freed at once but the last site's one row in 8; in
 * RANDOM, sizes, sites and which live block is freed (7 in 8 times) are drawn instead. Returns the file's size; *DIGEST,
 * a hash of every record read back. */
static size_t write_rows(const char *path, int level, bool random, uint64_t *digest)
{
	struct record_writer_opts o = {.frame_size = 256u << 10, .zstd_level = level};
	static uint64_t live[1 << 20];
	uint64_t seed = 88172645463325252ull, next_slot = 0, nlive = 0, h = 0;
	struct record_writer *w;
	struct record_reader *r;
	struct hs_record rec;
	char err[256];
	struct stat st;

	CHECK(!record_writer__open(path, &o, &w), "open writer at level %d", level);
	for (uint64_t row = 0; row < 200000; row++) {
		for (int k = 0; k < 6; k++) {
			uint64_t x = (seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17);
			struct hs_record e = {.type = HS_REC_ALLOC, .time = row / 50, .pid = 1, .tid = 1};

			e.alloc.slot = next_slot++;
			e.alloc.size = random ? 16 + x % 4096 : 32u << k | (row % 3) * 16;
			e.alloc.stack_id = random ? 1 + (x >> 20) % 64 : (uint64_t)k + 1;
			CHECK(!record_writer__write(w, &e), "write");
			live[nlive++] = e.alloc.slot;
			if (random ? (x >> 40) % 8 != 0 : k != 5 || row % 8) {
				size_t at = random ? (size_t)((x >> 32) % nlive) : nlive - 1;
				struct hs_record f = {.type = HS_REC_FREE, .time = e.time, .pid = 1, .tid = 1};

				f.free.slot = live[at];
				live[at] = live[--nlive];
				CHECK(!record_writer__write(w, &f), "write");
			}
		}
	}
	CHECK(!record_writer__close(w), "close");
	record_writer__free(w);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while (record_reader__next(r, &rec) == 1)
		if (rec.type == HS_REC_ALLOC || rec.type == HS_REC_FREE)
			h = (h ^ rec.type ^ rec.time << 8 ^ rec.alloc.slot << 24 ^ rec.alloc.size << 40 ^
			     rec.alloc.stack_id << 56) * 0x9e3779b97f4a7c15ull;
	CHECK(record_reader__status(r) == HS_READ_END, "read to the end: %s", record_reader__error(r));
	record_reader__free(r);
	*digest = h;
	CHECK(!stat(path, &st), "stat %s", path);
	return (size_t)st.st_size;
}

static void test_levels(void)
{
	char path[256];
	uint64_t d2, d;

	for (int random = 0; random < 2; random++) {
		size_t z2, z;

		path_of(path, sizeof(path), "level2.hsnap");
		z2 = write_rows(path, 2, random, &d2);
		path_of(path, sizeof(path), "levels.hsnap");
		z = write_rows(path, 0, random, &d);
		CHECK(d == d2, "%s: the records read back differ between the levels", random ? "random" : "rows");
		if (random)
			CHECK(z == z2, "random: %zu bytes by the last frame's ratio, %zu at level 2", z, z2);
		else
			CHECK(z * 100 <= z2 * 85, "rows: %zu bytes by the last frame's ratio, %zu at level 2", z, z2);
		printf("levels (%s): %zu bytes by the last frame's ratio, %zu at level 2\n", random ? "random" : "rows", z, z2);
	}
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_hand_written();
	test_hand_written4();
	check_classes(false);
	check_classes(true);
	test_time();
	test_bounds();
	test_levels();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
	printf("test_format3: %d failures of %d checks\n", failures, checks);
	return failures ? 1 : 0;
}
