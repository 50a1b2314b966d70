// SPDX-License-Identifier: MIT
/* libheapsnap.so, injected into a running process (heapsnap-record -p PID --via inject): the
 * entry the stub's loader thread calls. It sets up the shared memory (kept for the process's
 * life: a later attach reuses it), points the GOT entries of every module at the hooks,
 * answers the recorder in the stub's data, then waits on a pipe whose other end only the
 * recorder holds. EOF there (the recorder detached, or died, even by SIGKILL) or a recorder
 * gone quiet puts every entry back; the library stays loaded, dormant. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "abi/inject_abi.h"
#include "libheapsnap.h"
#include "python.h"

static int own_shm_fd = -1; /* the memory this library made; -1 while it has none */
static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;

static int fail(struct hs_inject_lib *l, int err, const char *what)
{
	l->lib_err = err;
	snprintf(l->lib_msg, sizeof(l->lib_msg), "%s: %s", what, strerror(err));
	__atomic_store_n(&l->lib_state, HS_LIB_FAILED, __ATOMIC_RELEASE);
	return -err;
}

/* A descriptor made while the target's calls wait in the trampoline: not a standard one (a
 * program that closed its stdout would write there), but not high yet. A number past the
 * descriptor table's size (64 at first) grows the table, and in a process with threads (ours,
 * the loader, is one) the kernel then waits for an RCU grace period (expand_fdtable's
 * synchronize_rcu): 5 to 15 ms on this 2-core machine, idle or loaded, which every held call
 * would wait too. fds_high moves them up once the gate is open. */
static int fd_low(int fd)
{
	int up;

	if (fd < 0 || fd >= 3)
		return fd;
	up = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (up < 0)
		return fd;
	close(fd);
	return up;
}

/* The memory's descriptors at their high numbers (hs_fd_high), nobody waiting: before the
 * recorder is told them. At once when they are there already (a session before moved them). */
static void fds_high(void)
{
	own_shm_fd = hs_fd_high(own_shm_fd, true);
	wake_fd = hs_fd_high(wake_fd, true);
}

/* The shared memory: made at the first attach, kept for the next. Its descriptors are at low
 * numbers until fds_high. */
static int shm_setup(struct hs_inject_lib *l)
{
	struct hs_shm_hdr *h;
	uint64_t size;
	void *m;
	int fd;

	if (own_shm_fd >= 0)
		return 0;
	if (!l->nr_rings || l->nr_rings > HS_SHM_MAX_RINGS || l->ring_bytes < 4096 || l->ring_bytes > (64u << 20) ||
	    (l->ring_bytes & (l->ring_bytes - 1)))
		return fail(l, EINVAL, "ring sizes");
	size = hs_shm_size(l->nr_rings, l->ring_bytes);
	fd = fd_low(memfd_create("heapsnap", MFD_CLOEXEC | MFD_ALLOW_SEALING));
	if (fd < 0)
		return fail(l, errno, "memfd_create");
	/* Sealed at its size: the recorder maps it, and a file that shrank would fault it. */
	if (ftruncate(fd, (off_t)size) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		int e = errno;

		close(fd);
		return fail(l, e, "sizing the shared memory");
	}
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;

		close(fd);
		return fail(l, e, "mmap of the shared memory");
	}
	if (events_init()) {
		munmap(m, size);
		close(fd);
		return fail(l, ENOMEM, "the table of sampled blocks");
	}
	/* The recorder's to wait on (it takes a copy): the library wakes it through the memory. */
	wake_fd = fd_low(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
	if (wake_fd < 0) {
		int e = errno;

		munmap(m, size);
		close(fd);
		return fail(l, e, "eventfd");
	}
	h = m;
	h->nr_rings = l->nr_rings;
	h->ring_bytes = l->ring_bytes;
	h->data_offset = hs_shm_data_offset(l->nr_rings);
	/* Whole before any hook can see it: one still running from a session taken over reads it
	 * (claim_ring, reserve_full). */
	__atomic_store_n(&hs_hot.sl.shm, h, __ATOMIC_RELEASE);
	own_shm_fd = fd;
	return 0;
}

/* The session's settings, and every ring free and empty: what an earlier session left
 * unread is not this one's. */
static void shm_session(const struct hs_inject_data *d)
{
	const struct hs_inject_lib *l = &d->lib;
	struct timespec t;

	for (uint32_t i = 0; i < hs_hot.sl.shm->nr_rings; i++) {
		struct hs_shm_ring *r = &hs_hot.sl.shm->rings[i];

		__atomic_store_n(&r->cons, __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
		__atomic_store_n(&r->owner, 0, __ATOMIC_RELEASE);
	}
	memset(hs_hot.sl.shm->counters, 0, sizeof(hs_hot.sl.shm->counters));
	hs_hot.sl.shm->sample_rate = l->sample_rate;
	hs_hot.sl.shm->stack_mode = l->stack_mode;
	hs_hot.sl.shm->max_stack = l->max_stack;
	hs_hot.sl.shm->dwarf_bytes = l->dwarf_bytes;
	hs_hot.sl.shm->recorder_pid = l->recorder_pid;
	memcpy(hs_hot.sl.shm->thresholds, d->thresholds, sizeof(hs_hot.sl.shm->thresholds));
	clock_gettime(CLOCK_MONOTONIC, &t);
	hs_hot.sl.shm->heartbeat_ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
	hs_hot.sl.shm->version = HS_SHM_VERSION;
	hs_hot.sl.shm->magic = HS_SHM_MAGIC;
	__atomic_store_n(&hs_hot.sl.shm->dormant, 0, __ATOMIC_RELEASE);
}

static void wait_for_detach(int pipe_fd)
{
	for (;;) {
		struct pollfd p = {.fd = pipe_fd, .events = POLLIN};
		int n = poll(&p, 1, 100);
		char c;

		if (!__atomic_load_n(&hs_hot.sl.active, __ATOMIC_ACQUIRE))
			return; /* a hook found the recorder gone quiet */
		if (n < 0 && errno != EINTR)
			return;
		if (n > 0 && read(pipe_fd, &c, 1) <= 0 && errno != EAGAIN && errno != EINTR)
			return; /* EOF: detached, or the recorder is gone */
	}
}

/* The target's threads waiting in the trampoline go on (recorder/inject/inject_stub.S): to the hooks
 * once they are in place, to the allocator otherwise (counted there). */
static void open_gate(struct hs_inject_data *d)
{
	__atomic_store_n(&d->gate, HS_GATE_OPEN, __ATOMIC_RELEASE);
	syscall(SYS_futex, &d->gate, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

struct relro_q {
	uint64_t addr;
	bool ro;
};

static int relro_cb(struct dl_phdr_info *info, size_t sz, void *ctx)
{
	struct relro_q *q = ctx;

	(void)sz;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = (info->dlpi_addr + ph->p_vaddr) & ~4095ull;
		uint64_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~4095ull;

		if (ph->p_type == PT_GNU_RELRO && q->addr >= lo && q->addr < hi)
			q->ro = true;
	}
	return 0;
}

/* The trampoline's safe-point entries (read, epoll_wait...: no allocator, not hooked) back to
 * what they held, now that the library is in: only an entry still holding the trampoline, by
 * one compare-and-swap (the page made writable for it if it is read-only after relocation). */
static void safe_points_back(const struct hs_inject_data *d)
{
	const struct hs_inject_lib *l = &d->lib;

	for (uint32_t i = 0; i < l->nr_slots && i < HS_INJ_MAX_SLOTS; i++) {
		const struct hs_inject_slot *s = &d->slots[i];
		uint64_t *got = (uint64_t *)(uintptr_t)s->got, cur;
		struct relro_q q = {s->got, false};
		void *page = (void *)(uintptr_t)(s->got & ~4095ull);

		if (d->slot_kind[i] != HS_SLOT_SAFE_POINT || (s->got & 7))
			continue;
		cur = __atomic_load_n(got, __ATOMIC_ACQUIRE);
		if (cur < l->stub_lo || cur >= l->stub_hi)
			continue; /* bound lazily since, or rewritten by the program: left as it is */
		dl_iterate_phdr(relro_cb, &q);
		if (q.ro && mprotect(page, 4096, PROT_READ | PROT_WRITE))
			continue;
		__atomic_compare_exchange_n(got, &cur, s->orig, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
		if (q.ro)
			mprotect(page, 4096, PROT_READ);
	}
}

static int session(struct hs_inject_data *d);

EXPORT int heapsnap_inject(struct hs_inject_data *d)
{
	struct hs_inject_lib *l = &d->lib;
	sigset_t all;
	int err;

	/* The target's signals are for its own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_NAME, (unsigned long)"heapsnap", 0, 0, 0);
	depth_in(); /* nothing this thread allocates is the target's */
	if (d->magic != HS_INJ_MAGIC || d->version != HS_INJ_VERSION || d->size != sizeof(*d))
		return fail(l, EPROTO, "the recorder is another version of heapsnap"); /* its fields are not ours */
	d->times[HS_T_CTOR_IN] = hs_ctor_ns[0];
	d->times[HS_T_CTOR_OUT] = hs_ctor_ns[1];
	if (l->lib_fd >= 0)
		close(l->lib_fd);
	/* One session at a time: the one before may still be putting entries back. */
	for (int i = 0;; i++) {
		struct timespec ms = {0, 1000000};

		if (!pthread_mutex_trylock(&session_lock)) {
			err = session(d);
			pthread_mutex_unlock(&session_lock);
			break;
		}
		if (i == 2000) {
			err = fail(l, EBUSY, "another heapsnap-record is attached");
			break;
		}
		nanosleep(&ms, NULL);
	}
	open_gate(d);
	close(l->pipe_fd); /* whatever the outcome: each attach brings a pipe of its own */
	return err;
}

static int session(struct hs_inject_data *d)
{
	struct hs_inject_lib *l = &d->lib;
	uint32_t modules = 0, nr, first;
	struct timespec cpu;
	struct rusage ru;
	int err;

	d->times[HS_T_SESSION] = now_ns();
	/* Preloaded, its recorder gone: the hooks still think themselves attached until their next
	 * event, and this session takes the place of that one. Its memory is marked ended (a
	 * recorder killed did not), so that a program exec'd from here on, which finds it in its
	 * environment, runs unrecorded rather than fill rings nobody reads. */
	if (__atomic_load_n(&hs_hot.sl.active, __ATOMIC_ACQUIRE)) {
		if (!recorder_ended())
			return fail(l, EBUSY, "already recording (heapsnap-record started this process)");
		__atomic_store_n(&hs_hot.sl.shm->dormant, 1, __ATOMIC_RELEASE);
		go_dormant();
		/* Before the new memory is published (shm_setup): see ring_memory. */
		__atomic_add_fetch(&hs_hot.sl.session_gen, 1, __ATOMIC_RELEASE);
	}
	if (got_init())
		return fail(l, ENOMEM, "the table of rewritten GOT entries");
	/* The real functions before any entry points at a hook that calls them. */
	resolve_from(RTLD_DEFAULT);
	if (got_is_hook((void *)hs_hot.fns.malloc))
		resolve_from(RTLD_NEXT); /* preloaded before: we are the default */
	if (!hs_hot.fns.malloc || !hs_hot.fns.free)
		return fail(l, ENOENT, "no malloc or free to forward to");
	d->times[HS_T_RESOLVED] = now_ns();
	if ((err = shm_setup(l)))
		return err;
	d->times[HS_T_SHM] = now_ns();
	sampled_clear();
	py_codes_new_session();
	shm_session(d);
	__atomic_add_fetch(&hs_hot.sl.session_gen, 1, __ATOMIC_RELEASE);
	hs_hot.sl.injected = 1;
	process_attach();
	fast_path(hs_hot.sl.shm->sample_rate != 0); /* before any block is sampled, as in lib_process.c */
	__atomic_store_n(&hs_hot.sl.active, 1, __ATOMIC_RELEASE);
	/* Before any entry is rewritten: the trampoline then leaves every entry as it finds it
	 * (recorder/inject/inject_stub.S, the lazy binder's). */
	__atomic_store_n(&d->patching, 1, __ATOMIC_SEQ_CST);
	d->times[HS_T_SET] = now_ns();
	/* The entries whose calls wait, or go by uncounted, first; the walk of every module's
	 * relocations for the rest once nothing waits. A recorder that gave no hashes: the walk
	 * now. */
	nr = l->nr_slots < HS_INJ_MAX_SLOTS ? l->nr_slots : HS_INJ_MAX_SLOTS;
	first = got_patch_slots(d->slots, d->slot_kind, d->slot_hash, nr, l->stub_lo, l->stub_hi);
	if (!first) {
		l->nr_patched = got_patch_all(d->slots, nr, l->stub_lo, l->stub_hi, &modules);
		l->nr_modules = modules;
		if (!l->nr_patched) {
			go_dormant();
			return fail(l, ENOENT, "no module imports an allocator through its GOT");
		}
	}
	d->nr_first = first ? first : l->nr_patched;
	d->times[HS_T_PATCHED] = now_ns();
	emit_maps();
	d->times[HS_T_MAPS] = now_ns();
	py_attach();
	d->times[HS_T_PY] = now_ns();
	pymem_request_install(); /* runs when the main thread next runs Python */
	d->ready_ns = d->times[HS_T_READY] = now_ns();
	if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu))
		d->times[HS_T_CPU] = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
	if (!getrusage(RUSAGE_THREAD, &ru)) {
		d->times[HS_T_NIVCSW] = (uint64_t)ru.ru_nivcsw;
		d->times[HS_T_NVCSW] = (uint64_t)ru.ru_nvcsw;
	}
	open_gate(d);
	/* The hooks are in: what remains keeps no call waiting. */
	if (first) {
		l->nr_patched = first + got_patch_all(d->slots, nr, l->stub_lo, l->stub_hi, &modules);
		l->nr_modules = modules;
	}
	safe_points_back(d);
	if (first)
		d->rest_ns = now_ns();
	fds_high();
	d->times[HS_T_FDS_HIGH] = now_ns();
	l->shm_fd = own_shm_fd;
	l->wake_fd = wake_fd;
	__atomic_store_n(&l->lib_state, HS_LIB_READY, __ATOMIC_RELEASE);

	wait_for_detach(l->pipe_fd);

	go_dormant();
	__atomic_store_n(&hs_hot.sl.shm->dormant, 1, __ATOMIC_RELEASE);
	pymem_detach();
	got_restore_all();
	__atomic_store_n(&l->lib_state, HS_LIB_DETACHED, __ATOMIC_RELEASE);
	return 0;
}
