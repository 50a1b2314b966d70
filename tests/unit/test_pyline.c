// SPDX-License-Identifier: MIT
/* common/pyline.c against CPython: reads what tests/pylines.py dumped from a real
 * interpreter (line tables and the interpreter's own line of every range) and checks the
 * decoder's line at every instruction offset. Then hostile tables: random and crafted bytes
 * of each format must decode within their bounds (built with ASan and UBSan).
 *
 * test_pyline DUMP      check DUMP; prints "N codes, N offsets, N versions" and fails on any
 *                       disagreement or an empty dump
 * test_pyline --hostile the hostile tables only */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pyline.h"

struct code {
	uint32_t version, code_len;
	int64_t first_line;
	uint8_t *table;
	uint32_t len;
	int64_t *truth; /* by instruction (offset / 2) */
};

static uint64_t codes, offsets, mismatches, compacted, compact_bytes, table_bytes;

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void check_code(const struct code *c)
{
	struct pyline_range *r;
	uint32_t nr;

	CHECK(pyline__ranges(c->version, c->table, c->len, c->first_line, &r, &nr) == 0, "version %#x", c->version);
	for (uint32_t off = 0; off < c->code_len; off += 2) {
		int64_t got = pyline__lookup(r, nr, off), want = c->truth[off / 2];

		offsets++;
		if (got != want && mismatches++ < 10) {
			fprintf(stderr, "version %u.%u, first line %" PRId64 ", table of %u bytes: offset %u: line %" PRId64
				", CPython says %" PRId64 "\n",
				c->version >> 8, c->version & 255, c->first_line, c->len, off, got, want);
		}
	}
	codes++;
	free(r);
	/* The table the writer keeps (version 5), without columns: the same lines, CPython's. */
	if (pyline__format(c->version) == PYLINE_LOCATIONS) {
		uint8_t *lines = malloc(c->len + 1);
		uint32_t n;

		CHECK(lines != NULL, "malloc");
		n = pyline__lines_only(c->version, c->table, c->len, c->first_line, lines);
		CHECK(n < c->len || (n == 0 && c->len == 0), "%u bytes of lines from a table of %u", n, c->len);
		if (!n) {
			free(lines);
			return;
		}
		compacted++;
		compact_bytes += n;
		table_bytes += c->len;
		CHECK(pyline__ranges(c->version, lines, n, c->first_line, &r, &nr) == 0, "version %#x", c->version);
		for (uint32_t off = 0; off < c->code_len; off += 2) {
			int64_t got = pyline__lookup(r, nr, off), want = c->truth[off / 2];

			if (got != want && mismatches++ < 10)
				fprintf(stderr, "version %u.%u, first line %" PRId64 ", table of %u bytes, %u without columns: "
					"offset %u: line %" PRId64 ", CPython says %" PRId64 "\n", c->version >> 8,
					c->version & 255, c->first_line, c->len, n, off, got, want);
		}
		free(r);
		free(lines);
	}
}

/* One "C ..." line into C (its truth all -1 until the R lines come). */
static int parse_code(const char *line, struct code *c)
{
	unsigned v, code_len;
	long long first;
	int n = 0;
	const char *hex;

	if (sscanf(line, "C %u %lld %u %n", &v, &first, &code_len, &n) != 3 || !n)
		return -EINVAL;
	hex = line + n;
	*c = (struct code){.version = v, .first_line = first, .code_len = code_len};
	c->table = malloc(strlen(hex) / 2 + 1);
	c->truth = malloc(sizeof(*c->truth) * (code_len / 2 + 1));
	if (!c->table || !c->truth)
		return -ENOMEM;
	for (uint32_t i = 0; i < code_len / 2 + 1; i++)
		c->truth[i] = -1;
	for (size_t i = 0; hex[0] != '-' && hexval(hex[i]) >= 0 && hexval(hex[i + 1]) >= 0; i += 2) {
		c->table[c->len++] = (uint8_t)(hexval(hex[i]) << 4 | hexval(hex[i + 1]));
	}
	return 0;
}

static int check_dump(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	struct code c = {0};
	bool have = false;
	uint32_t versions = 0, last_version = 0;

	if (!f) {
		perror(path);
		return 1;
	}
	while (getline(&line, &cap, f) > 0) {
		unsigned s, e;
		long long l;

		if (line[0] == 'C') {
			if (have)
				check_code(&c);
			free(c.table);
			free(c.truth);
			CHECK(parse_code(line, &c) == 0, "bad line: %s", line);
			have = true;
			if (c.version != last_version)
				versions++;
			last_version = c.version;
		} else if (have && sscanf(line, "R %u %u %lld", &s, &e, &l) == 3) {
			for (uint32_t off = s; off < e && off < c.code_len; off += 2)
				c.truth[off / 2] = l;
		}
	}
	if (have)
		check_code(&c);
	free(c.table);
	free(c.truth);
	free(line);
	fclose(f);
	printf("%" PRIu64 " codes, %" PRIu64 " offsets, %u versions, %" PRIu64 " disagreements; %" PRIu64
	       " location tables without columns, %" PRIu64 " bytes of %" PRIu64 "\n",
	       codes, offsets, versions, mismatches, compacted, compact_bytes, table_bytes);
	return codes && !mismatches && !failures ? 0 : 1;
}

/* Random and crafted tables of every version: no read past the table, no more ranges than
 * bytes, ranges in order without overlap. */
static void hostile(void)
{
	static const uint32_t versions[] = {0x308, 0x309, 0x30a, 0x30b, 0x30c, 0x30d};
	uint8_t t[4096];
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	for (int round = 0; round < 1000; round++) {
		uint32_t len = (uint32_t)(seed % sizeof(t));

		for (uint32_t i = 0; i < len; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			t[i] = (uint8_t)(seed >> 33);
		}
		/* Some rounds: one long varint chain, or every byte a continuation. */
		if (round % 7 == 1)
			memset(t, 0xf7, len);
		if (round % 7 == 2)
			memset(t, 0x7f, len);
		for (size_t k = 0; k < sizeof(versions) / sizeof(versions[0]); k++) {
			struct pyline_range *r;
			uint32_t nr;
			/* Exactly LEN bytes on the heap: ASan sees any read past them. */
			uint8_t *copy = malloc(len ? len : 1);

			CHECK(copy != NULL, "out of memory");
			memcpy(copy, t, len);
			CHECK(pyline__ranges(versions[k], copy, len, (int64_t)(seed % 100000), &r, &nr) == 0, "round %d", round);
			CHECK(nr <= len + 1, "%u ranges from %u bytes", nr, len);
			for (uint32_t i = 0; i < nr; i++) {
				CHECK(r[i].start < r[i].end, "range %u empty", i);
				CHECK(i == 0 || r[i - 1].end <= r[i].start, "range %u out of order", i);
			}
			(void)pyline__lookup(r, nr, (uint32_t)seed);
			(void)pyline__lookup(r, nr, UINT32_MAX);
			/* Without columns, into exactly LEN bytes: the same line at every offset. */
			{
				uint8_t *lines = malloc(len ? len : 1);
				struct pyline_range *r2;
				uint32_t n, nr2;

				CHECK(lines != NULL, "out of memory");
				n = pyline__lines_only(versions[k], copy, len, (int64_t)(seed % 100000), lines);
				if (n) {
					CHECK(pyline__ranges(versions[k], lines, n, (int64_t)(seed % 100000), &r2, &nr2) == 0,
					      "round %d", round);
					for (uint32_t off = 0; nr && off < r[nr - 1].end + 4; off += 2)
						CHECK(pyline__lookup(r, nr, off) == pyline__lookup(r2, nr2, off),
						      "round %d, version %#x: offset %u's line", round, versions[k], off);
					free(r2);
				}
				free(lines);
			}
			free(r);
			free(copy);
		}
	}
	{
		struct pyline_range *r;
		uint32_t nr;

		CHECK(pyline__ranges(0x307, t, 10, 1, &r, &nr) == -EINVAL, "3.7 accepted");
		CHECK(pyline__ranges(0x30b, NULL, 0, 1, &r, &nr) == 0 && nr == 0, "empty table");
		CHECK(pyline__lookup(r, nr, 0) == -1, "line in an empty table");
		free(r);
	}
	printf("hostile tables: %d checks, %d failed\n", checks, failures);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_pyline DUMP | --hostile\n");
		return 2;
	}
	if (!strcmp(argv[1], "--hostile")) {
		hostile();
		return failures != 0;
	}
	return check_dump(argv[1]);
}
