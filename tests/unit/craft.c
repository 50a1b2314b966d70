// SPDX-License-Identifier: MIT
/* Writes crafted record files, each a shape an attacker could hand the analyzer, in valid
 * encoding so that it reaches the replay: the tests and the fuzz regression inputs check the
 * analyzer spends no more than such a file may legitimately cost, and never blocks.
 * Usage: craft SHAPE OUT [N] [PATH]
 *   fifo        a dwarf capture in a mapping whose path is PATH (a FIFO in the test)
 *   deepstack   N stacks of 127 frames in a session that records at most 64
 *   bigwindow   N dwarf windows of 64 KiB (the recorder writes at most 32 KiB)
 *   counters    N COUNTERS records of 1024 distinct names each
 *   maps        N MAPPINGs of one process, then N UNMAPs, oldest first
 *   escape      a process, thread, mapping and snapshot named with terminal escapes
 *   lost        every-event recording whose counters say 40% of events were lost
 *   outoforder  N blocks of 100 bytes, then frees of the first N / 2, from two threads whose
 *               events come in runs of 4, every other run 35 to 43 ticks (us) behind the other
 *               thread's, as rings of several CPUs give them: times go back and forth.
 *               Peak 100 N bytes, 100 (N - N / 2) live at the end; even runs' blocks from
 *               stack 1 (ooo+0x100), odd runs' from stack 2 (ooo+0x200)
 *   reused      blocks allocated into slots still live (their frees not read before): 100 in
 *               slot 0, 200 in slot 1, 300 in slot 0, free slot 0, 50 in slot 0, 400 in slot 1;
 *               1050 bytes in 5 allocated, 600 in 3 freed (300 in 2 implied), 450 in 2 live,
 *               peak 500 at 3 us. A BPF recording's counters: 12 calls, 7 unknown frees,
 *               a map of 1024 entries (unused: every event)
 *   sampled     an injected recording sampled at 4096: blocks of 8192 (weight 1) and 1024
 *               (weight 4), the first freed; counters: 2 sampled, 5 unknown frees, no calls
 *               counted (the in-process recorder counts none)
 *   sampledbpf  the same recorded by BPF: 40 calls counted, a kernel map of 65536 entries */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static struct record_writer *w;

static void put(const struct hs_record *r)
{
	if (record_writer__write(w, r)) {
		fprintf(stderr, "craft: write failed\n");
		exit(1);
	}
}

static void session(uint32_t stack_mode, uint64_t max_stack, const char *cmd)
{
	struct hs_record r = {.type = HS_REC_SESSION};

	r.session.tool_version = "craft";
	r.session.hostname = "host";
	r.session.kernel = "6.0";
	r.session.cmdline = cmd;
	r.session.tick_ns = 1000;
	r.session.stack_mode = stack_mode;
	r.session.max_stack = max_stack;
	put(&r);
}

static void process(uint32_t pid, const char *comm, const char *cmdline)
{
	struct hs_record r = {.type = HS_REC_PROCESS, .pid = pid, .time = 1};

	r.process.origin = HS_PROC_STARTED;
	r.process.comm = comm;
	r.process.cmdline = cmdline;
	r.process.exe = "/bin/x";
	put(&r);
}

static void mapping(uint32_t pid, uint64_t start, const char *path, uint64_t t)
{
	static const uint8_t bid[20] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
	struct hs_record r = {.type = HS_REC_MAPPING, .pid = pid, .time = t};

	r.mapping.start = start;
	r.mapping.end = start + 0x1000;
	r.mapping.path = path;
	r.mapping.build_id = (struct hs_bytes){bid, sizeof(bid)};
	put(&r);
}

static void alloc(uint32_t pid, uint64_t slot, uint64_t size, uint64_t stack, uint64_t t)
{
	struct hs_record r = {.type = HS_REC_ALLOC, .pid = pid, .tid = pid, .time = t};

	r.alloc.slot = slot;
	r.alloc.size = size;
	r.alloc.stack_id = stack;
	r.alloc.weight = HS_WEIGHT_ONE;
	put(&r);
}

static void dwarf(uint64_t id, uint64_t sp, uint32_t len)
{
	static uint8_t win[1 << 16];
	uint64_t regs[8] = {0x401000, sp, 0, 0, 0, 0, 0, 0};
	struct hs_record r = {.type = HS_REC_STACK_DWARF};

	r.dwarf.id = id;
	r.dwarf.nregs = 8;
	r.dwarf.regs = regs;
	r.dwarf.used = len;
	memset(win, (int)id, len);
	r.dwarf.window = (struct hs_bytes){win, len};
	put(&r);
}

static void shape_fifo(const char *shape, uint64_t n, int argc, char **argv)
{
	session(HS_STACK_DWARF, 64, "fifo");
	process(10, "victim", "victim");
	mapping(10, 0x400000, argc > 4 ? argv[4] : "/nonexistent", 1);
	dwarf(7, 0x7ffd0000, 256);
	alloc(10, 0, 100, 7, 2);
}

static void shape_deepstack(const char *shape, uint64_t n, int argc, char **argv)
{
	uint64_t ips[HS_MAX_STACK];

	session(HS_STACK_FP, 64, "deepstack");
	for (uint64_t i = 0; i < n; i++) {
		struct hs_record r = {.type = HS_REC_STACK};

		for (int k = 0; k < HS_MAX_STACK; k++)
			ips[k] = 0x400000 + i * 131 + (uint64_t)k;
		r.stack.id = i + 1;
		r.stack.nr = HS_MAX_STACK;
		r.stack.ips = ips;
		put(&r);
	}
}

static void shape_bigwindow(const char *shape, uint64_t n, int argc, char **argv)
{
	session(HS_STACK_DWARF, 64, "bigwindow");
	for (uint64_t i = 0; i < n; i++)
		dwarf(i + 1, 0x7ffd0000, 1 << 16);
}

static void shape_counters(const char *shape, uint64_t n, int argc, char **argv)
{
	static struct hs_counter items[1024];
	static char names[1024][32]; /* room for any i: "c." 20 digits "." 4 digits */

	session(HS_STACK_FP, 64, "counters");
	for (uint64_t i = 0; i < n; i++) {
		struct hs_record r = {.type = HS_REC_COUNTERS, .time = i};

		for (int k = 0; k < 1024; k++) {
			snprintf(names[k], sizeof(names[k]), "c.%llu.%d", (unsigned long long)i, k);
			items[k] = (struct hs_counter){names[k], (uint64_t)k};
		}
		r.counters.nr = 1024;
		r.counters.items = items;
		put(&r);
	}
}

static void shape_maps(const char *shape, uint64_t n, int argc, char **argv)
{
	session(HS_STACK_FP, 64, "maps");
	process(10, "maps", "maps");
	for (uint64_t i = 0; i < n; i++)
		mapping(10, 0x10000000 + i * 0x2000, "/lib/x.so", i);
	for (uint64_t i = 0; i < n; i++) {
		struct hs_record r = {.type = HS_REC_UNMAP, .pid = 10, .time = n + i};

		r.unmap.start = 0x10000000 + i * 0x2000;
		r.unmap.end = r.unmap.start + 0x1000;
		put(&r);
	}
	alloc(10, 0, 100, 1, 2 * n);
}

static void shape_escape(const char *shape, uint64_t n, int argc, char **argv)
{
	struct hs_record r = {.type = HS_REC_THREAD_NAME, .pid = 10, .tid = 10};
	struct hs_record sn = {.type = HS_REC_SNAPSHOT, .time = 3};

	session(HS_STACK_FP, 64, "evil\x1b]0;owned\x07 \x1b[31mred");
	process(10, "evil\x1b[31m", "evil\x1b[2J\xc2\x9b" "31m");
	r.thread_name.comm = "t\x1b[5m";
	put(&r);
	mapping(10, 0x400000, "/tmp/\x1b[31mlib.so", 1);
	alloc(10, 0, 100, 1, 2);
	sn.snapshot.label = "snap\x1b[31m";
	put(&sn);
}

static void shape_manystacks(const char *shape, uint64_t n, int argc, char **argv)
{
	/* N stacks 8 deep, branching as a binary tree from the root (level k's frame is the
	 * stack number shifted right by 7 - k), each holding one block of 100 + i % 7 bytes. */
	struct hs_record m = {.type = HS_REC_MAPPING, .pid = 10, .time = 1};
	static const uint8_t bid[20] = {9, 9, 9};

	session(HS_STACK_FP, 64, "manystacks");
	process(10, "many", "many");
	m.mapping.start = 0x400000;
	m.mapping.end = 0x400000 + 0x1000000;
	m.mapping.path = "/nonexistent/many.so";
	m.mapping.build_id = (struct hs_bytes){bid, sizeof(bid)};
	put(&m);
	for (uint64_t i = 0; i < n; i++) {
		struct hs_record r = {.type = HS_REC_STACK};
		uint64_t ips[8];

		for (int k = 0; k < 8; k++) /* leaf first */
			ips[k] = 0x400000 + ((uint64_t)k << 20) + ((i >> k) << 4) + 1;
		r.stack.id = i + 1;
		r.stack.nr = 8;
		r.stack.ips = ips;
		put(&r);
		alloc(10, i, 100 + i % 7, i + 1, 2 + i);
	}
}

static void shape_html(const char *shape, uint64_t n, int argc, char **argv)
{
	/* Every string the HTML report shows, each trying to end its element or its script. */
	static const char evil[] = "</script><img src=x onerror=\"document.body.dataset.pwned=1\">";
	struct hs_record st = {.type = HS_REC_STACK}, sn = {.type = HS_REC_SNAPSHOT, .time = 3};
	uint64_t ips[2] = {0x400100, 0x400200};
	char path[256];

	session(HS_STACK_FP, 64, evil);
	process(10, evil, evil);
	snprintf(path, sizeof(path), "/tmp/%s\xe2\x80\xa8lib.so", evil);
	mapping(10, 0x400000, path, 1);
	st.stack.id = 1;
	st.stack.nr = 2;
	st.stack.ips = ips;
	put(&st);
	alloc(10, 0, 100, 1, 2);
	alloc(10, 1, 200, 1, 5);
	sn.snapshot.label = evil;
	put(&sn);
}

static void shape_lost(const char *shape, uint64_t n, int argc, char **argv)
{
	struct hs_counter items[2] = {{"lost.ringbuf_full", 400}, {"events.alloc", 600}};
	struct hs_record r = {.type = HS_REC_END, .time = 1000};

	session(HS_STACK_FP, 64, "lost");
	process(10, "lossy", "lossy");
	for (uint64_t i = 0; i < 600; i++)
		alloc(10, i, 10, 1, i);
	r.counters.nr = 2;
	r.counters.items = items;
	put(&r);
}

static void shape_outoforder(const char *shape, uint64_t n, int argc, char **argv)
{
	session(HS_STACK_FP, 64, "outoforder");
	process(10, "ooo", "ooo");
	mapping(10, 0x400000, "/nonexistent/ooo", 1);
	for (uint64_t id = 1; id <= 2; id++) {
		uint64_t ip = 0x400000 + 0x100 * id + 1;
		struct hs_record st = {.type = HS_REC_STACK};

		st.stack.id = id;
		st.stack.nr = 1;
		st.stack.ips = &ip;
		put(&st);
	}
	for (uint64_t i = 0; i < n + n / 2; i++) {
		/* Run k of 4 events is thread 10 + k % 2's; odd runs are behind by 35 + i % 9 ticks. */
		uint64_t k = i / 4, t = 1000 + 10 * i - (k % 2 ? 35 + i % 9 : 0);
		struct hs_record r = {.type = i < n ? HS_REC_ALLOC : HS_REC_FREE, .pid = 10,
				      .tid = (uint32_t)(10 + k % 2), .time = t};

		if (i < n) {
			r.alloc.slot = i;
			r.alloc.size = 100;
			r.alloc.stack_id = 1 + k % 2;
			r.alloc.weight = HS_WEIGHT_ONE;
		} else {
			r.free.slot = i - n;
		}
		put(&r);
	}
}

static void shape_reused(const char *shape, uint64_t n, int argc, char **argv)
{
	bool sampled = strcmp(shape, "reused") != 0, bpf = strcmp(shape, "sampled") != 0;
	struct hs_record ss = {.type = HS_REC_SESSION}, end = {.type = HS_REC_END, .time = 10};
	struct hs_counter bpf_items[] = {{"calls.alloc", 12}, {"frees.unknown", 7}, {"map.live_max", 1024},
					 {"sampler.sampled", 0}};
	struct hs_counter inj_items[] = {{"frees.unknown", 5}, {"map.live_max", 65536}, {"sampler.sampled", 2},
					 {"calls.alloc", 40}};
	static const uint64_t reuse[][3] = {{0, 100, 1}, {1, 200, 2}, {0, 300, 3}, {0, 0, 4}, {0, 50, 5}, {1, 400, 6}};

	ss.session.tool_version = "craft";
	ss.session.hostname = "host";
	ss.session.kernel = "6.0";
	ss.session.cmdline = shape;
	ss.session.tick_ns = 1000;
	ss.session.stack_mode = HS_STACK_FP;
	ss.session.max_stack = 64;
	ss.session.sample_rate = sampled ? 4096 : 0;
	ss.session.via = bpf ? "bpf: asked for with --via bpf" : "inject: asked for with --via inject";
	put(&ss);
	process(10, shape, shape);
	if (sampled) {
		struct hs_record a = {.type = HS_REC_ALLOC_SAMPLED, .pid = 10, .tid = 10, .time = 1};
		struct hs_record f = {.type = HS_REC_FREE, .pid = 10, .tid = 10, .time = 3};

		a.alloc.slot = 0;
		a.alloc.size = 8192;
		a.alloc.stack_id = 1;
		a.alloc.weight = HS_WEIGHT_ONE;
		put(&a);
		a.time = 2;
		a.alloc.slot = 1;
		a.alloc.size = 1024;
		a.alloc.weight = 4 * HS_WEIGHT_ONE;
		put(&a);
		f.free.slot = 0;
		put(&f);
	}
	for (size_t i = 0; !sampled && i < sizeof(reuse) / sizeof(reuse[0]); i++) {
		struct hs_record f = {.type = HS_REC_FREE, .pid = 10, .tid = 10, .time = reuse[i][2]};

		if (!reuse[i][1]) {
			f.free.slot = reuse[i][0];
			put(&f);
		} else {
			alloc(10, reuse[i][0], reuse[i][1], 1, reuse[i][2]);
		}
	}
	end.counters.nr = !sampled ? 4 : bpf ? 4 : 3;
	end.counters.items = sampled ? inj_items : bpf_items;
	put(&end);
}

/* Each shape by its name on the command line. */
static const struct {
	const char *name;
	void (*make)(const char *shape, uint64_t n, int argc, char **argv);
} shapes[] = {
	{"fifo", shape_fifo},
	{"deepstack", shape_deepstack},
	{"bigwindow", shape_bigwindow},
	{"counters", shape_counters},
	{"maps", shape_maps},
	{"escape", shape_escape},
	{"manystacks", shape_manystacks},
	{"html", shape_html},
	{"lost", shape_lost},
	{"outoforder", shape_outoforder},
	{"reused", shape_reused},
	{"sampled", shape_reused},
	{"sampledbpf", shape_reused},
};

int main(int argc, char **argv)
{
	const char *shape = argc > 2 ? argv[1] : "";
	uint64_t n = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
	/* Times exact (version 3 writes them to 1 ms by default): the shapes' figures are to the tick. */
	struct record_writer_opts o = {.time_quantum_ns = 1};
	size_t i;
	int err;

	if (argc < 3 || (err = record_writer__open(argv[2], &o, &w))) {
		fprintf(stderr, "usage: craft SHAPE OUT [N] [PATH]\n");
		return 2;
	}
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]) && strcmp(shape, shapes[i].name); i++)
		;
	if (i == sizeof(shapes) / sizeof(shapes[0])) {
		fprintf(stderr, "craft: unknown shape '%s'\n", shape);
		return 2;
	}
	shapes[i].make(shape, n, argc, argv);
	err = record_writer__close(w);
	record_writer__free(w);
	return err ? 1 : 0;
}
