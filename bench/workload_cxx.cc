// SPDX-License-Identifier: MIT
/* C++ new/delete churn over a ring of live objects; prints the timed part like workload.c. */
#include <cstdio>
#include <cstdlib>
#include <ctime>

static double now()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct Small { long a[3]; };
struct Medium { long a[20]; };

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	static void *ring[1024];
	static int kind[1024];
	unsigned long long s = 88172645463325252ull;
	double t0 = now();

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
	double t1 = now();
	printf("elapsed %.6f ops %ld events %ld\n", t1 - t0, n, 2 * n);
	return 0;
}
