// SPDX-License-Identifier: MIT
/* libFuzzer target: replay to the end and to the peak, then every report the analyzer
 * writes (the HTML report's second replay with its moments too), without symbols (paths in the input name files on this machine: they are
 * opened only as hs_open_elf allows, and unwinding of dwarf captures still runs). */
#include <stdint.h>

#include "fuzz_common.h"
#include "html.h"
#include "pprof.h"
#include "profile.h"
#include "replay.h"
#include "reports.h"
#include "symbolize.h"

static FILE *devnull;

/* The HTML report, as `html` makes it: moments planned from FIRST, a second replay. */
static void run_html(const char *path, const struct replay *first, struct symbolizer *sym,
		     const struct report_opts *ro)
{
	struct replay_target t = {.kind = STOP_END, .timeline = true, .temporary = true};
	struct html *h;
	struct profile p;
	struct replay r;
	int ret;

	if (html__plan(first, &t, &h))
		return;
	ret = replay__run(&r, path, &t);
	if ((ret == 0 || ret == EXIT_CORRUPT) && !profile__build(&p, &r, sym)) {
		html__write(h, &p, ro, devnull);
		report_speedscope(&p, ro, devnull);
		report_temporary(&p, ro, devnull);
		report_timeline(&r, ro, devnull);
		profile__free(&p);
	}
	replay__free(&r);
	html__free(h);
}

static void run(const char *path, enum replay_stop kind)
{
	struct replay_target t = {.kind = kind};
	struct sym_opts so = {.no_symbolize = true};
	struct report_opts ro = {.nodecount = 20, .file_label = "fuzz"};
	struct pprof_opts po = {.no_symbolize = true};
	struct symbolizer *sym;
	struct profile p;
	struct replay r;
	int ret = replay__run(&r, path, &t);

	if (ret == 0 || ret == EXIT_CORRUPT) {
		sym = symbolizer__new(&so);
		if (kind == STOP_META) {
			report_info(&r, &ro, devnull);
		} else if (!profile__build(&p, &r, sym)) {
			report_top(&p, &ro, devnull);
			report_summary(&p, &ro, devnull);
			report_leaks(&p, &ro, devnull);
			report_stats(&p, &ro, devnull);
			report_collapsed(&p, &ro, devnull);
			pprof_write_profile(&p, &po, devnull);
			profile__free(&p);
			if (kind == STOP_END)
				run_html(path, &r, sym, &ro);
		}
		symbolizer__free(sym);
	}
	replay__free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path, sizeof(path));

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	run(path, STOP_END);
	run(path, STOP_PEAK);
	run(path, STOP_META);
	close(fd);
	return 0;
}
