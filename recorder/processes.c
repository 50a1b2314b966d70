// SPDX-License-Identifier: MIT
/* Processes and their mappings: the PROCESS, THREAD_NAME, MAPPING and UNMAP records, from
 * /proc while a process lives and from what its events carried when it is gone. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "buildid.h"
#include "elfsyms.h"
#include "processes.h"
#include "session.h"
#include "way.h"

struct proc *proc_find(struct session *s, pid_t pid)
{
	struct hmap_slot *slot = hmap_find(&s->proc_idx, (uint64_t)pid, 0);

	return slot ? &s->procs[slot->val - 1] : NULL;
}

static bool same_map(const struct proc_map *a, const struct proc_map *b)
{
	return a->start == b->start && a->end == b->end && a->offset == b->offset && a->inode == b->inode;
}

void write_mapping(struct session *s, pid_t pid, const struct proc_map *m, uint64_t now)
{
	struct hs_record r = {.type = HS_REC_MAPPING, .time = now, .pid = (uint32_t)pid};
	uint8_t bid[HS_BUILD_ID_MAX];
	int fd = proc_open_mapped(pid, m), n = 0;

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
	write_rec(&s->out, &r);
}

/* Re-reads PID's maps: writes what appeared and vanished, and probes new objects. */
void rescan_maps(struct session *s, struct proc *p, bool attach, uint64_t when)
{
	struct proc_map *nm = NULL;
	int nn = 0, i = 0, j = 0;
	uint64_t began = mono_ns(), now = when ? when : ticks(&s->out, began);

	if (proc_read_maps(p->pid, &nm, &nn))
		return;
	/* A process always has mappings; none means it has exited and its exit event is
	 * still waiting to be merged. Its mappings stay as they were. */
	if (!nn) {
		proc_maps_free(nm, nn);
		return;
	}
	if (s->out.header_written) {
		/* Both lists are sorted by start address. */
		while (i < p->nr_maps || j < nn) {
			if (i < p->nr_maps && j < nn && same_map(&p->maps[i], &nm[j])) {
				i++, j++;
			} else if (j >= nn || (i < p->nr_maps && p->maps[i].start <= nm[j].start)) {
				struct hs_record r = {.type = HS_REC_UNMAP, .time = now, .pid = (uint32_t)p->pid};

				r.unmap.start = p->maps[i].start;
				r.unmap.end = p->maps[i].end;
				write_rec(&s->out, &r);
				i++;
			} else {
				write_mapping(s, p->pid, &nm[j++], now);
			}
		}
	}
	proc_maps_free(p->maps, p->nr_maps);
	p->maps = nm;
	p->nr_maps = nn;
	p->maps_ns = began;
	if (s->way->mappings)
		s->way->mappings(s, p, attach);
}

void rescan_all_maps(struct session *s, bool attach)
{
	for (int i = 0; i < s->nr_procs; i++)
		if (s->procs[i].alive)
			rescan_maps(s, &s->procs[i], attach, 0);
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
 * working directory, or from its parent's, which it inherited and which usually outlives it,
 * or from ours; the device and inode tell whether a candidate is that file. */
static char *exec_path(const struct hs_proc_event *e, uint64_t dev)
{
	char name[HS_EXEC_PATH_MAX + 1], cand[4][HS_EXEC_PATH_MAX + 64];
	int n = 0;

	memcpy(name, e->path, HS_EXEC_PATH_MAX);
	name[HS_EXEC_PATH_MAX] = 0;
	if (name[0] == '/') {
		snprintf(cand[n++], sizeof(cand[0]), "%s", name);
	} else if (name[0]) {
		snprintf(cand[n++], sizeof(cand[0]), "/proc/%u/cwd/%s", e->h.pid, name);
		if (e->ppid)
			snprintf(cand[n++], sizeof(cand[0]), "/proc/%u/cwd/%s", e->ppid, name);
		/* Both gone (a script's short command): ours, where a launched command started. */
		snprintf(cand[n++], sizeof(cand[0]), "%s", name);
	}
	for (int i = 0; i < n; i++)
		if (same_file(cand[i], dev, e->exe_ino))
			return realpath(cand[i], NULL);
	return NULL;
}

/* What /proc says of PID while it lives; else what its event carried (an exec's name,
 * path and arguments; a fork's name), and for a fork child what its parent was. */
void write_process(struct session *s, pid_t pid, uint32_t origin, pid_t ppid, const struct hs_proc_event *e)
{
	struct hs_record r = {.type = HS_REC_PROCESS, .time = ticks(&s->out, mono_ns()), .pid = (uint32_t)pid};
	char *comm = proc_read_string(pid, "comm"), *cmdline = proc_read_string(pid, "cmdline");
	char *exe = proc_exe(pid), path[64], ecomm[17];
	struct proc *p = proc_find(s, pid), *parent = ppid > 0 ? proc_find(s, ppid) : NULL;
	uint8_t bid[HS_BUILD_ID_MAX];
	bool later_image = false;
	struct stat st;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	/* Read after the process exec'd again (a shell's `exec sleep`, before its first exec was
	 * handled), /proc describes the next image: the event's own name, arguments and file
	 * are this one's. Taken from /proc, the shell read as /usr/bin/sleep, and so did every
	 * fork child of it that was gone before it was looked at. */
	if (e && e->h.type == HS_EV_EXEC && e->exe_ino && !stat(path, &st) && st.st_ino != e->exe_ino) {
		later_image = true;
		free(comm), comm = NULL;
		free(cmdline), cmdline = NULL;
		free(exe), exe = NULL;
	}
	/* A fork child's record is of its fork: what its parent held then is looked up at that
	 * time (heapsnap-analyze, for a child whose maps were never read). */
	if (e && e->h.type == HS_EV_FORK)
		r.time = ticks(&s->out, e->h.ts);
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
	n = later_image ? 0 : hs_read_build_id(path, bid, sizeof(bid));
	r.process.ppid = (uint32_t)(ppid ? ppid : proc_ppid(pid));
	r.process.origin = origin;
	r.process.comm = comm ? comm : "";
	r.process.cmdline = cmdline ? cmdline : "";
	r.process.exe = exe ? exe : "";
	r.process.build_id = (struct hs_bytes){bid, n > 0 ? (uint32_t)n : 0};
	write_rec(&s->out, &r);
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

void thread_named(struct session *s, pid_t pid, pid_t tid)
{
	hmap_put(&s->tids, (uint64_t)pid, (uint64_t)tid, NULL);
}

struct thread_ctx {
	struct session *s;
	pid_t pid;
};

static void name_thread(pid_t tid, void *ctx)
{
	struct thread_ctx *t = ctx;
	struct hs_record r = {.type = HS_REC_THREAD_NAME, .pid = (uint32_t)t->pid, .tid = (uint32_t)tid};
	bool created;
	char *comm;

	if (!hmap_put(&t->s->tids, (uint64_t)t->pid, (uint64_t)tid, &created) || !created)
		return;
	comm = proc_thread_comm(t->pid, tid);
	if (!comm)
		return;
	r.thread_name.comm = comm;
	write_rec(&t->s->out, &r);
	free(comm);
}

void name_threads(struct session *s, pid_t pid)
{
	struct thread_ctx t = {s, pid};

	proc_for_each_thread(pid, name_thread, &t);
}

struct proc *add_proc(struct session *s, pid_t pid)
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
void track_process(struct session *s, pid_t pid, uint32_t origin, pid_t ppid, const struct hs_proc_event *e)
{
	struct proc *p = add_proc(s, pid);
	uint64_t when;

	if (!p)
		return;
	/* A fork child was tracked by BPF at its fork, from its first instruction: tracked again
	 * now, perhaps after it exited, its pid would stay tracked for its next owner. */
	if (s->way->process_tracked && origin != HS_PROC_FORKED)
		s->way->process_tracked(s, pid);
	write_process(s, pid, origin, ppid, e);
	name_threads(s, pid);
	/* Every mapping is new to the file; a fork child's are from its fork on (it allocated
	 * before we heard of it). */
	when = origin == HS_PROC_FORKED && e ? ticks(&s->out, e->h.ts) : 0;
	rescan_maps(s, p, true, when);
	if (!p->nr_maps && origin == HS_PROC_FORKED) {
		/* Gone before we looked: at fork its mappings were its parent's. */
		struct proc *parent = proc_find(s, ppid);

		for (int i = 0; parent && i < parent->nr_maps; i++)
			write_mapping(s, pid, &parent->maps[i], when ? when : ticks(&s->out, mono_ns()));
	}
}

/* Whether one of P's mappings, as last read, holds ADDR. */
static bool proc_covers(const struct proc *p, uint64_t addr)
{
	for (int i = 0; i < p->nr_maps; i++)
		if (p->maps[i].start <= addr && addr < p->maps[i].end)
			return true;
	return false;
}

/* After an exec: if the image's text is not among the mappings read (the process already
 * exited), write it from what the kernel reported and the file's program headers. */
static void ensure_exe_mapping(struct session *s, struct proc *p, const struct hs_proc_event *e, uint64_t t)
{
	uint64_t dev = makedev(e->exe_dev >> 20, e->exe_dev & 0xfffff);
	struct hs_record r = {.type = HS_REC_MAPPING, .time = t, .pid = e->h.pid};
	struct object *o;
	uint64_t off;

	if (!e->start_code || !e->exe_ino || proc_covers(p, e->start_code))
		return;
	o = objects__find(&s->objs, dev, e->exe_ino);
	if (!o) {
		char *abs = exec_path(e, dev);

		o = abs ? objects__get(&s->objs, dev, e->exe_ino, abs) : NULL;
		free(abs);
		if (!o)
			return;
	}
	object__identify(o, o->path);
	if (elf_exec_offset(o->path, &off))
		return;
	r.mapping.start = e->start_code & ~0xfffull;
	r.mapping.end = (e->end_code + 0xfff) & ~0xfffull;
	r.mapping.offset = off;
	r.mapping.inode = e->exe_ino;
	r.mapping.path = o->path;
	r.mapping.build_id = (struct hs_bytes){o->build_id, (uint32_t)o->build_id_len};
	write_rec(&s->out, &r);
}

void on_proc_event(struct session *s, const struct hs_proc_event *e, uint64_t t)
{
	struct proc *p;

	switch (e->h.type) {
	case HS_EV_FORK:
		if (s->o->verbose)
			rec_warnx("following fork: %u -> %u", e->ppid, e->h.pid);
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
			} else if (s->o->follow_forks && e->ppid && proc_find(s, (pid_t)e->ppid)) {
				/* A child made by vfork or posix_spawn: it ran no fork handler of the
				 * in-process recorder, which hears of it first at its exec. */
				track_process(s, (pid_t)e->h.pid, HS_PROC_FORKED, (pid_t)e->ppid, e);
				p = proc_find(s, (pid_t)e->h.pid);
				if (p)
					ensure_exe_mapping(s, p, e, t);
			}
			break;
		}
		write_process(s, p->pid, HS_PROC_EXEC, 0, e);
		/* Tracked at its first allocation, handled before this event from another CPU's
		 * ring: the maps read then are already the new image's. */
		if (p->nr_maps && e->h.ts < p->maps_ns)
			break;
		/* The old image's mappings end here, even if the new one is gone before its own
		 * can be read: then the event's text mapping is all there is of it. */
		for (int i = 0; s->out.header_written && i < p->nr_maps; i++) {
			struct hs_record r = {.type = HS_REC_UNMAP, .time = t, .pid = (uint32_t)p->pid};

			r.unmap.start = p->maps[i].start;
			r.unmap.end = p->maps[i].end;
			write_rec(&s->out, &r);
		}
		proc_maps_free(p->maps, p->nr_maps);
		p->maps = NULL;
		p->nr_maps = 0;
		rescan_maps(s, p, true, t);
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
		/* The library saw the process end, not how: an EXIT all the same, its status
		 * unknown, so that its blocks are known freed by its exit (681 injected postgres
		 * backends gone had 702 MB "live at the end"). The launched command's comes from
		 * waitpid, with its status. */
		if (e->h.kind & HS_EXIT_FLAG_NO_STATUS) {
			r.exit.status = 0;
			r.exit.flags = HS_EXIT_STATUS_UNKNOWN;
		}
		if (!(e->h.kind & HS_EXIT_FLAG_NO_STATUS) || p->pid != s->child)
			write_rec(&s->out, &r);
		if (p->alive) {
			p->alive = false;
			if (p->pid != s->o->pid && p->pid != s->child && s->way->process_gone)
				s->way->process_gone(s, p->pid);
		}
		break;
	}
	}
}

/* Code was mapped: read the maps while the process lives, or keep what the kernel said. */
void on_mmap_event(struct session *s, const struct hs_mmap_event *e, uint64_t t)
{
	struct proc *p = proc_find(s, (pid_t)e->h.pid);
	struct hs_record r = {.type = HS_REC_MAPPING, .time = t, .pid = e->h.pid};
	uint64_t dev = makedev(e->dev >> 20, e->dev & 0xfffff);
	struct object *o = NULL;
	char name[64];

	if (!p)
		return;
	rescan_maps(s, p, true, t);
	if (proc_covers(p, e->addr))
		return;
	o = objects__find(&s->objs, dev, e->ino);
	if (!o && e->path[0] == '/') {
		/* Named by the sender (the in-process recorder): used if it is still that file. */
		char path[HS_EXEC_PATH_MAX + 1];

		memcpy(path, e->path, HS_EXEC_PATH_MAX);
		path[HS_EXEC_PATH_MAX] = 0;
		if (same_file(path, dev, e->ino))
			o = objects__get(&s->objs, dev, e->ino, path);
	}
	if (o)
		object__identify(o, o->path);
	snprintf(name, sizeof(name), "[inode %" PRIu64 "]", (uint64_t)e->ino);
	r.mapping.start = e->addr;
	r.mapping.end = e->addr + e->len;
	r.mapping.offset = e->off;
	r.mapping.inode = e->ino;
	r.mapping.path = o ? o->path : name;
	if (o)
		r.mapping.build_id = (struct hs_bytes){o->build_id, (uint32_t)o->build_id_len};
	write_rec(&s->out, &r);
}

void write_attached(struct session *s, pid_t pid)
{
	struct proc *p = proc_find(s, pid);

	write_process(s, pid, HS_PROC_ATTACHED, 0, NULL);
	name_threads(s, pid);
	for (int i = 0; p && i < p->nr_maps; i++)
		write_mapping(s, pid, &p->maps[i], 0);
}

void procs_free(struct session *s)
{
	for (int i = 0; i < s->nr_procs; i++) {
		proc_maps_free(s->procs[i].maps, s->procs[i].nr_maps);
		free(s->procs[i].comm);
		free(s->procs[i].cmdline);
		free(s->procs[i].exe);
	}
	hmap_free(&s->proc_idx);
	free(s->procs);
	hmap_free(&s->tids);
}
