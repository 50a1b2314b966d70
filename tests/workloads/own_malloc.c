// SPDX-License-Identifier: MIT
/* An executable that exports its own malloc, free, calloc and realloc (as Chromium's does,
 * for PartitionAlloc): the loader binds them ahead of any preloaded library, so a preloaded
 * recorder sees none of its allocations and must say so; BPF sees them.
 *
 *   own_malloc [FIFO]
 *   own_keep      5 x 7000 = 35000 bytes live at exit
 *
 * With FIFO, it waits for a line from FIFO before it exits. *
 * Its allocator is a bump allocator over an arena of its own, calling nothing of glibc's
 * (frees are no-ops). Exits 0; 3 when its arena runs out. */
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define ARENA (64u << 20)

static _Alignas(16) unsigned char arena[ARENA];
static size_t used;

void *malloc(size_t n)
{
	size_t at = __atomic_fetch_add(&used, (n + 31) & ~(size_t)15, __ATOMIC_RELAXED);

	if (at + n + 16 > ARENA)
		_exit(3);
	memcpy(arena + at, &n, sizeof(n));
	return arena + at + 16;
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t n, size_t m)
{
	void *p = malloc(n * m);

	memset(p, 0, n * m);
	return p;
}

void *realloc(void *p, size_t n)
{
	void *q = malloc(n);
	size_t old;

	if (p) {
		memcpy(&old, (unsigned char *)p - 16, sizeof(old));
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

static void *volatile kept[5];

NOINLINE void own_keep(void)
{
	for (int i = 0; i < 5; i++) {
		kept[i] = malloc(7000);
		memset(kept[i], 1, 7000);
	}
}

int main(int argc, char **argv)
{
	char c;
	int fd;

	own_keep();
	if (argc > 1) {
		fd = open(argv[1], O_RDONLY);
		if (fd < 0 || read(fd, &c, 1) != 1)
			return 3;
	}
	return 0;
}
