// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* heapsnap: uprobes on allocator entry points. Outermost calls only are recorded, so
 * operator new -> malloc or __rust_alloc -> malloc count once, at the outer function.
 * A throwing operator new has no return probe (HS_COOKIE_NORET): the return of the allocator
 * it calls ends it. */
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
__u32 view_tgid = 0; /* -a: nor its live view, a child it forks after the load */
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
	__u64 outer_ip;  /* the probe's address there (a noret new's, after its tail call) */
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
	__u8 noret; /* the outer call has no return probe (HS_COOKIE_NORET): depth 2 back to 1 ends it */
};

/* How far past a noret operator new's probe its call of the allocator returns to: 0x10 bytes in
 * libstdc++ 12's _Znwm, 0x42 in the aligned one. A call from anywhere else is not its call: the
 * new left without making one (it threw first), and this call starts afresh. */
#define NORET_CALL_SPAN 256

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
		return tgid != self_tgid && tgid != view_tgid;
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
	h->stop = 0;
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

/* The stacks of allocations (stacks.bpf.h): fp, dwarf and table walks. */
#include "stacks.bpf.h"

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
	fill_hdr(&e->h, HS_EV_FREE, flags, id);
	e->ptr = ptr;
	e->size = out->size;
	ring_submit(e, rb, sizeof(*e));
	return true;
}

static __always_inline int alloc_enter(struct pt_regs *ctx, __u64 size, __u64 aux, bool realloc, __u64 old)
{
	__u64 id = cur_id();
	__u64 sp = PT_REGS_SP(ctx), ip = PT_REGS_IP(ctx), ret = 0, cookie = bpf_get_attach_cookie(ctx);
	__u32 kind = (__u32)(cookie & HS_COOKIE_KIND_MASK);
	bool noret = cookie & HS_COOKIE_NORET, nested;
	/* What a session probe's entry answers when this call is recorded: no return for noret. */
	int run = noret ? SKIP_RETURN : RUN_RETURN;
	struct thread_state *st;

	if (noop)
		return run; /* the floor pays for the return probes a recording has */
	if (!tracked_state(id, &st) || !st)
		return SKIP_RETURN;
	bpf_probe_read_user(&ret, sizeof(ret), (void *)sp);
	if (st->depth) {
		/* Deeper, or a tail call (__rust_alloc -> malloc, a program's own new[] -> new):
		 * same sp, but [sp] is already the uretprobe trampoline, not the caller. */
		nested = sp < st->outer_sp || (sp == st->outer_sp && ret != st->outer_ret);
		/* Under a noret operator new, [sp] is still the caller's at its tail call (new[] ->
		 * new: noret too, of another kind), and the allocator it calls returns into it. Any
		 * other call is a fresh one: the new threw before calling (an alignment not a power
		 * of two), or its allocator's return was missed. */
		if (st->noret && st->depth == 1)
			nested = noret ? sp == st->outer_sp && ret == st->outer_ret && kind != st->kind
				       : sp < st->outer_sp && ret - st->outer_ip <= NORET_CALL_SPAN;
		if (nested) {
			count(HS_CNT_NESTED);
			if (noret) {
				st->outer_ip = ip; /* the tail call's: its allocator returns into it */
				return SKIP_RETURN; /* no return probe: the depth stays */
			}
			if (st->noret && st->depth == 1) {
				/* The call that returns for the operator new, even as a session probe. */
				st->aux = aux; /* posix_memalign's memptr */
				st->depth++;
				return RUN_RETURN;
			}
			if (cookie & HS_COOKIE_SESSION)
				return SKIP_RETURN; /* no return half to count down */
			st->depth++;
			return RUN_RETURN;
		}
		/* The stack is back at or above the outer call: its return probe never fired. A noret
		 * new has none: it threw (nothing was allocated, nothing is lost). */
		if (!st->noret)
			count(HS_CNT_MISSED_URETPROBE);
	}
	count(HS_CNT_ALLOC_CALLS);
	st->depth = 1;
	st->noret = noret;
	st->outer_sp = sp;
	st->outer_ret = ret;
	st->outer_ip = ip;
	st->size = size;
	st->aux = aux;
	st->kind = kind;
	st->old_valid = 0;
	st->is_realloc = realloc && old;
	/* The old block is released at entry, before the allocator can hand it to another thread. */
	if (realloc && old)
		st->old_valid = release(id, old, &st->old, HS_FREE_FLAG_REALLOC);
	if (sample_rate) {
		st->countdown -= (__s64)size;
		if (st->countdown > 0) {
			/* Never noret (the loader gives it no LEAF): its allocator must be seen nested. */
			if ((cookie & (HS_COOKIE_SESSION | HS_COOKIE_LEAF)) == (HS_COOKIE_SESSION | HS_COOKIE_LEAF)) {
				st->depth = 0;
				return SKIP_RETURN;
			}
			st->sampled = 0;
			return run;
		}
		st->countdown = draw_threshold();
		count(HS_CNT_SAMPLED);
	}
	st->sampled = 1;
	st->stack = stack_mode == 2 ? capture_dwarf(ctx, id, st)
		    : stack_mode == 3 ? capture_table(ctx, id, st, ret)
				      : capture_stack(ctx, id, st, ret);
	return run;
}

static __always_inline int alloc_return(struct pt_regs *ctx, __u64 ptr)
{
	__u64 id = cur_id();
	struct thread_state *st = find_state();
	struct hs_live_key k = {.ptr = ptr, .tgid = id >> 32};
	struct hs_live_val v = {};

	if (noop || !st || !st->depth)
		return 0;
	if (--st->depth) {
		if (st->depth != 1 || !st->noret)
			return 0;
		/* The allocator a noret operator new called: its return is the new's. A NULL one
		 * ends the new too (it throws, or its new_handler's retry is an outer call). */
		st->depth = 0;
	}
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

/* Processes and their mappings, from tracepoints (procs.bpf.h). */
#include "procs.bpf.h"
