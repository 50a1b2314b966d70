// SPDX-License-Identifier: MIT
/* The recording session: open -> start (the way in) -> attach -> poll -> finish, with one
 * cleanup path. The way in is called through its way_ops only. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elfsyms.h"
#include "launch.h"
#include "nspid.h"
#include "output.h"
#include "pipeline.h"
#include "processes.h"
#include "procfs.h"
#include "ring_reader.h"
#include "session.h"
#include "signals.h"
#include "via.h"
#include "way.h"

static void write_header(struct session *s, char **argv)
{
	struct hs_record r = {.type = HS_REC_SESSION};
	char host[256] = "", cmdline[4096] = "", via[512], *attached = NULL;
	struct utsname u;
	struct timespec rt;
	size_t off = 0;

	gethostname(host, sizeof(host) - 1);
	uname(&u);
	clock_gettime(CLOCK_REALTIME, &rt);
	for (int i = 0; argv && argv[i]; i++) {
		int n = snprintf(cmdline + off, sizeof(cmdline) - off, "%s%s", i ? " " : "", argv[i]);

		if (n < 0 || (size_t)n >= sizeof(cmdline) - off)
			break;
		off += (size_t)n;
	}
	r.session.tool_version = HEAPSNAP_VERSION;
	r.session.hostname = host;
	r.session.kernel = u.release;
	/* Attached: the target's own command line, as ps shows it. */
	if (s->o->pid && (attached = proc_read_string(s->o->pid, "cmdline")))
		snprintf(cmdline, sizeof(cmdline), "%s", attached);
	free(attached);
	r.session.cmdline = cmdline;
	r.session.tick_ns = TICK_NS;
	r.session.monotonic_start_ns = s->out.mono_start;
	r.session.realtime_start_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec -
				      (mono_ns() - s->out.mono_start);
	r.session.sample_rate = s->o->sample_rate;
	r.session.stack_mode = (uint32_t)s->o->stack_mode;
	r.session.max_stack = s->o->max_stack;
	r.session.flags = (s->o->all ? 1 : 0) | (s->o->pid ? 2 : 0);
	r.session.nr_probes = (uint32_t)s->nr_probes;
	r.session.probes = s->probes;
	r.session.via = s->via_why;
	/* Said in the file, for `info`: a Python program's stacks end in the eval loop. */
	if (s->via == VIA_BPF && s->via_why) {
		snprintf(via, sizeof(via), "%s; Python frames not captured: the BPF way reads no interpreter's frames "
			 "(--via preload, or -p with --via inject, read them)", s->via_why);
		r.session.via = via;
	}
	write_rec(&s->out, &r);
	s->out.header_written = true;
}

/* Start-up takes up to a second, verifying the programs: a SIGINT or SIGTERM then ends the
 * recorder cleanly, with nothing attached, no file, and the held command never run. */
static int interrupted(struct session *s)
{
	rec_signals__read(&s->sig);
	if (!s->sig.stop)
		return 0;
	rec_warnx("%s during start-up: stopping; nothing was recorded", strsignal(s->sig.stop));
	return -EINTR;
}

/* How long the loop may sleep: until the next thing it must do on time. */
static int poll_timeout_ms(uint64_t now, const uint64_t *when, int n, int max_ms)
{
	uint64_t t = now + (uint64_t)max_ms * 1000000ull;

	for (int i = 0; i < n; i++)
		if (when[i] < t)
			t = when[i];
	return t <= now ? 0 : (int)((t - now + 999999) / 1000000);
}

static void print_summary(struct session *s, double secs)
{
	struct record_writer_counts c;
	uint64_t bytes = record_writer__bytes_written(s->out.w), ev;
	int werr = record_writer__error(s->out.w);

	/* What the file holds, not what was handed to the writer: a failed write loses its frame
	 * and everything after it. */
	record_writer__counts(s->out.w, &c);
	ev = c.allocs + c.frees;
	if (werr)
		rec_warnx("%s is INCOMPLETE: writing it failed (%s); it holds %" PRIu64 " allocations, %" PRIu64
			  " frees, %" PRIu64 " stacks (%" PRIu64 " bytes), readable up to there; the %" PRIu64
			  " allocations and %" PRIu64 " frees recorded after them in %.1fs are lost",
			  s->o->output, strerror(-werr), c.allocs, c.frees, c.stacks, bytes,
			  s->n_alloc > c.allocs ? s->n_alloc - c.allocs : 0, s->n_free > c.frees ? s->n_free - c.frees : 0,
			  secs);
	else
		rec_warnx("wrote %s: %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64 " stacks in %.1fs; %" PRIu64
			  " bytes (%.3g bytes/event)",
			  s->o->export_in >= 0 ? "the record stream to --export" : s->o->output, c.allocs, c.frees, c.stacks,
			  secs, bytes, ev ? (double)bytes / (double)ev : 0.0);
	rec_warnx("live at the end: %.0f bytes%s; peak %.0f bytes", s->live_est > 0 ? s->live_est : 0,
	      s->o->sample_rate ? " (estimated from samples)" : "", s->peak_est);
	if (s->o->pid)
		rec_warnx("note: attached to a running process: live bytes exclude memory allocated before the attach "
		      "(%" PRIu64 " frees of unknown pointers)", s->cnt[HS_CNT_UNKNOWN_FREE]);
	if (s->o->stats) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "recorder: cpu %.3fs user %.3fs sys, peak rss %ld KiB; raw records %" PRIu64
				" bytes, file %" PRIu64 " bytes\n",
			(double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
			(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss,
			record_writer__raw_bytes(s->out.w), bytes);
		fprintf(stderr, "counters:\n");
		for (int k = 0; k < HS_CNT__MAX; k++)
			fprintf(stderr, "  %-24s %" PRIu64 "\n", counter_names[k], s->cnt[k]);
	}
}

/* ---- the run: open -> start -> attach -> poll -> finish ---- */

/* Everything that can fail before a probe or a process is touched. */
static int run_open(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
	struct record_writer_opts wo = {0};
	const char *why = NULL;
	int err;

	if (o->pid && kill(o->pid, 0) && errno == ESRCH) {
		rec_warnx("process %d not found", o->pid);
		return -ESRCH;
	}
	if (o->argv) {
		u->exe = resolve_command(o->argv[0]);
		if (!u->exe) {
			rec_warnx("command not found or not executable: %s", o->argv[0]);
			u->not_found = true;
			return -ENOENT;
		}
	}
	err = choose_via(s, u);
	if (err)
		return err;
	if (s->way->check && (err = s->way->check(s)))
		return err;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	for (int i = 0; i < o->nr_probes; i++) {
		uint64_t off;

		err = elf_find_symbol(o->probes[i].lib, o->probes[i].symbol, &off);
		if (err) {
			rec_warnx("--probe: %s has no function %s%s%s", o->probes[i].lib, o->probes[i].symbol,
			      err == -ENOENT ? "" : ": ", err == -ENOENT ? "" : strerror(-err));
			return err;
		}
	}
	/* The output before anything is attached: an unwritable path fails first. */
	wo.why = &why;
	s->out.path = o->output;
	err = record_writer__open(o->output, &wo, &s->out.w);
	if (err) {
		rec_warnx("cannot write %s: %s", o->output, why ? why : strerror(-err));
		return err;
	}
	return interrupted(s);
}

/* In the held command, between fork and exec: what the way in needs of its environment. */
static int child_env(const void *ctx)
{
	const struct session *s = ctx;

	return s->way->child_env(s);
}

/* -p without --children: the descendants already running are not recorded; said, with how
 * many and how to take them. What the process forks from now on is followed. */
static void warn_children_left(struct session *s)
{
	const struct rec_opts *o = s->o;
	int n;

	if (o->children)
		return;
	n = proc_count_descendants(o->pid);
	if (n > 0)
		rec_warnx("note: process %d has %d child process%s running (its descendants), not recorded: add "
			  "--children to record %s too%s", o->pid, n, n == 1 ? "" : "es", n == 1 ? "it" : "them",
			  o->follow_forks ? "; those it forks from now on are recorded" : "");
}

/* The held command, the way's attach (BPF: probes), the header; then the command runs. */
static int start_export(struct session *s, struct run *u);

static int run_attach(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int err;

	if ((err = interrupted(s)))
		return err;
	s->out.mono_start = mono_ns();
	if (o->argv) {
		s->child = start_held_child(o->argv, u->exe, &u->go_fd, s->way->child_env ? child_env : NULL, s);
		if (s->child < 0) {
			err = s->child;
			rec_warnx("cannot start %s: %s", u->exe, strerror(-err));
			s->child = 0;
			return err;
		}
	}
	if (s->way->attach && (err = s->way->attach(s, u)))
		return err;
	if ((err = interrupted(s)))
		return err;
	write_header(s, o->argv);
	/* The file takes its name once it reads as a recording. */
	err = s->out.err ? s->out.err : record_writer__flush(s->out.w);
	if (!err)
		err = record_writer__publish(s->out.w);
	if (err) {
		rec_warnx("cannot create %s: %s", o->output, strerror(-err));
		return err;
	}
	/* --live: the view follows the file from here, in a process of its own, never in the
	 * target nor in this loop. */
	if (o->live) {
		int go = -1;

		u->live_pid = start_live_follower(o->output, o->refresh, false, &go);
		if (u->live_pid < 0) {
			rec_warnx("cannot start the live view: %s", strerror(-u->live_pid));
			u->live_pid = 0;
		} else {
			if (s->way->helper_started)
				s->way->helper_started(s, u->live_pid);
			close(go);
		}
	}
	if (o->export_url && (err = start_export(s, u)))
		return err;
	if (o->pid) {
		/* The target, and with --children the descendants the way took at its attach: no
		 * event has been read yet, so every process known is one of those. */
		for (int i = 0; i < s->nr_procs; i++)
			write_attached(s, s->procs[i].pid);
		rec_warnx("attached to %d%s; Ctrl-C to stop, SIGUSR1 to mark a snapshot", o->pid,
			  s->nr_procs > 1 ? " and its children" : "");
		if (s->nr_procs > 1)
			rec_warnx("recording %d child processes of %d that were already running", s->nr_procs - 1, o->pid);
		else
			warn_children_left(s);
	}
	if (o->all)
		rec_warnx("recording every process; Ctrl-C to stop, SIGUSR1 to mark a snapshot");
	if (s->child) {
		/* Released: the first allocation after exec is already probed, or hooked. */
		if (write(u->go_fd, "g", 1) != 1)
			return -errno;
		close(u->go_fd);
		u->go_fd = -1;
	}
	return 0;
}

void export_report__read(struct export_report *e, int timeout_ms)
{
	struct pollfd pfd = {.fd = e->fd, .events = POLLIN};
	char *nl;
	ssize_t n;

	while (e->fd >= 0 && poll(&pfd, 1, timeout_ms) > 0) {
		n = read(e->fd, e->buf + e->len, sizeof(e->buf) - 1 - e->len);
		if (n <= 0) {
			close(e->fd);
			e->fd = -1;
			e->ended = true;
			break;
		}
		e->len += (size_t)n;
		e->buf[e->len] = 0;
		while ((nl = strchr(e->buf, '\n'))) {
			*nl = 0;
			if (!strncmp(e->buf, "ready", 5))
				e->ready = true;
			if (!strncmp(e->buf, "last", 4))
				e->last = true;
			sscanf(strchr(e->buf, ' ') ? strchr(e->buf, ' ') : "",
			       " intervals=%" SCNu64 " sent=%" SCNu64 " lost=%" SCNu64 " rejected=%" SCNu64, &e->intervals,
			       &e->sent, &e->lost, &e->rejected);
			e->len -= (size_t)(nl + 1 - e->buf);
			memmove(e->buf, nl + 1, e->len + 1);
			timeout_ms = 0; /* a line read: the rest only if already there */
		}
		if (e->len == sizeof(e->buf) - 1)
			e->len = 0; /* no line that long is ever written */
	}
}

/* --export: the exporter started, and its word that it reached the destination waited for
 * (a URL that cannot be parsed or reached ends the recording here, as it says why). */
static int start_export(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int go = -1;

	u->export_pid = start_export_follower(o, o->export_in, &go, &s->exp.fd);
	if (o->export_in >= 0)
		close(o->export_in);
	if (u->export_pid < 0) {
		rec_warnx("cannot start the exporter: %s", strerror(-u->export_pid));
		u->export_pid = 0;
		return -EIO;
	}
	if (s->way->helper_started)
		s->way->helper_started(s, u->export_pid);
	close(go);
	for (int i = 0; i < 300 && !s->exp.ready && !s->exp.ended; i++)
		export_report__read(&s->exp, 100);
	if (!s->exp.ready) {
		rec_warnx("--export %s: the exporter did not start%s", o->export_url,
			  s->exp.ended ? " (its message is above)" : " within 30 s");
		kill(u->export_pid, SIGTERM);
		waitpid(u->export_pid, NULL, 0);
		u->export_pid = 0;
		return -EIO;
	}
	if (o->verbose)
		rec_warnx("exporting to %s every %.6gs (heapsnap-analyze export, pid %d)", o->export_url,
			  o->export_interval, (int)u->export_pid);
	return 0;
}

/* The frame so far written, after a HORIZON: every event still to come is stamped after
 * HORIZON (drain's), less the merge's slack for one committed late, and is written to a
 * quantum below (format/events3.c): a follower may show the heap up to there. */
static void flush_frame(struct session *s, uint64_t horizon)
{
	uint64_t q = HS_TIME_QUANTUM_NS / TICK_NS;
	uint64_t t = ticks(&s->out, horizon > MERGE_SLACK_NS ? horizon - MERGE_SLACK_NS : 0);
	struct hs_record r = {.type = HS_REC_HORIZON, .time = t - t % q};
	int err;

	write_rec(&s->out, &r);
	err = record_writer__flush(s->out.w);
	if (err && !s->out.err) {
		s->out.err = err;
		rec_warnx("failed to write %s: %s", s->o->output, strerror(-err));
	}
}

/* Once a second: the counters, -a's new mappings, and a frame flushed. */
static void poll_tick(struct session *s, uint64_t horizon)
{
	read_counters(s);
	export_report__read(&s->exp, 0);
	warn_losses(s);
	write_counters(s, HS_REC_COUNTERS);
	if (s->o->all)
		rescan_all_maps(s, false);
	/* One frame a second at least: a crash loses at most the last second. */
	flush_frame(s, horizon);
}

/* The SIGUSR1s read so far become snapshots pending at this moment: the sender's events
 * were all in its rings when it sent the signal, so each one is stamped before now. */
static void signals_pending(struct session *s, struct run *u)
{
	uint64_t now;

	if (!s->sig.snapshots)
		return;
	now = mono_ns();
	if (u->nr_snaps == (int)(sizeof(u->snaps) / sizeof(u->snaps[0])))
		u->snaps[u->nr_snaps - 1].n += s->sig.snapshots; /* a storm: the last moment holds them all */
	else
		u->snaps[u->nr_snaps++] = (struct pending_snap){now, s->sig.snapshots};
	s->sig.snapshots = 0;
}

/* Places the pending snapshots whose rings can be read up to their moment: every event
 * stamped before it handled, none after (a free the program made once it had signalled is
 * not in the snapshot). That is MERGE_SLACK_NS after the moment, by when every producer
 * has committed what it stamped before it; FORCE (the end) waits for that. Each is
 * flushed, so that it can be read from the file at once. */
static void place_snapshots(struct session *s, struct run *u, bool force)
{
	while (u->nr_snaps && !s->out.err) {
		struct pending_snap p = u->snaps[0];
		uint64_t ready = p.at + MERGE_SLACK_NS;
		int err;

		if (mono_ns() < ready) {
			struct timespec ts = {(time_t)(ready / 1000000000ull), (long)(ready % 1000000000ull)};

			if (!force)
				return;
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
		drain_upto(s, p.at);
		for (unsigned i = 0; i < p.n; i++)
			snapshot(s, HS_SNAP_SIGNAL, NULL, ticks(&s->out, p.at), 0);
		memmove(u->snaps, u->snaps + 1, sizeof(u->snaps[0]) * (size_t)--u->nr_snaps);
		err = record_writer__flush(s->out.w);
		if (err && !s->out.err) {
			s->out.err = err;
			rec_warnx("failed to write %s: %s", s->o->output, strerror(-err));
		}
	}
}

/* Whether the loop should stop: the command reaped, the process gone, a signal, the end. */
static bool poll_done(struct session *s, uint64_t now, uint64_t deadline)
{
	bool stopping = false;

	if (s->sig.child && s->child) {
		s->sig.child = false;
		if (waitpid(s->child, &s->child_status, WNOHANG) == s->child) {
			s->child_reaped = true;
			if (s->way->child_reaped)
				s->way->child_reaped(s);
			stopping = true;
		}
	}
	if (s->o->pid && kill(s->o->pid, 0) && errno == ESRCH)
		stopping = true;
	return stopping || s->sig.stop || now >= deadline;
}

static void run_poll(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	uint64_t next_tick, next_rss, next_interval, deadline, next_flush, flush_ns;
	bool stopping = false, held = false, pressed = false;
	int err;

	u->t_start = mono_ns();
	next_tick = u->t_start + 1000000000ull;
	flush_ns = o->flush_interval > 0 && o->flush_interval < 1 ? (uint64_t)(o->flush_interval * 1e9) : 1000000000ull;
	next_flush = u->t_start + flush_ns;
	next_rss = u->t_start + (uint64_t)(o->rss_interval * 1e9);
	next_interval = o->interval > 0 ? u->t_start + (uint64_t)(o->interval * 1e9) : UINT64_MAX;
	deadline = o->duration > 0 ? u->t_start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	while (!stopping && !s->out.err) {
		uint64_t now, horizon, due[] = {next_interval, next_rss, next_tick, deadline, next_flush,
						u->nr_snaps ? u->snaps[0].at + MERGE_SLACK_NS : UINT64_MAX};
		bool tick;

		/* Events held for the merge go once they are old enough: soon, when they fill a ring
		 * so far that its producer will not wake us again before it is full. */
		err = wait_rings(s, poll_timeout_ms(mono_ns(), due, 6,
						    pressed ? (int)(MERGE_SLACK_NS / 1000000)
						    : held  ? s->way->held_ms
							    : s->way->poll_ms));
		if (err) {
			rec_warnx("waiting on the ring buffers failed: %s", strerror(-err));
			break;
		}
		if (s->way->woken)
			s->way->woken(s);
		/* Signals first: a snapshot's moment is when its signal was read, and no event after
		 * it may be handled before the snapshot is placed. Read after the drain, the
		 * signal of a program that had just filled its ring found the snapshot placed
		 * before the last 20,632 of its 200,000 blocks. */
		rec_signals__read(&s->sig);
		signals_pending(s, u);
		place_snapshots(s, u, false);
		horizon = drain(s, false, u->nr_snaps ? u->snaps[0].at : UINT64_MAX, &held, &pressed);
		now = mono_ns();
		tick = now >= next_tick;
		if (s->way->polled)
			s->way->polled(s, now, tick);
		if (now >= next_interval) {
			snapshot(s, HS_SNAP_INTERVAL, NULL, ticks(&s->out, horizon), 0);
			next_interval += (uint64_t)(o->interval * 1e9);
		}
		if (now >= next_rss) {
			sample_rss(s);
			next_rss = now + (uint64_t)(o->rss_interval * 1e9);
		}
		if (tick) {
			poll_tick(s, horizon);
			next_tick = now + 1000000000ull;
			next_flush = now + flush_ns;
		} else if (now >= next_flush) {
			flush_frame(s, horizon);
			next_flush = now + flush_ns;
		}
		stopping = poll_done(s, now, deadline);
	}
}

/* The footer frame holds at most 16 MiB: past that the writer keeps the first snapshot
 * copies only. Nothing is lost (the analyzer lists snapshots from the data frames), but a
 * reader of the footer alone sees fewer, so say so. */
static void warn_footer(const struct record_writer *w, const char *path)
{
	struct record_writer_footer f;

	record_writer__footer(w, &f);
	if (f.snapshot_copies < f.snapshots)
		rec_warnx("%s: the footer holds the first %" PRIu64 " of the %" PRIu64
			  " snapshots (its 16 MiB limit); all of them are in the data, where heapsnap-analyze reads them",
			  path, f.snapshot_copies, f.snapshots);
}

static int run_finish(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	bool exited = s->child_reaped || (o->pid && kill(o->pid, 0));
	bool held, pressed;
	int err;

	/* Hooks still running in processes left behind go dormant now; what they wrote before
	 * is drained below. */
	if (s->way->quiesce)
		s->way->quiesce(s);
	rec_signals__read(&s->sig);
	signals_pending(s, u);
	place_snapshots(s, u, true);
	drain(s, true, UINT64_MAX, &held, &pressed);
	/* Injected: the library puts every GOT entry back, and says so. */
	if (s->way->finish)
		s->way->finish(s);
	read_counters(s);
	snapshot(s, exited ? HS_SNAP_EXIT : HS_SNAP_END, exited ? "exit" : "end", ticks(&s->out, mono_ns()), 0);
	if (o->snapshot_at_peak && s->peak_time) {
		double live = s->live_est;

		s->live_est = s->peak_est;
		snapshot(s, HS_SNAP_PEAK, "peak", s->peak_time, 0);
		s->live_est = live;
	}
	/* The exporter sends its last interval, and says what became of it, before the
	 * counters that keep it are written. */
	if (u->export_pid > 0 && !s->out.err) {
		flush_frame(s, mono_ns());
		kill(u->export_pid, SIGUSR2);
		for (int i = 0; i < 30 && !s->exp.last && !s->exp.ended; i++)
			export_report__read(&s->exp, 1000);
	}
	write_counters(s, HS_REC_END);
	err = s->out.err;
	if (!err) {
		err = record_writer__close(s->out.w);
		if (err)
			rec_warnx("failed to finish %s: %s", o->output, strerror(-err));
		else
			warn_footer(s->out.w, o->output);
	}
	/* Said in run_cleanup, after the way has let go and the view is done. */
	u->summary = true;
	u->elapsed = (double)(mono_ns() - u->t_start) / 1e9;
	return err;
}

/* The exit status: the command's own, 128 + a signal that stopped start-up, 127 for a
 * command not found. */
static int exit_code(const struct session *s, const struct run *u, int err)
{
	int code = 0;

	if (s->sig.stop && !s->out.header_written)
		return 128 + s->sig.stop;
	if (s->child) {
		if (WIFEXITED(s->child_status))
			code = WEXITSTATUS(s->child_status);
		else if (WIFSIGNALED(s->child_status))
			code = 128 + WTERMSIG(s->child_status);
		if (err && !code)
			code = 1;
		return code;
	}
	if (u->not_found)
		return 127;
	return err ? 1 : 0;
}

static int run_cleanup(struct session *s, struct run *u, int err)
{
	if (u->go_fd >= 0)
		close(u->go_fd); /* a held child that never ran exits on EOF */
	if (s->way && s->way->detach)
		s->way->detach(s);
	/* The view ends with the footer it reads (the full-screen one at its q, which may be long
	 * after); without one (a failure), it is told to. Waited for once the probes are gone, so
	 * that no process keeps trapping meanwhile; what follows is said on the terminal it gave
	 * back, after its last update. */
	if (u->live_pid > 0) {
		if (err || s->out.err)
			kill(u->live_pid, SIGTERM);
		waitpid(u->live_pid, NULL, 0);
		u->live_pid = 0;
	}
	/* The exporter sends its last interval and drains its queue (its own timeout). */
	if (u->export_pid > 0) {
		if (err || s->out.err)
			kill(u->export_pid, SIGTERM);
		while (!s->exp.ended)
			export_report__read(&s->exp, 1000);
		waitpid(u->export_pid, NULL, 0);
		u->export_pid = 0;
	}
	if (u->summary) {
		warn_losses(s);
		print_summary(s, u->elapsed);
		if (s->o->export_url)
			rec_warnx("exported %" PRIu64 " profiles of %" PRIu64 " intervals to %s; lost.export_profiles %" PRIu64
				  ", lost.export_rejected %" PRIu64,
				  s->exp.sent, s->exp.intervals, s->o->export_url, s->exp.lost, s->exp.rejected);
	}
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->child && !s->child_reaped) {
		if (err && !s->out.header_written)
			kill(s->child, SIGKILL);
		waitpid(s->child, &s->child_status, 0);
		s->child_reaped = true;
	}
	if (s->way && s->way->free)
		s->way->free(s);
	record_writer__free(s->out.w);
	s->out.w = NULL;
	free(s->rings);
	free(s->merge);
	nspid__free(s->nsx);
	objects__free(&s->objs);
	procs_free(s);
	pipeline_free(s);
	free(u->exe);
	return exit_code(s, u, err);
}

/* The way in: its start, or for -p whose injection was refused, BPF's. */
static int run_start(struct session *s, struct run *u)
{
	int err = s->way->start(s, u);

	if (err <= 0)
		return err;
	s->way->free(s);
	free(s->rings);
	s->rings = NULL;
	free(s->merge);
	s->merge = NULL;
	if (s->epfd >= 0)
		close(s->epfd); /* BPF makes its own set of rings to wait on */
	s->epfd = -1;
	s->way = &bpf_way;
	s->via = VIA_BPF;
	s->via_why = "bpf: the injection was refused";
	err = s->way->check(s);
	return err ? err : s->way->start(s, u);
}

int recorder_run(const struct rec_opts *o)
{
	struct session sess = {.o = o, .pool_free = UINT32_MAX, .epfd = -1, .exp.fd = -1}, *s = &sess;
	struct run u = {.go_fd = -1};
	int err;

	err = run_open(s, &u);
	if (!err)
		err = run_start(s, &u);
	if (!err)
		err = run_attach(s, &u);
	if (!err) {
		run_poll(s, &u);
		err = run_finish(s, &u);
	}
	return run_cleanup(s, &u, err);
}
