// SPDX-License-Identifier: MIT
/* A target that overwrites its own in-process recorder's ring, as a wild write could: it
 * commits, in the ring its thread claimed, a record that says it is 1 GiB long. The
 * recorder must give that ring up with a warning, not read past it, and not crash.
 * Run under heapsnap-record --via preload; allocates once first so the thread has a ring. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shm.h"

static void *volatile keep;

int main(void)
{
	const char *env = getenv(HS_SHM_ENV);
	uint64_t me = (uint64_t)getpid() << 32 | (uint64_t)syscall(SYS_gettid);
	struct hs_shm_hdr *h;
	struct stat st;
	int fd;

	keep = malloc(1000); /* the hooks claim this thread's ring */
	if (!env || sscanf(env, "%d,", &fd) != 1 || fstat(fd, &st))
		return 2;
	h = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return 3;
	for (uint32_t i = 0; i < h->nr_rings; i++) {
		struct hs_shm_ring *r = &h->rings[i];
		uint8_t *data = (uint8_t *)h + h->data_offset + (uint64_t)i * h->ring_bytes;
		uint64_t prod = __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE);

		if (__atomic_load_n(&r->owner, __ATOMIC_ACQUIRE) != me)
			continue;
		*(uint32_t *)(data + (prod & (h->ring_bytes - 1))) = 1u << 29;
		__atomic_store_n(&r->prod, prod + 64, __ATOMIC_RELEASE);
		_exit(0); /* no destructor: the library would write after the scribble */
	}
	return 4;
}
