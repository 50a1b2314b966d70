// SPDX-License-Identifier: MIT
/* Injecting libheapsnap.so into a running process.
 *
 * 1. Look, touching nothing: the target's state, tracer, seccomp mode; its mappings; where
 *    pthread_create, dlopen and friends are in its libc; the GOT entries through which its
 *    modules call malloc, free and operator new/delete; a `syscall` instruction.
 * 2. Stop one thread (ptrace) for a few system calls of ours only: map the stub's pages, make
 *    a memfd for the library (its path on this host may not exist in the target's mount
 *    namespace) and the detach pipe, whose write end only we keep. Point those GOT entries
 *    at the stub's trampoline. Let the thread go: it was stopped for about a millisecond.
 * 3. The first thread of the target that calls its allocator through one of those entries
 *    is at a safe point; there the trampoline starts a thread of ours, which dlopens the
 *    library and calls its entry (libheapsnap/inject_entry.c). That rewrites the GOTs of
 *    every module to the hooks, and answers in the stub's data page. A process that makes no
 *    such call soon, asleep in a wait (select, poll, read...), is made to start the thread
 *    from that wait, stopped there (idle_fire).
 * Detach is EOF on the pipe: the library puts every entry back itself, so it happens even
 * when the recorder is SIGKILLed. */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "elfsyms.h"
#include "abi/gotwalk.h"
#include "inject.h"
#include "abi/inject_abi.h"
#include "inject_look.h"
#include "procfs.h"
#include "record.h"
#include "remote.h"
#include "seccomp.h"
#include "abi/shm.h"

#ifndef F_GET_SEALS
#define F_GET_SEALS 1034
#define F_SEAL_SHRINK 0x0002
#endif

extern const uint8_t hs_stub_blob[], hs_stub_tramp[], hs_stub_tramp_end[], hs_stub_store[], hs_stub_idle[],
	hs_stub_idle_end[];

struct inject {
	pid_t pid;
	int pidfd, pipe_w, shm_fd, wake_fd;
	uint64_t stub, stopped_ns;
	uint32_t patched, modules;
	struct hs_inject_data *d; /* as written */
	uint32_t nr_slots;
	uint64_t slot_prot[HS_INJ_MAX_SLOTS];
	uint64_t insn;
	bool tramp_in; /* the trampoline's entries were written */
	bool seccomp;  /* under a seccomp filter: a thread's calls are checked before it makes them */
	uint64_t libc_lo, libc_hi; /* libc's code: where a wait the loader may start from is made */
};

static uint64_t mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The calls the injection makes in the stopped thread (exact arguments), then those the
 * loader and the library make in their own thread. */
static int check_seccomp(struct remote *r, uint64_t stub, char *why, size_t why_len)
{
	static const struct {
		int nr;
		const char *name;
	} lib_calls[] = {
		{SYS_openat, "openat"}, {SYS_read, "read"}, {SYS_pread64, "pread64"}, {SYS_fstat, "fstat"},
		{SYS_newfstatat, "newfstatat"}, {SYS_mmap, "mmap"}, {SYS_mprotect, "mprotect"}, {SYS_munmap, "munmap"},
		{SYS_close, "close"}, {SYS_memfd_create, "memfd_create"}, {SYS_ftruncate, "ftruncate"},
		{SYS_fcntl, "fcntl"}, {SYS_eventfd2, "eventfd2"}, {SYS_poll, "poll"}, {SYS_write, "write"},
		{SYS_futex, "futex"}, {SYS_clone, "clone"}, {SYS_clone3, "clone3"}, {SYS_rt_sigprocmask, "rt_sigprocmask"},
		{SYS_madvise, "madvise"}, {SYS_set_robust_list, "set_robust_list"}, {SYS_rseq, "rseq"},
		{SYS_gettid, "gettid"}, {SYS_getpid, "getpid"}, {SYS_prctl, "prctl"}, {SYS_readlink, "readlink"},
		{SYS_sched_yield, "sched_yield"}, {SYS_nanosleep, "nanosleep"}, {SYS_exit, "exit"},
	};
	struct sc_call c[64];
	int n = 0;

	c[n++] = (struct sc_call){SYS_mmap, "mmap", {0, HS_STUB_BYTES, PROT_READ | PROT_WRITE,
						     MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0}, true};
	c[n++] = (struct sc_call){SYS_mmap, "mmap", {stub + HS_STUB_CODE_BYTES, HS_STUB_DATA_BYTES, PROT_READ | PROT_WRITE,
						     MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, (uint64_t)-1, 0}, true};
	c[n++] = (struct sc_call){SYS_memfd_create, "memfd_create", {stub, MFD_CLOEXEC}, true};
	c[n++] = (struct sc_call){SYS_pipe2, "pipe2", {stub, O_CLOEXEC}, true};
	c[n++] = (struct sc_call){SYS_close, "close", {0}, true};
	c[n++] = (struct sc_call){SYS_mprotect, "mprotect", {stub, 4096, PROT_READ | PROT_EXEC}, true};
	c[n++] = (struct sc_call){SYS_mprotect, "mprotect", {stub, 4096, PROT_READ | PROT_WRITE}, true};
	c[n++] = (struct sc_call){SYS_getpid, "getpid", {0}, true};
	for (size_t i = 0; i < sizeof(lib_calls) / sizeof(lib_calls[0]); i++)
		c[n++] = (struct sc_call){lib_calls[i].nr, lib_calls[i].name, {0}, false};
	return seccomp__check(remote__tid(r), c, n, why, why_len);
}

/* Whether the stub may pin the first thread while it makes the loader (inject_stub.S, fire):
 * only if the target's filter lets those calls run or fail (never kill or trap); the
 * injection needs none of them. */
static bool seccomp_lets_pin(struct remote *r)
{
	struct sc_call c[] = {
		{SYS_sched_getaffinity, "sched_getaffinity", {0}, false},
		{SYS_getcpu, "getcpu", {0}, false},
		{SYS_sched_setaffinity, "sched_setaffinity", {0}, false},
	};
	char why[256];

	return !seccomp__check(remote__tid(r), c, (int)(sizeof(c) / sizeof(c[0])), why, sizeof(why));
}

static int rsys(struct remote *r, long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		uint64_t a5, int64_t *ret, const char *what, char *why, size_t why_len)
{
	uint64_t args[6] = {a0, a1, a2, a3, a4, a5};
	int err = remote__syscall(r, nr, args, ret);

	if (!err && *ret < 0 && *ret > -4096)
		err = (int)*ret;
	if (err)
		snprintf(why, why_len, "%s in process %d failed: %s", what, remote__tid(r), strerror(-err));
	return err;
}

static int prot_of(const char *perms)
{
	return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | (perms[2] == 'x' ? PROT_EXEC : 0);
}

/* Stores VALUES[i] into the trampoline's GOT entries, each by a single mov in the stopped
 * thread, with the page made writable for it when it is not: once for a run of entries on
 * one page (a module's allocator entries are a few neighbours), which keeps the stop short
 * with a few hundred entries. */
static int store_slots(struct inject *j, struct remote *r, const uint64_t *values, char *why, size_t why_len)
{
	uint64_t open_page = 0; /* made writable by us, to be put back */
	int open_prot = 0, err = 0;
	int64_t ret;

	for (uint32_t i = 0; i < j->nr_slots && !err; i++) {
		uint64_t got = j->d->slots[i].got, page = got & ~4095ull;
		int prot = (int)j->slot_prot[i];

		if (open_page && open_page != page) {
			err = rsys(r, SYS_mprotect, open_page, 4096, (uint64_t)open_prot, 0, 0, 0, &ret,
				   "mprotect of a GOT page", why, why_len);
			open_page = 0;
			if (err)
				break;
		}
		if (!(prot & PROT_WRITE) && open_page != page) {
			err = rsys(r, SYS_mprotect, page, 4096, (uint64_t)(prot | PROT_WRITE), 0, 0, 0, &ret,
				   "mprotect of a GOT page", why, why_len);
			if (err)
				break;
			open_page = page;
			open_prot = prot;
		}
		err = remote__store(r, j->stub + (uint64_t)(hs_stub_store - hs_stub_blob), got, values[i]);
		if (err)
			snprintf(why, why_len, "writing a GOT entry of process %d: %s", j->pid, strerror(-err));
	}
	if (open_page) {
		int e = rsys(r, SYS_mprotect, open_page, 4096, (uint64_t)open_prot, 0, 0, 0, &ret,
			     "mprotect of a GOT page", why, why_len);

		err = err ? err : e;
	}
	return err;
}

static int stop_thread(struct inject *j, struct remote **r, uint64_t insn, char *why, size_t why_len)
{
	int err = remote__stop(j->pid, look__pick_thread(j->pid), r, why, why_len);

	if (err == -EPERM) {
		int scope = look__yama_scope();
		char yama[40] = "";

		if (scope >= 0)
			snprintf(yama, sizeof(yama), "; yama ptrace_scope %d", scope);
		snprintf(why + strlen(why), why_len - strlen(why),
			 " (ptrace not permitted: needs CAP_SYS_PTRACE or the same user%s)", yama);
	}
	if (!err)
		remote__set_syscall_insn(*r, insn);
	return err;
}

/* The trampoline's entries back to their old values, if the loader never ran. */
static void untrampoline(struct inject *j, uint64_t insn)
{
	uint64_t orig[HS_INJ_MAX_SLOTS], off = HS_FIRED_UNARMED;
	struct remote *r;
	char why[256];

	/* Disarmed first: the trampoline then leaves the entries alone (inject_stub.S). */
	remote_write(j->pid, j->stub + HS_STUB_CODE_BYTES + HS_INJ_OFF_FIRED, &off, sizeof(off));
	for (uint32_t i = 0; i < j->nr_slots; i++)
		orig[i] = j->d->slots[i].orig;
	if (!stop_thread(j, &r, insn, why, sizeof(why))) {
		store_slots(j, r, orig, why, sizeof(why));
		j->stopped_ns += remote__release(r);
	}
}

/* Every thread of the target stopped, into R (up to MAX); returns how many, or -1 if one
 * could not be (all released then). New threads are looked for until a pass finds none. */
#define MAX_STOPPED 4096
static int stop_all(struct inject *j, struct remote **r, int max)
{
	int n = 0;

	for (int pass = 0; pass < 4; pass++) {
		char path[64];
		DIR *d;
		struct dirent *e;
		int before = n;

		snprintf(path, sizeof(path), "/proc/%d/task", j->pid);
		if (!(d = opendir(path)))
			goto fail;
		while ((e = readdir(d))) {
			pid_t tid = (pid_t)atoi(e->d_name);
			char why[128];
			bool have = false;

			for (int i = 0; i < n && !have; i++)
				have = remote__tid(r[i]) == tid;
			if (tid <= 0 || have)
				continue;
			if (n == max || remote__stop(j->pid, tid, &r[n], why, sizeof(why))) {
				closedir(d);
				goto fail;
			}
			remote__set_syscall_insn(r[n], j->insn);
			n++;
		}
		closedir(d);
		if (n == before)
			return n;
	}
fail:
	for (int i = 0; i < n; i++)
		j->stopped_ns += remote__release(r[i]);
	return -1;
}

/* An injection that gave up before the loader ran leaves nothing: its descriptors closed and
 * the stub unmapped, with every thread stopped and none in the stub or below a call it made
 * (the entries were put back before: no thread enters it any more). Returns 0 when done. */
static int unstub(struct inject *j)
{
	static struct remote *r[MAX_STOPPED];
	uint64_t base = j->stub + HS_STUB_CODE_BYTES;

	for (int tries = 0; tries < 20; tries++) {
		struct timespec ms = {0, 10000000};
		uint64_t inflight = 1, thread = 1;
		int n = stop_all(j, r, MAX_STOPPED), err = 0;
		bool inside = false;

		if (n <= 0)
			return -ESRCH;
		for (int i = 0; i < n; i++)
			inside |= remote__pc(r[i]) - j->stub < HS_STUB_BYTES;
		if (remote_read(j->pid, base + HS_INJ_OFF_INFLIGHT, &inflight, sizeof(inflight)) ||
		    remote_read(j->pid, base + HS_INJ_OFF_THREAD, &thread, sizeof(thread)))
			err = -EFAULT;
		if (!err && !inside && !inflight && !thread) {
			uint64_t orig[HS_INJ_MAX_SLOTS];
			char why[128];

			/* Again, with no thread in the stub: one that was may have put the trampoline
			 * back for the lazy binder (inject_stub.S) after the first time. */
			for (uint32_t i = 0; i < j->nr_slots; i++)
				orig[i] = j->d->slots[i].orig;
			if (store_slots(j, r[0], orig, why, sizeof(why)))
				err = -EAGAIN;
		}
		if (!err && !inside && !inflight && !thread) {
			int64_t ret;
			char why[128];

			if (j->d->lib.lib_fd >= 0)
				rsys(r[0], SYS_close, (uint64_t)j->d->lib.lib_fd, 0, 0, 0, 0, 0, &ret, "close", why, sizeof(why));
			rsys(r[0], SYS_close, (uint64_t)j->d->lib.pipe_fd, 0, 0, 0, 0, 0, &ret, "close", why, sizeof(why));
			err = rsys(r[0], SYS_munmap, j->stub, HS_STUB_BYTES, 0, 0, 0, 0, &ret, "munmap", why, sizeof(why));
			if (!err)
				j->stub = 0;
		} else if (!err && thread) {
			err = -EBUSY; /* a thread took it after all: the loader runs */
		} else if (!err) {
			err = -EAGAIN;
		}
		for (int i = 0; i < n; i++)
			j->stopped_ns += remote__release(r[i]);
		if (err != -EAGAIN)
			return err;
		nanosleep(&ms, NULL);
	}
	return -EAGAIN;
}

/* The waits a process idles in, as libc's wrappers make them: a thread stopped in one, in
 * libc's code, holds none of the locks pthread_create takes (malloc's, the loader's and the
 * stack list's are never held across these calls; the loader reads files with its own
 * code, not libc's). */
static bool idle_wait(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_select: case SYS_pselect6: case SYS_poll: case SYS_ppoll: case SYS_epoll_wait:
	case SYS_epoll_pwait: case SYS_epoll_pwait2: case SYS_accept: case SYS_accept4: case SYS_recvfrom:
	case SYS_recvmsg: case SYS_nanosleep: case SYS_clock_nanosleep: case SYS_pause:
		return true;
	}
	return false;
}

/* A thread of the target asleep in an idle wait in libc's code; 0 if none. */
static pid_t idle_thread(const struct inject *j)
{
	char path[64];
	pid_t found = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", j->pid);
	if (!(d = opendir(path)))
		return 0;
	while (!found && (e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		char line[512] = "";
		unsigned long long a[8];
		long nr = -1;
		FILE *f;

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", j->pid, tid);
		if (!(f = fopen(path, "re")))
			continue;
		/* "NR ARG1..ARG6 SP PC" while in a system call */
		if (fgets(line, sizeof(line), f) && sscanf(line, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr,
							   &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7]) == 9 &&
		    idle_wait(nr) && a[7] >= j->libc_lo && a[7] < j->libc_hi)
			found = tid;
		fclose(f);
	}
	closedir(d);
	return found;
}

/* No allocator call came yet: a thread asleep in an idle wait starts the loader there, stopped
 * for it (hs_stub_idle), with every signal blocked meanwhile, then goes back to its wait (the
 * kernel restarts it, as after any stop). Returns 0 once the loader was started or another
 * thread took the trampoline first; -EAGAIN when no thread is so. */
static int idle_fire(struct inject *j, const struct inject_opts *o)
{
	uint64_t data = j->stub + HS_STUB_CODE_BYTES, all = ~0ull, fired = HS_FIRED_ARMED;
	pid_t tid = idle_thread(j);
	struct remote *r;
	int64_t ret;
	char why[256];
	long nr;
	int err;

	if (!tid || remote__stop(j->pid, tid, &r, why, sizeof(why)))
		return -EAGAIN;
	remote__set_syscall_insn(r, j->insn);
	nr = remote__in_syscall(r);
	/* Looked at again stopped: it may have left that wait since. */
	err = idle_wait(nr) && remote__pc(r) >= j->libc_lo && remote__pc(r) < j->libc_hi ? 0 : -EAGAIN;
	if (!err && j->seccomp && check_seccomp(r, 0, why, sizeof(why)))
		err = -EPERM;
	if (!err)
		err = remote_write(j->pid, data + HS_INJ_OFF_SCRATCH, &all, sizeof(all));
	if (!err)
		err = rsys(r, SYS_rt_sigprocmask, SIG_SETMASK, data + HS_INJ_OFF_SCRATCH, data + HS_INJ_OFF_SCRATCH + 8, 8,
			   0, 0, &ret, "rt_sigprocmask", why, sizeof(why));
	if (!err) {
		err = remote__call(r, j->stub + (uint64_t)(hs_stub_idle - hs_stub_blob),
				   j->stub + (uint64_t)(hs_stub_idle_end - hs_stub_blob));
		/* Its own mask back, whatever happened. */
		rsys(r, SYS_rt_sigprocmask, SIG_SETMASK, data + HS_INJ_OFF_SCRATCH + 8, 0, 8, 0, 0, &ret,
		     "rt_sigprocmask", why, sizeof(why));
		remote_read(j->pid, data + HS_INJ_OFF_FIRED, &fired, sizeof(fired));
	}
	j->stopped_ns += remote__release(r);
	if (o->verbose && !err)
		fprintf(stderr, "heapsnap-record: thread %d of process %d, idle in system call %ld, %s\n", tid, j->pid, nr,
			fired == HS_FIRED_CREATED ? "started the loader there" : "found the loader started");
	return err ? -EAGAIN : 0;
}

/* -v: the interval from the first call to the hooks in place, step by step (inject_abi.h's
 * HS_T_*), each in ms since the step before; one not timed (an older library, or a library
 * loaded before: its constructor ran long ago) is left out. */
static void print_steps(const struct hs_inject_data *d)
{
	static const struct {
		int t;
		const char *name;
	} steps[] = {
		{HS_T_CTOR_IN, "dlopen to the constructor"}, {HS_T_CTOR_OUT, "constructor"},
		{HS_T_DLOPENED, "rest of dlopen"}, {HS_T_SESSION, "dlsym and entry"},
		{HS_T_RESOLVED, "real functions"}, {HS_T_SHM, "shared memory"}, {HS_T_SET, "session settings"},
		{HS_T_PATCHED, "GOT entries hooked"}, {HS_T_MAPS, "maps emitted"},
		{HS_T_PY, "interpreter looked for"}, {HS_T_READY, "gate"},
	};
	uint64_t first = d->deadline - d->hold_ns, prev = d->times[HS_T_LOADER];
	char line[640];
	size_t n = 0;

	if (!prev || prev < first || d->ready_ns < prev)
		return;
	n = (size_t)snprintf(line, sizeof(line), "loader thread running %.2f%s (pthread_create returned at %.2f)",
			     (double)(prev - first) / 1e6, d->pinned ? " on the first thread's CPU" : "",
			     d->times[HS_T_CREATED] >= first ? (double)(d->times[HS_T_CREATED] - first) / 1e6 : -1.0);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && n < sizeof(line); i++) {
		uint64_t t = d->times[steps[i].t];

		if (!t || t < prev)
			continue;
		n += (size_t)snprintf(line + n, sizeof(line) - n, ", %s %.2f", steps[i].name, (double)(t - prev) / 1e6);
		prev = t;
	}
	fprintf(stderr, "heapsnap-record: steps to the hooks in place (ms): %s\n", line);
	if (d->times[HS_T_CPU])
		fprintf(stderr, "heapsnap-record: the loader thread ran %.2f ms of CPU in its %.2f ms to the hooks in "
				"place; %" PRIu64 " involuntary and %" PRIu64 " voluntary context switches\n",
			(double)d->times[HS_T_CPU] / 1e6, (double)(d->ready_ns - d->times[HS_T_LOADER]) / 1e6,
			d->times[HS_T_NIVCSW], d->times[HS_T_NVCSW]);
	if (d->nr_first)
		fprintf(stderr, "heapsnap-record: %" PRIu64 " GOT entries hooked before the gate opened%s\n", d->nr_first,
			d->rest_ns ? " (the trampoline's and glibc's)" : ", by a walk of every module's relocations");
	if (d->rest_ns >= d->ready_ns && d->times[HS_T_FDS_HIGH] >= d->rest_ns)
		fprintf(stderr, "heapsnap-record: then, nothing held: %" PRIu64 " more hooked by a walk of every module's "
				"relocations in %.2f ms, the safe points put back; its descriptors moved to high "
				"numbers in %.2f ms\n",
			(uint64_t)d->lib.nr_patched - d->nr_first, (double)(d->rest_ns - d->ready_ns) / 1e6,
			(double)(d->times[HS_T_FDS_HIGH] - d->rest_ns) / 1e6);
	else if (d->times[HS_T_FDS_HIGH] >= d->ready_ns)
		fprintf(stderr, "heapsnap-record: then, nothing held: its descriptors moved to high numbers in %.2f ms\n",
			(double)(d->times[HS_T_FDS_HIGH] - d->ready_ns) / 1e6);
}

static int wait_ready(struct inject *j, const struct inject_opts *o, uint64_t insn, char *why, size_t why_len)
{
	/* A process that makes an allocator call soon starts the loader there; one idle in a wait
	 * is made to from its wait after IDLE_NS, and again every IDLE_NS while none is found. */
	const uint64_t idle_ns = 20000000;
	uint64_t idle_at = mono() + idle_ns;
	uint64_t deadline = mono() + (uint64_t)(o->timeout * 1e9);
	struct hs_inject_data d;

	for (;;) {
		struct timespec ms = {0, 2000000};
		uint32_t state;

		int rerr = remote_read(j->pid, j->stub + HS_STUB_CODE_BYTES, &d, offsetof(struct hs_inject_data, thresholds));

		/* Exited: gone, or a zombie its parent has not reaped, whose memory is gone (ESRCH
		 * from the read) though kill still finds it. */
		if (rerr == -ESRCH || (rerr && kill(j->pid, 0) && errno == ESRCH)) {
			snprintf(why, why_len, "process %d exited during the injection", j->pid);
			return -ESRCH;
		}
		if (rerr) {
			snprintf(why, why_len, "reading the stub at %#" PRIx64 " in process %d: %s", j->stub, j->pid,
				 strerror(-rerr));
			return rerr;
		}
		state = d.lib.lib_state;
		if (state == HS_LIB_READY) {
			if (o->verbose && d.deadline && d.ready_ns)
				fprintf(stderr, "heapsnap-record: the hooks were in place %.2f ms after the first call through "
						"the trampoline (allocator calls wait there meanwhile)\n",
					(double)(d.ready_ns - (d.deadline - d.hold_ns)) / 1e6);
			if (o->verbose && d.deadline && d.ready_ns)
				print_steps(&d);
			j->patched = d.lib.nr_patched;
			j->modules = d.lib.nr_modules;
			j->d->lib.shm_fd = d.lib.shm_fd;
			j->d->lib.wake_fd = d.lib.wake_fd;
			return 0;
		}
		d.lib.lib_msg[sizeof(d.lib.lib_msg) - 1] = d.dl_msg[sizeof(d.dl_msg) - 1] = 0;
		look__printable(d.lib.lib_msg, sizeof(d.lib.lib_msg));
		look__printable(d.dl_msg, sizeof(d.dl_msg));
		if (state == HS_LIB_FAILED) {
			snprintf(why, why_len, "libheapsnap.so in process %d: %s", j->pid, d.lib.lib_msg);
			return -(d.lib.lib_err > 0 ? d.lib.lib_err : EIO);
		}
		if (d.fired == HS_FIRED_CREATED && d.create_ret) {
			snprintf(why, why_len, "pthread_create in process %d failed: %s", j->pid, strerror((int)d.create_ret));
			return -(int)d.create_ret;
		}
		if (d.loader_state == HS_LOADER_NO_LIB || d.loader_state == HS_LOADER_NO_ENTRY) {
			snprintf(why, why_len, "dlopen of libheapsnap.so in process %d failed: %s", j->pid, d.dl_msg);
			return -ENOEXEC;
		}
		if (o->interrupted && o->interrupted(o->ctx)) {
			snprintf(why, why_len, "interrupted");
			return -EINTR;
		}
		if (d.fired == HS_FIRED_ARMED && mono() > idle_at) {
			idle_fire(j, o);
			idle_at = mono() + idle_ns;
			continue;
		}
		if (mono() > deadline) {
			if (d.fired == HS_FIRED_ARMED) {
				uint64_t off = HS_FIRED_UNARMED;

				/* Disarmed first; a thread that took it meanwhile is seen below. */
				remote_write(j->pid, j->stub + HS_STUB_CODE_BYTES + HS_INJ_OFF_FIRED, &off, sizeof(off));
				untrampoline(j, insn);
				j->tramp_in = false; /* put back: the stub may be unmapped below */
				if (remote_read(j->pid, j->stub + HS_STUB_CODE_BYTES + HS_INJ_OFF_THREAD, &d.thread, 8) ||
				    !d.thread) {
					int uerr = unstub(j);

					if (uerr == -EBUSY) {
						deadline = mono() + 10000000000ull; /* it went after all */
						continue;
					}
					snprintf(why, why_len,
						 "process %d made no allocator call in %g s (nor a call such as read, poll or "
						 "epoll_wait through a GOT), so the library could not be loaded at a safe point; %s",
						 j->pid, o->timeout,
						 uerr ? "its GOT entries are as they were, but the stub's pages stay mapped "
							"(a thread was in them)"
						      : "nothing of it was changed");
					return -ETIMEDOUT;
				}
				deadline = mono() + 10000000000ull; /* it went after all: the loader runs */
				continue;
			}
			snprintf(why, why_len, "libheapsnap.so did not start in process %d", j->pid);
			return -ETIMEDOUT;
		}
		nanosleep(&ms, NULL);
	}
}

/* Our copy of the target's file descriptor FD. */
static int grab_fd(struct inject *j, int fd)
{
	int ours = (int)syscall(SYS_pidfd_getfd, j->pidfd, fd, 0);

	return ours < 0 ? -errno : ours;
}

/* What the attach learns and holds on its way, from one step to the next. */
struct attach_ctx {
	pid_t pid;
	struct proc_map *v; /* the target's mappings */
	int n;
	bool loaded;   /* libheapsnap.so is mapped already: dlopen'ed by name, not copied */
	bool seccomp;  /* the target runs under a seccomp filter: check our system calls first */
	bool pin;      /* the stub may pin the first thread to its CPU (seccomp_lets_pin) */
	uint32_t allocs; /* allocator entries the trampoline takes */
	int lib_src;   /* the library, ours to copy */
	struct stat st;
	int64_t lib_fd_t; /* the memfd for it, numbered in the target */
	int32_t fds[2];   /* the detach pipe, numbered in the target */
	struct remote *r; /* the thread stopped */
};

/* Step 1, touching nothing: the target's state and mappings, its glibc and the functions in it
 * the stub calls. */
static int attach__look_libc(struct inject *j, struct attach_ctx *c, char *why, size_t why_len)
{
	int err;

	if ((err = look__preflight(c->pid, why, why_len, &c->seccomp)))
		return err;
	if ((err = proc_read_file_maps(c->pid, &c->v, &c->n))) {
		snprintf(why, why_len, "cannot read /proc/%d/maps: %s", c->pid, strerror(-err));
		return err;
	}
	if ((err = look__already_recorded(c->pid, c->v, c->n, why, why_len)))
		return err;
	j->seccomp = c->seccomp;
	for (int k = 0; k < c->n; k++)
		if (c->v[k].perms[2] == 'x' && look__is_libc(c->v[k].path)) {
			j->libc_lo = j->libc_lo && j->libc_lo < c->v[k].start ? j->libc_lo : c->v[k].start;
			j->libc_hi = j->libc_hi > c->v[k].end ? j->libc_hi : c->v[k].end;
		}
	return look__libc(c->pid, c->v, c->n, j->d, &c->loaded, why, why_len);
}

/* Step 1, still touching nothing: the GOT entries the trampoline takes, each one's protection,
 * and the `syscall` instruction the stopped thread runs ours with. */
static int attach__look_entries(struct inject *j, struct attach_ctx *c, const struct inject_opts *o, char *why,
				size_t why_len)
{
	struct hs_inject_data *d = j->d;
	uint32_t beyond = 0;
	bool cut = look__find_slots(c->pid, c->v, c->n, d, o->verbose, &beyond, &c->allocs);

	j->nr_slots = d->lib.nr_slots;
	if (beyond)
		fprintf(stderr, "heapsnap-record: warning: process %d has %u allocator GOT entries beyond the %d the "
				"trampoline takes: calls through them while the library loads are not counted\n",
			c->pid, beyond, HS_INJ_MAX_SLOTS);
	if (!c->allocs) {
		snprintf(why, why_len, "no module of process %d calls malloc or free through its GOT%s", c->pid,
			 cut ? " (gave up after a million reads of its relocation tables)" : "");
		return -ENOENT;
	}
	for (uint32_t i = 0; i < j->nr_slots; i++) {
		j->slot_prot[i] = PROT_READ;
		for (int k = 0; k < c->n; k++)
			if (d->slots[i].got >= c->v[k].start && d->slots[i].got < c->v[k].end)
				j->slot_prot[i] = (uint64_t)prot_of(c->v[k].perms);
	}
	j->insn = look__find_syscall(c->pid, c->v, c->n);
	if (!j->insn) {
		snprintf(why, why_len, "no syscall instruction in the libc of process %d", c->pid);
		return -ENOENT;
	}
	return 0;
}

/* The library to copy, and a pidfd to take the target's descriptors through. */
static int attach__open(struct inject *j, struct attach_ctx *c, const struct inject_opts *o, char *why,
			size_t why_len)
{
	int e;

	c->lib_src = open(o->lib, O_RDONLY | O_CLOEXEC);
	if (c->lib_src < 0 || fstat(c->lib_src, &c->st)) {
		e = errno;
		snprintf(why, why_len, "cannot open %s: %s", o->lib, strerror(e));
		return -e;
	}
	if (!S_ISREG(c->st.st_mode)) {
		snprintf(why, why_len, "cannot open %s: not a regular file", o->lib);
		return -EINVAL;
	}
	j->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	if (j->pidfd < 0) {
		e = errno;
		snprintf(why, why_len, "pidfd_open(%d): %s", c->pid, strerror(e));
		return -e;
	}
	return 0;
}

/* Step 2, the thread stopped: the stub's pages, the memfd for the library (unless it is loaded)
 * and the detach pipe, whose write end becomes ours alone. */
static int attach__stub_pages(struct inject *j, struct attach_ctx *c, char *why, size_t why_len, bool *touched)
{
	int64_t ret;
	int err;

	if ((err = rsys(c->r, SYS_mmap, 0, HS_STUB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			(uint64_t)-1, 0, &ret, "mmap", why, why_len)))
		return err;
	*touched = true;
	j->stub = (uint64_t)ret;
	/* The data shared: a fork child's count of calls that went by is seen here too. The code
	 * stays a private anonymous mapping, which no one takes for a module's. */
	if ((err = rsys(c->r, SYS_mmap, j->stub + HS_STUB_CODE_BYTES, HS_STUB_DATA_BYTES, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, (uint64_t)-1, 0, &ret, "mmap", why, why_len)))
		return err;
	if ((err = remote_write(c->pid, j->stub + HS_STUB_CODE_BYTES, HS_LIB_SONAME, sizeof(HS_LIB_SONAME))))
		return err;
	if (!c->loaded && (err = rsys(c->r, SYS_memfd_create, j->stub + HS_STUB_CODE_BYTES, MFD_CLOEXEC, 0, 0, 0, 0,
				      &c->lib_fd_t, "memfd_create", why, why_len)))
		return err;
	if ((err = rsys(c->r, SYS_pipe2, j->stub + HS_STUB_CODE_BYTES, O_CLOEXEC, 0, 0, 0, 0, &ret, "pipe2", why,
			why_len)) ||
	    (err = remote_read(c->pid, j->stub + HS_STUB_CODE_BYTES, c->fds, sizeof(c->fds))))
		return err;
	j->pipe_w = grab_fd(j, c->fds[1]);
	if (j->pipe_w < 0 || rsys(c->r, SYS_close, (uint64_t)c->fds[1], 0, 0, 0, 0, 0, &ret, "close", why, why_len)) {
		snprintf(why + strlen(why), why_len - strlen(why), "%staking the detach pipe's end", why[0] ? "; " : "");
		return j->pipe_w < 0 ? j->pipe_w : -EIO;
	}
	return 0;
}

/* The library's bytes into the target's memfd, through a descriptor of ours for it. */
static int attach__copy_lib(struct inject *j, struct attach_ctx *c, const struct inject_opts *o, char *why,
			    size_t why_len)
{
	int lib_fd = grab_fd(j, (int)c->lib_fd_t), err;
	off_t off = 0;

	err = lib_fd < 0 ? lib_fd : 0;
	while (!err && off < c->st.st_size) {
		ssize_t n = sendfile(lib_fd, c->lib_src, &off, (size_t)(c->st.st_size - off));

		if (n <= 0)
			err = n < 0 ? -errno : -EIO; /* 0: the file shrank under us */
	}
	if (lib_fd >= 0)
		close(lib_fd);
	if (err)
		snprintf(why, why_len, "copying %s into process %d: %s", o->lib, c->pid, strerror(-err));
	return err;
}

/* The stub's data page as the library's entry reads it (common/abi/inject_abi.h). */
static void attach__fill_data(struct inject *j, const struct attach_ctx *c, const struct inject_opts *o)
{
	struct hs_inject_data *d = j->d;

	d->magic = HS_INJ_MAGIC;
	d->version = HS_INJ_VERSION;
	d->size = sizeof(*d);
	/* Compared with getpid() in the target: its own namespace's number. */
	d->target_pid = (uint64_t)look__ns_pid(c->pid);
	d->fired = HS_FIRED_PREARM;
	d->gate = HS_GATE_CLOSED;
	d->hold_ns = (uint64_t)(o->hold * 1e9);
	/* Only when the first call waits for the loader: with --attach-hold 0 it goes on, and the
	 * loader, made on its CPU, would stop it there instead (and a lazily bound entry's binder,
	 * run after the library hooked it, would write over the hook: t_inject_wake). */
	d->pin = c->pin && d->hold_ns > 0;
	/* The dynamic loader's code: its calls through the trampoline never wait (inject_stub.S). */
	for (int k = 0; k < c->n; k++)
		if (c->v[k].perms[2] == 'x' && !strncmp(look__base_name(c->v[k].path), "ld-linux", 8)) {
			d->ldso_lo = d->ldso_lo && d->ldso_lo < c->v[k].start ? d->ldso_lo : c->v[k].start;
			d->ldso_hi = d->ldso_hi > c->v[k].end ? d->ldso_hi : c->v[k].end;
		}
	if (c->loaded) {
		d->dlopen_flags = RTLD_NOW | RTLD_NOLOAD;
		snprintf(d->lib_path, sizeof(d->lib_path), "%s", HS_LIB_SONAME);
	} else {
		d->dlopen_flags = RTLD_NOW;
		snprintf(d->lib_path, sizeof(d->lib_path), "/proc/self/fd/%d", (int)c->lib_fd_t);
	}
	snprintf(d->entry, sizeof(d->entry), "%s", HS_INJECT_ENTRY);
	d->lib.pipe_fd = c->fds[0];
	d->lib.lib_fd = c->loaded ? -1 : (int32_t)c->lib_fd_t;
	d->lib.sample_rate = o->sample_rate;
	d->lib.stack_mode = o->stack_mode;
	d->lib.max_stack = o->max_stack;
	d->lib.dwarf_bytes = o->dwarf_bytes;
	d->lib.nr_rings = o->nr_rings;
	d->lib.ring_bytes = o->ring_bytes;
	d->lib.recorder_pid = (uint64_t)getpid();
	d->lib.stub_lo = j->stub;
	d->lib.stub_hi = j->stub + HS_STUB_BYTES;
	d->lib.shm_fd = d->lib.wake_fd = -1;
	if (o->sample_rate)
		memcpy(d->thresholds, o->thresholds, sizeof(d->thresholds));
}

/* The data, then the code, made executable and no longer writable; then the GOT entries at the
 * trampoline, and the stub armed last. A failure puts every entry back. */
static int attach__stub_arm(struct inject *j, struct attach_ctx *c, char *why, size_t why_len)
{
	struct hs_inject_data *d = j->d;
	uint64_t tramp[HS_INJ_MAX_SLOTS];
	int64_t ret;
	int err;

	if ((err = remote_write(c->pid, j->stub + HS_STUB_CODE_BYTES, d, sizeof(*d))) ||
	    (err = remote_write(c->pid, j->stub, hs_stub_blob, HS_STUB_CODE_BYTES))) {
		snprintf(why, why_len, "writing the stub into process %d: %s", c->pid, strerror(-err));
		return err;
	}
	if ((err = rsys(c->r, SYS_mprotect, j->stub, HS_STUB_CODE_BYTES, PROT_READ | PROT_EXEC, 0, 0, 0, &ret,
			"mprotect", why, why_len)))
		return err;
	for (uint32_t i = 0; i < j->nr_slots; i++)
		tramp[i] = j->stub + (uint64_t)(hs_stub_tramp - hs_stub_blob) + 16 * i;
	err = store_slots(j, c->r, tramp, why, why_len);
	j->tramp_in = true;
	if (!err) {
		/* Armed last: every entry points at the trampoline before any thread may act on it. */
		uint64_t armed = HS_FIRED_ARMED;

		err = remote_write(c->pid, j->stub + HS_STUB_CODE_BYTES + HS_INJ_OFF_FIRED, &armed, sizeof(armed));
		if (err)
			snprintf(why, why_len, "arming the stub in process %d: %s", c->pid, strerror(-err));
	}
	if (err) {
		uint64_t orig[HS_INJ_MAX_SLOTS], off = HS_FIRED_UNARMED;

		remote_write(c->pid, j->stub + HS_STUB_CODE_BYTES + HS_INJ_OFF_FIRED, &off, sizeof(off));
		for (uint32_t i = 0; i < j->nr_slots; i++)
			orig[i] = d->slots[i].orig;
		store_slots(j, c->r, orig, why + strlen(why), 0);
	}
	return err;
}

/* Step 2 whole: one thread stopped for system calls and stores only, then let go. */
static int attach__stopped(struct inject *j, struct attach_ctx *c, const struct inject_opts *o, char *why,
			   size_t why_len, bool *touched)
{
	int err;

	if ((err = stop_thread(j, &c->r, j->insn, why, why_len)))
		return err;
	if (c->seccomp)
		err = check_seccomp(c->r, 0, why, why_len);
	c->pin = !c->seccomp || seccomp_lets_pin(c->r);
	if (!err)
		err = attach__stub_pages(j, c, why, why_len, touched);
	if (!err && !c->loaded)
		err = attach__copy_lib(j, c, o, why, why_len);
	if (!err) {
		attach__fill_data(j, c, o);
		err = attach__stub_arm(j, c, why, why_len);
	}
	j->stopped_ns += remote__release(c->r);
	return err;
}

/* Step 3's end: the shared memory and wake descriptor the library answered with, checked. */
static int attach__take_shm(struct inject *j, char *why, size_t why_len)
{
	j->shm_fd = grab_fd(j, j->d->lib.shm_fd);
	j->wake_fd = grab_fd(j, j->d->lib.wake_fd);
	if (j->shm_fd < 0 || j->wake_fd < 0 || !hs_fd_is_eventfd(j->wake_fd) ||
	    !(fcntl(j->shm_fd, F_GET_SEALS) & F_SEAL_SHRINK)) {
		snprintf(why, why_len, "the shared memory the library in process %d answered with is not as made", j->pid);
		return -EPROTO;
	}
	return 0;
}

int inject__attach(pid_t pid, const struct inject_opts *o, struct inject **out, char *why, size_t why_len,
		   bool *touched)
{
	struct attach_ctx c = {.pid = pid, .lib_src = -1, .lib_fd_t = -1};
	struct inject *j = calloc(1, sizeof(*j));
	struct hs_inject_data *d = calloc(1, sizeof(*d));
	int err;

	*touched = false;
	why[0] = 0;
	if (!j || !d) {
		free(j);
		free(d);
		return -ENOMEM;
	}
	j->pid = pid;
	j->d = d;
	j->pidfd = j->pipe_w = j->shm_fd = j->wake_fd = -1;
	if (!(err = attach__look_libc(j, &c, why, why_len)) && !(err = attach__look_entries(j, &c, o, why, why_len)) &&
	    !(err = attach__open(j, &c, o, why, why_len)))
		err = attach__stopped(j, &c, o, why, why_len, touched);
	if (!err && o->verbose)
		fprintf(stderr, "heapsnap-record: process %d stopped %.2f ms; trampoline in %u GOT entries (%u of "
				"allocators); waiting for an allocator call\n", pid, (double)j->stopped_ns / 1e6, j->nr_slots,
			c.allocs);
	/* ---- the target's own threads from here ---- */
	if (!err)
		err = wait_ready(j, o, j->insn, why, why_len);
	if (!err)
		err = attach__take_shm(j, why, why_len);
	if (c.lib_src >= 0)
		close(c.lib_src);
	proc_maps_free(c.v, c.n);
	if (err) {
		inject__detach(j);
		if (j->tramp_in)
			untrampoline(j, j->insn);
		inject__free(j);
		return err;
	}
	*out = j;
	return 0;
}

int inject__shm_fd(const struct inject *j)
{
	return j->shm_fd;
}

int inject__wake_fd(const struct inject *j)
{
	return j->wake_fd;
}

void inject__stats(const struct inject *j, uint64_t *stopped_ns, uint32_t *patched, uint32_t *modules)
{
	*stopped_ns = j->stopped_ns;
	*patched = j->patched;
	*modules = j->modules;
}

int inject__counts(const struct inject *j, uint64_t *passed, uint64_t *held, uint64_t *timed_out)
{
	uint64_t v[3]; /* passed, held, timed_out: neighbours in the data */
	int err;

	_Static_assert(HS_INJ_OFF_HELD == HS_INJ_OFF_PASSED + 8 && HS_INJ_OFF_TIMED_OUT == HS_INJ_OFF_PASSED + 16,
		       "the counts are read at once");
	*passed = *held = *timed_out = 0;
	if (!j || !j->stub)
		return -ENOENT;
	err = remote_read(j->pid, j->stub + HS_STUB_CODE_BYTES + HS_INJ_OFF_PASSED, v, sizeof(v));
	if (err)
		return err;
	*passed = v[0];
	*held = v[1];
	*timed_out = v[2];
	return 0;
}

int inject__detach(struct inject *j)
{
	uint64_t deadline = mono() + 2000000000ull;
	uint32_t state = 0, loader = 0;

	if (!j || j->pipe_w < 0)
		return 0;
	close(j->pipe_w);
	j->pipe_w = -1;
	if (!j->stub)
		return 0;
	while (mono() < deadline) {
		struct timespec ms = {0, 1000000};
		uint64_t ls;

		if (remote_read(j->pid, j->stub + HS_STUB_CODE_BYTES + HS_INJ_OFF_LIB +
					    offsetof(struct hs_inject_lib, lib_state), &state, sizeof(state)) ||
		    remote_read(j->pid, j->stub + HS_STUB_CODE_BYTES + HS_INJ_OFF_LOADER_STATE, &ls, sizeof(ls)))
			return 0; /* the process is gone */
		loader = (uint32_t)ls;
		if (state == HS_LIB_DETACHED || state == HS_LIB_FAILED || loader == HS_LOADER_NO_LIB ||
		    loader == HS_LOADER_NO_ENTRY)
			return 0;
		if (state == 0 && loader == 0) {
			uint64_t fired = 0;

			remote_read(j->pid, j->stub + HS_STUB_CODE_BYTES + HS_INJ_OFF_FIRED, &fired, sizeof(fired));
			if (fired == HS_FIRED_ARMED || fired == HS_FIRED_UNARMED || fired == HS_FIRED_PREARM)
				return 0; /* the loader never ran; when it does it finds the pipe closed */
		}
		nanosleep(&ms, NULL);
	}
	return -ETIMEDOUT;
}

void inject__free(struct inject *j)
{
	if (!j)
		return;
	if (j->pipe_w >= 0)
		close(j->pipe_w);
	if (j->pidfd >= 0)
		close(j->pidfd);
	if (j->shm_fd >= 0)
		close(j->shm_fd);
	if (j->wake_fd >= 0)
		close(j->wake_fd);
	free(j->d);
	free(j);
}
