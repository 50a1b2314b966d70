/* SPDX-License-Identifier: MIT */
/* Processes and their mappings, for every way in: the PROCESS, THREAD_NAME, MAPPING, UNMAP and
 * EXIT records, from /proc while a process lives and from its events when it is gone. A way in
 * hears of processes and mappings through its way_ops. */
#ifndef HEAPSNAP_PROCESSES_H
#define HEAPSNAP_PROCESSES_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "procfs.h"

struct session;
struct hs_proc_event;
struct hs_mmap_event;

struct proc {
	pid_t pid;
	bool alive;
	struct proc_map *maps;
	int nr_maps;
	/* When MAPS began to be read (CLOCK_MONOTONIC ns): an exec event stamped before it
	 * arrives late (its ring was merged after another CPU's), and MAPS are the new image's. */
	uint64_t maps_ns;
	/* As last written: what a fork child that is gone before /proc is read inherits. */
	char *comm, *cmdline, *exe;
};

struct proc *proc_find(struct session *s, pid_t pid);
struct proc *add_proc(struct session *s, pid_t pid);
void write_mapping(struct session *s, pid_t pid, const struct proc_map *m, uint64_t now);
/* Re-reads P's maps, writes what appeared and vanished, and tells the way in (ATTACH: it may
 * probe objects new to P). WHEN: the time of the event that changed them (mappings found new
 * are stamped so: what was allocated from them since is found in them), 0 for now. */
void rescan_maps(struct session *s, struct proc *p, bool attach, uint64_t when);
/* Every live process's maps again (ATTACH as above). */
void rescan_all_maps(struct session *s, bool attach);
void write_process(struct session *s, pid_t pid, uint32_t origin, pid_t ppid, const struct hs_proc_event *e);
/* PID's threads, named once each. */
void name_threads(struct session *s, pid_t pid);
void track_process(struct session *s, pid_t pid, uint32_t origin, pid_t ppid, const struct hs_proc_event *e);
/* -p: the attached process's record, threads and mappings, once the header is written. */
void write_attached(struct session *s, pid_t pid);
void on_proc_event(struct session *s, const struct hs_proc_event *e, uint64_t t);
void on_mmap_event(struct session *s, const struct hs_mmap_event *e, uint64_t t);
/* Records a thread as named (BPF's HS_EV_COMM did): not read again from /proc. */
void thread_named(struct session *s, pid_t pid, pid_t tid);
void procs_free(struct session *s);
#endif
