// SPDX-License-Identifier: MIT
/* The sampling math (recorder/sampling.c, libheapsnap/chance.h) against figures worked out
 * apart from it: exact thresholds and weights computed to 50 digits (Python's decimal module;
 * the formulas are beside each), libm's expm1, the laws they must obey, and the edges. Built
 * with ASan/UBSan. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "chance.h"
#include "record.h"
#include "sampling.h"

#include "check.h"

/* p = 1 - exp(-s/R) by another road than the code's expm1: the alternating series where s/R is
 * small (1 - exp loses digits there), 1 - exp elsewhere. */
static double p_other(uint64_t rate, uint64_t size)
{
	double x = (double)size / (double)rate;

	if (x < 1e-3)
		return x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4 * (1 - x / 5))));
	return 1 - exp(-x);
}

static void test_weights(void)
{
	/* 65536 / (1 - exp(-s/R)), to 50 digits, then rounded:
	 *   R=1, s=1          103676.4254613881765...
	 *   R=4096, s=4096    103676.4254613881765... (only s/R matters)
	 *   R=1, s=2           75793.5402352420881...
	 *   R=4096, s=100    2717255.8920088044688...
	 *   R=524288, s=4096  8421418.6666232639519...
	 *   R=524288, s=1  34359771136.0104166666...
	 *   R=1000, s=1       65568773.4613332423111... */
	static const struct {
		uint64_t rate, size, weight;
	} want[] = {
		{1, 1, 103676},           {4096, 4096, 103676},       {524288, 524288, 103676}, {1, 2, 75794},
		{4096, 100, 2717256},     {524288, 4096, 8421419},    {524288, 1, 34359771136ull},
		{1000, 1, 65568773},
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t w = sampling_weight(want[i].rate, want[i].size);

		CHECK(w == want[i].weight, "R=%" PRIu64 " s=%" PRIu64 ": weight %" PRIu64 ", want %" PRIu64, want[i].rate,
		      want[i].size, w, want[i].weight);
	}
	/* Every event (R=0) and an empty block weigh one. */
	CHECK(sampling_weight(0, 0) == HS_WEIGHT_ONE, "R=0 s=0");
	CHECK(sampling_weight(0, 1) == HS_WEIGHT_ONE, "R=0 s=1");
	CHECK(sampling_weight(0, UINT64_MAX) == HS_WEIGHT_ONE, "R=0 s=max");
	CHECK(sampling_weight(512 * 1024, 0) == HS_WEIGHT_ONE, "s=0");
	/* A block far past the rate is sampled for sure: weight one, never less. */
	CHECK(sampling_weight(4096, 1ull << 40) == HS_WEIGHT_ONE, "s >> R: %" PRIu64, sampling_weight(4096, 1ull << 40));
	CHECK(sampling_weight(1, UINT64_MAX) == HS_WEIGHT_ONE, "R=1 s=max");
	CHECK(sampling_weight(4096, 40 * 4096) == HS_WEIGHT_ONE, "s=40R: exp(-40) is below a weight unit");
	/* The largest rate the recorder takes (1024g) and a byte: 2^56 and a little, no overflow. */
	CHECK(sampling_weight(1ull << 40, 1) == 72057594037960704ull, "R=2^40 s=1: %" PRIu64,
	      sampling_weight(1ull << 40, 1));
	/* Past what any weight can say, the largest figure, not a wrapped one. */
	CHECK(sampling_weight(UINT64_MAX, 1) == (uint64_t)INT64_MAX, "R=max s=1: %" PRIu64, sampling_weight(UINT64_MAX, 1));

	/* Unbiased: p * weight is one unit, to the rounding of the weight (half a unit). */
	for (uint64_t rate = 1; rate <= (1ull << 30); rate *= 4)
		for (uint64_t size = 1; size <= (1ull << 32); size = size * 3 + 1) {
			double p = p_other(rate, size), w = (double)sampling_weight(rate, size);

			CHECK(fabs(p * w - HS_WEIGHT_ONE) <= 0.5 * p + 1e-9 * HS_WEIGHT_ONE,
			      "R=%" PRIu64 " s=%" PRIu64 ": p %.17g x weight %.0f = %.6f units", rate, size, p, w, p * w);
		}
	/* Monotonic: a bigger block is likelier, so weighs no more; a higher rate, no less. */
	for (uint64_t rate = 1; rate <= (1ull << 24); rate *= 8) {
		uint64_t prev = UINT64_MAX;

		for (uint64_t size = 1; size <= (1ull << 30); size += size / 7 + 1) {
			uint64_t w = sampling_weight(rate, size);

			CHECK(w <= prev && w >= HS_WEIGHT_ONE, "R=%" PRIu64 " s=%" PRIu64 ": %" PRIu64 " after %" PRIu64, rate,
			      size, w, prev);
			prev = w;
		}
	}
	for (uint64_t size = 1; size <= (1ull << 20); size *= 16) {
		uint64_t prev = HS_WEIGHT_ONE;

		for (uint64_t rate = 1; rate <= (1ull << 36); rate = rate * 2 + 3) {
			uint64_t w = sampling_weight(rate, size);

			CHECK(w >= prev, "s=%" PRIu64 " R=%" PRIu64 ": %" PRIu64 " after %" PRIu64, size, rate, w, prev);
			prev = w;
		}
	}
}

static void test_thresholds(void)
{
	/* t_i = R * q_i / mean(q), q_i = ln(2048 / (2047 - 2i)), the exponential quantile at
	 * (i + 1/2) / 1024, written differently from the code's -log1p(-(i + 0.5) / 1024);
	 * mean(q) = 0.99966158896466985388806951115629725619...; then rounded, at least 1.
	 * R=4096:   t_0 = 2.00116..., t_1 = 6.00643..., t_511 = 2836.09256..., t_512 = 2844.09527...,
	 *           t_1023 = 31241.01167...; the rounded ones sum to 4194300
	 * R=524288: 256.149..., 768.823..., 363019.848..., 364044.195..., 3998849.493...; sum 536870905
	 * R=1:      795 of them round to 0 and become 1; t_1023 = 7.627...; sum 1386 */
	static const struct {
		uint64_t rate, t0, t1, t511, t512, t1023, sum, ones;
	} want[] = {
		{4096, 2, 6, 2836, 2844, 31241, 4194300, 0},
		{524288, 256, 769, 363020, 364044, 3998849, 536870905, 0},
		{1, 1, 1, 1, 1, 8, 1386, 795},
	};
	static uint64_t t[HS_NR_THRESHOLDS];

	CHECK(HS_NR_THRESHOLDS == 1024, "the figures below are for 1024 thresholds, not %d", HS_NR_THRESHOLDS);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		uint64_t sum = 0, ones = 0, r = want[k].rate;

		sampling_thresholds(r, t);
		for (uint32_t i = 0; i < HS_NR_THRESHOLDS; i++) {
			sum += t[i];
			ones += t[i] == 1;
			CHECK(t[i] >= 1 && (!i || t[i] >= t[i - 1]), "R=%" PRIu64 ": t_%u = %" PRIu64, r, i, t[i]);
		}
		CHECK(t[0] == want[k].t0 && t[1] == want[k].t1 && t[511] == want[k].t511 && t[512] == want[k].t512 &&
			      t[1023] == want[k].t1023,
		      "R=%" PRIu64 ": t_0,1,511,512,1023 = %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, r, t[0],
		      t[1], t[511], t[512], t[1023]);
		CHECK(sum == want[k].sum && ones == want[k].ones, "R=%" PRIu64 ": sum %" PRIu64 ", ones %" PRIu64, r, sum, ones);
	}
	/* Their mean is the rate, to the rounding of each (half a byte). */
	for (uint64_t r = 1000; r <= (1ull << 40); r = r * 5 + 7) {
		double sum = 0;

		sampling_thresholds(r, t);
		for (uint32_t i = 0; i < HS_NR_THRESHOLDS; i++)
			sum += (double)t[i];
		CHECK(fabs(sum / HS_NR_THRESHOLDS - (double)r) <= 0.5 + 1e-12 * (double)r, "R=%" PRIu64 ": mean %.3f", r,
		      sum / HS_NR_THRESHOLDS);
	}
	/* R=0 is never drawn from (every event is recorded); it still fills the table with 1s. */
	sampling_thresholds(0, t);
	CHECK(t[0] == 1 && t[1023] == 1, "R=0: %" PRIu64 " %" PRIu64, t[0], t[1023]);
	/* No threshold a signed countdown would read as negative. */
	sampling_thresholds(UINT64_MAX, t);
	CHECK(t[1023] == (uint64_t)INT64_MAX && t[0] <= (uint64_t)INT64_MAX, "R=max: %" PRIu64 " %" PRIu64, t[0], t[1023]);
}

/* libheapsnap's chance (1 - e^(-x), without libm) against libm's -expm1(-x), over x from
 * 1e-12 to 800 by factors of 1.01 and at the edges of its series and its halvings; and to 50
 * digits: 1 - e^(-1/1024) = 0.000976085818024337765..., 1 - e^(-0.5) = 0.393469340287366576... */
static void test_chance(void)
{
	double worst = 0, at = 0;
	const double edges[] = {0.25, 0.5 - 1e-15, 0.5, 1, 2, 745, 746, 746.5};

	for (double x = 1e-12; x < 800; x *= 1.01) {
		double want = -expm1(-x), err = fabs(chance(x) - want) / want;

		if (err > worst)
			worst = err, at = x;
	}
	for (unsigned i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		double want = -expm1(-edges[i]), err = fabs(chance(edges[i]) - want) / want;

		if (err > worst)
			worst = err, at = edges[i];
	}
	CHECK(worst < 1e-12, "chance: relative error %g at x=%g", worst, at);
	CHECK(fabs(chance(1.0 / 1024) - 0.000976085818024337765) < 1e-18, "chance(1/1024) = %.18g", chance(1.0 / 1024));
	CHECK(fabs(chance(0.5) - 0.393469340287366576) < 1e-15, "chance(0.5) = %.18g", chance(0.5));
	CHECK(chance(0) == 0 && chance(-1) == 0 && chance(NAN) == 0, "chance of nothing: %g %g %g", chance(0),
	      chance(-1), chance(NAN));
	CHECK(chance(1e6) == 1 && chance(INFINITY) == 1, "chance of everything: %g %g", chance(1e6), chance(INFINITY));
}

int main(void)
{
	test_weights();
	test_thresholds();
	test_chance();
	printf("test_sampling: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
