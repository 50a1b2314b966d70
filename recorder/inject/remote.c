// SPDX-License-Identifier: MIT
/* A thread of the target stopped with ptrace, and made to run system calls (see remote.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "remote.h"

struct remote {
	pid_t pid, tid;
	struct user_regs_struct saved;
	uint64_t syscall_insn;
	int pending_sig;   /* a signal that stopped the thread: delivered when it goes */
	uint64_t t_stop;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Waits for the thread to stop; with TIMEOUT_MS >= 0, no longer than that (-ETIMEDOUT). */
static int wait_stop_within(struct remote *r, int *sig, int *event, int timeout_ms)
{
	int st;

	for (int waited = 0;;) {
		pid_t w = waitpid(r->tid, &st, __WALL | (timeout_ms >= 0 ? WNOHANG : 0));

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0) {
			struct timespec ms = {0, 1000000};

			if (waited++ >= timeout_ms)
				return -ETIMEDOUT;
			nanosleep(&ms, NULL);
			continue;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return -ESRCH;
		if (WIFSTOPPED(st)) {
			*sig = WSTOPSIG(st);
			*event = st >> 16;
			return 0;
		}
	}
}

static int wait_stop(struct remote *r, int *sig, int *event)
{
	return wait_stop_within(r, sig, event, -1);
}

int remote__stop(pid_t pid, pid_t tid, struct remote **out, char *why, size_t why_len)
{
	struct remote *r = calloc(1, sizeof(*r));
	int err, sig, event;

	if (!r)
		return -ENOMEM;
	r->pid = pid;
	r->tid = tid;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0)) {
		err = -errno;
		snprintf(why, why_len, "ptrace(PTRACE_SEIZE) of thread %d: %s", tid, strerror(errno));
		free(r);
		return err;
	}
	r->t_stop = now_ns();
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0)) {
		err = -errno;
		snprintf(why, why_len, "ptrace(PTRACE_INTERRUPT) of thread %d: %s", tid, strerror(errno));
		ptrace(PTRACE_DETACH, tid, 0, 0);
		free(r);
		return err;
	}
	/* A thread in uninterruptible sleep stops only when it leaves it, and the interrupt cannot
	 * be taken back: it is waited for (the caller picked a thread not in that state), and said
	 * so after 2 s. */
	err = wait_stop_within(r, &sig, &event, 2000);
	if (err == -ETIMEDOUT) {
		fprintf(stderr, "heapsnap-record: waiting for thread %d of process %d to stop: it is in "
				"uninterruptible sleep\n", tid, pid);
		err = wait_stop(r, &sig, &event);
	}
	if (!err && event != PTRACE_EVENT_STOP)
		r->pending_sig = sig; /* a signal-delivery stop: the signal is the target's */
	if (!err && ptrace(PTRACE_GETREGS, tid, 0, &r->saved))
		err = -errno;
	if (err) {
		snprintf(why, why_len, "stopping thread %d: %s", tid, strerror(-err));
		ptrace(PTRACE_DETACH, tid, 0, 0);
		free(r);
		return err;
	}
	*out = r;
	return 0;
}

void remote__set_syscall_insn(struct remote *r, uint64_t addr)
{
	r->syscall_insn = addr;
}

pid_t remote__tid(const struct remote *r)
{
	return r->tid;
}

uint64_t remote__pc(const struct remote *r)
{
	return r->saved.rip;
}

/* Runs from REGS until the thread stops at END_PC: with a single step over one syscall
 * instruction, or to an int3. A signal that stops it first is kept for later. */
static int run_to(struct remote *r, struct user_regs_struct *regs, uint64_t end_pc, bool step)
{
	uint64_t start_pc = regs->rip;

	for (int tries = 0; tries < 16; tries++) {
		int sig, event, err;

		if (ptrace(PTRACE_SETREGS, r->tid, 0, regs))
			return -errno;
		if (ptrace(step ? PTRACE_SINGLESTEP : PTRACE_CONT, r->tid, 0, 0))
			return -errno;
		err = wait_stop(r, &sig, &event);
		if (err)
			return err;
		if (ptrace(PTRACE_GETREGS, r->tid, 0, regs))
			return -errno;
		if (sig == SIGTRAP && regs->rip == end_pc)
			return 0;
		if (regs->rip == start_pc && sig != SIGTRAP && event == 0) {
			/* Not run yet: a signal came first. It is the target's; deliver it later. */
			r->pending_sig = sig;
			continue;
		}
		if (sig == SIGSEGV || sig == SIGBUS)
			return -EFAULT;
		return -EIO;
	}
	return -EAGAIN;
}

int remote__syscall(struct remote *r, long nr, const uint64_t args[6], int64_t *ret)
{
	struct user_regs_struct regs = r->saved;
	int err;

	if (!r->syscall_insn)
		return -EINVAL;
	regs.rip = r->syscall_insn;
	regs.rax = (uint64_t)nr;
	/* No restart of the syscall the thread was stopped in: that is for when it goes on. */
	regs.orig_rax = (uint64_t)-1;
	regs.rdi = args[0];
	regs.rsi = args[1];
	regs.rdx = args[2];
	regs.r10 = args[3];
	regs.r8 = args[4];
	regs.r9 = args[5];
	err = run_to(r, &regs, r->syscall_insn + 2, true);
	if (err)
		return err;
	*ret = (int64_t)regs.rax;
	return 0;
}

int remote__store(struct remote *r, uint64_t store_pc, uint64_t addr, uint64_t value)
{
	struct user_regs_struct regs = r->saved;

	regs.rip = store_pc;
	regs.orig_rax = (uint64_t)-1;
	regs.rdi = addr;
	regs.rsi = value;
	/* The stack pointer stays: the store pushes nothing. */
	return run_to(r, &regs, store_pc + 4, false);
}

int remote__call(struct remote *r, uint64_t pc, uint64_t end_pc)
{
	struct user_regs_struct regs = r->saved;

	regs.rip = pc;
	regs.orig_rax = (uint64_t)-1; /* the wait is restarted when the thread goes on */
	regs.rsp = (r->saved.rsp - 256) & ~15ull; /* past the red zone, 16-aligned for a call */
	return run_to(r, &regs, end_pc, false);
}

long remote__in_syscall(const struct remote *r)
{
	return (long)r->saved.orig_rax;
}

uint64_t remote__release(struct remote *r)
{
	uint64_t stopped;

	if (!r)
		return 0;
	ptrace(PTRACE_SETREGS, r->tid, 0, &r->saved);
	ptrace(PTRACE_DETACH, r->tid, 0, (void *)(long)r->pending_sig);
	stopped = now_ns() - r->t_stop;
	free(r);
	return stopped;
}

int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, rm = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_readv(pid, &l, 1, &rm, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int remote_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	/* /proc/PID/mem writes read-only pages too (the stub's code, once it is executable). */
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pwrite(fd, buf, len, (off_t)addr);
	close(fd);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}
