// SPDX-License-Identifier: MIT
/* The recorder's half of the in-process way in: it owns the shared memory the targets'
 * libheapsnap.so writes into, and gives the rings of threads that are gone back to the pool. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload.h"

struct preload {
	int fd, wake_fd;
	struct hs_shm_hdr *hdr;
	uint64_t size;
	uint32_t nr_rings, ring_bytes; /* as checked: the header is the target's to scribble on */
};

void sampling_thresholds(uint64_t rate, uint64_t *out)
{
	double sum = 0, q[HS_NR_THRESHOLDS];

	for (uint32_t i = 0; i < HS_NR_THRESHOLDS; i++) {
		q[i] = -log1p(-((double)i + 0.5) / HS_NR_THRESHOLDS);
		sum += q[i];
	}
	for (uint32_t i = 0; i < HS_NR_THRESHOLDS; i++) {
		uint64_t v = (uint64_t)llround(q[i] / (sum / HS_NR_THRESHOLDS) * (double)rate);

		out[i] = v ? v : 1;
	}
}

int preload__open(uint32_t nr_rings, uint32_t ring_bytes, uint64_t sample_rate, uint32_t stack_mode,
		  uint32_t max_stack, uint32_t dwarf_bytes, struct preload **out)
{
	struct preload *p = calloc(1, sizeof(*p));
	void *m;
	int err;

	if (!p)
		return -ENOMEM;
	p->fd = p->wake_fd = -1;
	p->size = hs_shm_size(nr_rings, ring_bytes);
	/* Not close-on-exec: the command inherits both and finds them through HS_SHM_ENV. */
	p->fd = memfd_create("heapsnap", 0);
	p->wake_fd = eventfd(0, EFD_NONBLOCK);
	if (p->fd < 0 || p->wake_fd < 0 || ftruncate(p->fd, (off_t)p->size)) {
		err = -errno;
		goto fail;
	}
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
	char fds[32], *v;

	/* First, so that the hooks sit in front of any allocator the user preloads. */
	if (asprintf(&v, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "") < 0)
		return -ENOMEM;
	snprintf(fds, sizeof(fds), "%d,%d", p->fd, p->wake_fd);
	if (setenv("LD_PRELOAD", v, 1) || setenv(HS_SHM_ENV, fds, 1)) {
		free(v);
		return -errno;
	}
	free(v);
	return 0;
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

bool preload__release(struct preload *p, uint32_t i, uint64_t owner, uint64_t pos)
{
	struct hs_shm_ring *r = &p->hdr->rings[i];

	/* Positions only grow: the next owner starts where this one ended. */
	__atomic_store_n(&r->cons, pos, __ATOMIC_RELEASE);
	/* A new thread may have taken the ring itself since OWNER was read (libheapsnap.so's
	 * take_ring): then it stays that thread's. */
	return __atomic_compare_exchange_n(&r->owner, &owner, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

void preload__counters(const struct preload *p, uint64_t *cnt)
{
	for (int k = 0; k < HS_CNT__MAX; k++)
		cnt[k] = __atomic_load_n(&p->hdr->counters[k], __ATOMIC_RELAXED);
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
	if (p->hdr)
		munmap(p->hdr, p->size);
	if (p->fd >= 0)
		close(p->fd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	free(p);
}
