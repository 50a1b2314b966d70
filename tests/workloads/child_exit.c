// SPDX-License-Identifier: MIT
/* A fork child that exits holding blocks, its parent running on (t_analyzer_exited_ages):
 *
 *   child_keep   5 x 3000 = 15000 live in the child when it calls exit(3)
 *
 * The parent waits for the child, then runs 100 ms more before it exits 0: the child's blocks
 * are 100 ms younger at its exit than at the end of the recording. exit(), not _exit(): the
 * in-process recorder's library hears of an exit from its destructor. */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile kept[5];

NOINLINE static void child_keep(void)
{
	for (int i = 0; i < 5; i++)
		kept[i] = malloc(3000);
}

int main(void)
{
	struct timespec t = {0, 100 * 1000 * 1000};
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return 2;
	if (pid == 0) {
		child_keep();
		exit(3);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
		return 4;
	nanosleep(&t, NULL);
	return 0;
}
