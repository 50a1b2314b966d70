// SPDX-License-Identifier: MIT
/* HEAPSNAP_BENCH_CPU=K pins a benchmark workload to the K-th CPU (modulo their count) of
 * those it may run on. The bench runs every mode of a round on the same CPU, since a virtual
 * machine's CPUs can differ in speed from minute to minute (one ran 40% slower than the
 * other here): a round's ratios then compare runs on one CPU, not runs that landed on two. */
#ifndef HEAPSNAP_BENCH_PIN_H
#define HEAPSNAP_BENCH_PIN_H

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 0 pinned or not asked; -1 (said on stderr) when asked and it cannot be done. */
static inline int bench_pin(void)
{
	const char *v = getenv("HEAPSNAP_BENCH_CPU");
	cpu_set_t set, one;
	char *end;
	long k;
	int n, cpu;

	if (!v || !*v)
		return 0;
	errno = 0;
	k = strtol(v, &end, 10);
	if (errno || *end || k < 0) {
		fprintf(stderr, "HEAPSNAP_BENCH_CPU=%s: not a CPU index\n", v);
		return -1;
	}
	if (sched_getaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "HEAPSNAP_BENCH_CPU: sched_getaffinity: %s\n", strerror(errno));
		return -1;
	}
	n = CPU_COUNT(&set);
	k %= n;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && k-- == 0)
			break;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one)) {
		fprintf(stderr, "HEAPSNAP_BENCH_CPU: pinning to CPU %d: %s\n", cpu, strerror(errno));
		return -1;
	}
	return 0;
}

#endif
