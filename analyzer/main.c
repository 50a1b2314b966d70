// SPDX-License-Identifier: MIT
/* heapsnap-analyze: command line. Subcommands, options, defaults and examples in one place. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outfile.h"
#include "pprof.h"
#include "profile.h"
#include "replay.h"
#include "reports.h"
#include "symbolize.h"

static const char usage[] =
	"Usage: heapsnap-analyze SUBCOMMAND [OPTIONS] FILE...\n"
	"       heapsnap-analyze --version\n"
	"\n"
	"Reads a heapsnap record file, replays it to the live heap at a chosen point, and reports.\n"
	"Runs anywhere: no BPF, no root. Binaries are found by build-id for symbolization.\n"
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
	"\n"
	"Where to look (default: the end of the recording):\n"
	"      --snapshot N|LABEL   the Nth snapshot (1-based), 'last', or the one with LABEL ('peak',\n"
	"                           'exit', ...)\n"
	"      --at SECONDS         the live heap SECONDS after recording started\n"
	"      --peak               the moment of the highest live total\n"
	"      --from S, --to S     diff: snapshots of one file (default: first and last)\n"
	"\n"
	"Which processes (default: all; these together select any process either names):\n"
	"      --pid PID            only process PID's allocations (repeatable)\n"
	"      --comm NAME          only those of processes while their name is NAME (a shell that\n"
	"                           execs NAME is not selected before the exec)\n"
	"\n"
	"Output:\n"
	"  -o, --output FILE        write FILE instead of stdout (pprof refuses to write to a terminal)\n"
	"      --json               JSON instead of text (top, summary, leaks, stats, info, diff, timeline)\n"
	"      --value TYPE         inuse_space (default), inuse_objects, alloc_space, alloc_objects\n"
	"  -n, --nodecount N        rows to show in top, leaks, temporary and diff (default 20; 0 = all)\n"
	"      --min-age DURATION   leaks: e.g. 500ms, 10s, 5m (default 0)\n"
	"      --pprof FILE         diff: also write the 'to' side as pprof for `pprof -diff_base`\n"
	"      --base-pprof FILE    diff: also write the 'from' side as pprof\n"
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
	"4 no data (empty recording, or no such snapshot).\n"
	"\n"
	"Examples:\n"
	"  heapsnap-analyze pprof -o heap.pb.gz app.hsnap && go tool pprof -http=:8080 heap.pb.gz\n"
	"  heapsnap-analyze top --snapshot peak app.hsnap\n"
	"  heapsnap-analyze collapsed --value alloc_space app.hsnap | flamegraph.pl > alloc.svg\n"
	"  heapsnap-analyze diff --from 1 --to 3 app.hsnap\n"
	"  heapsnap-analyze diff --json old.hsnap new.hsnap\n"
	"  heapsnap-analyze leaks --min-age 30s app.hsnap\n";

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
	{"help", no_argument, NULL, 'h'},
	{0},
};

enum cmd { C_PPROF, C_COLLAPSED, C_TOP, C_SUMMARY, C_LEAKS, C_STATS, C_INFO, C_DIFF, C_TIMELINE, C_SPEEDSCOPE, C_TEMPORARY, C__COUNT };
static const char *const cmd_names[C__COUNT] = {"pprof", "collapsed", "top",  "summary",
						"leaks", "stats",     "info", "diff", "timeline", "speedscope", "temporary"};

struct opts {
	enum cmd cmd;
	const char *output, *snapshot, *from, *to, *pprof_out, *base_pprof_out;
	double at, min_age;
	bool peak, at_set, json, no_sym, value_set;
	int value, nodecount;
	const char **debug_dirs;
	int nr_debug_dirs;
	uint32_t *pids, nr_pids; /* --pid */
	const char *comm;        /* --comm */
	char **files;
	int nr_files;
};

static int usage_error(const char *fmt, const char *arg)
{
	fputs("heapsnap-analyze: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\nTry 'heapsnap-analyze --help'.\n", stderr);
	return EXIT_USAGE;
}

static int parse_duration(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	if (!strcmp(end, "ms"))
		v /= 1000;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		v *= 60;
	else if (!strcmp(end, "h"))
		v *= 3600;
	else if (*end && strcmp(end, "s"))
		return -1;
	*out = v;
	return 0;
}

/* Output goes to stdout, or through outfile (format/outfile.h): a temporary file renamed into
 * place, so a failure never leaves half a file and a planted link is never written through. */
struct out {
	FILE *f;
	struct outfile *of;
	const char *path;
};

static int out_open(struct out *o, const char *path, bool binary)
{
	const char *why;
	int err, fd;

	memset(o, 0, sizeof(*o));
	if (!path) {
		if (binary && isatty(1)) {
			fputs("heapsnap-analyze: refusing to write binary pprof data to a terminal; use -o FILE or "
			      "redirect stdout\n",
			      stderr);
			return EXIT_USAGE;
		}
		o->f = stdout;
		return 0;
	}
	o->path = path;
	err = outfile__open(path, &o->of, &why);
	if (!err && binary && isatty(outfile__fd(o->of))) {
		fprintf(stderr, "heapsnap-analyze: refusing to write binary pprof data to the terminal %s\n", path);
		outfile__free(o->of);
		return EXIT_USAGE;
	}
	fd = err ? -1 : dup(outfile__fd(o->of));
	o->f = fd >= 0 ? fdopen(fd, binary ? "wb" : "w") : NULL;
	if (!o->f) {
		if (!err)
			err = -errno;
		fprintf(stderr, "heapsnap-analyze: cannot write %s: %s\n", path, why ? why : strerror(-err));
		if (fd >= 0)
			close(fd);
		outfile__free(o->of);
		return EXIT_FAIL;
	}
	return 0;
}

static int out_close(struct out *o, int status)
{
	int ret = status, err;

	if (o->f == stdout) {
		if (fflush(stdout)) {
			fprintf(stderr, "heapsnap-analyze: writing stdout: %s\n", strerror(errno));
			ret = EXIT_FAIL;
		}
		return ret;
	}
	if (fclose(o->f) && !ret) {
		fprintf(stderr, "heapsnap-analyze: writing %s: %s\n", o->path, strerror(errno));
		ret = EXIT_FAIL;
	}
	if (ret == EXIT_OK || ret == EXIT_CORRUPT) {
		err = outfile__publish(o->of);
		if (err) {
			fprintf(stderr, "heapsnap-analyze: cannot create %s: %s\n", o->path, strerror(-err));
			ret = EXIT_FAIL;
		}
	}
	outfile__free(o->of); /* an unpublished file is removed */
	return ret;
}

/* Says what replay__run found wrong, if anything; returns RET. */
static int report_load(const struct replay *r, int ret)
{
	if (ret == EXIT_CORRUPT)
		fprintf(stderr, "heapsnap-analyze: error: %s; results cover the data before it\n", r->error);
	else if (ret)
		fprintf(stderr, "heapsnap-analyze: %s\n", r->error);
	else if (r->status == HS_READ_TRUNCATED)
		fprintf(stderr, "heapsnap-analyze: warning: %s\n", r->error);
	if (!ret || ret == EXIT_CORRUPT) {
		char desc[256];
		uint64_t lost = replay__lost_events(r, desc, sizeof(desc));

		if (lost)
			fprintf(stderr, "heapsnap-analyze: warning: %s: %" PRIu64 " events were lost while recording (%s); "
					"its figures lack them\n", r->path, lost, desc);
	}
	return ret;
}

static int load(struct replay *r, const char *path, const struct replay_target *t)
{
	return report_load(r, replay__run(r, path, t));
}

static int write_pprof_file(const struct profile *p, const char *path, const struct opts *o)
{
	struct pprof_opts po = {.no_symbolize = o->no_sym};
	struct out out;
	int ret = out_open(&out, path, true);

	if (ret)
		return ret;
	if (pprof_write_profile(p, &po, out.f)) {
		fprintf(stderr, "heapsnap-analyze: failed to write the pprof profile\n");
		ret = EXIT_FAIL;
	}
	return out_close(&out, ret);
}

static int run_diff(struct opts *o, struct symbolizer *sym)
{
	struct replay ra, rb;
	struct replay_target ta = {.kind = STOP_SNAPSHOT, .pids = o->pids, .nr_pids = o->nr_pids, .comm = o->comm};
	struct replay_target tb = ta;
	struct profile pa, pb;
	struct report_opts ro = {.json = o->json, .value = o->value, .nodecount = o->nodecount};
	struct out out;
	bool defaults = false;
	int ret, ret2;

	if (o->nr_files == 1) {
		/* Two snapshots of one file: default first to last. */
		ta.snapshot = o->from ? o->from : "1";
		tb.snapshot = o->to ? o->to : "last";
		defaults = !(o->from && o->to);
	} else {
		ta.kind = o->from ? STOP_SNAPSHOT : STOP_END;
		tb.kind = o->to ? STOP_SNAPSHOT : STOP_END;
		ta.snapshot = o->from;
		tb.snapshot = o->to;
	}
	ret = replay__run(&ra, o->files[0], &ta);
	/* The first replay has counted the file's snapshots, whether or not it found its own. */
	if (defaults && ra.have_session && ra.nr_snaps < 2) {
		fprintf(stderr, "heapsnap-analyze: %s has %u snapshots; diff needs two (or two files)\n", o->files[0],
			ra.nr_snaps);
		replay__free(&ra);
		return EXIT_NODATA;
	}
	ret = report_load(&ra, ret);
	if (ret && ret != EXIT_CORRUPT) {
		replay__free(&ra);
		return ret;
	}
	ret2 = load(&rb, o->files[o->nr_files - 1], &tb);
	if (ret2 && ret2 != EXIT_CORRUPT) {
		replay__free(&ra);
		replay__free(&rb);
		return ret2;
	}
	ret = ret ? ret : ret2;
	profile__build(&pa, &ra, sym);
	profile__build(&pb, &rb, sym);
	ret2 = out_open(&out, o->output, false);
	if (!ret2) {
		report_diff(&pa, &pb, &ro, out.f);
		ret2 = out_close(&out, EXIT_OK);
	}
	if (!ret2 && o->pprof_out)
		ret2 = write_pprof_file(&pb, o->pprof_out, o);
	if (!ret2 && o->base_pprof_out)
		ret2 = write_pprof_file(&pa, o->base_pprof_out, o);
	profile__free(&pa);
	profile__free(&pb);
	replay__free(&ra);
	replay__free(&rb);
	return ret2 ? ret2 : ret;
}

int main(int argc, char **argv)
{
	struct opts o = {.value = V_INUSE_SPACE, .nodecount = 20};
	struct sym_opts so = {0};
	struct symbolizer *sym;
	struct replay_target t = {.kind = STOP_END};
	struct replay r;
	struct profile p;
	struct report_opts ro;
	struct out out;
	int c, ret, nwhere;

	if (argc >= 2 && !strcmp(argv[1], "--version")) {
		printf("heapsnap-analyze %s (record format %u.%u)\n", HEAPSNAP_VERSION, HS_FORMAT_MAJOR, HS_FORMAT_MINOR);
		return 0;
	}
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	for (o.cmd = 0; o.cmd < C__COUNT && strcmp(argv[1], cmd_names[o.cmd]); o.cmd++)
		;
	if (o.cmd == C__COUNT)
		return usage_error("unknown subcommand '%s'", argv[1]);
	optind = 2;
	while ((c = getopt_long(argc, argv, "o:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o.output = optarg;
			break;
		case 'n': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 0 || v > 1000000)
				return usage_error("invalid --nodecount '%s': expected a count (0 = all)", optarg);
			o.nodecount = (int)v;
			break;
		}
		case OPT_SNAPSHOT:
			o.snapshot = optarg;
			break;
		case OPT_AT:
			if (parse_duration(optarg, &o.at))
				return usage_error("invalid --at '%s': expected seconds, e.g. 12.5 or 500ms", optarg);
			o.at_set = true;
			break;
		case OPT_PEAK:
			o.peak = true;
			break;
		case OPT_FROM:
			o.from = optarg;
			break;
		case OPT_TO:
			o.to = optarg;
			break;
		case OPT_JSON:
			o.json = true;
			break;
		case OPT_VALUE:
			o.value = value_index(optarg);
			if (o.value < 0)
				return usage_error("invalid --value '%s': expected inuse_space, inuse_objects, "
						   "alloc_space or alloc_objects", optarg);
			o.value_set = true;
			break;
		case OPT_MIN_AGE:
			if (parse_duration(optarg, &o.min_age))
				return usage_error("invalid --min-age '%s': expected a duration, e.g. 500ms, 10s, 5m", optarg);
			break;
		case OPT_PPROF:
			o.pprof_out = optarg;
			break;
		case OPT_BASE_PPROF:
			o.base_pprof_out = optarg;
			break;
		case OPT_PID: {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || !v || v > UINT32_MAX)
				return usage_error("invalid --pid '%s': expected a process id", optarg);
			if (o.nr_pids == 1024)
				return usage_error("%s", "at most 1024 --pid options");
			o.pids = realloc(o.pids, sizeof(*o.pids) * (o.nr_pids + 1));
			if (!o.pids)
				return EXIT_FAIL;
			o.pids[o.nr_pids++] = (uint32_t)v;
			break;
		}
		case OPT_COMM:
			if (!*optarg || strlen(optarg) > 15)
				return usage_error("invalid --comm '%s': a process name is 1 to 15 characters", optarg);
			o.comm = optarg;
			break;
		case OPT_DEBUG_DIR:
			o.debug_dirs = realloc(o.debug_dirs, sizeof(*o.debug_dirs) * (size_t)(o.nr_debug_dirs + 1));
			if (!o.debug_dirs)
				return EXIT_FAIL;
			o.debug_dirs[o.nr_debug_dirs++] = optarg;
			break;
		case OPT_NO_SYM:
			o.no_sym = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return EXIT_OK;
		default:
			return usage_error("%s", "bad option");
		}
	}
	o.files = argv + optind;
	o.nr_files = argc - optind;

	/* Options checked against the subcommand and each other, once. */
	nwhere = !!o.snapshot + o.at_set + o.peak;
	if (o.cmd == C_DIFF) {
		if (o.nr_files < 1 || o.nr_files > 2)
			return usage_error("%s", "diff takes one file (two snapshots) or two files");
		if (nwhere)
			return usage_error("%s", "diff chooses its points with --from and --to");
	} else {
		if (o.nr_files != 1)
			return usage_error(o.nr_files ? "%s takes exactly one file" : "%s needs a record file",
					   cmd_names[o.cmd]);
		if (o.from || o.to || o.pprof_out || o.base_pprof_out)
			return usage_error("--from, --to, --pprof and --base-pprof apply to diff, not %s", cmd_names[o.cmd]);
		if (nwhere > 1)
			return usage_error("%s", "choose one of --snapshot, --at and --peak");
	}
	if (o.cmd == C_TIMELINE && nwhere)
		return usage_error("%s", "timeline covers the whole recording: no --snapshot, --at or --peak");
	if (o.json && (o.cmd == C_PPROF || o.cmd == C_COLLAPSED || o.cmd == C_SPEEDSCOPE))
		return usage_error("--json does not apply to %s", cmd_names[o.cmd]);
	if (o.value_set && o.cmd != C_COLLAPSED && o.cmd != C_TOP && o.cmd != C_DIFF)
		return usage_error("--value applies to collapsed, top and diff, not %s", cmd_names[o.cmd]);
	if (o.cmd == C_PPROF && !o.output && isatty(1))
		return usage_error("%s", "refusing to write binary pprof data to a terminal; use -o FILE or redirect");

	so.debug_dirs = o.debug_dirs;
	so.nr_debug_dirs = o.nr_debug_dirs;
	so.no_symbolize = o.no_sym;
	sym = symbolizer__new(&so);
	if (!sym)
		return EXIT_FAIL;
	if (o.cmd == C_DIFF) {
		ret = run_diff(&o, sym);
		symbolizer__report(sym, stderr);
		symbolizer__free(sym);
		free(o.debug_dirs);
		free(o.pids);
		return ret;
	}
	if (o.snapshot) {
		t.kind = STOP_SNAPSHOT;
		t.snapshot = o.snapshot;
	} else if (o.at_set) {
		t.kind = STOP_TIME;
		t.at_seconds = o.at;
	} else if (o.peak) {
		t.kind = STOP_PEAK;
	} else if (o.cmd == C_INFO) {
		t.kind = STOP_META;
	}
	t.pids = o.pids;
	t.nr_pids = o.nr_pids;
	t.comm = o.comm;
	t.timeline = o.cmd == C_TIMELINE;
	t.temporary = o.cmd == C_TEMPORARY;
	ret = load(&r, o.files[0], &t);
	if (ret && ret != EXIT_CORRUPT && !(ret == EXIT_NODATA && o.cmd == C_INFO && r.have_session)) {
		replay__free(&r);
		symbolizer__free(sym);
		free(o.debug_dirs);
		free(o.pids);
		return ret;
	}
	ro = (struct report_opts){.json = o.json, .value = o.value, .nodecount = o.nodecount, .min_age = o.min_age,
				  .file_label = o.files[0]};
	if (o.cmd == C_INFO || o.cmd == C_TIMELINE) {
		int r2 = out_open(&out, o.output, false);

		if (!r2)
			r2 = out_close(&out, o.cmd == C_INFO ? report_info(&r, &ro, out.f) : report_timeline(&r, &ro, out.f));
		replay__free(&r);
		symbolizer__free(sym);
		free(o.debug_dirs);
		free(o.pids);
		return r2 ? r2 : (ret == EXIT_NODATA ? EXIT_OK : ret);
	}
	profile__build(&p, &r, sym);
	{
		int r2;

		if (o.cmd == C_PPROF) {
			r2 = write_pprof_file(&p, o.output, &o);
		} else {
			r2 = out_open(&out, o.output, false);
			if (!r2) {
				switch (o.cmd) {
				case C_COLLAPSED: r2 = report_collapsed(&p, &ro, out.f); break;
				case C_TOP: r2 = report_top(&p, &ro, out.f); break;
				case C_SUMMARY: r2 = report_summary(&p, &ro, out.f); break;
				case C_LEAKS: r2 = report_leaks(&p, &ro, out.f); break;
				case C_STATS: r2 = report_stats(&p, &ro, out.f); break;
				case C_SPEEDSCOPE: r2 = report_speedscope(&p, &ro, out.f); break;
				case C_TEMPORARY: r2 = report_temporary(&p, &ro, out.f); break;
				default: break;
				}
				r2 = out_close(&out, r2);
			}
		}
		if (!r2)
			r2 = ret;
		ret = r2;
	}
	if (o.cmd != C_STATS && !o.no_sym)
		symbolizer__report(sym, stderr);
	profile__free(&p);
	replay__free(&r);
	symbolizer__free(sym);
	free(o.debug_dirs);
	free(o.pids);
	return ret;
}
