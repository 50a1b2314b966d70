/* SPDX-License-Identifier: MIT */
/* A way in: how events reach the recorder's rings. BPF uprobes (recorder/bpf/bpf_way.c),
 * libheapsnap.so preloaded into a command (recorder/preload/preload_way.c), or injected into a
 * running process (recorder/inject/inject_way.c). The session and process tracking call a way
 * only through this table; every operation may be NULL where a way has nothing to do. A way's
 * own state hangs from session.way_state. */
#ifndef HEAPSNAP_WAY_H
#define HEAPSNAP_WAY_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct session;
struct run;
struct proc;
struct counter_set;

struct way_ops {
	const char *name;
	/* Before anything is made: what the way needs of this host (privileges, limits). */
	int (*check)(struct session *s);
	/* Makes the rings (session.rings) and the epoll set (session.epfd), and the way's state:
	 * before the command starts. Returns 1 when the way gave up for BPF (said why): the
	 * session frees it and starts BPF's instead. */
	int (*start)(struct session *s, struct run *u);
	/* The child's environment, in the held command between fork and exec. */
	int (*child_env)(const struct session *s);
	/* The held command exists (session.child) or -p is known: whatever must be in place
	 * before its first allocation (BPF: the probes). Before the file's header. */
	int (*attach)(struct session *s, struct run *u);
	/* Process tracking: a process joined the recording. */
	void (*process_tracked)(struct session *s, pid_t pid);
	/* Process tracking: P's mappings were (re)read; ATTACH: objects new to it may be probed. */
	void (*mappings)(struct session *s, struct proc *p, bool attach);
	/* Process tracking: a tracked process other than the target itself exited. */
	void (*process_gone)(struct session *s, pid_t pid);
	/* A process of the recorder's own (the live view), held before its exec: never to be
	 * recorded, though -a records every process. */
	void (*helper_started)(struct session *s, pid_t pid);
	/* The longest the loop may sleep on the epoll set, in ms; HELD_MS, while events wait in
	 * the rings for the merge's slack (and fill none of them a quarter: see drain). */
	int poll_ms, held_ms;
	/* The loop woke up (read away level-triggered wake-ups). */
	void (*woken)(struct session *s);
	/* After each drain; TICK once a second. */
	void (*polled)(struct session *s, uint64_t now, bool tick);
	/* The producers' counters into session.cnt (enum hs_counter). */
	void (*read_counters)(struct session *s);
	/* The way's own counters, written with the others. */
	void (*add_counters)(struct session *s, struct counter_set *c);
	/* The launched command was reaped (session.child_status): BPF saw its exit, in-process not. */
	void (*child_reaped)(struct session *s);
	/* Before the final drain: producers left behind go dormant. */
	void (*quiesce)(struct session *s);
	/* After the final drain: undoes what the way did to the target, says what it lost. */
	void (*finish)(struct session *s);
	/* Cleanup, on every path: first before the command is waited for (detach), then after. */
	void (*detach)(struct session *s);
	void (*free)(struct session *s);
};

extern const struct way_ops bpf_way, preload_way, inject_way;

/* BPF's privileges and kernel, checked as the way's check (also for -p's fallback). */
int bpf_way__check(struct session *s);
#endif
