// SPDX-License-Identifier: MIT
/* heapsnap-analyze: command line. Subcommands, options, defaults and examples in one place. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "html.h"
#include "outfile.h"
#include "pprof.h"
#include "profile.h"
#include "replay.h"
#include "reports.h"
#include "rows.h"
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
	"  html        one self-contained HTML file (-o report.html): the heap and RSS over time, a\n"
	"              flame graph of the heap at any moment picked on the chart or of what grew\n"
	"              in a range, top functions, leaks and temporary allocations. Two replays;\n"
	"              a few MB at most however long the recording\n"
	"\n"
	"Where to look (default: the end of the recording):\n"
	"      --snapshot N|LABEL   the Nth snapshot (1-based), 'last', or the one with LABEL ('peak',\n"
	"                           'exit', ...)\n"
	"      --at SECONDS         the live heap SECONDS after recording started\n"
	"      --peak               the moment of the highest live total\n"
	"      --from S, --to S     diff: snapshots of one file (default: first and last)\n"
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
	"      --min-age DURATION   leaks: e.g. 500ms, 10s, 5m (default 0)\n"
	"      --pprof FILE         diff: also write the 'to' side as pprof for `pprof -diff_base`\n"
	"      --max-growth AMOUNT  diff: exit 5 when the total of --value grew by more than AMOUNT:\n"
	"                           a figure (1000, 512k, 10m; k, m, g are 1024, 1024^2, 1024^3) or a\n"
	"                           percent of the 'from' total (5%); sampled recordings fail only when\n"
	"                           the growth exceeds it with 95% confidence\n"
	"      --lines              diff: a stack is its functions, files and lines (default: its\n"
	"                           functions, inline ones included, so a rebuild that moves lines\n"
	"                           changes no stack)\n"
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
	"4 no data (empty recording, or no such snapshot), 5 diff --max-growth exceeded.\n"
	"\n"
	"Examples:\n"
	"  heapsnap-analyze pprof -o heap.pb.gz app.hsnap && go tool pprof -http=:8080 heap.pb.gz\n"
	"  heapsnap-analyze html -o report.html app.hsnap && xdg-open report.html\n"
	"  heapsnap-analyze top --snapshot peak app.hsnap\n"
	"  heapsnap-analyze collapsed --value alloc_space app.hsnap | flamegraph.pl > alloc.svg\n"
	"  heapsnap-analyze diff --from 1 --to 3 app.hsnap\n"
	"  heapsnap-analyze diff --json old.hsnap new.hsnap\n"
	"  heapsnap-analyze diff --max-growth 5% last-good.hsnap new.hsnap || echo \"the heap grew\"\n"
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
	OPT_MAX_GROWTH,
	OPT_LINES,
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
	{"help", no_argument, NULL, 'h'},
	{0},
};

struct cmd;

struct opts {
	const struct cmd *cmd;
	const char *output, *snapshot, *from, *to, *pprof_out, *base_pprof_out;
	double at, min_age;
	bool peak, at_set, json, no_sym, value_set, nodecount_set, min_age_set, lines;
	bool gate_set;
	struct growth_gate gate; /* --max-growth */
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

/* 1000, 512k, 10m, 2g (k, m, g: 1024, 1024^2, 1024^3) or 5% (of the from total). */
static int parse_amount(const char *s, struct growth_gate *g)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || v != v)
		return -1;
	g->percent = false;
	if (!strcmp(end, "%"))
		g->percent = true;
	else if (!strcmp(end, "k") || !strcmp(end, "K"))
		v *= 1024;
	else if (!strcmp(end, "m") || !strcmp(end, "M"))
		v *= 1024 * 1024;
	else if (!strcmp(end, "g") || !strcmp(end, "G"))
		v *= 1024.0 * 1024 * 1024;
	else if (*end)
		return -1;
	g->amount = v;
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

/* ---- subcommands ---- */

/* Which options a subcommand takes beyond -o, --pid/--comm and symbolization. */
enum {
	A_WHERE = 1 << 0,   /* --snapshot, --at, --peak */
	A_JSON = 1 << 1,
	A_VALUE = 1 << 2,
	A_ROWS = 1 << 3,    /* -n */
	A_MIN_AGE = 1 << 4,
	A_DIFF = 1 << 5,    /* --from, --to, --pprof, --base-pprof */
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
};

static struct report_opts report_opts_of(const struct opts *o)
{
	return (struct report_opts){.json = o->json, .value = o->value, .nodecount = o->nodecount,
				    .min_age = o->min_age, .no_symbolize = o->no_sym, .file_label = o->files[0]};
}

static struct replay_target target_of(const struct opts *o)
{
	struct replay_target t = {.kind = STOP_END, .pids = o->pids, .nr_pids = o->nr_pids, .comm = o->comm,
				  .timeline = o->cmd->timeline, .temporary = o->cmd->temporary};

	if (o->snapshot) {
		t.kind = STOP_SNAPSHOT;
		t.snapshot = o->snapshot;
	} else if (o->at_set) {
		t.kind = STOP_TIME;
		t.at_seconds = o->at;
	} else if (o->peak) {
		t.kind = STOP_PEAK;
	} else if (o->cmd->meta) {
		t.kind = STOP_META;
	}
	return t;
}

/* An emitter's -errno as an exit status, said once. */
static int emit_status(int err, const char *what)
{
	if (!err)
		return EXIT_OK;
	fprintf(stderr, "heapsnap-analyze: writing %s: %s\n", what, strerror(-err));
	return EXIT_FAIL;
}

/* One emitter and what it writes: a profile, a replay or the HTML report. */
struct emit {
	int (*profile_report)(const struct profile *p, const struct report_opts *ro, FILE *out);
	int (*replay_report)(const struct replay *r, const struct report_opts *ro, FILE *out);
	const struct profile *p;
	const struct replay *r;
	struct html *html;
	const struct report_opts *ro;
};

/* Runs E into PATH or stdout; STATUS is the replay's (EXIT_CORRUPT survives a good write). */
static int emit_to(const char *path, bool binary, int status, const struct emit *e)
{
	struct out out;
	int ret = out_open(&out, path, binary), err;

	if (ret)
		return ret;
	if (e->html)
		err = html__write(e->html, e->p, e->ro, out.f);
	else if (e->profile_report)
		err = e->profile_report(e->p, e->ro, out.f);
	else
		err = e->replay_report(e->r, e->ro, out.f);
	ret = out_close(&out, emit_status(err, path ? path : "stdout"));
	return ret ? ret : status;
}

static int emit_pprof(const struct profile *p, const struct report_opts *ro, FILE *out)
{
	struct pprof_opts po = {.no_symbolize = ro->no_symbolize};

	return pprof_write_profile(p, &po, out);
}

/* Builds P from R, saying why not. */
static int build_profile(struct profile *p, struct replay *r, struct symbolizer *sym)
{
	int err = profile__build(p, r, sym);

	if (err)
		fprintf(stderr, "heapsnap-analyze: building the profile of %s: %s\n", r->path, strerror(-err));
	return err ? EXIT_FAIL : EXIT_OK;
}

/* A replay that stopped short of what was asked is no result, unless it is a corrupt
 * file's readable part. */
static bool usable(int ret)
{
	return !ret || ret == EXIT_CORRUPT;
}

static int run_profile(const struct opts *o, struct symbolizer *sym)
{
	struct replay_target t = target_of(o);
	struct report_opts ro = report_opts_of(o);
	struct replay r;
	struct profile p;
	int ret = load(&r, o->files[0], &t);

	if (usable(ret) && build_profile(&p, &r, sym))
		ret = EXIT_FAIL;
	else if (usable(ret)) {
		ret = emit_to(o->output, o->cmd->binary, ret,
			      &(struct emit){.profile_report = o->cmd->profile_report, .p = &p, .ro = &ro});
		if (o->cmd->profile_report != report_stats && !o->no_sym)
			symbolizer__report(sym, stderr);
		profile__free(&p);
	}
	replay__free(&r);
	return ret;
}

static int run_replay(const struct opts *o, struct symbolizer *sym)
{
	struct replay_target t = target_of(o);
	struct report_opts ro = report_opts_of(o);
	struct replay r;
	int ret = load(&r, o->files[0], &t);

	(void)sym;
	/* info reports what it can of a recording without events. */
	if (ret == EXIT_NODATA && o->cmd->meta && r.have_session)
		ret = EXIT_OK;
	if (usable(ret))
		ret = emit_to(o->output, false, ret, &(struct emit){.replay_report = o->cmd->replay_report, .r = &r, .ro = &ro});
	replay__free(&r);
	return ret;
}

static int write_pprof_file(const struct profile *p, const char *path, const struct opts *o)
{
	struct report_opts ro = report_opts_of(o);

	return emit_to(path, true, EXIT_OK, &(struct emit){.profile_report = emit_pprof, .p = p, .ro = &ro});
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* The processes of PATH that are those --pid selected in A, across recordings: by command
 * name and executable name (not its directory: two builds live in two trees), since pids
 * differ from run to run. */
static int match_processes(const struct replay *a, const char *path, uint32_t **pids, uint32_t *nr)
{
	struct replay_target t = {.kind = STOP_META};
	struct replay b;
	int ret = replay__run(&b, path, &t);

	*pids = NULL;
	*nr = 0;
	if (ret == EXIT_NODATA && b.have_session)
		ret = EXIT_OK;
	if (!usable(ret)) {
		ret = report_load(&b, ret);
		replay__free(&b);
		return ret;
	}
	*pids = calloc(b.nr_procs ? b.nr_procs : 1, sizeof(**pids));
	if (!*pids) {
		replay__free(&b);
		return EXIT_FAIL;
	}
	for (uint32_t i = 0; i < b.nr_procs; i++) {
		const struct process *q = &b.procs[i];

		for (uint32_t k = 0; k < a->nr_procs; k++) {
			const struct process *pa = &a->procs[k];

			if (pa->selected && !strcmp(pa->comm, q->comm) && !strcmp(base_name(pa->exe), base_name(q->exe))) {
				(*pids)[(*nr)++] = q->pid;
				break;
			}
		}
	}
	replay__free(&b);
	if (!*nr) {
		fprintf(stderr, "heapsnap-analyze: %s has no process with the command and executable name of --pid's in %s\n",
			path, a->path);
		return EXIT_NODATA;
	}
	return EXIT_OK;
}

static int run_diff(const struct opts *o, struct symbolizer *sym)
{
	struct replay ra, rb;
	struct replay_target ta = {.kind = STOP_SNAPSHOT, .pids = o->pids, .nr_pids = o->nr_pids, .comm = o->comm};
	struct replay_target tb = ta;
	struct profile pa, pb;
	struct report_opts ro = report_opts_of(o);
	struct diff_rows rows = {0};
	struct gate_verdict v;
	uint32_t *pids_b = NULL, nr_pids_b = 0;
	struct out out;
	bool defaults = false;
	int ret, ret2, err;

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
	if (!usable(ret)) {
		replay__free(&ra);
		return ret;
	}
	if (o->nr_files == 2 && o->nr_pids) {
		ret2 = match_processes(&ra, o->files[1], &pids_b, &nr_pids_b);
		if (ret2) {
			replay__free(&ra);
			return ret2;
		}
		tb.pids = pids_b;
		tb.nr_pids = nr_pids_b;
	}
	ret2 = load(&rb, o->files[o->nr_files - 1], &tb);
	if (!usable(ret2)) {
		replay__free(&ra);
		replay__free(&rb);
		free(pids_b);
		return ret2;
	}
	ret = ret ? ret : ret2;
	memset(&pb, 0, sizeof(pb));
	ret2 = build_profile(&pa, &ra, sym);
	if (!ret2)
		ret2 = build_profile(&pb, &rb, sym);
	if (!ret2 && (err = rows__diff(&pa, &pb, o->value, o->lines, &rows)))
		ret2 = emit_status(err, "the diff");
	if (!ret2 && o->gate_set)
		rows__gate(&rows, &o->gate, &v);
	if (!ret2)
		ret2 = out_open(&out, o->output, false);
	if (!ret2)
		ret2 = out_close(&out, emit_status(report_diff(&rows, &ra, &rb, o->gate_set ? &v : NULL, &ro, out.f),
						   o->output ? o->output : "stdout"));
	if (!ret2 && o->pprof_out)
		ret2 = write_pprof_file(&pb, o->pprof_out, o);
	if (!ret2 && o->base_pprof_out)
		ret2 = write_pprof_file(&pa, o->base_pprof_out, o);
	symbolizer__report(sym, stderr);
	/* The gate's verdict in one line, and in the exit status, once the output is written. */
	if (!ret2 && o->gate_set) {
		report_gate_line(&rows, &v, &ro, stderr);
		if (v.exceeded)
			ret2 = EXIT_GROWTH;
	}
	diff_rows__free(&rows);
	profile__free(&pa);
	profile__free(&pb);
	replay__free(&ra);
	replay__free(&rb);
	free(pids_b);
	return ret2 ? ret2 : ret;
}

/* Two replays: the first finds the moments worth keeping (the time range, snapshots, the
 * peak), the second keeps the live heap at each and ends as the profile of the end. */
static int run_html(const struct opts *o, struct symbolizer *sym)
{
	struct replay_target t = target_of(o);
	struct report_opts ro = report_opts_of(o);
	struct html *h;
	struct replay r;
	struct profile p;
	int ret, err;

	t.timeline = false;
	ret = replay__run(&r, o->files[0], &t);
	if (!usable(ret)) {
		ret = report_load(&r, ret);
		replay__free(&r);
		return ret;
	}
	err = html__plan(&r, &t, &h);
	replay__free(&r);
	if (err)
		return emit_status(err, "the HTML report");
	t.timeline = true;
	ret = load(&r, o->files[0], &t);
	if (usable(ret) && build_profile(&p, &r, sym))
		ret = EXIT_FAIL;
	else if (usable(ret)) {
		ret = emit_to(o->output, false, ret, &(struct emit){.html = h, .p = &p, .ro = &ro});
		if (!o->no_sym)
			symbolizer__report(sym, stderr);
		profile__free(&p);
	}
	replay__free(&r);
	html__free(h);
	return ret;
}

/* One table: the name, how it runs, how many files, which options apply. */
#define PROFILE(fn) .run = run_profile, .profile_report = fn, .min_files = 1, .max_files = 1
#define REPLAY(fn) .run = run_replay, .replay_report = fn, .min_files = 1, .max_files = 1
static const struct cmd cmds[] = {
	{"pprof", PROFILE(emit_pprof), .accepts = A_WHERE, .binary = true},
	{"collapsed", PROFILE(report_collapsed), .accepts = A_WHERE | A_VALUE},
	{"top", PROFILE(report_top), .accepts = A_WHERE | A_JSON | A_VALUE | A_ROWS},
	{"summary", PROFILE(report_summary), .accepts = A_WHERE | A_JSON},
	{"leaks", PROFILE(report_leaks), .accepts = A_WHERE | A_JSON | A_ROWS | A_MIN_AGE},
	{"stats", PROFILE(report_stats), .accepts = A_WHERE | A_JSON},
	{"info", REPLAY(report_info), .accepts = A_WHERE | A_JSON, .meta = true},
	{"diff", .run = run_diff, .min_files = 1, .max_files = 2, .accepts = A_JSON | A_VALUE | A_ROWS | A_DIFF},
	{"temporary", PROFILE(report_temporary), .accepts = A_WHERE | A_JSON | A_ROWS, .temporary = true},
	{"speedscope", PROFILE(report_speedscope), .accepts = A_WHERE},
	{"timeline", REPLAY(report_timeline), .accepts = A_JSON, .timeline = true},
	{"html", .run = run_html, .min_files = 1, .max_files = 1, .accepts = 0, .temporary = true},
};
#undef PROFILE
#undef REPLAY

static const struct cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

/* Options checked against the subcommand and each other, once. */
static int check_opts(const struct opts *o)
{
	const struct cmd *c = o->cmd;
	int nwhere = !!o->snapshot + o->at_set + o->peak;

	if (o->nr_files < c->min_files || o->nr_files > c->max_files) {
		if (c->max_files == 2)
			return usage_error("%s takes one file (two snapshots) or two files", c->name);
		return usage_error(o->nr_files ? "%s takes exactly one file" : "%s needs a record file", c->name);
	}
	if (nwhere && !(c->accepts & A_WHERE))
		return usage_error(c->accepts & A_DIFF ? "%s chooses its points with --from and --to"
						       : "%s covers the whole recording: no --snapshot, --at or --peak",
				   c->name);
	if (nwhere > 1)
		return usage_error("%s", "choose one of --snapshot, --at and --peak");
	if ((o->from || o->to || o->pprof_out || o->base_pprof_out || o->gate_set || o->lines) && !(c->accepts & A_DIFF))
		return usage_error("--from, --to, --pprof, --base-pprof, --max-growth and --lines apply to diff, not %s",
				   c->name);
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

int main(int argc, char **argv)
{
	struct opts o = {.value = V_INUSE_SPACE, .nodecount = 20};
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
	o.cmd = find_cmd(argv[1]);
	if (!o.cmd)
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
			o.nodecount_set = true;
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
			o.min_age_set = true;
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
			uint32_t *pids;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || !v || v > UINT32_MAX)
				return usage_error("invalid --pid '%s': expected a process id", optarg);
			if (o.nr_pids == 1024)
				return usage_error("%s", "at most 1024 --pid options");
			pids = realloc(o.pids, sizeof(*o.pids) * (o.nr_pids + 1));
			if (!pids)
				return EXIT_FAIL;
			o.pids = pids;
			o.pids[o.nr_pids++] = (uint32_t)v;
			break;
		}
		case OPT_COMM:
			if (!*optarg || strlen(optarg) > 15)
				return usage_error("invalid --comm '%s': a process name is 1 to 15 characters", optarg);
			o.comm = optarg;
			break;
		case OPT_DEBUG_DIR: {
			const char **d = realloc(o.debug_dirs, sizeof(*o.debug_dirs) * (size_t)(o.nr_debug_dirs + 1));

			if (!d)
				return EXIT_FAIL;
			o.debug_dirs = d;
			o.debug_dirs[o.nr_debug_dirs++] = optarg;
			break;
		}
		case OPT_NO_SYM:
			o.no_sym = true;
			break;
		case OPT_LINES:
			o.lines = true;
			break;
		case OPT_MAX_GROWTH:
			if (parse_amount(optarg, &o.gate))
				return usage_error("invalid --max-growth '%s': expected an amount (512k, 10m, 1000) or a "
						   "percent of the old total (5%%)", optarg);
			o.gate_set = true;
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
