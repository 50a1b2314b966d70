/* SPDX-License-Identifier: MIT */
/* Starting the command: its path, and a fork held on a pipe until the way in is ready. */
#ifndef HEAPSNAP_LAUNCH_H
#define HEAPSNAP_LAUNCH_H
#include <stdbool.h>
#include <sys/types.h>

/* fork() with a close-on-exec pipe between parent and child. Returns the pid (0 in the
 * child), or -errno with nothing left open. */
pid_t fork_with_pipe(int pfd[2]);
char *resolve_command(const char *cmd);
/* Forks the command, held until *GO_FD is written to; in the child, before exec, ENV(CTX)
 * (when given) sets what the way in needs, -errno if it cannot. */
pid_t start_held_child(char **argv, const char *exe, int *go_fd, int (*env)(const void *ctx), const void *ctx);
/* The command's standard output goes to standard error instead: the recorder's own is the
 * record stream (-o -). Set before start_held_child. */
extern bool launch_stdout_to_stderr;
/* --live: `heapsnap-analyze live --recorder OUR_PID` following PATH as it is written, on our
 * standard output every REFRESH seconds (full-screen on a terminal, else text; JSON: --json).
 * It ignores SIGINT (the recorder's Ctrl-C ends the recording, and the follower with it, at
 * the footer) and gets SIGTERM if the recorder dies. It is held before its exec until a byte
 * or EOF on *GO_FD, which the caller writes and closes. Returns its pid or -errno. */
pid_t start_live_follower(const char *path, double refresh, bool json, int *go_fd);
/* --export: `heapsnap-analyze export --to URL --status-fd 3` following the file (IN_FD -1)
 * or reading the record stream from IN_FD (no -o), held as the live follower is. Its lines
 * on *STATUS_FD say it is ready, then what it sent and lost. Returns its pid or -errno. */
struct rec_opts;
pid_t start_export_follower(const struct rec_opts *o, int in_fd, int *go_fd, int *status_fd);
bool is_script(const char *path);
#endif
