// SPDX-License-Identifier: MIT
/* Injecting libheapsnap.so, step 1 (recorder/inject/inject_attach.c has the whole): looking at the target,
 * touching nothing: its state and tracer, whether another recorder records it, its libc's
 * functions, the GOT entries the trampoline takes, a `syscall` instruction. Everything read
 * from the target is the target's to shape: bounded, and escaped before it is printed. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocators.h"
#include "elfsyms.h"
#include "abi/gotwalk.h"
#include "abi/inject_abi.h"
#include "inject_look.h"
#include "record.h"
#include "remote.h"
#include "abi/shm.h"

/* What the target wrote (its messages, its file and thread names) is escaped as every string
 * from a file is (hs_strdup_printable) before it reaches a terminal, in place, cut to SIZE. */
void look__printable(char *s, size_t size)
{
	char *p = hs_strdup_printable(s);

	snprintf(s, size, "%s", p ? p : "?");
	free(p);
}

const char *look__base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

bool look__is_libc(const char *p)
{
	const char *b = look__base_name(p);

	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5);
}

/* The addresses in PID of NR symbols of the file mapped at V[I] (through any mapping of it),
 * in one pass over its symbols; 0 for one not found or not mapped. */
void look__symbol_addrs(pid_t pid, struct proc_map *v, int n, int i, const char *const *symbols, int nr,
			uint64_t *addrs)
{
	uint64_t offs[8];
	char mf[96];

	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, v[i].start, v[i].end);
	memset(addrs, 0, (size_t)nr * sizeof(*addrs));
	if (nr > 8 || elf_find_symbols(mf, symbols, nr, offs) <= 0)
		return;
	for (int s = 0; s < nr; s++)
		for (int k = 0; offs[s] && k < n && !addrs[s]; k++)
			if (!strcmp(v[k].path, v[i].path) && offs[s] >= v[k].offset &&
			    offs[s] < v[k].offset + (v[k].end - v[k].start))
				addrs[s] = v[k].start + (offs[s] - v[k].offset);
}

/* The target's memory is the target's to shape: a million reads of its relocation tables, at
 * about a microsecond each, is all the walk may cost, however many modules or entries it shows. */
#define MAX_REMOTE_READS 1000000

struct remote_reader {
	pid_t pid;
	uint32_t reads;
};

static int read_remote(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct remote_reader *rr = ctx;

	if (rr->reads >= MAX_REMOTE_READS)
		return -1;
	rr->reads++;
	return remote_read(rr->pid, addr, buf, len);
}

struct slot_ctx {
	pid_t pid;
	struct hs_inject_data *d;
	const char *path;
	bool verbose;
	uint32_t cut; /* allocator entries past HS_INJ_MAX_SLOTS */
	uint32_t allocs, safe_points;
};
#define MAX_SAFE_POINTS 64

/* The allocator entries the trampoline sits in: every one the library hooks (the table
 * common/allocators.def, as got_hooks.c reads it), so that no allocator call made while it
 * loads goes by unseen: it waits there, or is counted. Only code that holds none of the locks
 * pthread_create or dlopen take calls them. */
static int pick_slot(void *ctx, uint64_t got, const char *name)
{
	static const char *const names[] = {
#define HS_ALLOC(sym, kind, args, nest, hook, ret, params) HS_ALLOC_IF_HOOKED(hook, #sym, )
#include "allocators.def"
#undef HS_ALLOC
	};
	/* Calls a process makes while it idles, where it holds none of those locks either: a
	 * process that never calls its allocator through a GOT (between requests) is reached
	 * there. At most MAX_SAFE_POINTS of them, so that allocator entries keep their room. */
	static const char *const waits[] = {
		"read", "recv", "recvfrom", "recvmsg", "accept", "accept4", "epoll_wait", "epoll_pwait",
		"epoll_pwait2", "poll", "ppoll", "select", "pselect", "nanosleep", "clock_nanosleep", "usleep",
		"sleep",
	};
	struct slot_ctx *c = ctx;
	struct hs_inject_data *d = c->d;
	uint8_t kind = HS_SLOT_ALLOC;
	bool known = false;
	uint64_t cur;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !known; i++)
		known = !strcmp(name, names[i]);
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]) && !known; i++)
		if (!strcmp(name, waits[i]))
			known = true, kind = HS_SLOT_SAFE_POINT;
	if (known) {
		if ((got & 7) || remote_read(c->pid, got, &cur, sizeof(cur)) || !cur)
			return 0;
		if (kind == HS_SLOT_SAFE_POINT && c->safe_points >= MAX_SAFE_POINTS)
			return 0;
		if (d->lib.nr_slots >= HS_INJ_MAX_SLOTS) {
			c->cut += kind == HS_SLOT_ALLOC;
			return 0;
		}
		c->safe_points += kind == HS_SLOT_SAFE_POINT;
		c->allocs += kind == HS_SLOT_ALLOC;
		d->slot_kind[d->lib.nr_slots] = kind;
		d->slot_hash[d->lib.nr_slots] = kind == HS_SLOT_ALLOC ? gw_name_hash(name) : 0;
		d->slots[d->lib.nr_slots++] = (struct hs_inject_slot){got, cur};
		if (c->verbose) {
			char *path = hs_strdup_printable(c->path);

			fprintf(stderr, "heapsnap-record: trampoline entry%s: %s in %s, GOT entry %#" PRIx64 " holding %#" PRIx64 "\n",
				kind == HS_SLOT_SAFE_POINT ? " (safe point only)" : "", name, path ? path : "?", got, cur);
			free(path);
		}
		return 0;
	}
	return 0;
}

/* The GOT entries of each module (its first mapping holds its ELF header) but libc's, the
 * loader's and ours. */
bool look__find_slots(pid_t pid, struct proc_map *v, int n, struct hs_inject_data *d, bool verbose, uint32_t *cut,
		      uint32_t *allocs)
{
	struct slot_ctx c = {pid, d, NULL, verbose, 0, 0, 0};
	struct remote_reader rr = {pid, 0};

	for (int i = 0; i < n && rr.reads < MAX_REMOTE_READS; i++) {
		const char *b = look__base_name(v[i].path);
		Elf64_Ehdr eh;
		Elf64_Phdr ph[64];
		struct gw_module gm = {0};
		uint64_t lo = UINT64_MAX;

		if (v[i].offset || v[i].path[0] != '/' || look__is_libc(v[i].path) || strstr(b, "ld-linux") ||
		    strstr(b, "libheapsnap"))
			continue;
		if (remote_read(pid, v[i].start, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
		    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum ||
		    eh.e_phnum > 64 || remote_read(pid, v[i].start + eh.e_phoff, ph, eh.e_phnum * sizeof(Elf64_Phdr)))
			continue;
		for (int k = 0; k < eh.e_phnum; k++)
			if (ph[k].p_type == PT_LOAD && ph[k].p_vaddr < lo)
				lo = ph[k].p_vaddr & ~4095ull;
		if (lo == UINT64_MAX)
			continue;
		gm.bias = v[i].start - lo;
		for (int k = 0; k < eh.e_phnum; k++)
			if (ph[k].p_type == PT_DYNAMIC)
				gm.dyn = gm.bias + ph[k].p_vaddr;
		c.path = v[i].path;
		if (gm.dyn)
			gw_walk(&gm, read_remote, &rr, pick_slot, &c);
	}
	*cut = c.cut;
	*allocs = c.allocs;
	return rr.reads >= MAX_REMOTE_READS;
}

/* A `syscall` instruction (0f 05) in libc's code. */
uint64_t look__find_syscall(pid_t pid, struct proc_map *v, int n)
{
	static uint8_t buf[65536];

	for (int i = 0; i < n; i++) {
		if (!look__is_libc(v[i].path) || v[i].perms[2] != 'x')
			continue;
		for (uint64_t a = v[i].start; a < v[i].end; a += sizeof(buf) - 1) {
			size_t len = v[i].end - a < sizeof(buf) ? v[i].end - a : sizeof(buf);

			if (remote_read(pid, a, buf, len))
				break;
			for (size_t k = 0; k + 1 < len; k++)
				if (buf[k] == 0x0f && buf[k + 1] == 0x05)
					return a + k;
		}
	}
	return 0;
}

static int status_field(pid_t pid, const char *key, char *out, size_t len)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			char *s = line + kl + 1;

			s += strspn(s, " \t");
			s[strcspn(s, "\n")] = 0;
			snprintf(out, len, "%s", s);
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -ENOENT;
}

/* PID as the process sees itself (getpid() there): the last field of NSpid, which differs
 * from PID in another PID namespace. 0 if it cannot be read. */
pid_t look__ns_pid(pid_t pid)
{
	char v[128], *last;

	if (status_field(pid, "NSpid", v, sizeof(v)))
		return pid; /* a kernel before 4.1: no namespaces to tell apart here */
	last = strrchr(v, '\t');
	last = last ? last + 1 : v;
	return (pid_t)atoi(last);
}

/* Yama's ptrace_scope, or -1 where there is no Yama. */
int look__yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = -1;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	return scope;
}

/* Refusals that need nothing of the target but /proc. */
int look__preflight(pid_t pid, char *why, size_t why_len, bool *seccomp)
{
	char v[64];
	FILE *f;

	if (status_field(pid, "State", v, sizeof(v))) {
		snprintf(why, why_len, "process %d not found", pid);
		return -ESRCH;
	}
	if (v[0] == 'Z' || v[0] == 'X') {
		char pp[32] = "?";

		status_field(pid, "PPid", pp, sizeof(pp));
		snprintf(why, why_len, "process %d is a zombie: it has exited and its parent (process %s) has not reaped "
			 "it; nothing of it is left to record", pid, pp);
		return -ESRCH;
	}
	/* A thread id of ours names us too. */
	if (pid == getpid() || (!status_field(pid, "Tgid", v, sizeof(v)) && atoi(v) == getpid())) {
		snprintf(why, why_len, "cannot attach to the recorder itself (process %d is this heapsnap-record)", pid);
		return -EDEADLK;
	}
	if (status_field(pid, "State", v, sizeof(v))) {
		snprintf(why, why_len, "process %d not found", pid);
		return -ESRCH;
	}
	if (v[0] == 'T' || v[0] == 't') {
		snprintf(why, why_len, "process %d is %s: it would not run the loader", pid, v);
		return -EAGAIN;
	}
	if (!status_field(pid, "TracerPid", v, sizeof(v)) && atoi(v)) {
		char comm[64] = "?", p[64];

		snprintf(p, sizeof(p), "/proc/%d/comm", atoi(v));
		if ((f = fopen(p, "re"))) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
			look__printable(comm, sizeof(comm));
		}
		snprintf(why, why_len, "process %d is already traced by process %d (%s); ptrace allows one tracer",
			 pid, atoi(v), comm);
		return -EBUSY;
	}
	*seccomp = !status_field(pid, "Seccomp", v, sizeof(v)) && atoi(v) != 0;
	if (look__yama_scope() >= 3) {
		snprintf(why, why_len, "kernel.yama.ptrace_scope is %d: no process may be attached to", look__yama_scope());
		return -EPERM;
	}
	return 0;
}

/* Whether another heapsnap-record is recording PID now: a mapping of the shared memory
 * ("heapsnap" memfd, made by a recorder for a command it launched or by the library when
 * injected) whose header says attached (not dormant), with a recorder pid that lives and is
 * not us. Two recorders would each take the GOT entries and the rings from the other. */
int look__already_recorded(pid_t pid, const struct proc_map *v, int n, char *why, size_t why_len)
{
	for (int i = 0; i < n; i++) {
		struct hs_shm_hdr h;
		char comm[64] = "?", p[64];
		pid_t rec;
		FILE *f;

		if (strcmp(v[i].path, "/memfd:heapsnap (deleted)") || v[i].offset ||
		    v[i].end - v[i].start < sizeof(h) || remote_read(pid, v[i].start, &h, sizeof(h)))
			continue;
		rec = (pid_t)h.recorder_pid;
		if (h.magic != HS_SHM_MAGIC || h.version != HS_SHM_VERSION || __atomic_load_n(&h.dormant, __ATOMIC_RELAXED) ||
		    (uint64_t)rec != h.recorder_pid || rec <= 0 || rec == getpid() || (kill(rec, 0) && errno == ESRCH))
			continue;
		snprintf(p, sizeof(p), "/proc/%d/comm", rec);
		if ((f = fopen(p, "re"))) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
			look__printable(comm, sizeof(comm));
		}
		snprintf(why, why_len, "process %d is already being recorded by %s (pid %d); one recorder at a time", pid,
			 comm, rec);
		return -EALREADY;
	}
	return 0;
}

/* The target's glibc, whether libheapsnap.so is mapped already (*LOADED), and the functions in
 * that glibc the stub calls, into D. */
int look__libc(pid_t pid, struct proc_map *v, int n, struct hs_inject_data *d, bool *loaded, char *why,
	       size_t why_len)
{
	static const char *const libc_fns[] = {"pthread_create", "pthread_attr_init", "pthread_attr_setdetachstate",
					      "dlopen", "dlsym", "dlerror"};
	uint64_t fns[6];
	int libc_i = -1;

	for (int i = 0; i < n; i++) {
		if (look__is_libc(v[i].path) && libc_i < 0)
			libc_i = i;
		if (strstr(look__base_name(v[i].path), "libheapsnap.so"))
			*loaded = true;
	}
	if (libc_i < 0) {
		snprintf(why, why_len, "process %d maps no glibc (static, or another libc): nothing to load the library with",
			 pid);
		return -ENOENT;
	}
	look__symbol_addrs(pid, v, n, libc_i, libc_fns, 6, fns);
	d->fn_pthread_create = fns[0];
	d->fn_attr_init = fns[1];
	d->fn_attr_detach = fns[2];
	d->fn_dlopen = fns[3];
	d->fn_dlsym = fns[4];
	d->fn_dlerror = fns[5];
	if (!d->fn_pthread_create || !d->fn_attr_init || !d->fn_attr_detach || !d->fn_dlopen || !d->fn_dlsym ||
	    !d->fn_dlerror) {
		char *libc = hs_strdup_printable(v[libc_i].path);

		snprintf(why, why_len, "the glibc of process %d (%s) lacks pthread_create or dlopen in libc itself "
			 "(glibc before 2.34?)", pid, libc ? libc : "?");
		free(libc);
		return -ENOENT;
	}
	return 0;
}

/* A thread of the target to stop: the main one if it runs, else any other, never one in
 * uninterruptible sleep (it would stop only when it leaves it) or gone. */
pid_t look__pick_thread(pid_t pid)
{
	char path[64];
	pid_t best = pid;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(d = opendir(path)))
		return pid;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		char st[64] = "";
		FILE *f;

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
		if ((f = fopen(path, "re"))) {
			char *p;

			if (!fgets(st, sizeof(st), f))
				st[0] = 0;
			fclose(f);
			p = strrchr(st, ')');
			if (p && p[1] == ' ' && !strchr("DZXTt", p[2])) {
				best = tid;
				if (tid == pid)
					break;
			}
		}
	}
	closedir(d);
	return best;
}

