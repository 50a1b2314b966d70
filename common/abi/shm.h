/* SPDX-License-Identifier: MIT */
/* The shared memory between heapsnap-record and libheapsnap.so, the in-process recorder: a
 * header page, then a pool of rings that threads of the target claim, one each. A ring holds
 * the same events as the BPF rings (common/abi/event_abi.h), framed as a BPF ring buffer frames
 * them (an 8-byte header whose length has a discard bit), so the recorder reads both kinds
 * of ring with the same code. Fixed-width fields only: the target may be another build. */
#ifndef HEAPSNAP_SHM_H
#define HEAPSNAP_SHM_H
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <linux/types.h>

#include "event_abi.h"

#define HS_SHM_MAGIC 0x4d485348u /* "HSHM" */
/* 4: Python's counters; 5: processes stopped by a stalled recorder; 6: pools stopped; 7: stacks
 * cut short said in their allocation's event (hs_event_hdr.stop), not counted in the header */
/* 8: the recorder woken through a futex word, wake_seq, rather than an eventfd of the target's;
 * 9: the library's messages through note[], not the target's stderr */
#define HS_SHM_VERSION 9
#define HS_SHM_NOTE_BYTES 240
#define HS_SHM_ENV "HEAPSNAP_SHM"   /* "FD_SHM,INODE": inherited by the target */
/* "NAME,PID,UID": the recorder's abstract unix socket, which hands the memory's descriptor
 * (SCM_RIGHTS) to a descendant whose inherited one was closed (close_fds), and who listens
 * on it: the child checks the server is that process and user. */
#define HS_SOCK_ENV "HEAPSNAP_SOCK"
#define HS_SHM_MAX_RINGS 1024
#define HS_SHM_RING_HDR 8            /* as BPF_RINGBUF_HDR_SZ */
#define HS_SHM_DISCARD (1u << 30)    /* as BPF_RINGBUF_DISCARD_BIT: padding to the ring's end */

/* The owner word of a ring: pid << 32 | tid while a thread writes it; with CLOSING set the
 * thread has exited, and the recorder frees the ring once it has read it. */
#define HS_SHM_CLOSING (1ull << 31)

struct hs_shm_ring {
	uint64_t owner;   /* atomic: 0 free, else pid << 32 | tid (| HS_SHM_CLOSING) */
	uint64_t pad0[7];
	uint64_t cons;    /* the recorder's read position */
	uint64_t pad1[7];
	uint64_t prod;    /* the owning thread's write position */
	uint64_t pad2[7];
};

struct hs_shm_hdr {
	uint32_t magic, version;
	uint32_t nr_rings, ring_bytes;   /* rings' data follow the ring table, ring_bytes each */
	uint64_t sample_rate;            /* 0: every event */
	uint32_t stack_mode, max_stack;  /* HS_STACK_*, frames */
	uint32_t dwarf_bytes;            /* HS_STACK_DWARF: the stack window copied per sample */
	uint32_t starved;                /* atomic: a thread found every ring held; the recorder
					  * looks for rings of processes gone at once, then clears it */
	/* Bumped, then woken (FUTEX_WAKE, shared), by a thread that wants the recorder now: a
	 * ring past a quarter full, none free, or full. A futex needs no descriptor in the
	 * target, where a program that lists or closes its own would find ours. */
	uint32_t wake_seq;
	uint32_t pad_wake;
	uint64_t data_offset;            /* from the start of the mapping to ring 0's data */
	uint64_t recorder_pid;
	uint64_t dormant;                /* atomic: non-zero, every hook passes straight through */
	uint64_t heartbeat_ns;           /* atomic: the recorder's CLOCK_MONOTONIC, every 100 ms */
	/* A message of the library's, which the recorder prints: the target's stderr is the
	 * program's (closed, a socket, its log), never ours to write. A process claims the slot
	 * (note_pid 0 -> its pid), writes note[], then publishes note_len; the recorder prints
	 * it, then frees the slot (note_len, then note_pid, to 0). Taken, the slot is missed
	 * by another message, which its counter still says. */
	uint32_t note_pid, note_len;
	char note[HS_SHM_NOTE_BYTES];
	uint64_t counters[HS_CNT__MAX];  /* atomic adds from the target */
	uint64_t thresholds[HS_NR_THRESHOLDS]; /* exponential quantiles, mean sample_rate */
	struct hs_shm_ring rings[];      /* nr_rings of them */
};

static inline uint64_t hs_shm_size(uint32_t nr_rings, uint32_t ring_bytes)
{
	uint64_t table = sizeof(struct hs_shm_hdr) + (uint64_t)nr_rings * sizeof(struct hs_shm_ring);

	table = (table + 4095) & ~4095ull;
	return table + (uint64_t)nr_rings * ring_bytes;
}

static inline uint64_t hs_shm_data_offset(uint32_t nr_rings)
{
	return (sizeof(struct hs_shm_hdr) + (uint64_t)nr_rings * sizeof(struct hs_shm_ring) + 4095) & ~4095ull;
}
/* Whether FD of this process is an eventfd: the recorder checks the wake descriptor it takes
 * from an injected target (a descriptor of the program's own may sit at the number ours
 * had). Without /proc, no. */
static inline bool hs_fd_is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return !strcmp(link, "anon_inode:[eventfd]");
}

/* The lowest number a descriptor of heapsnap's takes in a target: high, below the soft
 * RLIMIT_NOFILE, so that a program that closed its standard descriptors (or works on small
 * numbers of its own) never gets ours as its stdout and write its output into the rings. */
#define HS_FD_HIGH_MAX 1000
#define HS_FD_HIGH_HEADROOM 128

/* FD moved up to a high number (close-on-exec with CLOEXEC), the low one closed; FD as it was
 * if no number is free up there, though never below 3 while one above is. */
static inline int hs_fd_high(int fd, bool cloexec)
{
	int cmd = cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, high;
	long min = HS_FD_HIGH_MAX;
	struct rlimit rl;

	if (fd < 0)
		return fd;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur - HS_FD_HIGH_HEADROOM < min)
		min = (long)rl.rlim_cur - HS_FD_HIGH_HEADROOM;
	if (fd >= min)
		return fd;
	high = min > 3 ? fcntl(fd, cmd, (int)min) : -1;
	if (high < 0 && fd < 3)
		high = fcntl(fd, cmd, 3);
	if (high < 0)
		return fd;
	close(fd);
	return high;
}
#endif
