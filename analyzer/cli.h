/* SPDX-License-Identifier: MIT */
/* heapsnap-analyze's command line, parsed (analyze_main.c), and its subcommands (commands.c). */
#ifndef HEAPSNAP_CLI_H
#define HEAPSNAP_CLI_H
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"
#include "reports.h"
#include "rows.h"

struct cmd;

struct opts {
	const struct cmd *cmd;
	const char *output, *snapshot, *from, *to, *pprof_out, *base_pprof_out;
	double at, min_age;
	bool peak, at_set, at_end, json, no_sym, value_set, nodecount_set, min_age_set, lines;
	bool gate_set;
	bool batch, refresh_set; /* live: --batch, --refresh */
	double refresh;
	/* export: --to is the URL; --interval, --service-name, --export-header-file,
	 * --export-cacert, --keep, --queue, --status-fd */
	double interval;
	bool interval_set;
	const char *service_name, *header_file, *cacert;
	uint32_t keep, queue;
	int status_fd;
	int recorder; /* live --recorder: the heapsnap-record writing the file */
	struct growth_gate gate; /* --max-growth */
	int value, nodecount;
	const char **debug_dirs;
	int nr_debug_dirs;
	uint32_t *pids, nr_pids; /* --pid */
	const char *comm;        /* --comm */
	char **files;
	int nr_files;
};

/* Which options a subcommand takes beyond -o, --pid/--comm and symbolization. */
enum {
	A_WHERE = 1 << 0,   /* --snapshot, --at, --peak */
	A_JSON = 1 << 1,
	A_VALUE = 1 << 2,
	A_ROWS = 1 << 3,    /* -n */
	A_MIN_AGE = 1 << 4,
	A_DIFF = 1 << 5,    /* --from, --to, --pprof, --base-pprof */
	A_AT_END = 1 << 6,  /* --at end, where A_WHERE is not taken */
	A_LIVE = 1 << 7,    /* --batch, --refresh, --recorder */
	A_EXPORT = 1 << 8,  /* --to URL, --interval, --service-name, ... */
};

struct cmd {
	const char *name;
	int (*run)(const struct opts *o, struct symbolizer *sym);
	/* The emitter run_profile or run_replay calls; returns 0 or -errno. */
	int (*profile_report)(const struct profile *p, const struct report_opts *ro, FILE *out);
	int (*replay_report)(const struct replay *r, const struct report_opts *ro, FILE *out);
	int min_files, max_files;
	unsigned accepts;
	bool binary;    /* refuses a terminal */
	bool timeline;  /* replays with the timeline */
	bool temporary; /* replays counting temporary allocations */
	bool meta;      /* without --snapshot/--at/--peak, metadata only (STOP_META) */
	/* Without --snapshot/--at/--peak, each Python process before its finalization, if it
	 * marked one (replay_target.py_final), rather than the end: the heap the program held. */
	bool py_final;
};

/* The subcommand named NAME, or NULL. */
const struct cmd *cmd__find(const char *name);

/* Says what replay__run (or a follower's end) found wrong, if anything; returns RET. */
int cmd__report_load(const struct replay *r, int ret);
/* SIGINT, SIGTERM and SIGHUP (the terminal gone) set cmd__follow_stop, so that a follower
 * ends with its last update. Without SA_RESTART, so that a wait ends at once. A SIGINT
 * ignored (heapsnap-record's follower) stays ignored. */
void cmd__follow_signals(void);
extern volatile sig_atomic_t cmd__follow_stop;

/* export (export.c) */
int run_export(const struct opts *o, struct symbolizer *sym);
#endif
