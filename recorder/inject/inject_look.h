/* SPDX-License-Identifier: MIT */
/* Injection, step 1: looking at the target, touching nothing (recorder/inject/inject_look.c). */
#ifndef HEAPSNAP_INJECT_LOOK_H
#define HEAPSNAP_INJECT_LOOK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procfs.h"

struct hs_inject_data;

/* What the target wrote, escaped in place as every string from a file is, cut to SIZE. */
void look__printable(char *s, size_t size);
const char *look__base_name(const char *p);
bool look__is_libc(const char *p);
/* The addresses in PID of NR (at most 8) symbols of the file mapped at V[I]; 0 for one not
 * found or not mapped. */
void look__symbol_addrs(pid_t pid, struct proc_map *v, int n, int i, const char *const *symbols, int nr,
			uint64_t *addrs);
/* The trampoline's slots into D (allocator entries, then safe points); CUT: allocator entries
 * past the slots, ALLOCS: allocator entries taken. True if the walk gave up (a million reads). */
bool look__find_slots(pid_t pid, struct proc_map *v, int n, struct hs_inject_data *d, bool verbose, uint32_t *cut,
		      uint32_t *allocs);
/* A `syscall` instruction in libc's code, or 0. */
uint64_t look__find_syscall(pid_t pid, struct proc_map *v, int n);
/* PID as the process sees itself (getpid() there): the last field of NSpid. */
pid_t look__ns_pid(pid_t pid);
/* Yama's ptrace_scope, or -1 where there is no Yama. */
int look__yama_scope(void);
/* Refusals that need nothing of the target but /proc (WHY says which): -ESRCH none or a
 * zombie, -EDEADLK the recorder itself, -EAGAIN stopped, -EBUSY traced, -EPERM Yama. */
int look__preflight(pid_t pid, char *why, size_t why_len, bool *seccomp);
/* -EALREADY if another heapsnap-record records PID now (WHY names it). */
int look__already_recorded(pid_t pid, const struct proc_map *v, int n, char *why, size_t why_len);
/* The target's glibc in V: -ENOENT (WHY says why) without one, or without the functions the
 * stub calls there, whose addresses go into D; *LOADED: libheapsnap.so is mapped already. */
int look__libc(pid_t pid, struct proc_map *v, int n, struct hs_inject_data *d, bool *loaded, char *why,
	       size_t why_len);
/* A thread of PID to stop: the main one if it runs, else any other not in uninterruptible
 * sleep, stopped or gone; PID itself when none is. */
pid_t look__pick_thread(pid_t pid);
#endif
