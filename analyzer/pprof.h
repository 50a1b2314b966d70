/* SPDX-License-Identifier: MIT */
/* pprof output. */
#ifndef HEAPSNAP_PPROF_H
#define HEAPSNAP_PPROF_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "buildid.h"
#include "profile.h"

struct pprof_opts {
	bool no_symbolize;
	const char *snapshot_desc;
	/* One process's profile (its samples, and the locations and mappings they use); 0:
	 * all. Its cost is its samples': a caller with many processes passes a profile whose
	 * samples are this one's alone. */
	uint32_t pid;
	/* The profile's time and duration, when not the replay's stop and span: an export's
	 * interval. */
	int64_t time_ns, duration_ns;
};

/* P as a gzip'd perftools.profiles.Profile; 0 or -errno (-ENOMEM, -EIO). */
int pprof_write_profile(const struct profile *p, const struct pprof_opts *o, FILE *out);
#endif
