// SPDX-License-Identifier: MIT
/* The live subcommand's full-screen view. Each update copies what it shows out of the
 * profile (figures, processes, the chart's points, the table's rows), so a key, a resize or
 * a pause redraws from the copies. The terminal is given back on every way out: the end,
 * a signal the loop handles, and a crash (the handler restores the modes saved at the start
 * and leaves the alternate screen with the strings read then, both safe in a handler). */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <ncurses.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "live_view_int.h"

/* ---- the terminal, given back on a crash ---- */

static struct termios saved_modes;
static bool modes_saved;
static int tty_out = -1;
static char leave_seq[64];
static size_t leave_len;
static struct sigaction old_crash[5];
static const int crash_sigs[5] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static struct live_view *active_view;

static void on_crash(int sig)
{
	if (modes_saved)
		tcsetattr(tty_out, TCSANOW, &saved_modes);
	if (leave_len && write(tty_out, leave_seq, leave_len) < 0) {
		/* nothing more to do in a handler */
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void add_seq(const char *cap)
{
	char *s = tigetstr((char *)cap);
	size_t n;

	if (!s || s == (char *)-1)
		return;
	n = strlen(s);
	if (leave_len + n < sizeof(leave_seq)) {
		memcpy(leave_seq + leave_len, s, n);
		leave_len += n;
	}
}

static void crash_guard(bool on)
{
	for (int i = 0; i < 5; i++) {
		if (on) {
			struct sigaction sa = {.sa_handler = on_crash};

			sigemptyset(&sa.sa_mask);
			sigaction(crash_sigs[i], &sa, &old_crash[i]);
		} else {
			sigaction(crash_sigs[i], &old_crash[i], NULL);
		}
	}
}

static void leave_at_exit(void)
{
	if (active_view && active_view->scr) {
		endwin();
		active_view->scr = NULL;
	}
}

int live_view__open(struct live_view **out, const struct live_view_opts *o)
{
	struct live_view *v;
	const char *term = getenv("TERM");
	static bool at_exit;

	*out = NULL;
	if (!isatty(1))
		return -ENOTTY;
	if (!term || !*term || !strcmp(term, "dumb"))
		return -ENOENT;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->o = *o;
	snprintf(v->label, sizeof(v->label), "%s", o->label ? o->label : "");
	v->o.label = v->label;
	/* Keys from the controlling terminal, whatever standard input is (a pipe of -o -); a
	 * session without one (su -c runs its command in a new session) has its standard input,
	 * when that is a terminal. */
	v->tty = fopen("/dev/tty", "re");
	if (!v->tty && isatty(0)) {
		int fd = fcntl(0, F_DUPFD_CLOEXEC, 3);

		v->tty = fd >= 0 ? fdopen(fd, "r") : NULL;
		if (!v->tty && fd >= 0)
			close(fd);
	}
	if (!v->tty) {
		int err = -errno;

		free(v);
		return err ? err : -ENOTTY;
	}
	setlocale(LC_CTYPE, "");
	tty_out = 1;
	modes_saved = !tcgetattr(1, &saved_modes);
	v->scr = newterm(NULL, stdout, v->tty);
	if (!v->scr) {
		fclose(v->tty);
		free(v);
		return -ENOENT;
	}
	leave_len = 0;
	add_seq("sgr0");
	add_seq("cnorm");
	add_seq("rmcup");
	crash_guard(true);
	active_view = v;
	if (!at_exit)
		at_exit = !atexit(leave_at_exit);
	cbreak(); /* Ctrl-C still signals: it is the recorder's stop */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	v->color = has_colors() && !(getenv("NO_COLOR") && *getenv("NO_COLOR"));
	if (v->color) {
		start_color();
		use_default_colors();
		init_pair(PAIR_TITLE, COLOR_CYAN, -1);
		init_pair(PAIR_HEAP, COLOR_GREEN, -1);
		init_pair(PAIR_RSS, COLOR_YELLOW, -1);
		init_pair(PAIR_ALERT, COLOR_WHITE, COLOR_RED);
		init_pair(PAIR_MARK, COLOR_MAGENTA, -1);
	}
	snprintf(v->status, sizeof(v->status), "reading %s", v->label);
	*out = v;
	return 0;
}

int live_view__key_fd(const struct live_view *v)
{
	return fileno(v->tty);
}

bool live_view__paused(const struct live_view *v)
{
	return v->paused;
}

bool live_view__quitting(const struct live_view *v)
{
	return v->quitting;
}

/* ---- an update: copies of the figures ---- */

static void rows_free(struct live_view *v)
{
	for (uint32_t i = 0; i < v->nr_rows; i++)
		free(v->rows[i].name);
	free(v->rows);
	v->rows = NULL;
	v->nr_rows = 0;
}

static bool same_filter(const struct live_filter *a, const struct live_filter *b)
{
	return a->pid == b->pid && a->tid == b->tid && a->frames == b->frames;
}

/* The previous allocation figures of NAME (row I of the new table): slot in v->prev_v. */
static double *prev_of(struct live_view *v, const char *name)
{
	int64_t i = names__intern(&v->prev, name);

	if (i < 0)
		return NULL;
	if (v->prev_cap < v->prev.cap) {
		double(*p)[2] = realloc(v->prev_v, sizeof(*p) * v->prev.cap);

		if (!p)
			return NULL;
		memset(p + v->prev_cap, 0, sizeof(*p) * (v->prev.cap - v->prev_cap));
		v->prev_v = p;
		v->prev_cap = v->prev.cap;
	}
	return v->prev_v[i];
}

static int cmp_col;

static int cmp_rows(const void *x, const void *y)
{
	const struct lv_row *a = x, *b = y;

	if (a->v[cmp_col] != b->v[cmp_col])
		return a->v[cmp_col] < b->v[cmp_col] ? 1 : -1;
	if (a->v[COL_OWN] != b->v[COL_OWN])
		return a->v[COL_OWN] < b->v[COL_OWN] ? 1 : -1;
	return strcmp(a->name, b->name);
}

static void sort_rows(struct live_view *v)
{
	cmp_col = v->sort;
	if (v->nr_rows)
		qsort(v->rows, v->nr_rows, sizeof(*v->rows), cmp_rows);
}

/* The table's rows, with each function's rates since the last update of the same filter
 * (since the recording's start at the first). */
static int take_rows(struct live_view *v, const struct profile *p)
{
	struct live_rows t;
	bool known = v->have_prev && same_filter(&v->prev_filter, &v->filter) && v->moment > v->prev_moment;
	double dt = known ? v->moment - v->prev_moment : v->moment;
	int err = rows__live(p, &v->filter, &t);

	if (err)
		return err;
	if (!known) {
		names__free(&v->prev);
		free(v->prev_v);
		v->prev_v = NULL;
		v->prev_cap = 0;
	}
	rows_free(v);
	v->rows = calloc(t.nr ? t.nr : 1, sizeof(*v->rows));
	if (!v->rows) {
		live_rows__free(&t);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t.nr; i++) {
		struct live_row *r = &t.rows[i];
		struct lv_row *o = &v->rows[i];
		double *prev = prev_of(v, r->name);

		if (!prev) {
			live_rows__free(&t);
			return -ENOMEM;
		}
		o->name = r->name;
		r->name = NULL;
		o->v[COL_OWN] = r->own;
		o->v[COL_TOTAL] = r->total;
		o->v[COL_BLOCKS] = r->blocks;
		o->rate_known = dt > 0;
		o->v[COL_RATE] = dt > 0 ? (r->allocated - prev[0]) / dt : 0;
		o->v[COL_CALLS] = dt > 0 ? (r->allocs - prev[1]) / dt : 0;
		prev[0] = r->allocated;
		prev[1] = r->allocs;
		v->nr_rows++;
	}
	v->rate_bytes = dt > 0 ? (t.allocated - (known ? v->prev_allocated : 0)) / dt : 0;
	v->rate_calls = dt > 0 ? (t.allocs - (known ? v->prev_allocs : 0)) / dt : 0;
	v->prev_allocated = t.allocated;
	v->prev_allocs = t.allocs;
	v->prev_moment = v->moment;
	v->prev_filter = v->filter;
	v->have_prev = true;
	live_rows__free(&t);
	sort_rows(v);
	return 0;
}

static int take_procs(struct live_view *v, const struct replay *r)
{
	struct lv_proc *pr = realloc(v->procs, sizeof(*pr) * (r->nr_procs ? r->nr_procs : 1));
	uint32_t n = 0;

	if (!pr)
		return -ENOMEM;
	v->procs = pr;
	for (uint32_t i = 0; i < r->nr_procs; i++) {
		const struct process *q = &r->procs[i];

		if (!q->selected)
			continue;
		pr[n] = (struct lv_proc){.pid = q->pid, .exited = q->exited, .live = q->live_bytes,
					 .blocks = q->live_count, .peak = q->peak_bytes, .rss = q->rss_last};
		snprintf(pr[n].comm, sizeof(pr[n].comm), "%s", q->comm ? q->comm : "?");
		n++;
	}
	v->nr_procs = n;
	return 0;
}

static int cmp_thread(const void *x, const void *y)
{
	const struct lv_thread *a = x, *b = y;

	return a->pid != b->pid ? (a->pid < b->pid ? -1 : 1) : a->tid != b->tid ? (a->tid < b->tid ? -1 : 1) : 0;
}

/* The threads with figures in the profile, of the process chosen (all when none). */
static int take_threads(struct live_view *v, const struct profile *p)
{
	struct lv_thread *t;
	uint32_t n = 0;

	free(v->threads);
	v->threads = NULL;
	v->nr_threads = 0;
	t = malloc(sizeof(*t) * (p->nr_samples ? p->nr_samples : 1));
	if (!t)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];

		if (v->filter.pid && s->pid != v->filter.pid)
			continue;
		t[n++] = (struct lv_thread){.pid = s->pid, .tid = s->tid};
	}
	if (n)
		qsort(t, n, sizeof(*t), cmp_thread);
	v->nr_threads = 0;
	for (uint32_t i = 0; i < n; i++) {
		const char *name;

		if (v->nr_threads && !cmp_thread(&t[v->nr_threads - 1], &t[i]))
			continue;
		t[v->nr_threads] = t[i];
		name = replay__thread_name(p->r, t[i].pid, t[i].tid);
		snprintf(t[v->nr_threads].name, sizeof(t[0].name), "%s", name ? name : "");
		v->nr_threads++;
	}
	v->threads = t;
	return 0;
}

/* The timeline's points so far (while a replay follows, point i is stretch i, some unused),
 * and the snapshots' times. */
static int take_chart(struct live_view *v, const struct replay *r)
{
	struct lv_point *pts = realloc(v->pts, sizeof(*pts) * (r->nr_tl ? r->nr_tl : 1));
	double *sn;
	uint32_t n = 0;

	if (!pts)
		return -ENOMEM;
	v->pts = pts;
	for (uint32_t i = 0; r->tl && i < r->nr_tl && i < TIMELINE_MAX; i++) {
		const struct timeline_point *q = &r->tl[i];

		if (!r->tl_done && !q->used)
			continue;
		pts[n++] = (struct lv_point){.t = replay__seconds(r, q->time), .live = q->live_bytes, .rss = q->rss_bytes};
	}
	v->nr_pts = n;
	sn = realloc(v->snaps, sizeof(*sn) * (r->nr_snaps ? r->nr_snaps : 1));
	if (!sn)
		return -ENOMEM;
	v->snaps = sn;
	v->nr_snaps = 0;
	for (uint32_t i = 0; i < r->nr_snaps; i++)
		if (r->snaps[i].time <= r->stop_time)
			sn[v->nr_snaps++] = replay__seconds(r, r->snaps[i].time);
	return 0;
}

static void take_header(struct live_view *v, const struct replay *r)
{
	const struct lv_proc *sel = NULL;

	for (uint32_t i = 0; v->filter.pid && i < v->nr_procs; i++)
		if (v->procs[i].pid == v->filter.pid)
			sel = &v->procs[i];
	v->sampled = r->sample_rate != 0;
	v->sample_rate = r->sample_rate;
	/* The way in's name; the file says more after a colon ("inject: libheapsnap.so ..."). */
	snprintf(v->via, sizeof(v->via), "%.*s", r->via ? (int)strcspn(r->via, ":") : 1, r->via ? r->via : "?");
	if (sel) {
		v->live = sel->live;
		v->blocks = sel->blocks;
		v->peak = sel->peak;
		v->rss = sel->rss;
		v->peak_blocks_known = false;
	} else {
		v->live = r->live_bytes;
		v->blocks = r->live_count;
		v->peak = r->peak_bytes;
		v->rss = r->rss_sum;
		/* Blocks are counted one by one only when every event is recorded. */
		v->peak_blocks = (double)r->peak_live_slots;
		v->peak_blocks_known = !v->sampled;
	}
	v->nr_lost = replay__lost_events(r, v->lost, sizeof(v->lost));
	v->nr_stopped = replay__stopped(r, v->stopped, sizeof(v->stopped));
}

int live_view__update(struct live_view *v, const struct profile *p, double moment, bool final)
{
	int err;

	v->moment = moment;
	v->final = final;
	err = take_procs(v, p->r);
	if (!err)
		err = take_threads(v, p);
	if (!err)
		err = take_rows(v, p);
	if (!err)
		err = take_chart(v, p->r);
	if (err)
		return err;
	take_header(v, p->r);
	v->have = true;
	if (final)
		snprintf(v->status, sizeof(v->status), "%s", v->quitting ? "the recording ended" :
			 "the recording ended: q to leave");
	else if (!strncmp(v->status, "reading ", 8) || (!v->quitting && time(NULL) - v->status_at >= 3))
		v->status[0] = 0;
	live_draw(v);
	return 0;
}

/* ---- keys ---- */

static void status(struct live_view *v, const char *fmt, const char *arg)
{
	snprintf(v->status, sizeof(v->status), fmt, arg);
	v->status_at = time(NULL);
}

/* The next process: all, then each in turn. */
static void next_process(struct live_view *v)
{
	uint32_t i = 0;

	if (v->filter.pid)
		while (i < v->nr_procs && v->procs[i].pid != v->filter.pid)
			i++;
	i = v->filter.pid ? i + 1 : 0;
	v->filter.pid = i < v->nr_procs ? v->procs[i].pid : 0;
	v->filter.tid = 0;
}

static void next_thread(struct live_view *v)
{
	uint32_t i = 0;

	if (v->filter.tid)
		while (i < v->nr_threads && v->threads[i].tid != v->filter.tid)
			i++;
	i = v->filter.tid ? i + 1 : 0;
	if (i < v->nr_threads) {
		v->filter.tid = v->threads[i].tid;
		v->filter.pid = v->threads[i].pid;
		status(v, "thread %s", v->threads[i].name[0] ? v->threads[i].name : "(unnamed)");
	} else {
		v->filter.tid = 0;
		v->status[0] = 0;
	}
}

enum live_action live_view__keys(struct live_view *v)
{
	enum live_action act = LIVE_NONE;
	bool redraw = false;
	int ch;

	while ((ch = getch()) != ERR) {
		switch (ch) {
		case 'q':
		case 'Q':
			if (!v->o.recorder || v->final || v->quitting)
				return LIVE_QUIT;
			if (kill(v->o.recorder, SIGTERM)) {
				status(v, "cannot stop the recorder: %s; q again leaves", strerror(errno));
				v->o.recorder = 0;
			} else {
				v->quitting = true;
				status(v, "%s", "ending the recording...");
			}
			redraw = true;
			break;
		case '<':
		case KEY_LEFT:
			v->sort = (v->sort + COL__COUNT - 1) % COL__COUNT;
			sort_rows(v);
			redraw = true;
			break;
		case '>':
		case KEY_RIGHT:
			v->sort = (v->sort + 1) % COL__COUNT;
			sort_rows(v);
			redraw = true;
			break;
		case 'v':
			v->filter.frames = (v->filter.frames + 1) % 3;
			act = LIVE_UPDATE;
			break;
		case 'p':
			next_process(v);
			act = LIVE_UPDATE;
			break;
		case 't':
			next_thread(v);
			act = LIVE_UPDATE;
			break;
		case ' ':
			v->paused = !v->paused;
			status(v, "%s", v->paused ? "paused: the recording goes on; space resumes" : "");
			redraw = true;
			break;
		case 'm':
			if (!v->o.recorder || v->final)
				status(v, "%s", "m marks a snapshot under heapsnap-record --live (or live --recorder PID)");
			else if (kill(v->o.recorder, SIGUSR1))
				status(v, "cannot signal the recorder: %s", strerror(errno));
			else
				status(v, "%s", "snapshot marked");
			redraw = true;
			break;
		case KEY_RESIZE:
		case 12: /* Ctrl-L */
			clearok(curscr, TRUE);
			redraw = true;
			break;
		default:
			break;
		}
	}
	if (redraw && act == LIVE_NONE)
		live_draw(v);
	return act;
}

void live_view__close(struct live_view *v)
{
	char a[48], b[48], c[48];

	if (!v || !v->scr)
		return;
	endwin();
	delscreen(v->scr);
	v->scr = NULL;
	crash_guard(false);
	leave_len = 0;
	modes_saved = false;
	active_view = NULL;
	if (v->have)
		printf("heapsnap live: %s: %s at %.3fs: %s%s bytes live in %s%s blocks, peak %s%s bytes\n", v->label,
		       v->final ? "the end" : "left", v->moment, v->sampled ? "~" : "", live_fmt_exact(a, sizeof(a), v->live),
		       v->sampled ? "~" : "", live_fmt_exact(b, sizeof(b), v->blocks), v->sampled ? "~" : "",
		       live_fmt_exact(c, sizeof(c), v->peak));
	fflush(stdout);
}

void live_view__free(struct live_view *v)
{
	if (!v)
		return;
	live_view__close(v);
	if (v->tty)
		fclose(v->tty);
	rows_free(v);
	names__free(&v->prev);
	free(v->prev_v);
	free(v->procs);
	free(v->threads);
	free(v->pts);
	free(v->snaps);
	free(v);
}
