// SPDX-License-Identifier: MIT
/* The chance 1 - e^(-x) that a Poisson process of one event a unit has an event in x units
 * (x >= 0), as libm's -expm1(-x) gives it, without libm: the library links only libc. */
#ifndef HEAPSNAP_CHANCE_H
#define HEAPSNAP_CHANCE_H

static inline double chance(double x)
{
	double term, sum, e;
	int halvings = 0;

	if (!(x > 0))
		return 0; /* and NaN */
	if (x > 746)
		return 1; /* e^(-x) is below the least double */
	/* The series below converges fast only for a small x: e^(-x) of a larger one is that of
	 * x / 2^k squared k times, which loses k bits at most (11, at 746). */
	while (x >= 0.5) {
		x /= 2;
		halvings++;
	}
	/* x - x^2/2! + x^3/3! - ...: no subtraction of near equals, where 1 - e^(-x) would lose
	 * the digits of a small x; at x < 0.5 the 20th term is below 2^-53 of the sum. */
	term = sum = x;
	for (int i = 2; i <= 20; i++) {
		term *= -x / i;
		sum += term;
	}
	if (!halvings)
		return sum;
	e = 1 - sum; /* e^(-x) of x in [0.25, 0.5): 0.6 or more, whole digits */
	while (halvings--)
		e *= e;
	return 1 - e;
}

#endif
