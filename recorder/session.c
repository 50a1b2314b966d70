// SPDX-License-Identifier: MIT
/* The recording session: open -> set rodata and map sizes -> load -> attach -> poll,
 * turning ring-buffer events into record-file records. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/capability.h>

#include "buildid.h"
#include "heapsnap.h"
#include "heapsnap.skel.h"
#include "hmap.h"
#include "procfs.h"
#include "ptrmap.h"
#include "record.h"
#include "recorder.h"
#include "preload.h"
#include "signals.h"

#define TICK_NS 1000ull

/* An ELF file some target maps: scanned once for allocator functions, whatever pids map it. */
struct object {
	uint64_t dev, ino;
	char *path;
	bool is_libc, scanned;
	bool listed; /* its probes are in the file and were announced */
	int index;   /* in session.objs */
	struct alloc_func_list funcs;
	uint8_t build_id[HS_BUILD_ID_MAX];
	int build_id_len;
};

struct proc {
	pid_t pid;
	bool alive;
	struct proc_map *maps;
	int nr_maps;
	/* As last written: what a fork child that is gone before /proc is read inherits. */
	char *comm, *cmdline, *exe;
};

/* A live block, recording every event: user space keeps the live set then. */
struct live_info {
	uint64_t size, stack_id;
	uint32_t kind, next_free;
};

/* An attached probe: a libbpf link, or the fd of a link made with bpf() directly. */
struct link_ent {
	pid_t pid;
	struct bpf_link *link;
	int fd;
};

struct session {
	const struct rec_opts *o;
	struct heapsnap_bpf *skel;
	struct ring *rings; /* one per possible CPU */
	int *ring_fds;
	int epfd;
	int nr_rings;
	uint32_t ring_bytes;
	struct record_writer *w;
	bool header_written;
	uint64_t mono_start;

	struct hmap stacks; /* bpf stack hash -> id << 1 | written */
	uint64_t next_stack_id;
	uint64_t last_hash, last_id; /* the previous lookup in stacks */
	struct hmap dwarf_windows;   /* content hash of a dwarf window -> stack id */
	/* (pid, ptr) -> index into pool. The index is the block's slot in the file: the pool
	 * reuses freed indexes first, so slots stay as few as the blocks live at once. */
	struct ptrmap ulive;
	struct hmap pending;         /* (pid, tid) -> pool index of the block its realloc released */
	struct live_info *pool;
	uint32_t nr_pool, cap_pool, pool_free;
	uint64_t user_unknown_frees;
	uint32_t last_pid;           /* -a: the previous event's process, known to be tracked */
	struct hmap tids;     /* (pid, tid) already named */
	struct hmap objs_by_id; /* (dev, ino) -> struct object * */
	struct hmap attached;   /* (pid, object index) */
	struct object **objs;
	int nr_objs;
	struct proc *procs;
	int nr_procs;
	struct hmap proc_idx; /* pid -> index + 1 in procs: -a tracks every process of the host */
	struct link_ent *links;
	int nr_links;
	/* How allocator probes are attached, and the kernel's attach type for it, read from its
	 * BTF: the uapi headers and the libbpf this builds against predate both. */
	enum probe_links links_mode;
	uint32_t links_type;
	struct hs_probe *probes; /* for the session header */
	int nr_probes;
	int nr_probe_fail;

	double live_est, peak_est;
	uint64_t peak_time;
	uint64_t n_alloc, n_free, stacks_written;
	double bytes_alloc;
	uint64_t cnt[HS_CNT__MAX], cnt_warned[HS_CNT__MAX];
	uint64_t maps_gen;
	bool poll_maps; /* no mmap tracepoints: re-read maps on a timer */
	uint64_t next_maps_poll;

	pid_t child;
	pid_t probe_pid; /* the pid uprobes are bound to for a command: -1 when following forks */
	int child_status;
	bool child_reaped;
	int err; /* first fatal error, -errno */
	struct rec_signals sig; /* what signals asked for, read from the signalfd */
	enum rec_via via;       /* the way in chosen, and why (in the file's header) */
	const char *via_why;
	struct preload *pre;    /* in-process: the memory shared with the targets */
	char *lib;              /* in-process: libheapsnap.so */
};

/* In-process rings: one per thread of the targets at once, claimed at its first event.
 * Memory is touched only as rings are used. */
#define PRELOAD_RINGS 256
#define PRELOAD_RING_BYTES (1u << 20)

static const char *const counter_names[HS_CNT__MAX] = {
	[HS_CNT_RINGBUF_FULL] = "lost.ringbuf_full",
	[HS_CNT_LIVE_FULL] = "lost.live_map_full",
	[HS_CNT_STACK_TRUNCATED] = "stacks.cut_at_max_stack",
	[HS_CNT_MISSED_URETPROBE] = "lost.missed_uretprobe",
	[HS_CNT_UNKNOWN_FREE] = "frees.unknown",
	[HS_CNT_STACK_ERROR] = "stacks.fp_walk_stopped",
	[HS_CNT_THREAD_FULL] = "lost.thread_map_full",
	[HS_CNT_ALLOC_CALLS] = "calls.alloc",
	[HS_CNT_FREE_CALLS] = "calls.free",
	[HS_CNT_NESTED] = "calls.nested",
	[HS_CNT_SAMPLED] = "sampler.sampled",
	[HS_CNT_FAILED_ALLOC] = "calls.failed_alloc",
	[HS_CNT_STACKS_NEW] = "stacks.sent",
	[HS_CNT_DWARF_TRUNCATED] = "stacks.dwarf_window_short",
};

static void warnx(const char *fmt, ...)
{
	va_list ap;

	fputs("heapsnap-record: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t ticks(const struct session *s, uint64_t ns)
{
	return ns > s->mono_start ? (ns - s->mono_start) / TICK_NS : 0;
}

static void write_rec(struct session *s, const struct hs_record *r)
{
	int err;

	if (s->err)
		return;
	err = record_writer__write(s->w, r);
	if (err) {
		s->err = err;
		warnx("failed to write %s: %s; stopping", s->o->output, strerror(-err));
	}
}

/* ---- objects and probes ---- */

static struct object *object_get(struct session *s, uint64_t dev, uint64_t ino, const char *path)
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
static void destroy_links(struct link_ent *links, int nr)
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
			warnx("failed to attach %s to %s (%s functions): %s%s",
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
		warnx("failed to attach %s to %s:%s: %s", ret ? "uretprobe" : "uprobe", path, f->name, buf);
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

static void scan_object(struct session *s, struct object *o, const char *open_path)
{
	int ret;

	if (o->scanned)
		return;
	o->scanned = true;
	ret = hs_read_build_id(open_path, o->build_id, sizeof(o->build_id));
	o->build_id_len = ret > 0 ? ret : 0;
	ret = alloc_funcs__scan(open_path, o->is_libc, !s->o->probe_entry, &o->funcs);
	if (ret < 0 && ret != -ENOEXEC && s->o->verbose)
		warnx("cannot read symbols of %s: %s", open_path, strerror(-ret));
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
static void attach_object(struct session *s, pid_t pid, struct object *o, const char *open_path)
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
			warnx("probe %s:%s (%s) at file offset 0x%" PRIx64 "%s", o->path, f->name, prog_name(f->prog),
			      f->probe_offset,
			      grouped[f->prog] > 0 ? (s->links_mode == LINKS_SESSION ? " (session)"
						      : need_ret ? " + return (multi)" : " (multi)")
			      : need_ret ? " + return" : "");
	}
	if (ok && (pid == s->o->pid || pid == s->child || pid == -1) && !o->listed) {
		const char *base = strrchr(o->path, '/');

		o->listed = true; /* probes of this object are listed once */
		warnx("probing %d allocator functions in %s", ok, base ? base + 1 : o->path);
	}
}

static void detach_pid(struct session *s, pid_t pid)
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

/* ---- processes and mappings ---- */

static struct proc *proc_find(struct session *s, pid_t pid)
{
	struct hmap_slot *slot = hmap_find(&s->proc_idx, (uint64_t)pid, 0);

	return slot ? &s->procs[slot->val - 1] : NULL;
}

static bool same_map(const struct proc_map *a, const struct proc_map *b)
{
	return a->start == b->start && a->end == b->end && a->offset == b->offset && a->inode == b->inode;
}

static void write_mapping(struct session *s, pid_t pid, const struct proc_map *m, uint64_t now)
{
	struct hs_record r = {.type = HS_REC_MAPPING, .time = now, .pid = (uint32_t)pid};
	uint8_t bid[HS_BUILD_ID_MAX];
	char path[128];
	int fd, n = 0;

	/* map_files opens the very file mapped, even if it was replaced or deleted since. */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* The process may be gone already: the file by path, if it is still the same inode. */
		struct stat st;

		if (!stat(m->path, &st) && (uint64_t)st.st_ino == m->inode)
			fd = open(m->path, O_RDONLY | O_CLOEXEC);
	}
	if (fd >= 0) {
		n = hs_read_build_id_fd(fd, bid, sizeof(bid));
		close(fd);
	}
	r.mapping.start = m->start;
	r.mapping.end = m->end;
	r.mapping.offset = m->offset;
	r.mapping.inode = m->inode;
	r.mapping.path = m->path;
	r.mapping.build_id = (struct hs_bytes){bid, n > 0 ? (uint32_t)n : 0};
	write_rec(s, &r);
}

/* The pid a tracked process's uprobes are bound to: -1 (filtered in BPF) for -a and for a
 * command whose forks are followed. */
static pid_t bind_pid(const struct session *s, pid_t pid)
{
	if (s->o->all || (s->child && s->probe_pid == -1))
		return -1;
	return pid;
}

/* Re-reads PID's maps: writes what appeared and vanished, and probes new objects. */
static void rescan_maps(struct session *s, struct proc *p, bool attach)
{
	struct proc_map *nm = NULL;
	int nn = 0, i = 0, j = 0;
	uint64_t now = ticks(s, mono_ns());

	if (proc_read_maps(p->pid, &nm, &nn))
		return;
	/* A process always has mappings; none means it has exited and its exit event is
	 * still waiting to be merged. Its mappings stay as they were. */
	if (!nn) {
		proc_maps_free(nm, nn);
		return;
	}
	if (s->header_written) {
		/* Both lists are sorted by start address. */
		while (i < p->nr_maps || j < nn) {
			if (i < p->nr_maps && j < nn && same_map(&p->maps[i], &nm[j])) {
				i++, j++;
			} else if (j >= nn || (i < p->nr_maps && p->maps[i].start <= nm[j].start)) {
				struct hs_record r = {.type = HS_REC_UNMAP, .time = now, .pid = (uint32_t)p->pid};

				r.unmap.start = p->maps[i].start;
				r.unmap.end = p->maps[i].end;
				write_rec(s, &r);
				i++;
			} else {
				write_mapping(s, p->pid, &nm[j++], now);
			}
		}
	}
	proc_maps_free(p->maps, p->nr_maps);
	p->maps = nm;
	p->nr_maps = nn;
	if (!attach || !s->skel)
		return; /* in-process: nothing to probe */
	for (int k = 0; k < nn; k++) {
		char path[4200];
		struct object *o;

		snprintf(path, sizeof(path), "/proc/%d/root%s", p->pid, nm[k].path);
		o = object_get(s, makedev(nm[k].dev_major, nm[k].dev_minor), nm[k].inode, nm[k].path);
		if (o)
			attach_object(s, bind_pid(s, p->pid), o, path);
	}
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/* An exec event's arguments, NUL-separated, as one line. */
static char *event_args(const struct hs_proc_event *e)
{
	uint32_t n = e->args_len < HS_EXEC_ARGS_MAX ? e->args_len : HS_EXEC_ARGS_MAX;
	char *v = n ? malloc(n + 1) : NULL;

	if (!v)
		return NULL;
	memcpy(v, e->args, n);
	while (n && !v[n - 1])
		n--;
	v[n] = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!v[i])
			v[i] = ' ';
	return v;
}

/* The absolute path of an exec'd image no process showed before, if the name exec was given
 * still leads to that file (DEV, the inode). A relative name is looked up from the process's
 * working directory, or from its parent's, which it inherited and which usually outlives it. */
static char *exec_path(const struct hs_proc_event *e, uint64_t dev)
{
	char name[HS_EXEC_PATH_MAX + 1], cand[3][HS_EXEC_PATH_MAX + 64];
	struct stat st;
	int n = 0;

	memcpy(name, e->path, HS_EXEC_PATH_MAX);
	name[HS_EXEC_PATH_MAX] = 0;
	if (name[0] == '/') {
		snprintf(cand[n++], sizeof(cand[0]), "%s", name);
	} else if (name[0]) {
		snprintf(cand[n++], sizeof(cand[0]), "/proc/%u/cwd/%s", e->h.pid, name);
		if (e->ppid)
			snprintf(cand[n++], sizeof(cand[0]), "/proc/%u/cwd/%s", e->ppid, name);
	}
	for (int i = 0; i < n; i++)
		if (!stat(cand[i], &st) && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == e->exe_ino)
			return realpath(cand[i], NULL);
	return NULL;
}

/* What /proc says of PID while it lives; else what its event carried (an exec's name,
 * path and arguments; a fork's name), and for a fork child what its parent was. */
static void write_process(struct session *s, pid_t pid, uint32_t origin, pid_t ppid, const struct hs_proc_event *e)
{
	struct hs_record r = {.type = HS_REC_PROCESS, .time = ticks(s, mono_ns()), .pid = (uint32_t)pid};
	char *comm = proc_read_string(pid, "comm"), *cmdline = proc_read_string(pid, "cmdline");
	char *exe = proc_exe(pid), path[64], ecomm[17];
	struct proc *p = proc_find(s, pid), *parent = ppid > 0 ? proc_find(s, ppid) : NULL;
	uint8_t bid[HS_BUILD_ID_MAX];
	int n;

	/* An exiting process reads as empty strings: that says nothing. */
	if (comm && !*comm)
		free(comm), comm = NULL;
	if (cmdline && !*cmdline)
		free(cmdline), cmdline = NULL;
	if (e) {
		memcpy(ecomm, e->comm, 16);
		ecomm[16] = 0;
		if (!comm || e->h.type == HS_EV_EXEC) {
			free(comm);
			comm = dup_or_null(ecomm);
		}
		if (!cmdline && e->h.type == HS_EV_EXEC)
			cmdline = event_args(e);
		if (!exe && e->h.type == HS_EV_EXEC)
			exe = exec_path(e, makedev(e->exe_dev >> 20, e->exe_dev & 0xfffff));
		if (!exe && e->h.type == HS_EV_EXEC)
			exe = strndup(e->path, sizeof(e->path));
	}
	if (parent && origin == HS_PROC_FORKED) {
		if (!comm)
			comm = dup_or_null(parent->comm);
		if (!cmdline)
			cmdline = dup_or_null(parent->cmdline);
		if (!exe)
			exe = dup_or_null(parent->exe);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = hs_read_build_id(path, bid, sizeof(bid));
	r.process.ppid = (uint32_t)(ppid ? ppid : proc_ppid(pid));
	r.process.origin = origin;
	r.process.comm = comm ? comm : "";
	r.process.cmdline = cmdline ? cmdline : "";
	r.process.exe = exe ? exe : "";
	r.process.build_id = (struct hs_bytes){bid, n > 0 ? (uint32_t)n : 0};
	write_rec(s, &r);
	if (p) {
		free(p->comm);
		free(p->cmdline);
		free(p->exe);
		p->comm = comm;
		p->cmdline = cmdline;
		p->exe = exe;
	} else {
		free(comm);
		free(cmdline);
		free(exe);
	}
}

static void name_thread(struct session *s, pid_t pid, pid_t tid)
{
	struct hs_record r = {.type = HS_REC_THREAD_NAME, .pid = (uint32_t)pid, .tid = (uint32_t)tid};
	bool created;
	char *comm;

	if (!hmap_put(&s->tids, (uint64_t)pid, (uint64_t)tid, &created) || !created)
		return;
	comm = proc_thread_comm(pid, tid);
	if (!comm)
		return;
	r.thread_name.comm = comm;
	write_rec(s, &r);
	free(comm);
}

struct thread_ctx {
	struct session *s;
	pid_t pid;
};

static void name_thread_cb(pid_t tid, void *ctx)
{
	struct thread_ctx *t = ctx;

	name_thread(t->s, t->pid, tid);
}

static struct proc *add_proc(struct session *s, pid_t pid)
{
	struct hmap_slot *slot;
	struct proc *v;
	bool created;

	if (proc_find(s, pid))
		return proc_find(s, pid);
	/* Doubling at powers of two: -a adds a process per fork on the host. */
	v = s->procs;
	if (!(s->nr_procs & (s->nr_procs - 1)))
		v = realloc(s->procs, sizeof(*v) * (size_t)(s->nr_procs ? 2 * s->nr_procs : 1));
	slot = v ? hmap_put(&s->proc_idx, (uint64_t)pid, 0, &created) : NULL;
	if (!v || !slot)
		return NULL;
	s->procs = v;
	v[s->nr_procs] = (struct proc){.pid = pid, .alive = true};
	slot->val = (uint64_t)++s->nr_procs;
	return &v[s->nr_procs - 1];
}

/* A process joins the recording: its record, threads, mappings and probes. */
static void track_process(struct session *s, pid_t pid, uint32_t origin, pid_t ppid, const struct hs_proc_event *e)
{
	struct proc *p = add_proc(s, pid);
	struct thread_ctx t = {s, pid};
	uint8_t one = 1;
	uint32_t key = (uint32_t)pid;

	if (!p)
		return;
	if (!s->o->all && s->skel)
		bpf_map_update_elem(bpf_map__fd(s->skel->maps.tracked), &key, &one, BPF_ANY);
	write_process(s, pid, origin, ppid, e);
	proc_for_each_thread(pid, name_thread_cb, &t);
	rescan_maps(s, p, true); /* writes every mapping: all are new to the file */
	if (!p->nr_maps && origin == HS_PROC_FORKED) {
		/* Gone before we looked: at fork its mappings were its parent's. */
		struct proc *parent = proc_find(s, ppid);

		for (int i = 0; parent && i < parent->nr_maps; i++)
			write_mapping(s, pid, &parent->maps[i], ticks(s, mono_ns()));
	}
}

/* ---- events ---- */

static uint64_t stack_id(struct session *s, uint64_t hash)
{
	bool created;
	struct hmap_slot *slot;

	/* Allocations come in runs from one call path: skip the table for a repeat. */
	if (hash == s->last_hash && s->last_id)
		return s->last_id;
	slot = hmap_put(&s->stacks, hash, 0, &created);
	if (!slot) {
		s->err = -ENOMEM;
		return 0;
	}
	if (created)
		slot->val = ++s->next_stack_id << 1;
	s->last_hash = hash;
	s->last_id = slot->val >> 1;
	return s->last_id;
}

/* Poisson sampling: an allocation of SIZE is picked with probability 1 - exp(-SIZE/R);
 * weighting it by the inverse keeps totals unbiased. */
static uint64_t sample_weight(uint64_t rate, uint64_t size)
{
	double p;

	if (!rate || !size)
		return HS_WEIGHT_ONE;
	p = -expm1(-(double)size / (double)rate);
	return (uint64_t)llround((double)HS_WEIGHT_ONE / p);
}

static void update_peak(struct session *s, uint64_t t)
{
	if (s->live_est > s->peak_est) {
		s->peak_est = s->live_est;
		s->peak_time = t;
	}
}

/* After an exec: if the image's text is not among the mappings read (the process already
 * exited), write it from what the kernel reported and the file's program headers. */
static void ensure_exe_mapping(struct session *s, struct proc *p, const struct hs_proc_event *e, uint64_t t)
{
	uint64_t dev = makedev(e->exe_dev >> 20, e->exe_dev & 0xfffff);
	struct hs_record r = {.type = HS_REC_MAPPING, .time = t, .pid = e->h.pid};
	struct hmap_slot *slot;
	struct object *o;
	uint64_t off;

	if (!e->start_code || !e->exe_ino)
		return;
	for (int i = 0; i < p->nr_maps; i++)
		if (p->maps[i].start <= e->start_code && e->start_code < p->maps[i].end)
			return;
	slot = hmap_find(&s->objs_by_id, dev, e->exe_ino);
	if (slot) {
		o = (struct object *)(uintptr_t)slot->val;
	} else {
		char *abs = exec_path(e, dev);

		o = abs ? object_get(s, dev, e->exe_ino, abs) : NULL;
		free(abs);
		if (!o)
			return;
	}
	if (!o->scanned)
		scan_object(s, o, o->path);
	if (elf_exec_offset(o->path, &off))
		return;
	r.mapping.start = e->start_code & ~0xfffull;
	r.mapping.end = (e->end_code + 0xfff) & ~0xfffull;
	r.mapping.offset = off;
	r.mapping.inode = e->exe_ino;
	r.mapping.path = o->path;
	r.mapping.build_id = (struct hs_bytes){o->build_id, (uint32_t)o->build_id_len};
	write_rec(s, &r);
}

static void on_proc_event(struct session *s, const struct hs_proc_event *e, uint64_t t)
{
	struct proc *p;

	switch (e->h.type) {
	case HS_EV_FORK:
		if (s->o->verbose)
			warnx("following fork: %u -> %u", e->ppid, e->h.pid);
		track_process(s, (pid_t)e->h.pid, HS_PROC_FORKED, (pid_t)e->ppid, e);
		break;
	case HS_EV_EXEC:
		p = proc_find(s, (pid_t)e->h.pid);
		if (!p) {
			/* The held command has just exec'd: it joins with its real image. */
			if ((pid_t)e->h.pid == s->child || s->o->all) {
				/* -a: a process first seen at its exec, from the event if it is gone. */
				track_process(s, (pid_t)e->h.pid, s->o->all ? HS_PROC_ATTACHED : HS_PROC_STARTED,
					      s->o->all ? (pid_t)e->ppid : getpid(), e);
				p = proc_find(s, (pid_t)e->h.pid);
				if (p)
					ensure_exe_mapping(s, p, e, t);
			}
			break;
		}
		write_process(s, p->pid, HS_PROC_EXEC, 0, e);
		rescan_maps(s, p, true);
		ensure_exe_mapping(s, p, e, t);
		break;
	case HS_EV_EXIT: {
		struct hs_record r = {.type = HS_REC_EXIT, .time = t, .pid = e->h.pid};
		int code = e->exit_code;

		/* -a sees every exit on the host: only those of processes in the file count. */
		p = proc_find(s, (pid_t)e->h.pid);
		if (!p)
			break;
		r.exit.status = (code & 0x7f) ? -(int64_t)(code & 0x7f) : (code >> 8) & 0xff;
		if (!(e->h.kind & HS_EXIT_FLAG_NO_STATUS))
			write_rec(s, &r);
		if (p->alive) {
			p->alive = false;
			if (p->pid != s->o->pid && p->pid != s->child)
				detach_pid(s, p->pid);
		}
		break;
	}
	}
}

static uint32_t pool_get(struct session *s)
{
	uint32_t i;

	if (s->pool_free != UINT32_MAX) {
		i = s->pool_free;
		s->pool_free = s->pool[i].next_free;
		return i;
	}
	if (s->nr_pool == s->cap_pool) {
		struct live_info *np;

		s->cap_pool = s->cap_pool ? s->cap_pool * 2 : 4096;
		np = realloc(s->pool, sizeof(*np) * s->cap_pool);
		if (!np) {
			s->err = -ENOMEM;
			return 0;
		}
		s->pool = np;
	}
	return s->nr_pool++;
}

static void pool_put(struct session *s, uint32_t i)
{
	s->pool[i].next_free = s->pool_free;
	s->pool_free = i;
}

/* The block ALLOC describes joins the live set and gets its slot. Returns false when the
 * record should not be written (a restore with nothing to restore). */
static bool ulive_alloc(struct session *s, struct hs_record *r, uint32_t tid)
{
	struct hmap_slot *pend;
	struct ptrmap_ent *slot;
	bool created;
	uint32_t i;

	pend = hmap_find(&s->pending, r->pid, tid);
	if (r->alloc.kind & HS_KIND_RESTORED) {
		/* realloc failed: the block it released at entry is the caller's again. */
		if (!pend)
			return false;
		i = (uint32_t)pend->val;
		hmap_remove_slot(&s->pending, pend);
		r->alloc.size = s->pool[i].size;
		r->alloc.stack_id = s->pool[i].stack_id;
		r->alloc.kind = s->pool[i].kind | HS_KIND_RESTORED;
	} else {
		if (pend && (r->alloc.kind & ~HS_KIND_RESTORED) == HS_KIND_REALLOC) {
			/* The realloc succeeded: the slot it held back is free now. */
			pool_put(s, (uint32_t)pend->val);
			hmap_remove_slot(&s->pending, pend);
		}
		i = UINT32_MAX;
	}
	slot = ptrmap_put(&s->ulive, r->pid, r->alloc.ptr, &created);
	if (!slot) {
		s->err = -ENOMEM;
		return false;
	}
	if (!created) {
		/* A live address handed out again: its free was lost. The new block takes the
		 * old one's slot, which tells the analyzer to drop the stale block. */
		if (i != UINT32_MAX)
			pool_put(s, i);
		i = (uint32_t)slot->val;
	} else if (i == UINT32_MAX) {
		i = pool_get(s);
		if (s->err) {
			ptrmap_remove(&s->ulive, slot);
			return false;
		}
	}
	if (!(r->alloc.kind & HS_KIND_RESTORED))
		s->pool[i] = (struct live_info){.size = r->alloc.size, .stack_id = r->alloc.stack_id,
						.kind = r->alloc.kind};
	slot->val = i;
	r->alloc.slot = i;
	return true;
}

/* A free. Returns the block's size, or -1 for a pointer not live. *SLOT gets its slot. */
static int64_t ulive_free(struct session *s, uint32_t pid, uint32_t tid, uint64_t ptr, bool by_realloc,
			  uint64_t *slot_out)
{
	struct ptrmap_ent *slot = ptrmap_find(&s->ulive, pid, ptr);
	struct hmap_slot *pend;
	uint32_t i;
	bool created;

	if (!slot) {
		s->user_unknown_frees++;
		return -1;
	}
	i = (uint32_t)slot->val;
	*slot_out = i;
	ptrmap_remove(&s->ulive, slot);
	if (!by_realloc) {
		pool_put(s, i);
		return (int64_t)s->pool[i].size;
	}
	/* Held back until the realloc returns: if it fails, the block comes back in this slot. */
	pend = hmap_put(&s->pending, pid, tid, &created);
	if (!pend) {
		s->err = -ENOMEM;
		return -1;
	}
	if (!created)
		pool_put(s, (uint32_t)pend->val);
	pend->val = i;
	return (int64_t)s->pool[i].size;
}

/* A --stack dwarf window. Identical windows (same registers, same bytes) share one record:
 * a loop allocating from one frame sends the same window again and again. */
static void on_dwarf_event(struct session *s, const struct hs_dwarf_event *e, size_t len)
{
	struct hs_record r = {.type = HS_REC_STACK_DWARF};
	uint64_t h = 0xcbf29ce484222325ull, id;
	struct hmap_slot *slot, *content;
	bool created;

	if (len < offsetof(struct hs_dwarf_event, data) || e->len > HS_MAX_DWARF_BYTES ||
	    len < offsetof(struct hs_dwarf_event, data) + e->len)
		return;
	for (int i = 0; i < HS_DWARF_NREGS; i++)
		h = (h ^ e->regs[i]) * 0x100000001b3ull;
	{
		/* Four independent lanes: a window is kilobytes, and one chain of multiplies
		 * would wait on each before the next. */
		uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
		uint32_t i = 0;

		for (; i + 32 <= e->len; i += 32) {
			uint64_t w[4];

			memcpy(w, e->data + i, 32);
			for (int k = 0; k < 4; k++)
				lane[k] = (lane[k] ^ w[k]) * 0x100000001b3ull;
		}
		for (; i + 8 <= e->len; i += 8) {
			uint64_t w;

			memcpy(&w, e->data + i, 8);
			lane[0] = (lane[0] ^ w) * 0x100000001b3ull;
		}
		h = lane[0] ^ (lane[1] * 0x9e3779b97f4a7c15ull) ^ (lane[2] * 0xc2b2ae3d27d4eb4full) ^
		    (lane[3] * 0xd6e8feb86659fd93ull);
	}
	h ^= e->len;
	content = hmap_put(&s->dwarf_windows, h, e->len, &created);
	if (!content) {
		s->err = -ENOMEM;
		return;
	}
	slot = hmap_put(&s->stacks, e->key, 0, NULL);
	if (!slot) {
		s->err = -ENOMEM;
		return;
	}
	if (!created) {
		slot->val = content->val << 1 | 1; /* the same window is in the file already */
		return;
	}
	id = ++s->next_stack_id;
	slot->val = id << 1 | 1;
	content->val = id;
	r.dwarf.id = id;
	r.dwarf.nregs = HS_DWARF_NREGS;
	r.dwarf.regs = (const uint64_t *)e->regs;
	r.dwarf.used = e->used;
	r.dwarf.window = (struct hs_bytes){e->data, e->len};
	write_rec(s, &r);
	s->stacks_written++;
}

/* Code was mapped: read the maps while the process lives, or keep what the kernel said. */
static void on_mmap_event(struct session *s, const struct hs_mmap_event *e, uint64_t t)
{
	struct proc *p = proc_find(s, (pid_t)e->h.pid);
	struct hs_record r = {.type = HS_REC_MAPPING, .time = t, .pid = e->h.pid};
	uint64_t dev = makedev(e->dev >> 20, e->dev & 0xfffff);
	struct hmap_slot *slot;
	struct object *o = NULL;
	char name[64];

	if (!p)
		return;
	rescan_maps(s, p, true);
	for (int i = 0; i < p->nr_maps; i++)
		if (p->maps[i].start <= e->addr && e->addr < p->maps[i].end)
			return;
	slot = hmap_find(&s->objs_by_id, dev, e->ino);
	if (slot) {
		o = (struct object *)(uintptr_t)slot->val;
	} else if (e->path[0] == '/') {
		/* Named by the sender (the in-process recorder): used if it is still that file. */
		char path[HS_EXEC_PATH_MAX + 1];
		struct stat st;

		memcpy(path, e->path, HS_EXEC_PATH_MAX);
		path[HS_EXEC_PATH_MAX] = 0;
		if (!stat(path, &st) && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == e->ino)
			o = object_get(s, dev, e->ino, path);
	}
	if (o && !o->scanned)
		scan_object(s, o, o->path);
	snprintf(name, sizeof(name), "[inode %" PRIu64 "]", (uint64_t)e->ino);
	r.mapping.start = e->addr;
	r.mapping.end = e->addr + e->len;
	r.mapping.offset = e->off;
	r.mapping.inode = e->ino;
	r.mapping.path = o ? o->path : name;
	if (o)
		r.mapping.build_id = (struct hs_bytes){o->build_id, (uint32_t)o->build_id_len};
	write_rec(s, &r);
}

static int handle_event(struct session *s, const void *data, size_t len)
{
	const struct hs_event_hdr *h = data;
	struct hs_record r; /* not zeroed: events fill what the writer reads, the rest memset it */
	uint64_t t;

	if (len < sizeof(*h))
		return 0;
	t = ticks(s, h->ts);
	switch (h->type) {
	case HS_EV_ALLOC: {
		const struct hs_alloc_event *e = data;
		uint64_t w = sample_weight(s->o->sample_rate, e->size);

		/* Threads are named by HS_EV_COMM from BPF: no /proc read on this path. */
		if (s->o->all && h->pid != s->last_pid) {
			if (!proc_find(s, (pid_t)h->pid))
				track_process(s, (pid_t)h->pid, HS_PROC_ATTACHED, 0, NULL);
			s->last_pid = h->pid;
		}
		r.type = s->o->sample_rate ? HS_REC_ALLOC_SAMPLED : HS_REC_ALLOC;
		r.time = t;
		r.pid = h->pid;
		r.tid = h->tid;
		r.alloc.ptr = e->ptr;
		r.alloc.size = e->size;
		r.alloc.stack_id = (h->kind & HS_KIND_FLAG_RESTORED) && !s->o->sample_rate ? 0 : stack_id(s, e->stack);
		r.alloc.kind = h->kind;
		r.alloc.weight = w;
		if (!ulive_alloc(s, &r, h->tid))
			break;
		write_rec(s, &r);
		s->n_alloc++;
		s->bytes_alloc += (double)r.alloc.size * (double)w / HS_WEIGHT_ONE;
		s->live_est += (double)r.alloc.size * (double)w / HS_WEIGHT_ONE;
		update_peak(s, t);
		break;
	}
	case HS_EV_FREE: {
		const struct hs_free_event *e = data;
		int64_t size = (int64_t)e->size;

		size = ulive_free(s, h->pid, h->tid, e->ptr, h->kind & HS_FREE_FLAG_REALLOC, &r.free.slot);
		if (size < 0)
			break; /* allocated before recording began: counted, not written */
		if (s->o->sample_rate)
			size = (int64_t)e->size;
		r.type = HS_REC_FREE;
		r.time = t;
		r.pid = h->pid;
		r.tid = h->tid;
		r.free.ptr = e->ptr;
		write_rec(s, &r);
		s->n_free++;
		s->live_est -= (double)size * (double)sample_weight(s->o->sample_rate, (uint64_t)size) / HS_WEIGHT_ONE;
		break;
	}
	case HS_EV_STACK: {
		const struct hs_stack_event *e = data;
		uint64_t id = stack_id(s, e->hash);
		struct hmap_slot *slot = hmap_find(&s->stacks, e->hash, 0);
		uint32_t nr = h->nr;

		if (!slot || (slot->val & 1))
			break; /* already in the file: the kernel forgot it and sent it again */
		if (len < offsetof(struct hs_stack_event, ips) + nr * sizeof(uint64_t) || nr > HS_MAX_STACK)
			break;
		slot->val |= 1;
		memset(&r, 0, sizeof(r));
		r.type = HS_REC_STACK;
		r.stack.id = id;
		r.stack.nr = nr;
		r.stack.ips = (const uint64_t *)e->ips;
		write_rec(s, &r);
		s->stacks_written++;
		break;
	}
	case HS_EV_DWARF:
		on_dwarf_event(s, data, len);
		break;
	case HS_EV_COMM: {
		const struct hs_comm_event *e = data;
		char comm[17];

		if (len < sizeof(*e))
			break;
		memcpy(comm, e->comm, 16);
		comm[16] = 0;
		hmap_put(&s->tids, h->pid, h->tid, NULL);
		memset(&r, 0, sizeof(r));
		r.type = HS_REC_THREAD_NAME;
		r.pid = h->pid;
		r.tid = h->tid;
		r.thread_name.comm = comm;
		write_rec(s, &r);
		break;
	}
	case HS_EV_MMAP:
		if (len >= sizeof(struct hs_mmap_event))
			on_mmap_event(s, data, t);
		break;
	case HS_EV_FORK:
	case HS_EV_EXEC:
	case HS_EV_EXIT:
		if (len >= sizeof(struct hs_proc_event))
			on_proc_event(s, data, t);
		break;
	}
	return s->err ? -1 : 0;
}

/* ---- reading the per-CPU rings ---- */

/* How long an event may take from its timestamp to its ring: a BPF program can be
 * preempted between the two. While more than one ring holds events, they are merged only
 * once they are this old. */
#define MERGE_SLACK_NS 10000000ull

/* One CPU's ring, read where the kernel wrote it: handling an event in place spares a copy
 * that costs a cache miss per line. The consumer page is ours to write; the producer page
 * and the data, mapped twice in a row so that no record wraps, are read-only. An event
 * stays in the ring, holding its space, until it is handled and the position published. */
struct ring {
	uint64_t *cons;
	const uint64_t *prod;
	const uint8_t *data;
	size_t map_len;
	uint64_t mask;
	uint64_t pos;       /* the next record to handle */
	uint64_t published; /* the last position given back to the producer */
	uint64_t end;       /* the producer's position when last looked at */
	uint64_t goal;      /* the producer's position when the final drain began */
};

static int ring_map(struct ring *r, int fd, uint32_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->cons = p;
	p = mmap(NULL, pg + 2 * (size_t)size, PROT_READ, MAP_SHARED, fd, (off_t)pg);
	if (p == MAP_FAILED)
		return -errno;
	r->map_len = pg + 2 * (size_t)size;
	r->prod = p;
	r->data = (const uint8_t *)p + pg;
	r->mask = size - 1;
	r->pos = r->published = r->end = __atomic_load_n(r->cons, __ATOMIC_ACQUIRE);
	return 0;
}

/* A ring in memory shared with a producer in another process (in-process recording): the
 * same framing, no double mapping, because that producer never lets a record wrap. */
static void ring_use_memory(struct ring *r, uint64_t *cons, const uint64_t *prod, const uint8_t *data, uint32_t size)
{
	r->cons = cons;
	r->prod = prod;
	r->data = data;
	r->mask = size - 1;
	r->pos = r->published = r->end = __atomic_load_n(cons, __ATOMIC_ACQUIRE);
}

static void ring_unmap(struct ring *r)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	if (r->cons)
		munmap(r->cons, pg);
	if (r->prod)
		munmap((void *)r->prod, r->map_len);
}

/* Reads how far the producer got. Returns true if the ring holds anything not handled,
 * committed or not. */
static bool ring_look(struct ring *r)
{
	r->end = __atomic_load_n(r->prod, __ATOMIC_ACQUIRE);
	return r->pos != r->end;
}

/* The bytes a record of LEN takes in the ring: its 8-byte header, then the event, 8-byte aligned. */
static uint64_t ring_rec_bytes(uint32_t len)
{
	return ((uint64_t)len + BPF_RINGBUF_HDR_SZ + 7) & ~7ull;
}

/* The event at the read position, or NULL at the end of what the producer had written when
 * last looked at, or at a record still being written. Skips discarded records. */
static const struct hs_event_hdr *ring_head(struct ring *r, uint32_t *len)
{
	while (r->pos < r->end) {
		const uint32_t *hdr = (const uint32_t *)(r->data + (r->pos & r->mask));
		uint32_t l = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);

		if (l & BPF_RINGBUF_BUSY_BIT)
			return NULL;
		if (!(l & BPF_RINGBUF_DISCARD_BIT) && l >= sizeof(struct hs_event_hdr)) {
			*len = l;
			return (const void *)((const uint8_t *)hdr + BPF_RINGBUF_HDR_SZ);
		}
		r->pos += ring_rec_bytes(l & ~BPF_RINGBUF_DISCARD_BIT);
	}
	return NULL;
}

/* Gives handled space back to the producer. Every store makes the producer's next reserve
 * miss its cache line, so a drain publishes in steps of 1/16 of the ring, and at its end. */
static void ring_publish(struct ring *r, bool force)
{
	if (r->pos != r->published && (force || r->pos - r->published >= (r->mask + 1) / 16)) {
		__atomic_store_n(r->cons, r->pos, __ATOMIC_RELEASE);
		r->published = r->pos;
	}
}

/* Handles one ring's events up to where it was last looked at. */
static void ring_handle_all(struct session *s, struct ring *r)
{
	const struct hs_event_hdr *h;
	uint32_t len;

	while (!s->err && (h = ring_head(r, &len))) {
		handle_event(s, h, len);
		r->pos += ring_rec_bytes(len);
		ring_publish(r, false);
	}
	ring_publish(r, true);
}

/* Handles the events stamped up to LIMIT (CLOCK_MONOTONIC ns) of all rings, oldest first.
 * Each ring is in order already, so events go in runs: a ring is read while its head is no
 * later than every other ring's, and the rings are compared once per run. */
static void merge_rings(struct session *s, uint64_t limit)
{
	while (!s->err) {
		struct ring *best = NULL;
		uint64_t best_ts = UINT64_MAX, next_ts = UINT64_MAX;
		const struct hs_event_hdr *h;
		uint32_t len;

		for (int i = 0; i < s->nr_rings; i++) {
			struct ring *r = &s->rings[i];

			if (!(h = ring_head(r, &len)))
				continue;
			if (h->ts < best_ts) {
				next_ts = best_ts;
				best_ts = h->ts;
				best = r;
			} else if (h->ts < next_ts) {
				next_ts = h->ts;
			}
		}
		if (!best || best_ts > limit)
			break;
		if (next_ts > limit)
			next_ts = limit;
		while ((h = ring_head(best, &len)) && h->ts <= next_ts && !s->err) {
			handle_event(s, h, len);
			best->pos += ring_rec_bytes(len);
			ring_publish(best, false);
		}
	}
	for (int i = 0; i < s->nr_rings; i++)
		ring_publish(&s->rings[i], true);
}

/* Handles what the rings hold, in an order that keeps each block's free before the next
 * allocation at its address. When one ring alone holds events, all of them go at once: an
 * event on another CPU that came first (a free of an address this ring's allocation
 * reuses) was committed first, so looking at the other rings after this one's producer
 * position shows it. Otherwise the rings are merged by timestamp, MERGE_SLACK_NS behind;
 * with ALL, at the end, everything. Returns the time up to which the file is complete: a
 * snapshot taken now marks that moment. Sets *HELD if events wait for the slack. */
static uint64_t drain(struct session *s, bool all, bool *held)
{
	uint64_t t = mono_ns();

	*held = false;
	for (int i = 0; all && i < s->nr_rings; i++)
		s->rings[i].goal = __atomic_load_n(s->rings[i].prod, __ATOMIC_ACQUIRE);
	for (;;) {
		int busy = 0, only = -1;
		uint64_t before = 0, after = 0;
		bool reached = true;

		for (int i = 0; i < s->nr_rings; i++) {
			if (ring_look(&s->rings[i])) {
				busy++;
				only = i;
			}
			before += s->rings[i].pos;
		}
		if (!busy)
			return t;
		for (int i = 0; busy == 1 && i < s->nr_rings; i++)
			if (i != only && __atomic_load_n(s->rings[i].prod, __ATOMIC_ACQUIRE) != s->rings[i].pos)
				busy++;
		if (busy == 1) {
			ring_handle_all(s, &s->rings[only]);
			if (!all)
				return t;
		} else {
			merge_rings(s, all ? UINT64_MAX : (t > MERGE_SLACK_NS ? t - MERGE_SLACK_NS : 0));
			if (!all) {
				for (int i = 0; i < s->nr_rings; i++)
					*held |= s->rings[i].pos != s->rings[i].end;
				return t > MERGE_SLACK_NS ? t - MERGE_SLACK_NS : 0;
			}
		}
		for (int i = 0; i < s->nr_rings; i++) {
			after += s->rings[i].pos;
			reached &= s->rings[i].pos >= s->rings[i].goal;
		}
		/* The end: what the rings held when it began is handled, or only records still
		 * being written are left. A target that keeps allocating cannot hold it up. */
		if (after == before || reached || s->err)
			return mono_ns();
	}
}

/* One ring per possible CPU, all of RING_BYTES, made before the BPF object is loaded: the
 * first also serves as the template of the array of rings. */
static int create_rings(struct session *s, uint32_t ring_bytes)
{
	s->ring_bytes = ring_bytes;
	s->nr_rings = libbpf_num_possible_cpus();
	if (s->nr_rings <= 0)
		return s->nr_rings ? s->nr_rings : -EINVAL;
	s->rings = calloc((size_t)s->nr_rings, sizeof(*s->rings));
	s->ring_fds = malloc(sizeof(*s->ring_fds) * (size_t)s->nr_rings);
	if (!s->rings || !s->ring_fds)
		return -ENOMEM;
	for (int i = 0; i < s->nr_rings; i++)
		s->ring_fds[i] = -1;
	for (int i = 0; i < s->nr_rings; i++) {
		s->ring_fds[i] = bpf_map_create(BPF_MAP_TYPE_RINGBUF, NULL, 0, 0, ring_bytes, NULL);
		if (s->ring_fds[i] < 0)
			return -errno;
	}
	bpf_map__set_max_entries(s->skel->maps.rings, (uint32_t)s->nr_rings);
	return bpf_map__set_inner_map_fd(s->skel->maps.rings, s->ring_fds[0]);
}

/* After loading: puts the rings in the BPF array, maps them, and has one epoll set wait on
 * them all. Edge-triggered: events left in a ring for the merge must not wake the recorder
 * again and again, only the producers' wakeups. */
/* The epoll set the loop sleeps on: the signalfd and, for in-process rings, the eventfd
 * producers write past a quarter of a ring; both level-triggered, read every time round. */
static int rings_epoll(struct session *s, int wake_fd)
{
	int fds[] = {rec_signals__fd(), wake_fd};

	if (s->epfd < 0)
		s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX - (uint32_t)i};

		if (fds[i] >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, fds[i], &ev))
			return -errno;
	}
	return 0;
}

static int install_rings(struct session *s)
{
	int outer = bpf_map__fd(s->skel->maps.rings), err;

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return -errno;
	for (int i = 0; i < s->nr_rings; i++) {
		uint32_t key = (uint32_t)i;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u32 = key};

		if (bpf_map_update_elem(outer, &key, &s->ring_fds[i], BPF_ANY))
			return -errno;
		if ((err = ring_map(&s->rings[i], s->ring_fds[i], s->ring_bytes)))
			return err;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->ring_fds[i], &ev))
			return -errno;
	}
	return rings_epoll(s, -1);
}

/* Sleeps until a producer wakes the recorder or TIMEOUT_MS pass. */
static int wait_rings(struct session *s, int timeout_ms)
{
	struct epoll_event evs[16];

	return epoll_wait(s->epfd, evs, 16, timeout_ms) < 0 && errno != EINTR ? -errno : 0;
}

/* ---- counters, snapshots, RSS ---- */

static void read_counters(struct session *s)
{
	int ncpu = libbpf_num_possible_cpus(), fd;
	uint64_t *vals;

	if (s->pre) {
		preload__counters(s->pre, s->cnt);
		s->cnt[HS_CNT_UNKNOWN_FREE] += s->user_unknown_frees;
		return;
	}
	fd = bpf_map__fd(s->skel->maps.counters);
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
	s->cnt[HS_CNT_UNKNOWN_FREE] += s->user_unknown_frees;
	free(vals);
}

static void write_counters(struct session *s, uint32_t type)
{
	struct hs_counter items[HS_CNT__MAX + 8];
	struct hs_record r = {.type = type, .time = ticks(s, mono_ns())};
	uint32_t n = 0;

	for (int k = 0; k < HS_CNT__MAX; k++)
		items[n++] = (struct hs_counter){counter_names[k], s->cnt[k]};
	items[n++] = (struct hs_counter){"events.alloc", s->n_alloc};
	items[n++] = (struct hs_counter){"events.free", s->n_free};
	items[n++] = (struct hs_counter){"stacks.written", s->stacks_written};
	items[n++] = (struct hs_counter){"probes.attached", (uint64_t)s->nr_links};
	items[n++] = (struct hs_counter){"probes.failed", (uint64_t)s->nr_probe_fail};
	items[n++] = (struct hs_counter){"map.live_max", s->o->max_live};
	r.counters.nr = n;
	r.counters.items = items;
	write_rec(s, &r);
}

static void warn_losses(struct session *s)
{
	/* Events lost, and only those: a frame-pointer walk that stops early loses no event. */
	static const int lossy[] = {HS_CNT_RINGBUF_FULL, HS_CNT_LIVE_FULL, HS_CNT_THREAD_FULL, HS_CNT_MISSED_URETPROBE};

	for (size_t i = 0; i < sizeof(lossy) / sizeof(lossy[0]); i++) {
		int k = lossy[i];

		if (s->cnt[k] > s->cnt_warned[k]) {
			warnx("warning: %" PRIu64 " more events lost (%s, %" PRIu64 " in all)%s",
			      s->cnt[k] - s->cnt_warned[k], counter_names[k], s->cnt[k],
			      k == HS_CNT_RINGBUF_FULL ? "; raise --ringbuf-size or use --sample-rate"
			      : k == HS_CNT_LIVE_FULL ? "; raise --max-live" : "");
			s->cnt_warned[k] = s->cnt[k];
		}
	}
}

static void snapshot(struct session *s, uint32_t origin, const char *label, uint64_t t)
{
	struct hs_record r = {.type = HS_REC_SNAPSHOT, .time = t};
	char buf[32];

	if (!label) {
		snprintf(buf, sizeof(buf), "%.3fs", (double)t * TICK_NS / 1e9);
		label = buf;
	}
	r.snapshot.label = label;
	r.snapshot.origin = origin;
	r.snapshot.live_bytes = s->live_est > 0 ? (uint64_t)llround(s->live_est) : 0;
	write_rec(s, &r);
}

static void sample_rss(struct session *s)
{
	for (int i = 0; i < s->nr_procs; i++) {
		struct hs_record r = {.type = HS_REC_RSS, .time = ticks(s, mono_ns())};

		if (!s->procs[i].alive || proc_rss(s->procs[i].pid, &r.rss.rss_bytes, &r.rss.vm_bytes))
			continue;
		r.pid = (uint32_t)s->procs[i].pid;
		write_rec(s, &r);
	}
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
	double sum = 0, q[HS_NR_THRESHOLDS];

	for (uint32_t i = 0; i < HS_NR_THRESHOLDS; i++) {
		q[i] = -log1p(-((double)i + 0.5) / HS_NR_THRESHOLDS);
		sum += q[i];
	}
	for (uint32_t i = 0; i < HS_NR_THRESHOLDS; i++) {
		uint64_t v = (uint64_t)llround(q[i] / (sum / HS_NR_THRESHOLDS) * (double)s->o->sample_rate);

		if (!v)
			v = 1;
		if (bpf_map_update_elem(fd, &i, &v, BPF_ANY))
			return -errno;
	}
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

/* fork() with a close-on-exec pipe between parent and child. Returns the pid (0 in the
 * child), or -errno with nothing left open. */
static pid_t fork_with_pipe(int pfd[2])
{
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	if (pid == 0)
		rec_signals__restore(); /* blocked signals would stay blocked across exec */
	return pid;
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

static char *resolve_command(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(cmd, '/'))
		return access(cmd, X_OK) ? NULL : strdup(cmd);
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? path : ".", cmd);
		if (!access(buf, X_OK))
			return strdup(buf);
		path += len + (path[len] == ':');
	}
	return NULL;
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
		warnx("needs root (or CAP_BPF and CAP_PERFMON) to load BPF programs and attach uprobes; run it with sudo");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		warnx("this kernel has no BTF (/sys/kernel/btf/vmlinux): CONFIG_DEBUG_INFO_BTF=y is required");
		return -ENOTSUP;
	}
	return 0;
}

static void write_header(struct session *s, char **argv)
{
	struct hs_record r = {.type = HS_REC_SESSION};
	char host[256] = "", cmdline[4096] = "", *attached = NULL;
	struct utsname u;
	struct timespec rt;
	size_t off = 0;

	gethostname(host, sizeof(host) - 1);
	uname(&u);
	clock_gettime(CLOCK_REALTIME, &rt);
	for (int i = 0; argv && argv[i]; i++) {
		int n = snprintf(cmdline + off, sizeof(cmdline) - off, "%s%s", i ? " " : "", argv[i]);

		if (n < 0 || (size_t)n >= sizeof(cmdline) - off)
			break;
		off += (size_t)n;
	}
	r.session.tool_version = HEAPSNAP_VERSION;
	r.session.hostname = host;
	r.session.kernel = u.release;
	/* Attached: the target's own command line, as ps shows it. */
	if (s->o->pid && (attached = proc_read_string(s->o->pid, "cmdline")))
		snprintf(cmdline, sizeof(cmdline), "%s", attached);
	free(attached);
	r.session.cmdline = cmdline;
	r.session.tick_ns = TICK_NS;
	r.session.monotonic_start_ns = s->mono_start;
	r.session.realtime_start_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec -
				      (mono_ns() - s->mono_start);
	r.session.sample_rate = s->o->sample_rate;
	r.session.stack_mode = (uint32_t)s->o->stack_mode;
	r.session.max_stack = s->o->max_stack;
	r.session.flags = (s->o->all ? 1 : 0) | (s->o->pid ? 2 : 0);
	r.session.nr_probes = (uint32_t)s->nr_probes;
	r.session.probes = s->probes;
	r.session.via = s->via_why;
	write_rec(s, &r);
	s->header_written = true;
}

/* Forks the command, held until the probes are in place; PRE: with the environment that
 * preloads LIB into it instead. */
static pid_t start_held_child(char **argv, const char *exe, int *go_fd, const struct preload *pre, const char *lib)
{
	int pfd[2];
	pid_t pid;

	pid = fork_with_pipe(pfd);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		char c;

		close(pfd[1]);
		/* Held until the probes are attached; EOF means the recorder gave up. */
		if (read(pfd[0], &c, 1) != 1)
			_exit(127);
		if (pre && preload__setenv(pre, lib)) {
			fprintf(stderr, "heapsnap-record: cannot set the environment for %s: %s\n", exe, strerror(errno));
			_exit(127);
		}
		execv(exe, argv);
		fprintf(stderr, "heapsnap-record: cannot execute %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(pfd[0]);
	*go_fd = pfd[1];
	return pid;
}

/* Start-up takes up to a second, verifying the programs: a SIGINT or SIGTERM then ends the
 * recorder cleanly, with nothing attached, no file, and the held command never run. */
static int interrupted(struct session *s)
{
	rec_signals__read(&s->sig);
	if (!s->sig.stop)
		return 0;
	warnx("%s during start-up: stopping; nothing was recorded", strsignal(s->sig.stop));
	return -EINTR;
}

/* How long the loop may sleep: until the next thing it must do on time. */
static int poll_timeout_ms(uint64_t now, const uint64_t *when, int n, int max_ms)
{
	uint64_t t = now + (uint64_t)max_ms * 1000000ull;

	for (int i = 0; i < n; i++)
		if (when[i] < t)
			t = when[i];
	return t <= now ? 0 : (int)((t - now + 999999) / 1000000);
}

static void print_summary(struct session *s, double secs)
{
	uint64_t bytes = record_writer__bytes_written(s->w), ev = s->n_alloc + s->n_free;

	warnx("wrote %s: %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64 " stacks in %.1fs; %" PRIu64
	      " bytes (%.2f bytes/event)",
	      s->o->output, s->n_alloc, s->n_free, s->stacks_written, secs, bytes, ev ? (double)bytes / (double)ev : 0.0);
	warnx("live at the end: %.0f bytes%s; peak %.0f bytes", s->live_est > 0 ? s->live_est : 0,
	      s->o->sample_rate ? " (estimated from samples)" : "", s->peak_est);
	if (s->o->pid)
		warnx("note: attached to a running process: live bytes exclude memory allocated before the attach "
		      "(%" PRIu64 " frees of unknown pointers)", s->cnt[HS_CNT_UNKNOWN_FREE]);
	if (s->o->stats) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "recorder: cpu %.3fs user %.3fs sys, peak rss %ld KiB; raw records %" PRIu64
				" bytes, file %" PRIu64 " bytes\n",
			(double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
			(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss,
			record_writer__raw_bytes(s->w), bytes);
		fprintf(stderr, "counters:\n");
		for (int k = 0; k < HS_CNT__MAX; k++)
			fprintf(stderr, "  %-24s %" PRIu64 "\n", counter_names[k], s->cnt[k]);
	}
}

/* ---- the run: open -> start (BPF or in-process) -> attach -> poll -> finish ---- */

struct run {
	char *exe;           /* the command, resolved */
	char **libs;         /* the libraries it will load (BPF: probed before it starts) */
	int nr_libs;
	int go_fd;           /* releases the held command */
	uint32_t ring_bytes;
	uint64_t t_start;
	bool not_found;      /* the command: exit 127, as a shell says */
};

static bool is_script(const char *path)
{
	char head[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes = fd >= 0 && read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';

	if (fd >= 0)
		close(fd);
	return yes;
}

/* Which way in, and why: said with -v and kept in the file. */
static int choose_via(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	bool bpf_only = o->nr_probes || o->libc || o->noop || o->probe_entry || o->probe_links != LINKS_AUTO;
	struct stat st;

	s->via = o->via;
	if (o->via == VIA_AUTO) {
		if (o->pid)
			s->via = VIA_BPF, s->via_why = "bpf: attached to a running process";
		else if (o->all)
			s->via = VIA_BPF, s->via_why = "bpf: every process on the host";
		else if (o->stack_mode == HS_STACK_DWARF)
			s->via = VIA_BPF, s->via_why = "bpf: --stack dwarf copies stacks from BPF";
		else if (bpf_only)
			s->via = VIA_BPF, s->via_why = "bpf: an option of the probes (--probe, --libc, --noop-probes, ...)";
		else if (!stat(u->exe, &st) && (st.st_mode & (S_ISUID | S_ISGID)))
			s->via = VIA_BPF, s->via_why = "bpf: a setuid or setgid program ignores LD_PRELOAD";
		else if (!elf_is_dynamic(u->exe) && !is_script(u->exe))
			s->via = VIA_BPF, s->via_why = "bpf: a static binary loads no preloaded library";
		else
			s->via = VIA_PRELOAD, s->via_why = "preload: a launched, dynamically linked command";
	} else if (o->via == VIA_PRELOAD) {
		s->via_why = "preload: asked for with --via preload";
		if (!o->argv) {
			warnx("--via preload records a command it starts (-- COMMAND); -p and -a use BPF");
			return -EINVAL;
		}
		if (o->stack_mode == HS_STACK_DWARF || bpf_only) {
			warnx("--via preload: %s is BPF's alone; use --via bpf",
			      o->stack_mode == HS_STACK_DWARF ? "--stack dwarf" : "that probe option");
			return -EINVAL;
		}
	} else {
		s->via_why = "bpf: asked for with --via bpf";
	}
	if (o->verbose)
		warnx("recording via %s", s->via_why);
	return 0;
}

/* Everything that can fail before a probe or a process is touched. */
static int run_open(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
	struct record_writer_opts wo = {0};
	const char *why = NULL;
	int err;

	if (o->pid && kill(o->pid, 0) && errno == ESRCH) {
		warnx("process %d not found", o->pid);
		return -ESRCH;
	}
	if (o->argv) {
		u->exe = resolve_command(o->argv[0]);
		if (!u->exe) {
			warnx("command not found or not executable: %s", o->argv[0]);
			u->not_found = true;
			return -ENOENT;
		}
	}
	err = choose_via(s, u);
	if (err)
		return err;
	if (s->via == VIA_BPF) {
		err = check_privileges();
		if (err)
			return err;
		libbpf_set_print(o->verbose ? libbpf_print : libbpf_quiet);
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	for (int i = 0; i < o->nr_probes; i++) {
		uint64_t off;

		err = elf_find_symbol(o->probes[i].lib, o->probes[i].symbol, &off);
		if (err) {
			warnx("--probe: %s has no function %s%s%s", o->probes[i].lib, o->probes[i].symbol,
			      err == -ENOENT ? "" : ": ", err == -ENOENT ? "" : strerror(-err));
			return err;
		}
	}
	/* The output before anything is attached: an unwritable path fails first. */
	wo.why = &why;
	err = record_writer__open(o->output, &wo, &s->w);
	if (err) {
		warnx("cannot write %s: %s", o->output, why ? why : strerror(-err));
		return err;
	}
	return interrupted(s);
}

/* BPF: open -> set rodata and map sizes -> load, with the rings in place before any probe. */
static int bpf_start(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int err, ncpu = libbpf_num_possible_cpus();

	/* --ringbuf-size is shared by the CPUs: each ring is a power of two of at least 256 KiB. */
	u->ring_bytes = 256u << 10;
	while (ncpu > 0 && ((uint64_t)u->ring_bytes << 1) * (uint64_t)ncpu <= (uint64_t)o->ringbuf_mb << 20)
		u->ring_bytes <<= 1;
	s->skel = heapsnap_bpf__open();
	if (!s->skel) {
		err = -errno;
		warnx("failed to open BPF object: %s", strerror(-err));
		return err;
	}
	s->skel->rodata->filter_pids = !o->all;
	s->skel->rodata->follow_forks = o->follow_forks;
	s->skel->rodata->sample_rate = o->sample_rate;
	s->skel->rodata->stack_depth = o->max_stack;
	s->skel->rodata->stack_mode = o->stack_mode == HS_STACK_NONE ? 0 : o->stack_mode == HS_STACK_DWARF ? 2 : 1;
	s->skel->rodata->dwarf_bytes = o->dwarf_bytes;
	s->skel->rodata->wakeup_bytes = u->ring_bytes / 4;
	s->skel->rodata->self_tgid = (uint32_t)getpid();
	s->skel->rodata->noop = o->noop;
	bpf_map__set_max_entries(s->skel->maps.live, o->max_live);
	bpf_map__set_max_entries(s->skel->maps.stacks_seen, o->stack_cache);
	err = create_rings(s, u->ring_bytes);
	if (err) {
		warnx("failed to create the per-CPU ring buffers (%u KiB each): %s", u->ring_bytes >> 10, strerror(-err));
		return err;
	}
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
		warnx("--probe-links %s: this kernel has no such links (session probes need Linux 6.13, multi 6.6)",
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
		warnx("%s", s->links_mode == LINKS_SESSION ? "allocators get session probes: one program per call, "
							     "the entry decides whether the return runs"
			    : s->links_mode == LINKS_MULTI ? "allocators get a uprobe and a uretprobe each, in one "
							     "multi link per library and kind"
							   : "allocators get a uprobe and a uretprobe each");
	err = heapsnap_bpf__load(s->skel);
	if (err) {
		char buf[128];

		libbpf_strerror(err, buf, sizeof(buf));
		warnx("failed to load BPF programs: %s%s", buf, o->verbose ? "" : " (run with -v for the verifier log)");
		return err;
	}
	if (o->sample_rate && (err = fill_thresholds(s))) {
		warnx("failed to fill the sampling thresholds: %s", strerror(-err));
		return err;
	}
	/* Before anything is attached: a running target (-p, -a) calls its allocators from the
	 * first probe on, and a ring not yet in place would drop those events. */
	err = install_rings(s);
	if (err)
		warnx("failed to set up the per-CPU ring buffers: %s", strerror(-err));
	return err;
}

/* In-process: the shared memory and its rings, read as the BPF rings are. */
static int preload_start(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int err;

	s->lib = preload__find_lib();
	if (!s->lib) {
		warnx("cannot find libheapsnap.so next to heapsnap-record or in ../lib/heapsnap/ (set HEAPSNAP_LIB)");
		return -ENOENT;
	}
	/* A ring per thread of the targets, claimed at its first event. */
	u->ring_bytes = PRELOAD_RING_BYTES;
	err = preload__open(PRELOAD_RINGS, u->ring_bytes, o->sample_rate, (uint32_t)o->stack_mode, o->max_stack,
			    &s->pre);
	if (err) {
		warnx("cannot create the memory shared with the command: %s", strerror(-err));
		return err;
	}
	s->nr_rings = PRELOAD_RINGS;
	s->ring_bytes = u->ring_bytes;
	s->rings = calloc(PRELOAD_RINGS, sizeof(*s->rings));
	if (!s->rings)
		return -ENOMEM;
	for (uint32_t i = 0; i < PRELOAD_RINGS; i++) {
		struct hs_shm_ring *r = &preload__hdr(s->pre)->rings[i];

		ring_use_memory(&s->rings[i], &r->cons, &r->prod, preload__ring_data(s->pre, i), u->ring_bytes);
	}
	preload__heartbeat(s->pre, mono_ns());
	return rings_epoll(s, preload__wake_fd(s->pre));
}

/* BPF: the probes for the target (the held command, a pid, or every process), then the
 * process tracepoints. */
static int bpf_attach(struct session *s, struct run *u)
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
			warnx("cannot read the memory map of process %d (/proc/%d/maps: %s)%s", o->pid, o->pid,
			      strerror(-err), err == -EACCES ? "; another PID namespace, or a kernel thread?" : "");
			return err;
		}
		if (!nr_maps) {
			warnx("process %d maps no memory: a kernel thread has no allocator to probe", o->pid);
			return -ESRCH;
		}
		p = add_proc(s, o->pid);
		bpf_map_update_elem(bpf_map__fd(s->skel->maps.tracked), &key, &one, BPF_ANY);
		if (o->libc)
			attach_path(s, o->pid, o->libc);
		for (int i = 0; i < o->nr_probes; i++)
			attach_path(s, o->pid, o->probes[i].lib);
		if (p)
			rescan_maps(s, p, true);
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
		warnx("error: no allocator to probe in the target (a static binary with a stripped allocator?); "
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
			warnx("failed to attach %s: %s", bpf_program__name(tps[i]), strerror(-err));
			return err;
		}
		add_link(s, -2, l, -1);
	}
	/* Syscall tracepoints need tracefs; mount it where the kernel expects it if absent. */
	if (access("/sys/kernel/tracing/events", F_OK))
		mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL);
	for (size_t i = 0; i < sizeof(mm) / sizeof(mm[0]); i++) {
		struct bpf_link *l = bpf_program__attach(mm[i]);

		if (!l) {
			s->poll_maps = true;
			if (o->verbose)
				warnx("cannot attach %s (%s): re-reading maps every 250 ms instead",
				      bpf_program__name(mm[i]), strerror(errno));
			continue;
		}
		add_link(s, -2, l, -1);
	}
	return 0;
}

/* Probes (BPF) or nothing (in-process), the held command, the header; then the command runs. */
static int run_attach(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	int err;

	if ((err = interrupted(s)))
		return err;
	s->mono_start = mono_ns();
	if (o->argv) {
		s->child = start_held_child(o->argv, u->exe, &u->go_fd, s->pre, s->lib);
		if (s->child < 0) {
			err = s->child;
			warnx("cannot start %s: %s", u->exe, strerror(-err));
			s->child = 0;
			return err;
		}
	}
	if (s->via == VIA_BPF) {
		err = bpf_attach(s, u);
		if (err)
			return err;
	}
	if ((err = interrupted(s)))
		return err;
	write_header(s, o->argv);
	/* The file takes its name once it reads as a recording. */
	err = s->err ? s->err : record_writer__flush(s->w);
	if (!err)
		err = record_writer__publish(s->w);
	if (err) {
		warnx("cannot create %s: %s", o->output, strerror(-err));
		return err;
	}
	if (o->pid) {
		struct proc *p = proc_find(s, o->pid);
		struct thread_ctx t = {s, o->pid};

		write_process(s, o->pid, HS_PROC_ATTACHED, 0, NULL);
		proc_for_each_thread(o->pid, name_thread_cb, &t);
		for (int i = 0; p && i < p->nr_maps; i++)
			write_mapping(s, o->pid, &p->maps[i], 0);
		warnx("attached to %d; Ctrl-C to stop, SIGUSR1 to mark a snapshot", o->pid);
	}
	if (s->child) {
		/* Released: the first allocation after exec is already probed, or hooked. */
		if (write(u->go_fd, "g", 1) != 1)
			return -errno;
		close(u->go_fd);
		u->go_fd = -1;
	}
	return 0;
}

/* In-process, the command's status comes from waitpid: its library saw it end, not how. */
static void write_child_exit(struct session *s)
{
	struct hs_record r = {.type = HS_REC_EXIT, .time = ticks(s, mono_ns()), .pid = (uint32_t)s->child};

	if (!s->pre)
		return;
	r.exit.status = WIFSIGNALED(s->child_status) ? -(int64_t)WTERMSIG(s->child_status)
						    : WEXITSTATUS(s->child_status);
	write_rec(s, &r);
}

/* In-process rings whose thread has exited, or whose process is gone, go back to the pool
 * once read to the end. */
static void reclaim_rings(struct session *s, bool check_pids)
{
	for (int i = 0; s->pre && i < s->nr_rings; i++) {
		uint64_t owner = preload__owner(s->pre, (uint32_t)i), prod;
		struct ring *r = &s->rings[i];

		if (!owner)
			continue;
		prod = __atomic_load_n(r->prod, __ATOMIC_ACQUIRE);
		if (r->pos != prod)
			continue;
		if ((owner & HS_SHM_CLOSING) || (check_pids && kill((pid_t)(owner >> 32), 0) && errno == ESRCH)) {
			preload__release(s->pre, (uint32_t)i, r->pos);
			r->published = r->end = r->pos;
		}
	}
}

static void run_poll(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	uint64_t next_tick, next_rss, next_interval, deadline;
	bool stopping = false, held = false;
	int err;

	u->t_start = mono_ns();
	next_tick = u->t_start + 1000000000ull;
	next_rss = u->t_start + (uint64_t)(o->rss_interval * 1e9);
	next_interval = o->interval > 0 ? u->t_start + (uint64_t)(o->interval * 1e9) : UINT64_MAX;
	deadline = o->duration > 0 ? u->t_start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	while (!stopping && !s->err) {
		uint64_t now, horizon, gen = 0, due[] = {next_interval, next_rss, next_tick, deadline};
		uint32_t zero = 0;

		/* Events held for the merge are old enough to go after the slack; in-process
		 * producers wake the recorder only past a quarter of a ring, so it also looks
		 * every few milliseconds. */
		err = wait_rings(s, poll_timeout_ms(mono_ns(), due, 4,
						    held ? (int)(MERGE_SLACK_NS / 1000000) : s->pre ? 5 : 100));
		if (err) {
			warnx("waiting on the ring buffers failed: %s", strerror(-err));
			break;
		}
		if (s->pre)
			preload__ack(s->pre);
		horizon = drain(s, false, &held);
		now = mono_ns();
		if (s->pre) {
			preload__heartbeat(s->pre, now);
			reclaim_rings(s, now >= next_tick);
		}
		if ((s->skel && !bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.maps_gen), &zero, &gen) &&
		     gen != s->maps_gen) ||
		    (s->poll_maps && now >= s->next_maps_poll)) {
			s->maps_gen = gen;
			s->next_maps_poll = now + 250000000ull;
			for (int i = 0; i < s->nr_procs; i++)
				if (s->procs[i].alive)
					rescan_maps(s, &s->procs[i], true);
		}
		rec_signals__read(&s->sig);
		for (; s->sig.snapshots; s->sig.snapshots--)
			snapshot(s, HS_SNAP_SIGNAL, NULL, ticks(s, horizon));
		if (now >= next_interval) {
			snapshot(s, HS_SNAP_INTERVAL, NULL, ticks(s, horizon));
			next_interval += (uint64_t)(o->interval * 1e9);
		}
		if (now >= next_rss) {
			sample_rss(s);
			next_rss = now + (uint64_t)(o->rss_interval * 1e9);
		}
		if (now >= next_tick) {
			read_counters(s);
			warn_losses(s);
			write_counters(s, HS_REC_COUNTERS);
			if (o->all)
				for (int i = 0; i < s->nr_procs; i++)
					if (s->procs[i].alive)
						rescan_maps(s, &s->procs[i], false);
			/* One frame a second at least: a crash loses at most the last second. */
			err = record_writer__flush(s->w);
			if (err && !s->err) {
				s->err = err;
				warnx("failed to write %s: %s", o->output, strerror(-err));
			}
			next_tick = now + 1000000000ull;
		}
		if (s->sig.child && s->child) {
			s->sig.child = false;
			if (waitpid(s->child, &s->child_status, WNOHANG) == s->child) {
				s->child_reaped = true;
				write_child_exit(s);
				stopping = true;
			}
		}
		if (o->pid && kill(o->pid, 0) && errno == ESRCH)
			stopping = true;
		if (s->sig.stop || now >= deadline)
			stopping = true;
	}
}

static int run_finish(struct session *s, struct run *u)
{
	const struct rec_opts *o = s->o;
	bool exited = s->child_reaped || (o->pid && kill(o->pid, 0));
	bool held;
	int err;

	/* Hooks still running in processes left behind go dormant now; what they wrote before
	 * is drained below. */
	preload__detach(s->pre);
	drain(s, true, &held);
	read_counters(s);
	warn_losses(s);
	snapshot(s, exited ? HS_SNAP_EXIT : HS_SNAP_END, exited ? "exit" : "end", ticks(s, mono_ns()));
	if (o->snapshot_at_peak && s->peak_time) {
		double live = s->live_est;

		s->live_est = s->peak_est;
		snapshot(s, HS_SNAP_PEAK, "peak", s->peak_time);
		s->live_est = live;
	}
	write_counters(s, HS_REC_END);
	err = s->err;
	if (!err) {
		err = record_writer__close(s->w);
		if (err)
			warnx("failed to finish %s: %s", o->output, strerror(-err));
	}
	print_summary(s, (double)(mono_ns() - u->t_start) / 1e9);
	return err;
}

static int run_cleanup(struct session *s, struct run *u, int err)
{
	int exit_code = 0;

	if (u->go_fd >= 0)
		close(u->go_fd); /* a held child that never ran exits on EOF */
	destroy_links(s->links, s->nr_links);
	free(s->links);
	if (s->epfd >= 0)
		close(s->epfd);
	for (int i = 0; s->rings && s->skel && i < s->nr_rings; i++)
		ring_unmap(&s->rings[i]);
	free(s->rings);
	for (int i = 0; s->ring_fds && i < s->nr_rings; i++)
		if (s->ring_fds[i] >= 0)
			close(s->ring_fds[i]);
	free(s->ring_fds);
	heapsnap_bpf__destroy(s->skel);
	preload__detach(s->pre);
	if (s->child && !s->child_reaped) {
		if (err && !s->header_written)
			kill(s->child, SIGKILL);
		waitpid(s->child, &s->child_status, 0);
		s->child_reaped = true;
	}
	preload__free(s->pre);
	free(s->lib);
	record_writer__free(s->w);
	for (int i = 0; i < s->nr_objs; i++) {
		alloc_funcs__free(&s->objs[i]->funcs);
		free(s->objs[i]->path);
		free(s->objs[i]);
	}
	free(s->objs);
	for (int i = 0; i < s->nr_procs; i++) {
		proc_maps_free(s->procs[i].maps, s->procs[i].nr_maps);
		free(s->procs[i].comm);
		free(s->procs[i].cmdline);
		free(s->procs[i].exe);
	}
	hmap_free(&s->proc_idx);
	free(s->procs);
	free(s->probes);
	hmap_free(&s->stacks);
	hmap_free(&s->dwarf_windows);
	ptrmap_free(&s->ulive);
	hmap_free(&s->pending);
	free(s->pool);
	hmap_free(&s->tids);
	hmap_free(&s->objs_by_id);
	hmap_free(&s->attached);
	for (int i = 0; i < u->nr_libs; i++)
		free(u->libs[i]);
	free(u->libs);
	free(u->exe);
	if (s->sig.stop && !s->header_written)
		return 128 + s->sig.stop;
	if (s->child) {
		if (WIFEXITED(s->child_status))
			exit_code = WEXITSTATUS(s->child_status);
		else if (WIFSIGNALED(s->child_status))
			exit_code = 128 + WTERMSIG(s->child_status);
		if (err && !exit_code)
			exit_code = 1;
		return exit_code;
	}
	if (u->not_found)
		return 127;
	return err ? 1 : 0;
}

int recorder_run(const struct rec_opts *o)
{
	struct session sess = {.o = o, .pool_free = UINT32_MAX, .epfd = -1}, *s = &sess;
	struct run u = {.go_fd = -1};
	int err;

	err = run_open(s, &u);
	if (!err)
		err = s->via == VIA_PRELOAD ? preload_start(s, &u) : bpf_start(s, &u);
	if (!err)
		err = run_attach(s, &u);
	if (!err) {
		run_poll(s, &u);
		err = run_finish(s, &u);
	}
	return run_cleanup(s, &u, err);
}
