// SPDX-License-Identifier: MIT
/* Every way a sampled block comes to libheapsnap.so's pool and leaves it (sampling at 256 KiB
 * or more, libheapsnap/pool.c), each checked here for what the C library promises:
 * bytes kept across realloc, calloc's zeros, alignments, malloc_usable_size, frees from
 * another thread and from a forked child. Exits 1, naming the check, on any failure.
 *
 * Blocks of 4 MiB and more are sampled at 256 KiB with a probability of 1 - e^-16, so their
 * figures are exact (weighted by under 1 + 2e-7):
 *   pool_malloc     8 x malloc(4 MiB), 4 freed:            alloc 33554432, inuse 16777216
 *   pool_calloc     4 x calloc(1024, 4096), kept:           alloc 16777216, inuse 16777216
 *   pool_realloc    realloc(NULL, 4 MiB) -> 8 MiB -> 5 MiB, kept; another 4 MiB -> 0; and
 *                   reallocarray(NULL, 1024, 4096) -> (1024, 0), which frees it:
 *                                                           alloc 4194304*3 + 8388608 + 5242880
 *                                                           = 26214400, inuse 5242880
 *   pool_aligned    memalign(64), aligned_alloc(4096), posix_memalign(2048), valloc, 4 MiB
 *                   each, kept:                             alloc 16777216, inuse 16777216
 *   pool_thread     a thread's 8 x malloc(4 MiB), freed by main: alloc 33554432, inuse 0
 *   pool_forked     4 x malloc(4 MiB) before a fork; the child frees them and exits, the
 *                   parent keeps them:                      alloc 16777216, inuse 16777216
 *   pool_usable     malloc(4 MiB + 100), every usable byte written, realloc to 8 MiB keeps
 *                   them all, freed:                        alloc 12583012, inuse 0
 *   pool_sparse     3 x calloc(1, 256 MiB), one after another freed (the last two take the
 *                   first's pages back): each must cost no memory until written, and read
 *                   zero where the one before wrote:        alloc 805306368, inuse 0
 *   pool_stopper    posix_memalign(64 KiB, 4 MiB): an alignment past the pool's, which stops
 *                   it for the session (sampler.pool_stopped 1 at 256 KiB): alloc 4194304,
 *                   inuse 4194304
 *   pool_after      the table's from then on: realloc of a block of pool_malloc's (still the
 *                   pool's) to 6 MiB, another of them freed; 4 x malloc(4 MiB), 2 freed:
 *                   alloc 6291456 + 16777216 = 23068672, inuse 6291456 + 8388608 = 14680064,
 *                   and pool_malloc's inuse 8388608 in the end
 * And in children, which exit 0 when right: pool_locked, under mlockall (where the kernel
 * refuses to drop pages), calloc after free, 20 times, must read zeros; pool_double_free
 * frees a block twice, which glibc must stop at once, by a signal, as it would its own.
 * It prints what glibc holds in mmapped chunks while pool_malloc's 8 blocks are live: at least
 * 33554432 when glibc placed them, 0 when the pool did.
 * And pool_small: 200,000 blocks of up to 12 KiB, each written, reallocated up or down,
 * checked and freed (some sampled, most not; some calloc'd into pages a freed block dirtied):
 * inuse 0. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024u * 1024u)

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "pool_paths: %s\n", what);
		exit(1);
	}
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 512)
		p[i] = (unsigned char)(seed + i / 512);
	p[n - 1] = (unsigned char)seed;
}

static int filled(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 512)
		if (p[i] != (unsigned char)(seed + i / 512))
			return 0;
	return 1;
}

static void *kept[64];
static int nkept;

__attribute__((noinline)) static void pool_malloc(void)
{
	void *b[8];

	for (int i = 0; i < 8; i++) {
		b[i] = malloc(4 * MIB);
		check(b[i] != NULL, "malloc(4 MiB)");
		check(malloc_usable_size(b[i]) >= 4 * MIB, "malloc_usable_size under the size asked");
		fill(b[i], 4 * MIB, (unsigned)i);
	}
	for (int i = 0; i < 8; i++)
		check(filled(b[i], 4 * MIB, (unsigned)i), "a block's bytes changed");
	/* What glibc holds in mmapped chunks: these blocks, unless the pool holds them. */
	printf("glibc mmapped %zu\n", mallinfo2().hblkhd);
	for (int i = 0; i < 4; i++)
		free(b[i]);
	for (int i = 4; i < 8; i++)
		kept[nkept++] = b[i];
}

__attribute__((noinline)) static void pool_calloc(void)
{
	for (int i = 0; i < 4; i++) {
		unsigned char *p = calloc(1024, 4096);

		check(p != NULL, "calloc");
		for (size_t j = 0; j < 4 * MIB; j += 64)
			check(p[j] == 0, "calloc's bytes not zero");
		kept[nkept++] = p;
	}
}

__attribute__((noinline)) static void pool_realloc(void)
{
	unsigned char *p = realloc(NULL, 4 * MIB), *q;

	check(p != NULL, "realloc(NULL)");
	fill(p, 4 * MIB, 7);
	q = realloc(p, 8 * MIB);
	check(q != NULL && filled(q, 4 * MIB, 7), "realloc up lost bytes");
	fill(q, 8 * MIB, 9);
	p = realloc(q, 5 * MIB);
	check(p != NULL && filled(p, 5 * MIB - 1, 9), "realloc down lost bytes");
	kept[nkept++] = p;
	p = realloc(NULL, 4 * MIB);
	check(p != NULL, "realloc(NULL) again");
	check(realloc(p, 0) == NULL, "realloc(p, 0) returned a block"); /* glibc frees it */
	p = reallocarray(NULL, 1024, 4096);
	check(p != NULL, "reallocarray(NULL)");
	check(reallocarray(p, 1024, 0) == NULL, "reallocarray(p, n, 0) returned a block"); /* realloc(p, 0) */
}

__attribute__((noinline)) static void pool_aligned(void)
{
	void *p;

	p = memalign(64, 4 * MIB);
	check(p && !((uintptr_t)p & 63), "memalign(64)");
	kept[nkept++] = p;
	p = aligned_alloc(4096, 4 * MIB);
	check(p && !((uintptr_t)p & 4095), "aligned_alloc(4096)");
	kept[nkept++] = p;
	check(posix_memalign(&p, 2048, 4 * MIB) == 0 && !((uintptr_t)p & 2047), "posix_memalign(2048)");
	kept[nkept++] = p;
	p = valloc(4 * MIB);
	check(p && !((uintptr_t)p & 4095), "valloc");
	kept[nkept++] = p;
	for (int i = nkept - 4; i < nkept; i++) {
		check(malloc_usable_size(kept[i]) >= 4 * MIB, "an aligned block's usable size");
		fill(kept[i], 4 * MIB, (unsigned)i);
	}
}

static void *thread_blocks[8];

__attribute__((noinline)) static void *pool_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 8; i++) {
		thread_blocks[i] = malloc(4 * MIB);
		check(thread_blocks[i] != NULL, "a thread's malloc");
		fill(thread_blocks[i], 4 * MIB, 3);
	}
	return NULL;
}

__attribute__((noinline)) static void pool_forked(void)
{
	void *b[4];
	pid_t pid;
	int st;

	for (int i = 0; i < 4; i++) {
		b[i] = malloc(4 * MIB);
		check(b[i] != NULL, "malloc before fork");
		fill(b[i], 4 * MIB, 5);
	}
	pid = fork();
	check(pid >= 0, "fork");
	if (pid == 0) {
		for (int i = 0; i < 4; i++) {
			check(filled(b[i], 4 * MIB, 5), "the child's copy changed");
			free(b[i]);
		}
		_exit(0);
	}
	check(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed");
	for (int i = 0; i < 4; i++) {
		check(filled(b[i], 4 * MIB, 5), "the parent's block changed after the child freed its copy");
		kept[nkept++] = b[i];
	}
}

__attribute__((noinline)) static void pool_small(void)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 200000; i++) {
		size_t n, m;
		unsigned char *p;

		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		n = 1 + s % 12288;
		m = 1 + (s >> 20) % 12288;
		if (i & 1) {
			p = calloc(1, n);
			check(p != NULL, "small calloc");
			for (size_t j = 0; j < n; j++)
				check(p[j] == 0, "a small calloc's bytes not zero");
		} else {
			p = malloc(n);
			check(p != NULL, "small malloc");
		}
		memset(p, (int)(i & 0xff), n);
		p = realloc(p, m);
		check(p != NULL, "small realloc");
		for (size_t j = 0; j < (n < m ? n : m); j += 97)
			check(p[j] == (unsigned char)(i & 0xff), "a small realloc lost bytes");
		check(malloc_usable_size(p) >= m, "a small block's usable size");
		free(p);
	}
}

__attribute__((noinline)) static void pool_usable(void)
{
	unsigned char *p = malloc(4 * MIB + 100), *q;
	size_t u;

	check(p != NULL, "malloc(4 MiB + 100)");
	u = malloc_usable_size(p);
	check(u >= 4 * MIB + 100, "malloc_usable_size under the size asked");
	fill(p, u, 11);
	q = realloc(p, 8 * MIB);
	check(q != NULL && filled(q, u, 11), "realloc lost bytes past the size asked that malloc_usable_size gave");
	free(q);
}

/* The process's resident bytes, from /proc/self/statm. */
static size_t resident(void)
{
	unsigned long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	check(f && fscanf(f, "%lu %lu", &size, &res) == 2, "reading /proc/self/statm");
	fclose(f);
	return res * (size_t)sysconf(_SC_PAGESIZE);
}

__attribute__((noinline)) static void pool_sparse(void)
{
	const size_t n = 256 * MIB;
	unsigned char *p = NULL;

	for (int i = 0; i < 3; i++) {
		size_t before = resident();
		unsigned char *q = calloc(1, n);

		check(q != NULL, "calloc(1, 256 MiB)");
		check(resident() - before < 16 * MIB, "calloc(1, 256 MiB) made its pages resident");
		for (size_t j = 0; j < n; j += 8 * MIB)
			check(q[j] == 0 && q[j + 4096 + 8] == 0, "a large calloc's bytes not zero");
		memset(q + 4096, 0xa5, 64 * 1024); /* what the next calloc must not see */
		free(p);
		p = q;
	}
	free(p);
}

__attribute__((noinline)) static void pool_stopper(void)
{
	void *p = NULL;

	check(posix_memalign(&p, 65536, 4 * MIB) == 0 && !((uintptr_t)p & 65535), "posix_memalign(64 KiB)");
	fill(p, 4 * MIB, 13);
	kept[nkept++] = p;
}

/* kept[0] and kept[1]: pool_malloc's. */
__attribute__((noinline)) static void pool_after(void)
{
	unsigned char *p = realloc(kept[0], 6 * MIB), *b[4];

	check(p != NULL && filled(p, 4 * MIB, 4), "realloc after the pool stopped lost bytes");
	kept[0] = p;
	check(filled(kept[1], 4 * MIB, 5), "a block of the pool's changed after it stopped");
	free(kept[1]);
	kept[1] = NULL;
	for (int i = 0; i < 4; i++) {
		b[i] = malloc(4 * MIB);
		check(b[i] != NULL, "malloc after the pool stopped");
		fill(b[i], 4 * MIB, 17);
	}
	for (int i = 0; i < 2; i++)
		free(b[i]);
	kept[nkept++] = b[2];
	kept[nkept++] = b[3];
}

/* Runs F in a child; returns its wait status. */
static int in_child(void (*f)(void))
{
	pid_t pid = fork();
	int st;

	check(pid >= 0, "fork");
	if (pid == 0) {
		f();
		_exit(0);
	}
	check(waitpid(pid, &st, 0) == pid, "waitpid");
	return st;
}

static void locked(void)
{
	check(mlockall(MCL_CURRENT | MCL_FUTURE) == 0, "mlockall");
	for (int i = 0; i < 20; i++) {
		unsigned char *p = malloc(MIB), *q;

		check(p != NULL, "malloc under mlockall");
		memset(p, 0xab, MIB);
		free(p);
		q = calloc(1, MIB);
		check(q != NULL, "calloc under mlockall");
		for (size_t j = 0; j < MIB; j += 256)
			check(q[j] == 0, "calloc under mlockall returned bytes of a freed block");
		free(q);
	}
}

static void double_free(void)
{
	void *volatile p = malloc(5000);

	check(p != NULL, "malloc(5000)");
	free(p);
	free(p); /* glibc stops here */
	for (int i = 0; i < 100; i++)
		free(malloc(5000));
}

int main(void)
{
	pthread_t th;

	pool_malloc();
	pool_calloc();
	pool_realloc();
	pool_aligned();
	check(pthread_create(&th, NULL, pool_thread, NULL) == 0 && pthread_join(th, NULL) == 0, "the thread");
	for (int i = 0; i < 8; i++) {
		check(filled(thread_blocks[i], 4 * MIB, 3), "a thread's block changed");
		free(thread_blocks[i]);
	}
	pool_forked();
	pool_small();
	pool_usable();
	pool_sparse();
	pool_stopper();
	pool_after();
	check(in_child(locked) == 0, "pool_locked: a child's callocs under mlockall");
	check(WIFSIGNALED(in_child(double_free)), "pool_double_free: a block freed twice went unnoticed");
	printf("pool_paths: ok, %d blocks kept\n", nkept);
	return 0;
}
