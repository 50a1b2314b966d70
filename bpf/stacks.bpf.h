/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* heapsnap.bpf.c, its stacks: the frame-pointer walk, --stack dwarf copies and the --stack auto
 * walk with unwind tables (common/unw_rows.h). Part of the one BPF object: heapsnap.bpf.c
 * includes it after the maps, rings and thread state it uses, and nothing else may. */
#ifndef HEAPSNAP_STACKS_BPF_H
#define HEAPSNAP_STACKS_BPF_H

/* The user stack of an allocation. Frame 0 is the caller's return address, read from [sp]:
 * at function entry a frame-pointer walk would skip the function that called us. The rest
 * is our own walk of the rbp chain. It stops at the first frame pointer that cannot be one
 * (below sp, unaligned, not increasing, too far up), so it never takes a fault on the junk
 * rbp of code built without frame pointers: the kernel's walk pays a fault for that. */
static __always_inline __u64 send_stack(struct thread_state *st, __u64 id, struct hs_stack_event *s, __u64 h, __u32 nr);

struct fp_walk {
	struct stack_scratch_val *v;
};

/* One frame of the rbp chain: the caller of the frame at v->fp, as frame v->nr. 1 stops.
 * A bpf_loop callback with the walk's state in map memory: the verifier checks it once,
 * whatever state each caller reaches the walk in and whatever --max-stack (unrolled in every
 * allocator's program as far as --max-stack, 127 frames made the verifier follow about 70,000
 * instructions a program, and loading the 14 took 1.1 to 1.5 s of the recorder's start). */
static long fp_step(__u32 i, void *ctx)
{
	struct stack_scratch_val *v = ((struct fp_walk *)ctx)->v;
	__u64 fp = v->fp, sp = v->sp;
	__u32 idx = v->nr;
	struct {
		__u64 next, ret;
	} frame;

	if (idx >= HS_MAX_STACK)
		return 1;
	if (idx >= stack_depth) {
		count(HS_CNT_STACK_TRUNCATED);
		return 1;
	}
	if (fp <= sp || (fp & 7) || fp - sp > (64ull << 20)) {
		/* A zeroed rbp is the outermost frame (_start clears it); anything else is a
		 * frame built without a frame pointer: callers lost. */
		if (fp)
			count(HS_CNT_STACK_ERROR);
		return 1;
	}
	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)fp) || !frame.ret) {
		count(HS_CNT_STACK_ERROR);
		return 1;
	}
	v->e.ips[idx & 127] = frame.ret;
	v->h = hs_hash_word(v->h, frame.ret);
	v->nr = idx + 1;
	if (frame.next <= fp)
		return 1;
	v->fp = frame.next;
	return 0;
}

static __always_inline __u64 capture_stack(struct pt_regs *ctx, __u64 id, struct thread_state *st, __u64 ret)
{
	__u32 zero = 0;
	struct stack_scratch_val *v = bpf_map_lookup_elem(&stack_scratch, &zero);
	struct fp_walk w = {.v = v};

	if (!v)
		return 0;
	v->e.ips[0] = ret;
	v->h = hs_hash_word(HS_HASH_INIT, ret);
	v->nr = 1;
	v->sp = PT_REGS_SP(ctx);
	v->fp = PT_REGS_FP(ctx);
	if (stack_mode)
		bpf_loop(HS_MAX_STACK - 1, fp_step, &w, 0);
	return send_stack(st, id, &v->e, v->h, v->nr);
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
	/* The lookup fails (EBUSY) while another thread holds the process's mmap lock for
	 * writing, or this CPU's last unlock is still pending: with a core busy, 768 of 2,557
	 * windows of one run came out empty. Then the window is what can be read upwards, page
	 * by page, to its limit, and its use is taken as that. */
	if (st->stack_end > sp) {
		used = st->stack_end - sp;
	} else {
		count(HS_CNT_DWARF_END_UNKNOWN);
		used = dwarf_bytes;
	}
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

#endif
