// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* heapsnap: uprobes on allocator entry points. Outermost calls only are recorded, so
 * operator new -> malloc or __rust_alloc -> malloc count once, at the outer function. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "heapsnap.h"
#include "heapsnap.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool filter_pids = true;
const volatile bool follow_forks = true;
const volatile __u64 sample_rate = 0; /* 0: every allocation */
const volatile __u32 stack_depth = HS_MAX_STACK;
const volatile __u32 stack_mode = 1; /* 0 none (callsite only), 1 fp, 2 dwarf, 3 tables */
const volatile __u32 dwarf_bytes = 8192;
const volatile __u64 wakeup_bytes = 1 << 20;
const volatile __u32 self_tgid = 0; /* -a: never record the recorder itself */
/* The recorder's PID namespace (its /proc/self/ns/pid), when it is not the initial one: pids
 * go to user space as that namespace numbers them, the numbers its getpid(), fork() and /proc
 * use. A task with no pid there (outside the namespace) is not seen at all. */
const volatile __u64 ns_dev = 0;
const volatile __u64 ns_ino = 0; /* 0: the initial namespace, whose pids need no translation */
/* Session probes: the entry half's return value decides whether the return half runs. */
extern bool bpf_session_is_return(void) __ksym __weak;
#define RUN_RETURN 0
#define SKIP_RETURN 1

/* Benchmark floor: every probe fires and returns at once, measuring the bare trap cost. */
const volatile bool noop = false;

struct thread_state {
	__u64 outer_sp; /* sp at the outermost allocator entry */
	__u64 outer_ret; /* [sp] there: the caller's return address */
	__u64 size;
	__u64 aux;      /* posix_memalign: memptr */
	__u64 stack;
	__s64 countdown; /* bytes until the next sample */
	__u64 free_ptr;  /* pointer a free wrapper is releasing */
	__u64 free_sp;
	__u64 stack_end; /* --stack dwarf: end of this thread's stack mapping */
	__u64 dwarf_seq;
	__u64 last_stack; /* the hash of the stack this thread last sent or found sent */
	struct hs_live_val old; /* realloc: the old block, restored if realloc fails */
	__u32 depth;
	__u32 kind;
	__u8 sampled;
	__u8 old_valid;
	__u8 free_depth;
	__u8 is_realloc;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} tracked SEC(".maps");

/* Per-thread state hangs off the task itself: no hash lookup per call, and it goes away
 * with the thread. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 20); /* --max-live */
	__type(key, struct hs_live_key);
	__type(value, struct hs_live_val);
} live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 16); /* --stack-cache */
	__type(key, __u64);
	__type(value, __u8);
} stacks_seen SEC(".maps");

/* A slot of slack behind the frames, and the table walk's state: kept in map memory, which
 * the verifier does not follow value by value, its states of each step converge (on the
 * stack, a frame count known exactly at each step made a million of them). */
#define UNW_WIN 1024
struct stack_scratch_val {
	struct hs_stack_event e;
	__u64 slack;
	__u64 pc, sp, fp, h;
	__u32 nr;
	__u8 fp_ok;
	__u8 miss; /* a return address in no mapping known: the stack is copied instead */
	/* The stack read a window at a time: most of a read's cost is fixed (the fault-safe copy's
	 * set-up and checks), and a kilobyte holds several frames. */
	__u64 win_base;
	__u32 win_len;
	__u8 win[UNW_WIN + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_scratch_val);
} stack_scratch SEC(".maps");

/* One 32 KiB window per CPU: too large for a per-CPU map, so indexed by CPU number.
 * The loader sets max_entries to the number of CPUs. */
/* A page of slack behind the window: the verifier bounds a copy's offset and length each on
 * its own, so a last page at the 32 KiB limit must fit even as it sees it. */
struct dwarf_scratch_val {
	struct hs_dwarf_event e;
	__u8 slack[4096];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dwarf_scratch_val);
} dwarf_scratch SEC(".maps");

/* A mapped file's path, put together from its dentries and mounts: the components found
 * leaf first, then written root first, each at an offset the verifier sees below
 * HS_EXEC_PATH_MAX in a buffer twice that. */
#define PATH_DEPTH 32
struct path_scratch_val {
	struct dentry *parts[PATH_DEPTH];
	/* The walk's state, in map memory: read back, each is a value the verifier does not
	 * follow exactly, so every pass through a loop's body ends in one state. */
	__u32 n, off;
	char buf[2 * HS_EXEC_PATH_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct path_scratch_val);
} path_scratch SEC(".maps");

/* Exponential sampling thresholds with mean sample_rate, drawn by a random index. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HS_NR_THRESHOLDS);
	__type(key, __u32);
	__type(value, __u64);
} thresholds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HS_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* --stack auto: the rows of every module's unwind table (recorder/bpf/bpf_unwind_tables.c writes them
 * through a mapping of this array), and each tracked process's executable mappings. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set by the loader */
	__type(key, __u32);
	__type(value, struct hs_unw_row);
} unw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct hs_unw_proc);
} unw_procs SEC(".maps");

/* Rules by (process, return address): a frame seen before costs one lookup, not a search of
 * the mappings and of the module's rows. Per CPU, so that no other CPU writes a slot as it
 * is read. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1 << HS_UNW_CACHE_BITS);
	__type(key, __u32);
	__type(value, struct hs_unw_cache_ent);
} unw_cache SEC(".maps");

/* Bumped when a tracked process may have changed its executable mappings. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} maps_gen SEC(".maps");

/* One ring buffer per CPU: threads allocating on different CPUs never contend for one
 * ring's lock. User space merges the rings by timestamp. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* the number of possible CPUs, set by the loader */
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_RINGBUF);
		__uint(max_entries, 1 << 20); /* --ringbuf-size over the CPUs, set by the loader */
	});
} rings SEC(".maps");

static __always_inline void *this_ring(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&rings, &cpu);
}

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &which);

	if (v)
		*v += 1;
}

/* The deepest level a PID namespace nests at (MAX_PID_NS_LEVEL): bounds the search below. */
#define NS_MAX_LEVEL 32

/* PID's number in the recorder's namespace, 0 if it has none there (the task is outside it).
 * The namespace is known by its inode; its level is found once, from the first task met in it,
 * and is the same for every task after. */
static __u32 ns_level_seen = ~0u;

static __always_inline __u32 ns_upid_nr(struct pid *pid, __u32 l)
{
	struct upid up = {};
	void *at = (void *)pid + bpf_core_field_offset(struct pid, numbers) + (__u64)l * sizeof(struct upid);

	if (bpf_probe_read_kernel(&up, sizeof(up), at) || !up.ns || BPF_CORE_READ(up.ns, ns.inum) != ns_ino)
		return 0;
	return (__u32)up.nr;
}

static __always_inline __u32 ns_pid_nr(struct pid *pid)
{
	__u32 level, l = ns_level_seen, nr;

	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	if (l <= level)
		return ns_upid_nr(pid, l);
	if (l != ~0u)
		return 0; /* a task above the namespace: outside it */
	for (l = 0; l < NS_MAX_LEVEL && l <= level; l++) {
		nr = ns_upid_nr(pid, l);
		if (nr) {
			ns_level_seen = l;
			return nr;
		}
	}
	return 0;
}

/* TASK's (tgid << 32 | pid) as the recorder's namespace numbers them: 0 if outside it. */
static __always_inline __u64 task_ns_id(struct task_struct *t)
{
	__u32 pid, tgid;

	if (!ns_ino)
		return (__u64)BPF_CORE_READ(t, tgid) << 32 | BPF_CORE_READ(t, pid);
	pid = ns_pid_nr(BPF_CORE_READ(t, thread_pid));
	tgid = ns_pid_nr(BPF_CORE_READ(t, group_leader, thread_pid));
	return pid && tgid ? (__u64)tgid << 32 | pid : 0;
}

/* bpf_get_current_pid_tgid() in the recorder's namespace: 0 for a task outside it. */
static __always_inline __u64 cur_id(void)
{
	struct bpf_pidns_info ns;

	if (!ns_ino)
		return bpf_get_current_pid_tgid();
	/* The helper answers for a task of the namespace itself; one in a namespace nested in it
	 * (a container in the container) is found by its pid's numbers. */
	if (!bpf_get_ns_current_pid_tgid(ns_dev, ns_ino, &ns, sizeof(ns)))
		return (__u64)ns.tgid << 32 | ns.pid;
	return task_ns_id(bpf_get_current_task_btf());
}

static __always_inline bool is_tracked(__u32 tgid)
{
	if (!tgid)
		return false; /* outside the recorder's namespace */
	if (!filter_pids)
		return tgid != self_tgid;
	return bpf_map_lookup_elem(&tracked, &tgid);
}

/* Wakes the consumer as the data waiting in the ring (AVAIL, this record of SIZE included)
 * crosses a quarter of it; the consumer also drains on a timer. Past half, the consumer is
 * behind and every record wakes it: the interrupts slow the producer down, which is what
 * keeps an overloaded recorder from dropping events. */
static __always_inline __u64 rb_flags(__u64 avail, __u64 size)
{
	if (avail >= 2 * wakeup_bytes || (avail >= wakeup_bytes && avail - size < wakeup_bytes))
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* SIZE bytes in this CPU's ring, or NULL when it is full. *RB keeps the ring for
 * ring_submit(): a program does not migrate while it runs. */
static __always_inline void *ring_reserve(__u64 size, void **rb)
{
	*rb = this_ring();
	return *rb ? bpf_ringbuf_reserve(*rb, size, 0) : NULL;
}

static __always_inline void ring_submit(void *e, void *rb, __u64 size)
{
	bpf_ringbuf_submit(e, rb_flags(bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA), size));
}

/* Copies SIZE bytes from P into this CPU's ring. Returns 0 on success. */
static __always_inline long ring_output(void *p, __u64 size)
{
	void *rb = this_ring();

	return rb ? bpf_ringbuf_output(rb, p, size, rb_flags(bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) + size, size)) : -1;
}

static __always_inline __s64 draw_threshold(void)
{
	__u32 idx = bpf_get_prandom_u32() & (HS_NR_THRESHOLDS - 1);
	__u64 *t = bpf_map_lookup_elem(&thresholds, &idx);

	return t ? (__s64)*t : (__s64)sample_rate;
}

static __always_inline void fill_hdr(struct hs_event_hdr *h, __u8 type, __u8 kind, __u64 id)
{
	h->type = type;
	h->kind = kind;
	h->nr = 0;
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->pad = 0;
	h->ts = bpf_ktime_get_ns();
}

/* A thread's name, when first seen and whenever it is renamed: threads often outlive
 * their allocations by less than user space takes to read /proc. */
static __always_inline void emit_comm(__u32 tgid, __u32 tid, const char *comm, bool kernel_ptr)
{
	void *rb;
	struct hs_comm_event *e = ring_reserve(sizeof(*e), &rb);

	if (!e) {
		count(HS_CNT_RINGBUF_FULL);
		return;
	}
	fill_hdr(&e->h, HS_EV_COMM, 0, (__u64)tgid << 32 | tid);
	if (kernel_ptr)
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), comm);
	else
		bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

static __always_inline struct thread_state *find_state(void)
{
	return bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, 0);
}

/* Whether the calling process is traced, and its thread's state (NULL if it could not be
 * made). A thread has state only once its process is tracked, and a process stays tracked,
 * so a thread with state needs no lookup in the tracked set. */
static __always_inline bool tracked_state(__u64 id, struct thread_state **out)
{
	struct thread_state *st = find_state();
	struct thread_state init = {};

	*out = st;
	if (st)
		return true;
	if (!is_tracked(id >> 32))
		return false;
	init.countdown = sample_rate ? draw_threshold() : 0;
	st = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), &init, BPF_LOCAL_STORAGE_GET_F_CREATE);
	*out = st;
	if (!st) {
		count(HS_CNT_THREAD_FULL);
		return true;
	}
	emit_comm((__u32)(id >> 32), (__u32)id, NULL, false);
	return true;
}

/* The user stack of an allocation. Frame 0 is the caller's return address, read from [sp]:
 * at function entry a frame-pointer walk would skip the function that called us. The rest
 * is our own walk of the rbp chain. It stops at the first frame pointer that cannot be one
 * (below sp, unaligned, not increasing, too far up), so it never takes a fault on the junk
 * rbp of code built without frame pointers: the kernel's walk pays a fault for that. */
static __always_inline __u64 send_stack(struct thread_state *st, __u64 id, struct hs_stack_event *s, __u64 h, __u32 nr);

static __always_inline __u64 capture_stack(struct pt_regs *ctx, __u64 id, struct thread_state *st, __u64 ret)
{
	__u32 zero = 0, nr = 1;
	struct stack_scratch_val *sv = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct hs_stack_event *s = sv ? &sv->e : NULL;
	__u64 h = HS_HASH_INIT, sp = PT_REGS_SP(ctx), fp = PT_REGS_FP(ctx);
	struct {
		__u64 next, ret;
	} frame;

	if (!s)
		return 0;
	s->ips[0] = ret;
	h = hs_hash_word(h, ret);
	if (stack_mode) {
		for (__u32 i = 1; i < HS_MAX_STACK; i++) {
			if (i >= stack_depth) {
				count(HS_CNT_STACK_TRUNCATED);
				break;
			}
			if (fp <= sp || (fp & 7) || fp - sp > (64ull << 20)) {
				/* A zeroed rbp is the outermost frame (_start clears it); anything
				 * else is a frame built without a frame pointer: callers lost. */
				if (fp)
					count(HS_CNT_STACK_ERROR);
				break;
			}
			if (bpf_probe_read_user(&frame, sizeof(frame), (void *)fp) || !frame.ret) {
				count(HS_CNT_STACK_ERROR);
				break;
			}
			s->ips[i] = frame.ret;
			h = hs_hash_word(h, frame.ret);
			nr = i + 1;
			if (frame.next <= fp)
				break;
			fp = frame.next;
		}
	}
	return send_stack(st, id, s, h, nr);
}

/* The stack's hash, sending the stack the first time the kernel side sees it lately. */
static __always_inline __u64 send_stack(struct thread_state *st, __u64 id, struct hs_stack_event *s, __u64 h, __u32 nr)
{
	if (!h)
		h = 1;
	/* Allocations come in runs from one place: the thread's last stack needs no lookup. */
	if (h == st->last_stack)
		return h;
	if (bpf_map_lookup_elem(&stacks_seen, &h)) {
		st->last_stack = h;
		return h;
	}
	__u8 one = 1;

	bpf_map_update_elem(&stacks_seen, &h, &one, BPF_ANY);
	fill_hdr(&s->h, HS_EV_STACK, 0, id);
	s->h.nr = nr;
	s->hash = h;
	nr &= 127;
	if (ring_output(s, sizeof(s->h) + sizeof(s->hash) + nr * sizeof(__u64))) {
		/* Forget it so the next allocation from this path sends it again. */
		bpf_map_delete_elem(&stacks_seen, &h);
		count(HS_CNT_RINGBUF_FULL);
	} else {
		count(HS_CNT_STACKS_NEW);
		st->last_stack = h;
	}
	return h;
}

static long vma_end_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	*(__u64 *)data = BPF_CORE_READ(vma, vm_end);
	return 0;
}

/* --stack dwarf: copy the registers and the stack in use above sp, for offline unwinding.
 * Each capture gets a key of its own; user space merges identical windows. */
static __always_inline __u64 capture_dwarf(struct pt_regs *ctx, __u64 id, struct thread_state *st)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct dwarf_scratch_val *v = bpf_map_lookup_elem(&dwarf_scratch, &cpu);
	struct hs_dwarf_event *e;
	__u64 sp = PT_REGS_SP(ctx), used, len;

	if (!v)
		return 0;
	e = &v->e;
	if (!st->stack_end || sp >= st->stack_end) {
		__u64 end = 0;

		bpf_find_vma(bpf_get_current_task_btf(), sp, vma_end_cb, &end, 0);
		st->stack_end = end;
	}
	used = st->stack_end > sp ? st->stack_end - sp : 0;
	len = used < dwarf_bytes ? used : dwarf_bytes;
	if (used > len)
		count(HS_CNT_DWARF_TRUNCATED);
	/* Page by page: a read fails whole if any page is absent, and the initial stack has an
	 * untouched random gap below argv. The frames are all below it; stop there. */
	__u64 off = 0;

	for (int i = 0; i < HS_MAX_DWARF_BYTES / 4096 + 1; i++) {
		__u64 addr = sp + off, chunk = 4096 - (addr & 4095);

		if (off >= len)
			break;
		if (chunk > len - off)
			chunk = len - off;
		off &= HS_MAX_DWARF_BYTES - 1;
		if (chunk > 4096 || !chunk)
			break;
		if (bpf_probe_read_user(e->data + off, chunk, (void *)addr))
			break;
		off += chunk;
	}
	len = off;
	fill_hdr(&e->h, HS_EV_DWARF, 0, id);
	e->key = (id << 32) ^ ++st->dwarf_seq ^ (1ull << 63);
	e->regs[0] = PT_REGS_IP(ctx);
	e->regs[1] = sp;
	e->regs[2] = PT_REGS_FP(ctx);
	e->regs[3] = ctx->bx;
	e->regs[4] = ctx->r12;
	e->regs[5] = ctx->r13;
	e->regs[6] = ctx->r14;
	e->regs[7] = ctx->r15;
	e->len = (__u32)len;
	e->used = (__u32)used;
	if (ring_output(e, offsetof(struct hs_dwarf_event, data) + len)) {
		count(HS_CNT_RINGBUF_FULL);
		return 0;
	}
	return e->key;
}

struct unw_walk {
	struct stack_scratch_val *v;
	__u32 tgid, gen;
};

#define UNW_MISS (-1)     /* in no mapping of the process as user space last sent them */
#define UNW_STOPPED (-2)  /* counted by reason */

/* The packed rule (hs_unw_pack) of the frame whose return address is RA in process TGID.
 * A global function: the verifier checks it once, on its own, whatever its callers' states
 * (inlined in each frame's step, its two searches had it follow a million paths). */
__noinline int unw_lookup(__u32 tgid, __u64 ra)
{
	struct hs_unw_proc *p = bpf_map_lookup_elem(&unw_procs, &tgid);
	struct hs_unw_map *m;
	struct hs_unw_row *r;
	__u32 base = 0, len, idx, packed;
	__u64 pc = ra - 1, rel;

	if (!p)
		return UNW_MISS;
	len = p->n;
	if (len > HS_UNW_MAX_MAPS)
		len = HS_UNW_MAX_MAPS;
	if (!len)
		return UNW_MISS;
	/* The last mapping that starts at or below pc, then the last row at or below its
	 * link-time address: halving, one two-way branch a step. */
	for (int k = 0; k < 9 && len > 1; k++) {
		__u32 half = len / 2;

		if (p->m[(base + half) & (HS_UNW_MAX_MAPS - 1)].start <= pc)
			base += half;
		len -= half;
	}
	m = &p->m[base & (HS_UNW_MAX_MAPS - 1)];
	if (pc < m->start || pc >= m->end)
		return UNW_MISS;
	if (!m->row_count) {
		count(HS_CNT_UNW_NO_TABLE);
		return UNW_STOPPED;
	}
	rel = pc - m->bias;
	base = m->row_start;
	len = m->row_count;
	for (int k = 0; k < 23 && len > 1; k++) {
		__u32 half = len / 2;

		idx = base + half;
		r = bpf_map_lookup_elem(&unw_rows, &idx);
		if (!r)
			break;
		if (r->pc <= rel)
			base = idx;
		len -= half;
	}
	r = bpf_map_lookup_elem(&unw_rows, &base);
	if (!r || r->pc > rel || r->cfa == HS_UNW_NONE) {
		count(HS_CNT_UNW_NO_ROW);
		return UNW_STOPPED;
	}
	if (r->cfa == HS_UNW_EXPR || !hs_unw_pack(r, &packed)) {
		count(HS_CNT_UNW_EXPRESSION);
		return UNW_STOPPED;
	}
	return (int)packed;
}

/* The word of user stack at ADDR (8-aligned), from the window, refilled from ADDR to at most
 * the end of its page: a read into the next page could meet the untouched gap below the
 * initial stack's argv, and fail whole. Nonzero if unreadable. */
static __always_inline int stack_word(struct stack_scratch_val *w, __u64 addr, __u64 *out)
{
	__u64 off = addr - w->win_base, n;

	if (addr < w->win_base || off + 8 > w->win_len) {
		n = 4096 - (addr & 4095);
		if (n > UNW_WIN)
			n = UNW_WIN;
		if (n < 8 || bpf_probe_read_user(w->win, n, (void *)addr)) {
			w->win_len = 0;
			return -1;
		}
		w->win_base = addr;
		w->win_len = (__u32)n;
		off = 0;
	}
	*out = *(__u64 *)(w->win + (off & (UNW_WIN - 1)));
	return 0;
}

/* One frame: from return address w->pc (already in the stack) to its caller's. 1 stops. */
static long unw_step(__u32 i, void *ctx)
{
	struct stack_scratch_val *w = ((struct unw_walk *)ctx)->v;
	__u32 tgid = ((struct unw_walk *)ctx)->tgid, gen = ((struct unw_walk *)ctx)->gen;
	struct hs_unw_row row;
	__u64 cfa, ra = w->pc;
	__u32 idx = w->nr, slot = (__u32)(ra ^ (ra >> HS_UNW_CACHE_BITS)) & ((1u << HS_UNW_CACHE_BITS) - 1);
	struct hs_unw_cache_ent *ce = bpf_map_lookup_elem(&unw_cache, &slot);
	int rule = UNW_MISS;

	if (idx >= stack_depth || idx >= HS_MAX_STACK) {
		count(HS_CNT_STACK_TRUNCATED);
		return 1;
	}
	if (ce && ce->ra == ra && ce->tgid == tgid && ce->gen == gen) {
		rule = (int)ce->rule;
		if (ce->ra != ra) /* rewritten as it was read, by a program that preempted us */
			rule = UNW_MISS;
	}
	if (rule < 0) {
		rule = unw_lookup(tgid, ra);
		if (rule == UNW_MISS)
			w->miss = 1;
		if (rule < 0)
			return 1;
		if (ce) {
			ce->ra = 0;
			ce->tgid = tgid;
			ce->gen = gen;
			ce->rule = (__u32)rule;
			ce->ra = ra;
		}
	}
	hs_unw_unpack((__u32)rule, &row);
	if (row.cfa == HS_UNW_END)
		return 1;
	if (row.cfa == HS_UNW_CFA_FP && !w->fp_ok) {
		count(HS_CNT_UNW_FP_LOST);
		return 1;
	}
	cfa = (row.cfa == HS_UNW_CFA_SP ? w->sp : w->fp) + (__s64)row.cfa_off;
	if (cfa <= w->sp || (cfa & 7) || cfa - w->sp > (64ull << 20)) {
		count(HS_CNT_UNW_BAD_FRAME);
		return 1;
	}
	ra = 0;
	if (row.fp == HS_UNW_FP_AT) {
		__u64 fp = 0;

		if (stack_word(w, cfa + (__s64)row.fp_off, &fp)) {
			count(HS_CNT_UNW_BAD_FRAME);
			return 1;
		}
		w->fp = fp;
		w->fp_ok = 1;
	} else if (row.fp == HS_UNW_FP_LOST) {
		w->fp_ok = 0;
	}
	if (stack_word(w, cfa - 8, &ra)) {
		count(HS_CNT_UNW_BAD_FRAME);
		return 1;
	}
	if (!ra)
		return 1;
	w->sp = cfa;
	w->pc = ra;
	w->e.ips[idx & 127] = ra;
	w->h = hs_hash_word(w->h, ra);
	w->nr++;
	return 0;
}

/* A process whose modules are not all known yet (just started, or a module mapped a moment
 * ago: user space loads tables as it hears of mappings): its stack is copied and unwound
 * offline like --stack dwarf, while the ring has room for copies; past half full, events
 * matter more than callers, and the frame-pointer walk stands in. Both are counted. */
static __always_inline __u64 unknown_modules(struct pt_regs *ctx, __u64 id, struct thread_state *st, __u64 ret)
{
	void *rb = this_ring();

	if (rb && bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) + dwarf_bytes + 4096 <= 2 * wakeup_bytes) {
		count(HS_CNT_UNW_DWARF_COPY);
		return capture_dwarf(ctx, id, st);
	}
	count(HS_CNT_UNW_FP_INSTEAD);
	return capture_stack(ctx, id, st, ret);
}

/* --stack auto: the frames walked with the unwind tables of the process's modules. */
static __always_inline __u64 capture_table(struct pt_regs *ctx, __u64 id, struct thread_state *st, __u64 ret)
{
	__u32 zero = 0, tgid = id >> 32;
	struct stack_scratch_val *v = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct unw_walk w = {.v = v, .tgid = tgid};
	struct hs_unw_proc *proc;

	if (!v)
		return 0;
	proc = bpf_map_lookup_elem(&unw_procs, &tgid);
	if (!proc)
		goto unknown;
	w.gen = proc->gen;
	v->e.ips[0] = ret;
	v->h = hs_hash_word(HS_HASH_INIT, ret);
	v->nr = 1;
	v->pc = ret;
	v->sp = PT_REGS_SP(ctx) + 8;
	v->fp = PT_REGS_FP(ctx);
	v->fp_ok = 1;
	v->miss = 0;
	v->win_len = 0;
	bpf_loop(HS_MAX_STACK, unw_step, &w, 0);
	if (!v->miss)
		return send_stack(st, id, &v->e, v->h, v->nr);
unknown:
	return unknown_modules(ctx, id, st, ret);
}

static __always_inline void emit_alloc(__u64 id, __u64 ptr, const struct hs_live_val *v, __u8 flags)
{
	void *rb;
	struct hs_alloc_event *e = ring_reserve(sizeof(*e), &rb);
	struct hs_live_key k = {.ptr = ptr, .tgid = id >> 32};

	if (!e) {
		count(HS_CNT_RINGBUF_FULL);
		bpf_map_delete_elem(&live, &k);
		return;
	}
	fill_hdr(&e->h, HS_EV_ALLOC, (__u8)v->kind | flags, id);
	e->ptr = ptr;
	e->size = v->size;
	e->stack = v->stack;
	ring_submit(e, rb, sizeof(*e));
}

/* Removes PTR from the live set and tells user space. Returns the block's record, if known.
 * Recording every event, the live set is user space's: every free goes there, and the
 * traced thread pays no hash map update or delete. */
static __always_inline bool release(__u64 id, __u64 ptr, struct hs_live_val *out, __u8 flags)
{
	struct hs_live_key k = {.ptr = ptr, .tgid = id >> 32};
	struct hs_live_val *v;
	struct hs_free_event *e;
	void *rb;

	if (!sample_rate) {
		e = ring_reserve(sizeof(*e), &rb);
		if (!e) {
			count(HS_CNT_RINGBUF_FULL);
			return false;
		}
		fill_hdr(&e->h, HS_EV_FREE, flags, id);
		e->ptr = ptr;
		e->size = 0;
		ring_submit(e, rb, sizeof(*e));
		return false;
	}
	v = bpf_map_lookup_elem(&live, &k);
	if (!v) {
		if (!sample_rate)
			count(HS_CNT_UNKNOWN_FREE);
		return false;
	}
	*out = *v;
	bpf_map_delete_elem(&live, &k);
	e = ring_reserve(sizeof(*e), &rb);
	if (!e) {
		count(HS_CNT_RINGBUF_FULL);
		return true;
	}
	fill_hdr(&e->h, HS_EV_FREE, (__u8)out->kind, id);
	e->ptr = ptr;
	e->size = out->size;
	ring_submit(e, rb, sizeof(*e));
	return true;
}

static __always_inline int alloc_enter(struct pt_regs *ctx, __u64 size, __u64 aux, bool realloc, __u64 old)
{
	__u64 id = cur_id();
	__u64 sp = PT_REGS_SP(ctx), ret = 0, cookie = bpf_get_attach_cookie(ctx);
	struct thread_state *st;

	if (noop)
		return RUN_RETURN; /* the floor pays for the return probe, as a recording does */
	if (!tracked_state(id, &st) || !st)
		return SKIP_RETURN;
	bpf_probe_read_user(&ret, sizeof(ret), (void *)sp);
	if (st->depth) {
		/* Deeper, or a tail call (operator new[] -> operator new, __rust_alloc -> malloc):
		 * same sp, but [sp] is already the uretprobe trampoline, not the caller. */
		if (sp < st->outer_sp || (sp == st->outer_sp && ret != st->outer_ret)) {
			count(HS_CNT_NESTED);
			if (cookie & HS_COOKIE_SESSION)
				return SKIP_RETURN; /* no return half to count down */
			st->depth++;
			return RUN_RETURN;
		}
		/* The stack is back at or above the outer call: its return probe never fired. */
		count(HS_CNT_MISSED_URETPROBE);
	}
	count(HS_CNT_ALLOC_CALLS);
	st->depth = 1;
	st->outer_sp = sp;
	st->outer_ret = ret;
	st->size = size;
	st->aux = aux;
	st->kind = (__u32)(cookie & HS_COOKIE_KIND_MASK);
	st->old_valid = 0;
	st->is_realloc = realloc && old;
	/* The old block is released at entry, before the allocator can hand it to another thread. */
	if (realloc && old)
		st->old_valid = release(id, old, &st->old, HS_FREE_FLAG_REALLOC);
	if (sample_rate) {
		st->countdown -= (__s64)size;
		if (st->countdown > 0) {
			if ((cookie & (HS_COOKIE_SESSION | HS_COOKIE_LEAF)) == (HS_COOKIE_SESSION | HS_COOKIE_LEAF)) {
				st->depth = 0;
				return SKIP_RETURN;
			}
			st->sampled = 0;
			return RUN_RETURN;
		}
		st->countdown = draw_threshold();
		count(HS_CNT_SAMPLED);
	}
	st->sampled = 1;
	st->stack = stack_mode == 2 ? capture_dwarf(ctx, id, st)
		    : stack_mode == 3 ? capture_table(ctx, id, st, ret)
				      : capture_stack(ctx, id, st, ret);
	return RUN_RETURN;
}

static __always_inline int alloc_return(struct pt_regs *ctx, __u64 ptr)
{
	__u64 id = cur_id();
	struct thread_state *st = find_state();
	struct hs_live_key k = {.ptr = ptr, .tgid = id >> 32};
	struct hs_live_val v = {};

	if (noop || !st || !st->depth)
		return 0;
	if (--st->depth)
		return 0;
	if (!ptr) {
		if (st->size) {
			count(HS_CNT_FAILED_ALLOC);
			/* realloc failed: the old block is still live and still the caller's. */
			if (st->old_valid) {
				k.ptr = st->aux;
				if (!bpf_map_update_elem(&live, &k, &st->old, BPF_ANY))
					emit_alloc(id, st->aux, &st->old, HS_KIND_FLAG_RESTORED);
			} else if (!sample_rate && st->is_realloc) {
				/* User space knows the block: it fills in size and stack. */
				struct hs_live_val none = {};

				emit_alloc(id, st->aux, &none, HS_KIND_FLAG_RESTORED);
			}
		}
		return 0;
	}
	if (!st->sampled)
		return 0;
	v.size = st->size;
	v.stack = st->stack;
	v.kind = st->kind;
	if (sample_rate && bpf_map_update_elem(&live, &k, &v, BPF_ANY)) {
		count(HS_CNT_LIVE_FULL);
		return 0;
	}
	emit_alloc(id, ptr, &v, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(enter_size1, __u64 size)
{
	return alloc_enter(ctx, size, 0, false, 0);
}

SEC("uprobe")
int BPF_KPROBE(enter_size2, __u64 align, __u64 size)
{
	return alloc_enter(ctx, size, 0, false, 0);
}

SEC("uprobe")
int BPF_KPROBE(enter_calloc, __u64 nmemb, __u64 size)
{
	return alloc_enter(ctx, nmemb * size, 0, false, 0);
}

SEC("uprobe")
int BPF_KPROBE(enter_realloc, __u64 old, __u64 size)
{
	return alloc_enter(ctx, size, old, true, old);
}

SEC("uprobe")
int BPF_KPROBE(enter_reallocarray, __u64 old, __u64 nmemb, __u64 size)
{
	return alloc_enter(ctx, nmemb * size, old, true, old);
}

SEC("uprobe")
int BPF_KPROBE(enter_rust_realloc, __u64 old, __u64 old_size, __u64 align, __u64 size)
{
	return alloc_enter(ctx, size, old, true, old);
}

SEC("uprobe")
int BPF_KPROBE(enter_posix_memalign, __u64 memptr, __u64 align, __u64 size)
{
	return alloc_enter(ctx, size, memptr, false, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(ret_ptr, __u64 ret)
{
	return alloc_return(ctx, ret);
}

static __always_inline int posix_memalign_return(struct pt_regs *ctx, int ret)
{
	if (noop)
		return 0;
	struct thread_state *st = find_state();
	__u64 ptr = 0;

	/* *memptr is only defined when posix_memalign returned 0. */
	if (st && ret == 0 && st->aux)
		bpf_probe_read_user(&ptr, sizeof(ptr), (void *)st->aux);
	return alloc_return(ctx, ptr);
}

SEC("uretprobe")
int BPF_KRETPROBE(ret_posix_memalign, int ret)
{
	return posix_memalign_return(ctx, ret);
}

/* The same functions as session probes: one program per function for both halves. The
 * loader sets their attach type, which this libbpf does not know by section name, and
 * leaves them unloaded where the kernel lacks session probes. */
#define SESSION_PROG(name, enter_args, ...)                                    \
	SEC("uprobe")                                                          \
	int BPF_KPROBE(name, ##__VA_ARGS__)                                    \
	{                                                                      \
		if (bpf_session_is_return())                                   \
			return alloc_return(ctx, PT_REGS_RC(ctx));             \
		return alloc_enter enter_args;                                 \
	}

SESSION_PROG(sess_size1, (ctx, size, 0, false, 0), __u64 size)
SESSION_PROG(sess_size2, (ctx, size, 0, false, 0), __u64 align, __u64 size)
SESSION_PROG(sess_calloc, (ctx, nmemb * size, 0, false, 0), __u64 nmemb, __u64 size)
SESSION_PROG(sess_realloc, (ctx, size, old, true, old), __u64 old, __u64 size)
SESSION_PROG(sess_reallocarray, (ctx, nmemb * size, old, true, old), __u64 old, __u64 nmemb, __u64 size)
SESSION_PROG(sess_rust_realloc, (ctx, size, old, true, old), __u64 old, __u64 old_size, __u64 align, __u64 size)

SEC("uprobe")
int BPF_KPROBE(sess_posix_memalign, __u64 memptr, __u64 align, __u64 size)
{
	if (bpf_session_is_return())
		return posix_memalign_return(ctx, (int)PT_REGS_RC(ctx));
	return alloc_enter(ctx, size, memptr, false, 0);
}

/* A free's entry. Returns whether a session probe's return half must run: only for a
 * wrapper (operator delete, __rust_dealloc), to end the span in which its inner free is
 * not counted again. */
static __always_inline int free_enter(struct pt_regs *ctx, __u64 ptr)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	int wrapper_ret = (cookie & HS_COOKIE_WRAPPER) ? RUN_RETURN : SKIP_RETURN;

	if (noop)
		return wrapper_ret;
	__u64 id = cur_id();
	__u64 sp = PT_REGS_SP(ctx);
	struct thread_state *st;
	struct hs_live_val old;

	if (!ptr || !tracked_state(id, &st))
		return SKIP_RETURN;
	if (st && st->free_depth && st->free_ptr == ptr && sp <= st->free_sp)
		return SKIP_RETURN; /* the free that operator delete or __rust_dealloc calls */
	if (st && (cookie & HS_COOKIE_WRAPPER)) {
		st->free_ptr = ptr;
		st->free_sp = sp;
		st->free_depth = 1;
	}
	count(HS_CNT_FREE_CALLS);
	release(id, ptr, &old, 0);
	return wrapper_ret;
}

static __always_inline int free_return(void)
{
	if (noop)
		return 0;
	struct thread_state *st = find_state();

	if (st)
		st->free_depth = 0;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(enter_free, __u64 ptr)
{
	free_enter(ctx, ptr);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(ret_free_wrapper)
{
	return free_return();
}

SEC("uprobe")
int BPF_KPROBE(sess_free, __u64 ptr)
{
	if (bpf_session_is_return())
		return free_return();
	return free_enter(ctx, ptr);
}

/* TASK: the process whose name goes with the event (the child, for a fork). BPRM: an exec's
 * binary, whose image, path and arguments go too. */
static __always_inline void emit_proc(__u8 type, __u32 pid, __u32 ppid, __s32 code, struct task_struct *task,
				      struct linux_binprm *bprm)
{
	void *rb;
	struct hs_proc_event *e = ring_reserve(sizeof(*e), &rb);

	if (!e) {
		count(HS_CNT_RINGBUF_FULL);
		return;
	}
	fill_hdr(&e->h, type, 0, (__u64)pid << 32 | pid);
	e->ppid = ppid;
	e->exit_code = code;
	e->start_code = e->end_code = e->exe_ino = 0;
	e->exe_dev = e->args_len = 0;
	e->comm[0] = e->path[0] = e->args[0] = 0;
	if (task)
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), task->comm);
	if (task && bprm) {
		__u64 a0 = BPF_CORE_READ(task, mm, arg_start), a1 = BPF_CORE_READ(task, mm, arg_end);
		__u32 n = a1 > a0 ? (__u32)(a1 - a0) : 0;

		e->start_code = BPF_CORE_READ(task, mm, start_code);
		e->end_code = BPF_CORE_READ(task, mm, end_code);
		e->exe_ino = BPF_CORE_READ(task, mm, exe_file, f_inode, i_ino);
		e->exe_dev = BPF_CORE_READ(task, mm, exe_file, f_inode, i_sb, s_dev);
		bpf_probe_read_kernel_str(e->path, sizeof(e->path), BPF_CORE_READ(bprm, filename));
		if (n > HS_EXEC_ARGS_MAX)
			n = HS_EXEC_ARGS_MAX;
		/* The new image's stack: present, the kernel has just written it. */
		/* 1..HS_EXEC_ARGS_MAX in a form the verifier bounds: n is 1..512 here. */
		if (n && !bpf_probe_read_user(e->args, ((n - 1) & (HS_EXEC_ARGS_MAX - 1)) + 1, (void *)a0))
			e->args_len = n;
	}
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

static __always_inline void bump_maps_gen(void)
{
	__u32 zero = 0;
	__u64 *g = bpf_map_lookup_elem(&maps_gen, &zero);

	if (g)
		__sync_fetch_and_add(g, 1);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid, ctgid;
	__u8 one = 1;

	if (!follow_forks || BPF_CORE_READ(child, tgid) != BPF_CORE_READ(child, pid))
		return 0;
	ptgid = task_ns_id(parent) >> 32;
	ctgid = task_ns_id(child) >> 32;
	if (!ctgid || !is_tracked(ptgid))
		return 0;
	/* -a tracks every process but the recorder's own, with no set to keep. */
	if (filter_pids)
		bpf_map_update_elem(&tracked, &ctgid, &one, BPF_ANY);
	emit_proc(HS_EV_FORK, ctgid, ptgid, 0, child, NULL);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = task_ns_id(p) >> 32;

	if (!is_tracked(tgid))
		return 0;
	if (filter_pids)
		bump_maps_gen();
	/* The old image's mappings are gone: stacks are copied until user space has the new. */
	bpf_map_delete_elem(&unw_procs, &tgid);
	{
		/* The thread outlives its image, and so does its state: the stack is a new one. */
		struct thread_state *st = find_state();

		if (st)
			st->stack_end = 0;
	}
	emit_proc(HS_EV_EXEC, tgid, task_ns_id(BPF_CORE_READ(p, real_parent)) >> 32, 0, p, bprm);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 tgid;

	if (BPF_CORE_READ(p, tgid) != BPF_CORE_READ(p, pid))
		return 0;
	tgid = task_ns_id(p) >> 32;
	if (!is_tracked(tgid))
		return 0;
	bpf_map_delete_elem(&unw_procs, &tgid);
	emit_proc(HS_EV_EXIT, tgid, 0, BPF_CORE_READ(p, exit_code), NULL, NULL);
	return 0;
}

struct pending_mmap {
	__u64 len, off;
	__s64 fd;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pending_mmap);
} mmaps SEC(".maps");

/* In a PID namespace, the recorder renames itself once and reads this back: its own ids as
 * BPF numbers them, ~0 if the two ways of numbering (the helper's for the current task, the
 * task's pid's) disagree. Zero, or not its getpid(), and it would record nothing: it stops. */
__u64 self_seen = 0;

SEC("tp_btf/task_rename")
int BPF_PROG(on_rename, struct task_struct *task, const char *comm)
{
	__u64 id = task_ns_id(task);

	if (ns_ino && (__u32)(id >> 32) == self_tgid)
		self_seen = cur_id() == id ? id : ~0ull;

	if (is_tracked(id >> 32))
		emit_comm(id >> 32, (__u32)id, comm, true);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = cur_id();
	__u32 tid = (__u32)id;
	struct pending_mmap pm;

	/* PROT_EXEC: a library or code being mapped (dlopen). */
	if (!(ctx->args[2] & 4) || !is_tracked(id >> 32))
		return 0;
	/* -a: the event alone says which process to look at again. */
	if (filter_pids)
		bump_maps_gen();
	pm.len = ctx->args[1];
	pm.fd = (__s64)ctx->args[4];
	pm.off = ctx->args[5];
	bpf_map_update_elem(&mmaps, &tid, &pm, BPF_ANY);
	return 0;
}

/* F's path up to the root of its mount tree (the process's root, unless it is chrooted),
 * into OUT (HS_EXEC_PATH_MAX bytes); empty if it is deeper or longer than that. User space
 * uses it only if it leads to the file the event names by device and inode: a module
 * dlopen'd and closed again before its maps are read still gets its name. */
static __always_inline void file_path(struct file *f, char *out)
{
	__u32 zero = 0;
	struct path_scratch_val *sv = bpf_map_lookup_elem(&path_scratch, &zero);
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
	struct mount *m = container_of(BPF_CORE_READ(f, f_path.mnt), struct mount, mnt);
	int i;

	out[0] = 0;
	if (!sv)
		return;
	sv->n = 0;
	for (i = 0; i < PATH_DEPTH + 8; i++) {
		struct dentry *up;
		__u32 n;

		if (d == BPF_CORE_READ(m, mnt.mnt_root)) {
			struct mount *parent = BPF_CORE_READ(m, mnt_parent);

			if (parent == m)
				break; /* the top of the tree */
			d = BPF_CORE_READ(m, mnt_mountpoint);
			m = parent;
			continue;
		}
		up = BPF_CORE_READ(d, d_parent);
		if (up == d)
			break;
		n = *(volatile __u32 *)&sv->n;
		if (n >= PATH_DEPTH)
			return;
		sv->parts[n & (PATH_DEPTH - 1)] = d;
		sv->n = n + 1;
		d = up;
	}
	if (i == PATH_DEPTH + 8 || !sv->n)
		return;
	sv->off = 0;
	for (i = PATH_DEPTH - 1; i >= 0; i--) {
		const unsigned char *name;
		struct dentry *part;
		__u32 off = *(volatile __u32 *)&sv->off;
		long len;

		if ((__u32)i >= *(volatile __u32 *)&sv->n)
			continue;
		part = sv->parts[i & (PATH_DEPTH - 1)]; /* a plain read: relocations are for the kernel's types */
		name = BPF_CORE_READ(part, d_name.name);
		sv->buf[off & (HS_EXEC_PATH_MAX - 1)] = '/';
		if (++off >= HS_EXEC_PATH_MAX)
			return;
		len = bpf_probe_read_kernel_str(&sv->buf[off & (HS_EXEC_PATH_MAX - 1)], HS_EXEC_PATH_MAX, name);
		if (len <= 1)
			return;
		off += (__u32)len - 1;
		if (off >= HS_EXEC_PATH_MAX)
			return;
		sv->off = off;
	}
	sv->buf[*(volatile __u32 *)&sv->off & (HS_EXEC_PATH_MAX - 1)] = 0;
	bpf_probe_read_kernel(out, HS_EXEC_PATH_MAX, sv->buf);
}

/* Sends where the code landed, with the file's identity, so the mapping is known even
 * when the process exits before user space can read its maps. */
SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = cur_id();
	__u32 tid = (__u32)id;
	struct pending_mmap *pm = bpf_map_lookup_elem(&mmaps, &tid);
	struct task_struct *task;
	struct hs_mmap_event *e;
	struct file **fds, *f = NULL;
	void *rb;
	__u32 max;

	if (!pm)
		return 0;
	if (ctx->ret < 0 || pm->fd < 0)
		goto out;
	/* The process's mappings as user space last sent them lack this one: a walk that meets
	 * it finds no mapping and copies the stack, until user space sends them again. */
	task = (struct task_struct *)bpf_get_current_task();
	fds = BPF_CORE_READ(task, files, fdt, fd);
	max = BPF_CORE_READ(task, files, fdt, max_fds);
	if ((__u64)pm->fd >= max)
		goto out;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[pm->fd]);
	if (!f)
		goto out;
	e = ring_reserve(sizeof(*e), &rb);
	if (!e) {
		count(HS_CNT_RINGBUF_FULL);
		goto out;
	}
	fill_hdr(&e->h, HS_EV_MMAP, 0, id);
	e->addr = (__u64)ctx->ret;
	e->len = pm->len;
	e->off = pm->off;
	e->ino = BPF_CORE_READ(f, f_inode, i_ino);
	e->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	e->pad = 0;
	file_path(f, e->path);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
out:
	bpf_map_delete_elem(&mmaps, &tid);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_munmap")
int on_munmap(struct trace_event_raw_sys_enter *ctx)
{
	if (filter_pids && is_tracked(cur_id() >> 32))
		bump_maps_gen();
	return 0;
}
