// SPDX-License-Identifier: MIT
/* Phases a live view can be watched through (tests/live.sh), each held until a line is read
 * from the FIFO named by argv[1] (opened read and write: it never reads EOF):
 *
 *   phase_keep     10 x 100000 = 1000000 bytes, kept; then "kept" on stdout, and a wait
 *   (all of phase_keep's blocks freed)
 *   phase_second    5 x 7000   =   35000 bytes, kept; then "second" on stdout, and a wait
 *
 * then exit, phase_second's blocks still live. Nothing else allocates between the phases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void *volatile keep[10], *volatile second[5];

NOINLINE void phase_keep(void)
{
	for (int i = 0; i < 10; i++) {
		keep[i] = malloc(100000);
		memset(keep[i], 1, 100000);
	}
}

NOINLINE void phase_second(void)
{
	for (int i = 0; i < 5; i++) {
		second[i] = malloc(7000);
		memset(second[i], 2, 7000);
	}
}

static void wait_line(FILE *f)
{
	char line[64];

	if (!fgets(line, sizeof(line), f))
		exit(3);
}

int main(int argc, char **argv)
{
	FILE *f;

	if (argc != 2)
		return 2;
	f = fopen(argv[1], "r+");
	if (!f)
		return 3;
	setvbuf(f, NULL, _IONBF, 0);
	phase_keep();
	fprintf(stderr, "kept\n");
	wait_line(f);
	for (int i = 0; i < 10; i++)
		free(keep[i]);
	phase_second();
	fprintf(stderr, "second\n");
	wait_line(f);
	return 0;
}
