/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_BUILDID_H
#define HEAPSNAP_BUILDID_H
#include <stddef.h>
#include <stdint.h>

#define HS_BUILD_ID_MAX 64

/* Reads the GNU build-id note of the ELF file open at FD. Returns its length (> 0),
 * 0 when the file has none, or a negative errno when it is not a readable ELF file. */
int hs_read_build_id_fd(int fd, uint8_t *out, size_t outlen);
/* Opens PATH for reading as an ELF file: a regular file at least an ELF header long, and
 * never blocking on the open (a FIFO). Returns the fd or -errno. */
int hs_open_elf(const char *path);
int hs_read_build_id(const char *path, uint8_t *out, size_t outlen);
/* Writes LEN bytes as lowercase hex into BUF (2*LEN+1 bytes). */
char *hs_hex(const uint8_t *p, size_t len, char *buf);
#endif
