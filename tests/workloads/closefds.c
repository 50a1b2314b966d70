// SPDX-License-Identifier: MIT
/* A launched parent whose child closes every inherited descriptor before it runs a program,
 * as Python's subprocess does (close_fds=True): the in-process recorder's child must still
 * find the recording.
 *
 *   closefds [FILE]
 *   parent_keep           2 x 1000 = 2000 bytes live at exit (the parent)
 *   closed_child_keep     5 x 3000 = 15000 bytes live at exit (the child, after its exec)
 *
 * With FILE, the child opens FILE read-write onto every descriptor from 3 to 31 after
 * closing them, so that the numbers the recorder's descriptors had now name FILE, which the
 * recording must leave untouched. Exits with the child's status: 0, 3 if it cannot run. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile kept[8];

NOINLINE void parent_keep(void)
{
	for (int i = 0; i < 2; i++)
		kept[i] = malloc(1000);
}

NOINLINE void closed_child_keep(void)
{
	for (int i = 0; i < 5; i++)
		kept[i] = malloc(3000);
}

int main(int argc, char **argv)
{
	int status;
	pid_t pid;

	if (argc >= 2 && !strcmp(argv[1], "--child")) {
		closed_child_keep();
		return 0;
	}
	parent_keep();
	pid = fork();
	if (pid < 0)
		return 3;
	if (!pid) {
		char *args[] = {argv[0], "--child", NULL};

		closefrom(3);
		for (int fd = 3; argc >= 2 && fd < 32; fd++) {
			int f = open(argv[1], O_RDWR);

			if (f < 0 || (f != fd && (dup2(f, fd) < 0 || close(f))))
				_exit(3);
		}
		execv(argv[0], args);
		_exit(3);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 3;
	return WEXITSTATUS(status);
}
