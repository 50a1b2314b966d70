// SPDX-License-Identifier: MIT
/* libheapsnap.so, the process: attaching to the recorder's memory at start-up, telling it
 * of the process (exec, fork, exit), of every loaded image with its file, and of thread
 * names, so that a process that is gone still symbolizes. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "libheapsnap.h"
#include "python.h"

/* ---- processes, images, thread names ---- */

static void emit_proc(uint8_t type, uint32_t ppid)
{
	struct tstate *t = thread_state();
	struct hs_proc_event *e;
	uint32_t need;
	int fd;

	if (!t || !hs_hot.sl.shm)
		return;
	depth_in();
	e = reserve(t, sizeof(*e), &need);
	if (e) {
		struct stat st;
		ssize_t n;

		memset(e, 0, sizeof(*e));
		fill_hdr(&e->h, type, type == HS_EV_EXIT ? HS_EXIT_FLAG_NO_STATUS : 0, hs_hot.sl.self_pid, now_ns());
		e->h.tid = hs_hot.sl.self_pid;
		e->ppid = ppid;
		hs_hot.fns.prctl(PR_GET_NAME, (unsigned long)e->comm, 0, 0, 0);
		n = readlink("/proc/self/exe", e->path, sizeof(e->path) - 1);
		if (n < 0)
			e->path[0] = 0;
		if (!stat("/proc/self/exe", &st)) {
			e->exe_ino = st.st_ino;
			e->exe_dev = (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev));
		}
		fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, e->args, sizeof(e->args));
			e->args_len = n > 0 ? (uint32_t)n : 0;
			close(fd);
		}
		commit(t, need);
	}
	depth_out();
}

/* Each loaded object's executable segment, with its file's identity and name: the recorder
 * needs no /proc read to symbolize a process that is gone. */
static int map_cb(struct dl_phdr_info *info, size_t sz, void *ctx)
{
	struct tstate *t = ctx;
	char path[HS_EXEC_PATH_MAX], abs[PATH_MAX];
	struct stat st;

	(void)sz;
	if (info->dlpi_name && info->dlpi_name[0] == '/')
		snprintf(path, sizeof(path), "%s", info->dlpi_name);
	else if (info->dlpi_name && info->dlpi_name[0]) {
		/* dlopen("dir/lib.so") keeps the name as given: from the working directory, which
		 * right after the dlopen is the one it was opened from. */
		if (!realpath(info->dlpi_name, abs) || strlen(abs) >= sizeof(path))
			return 0;
		memcpy(path, abs, strlen(abs) + 1);
	} else {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

		if (n <= 0)
			return 0;
		path[n] = 0;
	}
	if (path[0] != '/' || stat(path, &st))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		struct hs_mmap_event *e;
		uint32_t need;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		e = reserve(t, sizeof(*e), &need);
		if (!e)
			return 1;
		memset(e, 0, sizeof(*e));
		fill_hdr(&e->h, HS_EV_MMAP, 0, t->tid, now_ns());
		e->addr = (info->dlpi_addr + ph->p_vaddr) & ~0xfffull;
		e->len = ((info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 0xfff) & ~0xfffull) - e->addr;
		e->off = ph->p_offset & ~0xfffull;
		e->ino = st.st_ino;
		e->dev = (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev));
		memcpy(e->path, path, sizeof(e->path));
		commit(t, need);
	}
	return 0;
}

void emit_maps(void)
{
	struct tstate *t = thread_state();

	if (!t || !hs_hot.sl.shm)
		return;
	depth_in();
	dl_iterate_phdr(map_cb, t);
	depth_out();
}

HOOK EXPORT void *dlopen(const char *file, int mode)
{
	void *h;

	if (UNLIKELY(!hs_hot.fns.dlopen))
		resolve();
	h = hs_hot.fns.dlopen(file, mode);
	if (h && hs_active() && !hook_depth()) {
		emit_maps(); /* the recorder keeps each mapping once */
		if (hs_hot.sl.injected)
			got_patch_new();
		py_attach(); /* an interpreter embedded now */
	}
	return h;
}

HOOK EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
	int ret;

	if (UNLIKELY(!hs_hot.fns.setname))
		resolve();
	ret = hs_hot.fns.setname(th, name);
	if (!ret && pthread_equal(th, pthread_self()) && hs_active() && hs_tls.t &&
	    hs_tls.t->ring >= 0)
		emit_comm(hs_tls.t);
	return ret;
}

HOOK EXPORT int prctl(int op, ...)
{
	unsigned long a[4];
	va_list ap;
	int ret;

	va_start(ap, op);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (UNLIKELY(!hs_hot.fns.prctl))
		resolve();
	ret = hs_hot.fns.prctl(op, a[0], a[1], a[2], a[3]);
	if (!ret && op == PR_SET_NAME && hs_active() && hs_tls.t && hs_tls.t->ring >= 0)
		emit_comm(hs_tls.t);
	return ret;
}

static uint32_t fork_parent;

/* No lock may be held across fork: the child would wait on it forever. */
static void before_fork(void)
{
	fork_parent = hs_hot.sl.self_pid;
	unwind_before_fork();
	sampled_lock_all();
	pool_lock();
}

static void after_fork_parent(void)
{
	pool_unlock();
	sampled_unlock_all();
	unwind_after_fork(false);
}

/* The child is a process of its own: new rings for its thread, and a FORK for the recorder. */
static void after_fork_child(void)
{
	pool_unlock();
	sampled_unlock_all();
	unwind_after_fork(true);
	hs_hot.sl.self_pid = (uint32_t)getpid();
	py_after_fork_child();
	if (hs_tls.t) {
		hs_tls.t->tid = gettid_raw();
		rng_seed(hs_tls.t);
		hs_tls.t->ring = -1;
		memset(hs_tls.t->sent, 0, sizeof(hs_tls.t->sent));
	}
	if (hs_active())
		emit_proc(HS_EV_FORK, fork_parent);
}

/* Ring I goes back to the pool once the recorder has read it (take_ring, reclaim_rings). */
static void ring_closing(int i)
{
	__atomic_fetch_or(&hs_hot.sl.shm->rings[i].owner, HS_SHM_CLOSING, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void hs_fini(void)
{
	if (hs_active() && hs_tls.t && hs_tls.t->ring >= 0 && hs_tls.t->gen == hs_hot.sl.session_gen) {
		emit_proc(HS_EV_EXIT, 0); /* marked: no status known here */
		/* The process is ending: its ring is free to the next process once read, rather
		 * than after the recorder finds the pid gone. Anything later claims anew. */
		ring_closing(hs_tls.t->ring);
		hs_tls.t->ring = -1;
	}
}

/* Rings this pid holds at start-up were its previous image's (exec ends every thread of
 * it, and nothing of this image has claimed one yet): closing, as its threads are gone. */
static void close_previous_image(void)
{
	for (uint32_t i = 0; i < hs_hot.sl.shm->nr_rings; i++) {
		uint64_t owner = __atomic_load_n(&hs_hot.sl.shm->rings[i].owner, __ATOMIC_ACQUIRE);

		if (owner && owner >> 32 == hs_hot.sl.self_pid && !(owner & HS_SHM_CLOSING))
			ring_closing((int)i);
	}
}

/* The memory's descriptor named in ENV (HS_SHM_ENV), if it is still the recorder's: a child
 * that closed it (close_fds) may have opened another file at the same number since. */
static bool fd_inherited(const char *env, int *fd, uint64_t *ino)
{
	unsigned long long i;
	struct stat st;

	if (!env || sscanf(env, "%d,%llu", fd, &i) != 2)
		return false;
	*ino = i;
	return !fstat(*fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_ino == i;
}

/* The memory's descriptor from the recorder's socket (HS_SOCK_ENV), for a child that closed
 * the inherited one: the server must be the recorder's process and user, and the memory the
 * one the environment names. Waits at most 2 s for the answer. */
static bool fd_from_recorder(uint64_t ino, int *fd)
{
	const char *env = getenv(HS_SOCK_ENV);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tmo = {2, 0};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	char name[64], byte;
	struct iovec io = {&byte, 1};
	struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct cmsghdr *h;
	struct stat st;
	unsigned uid;
	int pid, s, got = -1;
	bool ok = false;

	if (!env || sscanf(env, "%63[^,],%d,%u", name, &pid, &uid) != 3)
		return false;
	memcpy(a.sun_path + 1, name, strlen(name));
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	if (setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) ||
	    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo)) || /* a full backlog */
	    connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))) ||
	    getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) || cr.pid != pid || cr.uid != uid ||
	    recvmsg(s, &m, MSG_CMSG_CLOEXEC) != 1 || (m.msg_flags & MSG_CTRUNC))
		goto out;
	h = CMSG_FIRSTHDR(&m);
	if (!h || h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS || h->cmsg_len != CMSG_LEN(sizeof(got)))
		goto out;
	memcpy(&got, CMSG_DATA(h), sizeof(got));
	/* From the recorder itself: the memory need only be the one the environment names. */
	ok = !fstat(got, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_ino == ino;
out:
	close(s);
	if (!ok) {
		if (got >= 0)
			close(got);
		return false;
	}
	*fd = got;
	return true;
}

uint64_t hs_ctor_ns[2]; /* when the constructor began and ended: an injection's -v shows them */

__attribute__((constructor)) static void hs_init(void)
{
	const char *env = getenv(HS_SHM_ENV);
	uint64_t ino = 0;
	struct stat st;
	bool received = false;
	int fd;
	void *m;

	hs_ctor_ns[0] = now_ns();
	resolve();
	hs_hot.sl.self_pid = (uint32_t)getpid();
	hs_ctor_ns[1] = now_ns();
	if (!env)
		return; /* not started by heapsnap-record: hooks pass through */
	if (!fd_inherited(env, &fd, &ino)) {
		/* Closed by a parent (close_fds): asked of the recorder. Kept only as long as it
		 * takes to map: a program that closed what it inherited sees no descriptor of
		 * ours among its own, and its children ask the recorder as it did. */
		if (!ino || !fd_from_recorder(ino, &fd))
			return;
		received = true;
	}
	if (fstat(fd, &st)) {
		if (received)
			close(fd);
		return;
	}
	depth_in();
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	depth_out();
	if (received)
		close(fd);
	if (m == MAP_FAILED || events_init())
		return;
	hs_hot.sl.shm = m;
	struct hs_shm_hdr *h = m;

	if (h->magic != HS_SHM_MAGIC || h->version != HS_SHM_VERSION ||
	    hs_shm_size(h->nr_rings, h->ring_bytes) > (uint64_t)st.st_size || (h->ring_bytes & (h->ring_bytes - 1)) ||
	    __atomic_load_n(&h->dormant, __ATOMIC_ACQUIRE)) {
		hs_hot.sl.shm = NULL;
		return;
	}
	close_previous_image();
	process_attach();
	/* Whether sampled blocks go to the pool is settled before any is sampled: a block put in
	 * the table before the pool's range is published would pass by at its free. */
	fast_path(hs_hot.sl.shm->sample_rate != 0);
	__atomic_store_n(&hs_hot.sl.active, 1, __ATOMIC_RELEASE);
	emit_proc(HS_EV_EXEC, (uint32_t)getppid());
	emit_maps();
	py_attach();
}

/* Once per process, whichever way the library came in. */
void process_attach(void)
{
	static int done;

	hs_hot.sl.self_pid = (uint32_t)getpid();
	if (!__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
