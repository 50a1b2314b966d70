/* SPDX-License-Identifier: MIT */
/* What a thread's seccomp filters would do with a system call: read with
 * PTRACE_SECCOMP_GET_FILTER and run here, so that the injection never makes a call a filter
 * would answer by killing the target. */
#ifndef HEAPSNAP_SECCOMP_H
#define HEAPSNAP_SECCOMP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sc_call {
	int nr;
	const char *name;
	uint64_t args[6];
	bool must_succeed; /* run by us in a stopped thread: only ALLOW or LOG will do */
};

/* Checks CALLS against every filter of the ptrace-stopped thread TID. 0 if all may run,
 * -EPERM with the first refusal in WHY; -errno if the filters cannot be read. */
int seccomp__check(pid_t tid, const struct sc_call *calls, int n, char *why, size_t why_len);
#endif
