// SPDX-License-Identifier: MIT
/* libFuzzer target: every subcommand of heapsnap-analyze on the input, as the command line
 * runs them, without symbols (paths in the input name files on this machine: they are
 * opened only as hs_open_elf allows, and unwinding of dwarf captures still runs):
 *   pprof, collapsed, top, summary, leaks, stats, temporary, speedscope at the end, at the
 *   peak, at the first and last snapshots, at a time inside the recording and for its first
 *   process alone (--pid), in text and JSON and each --value; info (metadata only);
 *   timeline; html (two replays, the second with its moments); diff of two snapshots of the
 *   input and of two inputs.
 * Two inputs: the input is split where a second record file's magic begins (a seed is two
 * recordings one after the other); without one, the input is diffed with itself. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "html.h"
#include "pprof.h"
#include "profile.h"
#include "replay.h"
#include "reports.h"
#include "rows.h"
#include "symbolize.h"

static FILE *devnull;

static bool usable(int ret)
{
	return ret == 0 || ret == EXIT_CORRUPT;
}

/* The reports that read a profile, as each subcommand writes them. */
static void profile_reports(const struct profile *p, bool json)
{
	struct report_opts ro = {.json = json, .nodecount = 20, .file_label = "fuzz", .min_age = 0.001};
	struct pprof_opts po = {.no_symbolize = true};

	for (int v = 0; v < V__COUNT; v++) {
		ro.value = v;
		report_top(p, &ro, devnull);
		if (!json)
			report_collapsed(p, &ro, devnull);
	}
	ro.value = V_INUSE_SPACE;
	report_summary(p, &ro, devnull);
	report_leaks(p, &ro, devnull);
	report_stats(p, &ro, devnull);
	report_temporary(p, &ro, devnull);
	if (!json) {
		report_speedscope(p, &ro, devnull);
		pprof_write_profile(p, &po, devnull);
	}
}

/* The HTML report, as `html` makes it: moments planned from FIRST, a second replay. */
static void run_html(const char *path, const struct replay *first, struct symbolizer *sym)
{
	struct replay_target t = {.kind = STOP_END, .timeline = true, .temporary = true};
	struct report_opts ro = {.nodecount = 20, .file_label = "fuzz"};
	struct html *h;
	struct profile p;
	struct replay r;

	if (html__plan(first, &t, &h))
		return;
	if (usable(replay__run(&r, path, &t)) && !profile__build(&p, &r, sym)) {
		html__write(h, &p, &ro, devnull);
		profile__free(&p);
	}
	replay__free(&r);
	html__free(h);
}

/* One replay to T and every report of it; the end's replay also plans the HTML report and
 * gives the moments and pid the other replays use. */
static void run(const char *path, struct replay_target *t, struct symbolizer *sym, struct replay *keep)
{
	struct report_opts ro = {.nodecount = 20, .file_label = "fuzz"};
	struct profile p;
	struct replay r;
	int ret = replay__run(&r, path, t);

	if (usable(ret) || (t->kind == STOP_META && ret == EXIT_NODATA && r.have_session)) {
		if (t->kind == STOP_META || t->timeline) {
			for (int json = 0; json < 2; json++) {
				ro.json = json;
				if (t->kind == STOP_META)
					report_info(&r, &ro, devnull);
				else
					report_timeline(&r, &ro, devnull);
			}
		} else if (!profile__build(&p, &r, sym)) {
			profile_reports(&p, false);
			profile_reports(&p, true);
			profile__free(&p);
		}
	}
	if (keep)
		*keep = r;
	else
		replay__free(&r);
}

static void diff(const char *a, const char *b, const struct replay_target *ta, const struct replay_target *tb,
		 struct symbolizer *sym)
{
	struct replay ra, rb;
	struct profile pa, pb;
	struct diff_rows rows;
	struct gate_verdict v;
	struct growth_gate g = {.amount = 5, .percent = true};
	struct report_opts ro = {.nodecount = 20, .file_label = "fuzz"};
	bool have_a = false, have_b = false;
	int ret_a = replay__run(&ra, a, ta), ret_b = replay__run(&rb, b, tb);

	have_a = usable(ret_a) && usable(ret_b) && !profile__build(&pa, &ra, sym);
	have_b = have_a && !profile__build(&pb, &rb, sym);
	for (int lines = 0; have_b && lines < 2; lines++) {
		memset(&rows, 0, sizeof(rows));
		if (rows__diff(&pa, &pb, lines ? V_ALLOC_SPACE : V_INUSE_SPACE, lines, &rows))
			continue;
		rows__gate(&rows, &g, &v);
		ro.json = lines;
		report_diff(&rows, &ra, &rb, &v, &ro, devnull);
		report_gate_line(&rows, &v, &ro, devnull);
		diff_rows__free(&rows);
	}
	if (have_b)
		profile__free(&pb);
	if (have_a)
		profile__free(&pa);
	replay__free(&ra);
	replay__free(&rb);
}

/* Where a second record file begins in DATA, or SIZE when none does. */
static size_t second_file(const uint8_t *data, size_t size)
{
	static const char magic[] = HS_FILE_MAGIC;

	for (size_t i = 1; i + 8 <= size; i++)
		if (data[i] == (uint8_t)magic[0] && !memcmp(data + i, magic, 8))
			return i;
	return size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_opts so = {.no_symbolize = true};
	struct symbolizer *sym;
	size_t split = second_file(data, size);
	char path[64], path_b[64];
	int fd = fuzz_file(data, split, path, sizeof(path));
	int fd_b = split < size ? fuzz_file(data + split, size - split, path_b, sizeof(path_b)) : -1;
	struct replay end;
	struct replay_target t = {.kind = STOP_END}, tl = {.kind = STOP_END, .timeline = true},
			     meta = {.kind = STOP_META}, peak = {.kind = STOP_PEAK},
			     tmp = {.kind = STOP_END, .temporary = true}, s1 = {.kind = STOP_SNAPSHOT, .snapshot = "1"},
			     slast = {.kind = STOP_SNAPSHOT, .snapshot = "last"};

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	sym = symbolizer__new(&so);
	if (!sym)
		abort();
	run(path, &t, sym, &end);
	if (end.have_session) {
		/* --at the middle of the time range, --pid and --comm of the first process. */
		struct replay_target at = {.kind = STOP_TIME,
					   .at_seconds = replay__seconds(&end, end.first_time / 2 + end.last_time / 2)};
		uint32_t pid = end.nr_procs ? end.procs[0].pid : 1;
		struct replay_target byp = {.kind = STOP_END, .pids = &pid, .nr_pids = 1, .temporary = true};
		struct replay_target byc = {.kind = STOP_END, .comm = end.nr_procs ? end.procs[0].comm : "x",
					    .timeline = true};

		run(path, &at, sym, NULL);
		run(path, &byp, sym, NULL);
		run(path, &byc, sym, NULL);
		run_html(path, &end, sym);
	}
	replay__free(&end);
	run(path, &tl, sym, NULL);
	run(path, &tmp, sym, NULL);
	run(path, &meta, sym, NULL);
	run(path, &peak, sym, NULL);
	run(path, &s1, sym, NULL);
	diff(path, path, &s1, &slast, sym);
	diff(path, fd_b >= 0 ? path_b : path, &t, &t, sym);
	symbolizer__free(sym);
	if (fd_b >= 0)
		close(fd_b);
	close(fd);
	return 0;
}
