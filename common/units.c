// SPDX-License-Identifier: MIT
/* Sizes and durations on the command line: one grammar for both programs (units.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

/* A number as units.h defines it: its integer part, and its fraction as FRAC / DEN. */
struct number {
	uint64_t ip, frac, den;
	const char *end; /* the first character after it: the unit */
};

#define MAX_DECIMALS 18 /* 10^18 < 2^64: the fraction stays exact */

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The grammar is checked here rather than left to strtod, which also takes a sign, blanks, an
 * exponent, hexadecimal, "inf" and "nan": none is a size or a duration anyone means. */
static int number_scan(const char *s, struct number *n, const char **why)
{
	const char *p = s;

	*n = (struct number){.den = 1};
	if (!digit(*p) && !(*p == '.' && digit(p[1]))) {
		*why = "not a number (digits, and at most one '.')";
		return -EINVAL;
	}
	for (; digit(*p); p++)
		if (__builtin_mul_overflow(n->ip, 10, &n->ip) || __builtin_add_overflow(n->ip, (uint64_t)(*p - '0'), &n->ip)) {
			*why = "too large";
			return -ERANGE;
		}
	if (*p == '.')
		for (p++; digit(*p); p++) {
			if (n->den == 1000000000000000000ull) {
				*why = "more than 18 decimals";
				return -EINVAL;
			}
			n->frac = n->frac * 10 + (uint64_t)(*p - '0');
			n->den *= 10;
		}
	n->end = p;
	return 0;
}

int units__size(const char *s, uint64_t plain_unit, uint64_t *bytes, const char **why)
{
	unsigned __int128 part;
	struct number n;
	uint64_t unit, v;
	int err = number_scan(s, &n, why);

	if (err)
		return err;
	if (!*n.end)
		unit = plain_unit;
	else if (n.end[1])
		unit = 0;
	else if (*n.end == 'k' || *n.end == 'K')
		unit = 1ull << 10;
	else if (*n.end == 'm' || *n.end == 'M')
		unit = 1ull << 20;
	else if (*n.end == 'g' || *n.end == 'G')
		unit = 1ull << 30;
	else
		unit = 0;
	if (!unit) {
		*why = "expected bytes, or a number with k, m or g (KiB, MiB, GiB)";
		return -EINVAL;
	}
	part = (unsigned __int128)n.frac * unit;
	if (part % n.den) {
		*why = "not a whole number of bytes";
		return -EINVAL;
	}
	if (__builtin_mul_overflow(n.ip, unit, &v) || __builtin_add_overflow(v, (uint64_t)(part / n.den), &v)) {
		*why = "too large";
		return -ERANGE;
	}
	*bytes = v;
	return 0;
}

int units__duration(const char *s, double *seconds, const char **why)
{
	struct number n;
	double v, scale, divisor = 1;
	int err = number_scan(s, &n, why);

	if (err)
		return err;
	if (!*n.end || !strcmp(n.end, "s"))
		scale = 1;
	else if (!strcmp(n.end, "ms"))
		scale = 1, divisor = 1000; /* 1000 is exact in binary, 0.001 is not */
	else if (!strcmp(n.end, "m") || !strcmp(n.end, "min"))
		scale = 60;
	else if (!strcmp(n.end, "h"))
		scale = 3600;
	else
		scale = 0;
	if (!scale) {
		*why = "expected seconds, or a number with ms, s, m or h";
		return -EINVAL;
	}
	/* strtod reads exactly the digits number_scan passed: no unit begins with e, x or p. */
	v = strtod(s, NULL) * scale / divisor;
	if (!(v <= UNITS_MAX_SECONDS)) {
		*why = "more than 1e12 seconds";
		return -ERANGE;
	}
	*seconds = v;
	return 0;
}

int units__percent(const char *s, double *percent, const char **why)
{
	struct number n;
	int err = number_scan(s, &n, why);

	if (err)
		return err;
	if (strcmp(n.end, "%")) {
		*why = "expected a number followed by %";
		return -EINVAL;
	}
	*percent = strtod(s, NULL);
	return 0;
}
