/* SPDX-License-Identifier: MIT */
/* The BPF way in's own state, shared by its files: bpf_way.c (its way_ops: loading, the
 * rings, attaching for a command, a pid or the host), bpf_probes.c (allocator probes and
 * their links, per object) and bpf_unwind_tables.c (--stack auto's tables). */
#ifndef HEAPSNAP_BPF_WAY_H
#define HEAPSNAP_BPF_WAY_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "elfsyms.h"
#include "hmap.h"
#include "recorder.h"
#include "session.h"

struct session;
struct object;
struct proc;
struct heapsnap_bpf;
struct unw_tables;
struct bpf_link;

/* An object's unwind table in the BPF rows (bpf_unwind_tables.c), and its executable
 * segments, which tell a mapping's link-time addresses. */
#define OBJ_UNW_SEGS 4
struct obj_seg {
	uint64_t off, vaddr, filesz;
};
struct obj_unwind {
	int state; /* 0 not tried, 1 built, -1 none */
	uint32_t row_start, row_count, nsegs;
	struct obj_seg segs[OBJ_UNW_SEGS];
};

/* What BPF keeps of an object (struct object, by its index): scanned once for allocator
 * functions, whatever pids map it. */
struct bpf_obj {
	struct obj_unwind unw;
	struct alloc_func_list funcs;
	bool scanned;
	bool listed; /* its probes are in the file and were announced */
	bool libstdcxx; /* libstdc++: its throwing operator new gets no return probe (noret_func) */
};

/* An attached probe: a libbpf link, or the fd of a link made with bpf() directly. */
struct link_ent {
	pid_t pid;
	struct bpf_link *link;
	int fd;
};

struct bpf_way {
	struct heapsnap_bpf *skel;
	int *ring_fds;            /* one per possible CPU, session.nr_rings */
	struct unw_tables *unw;   /* --stack auto */
	bool warned_unw_maps;
	struct bpf_obj *objs;     /* by object index */
	int cap_objs;
	struct hmap attached;     /* (pid, object index) */
	struct link_ent *links;
	int nr_links;
	/* How allocator probes are attached, and the kernel's attach type for it, read from its
	 * BTF: the uapi headers and the libbpf this builds against predate both. */
	enum probe_links links_mode;
	uint32_t links_type;
	int nr_probe_fail;
	pid_t probe_pid;          /* the pid uprobes are bound to for a command or -p: -1 when following forks */
	uint64_t forks_untracked, forks_untracked_warned; /* lost.forks_untracked, and as last said */
	char **libs;              /* the libraries the command will load, probed before it starts */
	int nr_libs;
	uint64_t maps_gen;        /* the mmap tracepoints' count of changes, as last seen */
	bool poll_maps;           /* no mmap tracepoints: re-read maps on a timer */
	uint64_t next_maps_poll;
};

static inline struct bpf_way *bpf_of(const struct session *s)
{
	return s->way_state;
}

/* bpf_probes.c */
/* BPF's part of object O, NULL when out of memory. */
struct bpf_obj *bpf_obj(struct bpf_way *b, const struct object *o);
void bpf_objs_free(struct bpf_way *b);
void bpf_choose_links(struct bpf_way *b, enum probe_links want);
/* Sets the programs' attach types for the links chosen, before loading. */
void bpf_set_link_types(struct bpf_way *b);
void destroy_links(struct link_ent *links, int nr);
/* Takes L, or else the link fd FD. */
int add_link(struct bpf_way *b, pid_t pid, struct bpf_link *l, int fd);
/* Attaches every allocator probe of object O for PID (-1: every process). */
void attach_object(struct session *s, pid_t pid, struct object *o, const char *open_path);
/* The object at PATH (stat'ed), probed for PID. */
void attach_path(struct session *s, pid_t pid, const char *path);
void detach_pid(struct bpf_way *b, pid_t pid);

/* bpf_unwind_tables.c */
int unw_tables__open(struct session *s);
void unw_tables__free(struct unw_tables *u);
void unw_tables__update(struct session *s, const struct proc *p);
/* Builds the unwind table of the object at PATH ahead of its first mapping. */
void unw_tables__preload(struct session *s, const char *path);
#endif
