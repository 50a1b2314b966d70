// SPDX-License-Identifier: MIT
/* The recorder's half of the in-process way in: it owns the shared memory the targets'
 * libheapsnap.so writes into, and gives the rings of threads that are gone back to the pool. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "preload_shm.h"
#include "sampling.h"

struct preload {
	int fd, wake_fd, listen_fd;    /* wake_fd: the recorder's own, in its epoll set */
	pthread_t bridge;              /* waits on the memory's wake_seq, writes wake_fd */
	bool bridge_on;
	int bridge_stop;
	struct hs_shm_hdr *hdr;
	uint64_t size, ino;
	uint32_t nr_rings, ring_bytes; /* as checked: the header is the target's to scribble on */
	char sock_name[64];            /* abstract: sock_name[0] is the NUL */
};

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

/* An abstract unix socket of a random name (nobody can take it first, or guess it to crowd
 * it), close-on-exec: children find it by name in HS_SOCK_ENV. */
static int listen_open(struct preload *p)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	uint8_t rnd[8];
	socklen_t len;
	int n;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -EIO;
	n = snprintf(p->sock_name, sizeof(p->sock_name), "heapsnap.%d.%02x%02x%02x%02x%02x%02x%02x%02x", (int)getpid(),
		     rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	if (n < 0 || (size_t)n + 1 >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path + 1, p->sock_name, (size_t)n);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, len) || listen(p->listen_fd, 64))
		return -errno;
	return 0;
}

/* The targets wake the recorder through the futex word wake_seq of the memory they share;
 * this thread turns each bump into a write of the recorder's eventfd, which its poll loop
 * waits on with everything else. It waits 100 ms at most a round, to see that it must stop. */
static void *wake_bridge(void *arg)
{
	struct preload *p = arg;
	uint32_t *seq = &p->hdr->wake_seq, last = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
	struct timespec tmo = {0, 100 * 1000 * 1000};
	uint64_t one = 1;

	while (!__atomic_load_n(&p->bridge_stop, __ATOMIC_ACQUIRE)) {
		uint32_t v = __atomic_load_n(seq, __ATOMIC_ACQUIRE);

		if (v == last) {
			syscall(SYS_futex, seq, FUTEX_WAIT, v, &tmo, NULL, 0);
			v = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		}
		if (v != last) {
			last = v;
			if (write(p->wake_fd, &one, sizeof(one)) < 0)
				(void)0; /* full: the loop is awake already */
		}
	}
	return NULL;
}

static int bridge_start(struct preload *p)
{
	int err = pthread_create(&p->bridge, NULL, wake_bridge, p);

	p->bridge_on = !err;
	return -err;
}

static void bridge_stop(struct preload *p)
{
	if (!p->bridge_on)
		return;
	__atomic_store_n(&p->bridge_stop, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&p->hdr->wake_seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &p->hdr->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	pthread_join(p->bridge, NULL);
	p->bridge_on = false;
}

int preload__open(uint32_t nr_rings, uint32_t ring_bytes, uint64_t sample_rate, uint32_t stack_mode,
		  uint32_t max_stack, uint32_t dwarf_bytes, struct preload **out)
{
	struct preload *p = calloc(1, sizeof(*p));
	struct stat st;
	void *m;
	int err;

	if (!p)
		return -ENOMEM;
	p->fd = p->wake_fd = p->listen_fd = -1;
	p->size = hs_shm_size(nr_rings, ring_bytes);
	/* Not close-on-exec: the command inherits it and finds it through HS_SHM_ENV. */
	p->fd = hs_fd_high(memfd_create("heapsnap", 0), false);
	p->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->fd < 0 || p->wake_fd < 0 || ftruncate(p->fd, (off_t)p->size) || fstat(p->fd, &st)) {
		err = -errno;
		goto fail;
	}
	p->ino = (uint64_t)st.st_ino;
	if ((err = listen_open(p)))
		goto fail;
	m = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	p->hdr = m;
	p->hdr->nr_rings = nr_rings;
	p->hdr->ring_bytes = ring_bytes;
	p->hdr->sample_rate = sample_rate;
	p->hdr->stack_mode = stack_mode;
	p->hdr->max_stack = max_stack;
	p->hdr->dwarf_bytes = dwarf_bytes;
	p->hdr->data_offset = hs_shm_data_offset(nr_rings);
	p->hdr->recorder_pid = (uint64_t)getpid();
	if (sample_rate)
		sampling_thresholds(sample_rate, p->hdr->thresholds);
	p->hdr->version = HS_SHM_VERSION;
	p->nr_rings = nr_rings;
	p->ring_bytes = ring_bytes;
	__atomic_store_n(&p->hdr->magic, HS_SHM_MAGIC, __ATOMIC_RELEASE);
	if ((err = bridge_start(p)))
		goto fail;
	*out = p;
	return 0;
fail:
	preload__free(p);
	return err;
}

int preload__adopt(int shm_fd, int wake_fd, struct preload **out)
{
	struct preload *p = calloc(1, sizeof(*p));
	struct hs_shm_hdr *h;
	struct stat st;
	void *m;
	int err;

	if (!p)
		return -ENOMEM;
	p->listen_fd = -1;
	p->fd = dup(shm_fd);
	p->wake_fd = dup(wake_fd);
	if (p->fd < 0 || p->wake_fd < 0 || fstat(p->fd, &st)) {
		err = -errno;
		goto fail;
	}
	err = -EPROTO;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof(*h) || (uint64_t)st.st_size > (1ull << 36))
		goto fail;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	p->hdr = h = m;
	p->size = (uint64_t)st.st_size;
	/* Read once: the target may change them, but the size it was sealed at stays. */
	uint32_t nr = h->nr_rings, rb = h->ring_bytes;
	uint64_t off = h->data_offset;

	if (h->magic != HS_SHM_MAGIC || h->version != HS_SHM_VERSION || !nr || nr > HS_SHM_MAX_RINGS || rb < 4096 ||
	    (rb & (rb - 1)) || off != hs_shm_data_offset(nr) || hs_shm_size(nr, rb) > p->size)
		goto fail;
	p->nr_rings = nr;
	p->ring_bytes = rb;
	if ((err = bridge_start(p)))
		goto fail;
	*out = p;
	return 0;
fail:
	preload__free(p);
	return err;
}

char *preload__find_lib(void)
{
	const char *env = getenv("HEAPSNAP_LIB");
	char self[PATH_MAX], cand[PATH_MAX + 64], *slash;
	ssize_t n;

	if (env && *env)
		return realpath(env, NULL);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	snprintf(cand, sizeof(cand), "%s/libheapsnap.so", self);
	if (!access(cand, R_OK))
		return realpath(cand, NULL);
	snprintf(cand, sizeof(cand), "%s/../lib/heapsnap/libheapsnap.so", self);
	if (!access(cand, R_OK))
		return realpath(cand, NULL);
	return NULL;
}

int preload__setenv(const struct preload *p, const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char fds[64], sock[128], *v;

	/* First, so that the hooks sit in front of any allocator the user preloads. */
	if (asprintf(&v, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "") < 0)
		return -ENOMEM;
	/* The inode tells the library its descriptor is still ours, not one a child that closed
	 * it has since opened at the same number. */
	snprintf(fds, sizeof(fds), "%d,%" PRIu64, p->fd, p->ino);
	snprintf(sock, sizeof(sock), "%s,%d,%u", p->sock_name, (int)p->hdr->recorder_pid, (unsigned)geteuid());
	if (setenv("LD_PRELOAD", v, 1) || setenv(HS_SHM_ENV, fds, 1) ||
	    (p->listen_fd >= 0 && setenv(HS_SOCK_ENV, sock, 1))) {
		free(v);
		return -errno;
	}
	free(v);
	return 0;
}

int preload__listen_fd(const struct preload *p)
{
	return p->listen_fd;
}

int preload__accept(struct preload *p, struct preload_peer *peer)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	peer->fd = peer->pidfd = -1;
	if (p->listen_fd < 0)
		return 0;
	peer->fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (peer->fd < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED ? 0 : -errno;
	if (getsockopt(peer->fd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
		int err = -errno;

		preload__peer_close(peer);
		return err;
	}
	peer->pid = cr.pid;
	peer->uid = cr.uid;
	len = sizeof(peer->pidfd);
	if (getsockopt(peer->fd, SOL_SOCKET, SO_PEERPIDFD, &peer->pidfd, &len))
		peer->pidfd = -1; /* before Linux 6.5: the pid alone */
	return 1;
}

bool preload__peer_alive(const struct preload_peer *peer)
{
	return peer->pidfd < 0 || !syscall(SYS_pidfd_send_signal, peer->pidfd, 0, NULL, 0);
}

int preload__grant(struct preload *p, struct preload_peer *peer)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c = {0};
	char one = 1;
	struct iovec io = {&one, 1};
	struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf)};
	int fds[1] = {p->fd}, err = 0;

	c.h.cmsg_level = SOL_SOCKET;
	c.h.cmsg_type = SCM_RIGHTS;
	c.h.cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(&c.h), fds, sizeof(fds));
	if (sendmsg(peer->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
		err = errno ? -errno : -EIO;
	preload__peer_close(peer);
	return err;
}

void preload__peer_close(struct preload_peer *peer)
{
	if (peer->fd >= 0)
		close(peer->fd);
	if (peer->pidfd >= 0)
		close(peer->pidfd);
	peer->fd = peer->pidfd = -1;
}

struct hs_shm_hdr *preload__hdr(const struct preload *p)
{
	return p->hdr;
}

uint8_t *preload__ring_data(const struct preload *p, uint32_t i)
{
	return (uint8_t *)p->hdr + hs_shm_data_offset(p->nr_rings) + (uint64_t)i * p->ring_bytes;
}

void preload__geometry(const struct preload *p, uint32_t *nr_rings, uint32_t *ring_bytes)
{
	*nr_rings = p->nr_rings;
	*ring_bytes = p->ring_bytes;
}

int preload__wake_fd(const struct preload *p)
{
	return p->wake_fd;
}

void preload__ack(const struct preload *p)
{
	uint64_t v;

	while (read(p->wake_fd, &v, sizeof(v)) == sizeof(v))
		;
}

void preload__heartbeat(struct preload *p, uint64_t now_ns)
{
	__atomic_store_n(&p->hdr->heartbeat_ns, now_ns, __ATOMIC_RELEASE);
}

uint64_t preload__owner(const struct preload *p, uint32_t i)
{
	return __atomic_load_n(&p->hdr->rings[i].owner, __ATOMIC_ACQUIRE);
}

bool preload__close(struct preload *p, uint32_t i, uint64_t owner)
{
	return __atomic_compare_exchange_n(&p->hdr->rings[i].owner, &owner, owner | HS_SHM_CLOSING, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

bool preload__release(struct preload *p, uint32_t i, uint64_t owner, uint64_t pos)
{
	struct hs_shm_ring *r = &p->hdr->rings[i];

	/* Positions only grow: the next owner starts where this one ended. */
	__atomic_store_n(&r->cons, pos, __ATOMIC_RELEASE);
	/* A new thread may have taken the ring itself since OWNER was read (libheapsnap.so's
	 * take_ring): then it stays that thread's. */
	return __atomic_compare_exchange_n(&r->owner, &owner, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

bool preload__starved(const struct preload *p)
{
	return __atomic_load_n(&p->hdr->starved, __ATOMIC_ACQUIRE) != 0;
}

void preload__fed(struct preload *p)
{
	__atomic_store_n(&p->hdr->starved, 0, __ATOMIC_RELEASE);
}

void preload__counters(const struct preload *p, uint64_t *cnt)
{
	for (int k = 0; k < HS_CNT__MAX; k++)
		cnt[k] = __atomic_load_n(&p->hdr->counters[k], __ATOMIC_RELAXED);
}

bool preload__take_note(struct preload *p, char *buf, size_t len)
{
	uint32_t n = __atomic_load_n(&p->hdr->note_len, __ATOMIC_ACQUIRE);

	if (!n || !len)
		return false;
	if (n >= sizeof(p->hdr->note))
		n = sizeof(p->hdr->note) - 1;
	if (n >= len)
		n = (uint32_t)len - 1;
	memcpy(buf, p->hdr->note, n);
	buf[n] = 0;
	__atomic_store_n(&p->hdr->note_len, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&p->hdr->note_pid, 0, __ATOMIC_RELEASE);
	return true;
}

void preload__detach(struct preload *p)
{
	if (p && p->hdr)
		__atomic_store_n(&p->hdr->dormant, 1, __ATOMIC_RELEASE);
}

void preload__free(struct preload *p)
{
	if (!p)
		return;
	bridge_stop(p);
	if (p->hdr)
		munmap(p->hdr, p->size);
	if (p->fd >= 0)
		close(p->fd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	free(p);
}
