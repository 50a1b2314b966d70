/* SPDX-License-Identifier: MIT */
/* Export: a recording followed as it is written, cut into intervals, each interval sent as
 * one heap profile per process to a fleet's pipeline (export.c); the destinations and their
 * queue (export_sink.c); the OTLP profiles encoding (export_otlp.c). */
#ifndef HEAPSNAP_EXPORT_H
#define HEAPSNAP_EXPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* One interval of one recording: what every destination encodes. */
struct export_interval {
	/* The heap at the interval's end; its samples' alloc_* values are what was allocated
	 * during the interval, its inuse_* values what was live at its end. */
	const struct profile *p;
	uint64_t start_ns, end_ns; /* wall clock, ns since the epoch */
	const uint32_t *pids;      /* the processes with a profile in it, ascending */
	/* p's samples are by process: pids[i]'s are first[i] up to first[i + 1]. */
	const uint32_t *first;
	uint32_t nr_pids;
	const char *service_name; /* --service-name, or NULL: each process's command */
	bool no_symbolize;
	uint32_t seq; /* 1 for the first interval */
};

/* The service a process's profile is named for: --service-name, else its command. */
const char *export__service(const struct export_interval *iv, const struct process *pr);
/* IV's profile of process I (of pids) alone: its samples, and their totals. */
void export__process_view(const struct export_interval *iv, uint32_t i, struct profile *out);

/* IV as an OTLP ExportProfilesServiceRequest (profiles v1development): per process one
 * ResourceProfiles with four Profiles (inuse_space, inuse_objects, alloc_space,
 * alloc_objects), all sharing one dictionary. *OUT is malloc'd. 0 or -ENOMEM. */
int otlp__encode(const struct export_interval *iv, uint8_t **out, size_t *len);

enum export_kind { EXPORT_OTLP, EXPORT_PYROSCOPE, EXPORT_DIR };

struct export_sink_opts {
	const char *url;
	const char *header_file; /* "Name: value" lines added to every request, or NULL */
	const char *cacert;      /* PEM file of the CAs an https destination is checked against */
	uint32_t keep;           /* dir: profiles kept in the folder (0: every one) */
	uint32_t queue;          /* requests waiting at most; the oldest is dropped past it */
	double timeout;          /* seconds a request may take, and the drain at the end */
	double backoff_max;      /* seconds between tries at most, while a destination fails */
};

struct export_stats {
	uint64_t intervals, profiles_sent, requests_sent, bytes_sent;
	uint64_t lost_profiles; /* dropped: the queue full, or still unsent at the end */
	uint64_t lost_rejected; /* refused by the destination (an HTTP 4xx other than 408/429) */
	uint64_t retries;
};

struct export_sink;

/* Parses O->url and readies the destination: a folder created, an HTTP endpoint reached.
 * Returns 0 or -errno with a sentence naming what failed in ERR. */
int export_sink__open(struct export_sink **out, const struct export_sink_opts *o, char *err, size_t len);
/* Encodes IV for the destination and writes it (dir:) or queues it (HTTP), never waiting
 * for a destination that is slow or down. 0 or -errno (out of memory, a folder's write). */
int export_sink__put(struct export_sink *s, const struct export_interval *iv);
/* Waits up to the timeout for the queue to empty; what is left is dropped and counted. */
void export_sink__drain(struct export_sink *s);
void export_sink__stats(struct export_sink *s, struct export_stats *st);
const char *export_sink__url(const struct export_sink *s);
void export_sink__free(struct export_sink *s);
#endif
