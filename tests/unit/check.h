/* SPDX-License-Identifier: MIT */
/* The unit tests' one assertion: counts what it checked and what failed, says where and why,
 * and goes on, so that one run shows every failure. */
#ifndef HEAPSNAP_TESTS_CHECK_H
#define HEAPSNAP_TESTS_CHECK_H
#include <stdio.h>

static int failures, checks;
#define CHECK(cond, ...)                                                                                     \
	do {                                                                                                 \
		checks++;                                                                                    \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                      \
			fprintf(stderr, __VA_ARGS__);                                                        \
			fputc('\n', stderr);                                                                 \
			failures++;                                                                          \
		}                                                                                            \
	} while (0)
#endif
