// SPDX-License-Identifier: MIT
/* heapsnap-analyze's subcommands: one table (name, how it runs, how many files, which options
 * apply) and the ways they run: a profile report, a report of the recording itself, diff,
 * html. Each replays, builds, and hands rows to an emitter; errors become exit codes here. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "html.h"
#include "live_view.h"
#include "outfile.h"
#include "pprof.h"
#include "replay.h"
#include "rows.h"
#include "symbolize.h"

/* Output goes to stdout, or through outfile (common/outfile.h): a temporary file renamed into
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

int cmd__report_load(const struct replay *r, int ret)
{
	if (ret == EXIT_CORRUPT)
		fprintf(stderr, "heapsnap-analyze: error: %s; results cover the data before it\n", r->error);
	else if (ret)
		fprintf(stderr, "heapsnap-analyze: %s\n", r->error);
	else if (r->status == HS_READ_TRUNCATED)
		fprintf(stderr, "heapsnap-analyze: warning: %s\n", r->error);
	if (!ret || ret == EXIT_CORRUPT) {
		char desc[256], why[256];
		uint64_t lost = replay__lost_events(r, desc, sizeof(desc)), stopped = replay__stopped(r, why, sizeof(why));

		if (lost)
			fprintf(stderr, "heapsnap-analyze: warning: %s: %" PRIu64 " events were lost while recording (%s)%s%s; "
					"its figures lack them\n", r->path, lost, desc, stopped ? ", and " : "", why);
		else if (stopped)
			fprintf(stderr, "heapsnap-analyze: warning: %s: lost %s; its figures lack it\n", r->path, why);
	}
	return ret;
}

static int load(struct replay *r, const char *path, const struct replay_target *t)
{
	return cmd__report_load(r, replay__run(r, path, t));
}

static struct report_opts report_opts_of(const struct opts *o)
{
	return (struct report_opts){.json = o->json, .value = o->value, .nodecount = o->nodecount,
				    .min_age = o->min_age, .no_symbolize = o->no_sym, .file_label = o->files[0]};
}

static struct replay_target target_of(const struct opts *o)
{
	struct replay_target t = {.kind = STOP_END, .pids = o->pids, .nr_pids = o->nr_pids, .comm = o->comm,
				  .timeline = o->cmd->timeline, .temporary = o->cmd->temporary,
				  .py_final = o->cmd->py_final && !o->at_end};

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

/* The number of process P's command name and executable name in KEYS, interned there, or
 * -ENOMEM. The comm's length goes first, so that no two pairs make one key. */
static int64_t process_key(struct names *keys, const struct process *p)
{
	const char *exe = basename(p->exe);
	size_t n = strlen(p->comm) + strlen(exe) + 24;
	char *k = malloc(n);
	int64_t i;

	if (!k)
		return -ENOMEM;
	snprintf(k, n, "%zu:%s%s", strlen(p->comm), p->comm, exe);
	i = names__intern(keys, k);
	free(k);
	return i;
}

static int cmp_pid(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/* The processes of PATH that are those --pid selected in A, across recordings: by command
 * name and executable name (not its directory: two builds live in two trees), since pids
 * differ from run to run. In ascending order (struct replay_target). */
static int match_processes(const struct replay *a, const char *path, uint32_t **pids, uint32_t *nr)
{
	struct replay_target t = {.kind = STOP_META};
	struct names keys = {0};
	uint32_t nr_sel;
	int64_t k = 0;
	struct replay b;
	int ret = replay__run(&b, path, &t);

	*pids = NULL;
	*nr = 0;
	if (ret == EXIT_NODATA && b.have_session)
		ret = EXIT_OK;
	if (!usable(ret)) {
		ret = cmd__report_load(&b, ret);
		replay__free(&b);
		return ret;
	}
	/* A's selected processes' keys are the first numbers; a process of B matches one when
	 * its key's number is among them. */
	*pids = calloc(b.nr_procs ? b.nr_procs : 1, sizeof(**pids));
	for (uint32_t i = 0; *pids && k >= 0 && i < a->nr_procs; i++)
		if (a->procs[i].selected)
			k = process_key(&keys, &a->procs[i]);
	nr_sel = keys.nr;
	for (uint32_t i = 0; *pids && k >= 0 && i < b.nr_procs; i++)
		if ((k = process_key(&keys, &b.procs[i])) >= 0 && k < nr_sel)
			(*pids)[(*nr)++] = b.procs[i].pid;
	names__free(&keys);
	replay__free(&b);
	if (!*pids || k < 0)
		return EXIT_FAIL;
	qsort(*pids, *nr, sizeof(**pids), cmp_pid);
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
		/* Two files: each at its end, or for a Python process before its finalization. */
		ta.kind = o->from ? STOP_SNAPSHOT : STOP_END;
		tb.kind = o->to ? STOP_SNAPSHOT : STOP_END;
		ta.py_final = tb.py_final = true;
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
	ret = cmd__report_load(&ra, ret);
	if (!usable(ret)) {
		replay__free(&ra);
		return ret;
	}
	if (o->nr_files == 2 && o->nr_pids) {
		ret2 = match_processes(&ra, o->files[1], &pids_b, &nr_pids_b);
		if (ret2) {
			replay__free(&ra);
			free(pids_b);
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

	/* The first replay needs only the time range, snapshots and peak. */
	t.timeline = false;
	t.temporary = false;
	ret = replay__run(&r, o->files[0], &t);
	if (!usable(ret)) {
		ret = cmd__report_load(&r, ret);
		replay__free(&r);
		return ret;
	}
	err = html__plan(&r, &t, &h);
	replay__free(&r);
	if (err)
		return emit_status(err, "the HTML report");
	t.timeline = true;
	t.temporary = true;
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

/* ---- live ---- */

volatile sig_atomic_t cmd__follow_stop;

static void follow_on_signal(int sig)
{
	(void)sig;
	cmd__follow_stop = 1;
}

void cmd__follow_signals(void)
{
	struct sigaction sa = {.sa_handler = follow_on_signal}, old;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!sigaction(SIGINT, NULL, &old) && old.sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa, NULL);
}

static double live_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One update: top of the heap at the follower's moment, then a blank line (JSON: one line);
 * or the full-screen view V redrawn. */
static int live_update(struct replay_follow *f, struct replay *r, struct symbolizer *sym, const struct opts *o,
		       struct live_view *v, bool final)
{
	struct report_opts ro = report_opts_of(o);
	struct profile p;
	double moment;
	int err;

	moment = replay__follow_moment(f, r, final);
	if (build_profile(&p, r, sym))
		return EXIT_FAIL;
	if (v) {
		err = live_view__update(v, &p, moment, final);
	} else {
		err = report_top(&p, &ro, stdout);
		if (!err && !o->json)
			err = fputc('\n', stdout) == EOF ? -EIO : 0;
		if (!err && fflush(stdout))
			err = -errno;
	}
	profile__free(&p);
	replay__follow_resume(f, r);
	return emit_status(err, v ? "the live view" : "stdout");
}

/* The last update: the end of the recording, kept on screen until q (unless the view was
 * left already, or is leaving after its q stopped the recorder); then the terminal back. */
static int live_end(struct replay_follow *f, struct replay *r, struct symbolizer *sym, const struct opts *o,
		    struct live_view *v, bool quit)
{
	int ret = cmd__report_load(r, r->status == HS_READ_CORRUPT ? EXIT_CORRUPT : EXIT_OK);

	if (usable(ret)) {
		int ret2 = live_update(f, r, sym, o, v, true);

		ret = ret2 ? ret2 : ret;
	}
	while (v && !quit && !cmd__follow_stop && !live_view__quitting(v)) {
		struct pollfd pfd = {.fd = live_view__key_fd(v), .events = POLLIN};
		enum live_action a;

		a = live_view__keys(v);
		if (a == LIVE_QUIT)
			break;
		if (a == LIVE_UPDATE) {
			int ret2 = live_update(f, r, sym, o, v, true);

			ret = ret2 ? ret2 : ret;
			continue;
		}
		/* A terminal hung up (its window closed, ssh gone) answers no q: leave. */
		if (poll(&pfd, 1, 1000) > 0 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL)))
			break;
	}
	live_view__free(v);
	return ret;
}

/* The full-screen view, on a terminal unless --batch or --json; else text updates. */
static struct live_view *live_view_of(const struct opts *o)
{
	struct live_view *v = NULL;
	int err;

	if (o->batch || o->json || !isatty(1))
		return NULL;
	err = live_view__open(&v, &(struct live_view_opts){.label = o->files[0], .recorder = o->recorder});
	if (err)
		fprintf(stderr, "heapsnap-analyze: live: no full-screen view on this terminal (%s); printing text updates\n",
			err == -ENOENT ? "TERM names no terminal ncurses knows"
			: err == -ENOTTY || err == -ENXIO ? "no terminal to read keys from: /dev/tty and standard input"
							  : strerror(-err));
	return err ? NULL : v;
}

/* Follows the file as it is written; each update costs what was read since the last. Keys
 * are read between feeds; a finished recording stays on screen until q. */
static int run_live(const struct opts *o, struct symbolizer *sym)
{
	struct replay_target t = {.kind = STOP_END, .pids = o->pids, .nr_pids = o->nr_pids, .comm = o->comm};
	struct replay_follow *f;
	struct live_view *v;
	struct replay r;
	bool ended = false, quit = false;
	double next;
	int ret;

	v = live_view_of(o);
	t.timeline = v != NULL; /* the view's chart */
	ret = replay__follow_open(&r, o->files[0], &t, &f);
	if (ret) {
		live_view__free(v);
		fprintf(stderr, "heapsnap-analyze: %s\n", r.error);
		replay__free(&r);
		return ret;
	}
	cmd__follow_signals();
	next = live_now() + o->refresh;
	while (!ret && !ended && !cmd__follow_stop && !quit) {
		double now;
		bool now_please = false;

		ret = replay__follow_feed(f, &r, 1u << 16, &ended);
		if (v && !ret) {
			enum live_action a = live_view__keys(v);

			quit = a == LIVE_QUIT;
			now_please = a == LIVE_UPDATE;
		}
		if (ret || ended || cmd__follow_stop || quit)
			break;
		now = live_now();
		if (now >= next || now_please) {
			if (r.have_session && !(v && live_view__paused(v) && !now_please))
				ret = live_update(f, &r, sym, o, v, false);
			if (now >= next)
				next = next + o->refresh > now ? next + o->refresh : now + o->refresh;
		} else if (replay__follow_waiting(f)) {
			replay__follow_wait(f, (int)((next - now) * 1000) + 1, v ? live_view__key_fd(v) : -1);
		}
	}
	if (!ret && !r.have_session) {
		ret = r.status == HS_READ_CORRUPT ? EXIT_CORRUPT : EXIT_NODATA;
		live_view__free(v);
		v = NULL;
		fprintf(stderr, "heapsnap-analyze: no session header in %s%s%s\n", r.path, r.error[0] ? "; " : "",
			r.error);
	} else if (!ret) {
		ret = live_end(f, &r, sym, o, v, quit);
		if (!o->no_sym)
			symbolizer__report(sym, stderr);
	} else {
		live_view__free(v);
		v = NULL;
		cmd__report_load(&r, ret);
	}
	replay__follow_free(f);
	replay__free(&r);
	return ret;
}

/* One table: the name, how it runs, how many files, which options apply. */
#define PROFILE(fn) .run = run_profile, .profile_report = fn, .min_files = 1, .max_files = 1
#define REPLAY(fn) .run = run_replay, .replay_report = fn, .min_files = 1, .max_files = 1
static const struct cmd cmds[] = {
	{"pprof", PROFILE(emit_pprof), .accepts = A_WHERE, .binary = true, .py_final = true},
	{"collapsed", PROFILE(report_collapsed), .accepts = A_WHERE | A_VALUE, .py_final = true},
	{"top", PROFILE(report_top), .accepts = A_WHERE | A_JSON | A_VALUE | A_ROWS, .py_final = true},
	{"summary", PROFILE(report_summary), .accepts = A_WHERE | A_JSON, .py_final = true},
	{"leaks", PROFILE(report_leaks), .accepts = A_WHERE | A_JSON | A_ROWS | A_MIN_AGE, .py_final = true},
	{"stats", PROFILE(report_stats), .accepts = A_WHERE | A_JSON},
	{"info", REPLAY(report_info), .accepts = A_WHERE | A_JSON, .meta = true},
	{"diff", .run = run_diff, .min_files = 1, .max_files = 2, .accepts = A_JSON | A_VALUE | A_ROWS | A_DIFF},
	{"temporary", PROFILE(report_temporary), .accepts = A_WHERE | A_JSON | A_ROWS, .temporary = true},
	{"speedscope", PROFILE(report_speedscope), .accepts = A_WHERE, .py_final = true},
	{"timeline", REPLAY(report_timeline), .accepts = A_JSON, .timeline = true},
	{"live", .run = run_live, .min_files = 1, .max_files = 1, .accepts = A_JSON | A_VALUE | A_ROWS | A_LIVE},
	{"export", .run = run_export, .min_files = 1, .max_files = 1, .accepts = A_EXPORT},
	{"html", .run = run_html, .min_files = 1, .max_files = 1, .accepts = A_AT_END, .temporary = true, .py_final = true},
};
#undef PROFILE
#undef REPLAY

const struct cmd *cmd__find(const char *name)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}
