// SPDX-License-Identifier: MIT
/* A launched program that closes the descriptor of the recorder's memory once it runs (a
 * daemon closing every descriptor it did not open, say) and opens a file of its own at that
 * number: the library, whose wakes come as its rings fill, must never write into that file.
 *
 *   steal_fd FILE
 *   steal_keep     100 x 3000 = 300000 bytes live at exit
 *
 * Then 1,000,000 allocations and frees, enough to fill any ring past a quarter many times.
 * Exits 0; 2 on bad arguments or without HEAPSNAP_SHM; 3 if FILE cannot be put at the number;
 * 4 if FILE was written to. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile kept[100];

NOINLINE void steal_keep(void)
{
	for (int i = 0; i < 100; i++)
		kept[i] = malloc(3000);
}

NOINLINE void steal_churn(void)
{
	for (int i = 0; i < 1000000; i++) {
		void *volatile p = malloc(64 + (i & 255));

		free(p);
	}
}

int main(int argc, char **argv)
{
	const char *env = getenv("HEAPSNAP_SHM");
	int shm_fd, fd;
	struct stat st;

	if (argc != 2 || !env || sscanf(env, "%d,", &shm_fd) != 1)
		return 2;
	close(shm_fd);
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || (fd != shm_fd && dup2(fd, shm_fd) != shm_fd))
		return 3;
	steal_keep();
	steal_churn();
	if (fstat(shm_fd, &st))
		return 3;
	return st.st_size ? 4 : 0;
}
