/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_REC_SIGNALS_H
#define HEAPSNAP_REC_SIGNALS_H
#include <stdbool.h>

/* What the recorder was asked, by signals, since the last read. */
struct rec_signals {
	int stop;           /* SIGINT, SIGTERM or SIGHUP: the first one, 0 if none */
	unsigned snapshots; /* SIGUSR1s not yet turned into snapshots */
	bool child;         /* SIGCHLD */
};

/* Blocks the recorder's signals and opens a signalfd for them, and ignores SIGPIPE: called
 * first thing in main, so a signal during start-up is kept for the loop instead of killing
 * the process. Returns the fd or -errno. */
int rec_signals__init(void);
/* In a forked child before exec: the signal mask and SIGPIPE's disposition the recorder
 * started with. */
void rec_signals__restore(void);
/* Adds what arrived to *S; never blocks. */
void rec_signals__read(struct rec_signals *s);
int rec_signals__fd(void);
#endif
