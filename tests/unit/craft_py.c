// SPDX-License-Identifier: MIT
/* Writes a recording of a Python program as the in-process recorder would: PY_CODE records
 * with real line tables (tests/pylines.py --code dumps them from an interpreter) and stacks
 * mixing native return addresses and Python frames (HS_PYFRAME), with known sizes.
 *
 * Usage: craft_py OUT DUMP FILE VARIANT NAME=LINE...
 *        craft_py OUT --many N      N code objects of one process (the analyzer's limit)
 *        craft_py OUT --hostile SEED  random line tables and frames (the analyzer's bounds)
 *        craft_py OUT --repeated    one code id of a process named twice: the first kept
 *   DUMP    pylines.py --code FILE <module> main keep_large keep_small chain_a chain_b
 *           chain_c worker key_fn sort_with_key (tests/workloads/py_exact.py)
 *   FILE    the path the PY_CODE records name (the .py file)
 *   VARIANT a, or b: the same program run again, its code ids and pids renumbered, with
 *           keep_small holding twice as much
 *   NAME=LINE  the line each Python frame of NAME is at: main=LINE names its call of each
 *           function (main.keep_large=LINE ...), the others their own line; worker2=LINE
 *           the worker's second line
 *
 * Process A (pid 100; b: 300), every allocation live at the end, leaf first:
 *   keep_large    8 x 100001 + 8 x 56      [malloc, native, keep_large, main, <module>, native]
 *   keep_small    1000 x 133 (b: 2000), and 5 x 64 freed at once (temporary)
 *   chain_c       60 x 333                 [native, chain_c, chain_b, chain_a, main, <module>, native]
 *   worker        20 x 5001 + 20 x 56 at worker=, 200 x 83 at worker2=, thread 101
 *   key_fn        64 x 701 + 64 x 56       [native, key_fn, native (sorted), sort_with_key, main, ...]
 *   sort_with_key 1 x 1111, its offset unknown (HS_PYFRAME_OFF_NONE): its first line
 *   code 999      1 x 7777, no PY_CODE record: "[python code 999 not recorded]"
 * Process B (pid 200; b: 400): the code id of process A's keep_large is its keep_small:
 *   keep_small    10 x 2000 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "event_abi.h"
#include "record.h"

struct code {
	char name[64];
	uint32_t version, first_line, len;
	uint8_t table[1 << 16];
	uint32_t nr_ranges;
	uint32_t rs[4096], re[4096];
	long rl[4096];
};

static struct code codes[16];
static int nr_codes;
static struct record_writer *w;
static char **specs;
static int nr_specs;
static uint64_t t_now = 10, slot_next;

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "craft_py: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
	exit(1);
}

static void put(const struct hs_record *r)
{
	if (record_writer__write(w, r))
		die("write failed", NULL);
}

static void read_dump(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		die("cannot open", path);
	while (getline(&line, &cap, f) > 0) {
		struct code *c = nr_codes ? &codes[nr_codes - 1] : NULL;
		unsigned s, e, v, first, clen;
		long l;
		int n = 0;

		line[strcspn(line, "\n")] = 0;
		if (line[0] == 'N' && nr_codes < 16) {
			snprintf(codes[nr_codes++].name, sizeof(codes[0].name), "%s", line + 2);
		} else if (c && sscanf(line, "C %u %u %u %n", &v, &first, &clen, &n) == 3 && n) {
			c->version = v;
			c->first_line = first;
			for (const char *h = line + n; *h != '-' && h[0] && h[1] && c->len < sizeof(c->table); h += 2) {
				unsigned b;

				if (sscanf(h, "%2x", &b) != 1)
					die("bad hex in", path);
				c->table[c->len++] = (uint8_t)b;
			}
		} else if (c && sscanf(line, "R %u %u %ld", &s, &e, &l) == 3 && c->nr_ranges < 4096) {
			c->rs[c->nr_ranges] = s;
			c->re[c->nr_ranges] = e;
			c->rl[c->nr_ranges++] = l;
		}
	}
	free(line);
	fclose(f);
}

static int code_index(const char *name)
{
	for (int i = 0; i < nr_codes; i++)
		if (!strcmp(codes[i].name, name))
			return i;
	die("no code object in the dump", name);
	return -1;
}

/* The line SPEC=LINE gives. */
static long spec_line(const char *spec)
{
	size_t n = strlen(spec);

	for (int i = 0; i < nr_specs; i++)
		if (!strncmp(specs[i], spec, n) && specs[i][n] == '=')
			return atol(specs[i] + n + 1);
	die("no line given for", spec);
	return 0;
}

/* A Python frame of code NAME (id BASE + its index) at the first instruction of SPEC's line. */
static uint64_t pyframe(uint64_t base, const char *name, const char *spec)
{
	int k = code_index(name);
	long line = spec_line(spec);

	for (uint32_t i = 0; i < codes[k].nr_ranges; i++)
		if (codes[k].rl[i] == line)
			return HS_PYFRAME(base + (uint64_t)k, codes[k].rs[i]);
	die("no instruction on the line given for", spec);
	return 0;
}

static void py_codes(uint32_t pid, uint64_t base, const char *file)
{
	for (int k = 0; k < nr_codes; k++) {
		struct hs_record r = {.type = HS_REC_PY_CODE, .pid = pid, .time = 2};

		r.py_code.id = base + (uint64_t)k;
		r.py_code.qualname = codes[k].name;
		r.py_code.filename = file;
		r.py_code.first_line = codes[k].first_line;
		r.py_code.py_version = codes[k].version;
		r.py_code.line_table = (struct hs_bytes){codes[k].table, codes[k].len};
		put(&r);
	}
}

static void stack(uint64_t id, const uint64_t *ips, uint32_t nr)
{
	struct hs_record r = {.type = HS_REC_STACK};

	r.stack.id = id;
	r.stack.nr = nr;
	r.stack.ips = ips;
	put(&r);
}

static void allocs(uint32_t pid, uint32_t tid, uint64_t stack_id, uint64_t size, uint32_t n, int freed)
{
	for (uint32_t i = 0; i < n; i++) {
		struct hs_record r = {.type = HS_REC_ALLOC, .pid = pid, .tid = tid, .time = t_now++};
		uint64_t slot = slot_next++;

		r.alloc.slot = slot;
		r.alloc.size = size;
		r.alloc.stack_id = stack_id;
		r.alloc.weight = HS_WEIGHT_ONE;
		put(&r);
		if (freed) {
			struct hs_record f = {.type = HS_REC_FREE, .pid = pid, .tid = tid, .time = t_now++};

			f.free.slot = slot;
			put(&f);
		}
	}
}

static void process(uint32_t pid, const char *exe)
{
	struct hs_record r = {.type = HS_REC_PROCESS, .pid = pid, .time = 1};
	struct hs_record m = {.type = HS_REC_MAPPING, .pid = pid, .time = 1};

	r.process.origin = HS_PROC_STARTED;
	r.process.comm = "python3";
	r.process.cmdline = "python3 py_exact.py";
	r.process.exe = exe;
	put(&r);
	m.mapping.start = 0x400000;
	m.mapping.end = 0x500000;
	m.mapping.path = exe;
	put(&m);
}

/* Stack ids: one range per variant, so that a and b share none. */
static void program(uint32_t pid, uint32_t pid_b, uint64_t base, uint64_t sid, int variant, const char *file)
{
	const uint64_t malloc_ip = 0x400010, nat = 0x400020, start = 0x400030, sorted_ip = 0x400050;
	uint64_t mod = pyframe(base, "<module>", "module"), in_main[6];
	static const char *const calls[] = {"main.keep_large", "main.keep_small", "main.chain_a", "main.run_thread",
					    "main.sort_with_key"};

	for (int i = 0; i < 5; i++)
		in_main[i] = pyframe(base, "main", calls[i]);
	process(pid, "/nonexistent/python3");
	process(pid_b, "/nonexistent/python3");
	py_codes(pid, base, file);
	{
		uint64_t large[] = {malloc_ip, nat, pyframe(base, "keep_large", "keep_large"), in_main[0], mod, start};
		uint64_t large_obj[] = {nat, pyframe(base, "keep_large", "keep_large"), in_main[0], mod, start};
		uint64_t small[] = {nat, pyframe(base, "keep_small", "keep_small"), in_main[1], mod, start};
		uint64_t chain[] = {nat,
				    pyframe(base, "chain_c", "chain_c"),
				    pyframe(base, "chain_b", "chain_b"),
				    pyframe(base, "chain_a", "chain_a"),
				    in_main[2],
				    mod,
				    start};
		/* The thread's stack: its own bottom, no main. */
		uint64_t thr1[] = {malloc_ip, nat, pyframe(base, "worker", "worker"), 0x400060};
		uint64_t thr1_obj[] = {nat, pyframe(base, "worker", "worker"), 0x400060};
		uint64_t thr2[] = {nat, pyframe(base, "worker", "worker2"), 0x400060};
		uint64_t cb[] = {malloc_ip, nat, pyframe(base, "key_fn", "key_fn"), sorted_ip,
				 pyframe(base, "sort_with_key", "sort_with_key"), in_main[4], mod, start};
		uint64_t cb_obj[] = {nat, pyframe(base, "key_fn", "key_fn"), sorted_ip,
				     pyframe(base, "sort_with_key", "sort_with_key"), in_main[4], mod, start};
		uint64_t none[] = {nat, HS_PYFRAME(base + (uint64_t)code_index("sort_with_key"), HS_PYFRAME_OFF_NONE),
				   in_main[4], mod, start};
		uint64_t unknown[] = {nat, HS_PYFRAME(999, 10), in_main[0], mod, start};
		/* Process B: process A's keep_large id names its keep_small. */
		uint64_t other[] = {nat, HS_PYFRAME(base + (uint64_t)code_index("keep_large"), 0), start};

		stack(sid + 1, large, 6);
		stack(sid + 2, large_obj, 5);
		stack(sid + 3, small, 5);
		stack(sid + 4, chain, 7);
		stack(sid + 5, thr1, 4);
		stack(sid + 6, thr1_obj, 3);
		stack(sid + 7, thr2, 3);
		stack(sid + 8, cb, 8);
		stack(sid + 9, cb_obj, 7);
		stack(sid + 10, none, 5);
		stack(sid + 11, unknown, 5);
		stack(sid + 12, other, 3);
		allocs(pid, pid, sid + 1, 100001, 8, 0);
		allocs(pid, pid, sid + 2, 56, 8, 0);
		allocs(pid, pid, sid + 3, 133, variant == 'b' ? 2000 : 1000, 0);
		allocs(pid, pid, sid + 3, 64, 5, 1);
		allocs(pid, pid, sid + 4, 333, 60, 0);
		allocs(pid, pid + 1, sid + 5, 5001, 20, 0);
		allocs(pid, pid + 1, sid + 6, 56, 20, 0);
		allocs(pid, pid + 1, sid + 7, 83, 200, 0);
		allocs(pid, pid, sid + 8, 701, 64, 0);
		allocs(pid, pid, sid + 9, 56, 64, 0);
		allocs(pid, pid, sid + 10, 1111, 1, 0);
		allocs(pid, pid, sid + 11, 7777, 1, 0);
	}
	{
		/* Process B's codes: keep_small at its process A's keep_large id. */
		struct hs_record r = {.type = HS_REC_PY_CODE, .pid = pid_b, .time = 3};
		int k = code_index("keep_small");

		r.py_code.id = base + (uint64_t)code_index("keep_large");
		r.py_code.qualname = codes[k].name;
		r.py_code.filename = file;
		r.py_code.first_line = codes[k].first_line;
		r.py_code.py_version = codes[k].version;
		r.py_code.line_table = (struct hs_bytes){codes[k].table, codes[k].len};
		put(&r);
		allocs(pid_b, pid_b, sid + 12, 2000, 10, 0);
	}
}

static void session(const char *cmd)
{
	struct hs_record s = {.type = HS_REC_SESSION};

	s.session.tool_version = "craft_py";
	s.session.hostname = "host";
	s.session.kernel = "6.0";
	s.session.cmdline = cmd;
	s.session.via = "preload";
	s.session.tick_ns = 1000;
	s.session.stack_mode = HS_STACK_FP;
	s.session.max_stack = 64;
	put(&s);
}

/* N code objects of one process, each a name and a one-byte table. */
static void many(uint64_t n)
{
	static const uint8_t t[1] = {0x80};

	session("many");
	process(1, "/nonexistent/python3");
	for (uint64_t i = 0; i < n; i++) {
		struct hs_record r = {.type = HS_REC_PY_CODE, .pid = 1, .time = 2};

		r.py_code.id = i;
		r.py_code.qualname = "f";
		r.py_code.filename = "f.py";
		r.py_code.first_line = 1;
		r.py_code.py_version = 0x30b;
		r.py_code.line_table = (struct hs_bytes){t, 1};
		put(&r);
	}
	allocs(1, 1, 1, 100, 1, 0);
}

/* One code id of one process named twice (first "first", then "second"), a block from it. */
static void repeated(void)
{
	static const uint8_t t[2] = {0x80, 0x00};
	uint64_t ips[2] = {0x400010, HS_PYFRAME(5, 0)};

	session("repeated");
	process(1, "/nonexistent/python3");
	for (int i = 0; i < 2; i++) {
		struct hs_record r = {.type = HS_REC_PY_CODE, .pid = 1, .time = 2};

		r.py_code.id = 5;
		r.py_code.qualname = i ? "second" : "first";
		r.py_code.filename = "/a/f.py";
		r.py_code.first_line = 10;
		r.py_code.py_version = 0x30b;
		r.py_code.line_table = (struct hs_bytes){t, 2};
		put(&r);
	}
	stack(1, ips, 2);
	allocs(1, 1, 1, 100, 1, 0);
}

/* Line tables of random bytes, each version's and some no version has, and stacks of Python
 * frames with random codes (recorded or not) and offsets, between native frames. */
static void hostile(uint64_t seed)
{
	static const uint32_t versions[] = {0x308, 0x309, 0x30a, 0x30b, 0x30c, 0x30d, 0x307, 0xffff, 0};
	static uint8_t t[8192];

	session("hostile");
	process(1, "/nonexistent/python3");
	for (uint64_t i = 0; i < 64; i++) {
		struct hs_record r = {.type = HS_REC_PY_CODE, .pid = 1, .time = 2};
		uint32_t len;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		len = (uint32_t)(seed >> 40) % sizeof(t);
		for (uint32_t k = 0; k < len; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			t[k] = (uint8_t)(seed >> 33);
		}
		r.py_code.id = i;
		r.py_code.qualname = i % 5 ? "f" : "\x1b[31mred\x1b[0m<";
		r.py_code.filename = i % 7 ? "/a/f.py" : "";
		r.py_code.first_line = (uint32_t)(seed >> 20);
		r.py_code.py_version = versions[i % (sizeof(versions) / sizeof(versions[0]))];
		r.py_code.line_table = (struct hs_bytes){t, len};
		put(&r);
	}
	for (uint64_t sid = 1; sid <= 200; sid++) {
		uint64_t ips[32];
		uint32_t nr = 1 + (uint32_t)(sid % 31);

		for (uint32_t k = 0; k < nr; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			ips[k] = k % 3 == 0 ? 0x400000 + (seed >> 50)
					    : HS_PYFRAME((seed >> 20) % 80, k % 4 ? (seed >> 40) : HS_PYFRAME_OFF_NONE);
		}
		stack(sid, ips, nr);
		allocs(1, 1, sid, sid, 2, (int)(sid & 1));
	}
}

int main(int argc, char **argv)
{
	struct hs_record th = {.type = HS_REC_THREAD_NAME};
	int variant;

	if (argc == 3 && !strcmp(argv[2], "--repeated")) {
		if (record_writer__open(argv[1], NULL, &w))
			die("cannot write", argv[1]);
		repeated();
		if (record_writer__close(w))
			die("cannot finish", argv[1]);
		return 0;
	}
	if (argc == 4 && (!strcmp(argv[2], "--many") || !strcmp(argv[2], "--hostile"))) {
		if (record_writer__open(argv[1], NULL, &w))
			die("cannot write", argv[1]);
		if (!strcmp(argv[2], "--many"))
			many(strtoull(argv[3], NULL, 10));
		else
			hostile(strtoull(argv[3], NULL, 10));
		if (record_writer__close(w))
			die("cannot finish", argv[1]);
		return 0;
	}
	if (argc < 6 || (argv[4][0] != 'a' && argv[4][0] != 'b')) {
		fprintf(stderr, "usage: craft_py OUT DUMP FILE a|b NAME=LINE...\n");
		return 2;
	}
	variant = argv[4][0];
	specs = argv + 5;
	nr_specs = argc - 5;
	read_dump(argv[2]);
	if (record_writer__open(argv[1], NULL, &w))
		die("cannot write", argv[1]);
	session("python3 py_exact.py");
	th.pid = variant == 'b' ? 300 : 100;
	th.tid = th.pid + 1;
	th.thread_name.comm = "worker";
	put(&th);
	if (variant == 'b')
		program(300, 400, 100, 100, variant, argv[3]);
	else
		program(100, 200, 0, 0, variant, argv[3]);
	if (record_writer__close(w))
		die("cannot finish", argv[1]);
	return 0;
}
