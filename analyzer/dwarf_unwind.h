/* SPDX-License-Identifier: MIT */
/* Offline DWARF unwinding of --stack dwarf captures with libdwfl. */
#ifndef HEAPSNAP_DWARF_UNWIND_H
#define HEAPSNAP_DWARF_UNWIND_H
#include <stdint.h>

#include "replay.h"
#include "symbolize.h"

enum unwind_fail {
	UNW_OK,
	UNW_NO_BINARY,   /* a frame's pc is in no module whose file was found */
	UNW_NO_CFI,      /* the module has no usable .eh_frame/.debug_frame for the pc */
	UNW_WINDOW,      /* the unwinder needed stack beyond the recorded window */
	UNW__COUNT,
};

struct unwind_stats {
	uint64_t unwinds, cache_hits, frames;
	uint64_t fail[UNW__COUNT];
	double seconds;
};

struct unwinder;

struct unwinder *unwinder__new(struct replay *r, struct symbolizer *sym);
/* Unwinds stack ID of PID into return addresses, innermost first (as fp stacks are).
 * The result is cached per (pid, id) and stays valid until unwinder__free. */
const uint64_t *unwinder__stack(struct unwinder *u, uint32_t pid, uint64_t id, uint32_t *nr);
const struct unwind_stats *unwinder__stats(const struct unwinder *u);
void unwinder__free(struct unwinder *u);
extern const char *const unwind_fail_names[UNW__COUNT];
#endif
