/* SPDX-License-Identifier: MIT */
/* What every way in shares: the options, the file being written, the rings being read, the
 * live set and stacks, the processes, the counters, the command; and which way in is used,
 * with a pointer to its own state. session.c runs it: open -> start -> attach -> poll ->
 * finish. */
#ifndef HEAPSNAP_SESSION_H
#define HEAPSNAP_SESSION_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hmap.h"
#include "objects.h"
#include "output.h"
#include "ptrmap.h"
#include "record.h"
#include "recorder.h"
#include "signals.h"

struct way_ops;
struct ring;
struct merge_ent;
struct proc;
struct nspid;

/* A live block, recording every event: user space keeps the live set then. */
struct live_info {
	uint64_t size, stack_id;
	uint32_t kind, next_free;
};

struct session {
	const struct rec_opts *o;
	struct output out;
	const struct way_ops *way;
	void *way_state;        /* the way's own (struct bpf_way, struct preload_way...) */
	enum rec_via via;       /* the way in chosen, and why (in the file's header) */
	const char *via_why;

	/* The rings the way in's producers write, and the epoll set the loop sleeps on. */
	struct ring *rings;
	int nr_rings;
	struct merge_ent *merge; /* ring_reader.c's heap of rings, nr_rings long */
	uint32_t ring_bytes;
	int epfd;

	struct hmap stacks; /* stack hash -> id << 1 | written */
	uint64_t next_stack_id;
	uint64_t last_hash, last_id; /* the previous lookup in stacks */
	struct hmap dwarf_windows;   /* content hash of a dwarf window -> stack id */
	uint64_t dwarf_used_max; /* the largest stack in use that a dwarf window did not hold */
	/* (pid, ptr) -> index into pool. The index is the block's slot in the file: the pool
	 * reuses freed indexes first, so slots stay as few as the blocks live at once. */
	struct ptrmap ulive;
	struct hmap pending;         /* (pid, tid) -> pool index of the block its realloc released */
	struct live_info *pool;
	uint32_t nr_pool, cap_pool, pool_free;
	uint64_t user_unknown_frees;
	uint32_t last_pid;           /* -a: the previous event's process, known to be tracked */
	struct hs_probe *probes;     /* for the session header */
	int nr_probes;

	struct objects objs; /* the files the targets map */
	struct hmap tids;    /* (pid, tid) already named */
	struct proc *procs;
	int nr_procs;
	struct hmap proc_idx; /* pid -> index + 1 in procs: -a tracks every process of the host */
	/* A target in another PID namespace (injected): its pids to the host's, for every event. */
	struct nspid *nsx;

	double live_est, peak_est;
	uint64_t peak_time;
	uint64_t n_alloc, n_free, stacks_written;
	uint64_t sampled_allocs;     /* sampling, ALLOCs received but restores */
	uint64_t stops[HS_CNT__MAX]; /* ALLOCs whose stack stopped short, by counter (hdr.stop) */
	double bytes_alloc;
	uint64_t cnt[HS_CNT__MAX], cnt_warned[HS_CNT__MAX];

	pid_t child;
	int child_status;
	bool child_reaped;
	struct rec_signals sig; /* what signals asked for, read from the signalfd */
	/* --export: the exporter's status lines, read from fd, as counters in the file. */
	struct export_report {
		int fd; /* -1 when not exporting, or once it has ended */
		bool ready, last, ended;
		uint64_t intervals, sent, lost, rejected;
		char buf[512];
		size_t len;
	} exp;
};

/* Reads what the exporter said since the last call, waiting up to TIMEOUT_MS for a line. */
void export_report__read(struct export_report *e, int timeout_ms);

/* What the run keeps between its steps. */
struct run {
	char *exe;           /* the command, resolved */
	pid_t live_pid;      /* --live: the follower printing the view (heapsnap-analyze live) */
	pid_t export_pid;    /* --export: heapsnap-analyze export */
	bool summary;        /* run_finish ran: its summary is said once the view is done */
	double elapsed;      /* seconds recorded, for the summary */
	int go_fd;           /* releases the held command */
	uint32_t ring_bytes;
	uint64_t t_start;
	bool not_found;      /* the command: exit 127, as a shell says */
	/* SIGUSR1s read and not yet placed: each snapshot waits until every ring is read up to
	 * the moment its signal was seen (ring_reader.c, drain_upto). */
	struct pending_snap {
		uint64_t at; /* CLOCK_MONOTONIC ns, when the signal was read */
		unsigned n;  /* signals read at that moment */
	} snaps[16];
	int nr_snaps;
};
#endif
