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
bool is_script(const char *path);
#endif
