// SPDX-License-Identifier: MIT
/* Starting the command: its path, a fork held on a pipe until the probes (or the
 * preloaded library's memory) are ready, and the forks that tell what it will load. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "launch.h"
#include "recorder.h"
#include "signals.h"

/* fork() with a close-on-exec pipe between parent and child. Returns the pid (0 in the
 * child), or -errno with nothing left open. */
pid_t fork_with_pipe(int pfd[2])
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

char *resolve_command(const char *cmd)
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

/* Forks the command, held until the probes are in place; ENV: with the environment the way
 * in needs (the one that preloads its library). */
bool launch_stdout_to_stderr;

pid_t start_held_child(char **argv, const char *exe, int *go_fd, int (*env)(const void *ctx), const void *ctx)
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
		if (launch_stdout_to_stderr && dup2(2, 1) < 0)
			_exit(127);
		if (env && env(ctx)) {
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

bool is_script(const char *path)
{
	char head[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes = fd >= 0 && read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';

	if (fd >= 0)
		close(fd);
	return yes;
}

/* heapsnap-analyze beside our own executable (an install, or .output/), else on PATH. */
static void analyzer_path(char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(buf, len, "%s/heapsnap-analyze", self);
			if (!access(buf, X_OK))
				return;
		}
	}
	snprintf(buf, len, "heapsnap-analyze");
}

/* In a follower's child, released: it ignores SIGINT (the recorder's Ctrl-C ends the
 * recording, and the follower at its end), dies with the recorder, and runs EXE. */
static _Noreturn void exec_follower(const char *exe, char **argv, pid_t parent, const char *what)
{
	signal(SIGINT, SIG_IGN);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);
	if (strchr(exe, '/'))
		execv(exe, argv);
	else
		execvp(exe, argv);
	fprintf(stderr, "heapsnap-record: cannot run %s for %s: %s\n", exe, what, strerror(errno));
	_exit(127);
}

pid_t start_live_follower(const char *path, double refresh, bool json, int *go_fd)
{
	char exe[PATH_MAX + 32], every[32], me[24];
	pid_t parent = getpid(), pid;
	int pfd[2];

	analyzer_path(exe, sizeof(exe));
	snprintf(every, sizeof(every), "%.6gs", refresh);
	snprintf(me, sizeof(me), "%d", (int)parent);
	pid = fork_with_pipe(pfd);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		/* On a terminal, the full-screen view, whose q and m signal this recorder. */
		char *argv[10] = {"heapsnap-analyze", "live", "--recorder", me, "--refresh", every};
		int n = 6;

		if (json)
			argv[n++] = "--json";
		argv[n++] = "--";
		argv[n++] = (char *)path;
		char c;

		argv[n] = NULL;
		close(pfd[1]);
		/* Held until the recorder has told its way in to leave this process out. */
		if (read(pfd[0], &c, 1) < 0)
			_exit(1);
		close(pfd[0]);
		exec_follower(exe, argv, parent, "--live");
	}
	close(pfd[0]);
	*go_fd = pfd[1];
	return pid;
}

pid_t start_export_follower(const struct rec_opts *o, int in_fd, int *go_fd, int *status_fd)
{
	char exe[PATH_MAX + 32], every[32], keep[16], queue[16];
	pid_t parent = getpid(), pid;
	int pfd[2], sfd[2];

	analyzer_path(exe, sizeof(exe));
	snprintf(every, sizeof(every), "%.6gs", o->export_interval);
	snprintf(keep, sizeof(keep), "%u", o->export_keep);
	snprintf(queue, sizeof(queue), "%u", o->export_queue);
	if (pipe2(sfd, O_CLOEXEC))
		return -errno;
	pid = fork_with_pipe(pfd);
	if (pid < 0) {
		close(sfd[0]);
		close(sfd[1]);
		return pid;
	}
	if (pid == 0) {
		char *argv[24] = {"heapsnap-analyze", "export", "--to", (char *)o->export_url, "--interval", every,
				  "--status-fd", "3"};
		const char *pass[][2] = {{"--service-name", o->service_name},
					 {"--export-header-file", o->export_header_file},
					 {"--export-cacert", o->export_cacert},
					 {"--keep", o->export_keep ? keep : NULL},
					 {"--queue", o->export_queue ? queue : NULL}};
		int n = 8;
		char c;

		for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
			if (!pass[i][1])
				continue;
			argv[n++] = (char *)pass[i][0];
			argv[n++] = (char *)pass[i][1];
		}
		argv[n++] = "--";
		argv[n++] = in_fd >= 0 ? "-" : (char *)o->output;
		argv[n] = NULL;
		close(pfd[1]);
		close(sfd[0]);
		/* Held until the recorder has told its way in to leave this process out. */
		if (read(pfd[0], &c, 1) < 0)
			_exit(1);
		if (dup2(sfd[1], 3) < 0 || (in_fd >= 0 && dup2(in_fd, 0) < 0))
			_exit(1);
		exec_follower(exe, argv, parent, "--export");
	}
	close(pfd[0]);
	close(sfd[1]);
	*go_fd = pfd[1];
	*status_fd = sfd[0];
	return pid;
}
