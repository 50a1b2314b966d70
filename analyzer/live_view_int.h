/* SPDX-License-Identifier: MIT */
/* The live view's state, shared by its lifecycle and keys (live_view.c) and its drawing
 * (live_draw.c). */
#ifndef HEAPSNAP_LIVE_VIEW_INT_H
#define HEAPSNAP_LIVE_VIEW_INT_H
#include <stdio.h>
#include <time.h>

#include "live_view.h"
#include "rows.h"

enum { COL_OWN, COL_TOTAL, COL_BLOCKS, COL_RATE, COL_CALLS, COL__COUNT };

enum { PAIR_TITLE = 1, PAIR_HEAP, PAIR_RSS, PAIR_ALERT, PAIR_MARK };

struct lv_proc {
	uint32_t pid;
	char comm[40];
	bool exited;
	double live, blocks, peak;
	uint64_t rss;
};

struct lv_thread {
	uint32_t pid, tid;
	char name[24];
};

struct lv_point {
	double t, live;
	uint64_t rss;
};

/* A row as shown: the rows' figures and the rates since the update before. */
struct lv_row {
	char *name;
	double v[COL__COUNT];
	bool rate_known;
};

struct live_view {
	struct live_view_opts o;
	char label[256];
	FILE *tty;
	SCREEN *scr;
	bool color;
	/* what the keys chose */
	int sort;
	struct live_filter filter;
	bool paused, quitting;
	char status[320];
	time_t status_at; /* a key's word stays 3 s */
	/* the last update */
	bool have, final, sampled;
	double moment;
	uint64_t sample_rate;
	char via[32], lost[200], stopped[200];
	uint64_t nr_lost, nr_stopped;
	double live, blocks, peak, peak_blocks, rate_bytes, rate_calls;
	bool peak_blocks_known;
	uint64_t rss;
	struct lv_proc *procs;
	uint32_t nr_procs;
	struct lv_thread *threads;
	uint32_t nr_threads;
	struct lv_point *pts;
	uint32_t nr_pts;
	double *snaps;
	uint32_t nr_snaps;
	struct lv_row *rows;
	uint32_t nr_rows;
	/* for rates: what each function had allocated at the update before, for one filter */
	struct names prev;
	double (*prev_v)[2];
	uint32_t prev_cap;
	bool have_prev;
	double prev_moment, prev_allocated, prev_allocs;
	struct live_filter prev_filter;
};

/* live_draw.c: the whole screen from V's copies. */
void live_draw(struct live_view *v);
/* Digits grouped by thousands: 1,000,000. */
const char *live_fmt_exact(char *buf, size_t len, double v);
#endif
