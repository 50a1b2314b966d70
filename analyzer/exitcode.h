/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_EXITCODE_H
#define HEAPSNAP_EXITCODE_H
/* Exit codes shared by every subcommand. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,    /* an error: unreadable file, failed output */
	EXIT_USAGE = 2,   /* bad options */
	EXIT_CORRUPT = 3, /* the file is corrupt part way (output covers what came before) */
	EXIT_NODATA = 4,  /* empty recording, or a snapshot that does not exist */
	EXIT_GROWTH = 5,  /* diff --max-growth: the heap grew past the limit */
};
#endif
