// SPDX-License-Identifier: MIT
/* C++ new/delete churn over a ring of live objects; prints the timed part like workload.c
 * (wall and CPU time). */
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "pin.h"

static double now(clockid_t c = CLOCK_MONOTONIC)
{
	timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct Small { long a[3]; };
struct Medium { long a[20]; };

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;

	if (bench_pin())
		return 2;
	static void *ring[1024];
	static int kind[1024];
	unsigned long long s = 88172645463325252ull;
	double t0 = now(), c0 = now(CLOCK_PROCESS_CPUTIME_ID);

	for (long i = 0; i < n; i++) {
		s ^= s << 13; s ^= s >> 7; s ^= s << 17;
		unsigned idx = (unsigned)(s % 1024);
		switch (kind[idx]) {
		case 1: delete static_cast<Small *>(ring[idx]); break;
		case 2: delete static_cast<Medium *>(ring[idx]); break;
		case 3: delete[] static_cast<char *>(ring[idx]); break;
		}
		kind[idx] = 1 + (int)((s >> 20) % 3);
		if (kind[idx] == 1)
			ring[idx] = new Small();
		else if (kind[idx] == 2)
			ring[idx] = new Medium();
		else
			ring[idx] = new char[64 + (s >> 30) % 512];
	}
	double t1 = now(), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
	printf("elapsed %.6f ops %ld events %ld cpu %.6f\n", t1 - t0, n, 2 * n, c1 - c0);
	return 0;
}
