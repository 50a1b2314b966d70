// SPDX-License-Identifier: MIT
/* The recording session: open -> start (BPF or in-process) -> attach -> poll -> finish,
 * with one cleanup path. */
#include "session.h"

const char *const counter_names[HS_CNT__MAX] = {
	[HS_CNT_RINGBUF_FULL] = "lost.ringbuf_full",
	[HS_CNT_LIVE_FULL] = "lost.live_map_full",
	[HS_CNT_STACK_TRUNCATED] = "stacks.cut_at_max_stack",
	[HS_CNT_MISSED_URETPROBE] = "lost.missed_uretprobe",
	[HS_CNT_UNKNOWN_FREE] = "frees.unknown",
	[HS_CNT_STACK_ERROR] = "stacks.fp_walk_stopped",
	[HS_CNT_THREAD_FULL] = "lost.thread_map_full",
	[HS_CNT_ALLOC_CALLS] = "calls.alloc",
	[HS_CNT_FREE_CALLS] = "calls.free",
	[HS_CNT_NESTED] = "calls.nested",
	[HS_CNT_SAMPLED] = "sampler.sampled",
	[HS_CNT_FAILED_ALLOC] = "calls.failed_alloc",
	[HS_CNT_STACKS_NEW] = "stacks.sent",
	[HS_CNT_DWARF_TRUNCATED] = "stacks.dwarf_window_short",
	[HS_CNT_UNW_NO_MODULE] = "stacks.unwind_no_module",
	[HS_CNT_UNW_NO_TABLE] = "stacks.unwind_no_table",
	[HS_CNT_UNW_NO_ROW] = "stacks.unwind_no_row",
	[HS_CNT_UNW_EXPRESSION] = "stacks.unwind_expression",
	[HS_CNT_UNW_BAD_FRAME] = "stacks.unwind_bad_frame",
	[HS_CNT_UNW_FP_LOST] = "stacks.unwind_fp_lost",
	[HS_CNT_UNW_DWARF_COPY] = "stacks.unwind_copied_instead",
	[HS_CNT_UNW_FP_INSTEAD] = "stacks.unwind_fp_instead",
	[HS_CNT_PY_CODES] = "python.code_objects",
	[HS_CNT_PY_WALK_STOPPED] = "python.walk_stopped",
	[HS_CNT_PY_UNMATCHED] = "python.eval_frames_unmatched",
	[HS_CNT_PY_NOT_WALKED] = "python.not_walked",
	[HS_CNT_PY_TABLE_DROPPED] = "python.line_table_dropped",
	[HS_CNT_PY_PYMEM] = "python.pymem_wrapped",
	[HS_CNT_PY_MAPS_READ] = "python.maps_read",
	[HS_CNT_PY_UNSUPPORTED] = "python.unsupported",
};

void rec_warnx(const char *fmt, ...)
{
	va_list ap;

	fputs("heapsnap-record: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ticks(const struct session *s, uint64_t ns)
{
	return ns > s->mono_start ? (ns - s->mono_start) / TICK_NS : 0;
}

void write_rec(struct session *s, const struct hs_record *r)
{
	int err;

	if (s->err)
		return;
	err = record_writer__write(s->w, r);
	if (err) {
		s->err = err;
		rec_warnx("failed to write %s: %s; stopping", s->o->output, strerror(-err));
	}
}

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
	r.session.monotonic_start_ns = s->mono_start;
	r.session.realtime_start_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec -
				      (mono_ns() - s->mono_start);
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
	write_rec(s, &r);
	s->header_written = true;
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
	uint64_t bytes = record_writer__bytes_written(s->w), ev;
	int werr = record_writer__error(s->w);

	/* What the file holds, not what was handed to the writer: a failed write loses its frame
	 * and everything after it. */
	record_writer__counts(s->w, &c);
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
			  " bytes (%.2f bytes/event)",
			  s->o->output, c.allocs, c.frees, c.stacks, secs, bytes, ev ? (double)bytes / (double)ev : 0.0);
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
			record_writer__raw_bytes(s->w), bytes);
		fprintf(stderr, "counters:\n");
		for (int k = 0; k < HS_CNT__MAX; k++)
			fprintf(stderr, "  %-24s %" PRIu64 "\n", counter_names[k], s->cnt[k]);
	}
}

/* ---- the run: open -> start (BPF or in-process) -> attach -> poll -> finish ---- */


/* Which way in, and why: said with -v and kept in the file. */
static int choose_via(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	bool bpf_only = o->nr_probes || o->libc || o->noop || o->probe_entry || o->probe_links != LINKS_AUTO;
	struct stat st;

	s->via = o->via;
	if (o->via == VIA_AUTO) {
		if (o->pid && bpf_only)
			s->via = VIA_BPF, s->via_why = "bpf: an option of the probes (--probe, --libc, --noop-probes, ...)";
		else if (o->pid)
			s->via = VIA_INJECT, s->via_why = "inject: libheapsnap.so loaded into the running process";
		else if (o->all)
			s->via = VIA_BPF, s->via_why = "bpf: every process on the host";
		else if (bpf_only)
			s->via = VIA_BPF, s->via_why = "bpf: an option of the probes (--probe, --libc, --noop-probes, ...)";
		else if (!stat(u->exe, &st) && (st.st_mode & (S_ISUID | S_ISGID)))
			s->via = VIA_BPF, s->via_why = "bpf: a setuid or setgid program ignores LD_PRELOAD";
		else if (!elf_is_dynamic(u->exe) && !is_script(u->exe))
			s->via = VIA_BPF, s->via_why = "bpf: a static binary loads no preloaded library";
		else
			s->via = VIA_PRELOAD, s->via_why = "preload: a launched, dynamically linked command";
	} else if (o->via == VIA_PRELOAD || o->via == VIA_INJECT) {
		bool inject = o->via == VIA_INJECT;

		s->via_why = inject ? "inject: asked for with --via inject" : "preload: asked for with --via preload";
		if (inject && !o->pid) {
			rec_warnx("--via inject attaches to a running process (-p PID); a command is preloaded (--via preload)");
			return -EINVAL;
		}
		if (!inject && !o->argv) {
			rec_warnx("--via preload records a command it starts (-- COMMAND); -p is injected (--via inject), -a uses BPF");
			return -EINVAL;
		}
		if (bpf_only) {
			rec_warnx("--via %s: that probe option (--probe, --libc, --noop-probes, --probe-links, "
			      "--probe-at-entry) is BPF's alone; use --via bpf", inject ? "inject" : "preload");
			return -EINVAL;
		}
	} else {
		s->via_why = "bpf: asked for with --via bpf";
	}
	if (o->verbose && s->via != VIA_INJECT)
		rec_warnx("recording via %s", s->via_why);
	return 0;
}

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
	if (s->via == VIA_BPF) {
		err = check_privileges();
		if (err)
			return err;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
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
	err = record_writer__open(o->output, &wo, &s->w);
	if (err) {
		rec_warnx("cannot write %s: %s", o->output, why ? why : strerror(-err));
		return err;
	}
	return interrupted(s);
}

static int use_shm_rings(struct session *s);

/* In-process: the shared memory and its rings, read as the BPF rings are. */
static int preload_start(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int err;

	s->lib = preload__find_lib();
	if (!s->lib) {
		rec_warnx("cannot find libheapsnap.so next to heapsnap-record or in ../lib/heapsnap/ (set HEAPSNAP_LIB)");
		return -ENOENT;
	}
	/* A ring per thread of the targets, claimed at its first event. */
	u->ring_bytes = PRELOAD_RING_BYTES;
	err = preload__open(PRELOAD_RINGS, u->ring_bytes, o->sample_rate, (uint32_t)o->stack_mode, o->max_stack,
			    o->dwarf_bytes, &s->pre);
	if (err) {
		rec_warnx("cannot create the memory shared with the command: %s", strerror(-err));
		return err;
	}
	return use_shm_rings(s);
}

/* The shared memory's rings, read as the BPF rings are. */
static int use_shm_rings(struct session *s)
{
	uint32_t nr, bytes;

	preload__geometry(s->pre, &nr, &bytes);
	s->nr_rings = (int)nr;
	s->ring_bytes = bytes;
	s->rings = calloc(nr, sizeof(*s->rings));
	if (!s->rings)
		return -ENOMEM;
	for (uint32_t i = 0; i < nr; i++) {
		struct hs_shm_ring *r = &preload__hdr(s->pre)->rings[i];

		ring_use_memory(&s->rings[i], &r->cons, &r->prod, preload__ring_data(s->pre, i), bytes);
	}
	preload__heartbeat(s->pre, mono_ns());
	return rings_epoll(s, preload__wake_fd(s->pre));
}

static int inject_interrupted(void *ctx)
{
	struct session *s = ctx;

	rec_signals__read(&s->sig);
	return s->sig.stop != 0;
}

/* The calls the trampoline held until the hooks were in place, and those it let go on
 * unrecorded (a wait that ran out, a fork child made meanwhile): a loss, said and counted. */
static void inject_counts(struct session *s, bool final)
{
	uint64_t passed, held, timed_out;

	/* Read at the start, every second and at the end: the process may be gone by then, and
	 * its counts with it. They only grow. */
	if (!inject__counts(s->inj, &passed, &held, &timed_out)) {
		s->inj_passed = passed > s->inj_passed ? passed : s->inj_passed;
		s->inj_held = held > s->inj_held ? held : s->inj_held;
		s->inj_timed_out = timed_out > s->inj_timed_out ? timed_out : s->inj_timed_out;
	}
	if (!final)
		return;
	if (s->o->verbose)
		rec_warnx("%" PRIu64 " allocator calls of process %d waited in the trampoline for the hooks", s->inj_held,
			  s->o->pid);
	if (s->inj_passed)
		rec_warnx("warning: %" PRIu64 " allocator calls made while the library loaded went by unrecorded "
			  "(lost.inject_unhooked_calls; %" PRIu64 " of them waited --attach-hold out, the rest were "
			  "in fork children made meanwhile or in modules the library did not hook)",
			  s->inj_passed, s->inj_timed_out);
}

/* Injected: the library loaded into the running process, its memory read as preload's. */
static int inject_start(struct session *s, struct run *u, char *why, size_t why_len, bool *touched)
{
	const struct rec_opts *o = s->o;
	static uint64_t thresholds[HS_NR_THRESHOLDS];
	struct inject_opts io = {
		.sample_rate = o->sample_rate, .stack_mode = (uint32_t)o->stack_mode, .max_stack = o->max_stack,
		.dwarf_bytes = o->dwarf_bytes, .nr_rings = PRELOAD_RINGS, .ring_bytes = PRELOAD_RING_BYTES,
		.thresholds = thresholds, .timeout = o->attach_timeout, .hold = o->attach_hold, .interrupted = inject_interrupted, .ctx = s,
		.verbose = o->verbose > 0,
	};
	uint64_t stopped;
	uint32_t patched, modules;
	struct proc *p;
	int err;

	*touched = false;
	s->lib = preload__find_lib();
	if (!s->lib) {
		snprintf(why, why_len, "cannot find libheapsnap.so next to heapsnap-record or in ../lib/heapsnap/ (set HEAPSNAP_LIB)");
		return -ENOENT;
	}
	io.lib = s->lib;
	if (o->sample_rate)
		sampling_thresholds(o->sample_rate, thresholds);
	err = inject__attach(o->pid, &io, &s->inj, why, why_len, touched);
	if (err)
		return err;
	inject__stats(s->inj, &stopped, &patched, &modules);
	inject_counts(s, false);
	err = nspid__open(o->pid, &s->nsx);
	if (err) {
		snprintf(why, why_len, "reading the PID namespace of process %d: %s", o->pid, strerror(-err));
		return err;
	}
	if (s->nsx && o->verbose)
		rec_warnx("process %d is in another PID namespace: its pids and tids are translated to this one's", o->pid);
	if (o->verbose)
		rec_warnx("injected into %d: stopped %.2f ms, %u GOT entries in %u modules point at the hooks", o->pid,
			  (double)stopped / 1e6, patched, modules);
	err = preload__adopt(inject__shm_fd(s->inj), inject__wake_fd(s->inj), &s->pre);
	if (err) {
		snprintf(why, why_len, "the memory shared with process %d is not as expected: %s", o->pid, strerror(-err));
		return err;
	}
	u->ring_bytes = PRELOAD_RING_BYTES;
	p = add_proc(s, o->pid);
	if (p)
		rescan_maps(s, p, false, 0);
	return use_shm_rings(s);
}

/* -p: injected where it can be, else (auto) BPF, said so. */
static int attach_start(struct session *s, struct run *u)
{
	char why[512] = "";
	bool touched = false;
	int err = inject_start(s, u, why, sizeof(why), &touched);

	if (!err || err == -EINTR) {
		if (err)
			rec_warnx("%s during start-up: stopping; nothing was recorded", strsignal(s->sig.stop));
		else if (s->o->verbose)
			rec_warnx("recording via %s", s->via_why);
		return err;
	}
	if (s->o->via == VIA_INJECT || err == -ESRCH || err == -EDEADLK || err == -EALREADY) {
		rec_warnx("cannot inject into process %d: %s", s->o->pid, why);
		return err;
	}
	rec_warnx("cannot inject into process %d: %s; recording with BPF uprobes instead (slower: every call traps)",
		  s->o->pid, why);
	inject__free(s->inj);
	s->inj = NULL;
	preload__free(s->pre);
	s->pre = NULL;
	free(s->rings);
	s->rings = NULL;
	if (s->epfd >= 0)
		close(s->epfd); /* BPF makes its own set of rings to wait on */
	s->epfd = -1;
	s->via = VIA_BPF;
	s->via_why = "bpf: the injection was refused";
	err = check_privileges();
	if (err)
		return err;
	setrlimit(RLIMIT_MEMLOCK, &(struct rlimit){RLIM_INFINITY, RLIM_INFINITY});
	return bpf_start(s, u);
}

/* Probes (BPF) or nothing (in-process), the held command, the header; then the command runs. */
static int run_attach(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int err;

	if ((err = interrupted(s)))
		return err;
	s->mono_start = mono_ns();
	if (o->argv) {
		s->child = start_held_child(o->argv, u->exe, &u->go_fd, s->pre, s->lib);
		if (s->child < 0) {
			err = s->child;
			rec_warnx("cannot start %s: %s", u->exe, strerror(-err));
			s->child = 0;
			return err;
		}
	}
	if (s->via == VIA_BPF) {
		err = bpf_attach(s, u);
		if (err)
			return err;
	}
	if ((err = interrupted(s)))
		return err;
	write_header(s, o->argv);
	/* The file takes its name once it reads as a recording. */
	err = s->err ? s->err : record_writer__flush(s->w);
	if (!err)
		err = record_writer__publish(s->w);
	if (err) {
		rec_warnx("cannot create %s: %s", o->output, strerror(-err));
		return err;
	}
	if (o->pid) {
		struct proc *p = proc_find(s, o->pid);
		struct thread_ctx t = {s, o->pid};

		write_process(s, o->pid, HS_PROC_ATTACHED, 0, NULL);
		proc_for_each_thread(o->pid, name_thread_cb, &t);
		for (int i = 0; p && i < p->nr_maps; i++)
			write_mapping(s, o->pid, &p->maps[i], 0);
		rec_warnx("attached to %d; Ctrl-C to stop, SIGUSR1 to mark a snapshot", o->pid);
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

/* In-process, the command's status comes from waitpid: its library saw it end, not how. */
static void write_child_exit(struct session *s)
{
	struct hs_record r = {.type = HS_REC_EXIT, .time = ticks(s, mono_ns()), .pid = (uint32_t)s->child};

	if (!s->pre)
		return;
	r.exit.status = WIFSIGNALED(s->child_status) ? -(int64_t)WTERMSIG(s->child_status)
						    : WEXITSTATUS(s->child_status);
	write_rec(s, &r);
}

/* Whether PID has ended: gone, or a zombie (its threads are all gone, its ring too). */
static bool pid_ended(pid_t pid)
{
	return (kill(pid, 0) && errno == ESRCH) || proc_is_zombie(pid);
}

/* In-process rings whose thread has exited, or whose process is gone, go back to the pool
 * once read to the end. */
static void reclaim_rings(struct session *s, bool check_pids)
{
	/* At once when a thread found every ring held: some may be of processes gone. */
	bool starved = s->pre && preload__starved(s->pre);

	check_pids |= starved;
	for (int i = 0; s->pre && i < s->nr_rings; i++) {
		uint64_t owner = preload__owner(s->pre, (uint32_t)i), prod;
		struct ring *r = &s->rings[i];

		if (!owner)
			continue;
		/* A process gone: its rings are closing, as an exited thread's, so that a thread
		 * that needs one waits for them to be read rather than go without. */
		if (!(owner & HS_SHM_CLOSING) && check_pids) {
			/* The owner's pid is its namespace's (an injected target in another PID
			 * namespace): asked of this one's by its number here. */
			pid_t opid = (pid_t)(owner >> 32 & 0x7fffffff);

			if (s->nsx)
				opid = (pid_t)nspid__pid(s->nsx, (uint32_t)opid);
			if (pid_ended(opid) && preload__close(s->pre, (uint32_t)i, owner))
				owner |= HS_SHM_CLOSING;
		}
		prod = __atomic_load_n(r->prod, __ATOMIC_ACQUIRE);
		if (r->pos != prod || !(owner & HS_SHM_CLOSING))
			continue;
		preload__release(s->pre, (uint32_t)i, owner, r->pos);
		r->published = r->end = r->pos;
	}
	if (starved)
		preload__fed(s->pre);
}

static void run_poll(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	uint64_t next_tick, next_rss, next_interval, deadline;
	bool stopping = false, held = false;
	int err;

	u->t_start = mono_ns();
	next_tick = u->t_start + 1000000000ull;
	next_rss = u->t_start + (uint64_t)(o->rss_interval * 1e9);
	next_interval = o->interval > 0 ? u->t_start + (uint64_t)(o->interval * 1e9) : UINT64_MAX;
	deadline = o->duration > 0 ? u->t_start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	while (!stopping && !s->err) {
		uint64_t now, horizon, gen = 0, due[] = {next_interval, next_rss, next_tick, deadline};
		uint32_t zero = 0;

		/* Events held for the merge are old enough to go after the slack; in-process
		 * producers wake the recorder only past a quarter of a ring, so it also looks
		 * every few milliseconds. */
		err = wait_rings(s, poll_timeout_ms(mono_ns(), due, 4,
						    held ? (int)(MERGE_SLACK_NS / 1000000) : s->pre ? 5 : 100));
		if (err) {
			rec_warnx("waiting on the ring buffers failed: %s", strerror(-err));
			break;
		}
		if (s->pre)
			preload__ack(s->pre);
		horizon = drain(s, false, &held);
		serve_children(s); /* after the drain: a child's fork is known by then */
		now = mono_ns();
		if (s->pre) {
			preload__heartbeat(s->pre, now);
			reclaim_rings(s, now >= next_tick);
		}
		if ((s->skel && !bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.maps_gen), &zero, &gen) &&
		     gen != s->maps_gen) ||
		    (s->poll_maps && now >= s->next_maps_poll)) {
			s->maps_gen = gen;
			s->next_maps_poll = now + 250000000ull;
			for (int i = 0; i < s->nr_procs; i++)
				if (s->procs[i].alive)
					rescan_maps(s, &s->procs[i], true, 0);
		}
		rec_signals__read(&s->sig);
		for (; s->sig.snapshots; s->sig.snapshots--)
			snapshot(s, HS_SNAP_SIGNAL, NULL, ticks(s, horizon));
		if (now >= next_interval) {
			snapshot(s, HS_SNAP_INTERVAL, NULL, ticks(s, horizon));
			next_interval += (uint64_t)(o->interval * 1e9);
		}
		if (now >= next_rss) {
			sample_rss(s);
			next_rss = now + (uint64_t)(o->rss_interval * 1e9);
		}
		if (now >= next_tick) {
			scan_children(s);
			if (s->inj)
				inject_counts(s, false);
			read_counters(s);
			warn_losses(s);
			write_counters(s, HS_REC_COUNTERS);
			if (o->all)
				for (int i = 0; i < s->nr_procs; i++)
					if (s->procs[i].alive)
						rescan_maps(s, &s->procs[i], false, 0);
			/* One frame a second at least: a crash loses at most the last second. */
			err = record_writer__flush(s->w);
			if (err && !s->err) {
				s->err = err;
				rec_warnx("failed to write %s: %s", o->output, strerror(-err));
			}
			next_tick = now + 1000000000ull;
		}
		if (s->sig.child && s->child) {
			s->sig.child = false;
			if (waitpid(s->child, &s->child_status, WNOHANG) == s->child) {
				s->child_reaped = true;
				write_child_exit(s);
				stopping = true;
			}
		}
		if (o->pid && kill(o->pid, 0) && errno == ESRCH)
			stopping = true;
		if (s->sig.stop || now >= deadline)
			stopping = true;
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
	bool held;
	int err;

	/* Hooks still running in processes left behind go dormant now; what they wrote before
	 * is drained below. */
	preload__detach(s->pre);
	drain(s, true, &held);
	/* Injected: the library puts every GOT entry back, and says so. */
	if (s->inj && inject__detach(s->inj))
		rec_warnx("libheapsnap.so in process %d did not confirm its detach within 2 s", o->pid);
	if (s->inj)
		inject_counts(s, true);
	read_counters(s);
	warn_losses(s);
	snapshot(s, exited ? HS_SNAP_EXIT : HS_SNAP_END, exited ? "exit" : "end", ticks(s, mono_ns()));
	if (o->snapshot_at_peak && s->peak_time) {
		double live = s->live_est;

		s->live_est = s->peak_est;
		snapshot(s, HS_SNAP_PEAK, "peak", s->peak_time);
		s->live_est = live;
	}
	write_counters(s, HS_REC_END);
	err = s->err;
	if (!err) {
		err = record_writer__close(s->w);
		if (err)
			rec_warnx("failed to finish %s: %s", o->output, strerror(-err));
		else
			warn_footer(s->w, o->output);
	}
	print_summary(s, (double)(mono_ns() - u->t_start) / 1e9);
	return err;
}

static int run_cleanup(struct session *s, struct run *u, int err)
{
	int exit_code = 0;

	if (u->go_fd >= 0)
		close(u->go_fd); /* a held child that never ran exits on EOF */
	destroy_links(s->links, s->nr_links);
	free(s->links);
	if (s->epfd >= 0)
		close(s->epfd);
	for (int i = 0; s->rings && s->skel && i < s->nr_rings; i++)
		ring_unmap(&s->rings[i]);
	free(s->rings);
	for (int i = 0; s->ring_fds && i < s->nr_rings; i++)
		if (s->ring_fds[i] >= 0)
			close(s->ring_fds[i]);
	free(s->ring_fds);
	unw_tables__free(s->unw);
	heapsnap_bpf__destroy(s->skel);
	preload__detach(s->pre);
	inject__detach(s->inj);
	inject__free(s->inj);
	if (s->child && !s->child_reaped) {
		if (err && !s->header_written)
			kill(s->child, SIGKILL);
		waitpid(s->child, &s->child_status, 0);
		s->child_reaped = true;
	}
	preload__free(s->pre);
	children_free(s);
	nspid__free(s->nsx);
	free(s->lib);
	record_writer__free(s->w);
	for (int i = 0; i < s->nr_objs; i++) {
		alloc_funcs__free(&s->objs[i]->funcs);
		free(s->objs[i]->path);
		free(s->objs[i]);
	}
	free(s->objs);
	for (int i = 0; i < s->nr_procs; i++) {
		proc_maps_free(s->procs[i].maps, s->procs[i].nr_maps);
		free(s->procs[i].comm);
		free(s->procs[i].cmdline);
		free(s->procs[i].exe);
	}
	hmap_free(&s->proc_idx);
	free(s->procs);
	free(s->probes);
	hmap_free(&s->stacks);
	hmap_free(&s->dwarf_windows);
	ptrmap_free(&s->ulive);
	hmap_free(&s->pending);
	free(s->pool);
	hmap_free(&s->tids);
	hmap_free(&s->objs_by_id);
	hmap_free(&s->attached);
	for (int i = 0; i < u->nr_libs; i++)
		free(u->libs[i]);
	free(u->libs);
	free(u->exe);
	if (s->sig.stop && !s->header_written)
		return 128 + s->sig.stop;
	if (s->child) {
		if (WIFEXITED(s->child_status))
			exit_code = WEXITSTATUS(s->child_status);
		else if (WIFSIGNALED(s->child_status))
			exit_code = 128 + WTERMSIG(s->child_status);
		if (err && !exit_code)
			exit_code = 1;
		return exit_code;
	}
	if (u->not_found)
		return 127;
	return err ? 1 : 0;
}

int recorder_run(const struct rec_opts *o)
{
	struct session sess = {.o = o, .pool_free = UINT32_MAX, .epfd = -1}, *s = &sess;
	struct run u = {.go_fd = -1};
	int err;

	err = run_open(s, &u);
	if (!err)
		err = s->via == VIA_PRELOAD ? preload_start(s, &u) : s->via == VIA_INJECT ? attach_start(s, &u)
												: bpf_start(s, &u);
	if (!err)
		err = run_attach(s, &u);
	if (!err) {
		run_poll(s, &u);
		err = run_finish(s, &u);
	}
	return run_cleanup(s, &u, err);
}
