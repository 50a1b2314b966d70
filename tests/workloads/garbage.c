// SPDX-License-Identifier: MIT
/* Writes deterministic pseudo-random garbage files for the analyzer's bad-input tests. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	unsigned long long x = 88172645463325252ull;
	int n = argc > 2 ? atoi(argv[2]) : 4096;
	FILE *f;

	if (argc < 2 || !(f = fopen(argv[1], "wb")))
		return 2;
	for (int i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fputc((int)(x & 0xff), f);
	}
	return fclose(f) ? 1 : 0;
}
