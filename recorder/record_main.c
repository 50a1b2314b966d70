// SPDX-License-Identifier: MIT
/* heapsnap-record: command line. Options, defaults and examples live here, in one place. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record.h"
#include "recorder.h"
#include "launch.h"
#include "signals.h"
#include "units.h"

int hs_verbose;

#define DEFAULT_RATE_PID (512 * 1024)

static const char usage[] =
	"Usage: heapsnap-record [OPTIONS] [--via preload|bpf] -- COMMAND [ARGS...]\n"
	"       heapsnap-record [OPTIONS] [--via inject|bpf] -p PID [--children]\n"
	"       heapsnap-record [OPTIONS] -a\n"
	"\n"
	"Records heap allocations and frees of a process, for heapsnap-analyze. Three ways in write the\n"
	"same file: preload (libheapsnap.so preloaded into a command it starts, no root), inject (the\n"
	"same library loaded into a running process, -p, without a debugger) and bpf (eBPF uprobes: a\n"
	"whole host with -a, static binaries, processes nothing may be loaded into).\n"
	"\n"
	"SIZE is bytes, or a number with k, m or g for KiB, MiB, GiB (4096, 512k, 1.5m, 1g); DURATION is\n"
	"seconds, or a number with ms, s, m or h (0.2, 500ms, 90s, 5m, 1h). heapsnap-analyze reads both\n"
	"the same way.\n"
	"\n"
	"Target:\n"
	"  -p, --pid PID            attach to a running process and all its threads, and follow what it\n"
	"                           forks from then on; children already running are left out (said)\n"
	"      --children           with -p: its descendants already running too, as a launched\n"
	"                           command's tree is taken (a postmaster, an nginx master, a gunicorn\n"
	"                           arbiter whole); injection reaches one process, so children running\n"
	"                           make --via auto record with BPF\n"
	"  -a, --all                record every process on the host\n"
	"  -- COMMAND ARGS          start COMMAND held, attach, then let it run; its exit status is ours\n"
	"      --no-follow-forks    do not follow fork children (default: follow). Following, BPF tracks\n"
	"                           a child from its fork, its probes bound to no pid (other processes\n"
	"                           mapping the same libraries trap and return at once); not, to the\n"
	"                           target's pid alone\n"
	"      --via WAY            preload: libheapsnap.so in the command (no root, near native speed);\n"
	"                           inject: libheapsnap.so loaded into the running process of -p\n"
	"                           (ptrace, a few ms stopped; detach puts everything back);\n"
	"                           bpf: uprobes, nothing loaded into the target; auto (default):\n"
	"                           preload for a launched, dynamically linked command, inject for\n"
	"                           -p (BPF if it cannot be done), else bpf\n"
	"      --attach-timeout DURATION  inject: how long to wait for the process's next allocator\n"
	"                           call, where the library is loaded (default 10s, at most 1h)\n"
	"      --attach-hold DURATION  inject: how long the process's allocator calls may wait for\n"
	"                           the hooks while the library loads (default 0.5s, 0 to 1s); a\n"
	"                           call that waits no longer goes on unrecorded, counted in\n"
	"                           lost.inject_unhooked_calls\n"
	"\n"
	"Output:\n"
	"  -o, --output FILE        record file (default: heapsnap.<pid>.hsnap); '-' writes the record\n"
	"                           stream to standard output, for a pipe (never a terminal): frames\n"
	"                           as they are written, read as they come by `heapsnap-analyze live -`;\n"
	"                           a launched command's own standard output goes to standard error\n"
	"      --live               while recording, show the live heap every --refresh: on a terminal\n"
	"                           the full-screen view of `heapsnap-analyze live` (q ends the\n"
	"                           recording as --duration does, m marks a snapshot), else its text\n"
	"                           updates, what `heapsnap-analyze top` prints, and a last one at the\n"
	"                           end. The view runs beside the recorder on the file it writes:\n"
	"                           nothing more runs in the target. Frames are written every half\n"
	"                           refresh (at most 1s apart). Not with -o -\n"
	"      --refresh DURATION   --live: how often the view updates, 0.1s to 1h (default 1s)\n"
	"      --export URL         while recording, send a heap profile per process every\n"
	"                           --export-interval to URL: `heapsnap-analyze export --to URL` (see\n"
	"                           its --help: otlp+http://HOST:PORT, pyroscope+http://HOST:PORT,\n"
	"                           dir:PATH) runs beside the recorder, following the file, or without\n"
	"                           -o the record stream through a pipe, so that no file is kept. A\n"
	"                           URL that cannot be parsed or reached stops the recording before it\n"
	"                           starts; a destination down later loses profiles, never events:\n"
	"                           counted in lost.export_profiles and said on stderr\n"
	"      --export-interval DURATION  --export: length of an interval, 1s to 1d (default 60s)\n"
	"      --service-name NAME  --export: service.name (default: each process's command)\n"
	"      --export-header-file FILE  --export: \"Name: value\" lines sent with each request\n"
	"      --export-cacert FILE --export: PEM certificates an https destination is checked against\n"
	"      --export-keep N      --export dir:PATH: keep the newest N profiles there\n"
	"      --export-queue N     --export to HTTP: requests waiting at most (default 64)\n"
	"  -d, --duration DURATION  stop after this long (default: until the target exits or Ctrl-C)\n"
	"\n"
	"Sampling and stacks:\n"
	"  -s, --sample-rate SIZE   Poisson byte sampling, mean bytes between samples; 0 records every\n"
	"                           allocation (at most 1024g). Default: 0 with -- COMMAND, 512k with -p/-a\n"
	"      --stack MODE         auto (default): whole stacks, frame pointers or not: each module's\n"
	"                           .eh_frame becomes an unwind table that the walk looks up per frame;\n"
	"                           fp: frame-pointer walk plus the return address at [sp];\n"
	"                           dwarf[=SIZE]: copy the registers and up to SIZE of stack (default\n"
	"                           8k, at most 32k) and unwind offline with DWARF CFI;\n"
	"                           none: the call site only\n"
	"      --max-stack N        deepest stack recorded, 1..127 (default 127)\n"
	"\n"
	"Snapshots:\n"
	"      --interval DURATION  mark a snapshot every DURATION, at least 10ms (SIGUSR1 marks one at\n"
	"                           any time)\n"
	"      --snapshot-at-peak   mark the moment of the highest live total\n"
	"      --rss-interval DURATION  sample the targets' RSS this often, at least 100ms (default 1s)\n"
	"\n"
	"Probes:\n"
	"      --libc PATH          the C library to probe (default: found in the target's maps)\n"
	"      --probe LIB:SYM:KIND a custom allocator function; KIND is malloc, calloc, realloc, free,\n"
	"                           memalign, posix_memalign or new (repeatable)\n"
	"      --probe-at-entry     put every probe at function entry (no probe placement)\n"
	"      --probe-links MODE   how probes are attached: session (Linux 6.13+: the entry skips\n"
	"                           returns nothing needs), multi (6.6+: a uprobe and a uretprobe per\n"
	"                           function, one link per library), perf (one link per probe), or\n"
	"                           auto, the first of these the kernel has (default)\n"
	"      --noop-probes        benchmark floor: attach the same probes with programs that do\n"
	"                           nothing, so the run costs only the kernel's traps\n"
	"\n"
	"Limits:\n"
	"      --max-live N         sampled blocks live at once tracked in the kernel (default: room\n"
	"                           for a 32 GiB heap at the sampling rate, 65536 to 1048576;\n"
	"                           recording every event, the live set is the recorder's)\n"
	"      --stack-cache N      stacks remembered in the kernel (default 65536)\n"
	"      --unwind-rows N      BPF, --stack auto: rows of unwind tables held in the kernel, 16\n"
	"                           bytes each (default 1m: libc takes 28k, python3 65k)\n"
	"      --ringbuf-size SIZE  ring buffer space over all CPUs, a power of two from 1m to 1g (default\n"
	"                           16m; a plain figure is MiB); one ring per CPU, each at least 256 KiB\n"
	"\n"
	"  -v, --verbose            libbpf debug output and probe choices\n"
	"      --stats              print the event and loss counters at the end\n"
	"  -h, --help               this help\n"
	"      --version            the version, and of the record format it writes\n"
	"\n"
	"BPF needs root, or CAP_BPF with CAP_PERFMON, and a kernel with BTF; preload needs neither.\n"
	"\n"
	"Examples:\n"
	"  heapsnap-record -o app.hsnap -- ./app --serve       # preloaded: no root needed\n"
	"  heapsnap-record --live -o app.hsnap -- ./app        # the heap printed every second as it runs\n"
	"  heapsnap-record -p 1234 --export otlp+http://localhost:4318   # profiles to a Collector, no file\n"
	"  ssh host sudo heapsnap-record -p 1234 -o - | heapsnap-analyze live -   # watched from here\n"
	"  sudo heapsnap-record -p 1234 --duration 5m --interval 30s\n"
	"  sudo heapsnap-record -p 1234 -s 0 --stack none      # every event, call sites only\n"
	"  sudo heapsnap-record -p $(head -1 $PGDATA/postmaster.pid) --children   # the whole server\n"
	"  heapsnap-analyze pprof -o app.pb.gz app.hsnap && go tool pprof -http=:8080 app.pb.gz\n";

enum {
	OPT_STACK = 256,
	OPT_MAX_STACK,
	OPT_INTERVAL,
	OPT_PEAK,
	OPT_RSS,
	OPT_LIBC,
	OPT_PROBE,
	OPT_PROBE_ENTRY,
	OPT_MAX_LIVE,
	OPT_STACK_CACHE,
	OPT_UNWIND_ROWS,
	OPT_RINGBUF,
	OPT_STATS,
	OPT_NO_FOLLOW,
	OPT_CHILDREN,
	OPT_NOOP,
	OPT_PROBE_LINKS,
	OPT_VIA,
	OPT_ATTACH_TIMEOUT,
	OPT_ATTACH_HOLD,
	OPT_VERSION,
	OPT_LIVE,
	OPT_REFRESH,
	OPT_EXPORT,
	OPT_EXPORT_INTERVAL,
	OPT_SERVICE_NAME,
	OPT_EXPORT_HEADER_FILE,
	OPT_EXPORT_CACERT,
	OPT_EXPORT_KEEP,
	OPT_EXPORT_QUEUE,
};

static const struct option longopts[] = {
	{"pid", required_argument, NULL, 'p'},
	{"all", no_argument, NULL, 'a'},
	{"output", required_argument, NULL, 'o'},
	{"duration", required_argument, NULL, 'd'},
	{"sample-rate", required_argument, NULL, 's'},
	{"stack", required_argument, NULL, OPT_STACK},
	{"max-stack", required_argument, NULL, OPT_MAX_STACK},
	{"interval", required_argument, NULL, OPT_INTERVAL},
	{"snapshot-at-peak", no_argument, NULL, OPT_PEAK},
	{"rss-interval", required_argument, NULL, OPT_RSS},
	{"libc", required_argument, NULL, OPT_LIBC},
	{"probe", required_argument, NULL, OPT_PROBE},
	{"probe-at-entry", no_argument, NULL, OPT_PROBE_ENTRY},
	{"max-live", required_argument, NULL, OPT_MAX_LIVE},
	{"stack-cache", required_argument, NULL, OPT_STACK_CACHE},
	{"unwind-rows", required_argument, NULL, OPT_UNWIND_ROWS},
	{"ringbuf-size", required_argument, NULL, OPT_RINGBUF},
	{"no-follow-forks", no_argument, NULL, OPT_NO_FOLLOW},
	{"children", no_argument, NULL, OPT_CHILDREN},
	{"noop-probes", no_argument, NULL, OPT_NOOP},
	{"probe-links", required_argument, NULL, OPT_PROBE_LINKS},
	{"via", required_argument, NULL, OPT_VIA},
	{"attach-timeout", required_argument, NULL, OPT_ATTACH_TIMEOUT},
	{"attach-hold", required_argument, NULL, OPT_ATTACH_HOLD},
	{"stats", no_argument, NULL, OPT_STATS},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{"live", no_argument, NULL, OPT_LIVE},
	{"refresh", required_argument, NULL, OPT_REFRESH},
	{"export", required_argument, NULL, OPT_EXPORT},
	{"export-interval", required_argument, NULL, OPT_EXPORT_INTERVAL},
	{"service-name", required_argument, NULL, OPT_SERVICE_NAME},
	{"export-header-file", required_argument, NULL, OPT_EXPORT_HEADER_FILE},
	{"export-cacert", required_argument, NULL, OPT_EXPORT_CACERT},
	{"export-keep", required_argument, NULL, OPT_EXPORT_KEEP},
	{"export-queue", required_argument, NULL, OPT_EXPORT_QUEUE},
	{0},
};

static int bad_option(const char *opt, const char *arg, const char *why)
{
	fprintf(stderr, "heapsnap-record: invalid value '%s' for %s: %s\n", arg, opt, why);
	return 2;
}

/* A pid or a depth: digits only. */
static int parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-' || *end)
		return -1;
	*out = v;
	return 0;
}

/* Sizes and durations go through the parser heapsnap-analyze uses too (common/units.h); these
 * say what is wrong with ARG of OPT and return false. A size without a suffix is PLAIN_UNIT bytes. */
static bool size_ok(const char *opt, const char *arg, uint64_t plain_unit, uint64_t *v)
{
	const char *why;

	if (!units__size(arg, plain_unit, v, &why))
		return true;
	bad_option(opt, arg, why);
	return false;
}

static bool secs_ok(const char *opt, const char *arg, double *v)
{
	const char *why;

	if (!units__duration(arg, v, &why))
		return true;
	bad_option(opt, arg, why);
	return false;
}

/* The deadlines are nanoseconds in a uint64_t: 1e9 s (31 years) leaves them room. */
#define MAX_SECS 1e9

/* With -v, the figures the options came to, in the units the recorder uses. */
static void print_opts(const struct rec_opts *o)
{
	fprintf(stderr,
		"heapsnap-record: duration %gs, interval %gs, rss-interval %gs, attach-timeout %gs, sample-rate %" PRIu64
		" bytes, ringbuf-size %" PRIu32 " MiB, stack window %" PRIu32 " bytes\n",
		o->duration, o->interval, o->rss_interval, o->attach_timeout, o->sample_rate, o->ringbuf_mb,
		o->dwarf_bytes);
}

static int parse_probe(const char *arg, struct custom_probe *p)
{
	char *copy = strdup(arg), *c1, *c2;

	c2 = copy ? strrchr(copy, ':') : NULL;
	if (!c2)
		goto bad;
	*c2 = 0;
	c1 = strrchr(copy, ':');
	if (!c1 || c1 == copy || c1[1] == 0)
		goto bad;
	*c1 = 0;
	if (!alloc_func__parse_kind(c2 + 1, &p->prog, &p->kind))
		goto bad;
	p->lib = strdup(copy);
	p->symbol = strdup(c1 + 1);
	free(copy);
	return 0;
bad:
	free(copy);
	return -1;
}

/* What an option parser returns when it took its option, and when the option is not its own. */
enum { NEXT = -1, NOT_MINE = -2 };

/* Each parser below takes option C with its argument ARG into O: it returns NEXT when C was
 * one of its options and ARG good, NOT_MINE when C is not one of its options, else the exit
 * status (2 for a bad ARG, said; 0 for --help and --version). */

/* The target, the output, how long, sampling and stacks, snapshots. */
static int parse_target_option(int c, const char *arg, struct rec_opts *o, bool *rate_set)
{
	uint64_t v;
	const char *why;

	switch (c) {
	case 'p':
		if (parse_count(arg, &v) || !v || v > 0x3fffffff)
			return bad_option("--pid", arg, "expected a process id");
		o->pid = (pid_t)v;
		return NEXT;
	case 'a':
		o->all = true;
		return NEXT;
	case OPT_CHILDREN:
		o->children = true;
		return NEXT;
	case 'o':
		o->output = arg;
		return NEXT;
	case OPT_LIVE:
		o->live = true;
		return NEXT;
	case OPT_EXPORT:
		o->export_url = arg;
		return NEXT;
	case OPT_EXPORT_INTERVAL:
		if (!secs_ok("--export-interval", arg, &o->export_interval))
			return 2;
		if (o->export_interval < 1 || o->export_interval > 86400)
			return bad_option("--export-interval", arg, "expected 1s to 1d");
		return NEXT;
	case OPT_SERVICE_NAME:
		o->service_name = arg;
		return NEXT;
	case OPT_EXPORT_HEADER_FILE:
		o->export_header_file = arg;
		return NEXT;
	case OPT_EXPORT_CACERT:
		o->export_cacert = arg;
		return NEXT;
	case OPT_EXPORT_KEEP:
	case OPT_EXPORT_QUEUE: {
		uint64_t v;
		bool keep = c == OPT_EXPORT_KEEP;

		if (parse_count(arg, &v) || !v || v > (keep ? 1000000 : 4096))
			return bad_option(keep ? "--export-keep" : "--export-queue", arg,
					  keep ? "expected 1 to 1000000 profiles" : "expected 1 to 4096 requests");
		if (keep)
			o->export_keep = (uint32_t)v;
		else
			o->export_queue = (uint32_t)v;
		return NEXT;
	}
	case OPT_REFRESH:
		if (!secs_ok("--refresh", arg, &o->refresh))
			return 2;
		if (o->refresh < 0.1 || o->refresh > 3600)
			return bad_option("--refresh", arg, "expected seconds, 0.1 to 3600 (100ms to 1h)");
		return NEXT;
	case 'd':
		if (!secs_ok("--duration", arg, &o->duration))
			return 2;
		if (o->duration == 0 || o->duration > MAX_SECS)
			return bad_option("--duration", arg, "expected more than 0 seconds, at most 1e9");
		return NEXT;
	case 's':
		if (!size_ok("--sample-rate", arg, 1, &o->sample_rate))
			return 2;
		/* Past 2^40 a byte's weight (2^16 / p) nears 2^64, and a threshold 2^63. */
		if (o->sample_rate > (1ull << 40))
			return bad_option("--sample-rate", arg, "expected bytes from 0 to 1024g, e.g. 0, 4096, 512k, 1m");
		*rate_set = true;
		return NEXT;
	case OPT_STACK:
		if (!strcmp(arg, "fp")) {
			o->stack_mode = HS_STACK_FP;
		} else if (!strcmp(arg, "none")) {
			o->stack_mode = HS_STACK_NONE;
		} else if (!strcmp(arg, "auto")) {
			o->stack_mode = HS_STACK_AUTO;
		} else if (!strncmp(arg, "dwarf", 5) && (!arg[5] || arg[5] == '=')) {
			o->stack_mode = HS_STACK_DWARF;
			if (arg[5] && (units__size(arg + 6, 1, &v, &why) || v < 256 || v > 32768))
				return bad_option("--stack", arg, "dwarf=SIZE takes 256 to 32768 (32k)");
			if (arg[5])
				o->dwarf_bytes = (uint32_t)v;
		} else {
			return bad_option("--stack", arg, "expected fp, dwarf[=BYTES], auto or none");
		}
		return NEXT;
	case OPT_MAX_STACK:
		if (parse_count(arg, &v) || v < 1 || v > 127)
			return bad_option("--max-stack", arg, "expected 1..127");
		o->max_stack = (uint32_t)v;
		return NEXT;
	case OPT_INTERVAL:
		if (!secs_ok("--interval", arg, &o->interval))
			return 2;
		if (o->interval < 0.01 || o->interval > MAX_SECS)
			return bad_option("--interval", arg, "expected seconds, at least 0.01 (10ms), at most 1e9");
		return NEXT;
	case OPT_PEAK:
		o->snapshot_at_peak = true;
		return NEXT;
	case OPT_RSS:
		if (!secs_ok("--rss-interval", arg, &o->rss_interval))
			return 2;
		if (o->rss_interval < 0.1 || o->rss_interval > MAX_SECS)
			return bad_option("--rss-interval", arg, "expected seconds, at least 0.1 (100ms), at most 1e9");
		return NEXT;
	}
	return NOT_MINE;
}

/* How the target is entered: probes, links, injection, the way in. */
static int parse_probe_option(int c, const char *arg, struct rec_opts *o)
{
	switch (c) {
	case OPT_LIBC:
		if (access(arg, R_OK))
			return bad_option("--libc", arg, strerror(errno));
		o->libc = arg;
		return NEXT;
	case OPT_PROBE: {
		struct custom_probe *np = realloc(o->probes, sizeof(*np) * (size_t)(o->nr_probes + 1));

		if (!np)
			return 1;
		o->probes = np;
		if (parse_probe(arg, &np[o->nr_probes]))
			return bad_option("--probe", arg,
					  "expected LIB:SYMBOL:KIND with KIND one of malloc, calloc, realloc, "
					  "free, memalign, posix_memalign, new");
		o->nr_probes++;
		return NEXT;
	}
	case OPT_PROBE_ENTRY:
		o->probe_entry = true;
		return NEXT;
	case OPT_PROBE_LINKS:
		if (!strcmp(arg, "auto"))
			o->probe_links = LINKS_AUTO;
		else if (!strcmp(arg, "session"))
			o->probe_links = LINKS_SESSION;
		else if (!strcmp(arg, "multi"))
			o->probe_links = LINKS_MULTI;
		else if (!strcmp(arg, "perf"))
			o->probe_links = LINKS_PERF;
		else
			return bad_option("--probe-links", arg, "expected auto, session, multi or perf");
		return NEXT;
	case OPT_ATTACH_TIMEOUT:
		if (!secs_ok("--attach-timeout", arg, &o->attach_timeout))
			return 2;
		if (o->attach_timeout < 0.1 || o->attach_timeout > 3600)
			return bad_option("--attach-timeout", arg, "expected seconds, 0.1 to 3600 (100ms to 1h)");
		return NEXT;
	case OPT_ATTACH_HOLD:
		if (!secs_ok("--attach-hold", arg, &o->attach_hold))
			return 2;
		if (o->attach_hold < 0 || o->attach_hold > 1)
			return bad_option("--attach-hold", arg, "expected seconds, 0 to 1 (0 to 1s)");
		return NEXT;
	case OPT_VIA:
		if (!strcmp(arg, "auto"))
			o->via = VIA_AUTO;
		else if (!strcmp(arg, "bpf"))
			o->via = VIA_BPF;
		else if (!strcmp(arg, "preload"))
			o->via = VIA_PRELOAD;
		else if (!strcmp(arg, "inject"))
			o->via = VIA_INJECT;
		else
			return bad_option("--via", arg, "expected auto, preload, inject or bpf");
		return NEXT;
	}
	return NOT_MINE;
}

/* Limits, switches, help. */
static int parse_limit_option(int c, const char *arg, struct rec_opts *o)
{
	uint64_t v;
	const char *why;

	switch (c) {
	case OPT_MAX_LIVE:
		if (units__size(arg, 1, &v, &why) || v < 1024 || v > (1u << 28))
			return bad_option("--max-live", arg, "expected 1024..268435456");
		o->max_live = (uint32_t)v;
		return NEXT;
	case OPT_STACK_CACHE:
		if (units__size(arg, 1, &v, &why) || v < 1024 || v > (1u << 24))
			return bad_option("--stack-cache", arg, "expected 1024..16777216");
		o->stack_cache = (uint32_t)v;
		return NEXT;
	case OPT_UNWIND_ROWS:
		if (units__size(arg, 1, &v, &why) || v < 65536 || v > (1u << 28))
			return bad_option("--unwind-rows", arg, "expected 64k..256m");
		o->unwind_rows = (uint32_t)v;
		return NEXT;
	case OPT_RINGBUF:
		/* A plain figure is MiB, as it always was. */
		if (!size_ok("--ringbuf-size", arg, 1u << 20, &v))
			return 2;
		if (v < (1u << 20) || v > (1u << 30) || (v & (v - 1)))
			return bad_option("--ringbuf-size", arg, "expected a power of two from 1m to 1g (a plain figure is MiB)");
		o->ringbuf_mb = (uint32_t)(v >> 20);
		return NEXT;
	case OPT_NO_FOLLOW:
		o->follow_forks = false;
		return NEXT;
	case OPT_NOOP:
		o->noop = true;
		return NEXT;
	case OPT_STATS:
		o->stats = true;
		return NEXT;
	case 'v':
		o->verbose++;
		hs_verbose = 1;
		return NEXT;
	case 'h':
		fputs(usage, stdout);
		return 0;
	case OPT_VERSION:
		printf("heapsnap-record %s (record format %u.%u)\n", HEAPSNAP_VERSION, HS_FORMAT_MAJOR,
		       HS_FORMAT_MINOR);
		return 0;
	}
	return NOT_MINE;
}

/* Options checked against each other, once, after parsing; and the defaults that depend on
 * others. Returns 0, or the exit status. */
static int check_options(struct rec_opts *o, bool rate_set, char *default_out, size_t out_len)
{
	if (!!o->pid + !!o->argv + o->all != 1) {
		fprintf(stderr, "heapsnap-record: give exactly one target: -p PID, -a, or -- COMMAND\n"
				"Try 'heapsnap-record --help'.\n");
		return 2;
	}
	if (o->children && !o->pid) {
		fprintf(stderr, "heapsnap-record: --children takes the descendants of a running process (-p PID); a "
				"command's are followed from its start, and -a records every process\n");
		return 2;
	}
	if ((o->export_interval || o->service_name || o->export_header_file || o->export_cacert || o->export_keep ||
	     o->export_queue) &&
	    !o->export_url) {
		fprintf(stderr, "heapsnap-record: --export-interval, --service-name, --export-header-file, --export-cacert "
				"--export-keep and --export-queue go with --export URL\n");
		return 2;
	}
	if (o->export_url && ((o->output && !strcmp(o->output, "-")) || (o->live && !o->output))) {
		fprintf(stderr, "heapsnap-record: %s\n",
			o->live ? "--export without -o keeps no file, which --live follows: give -o FILE too"
				: "--export follows the file; with -o - pipe the stream to `heapsnap-analyze export --to URL -`");
		return 2;
	}
	if (o->refresh && !o->live) {
		fprintf(stderr, "heapsnap-record: --refresh sets how often --live updates; give --live too\n");
		return 2;
	}
	if (o->output && !strcmp(o->output, "-")) {
		if (o->live) {
			fprintf(stderr, "heapsnap-record: --live prints on standard output, where -o - writes the "
					"record stream; pipe it to `heapsnap-analyze live -` instead\n");
			return 2;
		}
		/* Standard output itself (common/outfile.c); the writer refuses a terminal. */
		o->output = "/dev/stdout";
		o->to_stdout = true;
		launch_stdout_to_stderr = true;
	}
	if (!o->refresh)
		o->refresh = 1;
	/* A follower sees an event within one refresh: a frame at least every half of it. */
	o->flush_interval = o->live ? o->refresh / 2 : 1;
	if (!rate_set)
		o->sample_rate = o->argv ? 0 : DEFAULT_RATE_PID;
	/* A smaller kernel map makes every free's lookup cheaper (1M-live sampled: 1.15x -> 1.05x
	 * the floor at 64K entries); every-event mode does not use it at all. */
	if (!o->max_live) {
		uint64_t want = o->sample_rate ? (32ull << 30) / o->sample_rate : 1024;

		o->max_live = (uint32_t)(!o->sample_rate ? 1024 : want < 65536 ? 65536 : want > (1u << 20) ? 1u << 20 : want);
	}
	if (o->verbose)
		print_opts(o);
	if (!o->export_interval)
		o->export_interval = 60;
	if (o->export_url && !o->output) {
		/* No file: the stream goes through a pipe to the exporter (common/outfile.c writes
		 * a /dev/fd/N in place). */
		int p[2];

		if (pipe2(p, O_CLOEXEC)) {
			fprintf(stderr, "heapsnap-record: cannot make a pipe for --export: %s\n", strerror(errno));
			return 1;
		}
		o->export_in = p[0];
		snprintf(default_out, out_len, "/dev/fd/%d", p[1]);
		o->output = default_out;
	}
	if (!o->output) {
		snprintf(default_out, out_len, "heapsnap.%d.hsnap", o->pid ? o->pid : getpid());
		o->output = default_out;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct rec_opts o = {
		.max_stack = HS_MAX_STACK, /* 127: what a record file holds; see README, Stacks */
		.stack_mode = HS_STACK_AUTO,
		.follow_forks = true,
		.rss_interval = 1,
		.max_live = 0, /* set after parsing */
		.stack_cache = 1u << 16,
		.unwind_rows = 1u << 20,
		.ringbuf_mb = 16,
		.probe_links = LINKS_AUTO,
		.dwarf_bytes = 8192,
		.attach_timeout = 10,
		.attach_hold = 0.5,
		.export_in = -1,
	};
	bool rate_set = false;
	char default_out[64];
	int c, ret;

	/* First: a signal during start-up must not kill the recorder half-way. */
	ret = rec_signals__init();
	if (ret < 0) {
		fprintf(stderr, "heapsnap-record: cannot set up signal handling: %s\n", strerror(-ret));
		return 1;
	}
	while ((c = getopt_long(argc, argv, "+p:ao:d:s:vh", longopts, NULL)) != -1) {
		ret = parse_target_option(c, optarg, &o, &rate_set);
		if (ret == NOT_MINE)
			ret = parse_probe_option(c, optarg, &o);
		if (ret == NOT_MINE)
			ret = parse_limit_option(c, optarg, &o);
		if (ret == NOT_MINE) {
			fprintf(stderr, "Try 'heapsnap-record --help'.\n");
			return 2;
		}
		if (ret != NEXT)
			return ret;
	}
	if (optind < argc)
		o.argv = argv + optind;
	ret = check_options(&o, rate_set, default_out, sizeof(default_out));
	if (ret)
		return ret;
	ret = recorder_run(&o);
	for (int i = 0; i < o.nr_probes; i++) {
		free(o.probes[i].lib);
		free(o.probes[i].symbol);
	}
	free(o.probes);
	return ret;
}
