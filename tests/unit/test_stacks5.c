// SPDX-License-Identifier: MIT
/* Version 5's stack tails (docs/FORMAT.md, Stack tails): stacks written as the tails of
 * others read back frame for frame as they were given, in version 5 and in version 4 (whole),
 * through every case the tree meets (a stack alike in every frame, one longer or shorter than
 * its base, an id given twice with other frames, Python frames, differences that wrap); the
 * version 5 file the smaller; and tails written by hand that name what is not there are refused,
 * saying why. Built with ASan/UBSan. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "record.h"

#include "check.h"

static char dir[] = "/tmp/hsstk5.XXXXXX";

#define NR_STACKS 6000
#define MAX_STACK 100

static uint64_t ips[NR_STACKS][MAX_STACK];
static uint32_t nrs[NR_STACKS];
static uint64_t ids[NR_STACKS];

static uint64_t seed = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* Call paths of a program: each stack takes an earlier one's outer frames (a random number of
 * them) and adds its own, near the ones it replaces or anywhere (a Python frame, an address of
 * another module, 0, the highest address); some are an earlier one whole, under a new id or
 * under that one's id again (which the reader must give back as written). */
static void make_stacks(void)
{
	for (int i = 0; i < NR_STACKS; i++) {
		uint64_t x = rnd();
		uint32_t n = 1 + (uint32_t)(x % MAX_STACK);

		ids[i] = i % 97 == 50 ? ids[i - 7] : (uint64_t)i * 3 + 1;
		if (i == 0 || x % 13 == 0) {
			for (uint32_t k = 0; k < n; k++)
				ips[i][k] = 0x400000 + (rnd() % 0x100000);
		} else {
			int b = (int)(rnd() % (uint64_t)i);
			uint32_t keep = (uint32_t)(rnd() % (nrs[b] + 1));

			if (x % 11 == 0) {
				keep = nrs[b];
				n = keep;
			}
			if (n < keep)
				n = keep + (uint32_t)(rnd() % 4);
			if (n > MAX_STACK)
				n = MAX_STACK;
			if (keep > n)
				keep = n;
			memcpy(&ips[i][n - keep], &ips[b][nrs[b] - keep], sizeof(uint64_t) * keep);
			for (uint32_t k = 0; k < n - keep; k++) {
				uint64_t y = rnd();

				switch (y % 6) {
				case 0: ips[i][k] = (0xfffull << 52) | (y >> 40) << 24 | (y & 0xffff); break;
				case 1: ips[i][k] = y % 2 ? 0 : UINT64_MAX; break;
				case 2: ips[i][k] = 0x7f0000000000 + (y >> 30); break;
				default: ips[i][k] = 0x400000 + (y >> 44);
				}
			}
		}
		nrs[i] = n;
	}
}

/* A file of version MAJOR at PATH, its session's stacks at most MAX_STACK deep, begun. */
static struct record_writer *begin(const char *path, uint32_t major, uint32_t frame_size, uint32_t max_stack)
{
	struct record_writer_opts o = {.major = major, .frame_size = frame_size};
	struct hs_record s = {.type = HS_REC_SESSION};
	struct record_writer *w = NULL;

	s.session.tick_ns = 1;
	s.session.max_stack = max_stack;
	CHECK(!record_writer__open(path, &o, &w), "open writer %u for %s", major, path);
	CHECK(!record_writer__write(w, &s), "session");
	return w;
}

static size_t write_stacks(const char *path, uint32_t major)
{
	struct record_writer *w = begin(path, major, 64u << 10, MAX_STACK);
	struct stat st;

	for (int i = 0; i < NR_STACKS; i++) {
		struct hs_record r = {.type = HS_REC_STACK};

		r.stack.id = ids[i];
		r.stack.nr = nrs[i];
		r.stack.ips = ips[i];
		CHECK(!record_writer__write(w, &r), "stack %d", i);
	}
	CHECK(!record_writer__close(w), "close");
	record_writer__free(w);
	CHECK(!stat(path, &st), "stat %s", path);
	return (size_t)st.st_size;
}

/* Reads the file twice (the second time after a rewind, as the analyzer's second replay). */
static void check_read(const char *path, uint32_t major)
{
	struct record_reader *r;
	struct hs_record rec;
	char err[256];

	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	for (int pass = 0; pass < 2; pass++) {
		int i = 0, bad = 0;

		while (record_reader__next(r, &rec) == 1) {
			if (rec.type != HS_REC_STACK)
				continue;
			if (i < NR_STACKS && (rec.stack.id != ids[i] || rec.stack.nr != nrs[i] ||
					      memcmp(rec.stack.ips, ips[i], sizeof(uint64_t) * nrs[i])) && !bad++)
				CHECK(0, "version %u, pass %d: stack %d (id %" PRIu64 ", %u frames) read back as id %" PRIu64
				      ", %u frames, or other frames", major, pass, i, ids[i], nrs[i], rec.stack.id, rec.stack.nr);
			i++;
		}
		CHECK(record_reader__status(r) == HS_READ_END, "version %u: read to the end: %s", major,
		      record_reader__error(r));
		CHECK(record_reader__skipped_records(r) == 0, "version %u: records skipped", major);
		CHECK(i == NR_STACKS, "version %u, pass %d: %d stacks read of %d", major, pass, i, NR_STACKS);
		CHECK(!record_reader__rewind(r), "rewind");
	}
	record_reader__free(r);
}

static void test_round_trip(void)
{
	char p4[256], p5[256];
	size_t z4, z5;

	make_stacks();
	snprintf(p4, sizeof(p4), "%s/v4.hsnap", dir);
	snprintf(p5, sizeof(p5), "%s/v5.hsnap", dir);
	z4 = write_stacks(p4, 4);
	z5 = write_stacks(p5, 5);
	check_read(p4, 4);
	check_read(p5, 5);
	/* Half the frames of a stack are an earlier one's, on average: far fewer bytes. */
	CHECK(z5 * 10 < z4 * 7, "version 5 took %zu bytes, version 4 %zu", z5, z4);
	printf("stacks: %zu bytes in version 5, %zu in version 4\n", z5, z4);
}

/* A tail by hand after stack 5 (3 frames), and what the reader says of it. */
static void check_tail(const char *name, uint64_t skip, uint64_t back, uint32_t shared, uint32_t nr,
		       uint32_t max_stack, const char *why)
{
	static const uint64_t base[3] = {0x401000, 0x402000, 0x403000};
	uint64_t d[4] = {1, 2, 3, 4};
	struct hs_record st = {.type = HS_REC_STACK}, t = {.type = HS_REC_STACK_TAIL};
	struct record_writer *w;
	struct record_reader *r;
	struct hs_record rec;
	char path[256], err[256];
	int stacks = 0;

	snprintf(path, sizeof(path), "%s/%s.hsnap", dir, name);
	st.stack.id = 5;
	st.stack.nr = 3;
	st.stack.ips = base;
	w = begin(path, 5, 0, max_stack);
	CHECK(!record_writer__write(w, &st), "write");
	t.stack_tail.id = 5 + 1 + skip;
	t.stack_tail.back = back;
	t.stack_tail.shared = shared;
	t.stack_tail.nr = nr;
	t.stack_tail.d = d;
	CHECK(!record_writer__write(w, &t), "write the tail");
	CHECK(!record_writer__close(w), "close");
	record_writer__free(w);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while (record_reader__next(r, &rec) == 1) {
		if (rec.type != HS_REC_STACK)
			continue;
		if (++stacks == 2 && !why) {
			/* Innermost first: position 3 (the frame outside it, plus 2), position 2 (the
			 * base's frame there, plus 1), then the base's outer two. */
			static const uint64_t want[4] = {0x401003, 0x401001, 0x402000, 0x403000};

			CHECK(rec.stack.id == 7 && rec.stack.nr == 4 && !memcmp(rec.stack.ips, want, sizeof(want)),
			      "%s: id %" PRIu64 ", %u frames %#" PRIx64 " %#" PRIx64 " %#" PRIx64 " %#" PRIx64, name,
			      rec.stack.id, rec.stack.nr, rec.stack.ips[0], rec.stack.ips[1], rec.stack.ips[2],
			      rec.stack.ips[3]);
		}
	}
	if (why) {
		CHECK(record_reader__status(r) == HS_READ_CORRUPT, "%s: status %d", name, record_reader__status(r));
		CHECK(strstr(record_reader__error(r), why) && strstr(record_reader__error(r), "stack-tail record"),
		      "%s: error %s", name, record_reader__error(r));
	} else {
		CHECK(record_reader__status(r) == HS_READ_END && stacks == 2, "%s: %s, %d stacks", name,
		      record_reader__error(r), stacks);
	}
	record_reader__free(r);
}

static void test_hand_written(void)
{
	/* Stack 7: the outer 2 frames of stack 5, and 2 of its own, 1 and 2 past the frames they
	 * are taken from: the base's at position 2, then (the base ends there) the own frame at
	 * position 2. */
	check_tail("good", 1, 2, 2, 2, 127, NULL);
	check_tail("nobase", 1, 3, 2, 2, 127, "its base is no stack read before it");
	check_tail("noshare", 1, 2, 0, 2, 127, "it shares no frame of its base, or more than its base has");
	check_tail("toomany", 1, 2, 4, 2, 127, "it shares no frame of its base, or more than its base has");
	check_tail("deep", 1, 2, 3, 2, 4, "stack deeper than the session's max_stack");
}

/* A tail the caller wrote, then a STACK of its id: the reader keeps the tail (the first), so the
 * writer must not make the STACK a base of later tails. */
static void test_caller_tail(void)
{
	static const uint64_t s1[3] = {0x13, 0x12, 0x11}, s2[3] = {0x999, 0x888, 0x11}, s3[3] = {0x777, 0x888, 0x11};
	static const uint64_t d[1] = {0x100};
	struct hs_record t = {.type = HS_REC_STACK_TAIL};
	struct hs_record st[3] = {{.type = HS_REC_STACK}, {.type = HS_REC_STACK}, {.type = HS_REC_STACK}};
	struct record_writer *w;
	struct record_reader *r;
	struct hs_record rec;
	char path[256], err[256];
	bool seen3 = false;

	snprintf(path, sizeof(path), "%s/callertail.hsnap", dir);
	st[0].stack = (typeof(st[0].stack)){.id = 1, .nr = 3, .ips = s1};
	st[1].stack = (typeof(st[1].stack)){.id = 2, .nr = 3, .ips = s2};
	st[2].stack = (typeof(st[2].stack)){.id = 3, .nr = 3, .ips = s3};
	t.stack_tail.id = 2;
	t.stack_tail.back = 1;
	t.stack_tail.shared = 1;
	t.stack_tail.nr = 1;
	t.stack_tail.d = d;
	w = begin(path, 5, 0, 127);
	CHECK(!record_writer__write(w, &st[0]) && !record_writer__write(w, &t) &&
		      !record_writer__write(w, &st[1]) && !record_writer__write(w, &st[2]) && !record_writer__close(w),
	      "write");
	record_writer__free(w);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while (record_reader__next(r, &rec) == 1)
		if (rec.type == HS_REC_STACK && rec.stack.id == 3) {
			seen3 = true;
			CHECK(rec.stack.nr == 3 && !memcmp(rec.stack.ips, s3, sizeof(s3)),
			      "stack 3 read back as %u frames %#" PRIx64 " %#" PRIx64 " %#" PRIx64, rec.stack.nr,
			      rec.stack.ips[0], rec.stack.ips[1], rec.stack.ips[2]);
		}
	CHECK(seen3 && record_reader__status(r) == HS_READ_END, "read: %s", record_reader__error(r));
	record_reader__free(r);
}

/* 200,000 tails, each all the frames of the one before: the same 6 bytes, a few hundred
 * bytes of file for 25 million frames. Refused past 2^22 and 1024 a byte of the file. */
static void test_swell(void)
{
	static uint64_t ips[127];
	struct hs_record st = {.type = HS_REC_STACK}, t = {.type = HS_REC_STACK_TAIL};
	struct record_writer *w;
	struct record_reader *r;
	struct hs_record rec;
	char path[256], err[256];
	struct stat sb;
	uint64_t stacks = 0;

	snprintf(path, sizeof(path), "%s/swell.hsnap", dir);
	for (int i = 0; i < 127; i++)
		ips[i] = 0x400000 + (uint64_t)i * 16;
	st.stack = (typeof(st.stack)){.id = 1, .nr = 127, .ips = ips};
	w = begin(path, 5, 0, 127);
	CHECK(!record_writer__write(w, &st), "write");
	for (uint64_t id = 2; id < 200002; id++) {
		t.stack_tail = (typeof(t.stack_tail)){.id = id, .back = 1, .shared = 127};
		if (record_writer__write(w, &t))
			break;
	}
	CHECK(!record_writer__close(w), "close");
	record_writer__free(w);
	CHECK(!stat(path, &sb) && sb.st_size < 65536, "%lld bytes", (long long)sb.st_size);
	CHECK(!record_reader__open(path, &r, err, sizeof(err)), "open: %s", err);
	while (record_reader__next(r, &rec) == 1)
		stacks += rec.type == HS_REC_STACK;
	CHECK(record_reader__status(r) == HS_READ_CORRUPT && strstr(record_reader__error(r), "more frames than 2^22"),
	      "status %d: %s", record_reader__status(r), record_reader__error(r));
	CHECK(stacks * 127 <= (1u << 22) + 1024 * (uint64_t)sb.st_size, "%" PRIu64 " stacks kept", stacks);
	record_reader__free(r);
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_round_trip();
	test_hand_written();
	test_caller_tail();
	test_swell();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
	printf("test_stacks5: %d failures of %d checks\n", failures, checks);
	return failures ? 1 : 0;
}
