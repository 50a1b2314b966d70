// SPDX-License-Identifier: MIT
/* The calling thread's stack, found without a lock: the bounds every stack walk of the library
 * stays within (a junk frame pointer ends a walk rather than faults).
 *
 * pthread_getattr_np cannot be asked. glibc holds the thread's own lock while it reallocs its
 * CPU set there (and, for the main thread, while it reads /proc/self/maps through stdio), so a
 * thread whose first allocator call comes from inside it (Rust's thread start, for its stack
 * guard) would wait for ever on a lock it holds. What the kernel says of the mapping that holds
 * the stack pointer takes no lock of libc's: PROCMAP_QUERY (Linux 6.11) in three system calls,
 * else /proc/self/maps read into a buffer on the stack, each call through syscall(2), which
 * is no cancellation point. A process that may
 * not open /proc (a sandbox) gets the part of its stack known from the thread itself: from the
 * stack pointer up to the thread's descriptor, which glibc places above its stack, or up to
 * __libc_stack_end for the main thread. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libheapsnap.h"

/* Linux's uapi <linux/fs.h> since 6.11; Debian 12's headers predate it. */
struct hs_procmap_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define HS_PROCMAP_QUERY _IOWR('f', 17, struct hs_procmap_query)
#define HS_PROCMAP_COVERING_OR_NEXT 0x10

/* The main thread's stack grows down to RLIMIT_STACK below its top; an unlimited one is taken
 * as glibc takes it for a thread's default, and none is taken past 1 GiB. */
#define MAIN_STACK_UNLIMITED (8ull << 20)
#define MAIN_STACK_MAX (1ull << 30)
/* Mappings below the main stack's looked at, at most, to find the one it may grow down to. */
#define MAX_BELOW 16

extern void *__libc_stack_end;

struct vma {
	uint64_t start, end;
};

/* The mapping that holds ADDR or, with NEXT, the first above it; false if none or the query
 * is not to be had (errno ENOTTY before 6.11). */
static bool query(int fd, uint64_t addr, bool next, struct vma *v)
{
	struct hs_procmap_query q;

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_addr = addr;
	q.query_flags = next ? HS_PROCMAP_COVERING_OR_NEXT : 0;
	if (ioctl(fd, HS_PROCMAP_QUERY, &q))
		return false;
	v->start = q.vma_start;
	v->end = q.vma_end;
	return true;
}

static bool hex_field(const char **p, const char *end, char stop, uint64_t *out)
{
	uint64_t v = 0;
	const char *s = *p;

	if (s == end || *s == stop)
		return false;
	for (; s < end && *s != stop; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;

		if (d < 0 || v >> 60)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (s == end)
		return false;
	*out = v;
	*p = s + 1;
	return true;
}

/* One line of /proc/self/maps (its range is all that is read): 1 if it holds SP, -1 if it is
 * past SP, 0 to read on. */
static int maps_line(const char *p, const char *end, uint64_t sp, struct vma *v, uint64_t *prev_end)
{
	uint64_t s, e;

	if (!hex_field(&p, end, '-', &s) || !hex_field(&p, end, ' ', &e))
		return 0;
	if (sp >= s && sp < e) {
		v->start = s;
		v->end = e;
		return 1;
	}
	if (s > sp)
		return -1;
	*prev_end = e;
	return 0;
}

/* /proc/self/maps read line by line for the mapping holding SP and the end of the one below
 * it (0 if none). Lines are sorted by address; a line longer than the buffer is read for its
 * range and the rest of it skipped. */
static bool scan_maps(int fd, uint64_t sp, struct vma *v, uint64_t *below_end)
{
	char buf[1024];
	size_t have = 0;
	bool skipping = false;
	int r = 0;

	*below_end = 0;
	for (;;) {
		ssize_t got = hs_read(fd, buf + have, sizeof(buf) - have);
		char *line = buf, *nl;

		if (got <= 0)
			return false;
		have += (size_t)got;
		while (r == 0 && (nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			if (!skipping)
				r = maps_line(line, nl, sp, v, below_end);
			skipping = false;
			line = nl + 1;
		}
		if (r)
			return r > 0;
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf)) {
			if (!skipping && (r = maps_line(buf, buf + have, sp, v, below_end)))
				return r > 0;
			have = 0;
			skipping = true;
		}
	}
}

/* How far below its mapping's top the main stack may grow: RLIMIT_STACK, down to the
 * mapping below it at most. */
static uint64_t main_stack_lo(int fd, const struct vma *st, uint64_t below_end, bool use_query)
{
	struct rlimit rl;
	uint64_t lim = MAIN_STACK_UNLIMITED, lo;

	if (!getrlimit(RLIMIT_STACK, &rl) && rl.rlim_cur != RLIM_INFINITY)
		lim = rl.rlim_cur;
	if (lim > MAIN_STACK_MAX)
		lim = MAIN_STACK_MAX;
	lo = st->end > lim ? st->end - lim : 0;
	if (lo > st->start)
		return st->start;
	if (use_query) {
		struct vma b;
		uint64_t at = lo;

		/* The mappings between LO and the stack, the last of which it may grow down to. */
		for (int i = 0; i < MAX_BELOW && query(fd, at, true, &b) && b.start < st->start; i++) {
			below_end = b.end;
			at = b.end;
		}
	}
	return below_end > lo ? below_end : lo;
}

/* From the stack pointer up to what the thread itself says is above its stack: no system call. */
static void bounds_from_thread(struct tstate *t, uint64_t sp, bool main_thread)
{
	uint64_t top = main_thread ? (uint64_t)(uintptr_t)__libc_stack_end : (uint64_t)(uintptr_t)pthread_self();

	if (top <= sp || top - sp > MAIN_STACK_MAX)
		return;
	t->stack_lo = sp & ~4095ull;
	t->stack_hi = top;
}

void thread_stack_bounds(struct tstate *t)
{
	uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0), below_end = 0;
	bool main_thread = t->tid == (uint32_t)syscall(SYS_getpid), use_query = true, found;
	struct vma v;
	int fd;

	t->stack_lo = t->stack_hi = 0;
	fd = hs_open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		bounds_from_thread(t, sp, main_thread);
		return;
	}
	found = query(fd, sp, false, &v);
	if (!found) {
		use_query = false;
		found = scan_maps(fd, sp, &v, &below_end);
	}
	if (found) {
		t->stack_hi = v.end;
		t->stack_lo = main_thread ? main_stack_lo(fd, &v, below_end, use_query) : v.start;
	} else {
		bounds_from_thread(t, sp, main_thread);
	}
	hs_close(fd);
}
