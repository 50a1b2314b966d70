// SPDX-License-Identifier: MIT
/* The BPF way in's probes: each object's allocator functions, found once, and their probes
 * attached for a pid (or every process) in links of the kind the kernel has. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "bpf_way.h"
#include "heapsnap.h"
#include "heapsnap.skel.h"
#include "objects.h"
#include "output.h"
#include "session.h"

struct bpf_obj *bpf_obj(struct bpf_way *b, const struct object *o)
{
	if (o->index >= b->cap_objs) {
		int cap = b->cap_objs ? b->cap_objs : 64;
		struct bpf_obj *v;

		while (cap <= o->index)
			cap *= 2;
		v = realloc(b->objs, sizeof(*v) * (size_t)cap);
		if (!v)
			return NULL;
		memset(v + b->cap_objs, 0, sizeof(*v) * (size_t)(cap - b->cap_objs));
		b->objs = v;
		b->cap_objs = cap;
	}
	return &b->objs[o->index];
}

void bpf_objs_free(struct bpf_way *b)
{
	for (int i = 0; i < b->cap_objs; i++)
		alloc_funcs__free(&b->objs[i].funcs);
	free(b->objs);
}

static const char *prog_name(enum hs_prog p)
{
	static const char *const n[PROG__COUNT] = {"size1", "size2", "calloc", "realloc", "reallocarray",
						    "rust_realloc", "posix_memalign", "free"};
	return n[p];
}

/* The program for allocator kind P: its entry program, or with SESSION its session program. */
static struct bpf_program *alloc_prog(struct bpf_way *b, enum hs_prog p, bool session)
{
	struct heapsnap_bpf *k = b->skel;

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

int add_link(struct bpf_way *b, pid_t pid, struct bpf_link *l, int fd)
{
	struct link_ent *v = realloc(b->links, sizeof(*v) * (size_t)(b->nr_links + 1));
	struct link_ent e = {.pid = pid, .link = l, .fd = fd};

	if (!v) {
		link_ent__destroy(&e);
		return -ENOMEM;
	}
	b->links = v;
	v[b->nr_links++] = e;
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
static struct bpf_program *ret_prog(struct bpf_way *b, enum hs_prog p)
{
	return p == PROG_POSIX_MEMALIGN ? b->skel->progs.ret_posix_memalign
	       : p == PROG_FREE		? b->skel->progs.ret_free_wrapper
					: b->skel->progs.ret_ptr;
}

void bpf_choose_links(struct bpf_way *b, enum probe_links want)
{
	uint32_t session_type, multi_type;

	find_link_types(&session_type, &multi_type);
	b->links_mode = LINKS_PERF;
	if ((want == LINKS_AUTO || want == LINKS_SESSION) && session_type) {
		b->links_mode = LINKS_SESSION;
		b->links_type = session_type;
	} else if ((want == LINKS_AUTO || want == LINKS_MULTI) && multi_type) {
		b->links_mode = LINKS_MULTI;
		b->links_type = multi_type;
	}
}

void bpf_set_link_types(struct bpf_way *b)
{
	for (int p = 0; p < PROG__COUNT; p++) {
		struct bpf_program *sp = alloc_prog(b, (enum hs_prog)p, true), *cp = alloc_prog(b, (enum hs_prog)p, false);

		if (b->links_mode == LINKS_SESSION)
			bpf_program__set_expected_attach_type(sp, (enum bpf_attach_type)b->links_type);
		else
			bpf_program__set_autoload(sp, false);
		if (b->links_mode == LINKS_MULTI) {
			bpf_program__set_expected_attach_type(cp, (enum bpf_attach_type)b->links_type);
			bpf_program__set_expected_attach_type(ret_prog(b, (enum hs_prog)p), (enum bpf_attach_type)b->links_type);
		}
	}
}

/* Whether F of O is an operator new that may throw, probed at entry only (HS_COOKIE_NORET):
 * the uretprobe's trampoline in its return address is a frame the C++ unwinder cannot read, so
 * std::bad_alloc thrown through it ended the program in std::terminate. libstdc++'s only: each
 * of these calls malloc or aligned_alloc, whose return ends it (or tail-calls another that
 * does: new[] -> new); a program's own operator new may call no probed allocator, and keeps
 * its return probe. The nothrow forms never throw, and keep theirs. */
static bool noret_func(const struct bpf_obj *o, const struct alloc_func *f)
{
	static const char *const names[] = {"_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t"};

	if (!o->libstdcxx || f->prog != PROG_SIZE1)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(f->name, names[i]))
			return true;
	return false;
}

/* Whether F gets a return probe: an allocator (but a noret one), or a free that wraps another. */
static bool need_return(const struct bpf_obj *o, const struct alloc_func *f)
{
	return f->prog == PROG_FREE ? f->wrapper : !noret_func(o, f);
}

/* One uprobe_multi link (Linux 6.6) for every function of O that kind P covers, in
 * OPEN_PATH, for PID (-1: every process): a session probe, or with the classic programs an
 * entry probe, or with RET a return probe on those that need one. One link for them all
 * means one wait for the kernel to let go of them at the end, not one per function.
 * Returns 1 when attached, 0 when O has no such function, or -errno. */
static int attach_group(struct bpf_way *b, pid_t pid, const char *open_path, const struct bpf_obj *o,
			enum hs_prog p, bool ret)
{
	bool session = b->links_mode == LINKS_SESSION;
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
		bool noret = noret_func(o, f);

		if (f->prog != p || (ret && !need_return(o, f)))
			continue;
		offs[n] = f->probe_offset;
		/* A noret new is no leaf: its malloc must be seen nested, sampled or not. */
		cookies[n++] = f->kind | (session ? HS_COOKIE_SESSION : 0) | (f->leaf && !noret ? HS_COOKIE_LEAF : 0) |
			       (f->wrapper ? HS_COOKIE_WRAPPER : 0) | (noret ? HS_COOKIE_NORET : 0);
	}
	if (n) {
		struct uprobe_multi_attr a = {
			.prog_fd = (uint32_t)bpf_program__fd(ret ? ret_prog(b, p) : alloc_prog(b, p, session)),
			.attach_type = b->links_type,
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
			err = add_link(b, pid, NULL, fd) ? -ENOMEM : 1;
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

/* A classic uprobe (RET false) or uretprobe on F of O. */
static int attach_one(struct bpf_way *b, pid_t pid, const char *path, const struct bpf_obj *o,
		      const struct alloc_func *f, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct bpf_program *prog;
	struct bpf_link *l;
	/* The return probe shares the entry probe's address: sp is unchanged there, and one
	 * trap serves both. */
	uint64_t off = f->probe_offset;

	uo.retprobe = ret;
	uo.bpf_cookie = f->kind | (f->wrapper ? HS_COOKIE_WRAPPER : 0) | (noret_func(o, f) ? HS_COOKIE_NORET : 0);
	prog = ret ? ret_prog(b, f->prog) : alloc_prog(b, f->prog, false);
	l = bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &uo);
	if (!l) {
		int err = -errno;
		char buf[128];

		libbpf_strerror(err, buf, sizeof(buf));
		rec_warnx("failed to attach %s to %s:%s: %s", ret ? "uretprobe" : "uprobe", path, f->name, buf);
		b->nr_probe_fail++;
		return err;
	}
	return add_link(b, pid, l, -1);
}

static void note_probe(struct session *s, struct object *o, const struct alloc_func *f)
{
	struct hs_probe p = {.symbol = f->name, .path = o->path, .offset = f->probe_offset,
			     .build_id = {o->build_id, (uint32_t)o->build_id_len}, .kind = f->kind};

	if (s->out.header_written) {
		struct hs_record r = {.type = HS_REC_PROBE, .time = ticks(&s->out, mono_ns()), .probe = p};

		write_rec(&s->out, &r);
		return;
	}
	struct hs_probe *v = realloc(s->probes, sizeof(*v) * (size_t)(s->nr_probes + 1));

	if (v) {
		s->probes = v;
		v[s->nr_probes++] = p;
	}
}

/* O's allocator functions, found once, and those --probe names in it. */
static void scan_object(struct session *s, struct object *obj, struct bpf_obj *o, const char *open_path)
{
	const char *base = strrchr(obj->path, '/');
	int ret;

	if (o->scanned)
		return;
	o->scanned = true;
	o->libstdcxx = !strncmp(base ? base + 1 : obj->path, "libstdc++.so", 12);
	open_path = object__identify(obj, open_path);
	ret = alloc_funcs__scan(open_path, obj->is_libc, !s->o->probe_entry, &o->funcs);
	if (ret < 0 && ret != -ENOEXEC && s->o->verbose)
		rec_warnx("cannot read symbols of %s: %s", open_path, strerror(-ret));
	/* --probe LIB:SYMBOL:kind, for the object that is LIB. */
	for (int i = 0; i < s->o->nr_probes; i++) {
		const struct custom_probe *cp = &s->o->probes[i];
		struct stat st;
		struct alloc_func *v;
		uint64_t off;

		if (stat(cp->lib, &st) || (uint64_t)st.st_dev != obj->dev || (uint64_t)st.st_ino != obj->ino)
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

/* Says what was attached for F, and lists it in the file once per object. */
static void probe_attached(struct session *s, pid_t pid, struct object *obj, const struct bpf_obj *o,
			   const struct alloc_func *f, int grouped)
{
	struct bpf_way *b = bpf_of(s);
	bool need_ret = need_return(o, f);

	if ((pid == s->o->pid || pid == s->child || pid == -1) && !o->listed)
		note_probe(s, obj, f);
	if (s->o->verbose)
		rec_warnx("probe %s:%s (%s) at file offset 0x%" PRIx64 "%s", obj->path, f->name, prog_name(f->prog),
			  f->probe_offset,
			  grouped > 0 ? (b->links_mode == LINKS_SESSION ? (noret_func(o, f) ? " (session, entry only)" : " (session)")
					 : need_ret ? " + return (multi)" : " (multi)")
			  : need_ret ? " + return" : "");
}

void attach_object(struct session *s, pid_t pid, struct object *obj, const char *open_path)
{
	struct bpf_way *b = bpf_of(s);
	struct bpf_obj *o = bpf_obj(b, obj);
	bool created;
	int grouped[PROG__COUNT] = {0}; /* by kind: 1 attached in a group, -1 failed, 0 none */
	int ok = 0;

	if (!o)
		return;
	hmap_put(&b->attached, (uint64_t)(int64_t)pid, (uint64_t)obj->index, &created);
	if (!created)
		return;
	scan_object(s, obj, o, open_path);
	for (int p = 0; b->links_mode != LINKS_PERF && p < PROG__COUNT; p++) {
		int r = attach_group(b, pid, open_path, o, (enum hs_prog)p, false);

		if (r > 0 && b->links_mode == LINKS_MULTI && attach_group(b, pid, open_path, o, (enum hs_prog)p, true) < 0) {
			/* Entries without their returns would count every call as nested. */
			link_ent__destroy(&b->links[--b->nr_links]);
			r = -1;
		}
		grouped[p] = r > 0 ? 1 : r < 0 ? -1 : 0;
	}
	for (int i = 0; i < o->funcs.nr; i++) {
		const struct alloc_func *f = &o->funcs.v[i];
		bool need_ret = need_return(o, f);

		if (grouped[f->prog] < 0 && b->links_mode == LINKS_MULTI) {
			b->nr_probe_fail++; /* programs made for multi links attach no other way */
			continue;
		}
		if (grouped[f->prog] <= 0 && attach_one(b, pid, open_path, o, f, false))
			continue;
		if (grouped[f->prog] <= 0 && need_ret && attach_one(b, pid, open_path, o, f, true))
			continue;
		ok++;
		probe_attached(s, pid, obj, o, f, grouped[f->prog]);
	}
	if (ok && (pid == s->o->pid || pid == s->child || pid == -1) && !o->listed) {
		const char *base = strrchr(obj->path, '/');

		o->listed = true; /* probes of this object are listed once */
		rec_warnx("probing %d allocator function%s in %s", ok, ok == 1 ? "" : "s", base ? base + 1 : obj->path);
	}
}

void attach_path(struct session *s, pid_t pid, const char *path)
{
	struct stat st;
	struct object *o;

	if (stat(path, &st))
		return;
	o = objects__get(&s->objs, (uint64_t)st.st_dev, (uint64_t)st.st_ino, path);
	if (o)
		attach_object(s, pid, o, path);
}

void detach_pid(struct bpf_way *b, pid_t pid)
{
	int j = 0;

	for (int i = 0; i < b->nr_links; i++) {
		if (b->links[i].pid == pid)
			link_ent__destroy(&b->links[i]);
		else
			b->links[j++] = b->links[i];
	}
	b->nr_links = j;
}
