/* SPDX-License-Identifier: MIT */
/* The recorder's parts, around one struct session: launch.c starts the command, bpf_probes.c is
 * the BPF way in (objects, probes, links), the in-process way in is inproc_shm.c, ring_reader.c reads
 * either kind of ring, pipeline.c turns events into records (live set, stacks, counters,
 * snapshots), processes.c follows processes and their mappings, and session.c runs it all:
 * open -> start -> attach -> poll -> finish. */
#ifndef HEAPSNAP_SESSION_H
#define HEAPSNAP_SESSION_H
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
#include "nspid.h"
#include "procfs.h"
#include "ptrmap.h"
#include "record.h"
#include "recorder.h"
#include "inproc_shm.h"
#include "sampling.h"
#include "inject.h"
#include "signals.h"

#define TICK_NS 1000ull

/* An ELF file some target maps: scanned once for allocator functions, whatever pids map it. */
/* An object's unwind table in the BPF rows (recorder/bpf/bpf_unwind_tables.c), and its executable segments,
 * which tell a mapping's link-time addresses. */
#define OBJ_UNW_SEGS 4
struct obj_seg {
	uint64_t off, vaddr, filesz;
};
struct obj_unwind {
	int state; /* 0 not tried, 1 built, -1 none */
	uint32_t row_start, row_count, nsegs;
	struct obj_seg segs[OBJ_UNW_SEGS];
};

struct object {
	struct obj_unwind unw;
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
	/* When MAPS began to be read (CLOCK_MONOTONIC ns): an exec event stamped before it
	 * arrives late (its ring was merged after another CPU's), and MAPS are the new image's. */
	uint64_t maps_ns;
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
	struct unw_tables *unw; /* BPF, --stack auto */
	bool warned_unw_maps;
	uint64_t dwarf_used_max; /* the largest stack in use that a dwarf window did not hold */
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
	uint64_t procs_unrecorded; /* in-process: processes refused or found without the library */
	struct hmap seen_images;   /* (pid, image key) of the command's descendants: 1 seen, 2 checked */
	bool seen_full;
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
	struct inject *inj;     /* injected: the library in the running process of -p */
	uint64_t inj_passed, inj_held, inj_timed_out; /* injected: the stub's counts (inject__counts) */
	struct nspid *nsx;      /* injected into another PID namespace: its pids to the host's */
};

/* In-process rings: one per thread of the targets at once, claimed at its first event.
 * Memory is touched only as rings are used. */
#define PRELOAD_RINGS 256
#define PRELOAD_RING_BYTES (1u << 20)

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
	bool no_wrap;       /* in-process: records never cross the end of the ring */
	bool broken;        /* a record claimed more than its producer had written */
};

struct thread_ctx {
	struct session *s;
	pid_t pid;
};

struct run {
	char *exe;           /* the command, resolved */
	char **libs;         /* the libraries it will load (BPF: probed before it starts) */
	int nr_libs;
	int go_fd;           /* releases the held command */
	uint32_t ring_bytes;
	uint64_t t_start;
	bool not_found;      /* the command: exit 127, as a shell says */
};

extern const char *const counter_names[HS_CNT__MAX];

/* session.c */
/* bpf_unwind_tables.c */
int unw_tables__open(struct session *s);
void unw_tables__free(struct unw_tables *u);
void unw_tables__update(struct session *s, const struct proc *p);

void rec_warnx(const char *fmt, ...);
uint64_t mono_ns(void);
uint64_t ticks(const struct session *s, uint64_t ns);
void write_rec(struct session *s, const struct hs_record *r);

/* launch.c */
pid_t fork_with_pipe(int pfd[2]);
char *resolve_command(const char *cmd);
pid_t start_held_child(char **argv, const char *exe, int *go_fd, const struct preload *pre, const char *lib);
bool is_script(const char *path);

/* bpf_probes.c */
struct object *object_get(struct session *s, uint64_t dev, uint64_t ino, const char *path);
void destroy_links(struct link_ent *links, int nr);
void scan_object(struct session *s, struct object *o, const char *open_path);
void attach_object(struct session *s, pid_t pid, struct object *o, const char *open_path);
void detach_pid(struct session *s, pid_t pid);
int check_privileges(void);
int bpf_start(struct session *s, struct run *u);
int bpf_attach(struct session *s, struct run *u);

/* processes.c */
void name_thread_cb(pid_t tid, void *ctx);
struct proc *proc_find(struct session *s, pid_t pid);
void write_mapping(struct session *s, pid_t pid, const struct proc_map *m, uint64_t now);
/* WHEN: the time of the event that changed them (mappings found new are stamped so: what
 * was allocated from them since is found in them), 0 for now. */
void rescan_maps(struct session *s, struct proc *p, bool attach, uint64_t when);
void write_process(struct session *s, pid_t pid, uint32_t origin, pid_t ppid, const struct hs_proc_event *e);
struct proc *add_proc(struct session *s, pid_t pid);
void track_process(struct session *s, pid_t pid, uint32_t origin, pid_t ppid, const struct hs_proc_event *e);
void on_proc_event(struct session *s, const struct hs_proc_event *e, uint64_t t);
void on_mmap_event(struct session *s, const struct hs_mmap_event *e, uint64_t t);

/* pipeline.c */
int handle_event(struct session *s, const void *data, size_t len);
void read_counters(struct session *s);
void write_counters(struct session *s, uint32_t type);
void warn_losses(struct session *s);
void snapshot(struct session *s, uint32_t origin, const char *label, uint64_t t);
void sample_rss(struct session *s);

/* ring_reader.c */
void ring_use_memory(struct ring *r, uint64_t *cons, const uint64_t *prod, const uint8_t *data, uint32_t size);
void ring_unmap(struct ring *r);
uint64_t drain(struct session *s, bool all, bool *held);
int create_rings(struct session *s, uint32_t ring_bytes);
int rings_epoll(struct session *s, int wake_fd);
/* In-process (inproc_children.c): hands the shared memory to the command's descendants that ask the
 * socket; once a second, says which of them run without being recorded. */
void serve_children(struct session *s);
void scan_children(struct session *s);
void children_free(struct session *s);
int install_rings(struct session *s);
int wait_rings(struct session *s, int timeout_ms);

#endif
