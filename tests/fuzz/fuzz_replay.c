// SPDX-License-Identifier: MIT
/* libFuzzer target: replay to the end and to the peak, then every report the analyzer
 * writes, without symbols (paths in the input name files on this machine: they are
 * opened only as hs_open_elf allows, and unwinding of dwarf captures still runs). */
#include <stdint.h>

#include "fuzz_common.h"
#include "pprof.h"
#include "profile.h"
#include "replay.h"
#include "reports.h"
#include "symbolize.h"

static FILE *devnull;

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
		} else {
			profile__build(&p, &r, sym);
			report_top(&p, &ro, devnull);
			report_summary(&p, &ro, devnull);
			report_leaks(&p, &ro, devnull);
			report_stats(&p, &ro, devnull);
			report_collapsed(&p, &ro, devnull);
			pprof_write_profile(&p, &po, devnull);
			profile__free(&p);
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
