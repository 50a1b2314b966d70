/* SPDX-License-Identifier: MIT */
/* The fuzz input as a file the reader can open: a memfd is a regular file, so the reader's
 * own checks (regular file, sizes, frames) all run as they would on disk. */
#ifndef HEAPSNAP_FUZZ_COMMON_H
#define HEAPSNAP_FUZZ_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("heapsnap-fuzz", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}
#endif
