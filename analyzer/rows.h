/* SPDX-License-Identifier: MIT */
/* Report rows: what each report computes, once, from a profile, before an emitter writes it
 * as text, JSON (reports.c) or HTML (html.c). Every function returns 0 or -errno; every
 * __free accepts what a failed call left. */
#ifndef HEAPSNAP_ROWS_H
#define HEAPSNAP_ROWS_H
#include <stdint.h>

#include "profile.h"

#include "hmap.h"

#define ROWS_NAME_MAX 160 /* a frame's display name, as every report shows it */

/* Distinct strings, numbered in the order first seen (frame tables of speedscope and HTML). */
struct names {
	char **v;
	uint32_t nr, cap;
	struct hmap idx;
};

/* NAME's number, added if new; -ENOMEM. */
int64_t names__intern(struct names *n, const char *name);
void names__free(struct names *n);

/* Functions by the VALUE of the samples whose stacks hold them: flat as the leaf, cum
 * anywhere in the stack (once per stack, recursion counted once). Sorted by flat, then cum,
 * then name. */
struct fn_row {
	char *name;
	double flat, cum;
	double flat_var, cum_var; /* sampled recordings: the estimates' variances (0 when exact) */
};

struct fn_rows {
	struct fn_row *rows;
	uint32_t nr;
	double total, total_var;
};

int rows__functions(const struct profile *p, int value, struct fn_rows *out);
/* Python functions alone (the recording's Python frames): flat is a function's own, the blocks
 * whose innermost Python frame it is (what tracemalloc charges to a line), cum anywhere. */
int rows__python_functions(const struct profile *p, int value, struct fn_rows *out);
void fn_rows__free(struct fn_rows *t);

/* The live view's table (rows_live.c): by function, its own live bytes and blocks, its total
 * (live bytes anywhere in its stacks, once per stack) and what it allocated so far (own:
 * the view turns them into rates), of the samples of PID and TID (0: any), over FRAMES:
 * every frame, the native ones alone (Python frames left out), or the Python ones alone
 * (own as top's Python table charges it: the innermost). Sorted by own, then total, then
 * name; the totals are of the samples selected. */
enum live_frames { LIVE_MERGED, LIVE_NATIVE, LIVE_PYTHON };

struct live_filter {
	uint32_t pid, tid;
	enum live_frames frames;
};

struct live_row {
	char *name;
	double own, own_var, total, blocks, allocated, allocs;
};

struct live_rows {
	struct live_row *rows;
	uint32_t nr;
	double live, blocks, allocated, allocs;
};

int rows__live(const struct profile *p, const struct live_filter *f, struct live_rows *out);
void live_rows__free(struct live_rows *t);

/* Live blocks older than MIN_AGE grouped by stack, largest first; stacks of the first
 * LIMIT rows (0: all) resolved to at most LEAK_FRAMES frames, leaf first. */
#define LEAK_FRAMES 12
struct frame_row {
	char name[ROWS_NAME_MAX];
	const char *file; /* the symbolizer's; NULL when unknown */
	uint32_t line;
};

struct leak_row {
	uint32_t pid;
	uint64_t stack_id;
	double bytes, count, oldest;
	struct frame_row *frames;
	uint32_t nr_frames;
};

struct leak_rows {
	struct leak_row *rows;
	uint32_t nr;
	double total, min_age;
};

int rows__leaks(const struct profile *p, double min_age, uint32_t limit, struct leak_rows *out);
void leak_rows__free(struct leak_rows *t);

/* Temporary allocations (see the replay's temporary_note) by the function that made them,
 * most first; rows with none are dropped. */
struct temp_row {
	char *name;
	double temporary, temporary_bytes, allocations;
};

struct temp_rows {
	struct temp_row *rows;
	uint32_t nr;
	double temporary, allocations;
};

int rows__temporary(const struct profile *p, struct temp_rows *out);
void temp_rows__free(struct temp_rows *t);

/* The processes --pid/--comm selected, with the ages of their live blocks. */
struct proc_row {
	const struct process *pr;
	bool any_live;
	double oldest, average_age; /* seconds: allocation time of the oldest; mean age at the stop */
	char oldest_function[ROWS_NAME_MAX];
};

struct proc_rows {
	struct proc_row *rows;
	uint32_t nr;
};

int rows__processes(const struct profile *p, struct proc_rows *out);
void proc_rows__free(struct proc_rows *t);

/* Growth from A to B of VALUE, by function (flat) and by stack, largest growth first; rows
 * whose growth rounds to zero are dropped. A stack is the same stack in both when its
 * functions are, inline ones included, so a rebuild that moves lines changes nothing; with
 * LINES, when its functions, files and lines are. Its name shows the lines of the newer
 * recording (B) where it has it. Variances are each side's (recordings sampled apart). */
struct diff_row {
	char *name;
	double from, to;
	double from_var, to_var;
};

struct diff_rows {
	struct diff_row *functions, *stacks;
	uint32_t nr_functions, nr_stacks;
	double from_total, to_total;
	double from_var, to_var;
};

int rows__diff(const struct profile *a, const struct profile *b, int value, bool lines, struct diff_rows *out);
void diff_rows__free(struct diff_rows *t);

/* diff --max-growth: the growth of the total allowed, in the value's unit or as a percent
 * of the from total. */
struct growth_gate {
	double amount;
	bool percent;
};

/* A sampled estimate exceeds a limit "with 95% confidence" when the one-sided 95% lower
 * bound, the estimate less Z95 standard errors, does. */
#define Z95_ONE_SIDED 1.6448536269514722
#define Z95_TWO_SIDED 1.959963984540054

struct gate_verdict {
	double growth, se; /* se: 0 for exact recordings */
	double limit;      /* the amount, in the value's unit */
	double lower;      /* growth - Z95_ONE_SIDED * se */
	bool exceeded;
};

void rows__gate(const struct diff_rows *t, const struct growth_gate *g, struct gate_verdict *v);

/* A sample's frames as names, leaf (innermost inline) first: *NAMES points into *BUFS or the
 * symbolizer. Returns the count, or -ENOMEM. */
int rows__sample_frames(const struct profile *p, const struct prof_sample *s, const char ***names,
			char (**bufs)[ROWS_NAME_MAX]);
/* The name of the innermost frame at return address IP of PID, into BUF; its file and line
 * in *LINE_OUT when not NULL. */
const char *rows__frame_name(const struct profile *p, uint32_t pid, uint64_t ip, char *buf, size_t len,
			     struct prof_line *line_out);
#endif
