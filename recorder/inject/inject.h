/* SPDX-License-Identifier: MIT */
/* The injected way in: libheapsnap.so loaded into a running process without a debugger and
 * without a stopped thread ever calling libc (recorder/inject/inject_attach.c has how). */
#ifndef HEAPSNAP_INJECT_H
#define HEAPSNAP_INJECT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct inject;

struct inject_opts {
	uint64_t sample_rate;
	uint32_t stack_mode, max_stack, dwarf_bytes, nr_rings, ring_bytes;
	const uint64_t *thresholds; /* HS_NR_THRESHOLDS */
	const char *lib;            /* libheapsnap.so on this host */
	double timeout;             /* seconds to wait for the target to call its allocator */
	double hold;                /* seconds a thread of the target may wait in the trampoline */
	int (*interrupted)(void *ctx); /* non-zero: stop waiting */
	void *ctx;
	bool verbose;
};

/* Loads the library into PID and starts recording there. On failure WHY says why, and
 * TOUCHED whether anything in the target was changed (it was put back if so). -ESRCH: no
 * such process, or a zombie; -EDEADLK: PID is the recorder; -EALREADY: another recorder
 * records PID: no other way in can do better. */
int inject__attach(pid_t pid, const struct inject_opts *o, struct inject **out, char *why, size_t why_len,
		   bool *touched);
/* The library's shared memory and eventfd, duplicated into this process. */
int inject__shm_fd(const struct inject *j);
int inject__wake_fd(const struct inject *j);
/* How long the target's thread was stopped, the entries rewritten, the modules seen. */
void inject__stats(const struct inject *j, uint64_t *stopped_ns, uint32_t *patched, uint32_t *modules);
/* The stub's counts: calls that went on to the allocator unrecorded while the injection was
 * under way (PASSED), that waited for the hooks and were recorded (HELD), whose wait ran out
 * (TIMED_OUT, also in PASSED). They stay readable while the process lives. */
int inject__counts(const struct inject *j, uint64_t *passed, uint64_t *held, uint64_t *timed_out);
/* Tells the library to put every entry back, and waits (up to 2 s) until it has. Returns 0
 * when it said so. */
int inject__detach(struct inject *j);
void inject__free(struct inject *j);
#endif
