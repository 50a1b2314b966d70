// SPDX-License-Identifier: MIT
/* The recorder's base layer: writing records, warnings, the clock, counter names. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "output.h"

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
	[HS_CNT_DWARF_END_UNKNOWN] = "stacks.dwarf_end_unknown",
	[HS_CNT_RECORDER_STALLED] = "lost.processes_stopped",
	[HS_CNT_POOL_STOPPED] = "sampler.pool_stopped",
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

uint64_t ticks(const struct output *out, uint64_t ns)
{
	return ns > out->mono_start ? (ns - out->mono_start) / TICK_NS : 0;
}

void write_rec(struct output *out, const struct hs_record *r)
{
	int err;

	if (out->err)
		return;
	err = record_writer__write(out->w, r);
	if (err) {
		out->err = err;
		rec_warnx("failed to write %s: %s; stopping", out->path, strerror(-err));
	}
}
