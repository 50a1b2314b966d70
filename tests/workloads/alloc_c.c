// SPDX-License-Identifier: MIT
/* Allocates exact, known sizes from named functions. tests/run.sh checks the recorder and
 * analyzer against the figures in the comments, which come from this source alone.
 *
 *   function         live at exit          allocated in all
 *   leak_malloc      10 x 1000 = 10000     10000
 *   churn_malloc     0                     100 x 64 = 6400
 *   make_calloc      4 x 1000 = 4000       4000
 *   realloc_chain    1 x 300               100+200+5000+300 = 5600
 *   realloc_fail     1 x 128               128 (the failed realloc allocates nothing)
 *   realloc_zero     0                     77
 *   aligned_allocs   512+256+1024 = 1792   1792
 *   thread_work      2 x 50 x 200 = 20000  20000 (threads "worker-1", "worker-2")
 *   plugin_alloc     3 x 4096 = 12288      12288 (in libplugin.so, dlopen'd)
 *   child_work       5 x 3000 = 15000      15000 (in a fork child)
 *
 *   inline_outer     2222 live through inline_helper, inlined into it (always_inline)
 *
 * Modes: no argument runs everything; "wait FIFO" allocates 5 x 777 in before_attach,
 * waits for a line on FIFO, frees them, then keeps 7 x 1111 from after_attach;
 * "bulk" keeps 20000 x 4096 from bulk_keep and churns 200000 x 100 in bulk_churn;
 * "rbulk" grows 20000 blocks of 100 to 4096 by realloc in realloc_keep (allocated in all
 * 20000 x (100 + 4096) = 83920000, live 20000 x 4096 = 81920000, in a static table) and
 * churns 100000 x (50, realloc'd to 5000, freed) in realloc_churn (allocated 505000000,
 * none live);
 * "waves" keeps 30000 x 256 live from wave_make and frees them in a scattered order, three
 * times (allocated 23040000, none live), then keeps 3000 x 512 = 1536000 from wave_last;
 * "siblings" allocates 64 x 65520 in sibling_make, blocks 64 KiB apart, and frees all but the
 * last (allocated 4193280, live 65520);
 * "loop SECONDS" allocates and frees in loop_work until SECONDS have passed;
 * "inject FIFO" is "wait FIFO" with a thread churning in idle_churn all along (an injected
 * recorder loads at an allocator call), then, after the line, thread_work in two threads,
 * child_work in a fork child and plugin_alloc in a dlopen'd module; it exits with status 7;
 * "seccomp FIFO" is "inject FIFO" under a seccomp filter that kills the process on
 * memfd_create;
 * "huge" asks malloc, calloc, realloc, aligned_alloc and posix_memalign for INT64_MAX bytes,
 * which all fail (CPython's tests ask for as much), says "huge: all failed", and keeps one
 * block of 1000 from huge_after. */
#include <dlfcn.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

/* Live blocks are parked here so the compiler cannot drop them. */
static void *volatile keep[4096];
static int nkeep;

static void park(void *p)
{
	keep[nkeep++ % 4096] = p;
}

NOINLINE void leak_malloc(void)
{
	for (int i = 0; i < 10; i++)
		park(malloc(1000));
}

NOINLINE void churn_malloc(void)
{
	for (int i = 0; i < 100; i++) {
		void *volatile p = malloc(64);

		free(p);
	}
}

NOINLINE void make_calloc(void)
{
	for (int i = 0; i < 4; i++)
		park(calloc(25, 40));
}

NOINLINE void realloc_chain(void)
{
	char *p = realloc(NULL, 100);

	p = realloc(p, 200);
	p = realloc(p, 5000);
	p = realloc(p, 300);
	park(p);
}

NOINLINE void realloc_fail(void)
{
	char *p = malloc(128);
	volatile size_t huge = SIZE_MAX / 2;
	char *q = realloc(p, huge);

	park(q ? q : p);
}

NOINLINE void realloc_zero(void)
{
	void *volatile p = malloc(77);
	void *volatile q = realloc(p, 0);

	park(q);
}

NOINLINE void aligned_allocs(void)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, 512) == 0)
		park(p);
	if (posix_memalign(&p, 3, 512) != EINVAL) /* bad alignment: fails, nothing recorded */
		abort();
	park(aligned_alloc(64, 256));
	park(memalign(128, 1024));
}

NOINLINE void *thread_work(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "worker-%d", (int)(intptr_t)arg);
	pthread_setname_np(pthread_self(), name);
	for (int i = 0; i < 50; i++)
		park(malloc(200));
	return NULL;
}

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;

static void *thread_main(void *arg)
{
	pthread_mutex_lock(&park_lock);
	thread_work(arg);
	pthread_mutex_unlock(&park_lock);
	return NULL;
}

NOINLINE void child_work(void)
{
	for (int i = 0; i < 5; i++)
		park(malloc(3000));
}

static void run_plugin(const char *self)
{
	char path[4096];
	const char *slash = strrchr(self, '/');
	void *h;
	void (*fn)(size_t);

	snprintf(path, sizeof(path), "%.*s/libplugin.so", slash ? (int)(slash - self) : 1, slash ? self : ".");
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(3);
	}
	/* Give the recorder time to see the new mapping before the plugin allocates. */
	usleep(300000);
	fn = (void (*)(size_t))dlsym(h, "plugin_alloc");
	for (int i = 0; i < 3; i++)
		fn(4096);
}

/* VmSize in KiB, from /proc/self/status. */
static long vm_size_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmSize:", 7))
			kib = atol(line + 7);
	if (f)
		fclose(f);
	return kib;
}

/* dlopen, allocate from, dlclose the plugin N times, each time at a new address (a page kept
 * mapped before each load moves the next one down), so that each load is a module no stack
 * walk saw before. Prints how much the address space grew from the 100th round to the last,
 * less the pages kept on purpose: what the profiler in the process kept of modules gone. */
static int dlcycle(const char *self, int n)
{
	char path[4096];
	const char *slash = strrchr(self, '/');
	long at100 = 0;

	snprintf(path, sizeof(path), "%.*s/libplugin.so", slash ? (int)(slash - self) : 1, slash ? self : ".");
	for (int i = 1; i <= n; i++) {
		void *h, *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (page == MAP_FAILED || !(h = dlopen(path, RTLD_NOW))) {
			fprintf(stderr, "round %d: %s\n", i, page == MAP_FAILED ? "mmap failed" : dlerror());
			return 3;
		}
		((void (*)(size_t))dlsym(h, "plugin_alloc"))(16);
		dlclose(h);
		if (i == 100)
			at100 = vm_size_kib();
	}
	printf("dlcycle grew %ld KiB\n", vm_size_kib() - at100 - (long)(n - 100) * 4);
	return 0;
}

static inline __attribute__((always_inline)) void *inline_helper(size_t n)
{
	return malloc(n);
}

NOINLINE void inline_outer(void)
{
	park(inline_helper(2222));
}

static void *volatile *bulk_blocks;

NOINLINE void bulk_keep(void)
{
	bulk_blocks = malloc(20000 * sizeof(void *));
	for (int i = 0; i < 20000; i++)
		bulk_blocks[i] = malloc(4096);
}

NOINLINE void bulk_churn(void)
{
	for (int i = 0; i < 200000; i++) {
		void *volatile p = malloc(100);

		free(p);
	}
}

static void *volatile rbulk_blocks[20000];

static void *volatile wave_blocks[30000];

NOINLINE void wave_make(void)
{
	for (int i = 0; i < 30000; i++)
		wave_blocks[i] = malloc(256);
}

NOINLINE void wave_last(void)
{
	for (int i = 0; i < 3000; i++)
		wave_blocks[i] = malloc(512);
}

/* Blocks 64 KiB apart (glibc's chunks of 65536, one after another from the top of the heap)
 * whose buckets differ only above bit 12, so that they share bits of the library's filter of
 * sampled blocks: freeing one must leave the bit its siblings still need. */
static void *volatile sibling_blocks[64];

NOINLINE void sibling_make(void)
{
	for (int i = 0; i < 64; i++)
		sibling_blocks[i] = malloc(65520);
}

static void siblings(void)
{
	sibling_make();
	for (int i = 0; i < 63; i++)
		free(sibling_blocks[i]);
}

/* Each round freed by a stride coprime to 30000: neighbours in memory leave at far times. */
static void waves(void)
{
	for (int round = 0; round < 3; round++) {
		wave_make();
		for (long i = 0; i < 30000; i++)
			free(wave_blocks[i * 7919 % 30000]);
	}
	wave_last();
}

NOINLINE void realloc_keep(void)
{
	for (int i = 0; i < 20000; i++)
		rbulk_blocks[i] = realloc(malloc(100), 4096);
}

NOINLINE void realloc_churn(void)
{
	for (int i = 0; i < 100000; i++) {
		void *volatile p = malloc(50);

		p = realloc(p, 5000);
		free(p);
	}
}

NOINLINE void loop_work(double secs)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 1000; i++) {
			void *volatile p = malloc(48);

			free(p);
		}
		usleep(1000);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < secs);
}

NOINLINE void before_attach(void)
{
	for (int i = 0; i < 5; i++)
		park(malloc(777));
}

NOINLINE void after_attach(void)
{
	for (int i = 0; i < 7; i++)
		park(malloc(1111));
}

/* "ready PID", a line from FIFO (the recorder is attached by then), the 5 blocks of
 * before_attach freed, after_attach. 4 if the FIFO fails. */
static int ready_then_wait(const char *fifo)
{
	char line[16];
	FILE *f;

	printf("ready %d\n", getpid());
	fflush(stdout);
	f = fopen(fifo, "r");
	if (!f || !fgets(line, sizeof(line), f))
		return 4;
	fclose(f);
	for (int i = 0; i < 5; i++)
		free(keep[i]);
	after_attach();
	return 0;
}

static int wait_mode(const char *fifo)
{
	before_attach();
	return ready_then_wait(fifo);
}

static volatile int churn_stop;

NOINLINE void *idle_churn(void *arg)
{
	(void)arg;
	while (!churn_stop) {
		for (int i = 0; i < 100; i++) {
			void *volatile p = malloc(32);

			free(p);
		}
		usleep(500);
	}
	return NULL;
}

static void deny_memfd(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		exit(5);
	}
}

/* thread_work in two threads, child_work in a fork child, plugin_alloc from a dlopen'd module. */
static void threads_child_plugin(const char *self)
{
	pthread_t t[2];
	pid_t pid;
	int st;

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pid = fork();
	if (pid == 0) {
		child_work();
		_exit(0);
	}
	waitpid(pid, &st, 0);
	run_plugin(self);
}

static int inject_mode(const char *self, const char *fifo)
{
	pthread_t churn;

	before_attach();
	if (pthread_create(&churn, NULL, idle_churn, NULL) || ready_then_wait(fifo))
		return 4;
	threads_child_plugin(self);
	churn_stop = 1;
	pthread_join(churn, NULL);
	return 7;
}

static void *volatile sink;

NOINLINE void *huge_after(void)
{
	return malloc(1000);
}

static volatile size_t huge_size = (size_t)INT64_MAX; /* unknown to the compiler */

/* 0 when every huge request failed, as it must. */
static int huge(void)
{
	const size_t n = huge_size;
	void *keep = malloc(16), *p = NULL, *r;
	int bad = 0;

	bad |= (sink = malloc(n)) != NULL;
	bad |= (sink = calloc(1, n)) != NULL;
	bad |= (sink = calloc(n / 2, 2)) != NULL;
	if ((r = realloc(keep, n))) { /* failed, keep stays the caller's */
		keep = r;
		bad = 1;
	}
	bad |= (sink = aligned_alloc(64, n & ~(size_t)63)) != NULL;
	bad |= posix_memalign(&p, 64, n) == 0;
	free(keep);
	sink = huge_after();
	printf("huge: %s\n", bad ? "one succeeded" : "all failed");
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "wait"))
		return wait_mode(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "inject"))
		return inject_mode(argv[0], argv[2]);
	if (argc == 3 && !strcmp(argv[1], "seccomp")) {
		deny_memfd();
		return inject_mode(argv[0], argv[2]);
	}
	if (argc == 2 && !strcmp(argv[1], "bulk")) {
		bulk_keep();
		bulk_churn();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "huge"))
		return huge();
	if (argc == 2 && !strcmp(argv[1], "waves")) {
		waves();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "siblings")) {
		siblings();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "rbulk")) {
		realloc_keep();
		realloc_churn();
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "dlcycle") && atoi(argv[2]) > 100)
		return dlcycle(argv[0], atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "loop")) {
		loop_work(atof(argv[2]));
		return 0;
	}
	leak_malloc();
	churn_malloc();
	make_calloc();
	realloc_chain();
	realloc_fail();
	realloc_zero();
	aligned_allocs();
	inline_outer();
	threads_child_plugin(argv[0]);
	return 0;
}
