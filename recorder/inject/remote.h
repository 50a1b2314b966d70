/* SPDX-License-Identifier: MIT */
/* One thread of another process, stopped with ptrace and made to run system calls or a
 * store of ours. Nothing else runs in it: it may have been stopped inside malloc or holding
 * the loader's lock, so it never calls into libc (but remote__call, for a thread known to be
 * at a safe point). Its registers are put back as they were
 * before it is let go; a signal that arrived meanwhile is delivered then. */
#ifndef HEAPSNAP_REMOTE_H
#define HEAPSNAP_REMOTE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct remote;

/* Stops thread TID of process PID (PTRACE_SEIZE, PTRACE_INTERRUPT). -EPERM when ptrace is not
 * permitted, with the reason in WHY. */
int remote__stop(pid_t pid, pid_t tid, struct remote **out, char *why, size_t why_len);
/* Where a `syscall` instruction is in the target's executable memory. */
void remote__set_syscall_insn(struct remote *r, uint64_t addr);
/* Runs system call NR with ARGS in the stopped thread; its return value in *RET (-errno). */
int remote__syscall(struct remote *r, long nr, const uint64_t args[6], int64_t *ret);
/* Runs the stub's store (mov %rsi,(%rdi); int3) at STORE_PC: *ADDR = VALUE. */
int remote__store(struct remote *r, uint64_t store_pc, uint64_t addr, uint64_t value);
/* Runs the code at PC (the stub's, ending in an int3 before END_PC) on the thread's stack,
 * below its red zone. Only for a thread the caller knows to be at a safe point: one stopped
 * in a wait made by a libc wrapper (inject_attach.c, idle_fire), which holds no lock. */
int remote__call(struct remote *r, uint64_t pc, uint64_t end_pc);
/* The system call the thread was stopped in (-1: none). */
long remote__in_syscall(const struct remote *r);
pid_t remote__tid(const struct remote *r);
/* Where the stopped thread was when it stopped. */
uint64_t remote__pc(const struct remote *r);
/* Puts the registers back, lets the thread go; frees R. Returns how long it was stopped. */
uint64_t remote__release(struct remote *r);

/* The target's memory, read or written whether stopped or not. Return 0 or -errno. */
int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int remote_write(pid_t pid, uint64_t addr, const void *buf, size_t len);
#endif
