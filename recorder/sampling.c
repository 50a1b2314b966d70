// SPDX-License-Identifier: MIT
/* Poisson sampling of bytes: thresholds and weights (sampling.h). */
#include <math.h>

#include "record.h"
#include "sampling.h"

/* 2^63 as a double: a figure at or past it has no int64_t, and llround's result is undefined. */
#define TWO_63 9223372036854775808.0

static uint64_t round_capped(double v)
{
	return v >= TWO_63 ? (uint64_t)INT64_MAX : (uint64_t)llround(v);
}

void sampling_thresholds(uint64_t rate, uint64_t *out)
{
	double sum = 0, q[HS_NR_THRESHOLDS];

	/* The quantiles at the middle of each of HS_NR_THRESHOLDS equal slices of probability. */
	for (uint32_t i = 0; i < HS_NR_THRESHOLDS; i++) {
		q[i] = -log1p(-((double)i + 0.5) / HS_NR_THRESHOLDS);
		sum += q[i];
	}
	for (uint32_t i = 0; i < HS_NR_THRESHOLDS; i++) {
		uint64_t v = round_capped(q[i] / (sum / HS_NR_THRESHOLDS) * (double)rate);

		out[i] = v ? v : 1;
	}
}

/* Weighting a sample by the inverse of its probability keeps totals unbiased (Horvitz-Thompson). */
uint64_t sampling_weight(uint64_t rate, uint64_t size)
{
	double p;

	if (!rate || !size)
		return HS_WEIGHT_ONE;
	p = -expm1(-(double)size / (double)rate); /* 1 - exp(-x) without cancellation for small x */
	return round_capped((double)HS_WEIGHT_ONE / p);
}
