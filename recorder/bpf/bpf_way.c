// SPDX-License-Identifier: MIT
/* The BPF way in: loading the programs with their rodata and map sizes and the per-CPU rings,
 * attaching probes for a command, a pid or the host, and what process tracking asks of it. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/capability.h>

#include "bpf_way.h"
#include "heapsnap.h"
#include "heapsnap.skel.h"
#include "launch.h"
#include "objects.h"
#include "output.h"
#include "pipeline.h"
#include "processes.h"
#include "procfs.h"
#include "ring_reader.h"
#include "sampling.h"
#include "session.h"
#include "way.h"

/* ---- setup ---- */

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return vfprintf(stderr, fmt, args);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return 0;
}

/* Exponential quantiles with mean RATE: the BPF sampler draws one at random per sample. */
static int fill_thresholds(struct session *s)
{
	int fd = bpf_map__fd(bpf_of(s)->skel->maps.thresholds);
	uint64_t v[HS_NR_THRESHOLDS];

	sampling_thresholds(s->o->sample_rate, v);
	for (uint32_t i = 0; i < HS_NR_THRESHOLDS; i++)
		if (bpf_map_update_elem(fd, &i, &v[i], BPF_ANY))
			return -errno;
	return 0;
}

/* Finds a library for -a or for a command that has not started yet. */
static char *find_system_lib(const char *name)
{
	static const char *const dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
					   "/usr/lib64", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
					   "/lib", "/usr/lib"};
	char path[512];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		if (!access(path, R_OK))
			return strdup(path);
	}
	return NULL;
}

/* The libraries a command will load, as the dynamic loader resolves them (ldd's method). */
static int predict_libs(const char *exe, char ***out, int *nr)
{
	int pfd[2], n = 0;
	char *line = NULL, **v = NULL;
	size_t cap = 0;
	pid_t pid;
	FILE *f;

	/* Only the dynamic loader honours LD_TRACE_LOADED_OBJECTS: anything else (a static
	 * binary, a script) would simply run the user's command an extra time. */
	if (!elf_is_dynamic(exe))
		return 0;
	pid = fork_with_pipe(pfd);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		char *argv[] = {(char *)exe, NULL};

		dup2(pfd[1], 1);
		setenv("LD_TRACE_LOADED_OBJECTS", "1", 1);
		execv(exe, argv);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	while (f && getline(&line, &cap, f) > 0) {
		char *p = strstr(line, "=> "), *e;

		p = p ? p + 3 : strchr(line, '/');
		if (!p || *p != '/')
			continue;
		e = strstr(p, " (");
		if (e)
			*e = 0;
		p[strcspn(p, "\n")] = 0;
		char **nv = realloc(v, sizeof(*v) * (size_t)(n + 1));

		if (!nv)
			break;
		v = nv;
		v[n++] = strdup(p);
	}
	free(line);
	if (f)
		fclose(f);
	waitpid(pid, NULL, 0);
	*out = v;
	*nr = n;
	return 0;
}

/* The effective capabilities, by capget(2): what the kernel checks, whatever the uid. */
static bool has_cap(int cap)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};

	if (syscall(SYS_capget, &h, d))
		return geteuid() == 0;
	return d[cap / 32].effective & (1u << (cap % 32));
}

static int check_privileges(void)
{
	/* CAP_SYS_ADMIN covers both on kernels before 5.8, which lack the finer ones. */
	if (!(has_cap(CAP_BPF) && has_cap(CAP_PERFMON)) && !has_cap(CAP_SYS_ADMIN)) {
		rec_warnx("needs root (or CAP_BPF and CAP_PERFMON) to load BPF programs and attach uprobes; run it with sudo");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		rec_warnx("this kernel has no BTF (/sys/kernel/btf/vmlinux): CONFIG_DEBUG_INFO_BTF=y is required");
		return -ENOTSUP;
	}
	return 0;
}

/* In a PID namespace: whether BPF numbers this process as getpid() and gettid() do, seen
 * through the rename tracepoint (renamed to its own name). If not, every event would name a
 * process the recorder does not know, and the recording would be empty: said, and stopped. */
static int check_pid_translation(struct bpf_way *b)
{
	char comm[16] = "";
	uint64_t want = (uint64_t)getpid() << 32 | (uint64_t)gettid(), seen;

	if (!b->skel->rodata->ns_ino)
		return 0;
	b->skel->bss->self_seen = 0;
	if (prctl(PR_GET_NAME, comm) || prctl(PR_SET_NAME, comm)) {
		int err = -errno;

		rec_warnx("cannot check how BPF numbers processes in this PID namespace (prctl PR_SET_NAME): %s",
			  strerror(-err));
		return err;
	}
	seen = __atomic_load_n(&b->skel->bss->self_seen, __ATOMIC_ACQUIRE);
	if (seen == want)
		return 0;
	rec_warnx("BPF does not number processes as this PID namespace does (it saw the recorder as %s%u/%u, "
		  "getpid()/gettid() say %u/%u): it would record nothing; stopping",
		  seen == ~0ull ? "inconsistently, " : "", (unsigned)(seen >> 32), (unsigned)seen, (unsigned)(want >> 32),
		  (unsigned)want);
	return -ESRCH;
}


int bpf_way__check(struct session *s)
{
	int err = check_privileges();

	if (!err)
		setrlimit(RLIMIT_MEMLOCK, &(struct rlimit){RLIM_INFINITY, RLIM_INFINITY});
	return err;
}

/* ---- the per-CPU rings ---- */

/* One ring per possible CPU, all of RING_BYTES, made before the BPF object is loaded: the
 * first also serves as the template of the array of rings. */
static int create_rings(struct session *s, uint32_t ring_bytes)
{
	struct bpf_way *b = bpf_of(s);

	s->ring_bytes = ring_bytes;
	s->nr_rings = libbpf_num_possible_cpus();
	if (s->nr_rings <= 0)
		return s->nr_rings ? s->nr_rings : -EINVAL;
	s->rings = calloc((size_t)s->nr_rings, sizeof(*s->rings));
	b->ring_fds = malloc(sizeof(*b->ring_fds) * (size_t)s->nr_rings);
	if (!s->rings || !b->ring_fds)
		return -ENOMEM;
	for (int i = 0; i < s->nr_rings; i++)
		b->ring_fds[i] = -1;
	for (int i = 0; i < s->nr_rings; i++) {
		b->ring_fds[i] = bpf_map_create(BPF_MAP_TYPE_RINGBUF, NULL, 0, 0, ring_bytes, NULL);
		if (b->ring_fds[i] < 0)
			return -errno;
	}
	bpf_map__set_max_entries(b->skel->maps.rings, (uint32_t)s->nr_rings);
	return bpf_map__set_inner_map_fd(b->skel->maps.rings, b->ring_fds[0]);
}

/* After loading: puts the rings in the BPF array, maps them, and has one epoll set wait on
 * them all. Edge-triggered: events left in a ring for the merge must not wake the recorder
 * again and again, only the producers' wakeups. */
static int install_rings(struct session *s)
{
	struct bpf_way *b = bpf_of(s);
	int outer = bpf_map__fd(b->skel->maps.rings), err;

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return -errno;
	for (int i = 0; i < s->nr_rings; i++) {
		uint32_t key = (uint32_t)i;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u32 = key};

		if (bpf_map_update_elem(outer, &key, &b->ring_fds[i], BPF_ANY))
			return -errno;
		if ((err = ring_map(&s->rings[i], b->ring_fds[i], s->ring_bytes)))
			return err;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, b->ring_fds[i], &ev))
			return -errno;
	}
	return loop_epoll_add(s, NULL, 0);
}

/* ---- start: open -> set rodata and map sizes -> load ---- */

/* The program's constants, from the options and this process's PID namespace. */
static int set_rodata(struct session *s, const struct run *u)
{
	const struct rec_opts *o = s->o;
	struct heapsnap_bpf *k = bpf_of(s)->skel;
	uint64_t dev, ino;
	int err;

	k->rodata->filter_pids = !o->all;
	k->rodata->follow_forks = o->follow_forks;
	k->rodata->sample_rate = o->sample_rate;
	k->rodata->stack_depth = o->max_stack;
	k->rodata->stack_mode = o->stack_mode == HS_STACK_NONE ? 0 : o->stack_mode == HS_STACK_DWARF ? 2
				: o->stack_mode == HS_STACK_AUTO ? 3 : 1;
	k->rodata->dwarf_bytes = o->dwarf_bytes;
	k->rodata->wakeup_bytes = u->ring_bytes / 4;
	k->rodata->self_tgid = (uint32_t)getpid();
	err = proc_pid_ns(&dev, &ino);
	if (err == -EXDEV) {
		rec_warnx("/proc is another PID namespace's: /proc/self is not pid %d, which getpid() gives; BPF "
			  "would record other processes than the ones named (mount this namespace's /proc, as "
			  "unshare --pid --fork --mount-proc does)", (int)getpid());
		return err;
	}
	if (err) {
		rec_warnx("cannot read this process's PID namespace (/proc/self/ns/pid): %s", strerror(-err));
		return err;
	}
	k->rodata->ns_dev = dev;
	k->rodata->ns_ino = ino;
	k->rodata->noop = o->noop;
	return 0;
}

/* How allocators get their probes: the best kind of link the kernel has, or the one asked for. */
static int choose_links(struct session *s)
{
	const struct rec_opts *o = s->o;
	struct bpf_way *b = bpf_of(s);

	bpf_choose_links(b, o->probe_links);
	if (o->probe_links != LINKS_AUTO && o->probe_links != b->links_mode) {
		rec_warnx("--probe-links %s: this kernel has no such links (session probes need Linux 6.13, multi 6.6)",
			  o->probe_links == LINKS_SESSION ? "session" : "multi");
		return -EOPNOTSUPP;
	}
	bpf_set_link_types(b);
	if (o->verbose)
		rec_warnx("%s", b->links_mode == LINKS_SESSION ? "allocators get session probes: one program per call, "
								 "the entry decides whether the return runs"
				: b->links_mode == LINKS_MULTI ? "allocators get a uprobe and a uretprobe each, in one "
								 "multi link per library and kind"
							       : "allocators get a uprobe and a uretprobe each");
	return 0;
}

/* The BPF object opened, sized and given its rings: everything before loading. */
static int bpf_open(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	struct bpf_way *b = bpf_of(s);
	int err, ncpu = libbpf_num_possible_cpus();

	libbpf_set_print(o->verbose ? libbpf_print : libbpf_quiet);
	/* --ringbuf-size is shared by the CPUs: each ring is a power of two of at least 256 KiB. */
	u->ring_bytes = 256u << 10;
	while (ncpu > 0 && ((uint64_t)u->ring_bytes << 1) * (uint64_t)ncpu <= (uint64_t)o->ringbuf_mb << 20)
		u->ring_bytes <<= 1;
	b->skel = heapsnap_bpf__open();
	if (!b->skel) {
		err = -errno;
		rec_warnx("failed to open BPF object: %s", strerror(-err));
		return err;
	}
	if (o->stack_mode == HS_STACK_AUTO)
		bpf_map__set_max_entries(b->skel->maps.unw_rows, o->unwind_rows);
	if ((err = set_rodata(s, u)))
		return err;
	bpf_map__set_max_entries(b->skel->maps.live, o->max_live);
	bpf_map__set_max_entries(b->skel->maps.stacks_seen, o->stack_cache);
	err = create_rings(s, u->ring_bytes);
	if (err) {
		rec_warnx("failed to create the per-CPU ring buffers (%u KiB each): %s", u->ring_bytes >> 10, strerror(-err));
		return err;
	}
	if (o->verbose)
		rec_warnx("%d ring buffers of %u KiB, one per CPU", ncpu, u->ring_bytes >> 10);
	bpf_map__set_max_entries(b->skel->maps.dwarf_scratch, (uint32_t)libbpf_num_possible_cpus());
	return choose_links(s);
}

/* BPF: open -> set rodata and map sizes -> load, with the rings in place before any probe. */
static int bpf_start(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	struct bpf_way *b = calloc(1, sizeof(*b));
	int err;

	if (!b)
		return -ENOMEM;
	s->way_state = b;
	if ((err = bpf_open(s, u)))
		return err;
	err = heapsnap_bpf__load(b->skel);
	if (err) {
		char buf[128];

		libbpf_strerror(err, buf, sizeof(buf));
		rec_warnx("failed to load BPF programs: %s%s", buf, o->verbose ? "" : " (run with -v for the verifier log)");
		return err;
	}
	if (o->stack_mode == HS_STACK_AUTO && (err = unw_tables__open(s)))
		return err;
	if (o->sample_rate && (err = fill_thresholds(s))) {
		rec_warnx("failed to fill the sampling thresholds: %s", strerror(-err));
		return err;
	}
	/* Before anything is attached: a running target (-p, -a) calls its allocators from the
	 * first probe on, and a ring not yet in place would drop those events. */
	err = install_rings(s);
	if (err)
		rec_warnx("failed to set up the per-CPU ring buffers: %s", strerror(-err));
	return err;
}

/* ---- attach: the probes for the target, then the process tracepoints ---- */

static void track_pid(struct bpf_way *b, pid_t pid)
{
	uint32_t key = (uint32_t)pid;
	uint8_t one = 1;

	bpf_map_update_elem(bpf_map__fd(b->skel->maps.tracked), &key, &one, BPF_ANY);
}

/* The held command: what it will load, probed before it runs. */
static void attach_command(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	struct bpf_way *b = bpf_of(s);

	/* A pid-bound uprobe misses a fork child until user space attaches for it; probes
	 * bound to no pid and filtered in BPF by the tracked set see it from its first call. */
	b->probe_pid = o->follow_forks ? -1 : s->child;
	track_pid(b, s->child);
	predict_libs(u->exe, &b->libs, &b->nr_libs);
	/* A script or an unlisted image: the system's libc is the best guess for its
	 * interpreter, so its first allocations are not missed either. */
	if (!b->nr_libs && !o->libc) {
		char *libc = find_system_lib("libc.so.6");

		if (libc)
			attach_path(s, b->probe_pid, libc);
		free(libc);
	}
	if (o->libc)
		attach_path(s, b->probe_pid, o->libc);
	for (int i = 0; i < b->nr_libs; i++)
		attach_path(s, b->probe_pid, b->libs[i]);
	attach_path(s, b->probe_pid, u->exe);
	/* Its tables too, while it is held: it may be over before its exec is read. */
	unw_tables__preload(s, u->exe);
	for (int i = 0; i < b->nr_libs; i++)
		unw_tables__preload(s, b->libs[i]);
	for (int i = 0; i < o->nr_probes; i++)
		attach_path(s, b->probe_pid, o->probes[i].lib);
}

/* -p: the running process's mappings, probed. */
static int attach_pid(struct session *s)
{
	const struct rec_opts *o = s->o;
	struct bpf_way *b = bpf_of(s);
	struct proc_map *maps = NULL;
	int nr_maps = 0, err;
	struct proc *p;

	/* Said plainly, before probes are looked for in libraries it cannot list. */
	err = proc_read_maps(o->pid, &maps, &nr_maps);
	proc_maps_free(maps, nr_maps);
	if (err) {
		rec_warnx("cannot read the memory map of process %d (/proc/%d/maps: %s)%s", o->pid, o->pid,
			  strerror(-err), err == -EACCES ? "; another PID namespace, or a kernel thread?" : "");
		return err;
	}
	if (!nr_maps) {
		/* A zombie maps nothing either: said as what it is. */
		if (proc_is_zombie(o->pid))
			rec_warnx("process %d is a zombie: it has exited and its parent (process %d) has not "
				  "reaped it; nothing of it is left to record", o->pid, proc_ppid(o->pid));
		else
			rec_warnx("process %d maps no memory: a kernel thread has no allocator to probe", o->pid);
		return -ESRCH;
	}
	/* Following forks, probes bound to PID would miss a child until user space heard of it
	 * and attached for it (pgbench -C on PostgreSQL: 553 of 569 backends recorded empty);
	 * bound to no pid and filtered in BPF, a child is tracked at its fork, before it runs.
	 * Other processes mapping the same libraries then trap too, and return at once. */
	b->probe_pid = o->follow_forks ? -1 : o->pid;
	p = add_proc(s, o->pid);
	track_pid(b, o->pid);
	if (o->libc)
		attach_path(s, b->probe_pid, o->libc);
	for (int i = 0; i < o->nr_probes; i++)
		attach_path(s, b->probe_pid, o->probes[i].lib);
	if (p)
		rescan_maps(s, p, true, 0);
	return 0;
}

/* -a: the system's allocators, for every process. */
static void attach_host(struct session *s)
{
	const struct rec_opts *o = s->o;
	char *libc = o->libc ? strdup(o->libc) : find_system_lib("libc.so.6");
	char *cxx = find_system_lib("libstdc++.so.6");

	if (libc)
		attach_path(s, -1, libc);
	if (cxx)
		attach_path(s, -1, cxx);
	for (int i = 0; i < o->nr_probes; i++)
		attach_path(s, -1, o->probes[i].lib);
	free(libc);
	free(cxx);
}

/* -p --children: a descendant already running, tracked before its own children are read,
 * so that one it forks from now on is either read then or seen forking by BPF. */
static void attach_descendant(pid_t pid, pid_t ppid, void *ctx)
{
	struct session *s = ctx;
	struct proc *p;

	track_pid(bpf_of(s), pid);
	p = add_proc(s, pid);
	if (p)
		rescan_maps(s, p, true, 0);
}

/* Forks, execs, exits and renames; then mmaps, or else a timer that re-reads the maps. */
static int attach_tracepoints(struct session *s)
{
	struct bpf_way *b = bpf_of(s);
	struct bpf_program *tps[] = {b->skel->progs.on_fork, b->skel->progs.on_exec, b->skel->progs.on_exit,
				     b->skel->progs.on_rename};
	struct bpf_program *mm[] = {b->skel->progs.on_mmap, b->skel->progs.on_mmap_exit, b->skel->progs.on_munmap};
	int err;

	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		struct bpf_link *l = bpf_program__attach(tps[i]);

		if (!l) {
			err = -errno;
			rec_warnx("failed to attach %s: %s", bpf_program__name(tps[i]), strerror(-err));
			return err;
		}
		add_link(b, -2, l, -1);
	}
	err = check_pid_translation(b);
	if (err)
		return err;
	/* Syscall tracepoints need tracefs; mount it where the kernel expects it if absent. */
	if (access("/sys/kernel/tracing/events", F_OK))
		mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL);
	for (size_t i = 0; i < sizeof(mm) / sizeof(mm[0]); i++) {
		struct bpf_link *l = bpf_program__attach(mm[i]);

		if (!l) {
			b->poll_maps = true;
			if (s->o->verbose)
				rec_warnx("cannot attach %s (%s): re-reading maps every 250 ms instead",
					  bpf_program__name(mm[i]), strerror(errno));
			continue;
		}
		add_link(b, -2, l, -1);
	}
	return 0;
}

/* BPF: the probes for the target (the held command, a pid, or every process), then the
 * process tracepoints. */
static int bpf_attach(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int err;

	if (o->argv) {
		attach_command(s, u);
	} else if (o->pid) {
		if ((err = attach_pid(s)))
			return err;
	} else {
		attach_host(s);
	}
	if (!s->nr_probes) {
		rec_warnx("error: no allocator to probe in the target (a static binary with a stripped allocator?); "
			  "name one with --probe LIB:SYMBOL:KIND or --libc PATH");
		return -ENOENT;
	}
	if ((err = attach_tracepoints(s)))
		return err;
	/* After the fork tracepoint: a child forked during the walk is then seen one way or the
	 * other. */
	if (o->pid && o->children && (err = proc_for_each_descendant(o->pid, PROC_DESCENDANTS_MAX, attach_descendant, s)) < 0)
		rec_warnx("cannot list the children of process %d (/proc/%d/task/*/children): %s", o->pid, o->pid,
			  strerror(-err));
	return 0;
}

/* ---- what process tracking and the loop ask of BPF ---- */

/* A process user space found (not a fork child, which BPF tracked at its fork). */
static void bpf_process_tracked(struct session *s, pid_t pid)
{
	if (!s->o->all)
		track_pid(bpf_of(s), pid);
}

/* The pid a tracked process's uprobes are bound to: -1 (filtered in BPF) for -a and for a
 * command or -p whose forks are followed. */
static pid_t bind_pid(const struct session *s, pid_t pid)
{
	if (s->o->all || bpf_of(s)->probe_pid == -1)
		return -1;
	return pid;
}

/* P's mappings, just read: their unwind tables to BPF, and the objects new to P probed. */
static void bpf_mappings(struct session *s, struct proc *p, bool attach)
{
	struct bpf_way *b = bpf_of(s);

	if (b->unw)
		unw_tables__update(s, p);
	if (!attach)
		return;
	for (int k = 0; k < p->nr_maps; k++) {
		const struct proc_map *m = &p->maps[k];
		char path[4200];
		struct object *o;

		snprintf(path, sizeof(path), "/proc/%d/root%s", p->pid, m->path);
		o = objects__get(&s->objs, makedev(m->dev_major, m->dev_minor), m->inode, m->path);
		if (o)
			attach_object(s, bind_pid(s, p->pid), o, path);
	}
}

static void bpf_process_gone(struct session *s, pid_t pid)
{
	detach_pid(bpf_of(s), pid);
}

/* Mappings changed (the mmap tracepoints counted it), or the timer that stands in for them
 * ran out: every live process's maps again. */
static void bpf_polled(struct session *s, uint64_t now, bool tick)
{
	struct bpf_way *b = bpf_of(s);
	uint64_t gen = 0;
	uint32_t zero = 0;

	if ((!bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.maps_gen), &zero, &gen) && gen != b->maps_gen) ||
	    (b->poll_maps && now >= b->next_maps_poll)) {
		b->maps_gen = gen;
		b->next_maps_poll = now + 250000000ull;
		rescan_all_maps(s, true);
	}
}

static void bpf_read_counters(struct session *s)
{
	struct bpf_way *b = bpf_of(s);
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(bpf_of(s)->skel->maps.counters);
	uint64_t *vals;

	if (ncpu <= 0)
		return;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return;
	for (uint32_t k = 0; k < HS_CNT__MAX; k++) {
		uint64_t sum = 0;

		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
		s->cnt[k] = sum;
	}
	free(vals);
	/* Read each second and at the end: said as it grows. */
	b->forks_untracked = __atomic_load_n(&b->skel->bss->forks_untracked, __ATOMIC_RELAXED);
	if (b->forks_untracked > b->forks_untracked_warned) {
		rec_warnx("warning: %" PRIu64 " more fork children not tracked from their fork (lost.forks_untracked, %"
			  PRIu64 " in all): BPF's set of tracked processes (4096) was full; nothing they did is "
			  "recorded", b->forks_untracked - b->forks_untracked_warned,
			  b->forks_untracked);
		b->forks_untracked_warned = b->forks_untracked;
	}
}

static void bpf_add_counters(struct session *s, struct counter_set *c)
{
	struct bpf_way *b = bpf_of(s);

	counter_set__add(c, "probes.attached", (uint64_t)b->nr_links);
	counter_set__add(c, "probes.failed", (uint64_t)b->nr_probe_fail);
	counter_set__add(c, "lost.forks_untracked", b->forks_untracked);
}

/* Letting go of the probes takes the longest: first, before the command is waited for. */
static void bpf_detach(struct session *s)
{
	struct bpf_way *b = bpf_of(s);

	if (!b)
		return;
	destroy_links(b->links, b->nr_links);
	free(b->links);
	b->links = NULL;
	b->nr_links = 0;
}

static void bpf_free(struct session *s)
{
	struct bpf_way *b = bpf_of(s);

	if (!b)
		return;
	bpf_detach(s);
	for (int i = 0; s->rings && i < s->nr_rings; i++)
		ring_unmap(&s->rings[i]);
	for (int i = 0; b->ring_fds && i < s->nr_rings; i++)
		if (b->ring_fds[i] >= 0)
			close(b->ring_fds[i]);
	free(b->ring_fds);
	unw_tables__free(b->unw);
	heapsnap_bpf__destroy(b->skel);
	bpf_objs_free(b);
	hmap_free(&b->attached);
	for (int i = 0; i < b->nr_libs; i++)
		free(b->libs[i]);
	free(b->libs);
	free(b);
	s->way_state = NULL;
}

/* The live view, forked after the load: -a's filter leaves it out as it leaves us out. */
static void bpf_helper_started(struct session *s, pid_t pid)
{
	struct bpf_way *b = bpf_of(s);

	__atomic_store_n(&b->skel->bss->view_tgid, (uint32_t)pid, __ATOMIC_RELEASE);
}

const struct way_ops bpf_way = {
	.name = "bpf",
	.check = bpf_way__check,
	.start = bpf_start,
	.attach = bpf_attach,
	.process_tracked = bpf_process_tracked,
	.mappings = bpf_mappings,
	.process_gone = bpf_process_gone,
	.helper_started = bpf_helper_started,
	.poll_ms = 100,
	/* A full ring drops: events held for the merge go as soon as they are old enough. */
	.held_ms = (int)(MERGE_SLACK_NS / 1000000),
	.polled = bpf_polled,
	.read_counters = bpf_read_counters,
	.add_counters = bpf_add_counters,
	.detach = bpf_detach,
	.free = bpf_free,
};
