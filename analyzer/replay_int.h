/* SPDX-License-Identifier: MIT */
/* Inside the replay: what replay.c (events, passes), replay_meta.c (metadata records and
 * the model's lookups), replay_timeline.c and replay_temporary.c share. Not for other files. */
#ifndef HEAPSNAP_REPLAY_INT_H
#define HEAPSNAP_REPLAY_INT_H
#include "decoder.h"
#include "replay.h"

/* Out of memory while a pass runs: back to the pass, which ends it with an error. */
_Noreturn void replay_nomem(struct replay *r);
/* A printable copy of S (escaped as every string from a file is). */
char *replay_strdup(struct replay *r, const char *s);
void *replay_realloc(struct replay *r, void *p, size_t n);
/* Room for element N of an array grown one at a time (doubling at powers of two). */
void *replay_grow(struct replay *r, void *p, uint64_t n, size_t elem);
/* Whether --pid names PID; with no filter, every process is. */
bool replay_pid_listed(const struct replay *r, uint32_t pid);
/* PID's process, created on first sight. */
struct process *replay_get_process(struct replay *r, uint32_t pid);
/* The timeline's point for time T, after a change of the live heap or the RSS
 * (replay_timeline.c). */
void replay_timeline_note(struct replay *r, uint64_t t, bool live_known);
/* At the end of a pass: the points in time order, for the reports. */
void replay_timeline_finish(struct replay *r);
/* Temporary allocations (replay_temporary.c): EV before it is applied, and after. */
void replay_temporary_note(struct replay *r, const struct replay_event *ev);
void replay_temporary_after(struct replay *r, const struct replay_event *ev);
/* A metadata record (not an allocation or a free) into the model; BEFORE_STOP while the
 * replay has not reached its stop. */
void replay_meta__apply(struct replay *r, const struct hs_record *rec, bool before_stop);
/* A PY_CODE record into the model (pycode.c); past a limit, ends the pass with an error. */
void replay_py__apply(struct replay *r, const struct hs_record *rec);
#endif
