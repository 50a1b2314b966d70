/* SPDX-License-Identifier: MIT */
/* Poisson sampling of allocated bytes, the math of it in one place: the thresholds the
 * samplers of every way in (BPF, preloaded, injected) count down from, and the weight the
 * recorder gives each sample. A block of SIZE bytes is sampled with probability
 * p = 1 - exp(-SIZE/RATE), independently of every other block, and stands for 1/p blocks. */
#ifndef HEAPSNAP_SAMPLING_H
#define HEAPSNAP_SAMPLING_H
#include <stdint.h>

#include "abi/event_abi.h"

/* HS_NR_THRESHOLDS quantiles of the exponential distribution of mean RATE into OUT, scaled so
 * that their mean is RATE; each at least 1 and at most INT64_MAX (the samplers' countdowns are
 * signed). A sampler draws one at random per sample. */
void sampling_thresholds(uint64_t rate, uint64_t *out);

/* The weight of a sampled block of SIZE bytes at RATE, in HS_WEIGHT_ONE units: 1/p, rounded.
 * HS_WEIGHT_ONE (every event) for RATE 0 or SIZE 0; at most INT64_MAX. */
uint64_t sampling_weight(uint64_t rate, uint64_t size);
#endif
