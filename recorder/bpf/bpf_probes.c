// SPDX-License-Identifier: MIT
/* The BPF way in: allocator objects and their probes, links of each kind, loading the
 * programs with their rodata and map sizes, and attaching them for a command, a pid or the host. */
#include <sys/prctl.h>

#include "session.h"

/* ---- objects and probes ---- */

struct object *object_get(struct session *s, uint64_t dev, uint64_t ino, const char *path)
{
	struct hmap_slot *slot;
	struct object *o, **v;
	bool created;

	slot = hmap_put(&s->objs_by_id, dev, ino, &created);
	if (!slot)
		return NULL;
	if (!created)
		return (struct object *)(uintptr_t)slot->val;
	/* Each object is allocated on its own: probe records point into it. */
	v = realloc(s->objs, sizeof(*v) * (size_t)(s->nr_objs + 1));
	o = calloc(1, sizeof(*o));
	if (!v || !o) {
		free(o);
		return NULL;
	}
	s->objs = v;
	v[s->nr_objs] = o;
	*o = (struct object){.dev = dev, .ino = ino, .path = strdup(path), .index = s->nr_objs++};
	slot->val = (uint64_t)(uintptr_t)o;
	{
		const char *base = strrchr(path, '/');

		base = base ? base + 1 : path;
		o->is_libc = !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
	}
	return o;
}

static const char *prog_name(enum hs_prog p)
{
	static const char *const n[PROG__COUNT] = {"size1", "size2", "calloc", "realloc", "reallocarray",
						    "rust_realloc", "posix_memalign", "free"};
	return n[p];
}

/* The program for allocator kind P: its entry program, or with SESSION its session program. */
static struct bpf_program *alloc_prog(struct session *s, enum hs_prog p, bool session)
{
	struct heapsnap_bpf *k = s->skel;

	switch (p) {
	case PROG_SIZE1: return session ? k->progs.sess_size1 : k->progs.enter_size1;
	case PROG_SIZE2: return session ? k->progs.sess_size2 : k->progs.enter_size2;
	case PROG_CALLOC: return session ? k->progs.sess_calloc : k->progs.enter_calloc;
	case PROG_REALLOC: return session ? k->progs.sess_realloc : k->progs.enter_realloc;
	case PROG_REALLOCARRAY: return session ? k->progs.sess_reallocarray : k->progs.enter_reallocarray;
	case PROG_RUST_REALLOC: return session ? k->progs.sess_rust_realloc : k->progs.enter_rust_realloc;
	case PROG_POSIX_MEMALIGN: return session ? k->progs.sess_posix_memalign : k->progs.enter_posix_memalign;
	case PROG_FREE: return session ? k->progs.sess_free : k->progs.enter_free;
	default: return NULL;
	}
}

static void link_ent__destroy(struct link_ent *e)
{
	if (e->link)
		bpf_link__destroy(e->link);
	else if (e->fd >= 0)
		close(e->fd);
}

struct link_share {
	struct link_ent *links;
	int first, nr, step;
};

static void *destroy_share(void *arg)
{
	struct link_share *sh = arg;

	for (int i = sh->first; i < sh->nr; i += sh->step)
		link_ent__destroy(&sh->links[i]);
	return NULL;
}

/* Detaching a probe waits for RCU grace periods, 30 to 90 ms a link here: the links are
 * let go from several threads at once, so that the waits overlap (recording a small C++
 * program took 0.87 s, now 0.39 s). */
void destroy_links(struct link_ent *links, int nr)
{
	enum { MAX_THREADS = 16 };
	struct link_share sh[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	bool started[MAX_THREADS] = {0};
	int n = nr < MAX_THREADS ? nr : MAX_THREADS;

	for (int k = 0; k < n; k++) {
		sh[k] = (struct link_share){.links = links, .first = k, .nr = nr, .step = n};
		started[k] = !pthread_create(&th[k], NULL, destroy_share, &sh[k]);
	}
	for (int k = 0; k < n; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		else
			destroy_share(&sh[k]);
	}
}

/* Takes L, or else the link fd FD. */
static int add_link(struct session *s, pid_t pid, struct bpf_link *l, int fd)
{
	struct link_ent *v = realloc(s->links, sizeof(*v) * (size_t)(s->nr_links + 1));
	struct link_ent e = {.pid = pid, .link = l, .fd = fd};

	if (!v) {
		link_ent__destroy(&e);
		return -ENOMEM;
	}
	s->links = v;
	v[s->nr_links++] = e;
	return 0;
}

/* The kernel's numbers for session and multi uprobe links, from its BTF: 0 for what it
 * lacks. Session programs also need the kfunc bpf_session_is_return(). */
static void find_link_types(uint32_t *session, uint32_t *multi)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool kfunc;
	int id;

	*session = *multi = 0;
	if (!btf)
		return;
	kfunc = btf__find_by_name_kind(btf, "bpf_session_is_return", BTF_KIND_FUNC) > 0;
	id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
	if (id > 0) {
		const struct btf_type *t = btf__type_by_id(btf, (uint32_t)id);
		const struct btf_enum *e = btf_enum(t);

		for (int i = 0; i < btf_vlen(t); i++) {
			const char *name = btf__name_by_offset(btf, e[i].name_off);

			if (!strcmp(name, "BPF_TRACE_UPROBE_SESSION") && kfunc)
				*session = (uint32_t)e[i].val;
			else if (!strcmp(name, "BPF_TRACE_UPROBE_MULTI"))
				*multi = (uint32_t)e[i].val;
		}
	}
	btf__free(btf);
}

/* BPF_LINK_CREATE's attributes for a uprobe_multi link (Linux 6.6), laid out as the
 * kernel's union bpf_attr has them; the kernel takes a shorter bpf_attr as zero-filled. */
struct uprobe_multi_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, multi_flags, pid, pad;
};

/* The return program of allocator kind P. */
static struct bpf_program *ret_prog(struct session *s, enum hs_prog p)
{
	return p == PROG_POSIX_MEMALIGN ? s->skel->progs.ret_posix_memalign
	       : p == PROG_FREE		? s->skel->progs.ret_free_wrapper
					: s->skel->progs.ret_ptr;
}

/* One uprobe_multi link (Linux 6.6) for every function of O that kind P covers, in
 * OPEN_PATH, for PID (-1: every process): a session probe, or with the classic programs an
 * entry probe, or with RET a return probe on those that need one. One link for them all
 * means one wait for the kernel to let go of them at the end, not one per function.
 * Returns 1 when attached, 0 when O has no such function, or -errno. */
static int attach_group(struct session *s, pid_t pid, const char *open_path, const struct object *o,
			enum hs_prog p, bool ret)
{
	bool session = s->links_mode == LINKS_SESSION;
	uint64_t *offs = calloc((size_t)o->funcs.nr, sizeof(*offs));
	uint64_t *cookies = calloc((size_t)o->funcs.nr, sizeof(*cookies));
	uint32_t n = 0;
	int fd, err = 0;

	if (!offs || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < o->funcs.nr; i++) {
		const struct alloc_func *f = &o->funcs.v[i];

		if (f->prog != p || (ret && f->prog == PROG_FREE && !f->wrapper))
			continue;
		offs[n] = f->probe_offset;
		cookies[n++] = f->kind | (session ? HS_COOKIE_SESSION : 0) | (f->leaf ? HS_COOKIE_LEAF : 0) |
			       (f->wrapper ? HS_COOKIE_WRAPPER : 0);
	}
	if (n) {
		struct uprobe_multi_attr a = {
			.prog_fd = (uint32_t)bpf_program__fd(ret ? ret_prog(s, p) : alloc_prog(s, p, session)),
			.attach_type = s->links_type,
			.path = (uint64_t)(uintptr_t)open_path,
			.offsets = (uint64_t)(uintptr_t)offs,
			.cookies = (uint64_t)(uintptr_t)cookies,
			.cnt = n,
			.multi_flags = ret ? 1 : 0, /* BPF_F_UPROBE_MULTI_RETURN */
			.pid = pid > 0 ? (uint32_t)pid : 0,
		};

		fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
		if (fd < 0)
			err = -errno;
		else
			err = add_link(s, pid, NULL, fd) ? -ENOMEM : 1;
		if (err < 0)
			rec_warnx("failed to attach %s to %s (%s functions): %s%s",
			      session ? "session probes" : ret ? "return probes" : "probes", open_path, prog_name(p),
			      strerror(-err), session ? "; using a uprobe and a uretprobe each" : "");
	}
out:
	free(offs);
	free(cookies);
	return err;
}

/* A classic uprobe (RET false) or uretprobe on F. */
static int attach_one(struct session *s, pid_t pid, const char *path, const struct alloc_func *f, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct bpf_program *prog;
	struct bpf_link *l;
	/* The return probe shares the entry probe's address: sp is unchanged there, and one
	 * trap serves both. */
	uint64_t off = f->probe_offset;

	uo.retprobe = ret;
	uo.bpf_cookie = f->kind | (f->wrapper ? HS_COOKIE_WRAPPER : 0);
	prog = ret ? ret_prog(s, f->prog) : alloc_prog(s, f->prog, false);
	l = bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &uo);
	if (!l) {
		int err = -errno;
		char buf[128];

		libbpf_strerror(err, buf, sizeof(buf));
		rec_warnx("failed to attach %s to %s:%s: %s", ret ? "uretprobe" : "uprobe", path, f->name, buf);
		s->nr_probe_fail++;
		return err;
	}
	return add_link(s, pid, l, -1);
}

static void note_probe(struct session *s, struct object *o, const struct alloc_func *f)
{
	struct hs_probe p = {.symbol = f->name, .path = o->path, .offset = f->probe_offset,
			     .build_id = {o->build_id, (uint32_t)o->build_id_len}, .kind = f->kind};

	if (s->header_written) {
		struct hs_record r = {.type = HS_REC_PROBE, .time = ticks(s, mono_ns()), .probe = p};

		write_rec(s, &r);
		return;
	}
	struct hs_probe *v = realloc(s->probes, sizeof(*v) * (size_t)(s->nr_probes + 1));

	if (v) {
		s->probes = v;
		v[s->nr_probes++] = p;
	}
}

void scan_object(struct session *s, struct object *o, const char *open_path)
{
	int ret;

	if (o->scanned)
		return;
	o->scanned = true;
	/* OPEN_PATH goes through the /proc/PID/root of the process that mapped it, gone if
	 * that process has exited: then our own path, if it leads to that file. What is
	 * scanned stays as scanned, for every process that maps the object later. */
	if (access(open_path, R_OK) && strcmp(open_path, o->path) && same_file(o->path, o->dev, o->ino))
		open_path = o->path;
	ret = hs_read_build_id(open_path, o->build_id, sizeof(o->build_id));
	o->build_id_len = ret > 0 ? ret : 0;
	/* In-process, an object is only named and identified: nothing is probed. */
	ret = s->skel ? alloc_funcs__scan(open_path, o->is_libc, !s->o->probe_entry, &o->funcs) : 0;
	if (ret < 0 && ret != -ENOEXEC && s->o->verbose)
		rec_warnx("cannot read symbols of %s: %s", open_path, strerror(-ret));
	/* --probe LIB:SYMBOL:kind, for the object that is LIB. */
	for (int i = 0; i < s->o->nr_probes; i++) {
		const struct custom_probe *cp = &s->o->probes[i];
		struct stat st;
		struct alloc_func *v;
		uint64_t off;

		if (stat(cp->lib, &st) || (uint64_t)st.st_dev != o->dev || (uint64_t)st.st_ino != o->ino)
			continue;
		if (elf_find_symbol(open_path, cp->symbol, &off))
			continue;
		v = realloc(o->funcs.v, sizeof(*v) * (size_t)(o->funcs.nr + 1));
		if (!v)
			continue;
		o->funcs.v = v;
		v[o->funcs.nr++] = (struct alloc_func){.name = strdup(cp->symbol), .offset = off, .probe_offset = off,
						       .prog = cp->prog, .kind = cp->kind,
						       .wrapper = cp->prog == PROG_FREE};
	}
}

/* Attaches every allocator probe of object O for PID (-1: every process). */
void attach_object(struct session *s, pid_t pid, struct object *o, const char *open_path)
{
	bool created;
	int grouped[PROG__COUNT] = {0}; /* by kind: 1 attached in a group, -1 failed, 0 none */
	int idx = o->index, ok = 0;

	hmap_put(&s->attached, (uint64_t)(int64_t)pid, (uint64_t)idx, &created);
	if (!created)
		return;
	scan_object(s, o, open_path);
	for (int p = 0; s->links_mode != LINKS_PERF && p < PROG__COUNT; p++) {
		int r = attach_group(s, pid, open_path, o, (enum hs_prog)p, false);

		if (r > 0 && s->links_mode == LINKS_MULTI && attach_group(s, pid, open_path, o, (enum hs_prog)p, true) < 0) {
			/* Entries without their returns would count every call as nested. */
			link_ent__destroy(&s->links[--s->nr_links]);
			r = -1;
		}
		grouped[p] = r > 0 ? 1 : r < 0 ? -1 : 0;
	}
	for (int i = 0; i < o->funcs.nr; i++) {
		const struct alloc_func *f = &o->funcs.v[i];
		bool need_ret = f->prog != PROG_FREE || f->wrapper;

		if (grouped[f->prog] < 0 && s->links_mode == LINKS_MULTI) {
			s->nr_probe_fail++; /* programs made for multi links attach no other way */
			continue;
		}
		if (grouped[f->prog] <= 0 && attach_one(s, pid, open_path, f, false))
			continue;
		if (grouped[f->prog] <= 0 && need_ret && attach_one(s, pid, open_path, f, true))
			continue;
		ok++;
		if (pid == s->o->pid || pid == s->child || pid == -1) {
			if (!o->listed)
				note_probe(s, o, f);
		}
		if (s->o->verbose)
			rec_warnx("probe %s:%s (%s) at file offset 0x%" PRIx64 "%s", o->path, f->name, prog_name(f->prog),
			      f->probe_offset,
			      grouped[f->prog] > 0 ? (s->links_mode == LINKS_SESSION ? " (session)"
						      : need_ret ? " + return (multi)" : " (multi)")
			      : need_ret ? " + return" : "");
	}
	if (ok && (pid == s->o->pid || pid == s->child || pid == -1) && !o->listed) {
		const char *base = strrchr(o->path, '/');

		o->listed = true; /* probes of this object are listed once */
		rec_warnx("probing %d allocator functions in %s", ok, base ? base + 1 : o->path);
	}
}

void detach_pid(struct session *s, pid_t pid)
{
	int j = 0;

	for (int i = 0; i < s->nr_links; i++) {
		if (s->links[i].pid == pid)
			link_ent__destroy(&s->links[i]);
		else
			s->links[j++] = s->links[i];
	}
	s->nr_links = j;
}

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
	int fd = bpf_map__fd(s->skel->maps.thresholds);
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

static void attach_path(struct session *s, pid_t pid, const char *path)
{
	struct stat st;
	struct object *o;

	if (stat(path, &st))
		return;
	o = object_get(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino, path);
	if (o)
		attach_object(s, pid, o, path);
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

int check_privileges(void)
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
static int check_pid_translation(struct session *s)
{
	char comm[16] = "";
	uint64_t want = (uint64_t)getpid() << 32 | (uint64_t)gettid(), seen;

	if (!s->skel->rodata->ns_ino)
		return 0;
	s->skel->bss->self_seen = 0;
	if (prctl(PR_GET_NAME, comm) || prctl(PR_SET_NAME, comm)) {
		int err = -errno;

		rec_warnx("cannot check how BPF numbers processes in this PID namespace (prctl PR_SET_NAME): %s",
			  strerror(-err));
		return err;
	}
	seen = __atomic_load_n(&s->skel->bss->self_seen, __ATOMIC_ACQUIRE);
	if (seen == want)
		return 0;
	rec_warnx("BPF does not number processes as this PID namespace does (it saw the recorder as %s%u/%u, "
		  "getpid()/gettid() say %u/%u): it would record nothing; stopping",
		  seen == ~0ull ? "inconsistently, " : "", (unsigned)(seen >> 32), (unsigned)seen, (unsigned)(want >> 32),
		  (unsigned)want);
	return -ESRCH;
}

/* BPF: open -> set rodata and map sizes -> load, with the rings in place before any probe. */
int bpf_start(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int err, ncpu = libbpf_num_possible_cpus();

	libbpf_set_print(o->verbose ? libbpf_print : libbpf_quiet);
	/* --ringbuf-size is shared by the CPUs: each ring is a power of two of at least 256 KiB. */
	u->ring_bytes = 256u << 10;
	while (ncpu > 0 && ((uint64_t)u->ring_bytes << 1) * (uint64_t)ncpu <= (uint64_t)o->ringbuf_mb << 20)
		u->ring_bytes <<= 1;
	s->skel = heapsnap_bpf__open();
	if (!s->skel) {
		err = -errno;
		rec_warnx("failed to open BPF object: %s", strerror(-err));
		return err;
	}
	s->skel->rodata->filter_pids = !o->all;
	s->skel->rodata->follow_forks = o->follow_forks;
	s->skel->rodata->sample_rate = o->sample_rate;
	s->skel->rodata->stack_depth = o->max_stack;
	s->skel->rodata->stack_mode = o->stack_mode == HS_STACK_NONE ? 0 : o->stack_mode == HS_STACK_DWARF ? 2
				      : o->stack_mode == HS_STACK_AUTO ? 3 : 1;
	if (o->stack_mode == HS_STACK_AUTO)
		bpf_map__set_max_entries(s->skel->maps.unw_rows, o->unwind_rows);
	s->skel->rodata->dwarf_bytes = o->dwarf_bytes;
	s->skel->rodata->wakeup_bytes = u->ring_bytes / 4;
	s->skel->rodata->self_tgid = (uint32_t)getpid();
	{
		uint64_t dev, ino;

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
		s->skel->rodata->ns_dev = dev;
		s->skel->rodata->ns_ino = ino;
	}
	s->skel->rodata->noop = o->noop;
	bpf_map__set_max_entries(s->skel->maps.live, o->max_live);
	bpf_map__set_max_entries(s->skel->maps.stacks_seen, o->stack_cache);
	err = create_rings(s, u->ring_bytes);
	if (err) {
		rec_warnx("failed to create the per-CPU ring buffers (%u KiB each): %s", u->ring_bytes >> 10, strerror(-err));
		return err;
	}
	if (o->verbose)
		rec_warnx("%d ring buffers of %u KiB, one per CPU", ncpu, u->ring_bytes >> 10);
	bpf_map__set_max_entries(s->skel->maps.dwarf_scratch, (uint32_t)libbpf_num_possible_cpus());
	{
		uint32_t session_type, multi_type;

		find_link_types(&session_type, &multi_type);
		s->links_mode = LINKS_PERF;
		if ((o->probe_links == LINKS_AUTO || o->probe_links == LINKS_SESSION) && session_type) {
			s->links_mode = LINKS_SESSION;
			s->links_type = session_type;
		} else if ((o->probe_links == LINKS_AUTO || o->probe_links == LINKS_MULTI) && multi_type) {
			s->links_mode = LINKS_MULTI;
			s->links_type = multi_type;
		}
	}
	if (o->probe_links != LINKS_AUTO && o->probe_links != s->links_mode) {
		rec_warnx("--probe-links %s: this kernel has no such links (session probes need Linux 6.13, multi 6.6)",
		      o->probe_links == LINKS_SESSION ? "session" : "multi");
		return -EOPNOTSUPP;
	}
	for (int p = 0; p < PROG__COUNT; p++) {
		struct bpf_program *sp = alloc_prog(s, (enum hs_prog)p, true), *cp = alloc_prog(s, (enum hs_prog)p, false);

		if (s->links_mode == LINKS_SESSION)
			bpf_program__set_expected_attach_type(sp, (enum bpf_attach_type)s->links_type);
		else
			bpf_program__set_autoload(sp, false);
		if (s->links_mode == LINKS_MULTI) {
			bpf_program__set_expected_attach_type(cp, (enum bpf_attach_type)s->links_type);
			bpf_program__set_expected_attach_type(ret_prog(s, (enum hs_prog)p), (enum bpf_attach_type)s->links_type);
		}
	}
	if (o->verbose)
		rec_warnx("%s", s->links_mode == LINKS_SESSION ? "allocators get session probes: one program per call, "
							     "the entry decides whether the return runs"
			    : s->links_mode == LINKS_MULTI ? "allocators get a uprobe and a uretprobe each, in one "
							     "multi link per library and kind"
							   : "allocators get a uprobe and a uretprobe each");
	err = heapsnap_bpf__load(s->skel);
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

/* BPF: the probes for the target (the held command, a pid, or every process), then the
 * process tracepoints. */
int bpf_attach(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int err;

	if (o->argv) {
		uint32_t key = (uint32_t)s->child;
		uint8_t one = 1;

		/* A pid-bound uprobe misses a fork child until user space attaches for it; probes
		 * bound to no pid and filtered in BPF by the tracked set see it from its first call. */
		s->probe_pid = o->follow_forks ? -1 : s->child;
		bpf_map_update_elem(bpf_map__fd(s->skel->maps.tracked), &key, &one, BPF_ANY);
		predict_libs(u->exe, &u->libs, &u->nr_libs);
		/* A script or an unlisted image: the system's libc is the best guess for its
		 * interpreter, so its first allocations are not missed either. */
		if (!u->nr_libs && !o->libc) {
			char *libc = find_system_lib("libc.so.6");

			if (libc)
				attach_path(s, s->probe_pid, libc);
			free(libc);
		}
		if (o->libc)
			attach_path(s, s->probe_pid, o->libc);
		for (int i = 0; i < u->nr_libs; i++)
			attach_path(s, s->probe_pid, u->libs[i]);
		attach_path(s, s->probe_pid, u->exe);
		for (int i = 0; i < o->nr_probes; i++)
			attach_path(s, s->probe_pid, o->probes[i].lib);
	} else if (o->pid) {
		uint32_t key = (uint32_t)o->pid;
		uint8_t one = 1;
		struct proc *p;
		struct proc_map *maps = NULL;
		int nr_maps = 0;

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
		p = add_proc(s, o->pid);
		bpf_map_update_elem(bpf_map__fd(s->skel->maps.tracked), &key, &one, BPF_ANY);
		if (o->libc)
			attach_path(s, o->pid, o->libc);
		for (int i = 0; i < o->nr_probes; i++)
			attach_path(s, o->pid, o->probes[i].lib);
		if (p)
			rescan_maps(s, p, true, 0);
	} else {
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
	if (!s->nr_probes) {
		rec_warnx("error: no allocator to probe in the target (a static binary with a stripped allocator?); "
		      "name one with --probe LIB:SYMBOL:KIND or --libc PATH");
		return -ENOENT;
	}
	struct bpf_program *tps[] = {s->skel->progs.on_fork, s->skel->progs.on_exec, s->skel->progs.on_exit,
				     s->skel->progs.on_rename};
	struct bpf_program *mm[] = {s->skel->progs.on_mmap, s->skel->progs.on_mmap_exit, s->skel->progs.on_munmap};

	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		struct bpf_link *l = bpf_program__attach(tps[i]);

		if (!l) {
			err = -errno;
			rec_warnx("failed to attach %s: %s", bpf_program__name(tps[i]), strerror(-err));
			return err;
		}
		add_link(s, -2, l, -1);
	}
	err = check_pid_translation(s);
	if (err)
		return err;
	/* Syscall tracepoints need tracefs; mount it where the kernel expects it if absent. */
	if (access("/sys/kernel/tracing/events", F_OK))
		mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL);
	for (size_t i = 0; i < sizeof(mm) / sizeof(mm[0]); i++) {
		struct bpf_link *l = bpf_program__attach(mm[i]);

		if (!l) {
			s->poll_maps = true;
			if (o->verbose)
				rec_warnx("cannot attach %s (%s): re-reading maps every 250 ms instead",
				      bpf_program__name(mm[i]), strerror(errno));
			continue;
		}
		add_link(s, -2, l, -1);
	}
	return 0;
}
