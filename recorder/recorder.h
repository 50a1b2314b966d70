/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_RECORDER_H
#define HEAPSNAP_RECORDER_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "elfsyms.h"

/* How allocator probes are attached (--probe-links). */
enum probe_links {
	LINKS_PERF,    /* a uprobe and a uretprobe per function, each a perf event */
	LINKS_MULTI,   /* the same in one uprobe_multi link per library and kind (Linux 6.6) */
	LINKS_SESSION, /* session probes: the entry decides whether the return runs (Linux 6.13) */
	LINKS_AUTO,    /* the best the kernel has */
};

/* How events are taken (--via). */
enum rec_via {
	VIA_AUTO,    /* in-process for a launched dynamic command, BPF otherwise */
	VIA_BPF,     /* uprobes: nothing is loaded into the target */
	VIA_PRELOAD, /* libheapsnap.so, preloaded into a command the recorder starts */
	VIA_INJECT,  /* libheapsnap.so, injected into a running process (-p) */
};

struct custom_probe {
	char *lib, *symbol;
	enum hs_prog prog;
	uint32_t kind;
};

struct rec_opts {
	pid_t pid;          /* -p */
	char **argv;        /* -- CMD ARGS */
	bool all;           /* -a */
	const char *output; /* -o */
	double duration;    /* --duration, 0 = until the target exits or a signal */
	uint64_t sample_rate;
	int stack_mode;     /* enum hs_stack_mode */
	uint32_t max_stack;
	uint32_t dwarf_bytes; /* --stack dwarf=BYTES */
	bool follow_forks;
	bool children;      /* -p --children: its descendants already running too */
	double interval, rss_interval;
	bool snapshot_at_peak, stats;
	int verbose;
	const char *libc;
	struct custom_probe *probes;
	int nr_probes;
	uint32_t max_live, stack_cache, ringbuf_mb;
	uint32_t unwind_rows; /* BPF --stack auto: capacity of the kernel's unwind table rows */
	bool probe_entry; /* --probe-at-entry: disable probe placement */
	bool noop;        /* --noop-probes: benchmark floor, records nothing */
	enum probe_links probe_links; /* --probe-links */
	enum rec_via via;             /* --via */
	double attach_timeout;        /* --attach-timeout: injected, the wait for an allocator call */
	double attach_hold;           /* --attach-hold: injected, how long a call may wait for the hooks */
	bool to_stdout;               /* -o -: the record stream on standard output */
	bool live;                    /* --live: a follower prints the heap as it records */
	double refresh;               /* --refresh: the follower's updates (default 1s) */
	/* --export URL: heapsnap-analyze export follows the recording in a process of its own,
	 * with --export-interval, --service-name, --export-header-file, --export-cacert,
	 * --export-keep, --export-queue passed on. Without -o it reads the stream from export_in, a pipe whose
	 * other end is the output. */
	const char *export_url, *service_name, *export_header_file, *export_cacert;
	double export_interval;
	uint32_t export_keep, export_queue;
	int export_in;
	/* How often a frame is written at least, each with a HORIZON record: 1 s, or less with
	 * --live (half the refresh), so that a follower sees an event within one refresh. */
	double flush_interval;
};

/* Records until the target exits, the duration ends or a signal arrives. Returns the
 * process exit status: the command's own for `-- CMD`. */
int recorder_run(const struct rec_opts *o);
#endif
