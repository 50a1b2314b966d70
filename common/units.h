/* SPDX-License-Identifier: MIT */
/* Sizes and durations on the command line, read the same way by heapsnap-record and
 * heapsnap-analyze.
 *
 * A number is decimal digits with at most one '.', nothing else: no sign, exponent, hex, blank,
 * "inf" or "nan". A size is a number of bytes, or of KiB, MiB or GiB with a suffix k, m or g (K,
 * M, G too), and must come to a whole number of bytes (1.5k is 1536). A duration is seconds, or a
 * number with ms, s, m (min) or h, at most UNITS_MAX_SECONDS.
 *
 * Each returns 0, or -EINVAL (not such a value) or -ERANGE (too large), and then points *WHY at
 * a static phrase saying what is wrong, for "invalid value 'X' for --opt: WHY". */
#ifndef HEAPSNAP_UNITS_H
#define HEAPSNAP_UNITS_H
#include <stdint.h>

/* About 31,700 years: a duration past this is a typing error, and its nanoseconds would not
 * fit in a uint64_t. */
#define UNITS_MAX_SECONDS 1e12

/* S as bytes into *BYTES. A number without a suffix counts PLAIN_UNIT bytes (1 for most
 * options; 1 MiB for --ringbuf-size, whose plain figures are MiB). */
int units__size(const char *s, uint64_t plain_unit, uint64_t *bytes, const char **why);
/* S as seconds into *SECONDS. */
int units__duration(const char *s, double *seconds, const char **why);
/* S as a number followed by '%' into *PERCENT (5% -> 5). */
int units__percent(const char *s, double *percent, const char **why);
#endif
