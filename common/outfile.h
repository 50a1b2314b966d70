/* SPDX-License-Identifier: MIT */
/* Output files created safely, for a recorder that runs as root and an analyzer that may:
 * never through a symlink, never taking over another user's file, created 0600, and
 * appearing under their name only when published, so a failure leaves nothing half-made. */
#ifndef HEAPSNAP_OUTFILE_H
#define HEAPSNAP_OUTFILE_H
#include <stdbool.h>

struct outfile;

/* Opens PATH for writing. A regular file (new, or ours to replace) is written as an unnamed
 * or exclusively created temporary file in PATH's directory, which is opened once for every
 * later step, and renamed into place by outfile__publish(). A device or FIFO is written in
 * place. Refused: a symlink (-ELOOP), a directory (-EISDIR), a regular file or FIFO owned by
 * another user (-EPERM), a FIFO nobody opens for reading within 10 s (-ENXIO). /dev/stdout,
 * /dev/fd/N and /proc/self/fd/N write standard output or descriptor N itself, in place (refused if closed or
 * read-only). Returns
 * -errno; a sentence saying why goes to WHY when it is not errno's own. */
int outfile__open(const char *path, struct outfile **out, const char **why);
int outfile__fd(const struct outfile *f);
/* Gives the file its name (once; later calls do nothing). Returns -errno. */
int outfile__publish(struct outfile *f);
bool outfile__published(const struct outfile *f);
/* Closes; an unpublished file is removed. Accepts NULL. */
void outfile__free(struct outfile *f);
#endif
