// SPDX-License-Identifier: MIT
/* heapsnap-analyze: command line. Subcommands, options, defaults and examples in one place. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "units.h"

static const char usage[] =
	"Usage: heapsnap-analyze SUBCOMMAND [OPTIONS] FILE...\n"
	"       heapsnap-analyze --version\n"
	"\n"
	"Reads a heapsnap record file, replays it to the live heap at a chosen point, and reports.\n"
	"Runs anywhere: no BPF, no root. Binaries are found by build-id for symbolization.\n"
	"\n"
	"SIZE is bytes, or a number with k, m or g for KiB, MiB, GiB (1000, 512k, 1.5m, 2g); DURATION is\n"
	"seconds, or a number with ms, s, m or h (12.5, 500ms, 90s, 5m, 1h), as heapsnap-record reads them.\n"
	"\n"
	"Subcommands:\n"
	"  pprof       gzip'd pprof profile (alloc/inuse objects and space) for `go tool pprof`\n"
	"  collapsed   folded stacks (root;...;leaf VALUE) for flamegraph.pl, speedscope, inferno\n"
	"  top         the functions holding the most, like `pprof -top`\n"
	"  summary     per process: allocated, freed, live, peak, largest request, ages\n"
	"  leaks       live allocations older than --min-age, grouped by stack\n"
	"  stats       probes, event counts, loss counters, map use, sampler metrics\n"
	"  info        header, processes, mappings, snapshots, time range, format version\n"
	"  diff        growth between two snapshots of one file (--from/--to) or two files\n"
	"  temporary   allocations freed by their thread before it allocates again (heaptrack's\n"
	"              definition; memray's threshold 1), by function: work a stack buffer or a\n"
	"              reused one would do\n"
	"  speedscope  speedscope's JSON file format: one profile per sample type (in-use and\n"
	"              allocated, bytes and objects)\n"
	"  timeline    the live heap (bytes, blocks) and RSS over time, in at most 1024 points each\n"
	"              the highest of its stretch of time; snapshots and the peak beside them\n"
	"  live        follows a recording as it is written (FILE, or '-' for standard input: the\n"
	"              stream of heapsnap-record -o -), from its start as tail -f does, and prints\n"
	"              shows its heap every --refresh. On a terminal, a full-screen view: the\n"
	"              processes, the way in, the live heap now and at its peak, RSS, the\n"
	"              allocation rate and any loss; a chart of the live heap and RSS with the\n"
	"              snapshots; the functions by own live bytes, with total, blocks and rates.\n"
	"              Keys (shown at the bottom): < > sort by another column, v native, Python or\n"
	"              merged frames, p a process, t a thread, space pause, m mark a snapshot and\n"
	"              q end the recording (both with --recorder), q leave. With --batch, or when\n"
	"              stdout is not a terminal: what top prints for the live heap at each update\n"
	"              (its header says the moment T: `top --at T` of the finished file prints\n"
	"              the same figures), then a blank line; a last update when the recording\n"
	"              ends (its footer, or the end of a pipe; Ctrl-C: at once). --json: top\n"
	"              --json's object, one a line. An update costs the events since the last\n"
	"              one, not the whole file\n"
	"  export      follows a recording as live does (FILE, or '-') and every --interval of its\n"
	"              time sends one heap profile per process to --to: the blocks live at the\n"
	"              interval's end (inuse_space, inuse_objects) and what was allocated during it\n"
	"              (alloc_space, alloc_objects), symbolized here unless --no-symbolize (then\n"
	"              addresses, mappings and build-ids, for the backend to symbolize). The last\n"
	"              interval ends with the recording. A destination that is down or slow holds\n"
	"              nothing up: requests wait in a --queue and are retried with backoff; what\n"
	"              does not fit is dropped, counted (lost.export_profiles) and said on stderr\n"
	"  html        one self-contained HTML file (-o report.html): the heap and RSS over time, a\n"
	"              flame graph and the functions of the heap at any moment picked on the\n"
	"              chart or of what grew in a range; top functions, leaks and temporary\n"
	"              allocations at the end. Two replays; a few MB at most however long the\n"
	"              recording\n"
	"\n"
	"Where to look (default: the end of the recording, but for Python, below):\n"
	"      --snapshot N|LABEL   the Nth snapshot (1-based), 'last', or the one with LABEL ('peak',\n"
	"                           'exit', 'python-finalize', ...)\n"
	"      --at DURATION|end    the live heap DURATION after recording started; 'end': the end of\n"
	"                           the recording, Python processes included (html takes this one)\n"
	"      --peak               the moment of the highest live total\n"
	"      --from S, --to S     diff: snapshots of one file (default: first and last)\n"
	"  A Python program's module globals are freed as its interpreter finalizes, after its own\n"
	"  work, so the end of its recording holds the interpreter's shutdown leftovers. Recorded\n"
	"  in-process (preload, inject), an interpreter that begins to finalize (its atexit\n"
	"  callbacks run) marks a snapshot 'python-finalize' of its process; by default pprof,\n"
	"  collapsed, top, summary, leaks, speedscope, html and a diff of two files show each such\n"
	"  process as it was then, every other process (no Python, or one that never finalized:\n"
	"  os._exit, a signal) at the end, and say 'Snapshot: before Python finalization' (html's\n"
	"  chart too ends there for such a process).\n"
	"\n"
	"Which processes (default: all; these together select any process either names):\n"
	"      --pid PID            only process PID's allocations (repeatable); diff of two files:\n"
	"                           PID is in the first, and in the second the processes with its\n"
	"                           command and executable name are\n"
	"      --comm NAME          only those of processes while their name is NAME (a shell that\n"
	"                           execs NAME is not selected before the exec)\n"
	"\n"
	"Output:\n"
	"  -o, --output FILE        write FILE instead of stdout (pprof refuses to write to a terminal)\n"
	"      --json               JSON instead of text (top, summary, leaks, stats, info, diff, timeline)\n"
	"      --value TYPE         inuse_space (default), inuse_objects, alloc_space, alloc_objects\n"
	"  -n, --nodecount N        rows to show in top, leaks, temporary and diff (default 20; 0 = all)\n"
	"      --min-age DURATION   leaks: only blocks at least this old, e.g. 500ms, 10s, 5m (default 0)\n"
	"      --pprof FILE         diff: also write the 'to' side as pprof for `pprof -diff_base`\n"
	"      --max-growth AMOUNT  diff: exit 5 when the total of --value grew by more than AMOUNT:\n"
	"                           a SIZE (1000, 512k, 10m; k, m, g are 1024, 1024^2, 1024^3; a count\n"
	"                           for the _objects values) or a percent of the 'from' total (5%, 2.5%);\n"
	"                           sampled recordings fail only when the growth exceeds it with 95%\n"
	"                           confidence\n"
	"      --batch              live: text updates, even on a terminal\n"
	"      --refresh DURATION   live: how often to update, 0.1s to 1h (default 1s)\n"
	"      --recorder PID       live: the heapsnap-record writing FILE, which the view's m\n"
	"                           signals to mark a snapshot (SIGUSR1) and q to stop (SIGTERM);\n"
	"                           heapsnap-record --live passes its own\n"
	"      --lines              diff: a stack is its functions, files and lines (default: its\n"
	"                           functions, inline ones included, so a rebuild that moves lines\n"
	"                           changes no stack)\n"
	"      --base-pprof FILE    diff: also write the 'from' side as pprof\n"
	"\n"
	"Export (export; heapsnap-record --export takes the same):\n"
	"      --to URL             where profiles go:\n"
	"                             otlp+http://HOST:PORT[/PATH]  OTLP/HTTP profiles (v1development, as\n"
	"                               the OpenTelemetry Collector v0.161 takes them; default path\n"
	"                               /v1development/profiles): per process a resource with\n"
	"                               service.name, host.name, process.pid, process.executable.*,\n"
	"                               four profiles, mappings with their build-ids\n"
	"                             pyroscope+http://HOST:PORT    Pyroscope's /ingest, pprof, one\n"
	"                               request per process, named SERVICE{hostname=H,pid=P}\n"
	"                             dir:PATH                      one gzip'd pprof per process and\n"
	"                               interval, heapsnap-TIME-SEQ-SERVICE-PID.pb.gz, 0600\n"
	"                           https:// in place of http:// for TLS\n"
	"      --interval DURATION  length of an interval, 1s to 1d (default 60s)\n"
	"      --service-name NAME  service.name (Pyroscope: the application) for every process\n"
	"                           (default: each process's command)\n"
	"      --export-header-file FILE\n"
	"                           \"Name: value\" lines sent with every request (an Authorization,\n"
	"                           X-Scope-OrgID): from a file, since ps shows argv to anyone\n"
	"      --export-cacert FILE PEM certificates an https destination is checked against\n"
	"      --keep N             dir: keep the newest N profiles in the folder (default: all)\n"
	"      --queue N            HTTP: requests waiting at most while the destination is slow or\n"
	"                           down, 1 to 4096 (default 64); past it the newest are dropped\n"
	"      --status-fd N        heapsnap-record --export's: a line on descriptor N after each\n"
	"                           interval with what was sent and lost\n"
	"\n"
	"Symbolization:\n"
	"      --debug-dir DIR      look for binaries and debug files here first (repeatable; a\n"
	"                           .build-id/xx/rest layout or a plain tree); then PPROF_BINARY_PATH,\n"
	"                           /usr/lib/debug, the original path if its build-id matches, and\n"
	"                           debuginfod when DEBUGINFOD_URLS is set\n"
	"      --no-symbolize       no symbol lookups: pprof gets addresses, mappings and build-ids\n"
	"                           for its own symbolizer; text shows module+offset\n"
	"  -h, --help\n"
	"\n"
	"Exit status: 0 ok, 1 error, 2 bad usage, 3 corrupt file (output covers the readable part),\n"
	"4 no data (empty recording, or no such snapshot), 5 diff --max-growth exceeded.\n"
	"\n"
	"Examples:\n"
	"  heapsnap-analyze pprof -o heap.pb.gz app.hsnap && go tool pprof -http=:8080 heap.pb.gz\n"
	"  heapsnap-analyze html -o report.html app.hsnap && xdg-open report.html\n"
	"  heapsnap-analyze top --snapshot peak app.hsnap\n"
	"  heapsnap-analyze top --at end script.hsnap    # a Python program: what finalization left\n"
	"  heapsnap-analyze collapsed --value alloc_space app.hsnap | flamegraph.pl > alloc.svg\n"
	"  heapsnap-analyze diff --from 1 --to 3 app.hsnap\n"
	"  heapsnap-analyze diff --json old.hsnap new.hsnap\n"
	"  heapsnap-analyze diff --max-growth 5% last-good.hsnap new.hsnap || echo \"the heap grew\"\n"
	"  heapsnap-analyze leaks --min-age 30s app.hsnap\n"
	"  heapsnap-analyze live --refresh 2s app.hsnap        # while heapsnap-record writes it\n"
	"  ssh host sudo heapsnap-record -p 1234 -o - | heapsnap-analyze live -\n"
	"  heapsnap-analyze export --to otlp+http://collector:4318 app.hsnap\n"
	"  heapsnap-analyze export --to dir:/var/lib/heapsnap --keep 100 --interval 5m app.hsnap\n";

enum {
	OPT_SNAPSHOT = 256,
	OPT_AT,
	OPT_PEAK,
	OPT_FROM,
	OPT_TO,
	OPT_JSON,
	OPT_VALUE,
	OPT_MIN_AGE,
	OPT_PPROF,
	OPT_BASE_PPROF,
	OPT_DEBUG_DIR,
	OPT_PID,
	OPT_COMM,
	OPT_NO_SYM,
	OPT_MAX_GROWTH,
	OPT_LINES,
	OPT_BATCH,
	OPT_REFRESH,
	OPT_RECORDER,
	OPT_INTERVAL,
	OPT_SERVICE_NAME,
	OPT_HEADER_FILE,
	OPT_CACERT,
	OPT_KEEP,
	OPT_STATUS_FD,
	OPT_QUEUE,
};

static const struct option longopts[] = {
	{"snapshot", required_argument, NULL, OPT_SNAPSHOT},
	{"at", required_argument, NULL, OPT_AT},
	{"peak", no_argument, NULL, OPT_PEAK},
	{"from", required_argument, NULL, OPT_FROM},
	{"to", required_argument, NULL, OPT_TO},
	{"output", required_argument, NULL, 'o'},
	{"json", no_argument, NULL, OPT_JSON},
	{"value", required_argument, NULL, OPT_VALUE},
	{"nodecount", required_argument, NULL, 'n'},
	{"min-age", required_argument, NULL, OPT_MIN_AGE},
	{"pprof", required_argument, NULL, OPT_PPROF},
	{"base-pprof", required_argument, NULL, OPT_BASE_PPROF},
	{"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	{"pid", required_argument, NULL, OPT_PID},
	{"comm", required_argument, NULL, OPT_COMM},
	{"no-symbolize", no_argument, NULL, OPT_NO_SYM},
	{"max-growth", required_argument, NULL, OPT_MAX_GROWTH},
	{"lines", no_argument, NULL, OPT_LINES},
	{"batch", no_argument, NULL, OPT_BATCH},
	{"refresh", required_argument, NULL, OPT_REFRESH},
	{"recorder", required_argument, NULL, OPT_RECORDER},
	{"interval", required_argument, NULL, OPT_INTERVAL},
	{"service-name", required_argument, NULL, OPT_SERVICE_NAME},
	{"export-header-file", required_argument, NULL, OPT_HEADER_FILE},
	{"export-cacert", required_argument, NULL, OPT_CACERT},
	{"keep", required_argument, NULL, OPT_KEEP},
	{"status-fd", required_argument, NULL, OPT_STATUS_FD},
	{"queue", required_argument, NULL, OPT_QUEUE},
	{"help", no_argument, NULL, 'h'},
	{0},
};


static int usage_error(const char *fmt, const char *arg)
{
	fputs("heapsnap-analyze: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\nTry 'heapsnap-analyze --help'.\n", stderr);
	return EXIT_USAGE;
}

/* "invalid --OPT 'ARG': WHY" */
static int usage_error2(const char *opt, const char *arg, const char *why)
{
	fprintf(stderr, "heapsnap-analyze: invalid %s '%s': %s\nTry 'heapsnap-analyze --help'.\n", opt, arg, why);
	return EXIT_USAGE;
}

/* Sizes and durations as heapsnap-record reads them (common/units.h). */
static int duration_opt(const char *opt, const char *arg, double *out)
{
	const char *why;

	if (units__duration(arg, out, &why))
		return usage_error2(opt, arg, why);
	return 0;
}

/* A size (1000, 512k, 10m, 2g) or a percent of the 'from' total (5%). */
static int amount_opt(const char *opt, const char *arg, struct growth_gate *g)
{
	size_t n = strlen(arg);
	const char *why;
	uint64_t bytes;

	g->percent = n && arg[n - 1] == '%';
	if (g->percent)
		return units__percent(arg, &g->amount, &why) ? usage_error2(opt, arg, why) : 0;
	if (units__size(arg, 1, &bytes, &why)) {
		fprintf(stderr, "heapsnap-analyze: invalid %s '%s': %s, or a percent of the old total (5%%)\n"
				"Try 'heapsnap-analyze --help'.\n", opt, arg, why);
		return EXIT_USAGE;
	}
	g->amount = (double)bytes;
	return 0;
}

/* Options checked against the subcommand and each other, once. */
static int check_opts(const struct opts *o)
{
	const struct cmd *c = o->cmd;
	int nwhere = !!o->snapshot + o->at_set + o->at_end + o->peak;

	if (o->nr_files < c->min_files || o->nr_files > c->max_files) {
		if (c->max_files == 2)
			return usage_error("%s takes one file (two snapshots) or two files", c->name);
		return usage_error(o->nr_files ? "%s takes exactly one file" : "%s needs a record file", c->name);
	}
	if (o->at_end && nwhere == 1 && (c->accepts & A_AT_END))
		; /* html: the end of the recording rather than before Python's finalization */
	else if (nwhere && !(c->accepts & A_WHERE))
		return usage_error(c->accepts & A_DIFF ? "%s chooses its points with --from and --to"
						       : "%s covers the whole recording: no --snapshot, --at or --peak",
				   c->name);
	if (nwhere > 1)
		return usage_error("%s", "choose one of --snapshot, --at and --peak");
	if (c->accepts & A_EXPORT) {
		if (!o->to)
			return usage_error("%s needs --to URL: otlp+http://HOST:PORT, pyroscope+http://HOST:PORT or dir:PATH",
					   c->name);
		if (o->keep && strncmp(o->to, "dir:", 4))
			return usage_error("--keep bounds a dir: folder, not %s", o->to);
		if (o->from)
			return usage_error("--from does not apply to %s", c->name);
	} else if (o->interval_set || o->service_name || o->header_file || o->cacert || o->keep || o->queue ||
		   o->status_fd >= 0) {
		return usage_error("--interval, --service-name, --export-header-file, --export-cacert, --keep and --queue "
				   "apply to export, not %s", c->name);
	} else if ((o->from || o->to || o->pprof_out || o->base_pprof_out || o->gate_set || o->lines) &&
		   !(c->accepts & A_DIFF))
		return usage_error("--from, --to, --pprof, --base-pprof, --max-growth and --lines apply to diff, not %s",
				   c->name);
	if ((o->batch || o->refresh_set || o->recorder) && !(c->accepts & A_LIVE))
		return usage_error("--batch, --refresh and --recorder apply to live, not %s", c->name);
	if (o->json && !(c->accepts & A_JSON))
		return usage_error("--json does not apply to %s", c->name);
	if (o->value_set && !(c->accepts & A_VALUE))
		return usage_error("--value does not apply to %s", c->name);
	if (o->nodecount_set && !(c->accepts & A_ROWS))
		return usage_error("-n does not apply to %s", c->name);
	if (o->min_age_set && !(c->accepts & A_MIN_AGE))
		return usage_error("--min-age does not apply to %s", c->name);
	if (c->binary && !o->output && isatty(1))
		return usage_error("refusing to write binary %s data to a terminal; use -o FILE or redirect", c->name);
	return 0;
}

/* getopt's next option C into O: OPT_NEXT to go on, or main's exit status. */
#define OPT_NEXT (-1)

static int nodecount_opt(struct opts *o, const char *arg)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*end || v < 0 || v > 1000000)
		return usage_error("invalid --nodecount '%s': expected a count (0 = all)", arg);
	o->nodecount = (int)v;
	o->nodecount_set = true;
	return OPT_NEXT;
}

static int pid_opt(struct opts *o, const char *arg)
{
	char *end;
	unsigned long v;
	uint32_t *pids, i;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || !v || v > UINT32_MAX)
		return usage_error("invalid --pid '%s': expected a process id", arg);
	if (o->nr_pids == 1024)
		return usage_error("%s", "at most 1024 --pid options");
	pids = realloc(o->pids, sizeof(*o->pids) * (o->nr_pids + 1));
	if (!pids)
		return EXIT_FAIL;
	o->pids = pids;
	/* In order, as the replay looks them up (struct replay_target). */
	for (i = o->nr_pids++; i > 0 && pids[i - 1] > v; i--)
		pids[i] = pids[i - 1];
	pids[i] = (uint32_t)v;
	return OPT_NEXT;
}

/* A count from LO to HI into *OUT: OPT_NEXT, or the usage error saying the range (of WHAT). */
static int count_opt(const char *opt, const char *arg, unsigned long lo, unsigned long hi, const char *what,
		     uint32_t *out)
{
	char *end, why[64];
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || v < lo || v > hi) {
		snprintf(why, sizeof(why), "expected %lu to %lu %s", lo, hi, what);
		return usage_error2(opt, arg, why);
	}
	*out = (uint32_t)v;
	return OPT_NEXT;
}

static int debug_dir_opt(struct opts *o, const char *arg)
{
	const char **d = realloc(o->debug_dirs, sizeof(*o->debug_dirs) * (size_t)(o->nr_debug_dirs + 1));

	if (!d)
		return EXIT_FAIL;
	o->debug_dirs = d;
	o->debug_dirs[o->nr_debug_dirs++] = arg;
	return OPT_NEXT;
}

static int parse_opt(struct opts *o, int c)
{
	int ret;

	switch (c) {
	case 'o':
		o->output = optarg;
		return OPT_NEXT;
	case 'n':
		return nodecount_opt(o, optarg);
	case OPT_SNAPSHOT:
		o->snapshot = optarg;
		return OPT_NEXT;
	case OPT_AT:
		if (!strcmp(optarg, "end")) {
			o->at_end = true;
			return OPT_NEXT;
		}
		ret = duration_opt("--at", optarg, &o->at);
		if (ret)
			return ret;
		o->at_set = true;
		return OPT_NEXT;
	case OPT_PEAK:
		o->peak = true;
		return OPT_NEXT;
	case OPT_FROM:
		o->from = optarg;
		return OPT_NEXT;
	case OPT_TO:
		o->to = optarg;
		return OPT_NEXT;
	case OPT_JSON:
		o->json = true;
		return OPT_NEXT;
	case OPT_VALUE:
		o->value = value_index(optarg);
		if (o->value < 0)
			return usage_error("invalid --value '%s': expected inuse_space, inuse_objects, "
					   "alloc_space or alloc_objects", optarg);
		o->value_set = true;
		return OPT_NEXT;
	case OPT_MIN_AGE:
		ret = duration_opt("--min-age", optarg, &o->min_age);
		if (ret)
			return ret;
		o->min_age_set = true;
		return OPT_NEXT;
	case OPT_PPROF:
		o->pprof_out = optarg;
		return OPT_NEXT;
	case OPT_BASE_PPROF:
		o->base_pprof_out = optarg;
		return OPT_NEXT;
	case OPT_PID:
		return pid_opt(o, optarg);
	case OPT_COMM:
		if (!*optarg || strlen(optarg) > 15)
			return usage_error("invalid --comm '%s': a process name is 1 to 15 characters", optarg);
		o->comm = optarg;
		return OPT_NEXT;
	case OPT_DEBUG_DIR:
		return debug_dir_opt(o, optarg);
	case OPT_NO_SYM:
		o->no_sym = true;
		return OPT_NEXT;
	case OPT_LINES:
		o->lines = true;
		return OPT_NEXT;
	case OPT_BATCH:
		o->batch = true;
		return OPT_NEXT;
	case OPT_REFRESH:
		ret = duration_opt("--refresh", optarg, &o->refresh);
		if (ret)
			return ret;
		if (o->refresh < 0.1 || o->refresh > 3600)
			return usage_error2("--refresh", optarg, "expected 0.1s to 1h");
		o->refresh_set = true;
		return OPT_NEXT;
	case OPT_RECORDER: {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(optarg, &end, 10);
		if (errno || end == optarg || *end || v < 1 || v > 4194304)
			return usage_error2("--recorder", optarg, "expected a process id");
		o->recorder = (int)v;
		return OPT_NEXT;
	}
	case OPT_INTERVAL:
		ret = duration_opt("--interval", optarg, &o->interval);
		if (ret)
			return ret;
		if (o->interval < 1 || o->interval > 86400)
			return usage_error2("--interval", optarg, "expected 1s to 1d");
		o->interval_set = true;
		return OPT_NEXT;
	case OPT_SERVICE_NAME:
		if (!*optarg || strlen(optarg) > 255)
			return usage_error2("--service-name", optarg, "expected 1 to 255 characters");
		o->service_name = optarg;
		return OPT_NEXT;
	case OPT_HEADER_FILE:
		o->header_file = optarg;
		return OPT_NEXT;
	case OPT_CACERT:
		o->cacert = optarg;
		return OPT_NEXT;
	case OPT_QUEUE:
		return count_opt("--queue", optarg, 1, 4096, "requests", &o->queue);
	case OPT_KEEP:
		return count_opt("--keep", optarg, 1, 1000000, "profiles", &o->keep);
	case OPT_STATUS_FD: {
		uint32_t fd;

		ret = count_opt("--status-fd", optarg, 0, 1023, "as a descriptor", &fd);
		o->status_fd = (int)fd;
		return ret;
	}
	case OPT_MAX_GROWTH:
		ret = amount_opt("--max-growth", optarg, &o->gate);
		if (ret)
			return ret;
		o->gate_set = true;
		return OPT_NEXT;
	case 'h':
		fputs(usage, stdout);
		return EXIT_OK;
	default:
		return usage_error("%s", "bad option");
	}
}

int main(int argc, char **argv)
{
	struct opts o = {.value = V_INUSE_SPACE, .nodecount = 20, .refresh = 1, .interval = 60, .status_fd = -1};
	struct sym_opts so = {0};
	struct symbolizer *sym;
	int c, ret;

	if (argc >= 2 && !strcmp(argv[1], "--version")) {
		printf("heapsnap-analyze %s (record format %u.%u)\n", HEAPSNAP_VERSION, HS_FORMAT_MAJOR, HS_FORMAT_MINOR);
		return 0;
	}
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	o.cmd = cmd__find(argv[1]);
	if (!o.cmd)
		return usage_error("unknown subcommand '%s'", argv[1]);
	optind = 2;
	while ((c = getopt_long(argc, argv, "o:n:h", longopts, NULL)) != -1)
		if ((ret = parse_opt(&o, c)) != OPT_NEXT)
			return ret;
	o.files = argv + optind;
	o.nr_files = argc - optind;
	ret = check_opts(&o);
	if (ret)
		return ret;

	so.debug_dirs = o.debug_dirs;
	so.nr_debug_dirs = o.nr_debug_dirs;
	so.no_symbolize = o.no_sym;
	sym = symbolizer__new(&so);
	if (!sym) {
		fputs("heapsnap-analyze: cannot start the symbolizer: out of memory\n", stderr);
		ret = EXIT_FAIL;
	} else {
		ret = o.cmd->run(&o, sym);
	}
	symbolizer__free(sym);
	free(o.debug_dirs);
	free(o.pids);
	return ret;
}
