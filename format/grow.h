/* SPDX-License-Identifier: MIT */
/* The one way the format's code grows an array: by doubling, so that N appends cost O(N). */
#ifndef HEAPSNAP_GROW_H
#define HEAPSNAP_GROW_H
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes *BUF, an array of *CAP elements of ELEM bytes, hold NEED at least: *CAP doubled (or
 * FIRST, while it is 0) until it does. -ENOMEM, with *BUF and *CAP as they were, when the
 * memory is not there or its size would not fit a size_t. */
static inline int hs_grow(void **buf, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t n = *cap ? *cap : first;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (n > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*buf, n * elem);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}
#endif
