/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_PROCFS_H
#define HEAPSNAP_PROCFS_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_map {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor;
	char perms[5]; /* rwxp */
	char *path;
};

/* The executable, file-backed mappings of PID. */
int proc_read_maps(pid_t pid, struct proc_map **out, int *nr);
/* Every file-backed mapping of PID, executable or not. */
int proc_read_file_maps(pid_t pid, struct proc_map **out, int *nr);
void proc_maps_free(struct proc_map *m, int nr);
/* The regular file mapped at M in PID, checked to be that file (device, inode); -errno. */
int proc_open_mapped(pid_t pid, const struct proc_map *m);
/* Whether PATH leads to the file with device DEV (user-space encoding) and inode INO. */
bool same_file(const char *path, uint64_t dev, uint64_t ino);
/* A /proc/PID file as a NUL-terminated string (cmdline's NULs become spaces). */
char *proc_read_string(pid_t pid, const char *file);
char *proc_exe(pid_t pid);
pid_t proc_ppid(pid_t pid);
/* The state letter of /proc/PID/stat (R, S, D, Z...), 0 if it cannot be read. */
char proc_state(pid_t pid);
/* Exited and not reaped (Z), or being reaped (X): nothing of it is left to record. */
bool proc_is_zombie(pid_t pid);
int proc_rss(pid_t pid, uint64_t *rss, uint64_t *vm);
char *proc_thread_comm(pid_t pid, pid_t tid);
/* The recorder's PID namespace, for BPF to number pids as getpid() and /proc do: its nsfs
 * device and inode, *INO 0 for the initial namespace (no translation needed). -EXDEV when
 * /proc is not this namespace's (its pids would name other processes). */
int proc_pid_ns(uint64_t *dev, uint64_t *ino);
/* Calls CB for each thread id of PID. */
int proc_for_each_thread(pid_t pid, void (*cb)(pid_t tid, void *ctx), void *ctx);
/* Calls CB for each descendant of ROOT (children of each of its threads, then theirs), parents
 * before their children, at most MAX of them; CB sees each one before its own children are
 * read, so a child it forks after CB returns is either read here or made by a process CB has
 * already seen. Returns how many were found, or -errno if ROOT's own list cannot be read. */
#define PROC_DESCENDANTS_MAX 65536
int proc_for_each_descendant(pid_t root, int max, void (*cb)(pid_t pid, pid_t ppid, void *ctx), void *ctx);
/* How many descendants ROOT has (at most PROC_DESCENDANTS_MAX), or -errno. */
int proc_count_descendants(pid_t root);
#endif
