/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* heapsnap.bpf.c, its processes: fork, exec, exit, thread names and mmap, from tracepoints, so
 * that a process that lives a few milliseconds is still known. Part of the one BPF object:
 * heapsnap.bpf.c includes it at its end, after what it uses, and nothing else may. */
#ifndef HEAPSNAP_PROCS_BPF_H
#define HEAPSNAP_PROCS_BPF_H

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

/* Fork children of tracked processes that the tracked set had no room for, and so not
 * recorded (lost.forks_untracked). */
__u64 forks_untracked = 0;

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
	/* -a tracks every process but the recorder's own, with no set to keep. Here, before the
	 * child first runs: its probes are bound to no pid, so its first malloc is seen. A child
	 * the full set cannot take is counted, and user space says so. */
	if (filter_pids && bpf_map_update_elem(&tracked, &ctgid, &one, BPF_ANY))
		__sync_fetch_and_add(&forks_untracked, 1);
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
	/* Its last thread gone, the pid leaves the set: a server forking a process per
	 * connection would fill it, and the pid's next owner is not ours. */
	if (filter_pids && !BPF_CORE_READ(p, signal, live.counter))
		bpf_map_delete_elem(&tracked, &tgid);
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

#endif
