// SPDX-License-Identifier: MIT
/* The live view drawn from its copies: the header, the chart, the table, the keys. Figures
 * are exact (grouped digits) from 120 columns, in KiB and MiB below. */
#include <math.h>
#include <ncurses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_view_int.h"

static const char *const col_names[COL__COUNT] = {"OWN", "TOTAL", "BLOCKS", "ALLOC/S", "CALLS/S"};
static const char *const frames_names[] = {"merged", "native", "Python"};

/* ---- figures as text ---- */

const char *live_fmt_exact(char *buf, size_t len, double v)
{
	char d[32];
	long long n = llround(v < 0 ? -v : v);
	int nd = snprintf(d, sizeof(d), "%lld", n), o = 0;

	if (v < 0 && n && o < (int)len - 1)
		buf[o++] = '-';
	for (int i = 0; i < nd && o < (int)len - 1; i++) {
		if (i && (nd - i) % 3 == 0 && o < (int)len - 1)
			buf[o++] = ',';
		if (o < (int)len - 1)
			buf[o++] = d[i];
	}
	buf[o] = 0;
	return buf;
}

static const char *fmt_bytes(char *buf, size_t len, double v, bool exact)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double a = fabs(v);
	int u = -1;

	if (exact || a < 10000)
		return live_fmt_exact(buf, len, v);
	while (a >= 1024 && u < 3) {
		a /= 1024;
		u++;
	}
	snprintf(buf, len, "%s%.1f %s", v < 0 ? "-" : "", a, units[u < 0 ? 0 : u]);
	return buf;
}

/* A size with its unit: 35,000 B, 976.6 KiB. */
static const char *fmt_size(char *buf, size_t len, double v, bool exact)
{
	fmt_bytes(buf, len, v, exact);
	if (!strchr(buf, 'i') && strlen(buf) + 3 <= len)
		strcat(buf, " B");
	return buf;
}

static const char *fmt_count(char *buf, size_t len, double v, bool exact)
{
	double a = fabs(v);

	if (exact || a < 100000)
		return live_fmt_exact(buf, len, v);
	if (a < 1e9)
		snprintf(buf, len, "%.1fM", v / 1e6);
	else
		snprintf(buf, len, "%.1fG", v / 1e9);
	return buf;
}

/* ---- drawing ---- */

static void put(int y, int x, const char *s)
{
	if (y >= 0 && y < LINES && x < COLS)
		mvaddnstr(y, x, s, COLS - x);
}

static void attr(struct live_view *v, int pair, attr_t mono, bool on)
{
	attr_t a = v->color && pair ? COLOR_PAIR(pair) : mono;

	if (on)
		attron(a | (v->color && pair == PAIR_ALERT ? A_BOLD : 0));
	else
		attroff(a | (v->color && pair == PAIR_ALERT ? A_BOLD : 0));
}

static const char *proc_comm(const struct live_view *v, uint32_t pid)
{
	for (uint32_t i = 0; i < v->nr_procs; i++)
		if (v->procs[i].pid == pid)
			return v->procs[i].comm;
	return "?";
}

static void draw_header(struct live_view *v)
{
	char a[48], b[48], c[48], d[48], line[512];
	const char *est = v->sampled ? "~" : "";
	bool exact = COLS >= 120;
	int n = 0;

	attr(v, PAIR_TITLE, A_BOLD, true);
	snprintf(line, sizeof(line), "heapsnap live at %.1fs%s%s", v->moment, v->final ? " (the end)" : "",
		 v->paused ? " [PAUSED]" : "");
	put(0, 0, line);
	attr(v, PAIR_TITLE, A_BOLD, false);
	if (v->sampled)
		snprintf(a, sizeof(a), "sampled every %s (estimates, ~)", fmt_bytes(b, sizeof(b), (double)v->sample_rate, false));
	else
		snprintf(a, sizeof(a), "every event");
	snprintf(line, sizeof(line), "  via %s, %s  %s", v->via, a, v->label);
	addnstr(line, COLS - getcurx(stdscr) > 0 ? COLS - getcurx(stdscr) : 0);

	/* The processes: the one chosen, or as many as fit. */
	n = snprintf(line, sizeof(line), "%s", v->filter.pid ? "process " : v->nr_procs == 1 ? "process " : "processes ");
	for (uint32_t i = 0; i < v->nr_procs && n < (int)sizeof(line) - 48; i++) {
		if (v->filter.pid && v->procs[i].pid != v->filter.pid)
			continue;
		if (n > COLS - 24 && !v->filter.pid) {
			n += snprintf(line + n, sizeof(line) - n, "(+%u more)", v->nr_procs - i);
			break;
		}
		n += snprintf(line + n, sizeof(line) - n, "%u %s%s  ", v->procs[i].pid, v->procs[i].comm,
			      v->procs[i].exited ? " (exited)" : "");
	}
	if (v->filter.tid)
		snprintf(line + n, sizeof(line) - n, "thread %u", v->filter.tid);
	put(1, 0, line);

	snprintf(line, sizeof(line), "live %s%s in %s%s blocks   peak %s%s", est, fmt_size(a, sizeof(a), v->live, exact), est,
		 fmt_count(b, sizeof(b), v->blocks, exact), est, fmt_size(c, sizeof(c), v->peak, exact));
	n = (int)strlen(line);
	if (v->peak_blocks_known)
		n += snprintf(line + n, sizeof(line) - n, ", %s blocks at most", fmt_count(d, sizeof(d), v->peak_blocks, exact));
	snprintf(line + n, sizeof(line) - n, "   RSS %s", v->rss ? fmt_size(d, sizeof(d), (double)v->rss, false) : "-");
	put(2, 0, line);

	snprintf(line, sizeof(line), "allocating %s%s/s, %s%s calls/s   ", est,
		 fmt_size(a, sizeof(a), v->rate_bytes, false), est, fmt_count(b, sizeof(b), v->rate_calls, false));
	put(3, 0, line);
	if (v->nr_lost || v->nr_stopped) {
		attr(v, PAIR_ALERT, A_REVERSE | A_BOLD, true);
		snprintf(line, sizeof(line), " LOST: %s%s%s ", v->nr_lost ? v->lost : "",
			 v->nr_lost && v->nr_stopped ? "; " : "", v->nr_stopped ? v->stopped : "");
		addnstr(line, COLS - getcurx(stdscr) > 0 ? COLS - getcurx(stdscr) : 0);
		attr(v, PAIR_ALERT, A_REVERSE | A_BOLD, false);
	} else {
		addnstr("lost: none", COLS - getcurx(stdscr) > 0 ? COLS - getcurx(stdscr) : 0);
	}
}

/* The live heap (#) and RSS (-) over the recording, one column a stretch of time, each the
 * highest of the points in it (the last one carried over an empty stretch); snapshots as ^
 * under the axis. Each on its own scale from 0: an RSS of megabytes would flatten a heap of
 * kilobytes. Returns the lines used. */
static int draw_chart(struct live_view *v, int y, int height)
{
	enum { LABEL = 10 };
	int w = COLS - LABEL - 1;
	double t0 = 0, t1 = v->moment, top = 0, rtop = 0, *live, *rss;
	char a[48], b[48], line[256];
	bool *any;

	if (w < 10 || height < 2)
		return 0;
	live = calloc((size_t)w, sizeof(*live));
	rss = calloc((size_t)w, sizeof(*rss));
	any = calloc((size_t)w, sizeof(*any));
	if (!live || !rss || !any) {
		free(live);
		free(rss);
		free(any);
		return 0;
	}
	if (t1 <= t0)
		t1 = t0 + 1;
	for (uint32_t i = 0; i < v->nr_pts; i++) {
		int c = (int)((v->pts[i].t - t0) / (t1 - t0) * w);

		c = c < 0 ? 0 : c >= w ? w - 1 : c;
		if (v->pts[i].live < 0 && !any[c])
			live[c] = -1; /* not known yet: carried over from the column before */
		else if (v->pts[i].live > live[c])
			live[c] = v->pts[i].live;
		if ((double)v->pts[i].rss > rss[c])
			rss[c] = (double)v->pts[i].rss;
		any[c] = true;
	}
	/* Carry the heap over stretches without an event, up to now (the last column). */
	for (int c = 0; c < w; c++) {
		if (live[c] < 0)
			live[c] = c ? live[c - 1] : 0;
		if (!c || any[c] || !(any[c - 1] || live[c - 1] > 0 || rss[c - 1] > 0))
			continue;
		live[c] = live[c - 1];
		rss[c] = rss[c - 1];
	}
	for (int c = 0; c < w; c++) {
		top = live[c] > top ? live[c] : top;
		rtop = rss[c] > rtop ? rss[c] : rtop;
	}
	for (int row = 0; row < height; row++) {
		double lo = top * (height - 1 - row) / height, rlo = rtop * (height - 1 - row) / height,
		       rhi = rtop * (height - row) / height;

		if (row == 0)
			snprintf(line, sizeof(line), "%9s ", fmt_bytes(a, sizeof(a), top, false));
		else if (row == height - 1)
			snprintf(line, sizeof(line), "%9s ", "0");
		else
			snprintf(line, sizeof(line), "%9s ", "");
		put(y + row, 0, line);
		for (int c = 0; c < w; c++) {
			bool heap = live[c] > lo && live[c] > 0, r = rss[c] > rlo && rss[c] <= rhi && rss[c] > 0;

			if (heap) {
				attr(v, PAIR_HEAP, 0, true);
				mvaddch(y + row, LABEL + c, r ? '=' : '#');
				attr(v, PAIR_HEAP, 0, false);
			} else if (r) {
				attr(v, PAIR_RSS, 0, true);
				mvaddch(y + row, LABEL + c, '-');
				attr(v, PAIR_RSS, 0, false);
			}
		}
	}
	/* The axis, the snapshots on it, the times at its ends. */
	mvhline(y + height, LABEL, '.', w);
	attr(v, PAIR_MARK, A_BOLD, true);
	for (uint32_t i = 0; i < v->nr_snaps; i++) {
		int c = (int)((v->snaps[i] - t0) / (t1 - t0) * w);

		mvaddch(y + height, LABEL + (c < 0 ? 0 : c >= w ? w - 1 : c), '^');
	}
	attr(v, PAIR_MARK, A_BOLD, false);
	snprintf(line, sizeof(line), "%.1fs", t0);
	put(y + height + 1, LABEL, line);
	snprintf(line, sizeof(line), "# live heap (0 to %s)  - RSS (0 to %s)  ^ snapshot (%u)",
		 fmt_bytes(a, sizeof(a), top, false), rtop > 0 ? fmt_bytes(b, sizeof(b), rtop, false) : "-", v->nr_snaps);
	put(y + height + 1, LABEL + (w - (int)strlen(line)) / 2 > LABEL + 6 ? LABEL + (w - (int)strlen(line)) / 2 : LABEL + 6,
	    line);
	snprintf(line, sizeof(line), "%.1fs", t1);
	put(y + height + 1, COLS - (int)strlen(line) - 1, line);
	free(live);
	free(rss);
	free(any);
	return height + 2;
}

static void draw_table(struct live_view *v, int y, int last)
{
	bool exact = COLS >= 120;
	int wb = exact ? 13 : 10, wc = exact ? 10 : 8;
	int widths[COL__COUNT] = {wb, wb, wc, 11, wc};
	char line[512], a[48];
	int x = 0;

	attron(A_REVERSE);
	mvhline(y, 0, ' ', COLS);
	for (int c = 0; c < COL__COUNT; c++) {
		snprintf(line, sizeof(line), "%*s%s", widths[c] - (c == v->sort ? 1 : 0), col_names[c], c == v->sort ? "*" : "");
		put(y, x, line);
		x += widths[c] + 1;
	}
	if (v->filter.tid)
		snprintf(line, sizeof(line), " FUNCTION (%s frames, thread %u)", frames_names[v->filter.frames], v->filter.tid);
	else if (v->filter.pid)
		snprintf(line, sizeof(line), " FUNCTION (%s frames, process %u %s)", frames_names[v->filter.frames],
			 v->filter.pid, proc_comm(v, v->filter.pid));
	else
		snprintf(line, sizeof(line), " FUNCTION (%s frames)", frames_names[v->filter.frames]);
	put(y, x, line);
	attroff(A_REVERSE);
	for (uint32_t i = 0; i < v->nr_rows && y + 1 + (int)i < last; i++) {
		const struct lv_row *r = &v->rows[i];

		x = 0;
		for (int c = 0; c < COL__COUNT; c++) {
			const char *s = c == COL_OWN || c == COL_TOTAL ? fmt_bytes(a, sizeof(a), r->v[c], exact)
					: c == COL_RATE			      ? fmt_bytes(a, sizeof(a), r->v[c], false)
					: c == COL_CALLS		      ? fmt_count(a, sizeof(a), r->v[c], false)
									      : fmt_count(a, sizeof(a), r->v[c], exact);

			snprintf(line, sizeof(line), "%*s", widths[c], (c == COL_RATE || c == COL_CALLS) && !r->rate_known ? "-" : s);
			put(y + 1 + (int)i, x, line);
			x += widths[c] + 1;
		}
		put(y + 1 + (int)i, x + 1, r->name);
	}
	if (!v->nr_rows)
		put(y + 1, 2, v->filter.frames == LIVE_PYTHON ? "(no Python frames in these stacks)" : "(nothing yet)");
}

static void draw_keys(struct live_view *v)
{
	char line[512];
	bool wide = COLS >= 100;
	const char *q = v->o.recorder ? (wide ? "q end recording" : "q end") : "q quit";

	if (wide)
		snprintf(line, sizeof(line), "%s  </> sort  v frames  p process  t thread  space %s  m mark snapshot%s", q,
			 v->paused ? "resume" : "pause", v->o.recorder ? "" : " (n/a)");
	else
		snprintf(line, sizeof(line), "%s  <> sort  v frames  p proc  t thread  spc %s  m snapshot%s", q,
			 v->paused ? "resume" : "pause", v->o.recorder ? "" : " (n/a)");
	attron(A_REVERSE);
	mvhline(LINES - 1, 0, ' ', COLS);
	put(LINES - 1, 0, line);
	attroff(A_REVERSE);
	if (v->status[0]) {
		attr(v, PAIR_TITLE, A_BOLD, true);
		put(LINES - 2, 0, v->status);
		attr(v, PAIR_TITLE, A_BOLD, false);
	}
}

void live_draw(struct live_view *v)
{
	int y, h;

	erase();
	if (LINES < 12 || COLS < 60) {
		put(0, 0, "heapsnap live: the terminal is too small (at least 60x12)");
		refresh();
		return;
	}
	if (!v->have) {
		put(0, 0, "heapsnap live: waiting for the recording's first update");
		put(1, 0, v->label);
		draw_keys(v);
		refresh();
		return;
	}
	draw_header(v);
	/* The chart takes a quarter of what is left; the table, the rest. */
	h = (LINES - 8) / 4;
	h = h < 3 ? 3 : h > 16 ? 16 : h;
	y = 5 + draw_chart(v, 5, h);
	draw_table(v, y, LINES - 2);
	draw_keys(v);
	/* Lines someone else wrote over (the command, the recorder): drawn whole each time. */
	redrawwin(stdscr);
	refresh();
}

