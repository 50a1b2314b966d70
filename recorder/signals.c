// SPDX-License-Identifier: MIT
/* The recorder's signals, blocked from the start of main and read from a signalfd: handlers
 * installed after the BPF programs load left a second of start-up in which SIGUSR1 or
 * SIGINT killed the recorder and left its command held. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "signals.h"

static sigset_t orig_mask;
static struct sigaction orig_pipe;
static int sig_fd = -1;

int rec_signals__init(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, &orig_mask))
		return -errno;
	/* A FIFO or pipe whose reader went away: the write then fails with EPIPE, said with the
	 * file's name, and the recording ends as on any write error; the signal would kill the
	 * recorder without a word and leave the command's status unknown. */
	if (sigaction(SIGPIPE, &(struct sigaction){.sa_handler = SIG_IGN}, &orig_pipe))
		return -errno;
	sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return sig_fd < 0 ? -errno : sig_fd;
}

void rec_signals__restore(void)
{
	sigprocmask(SIG_SETMASK, &orig_mask, NULL);
	sigaction(SIGPIPE, &orig_pipe, NULL); /* an ignored signal stays ignored across exec */
}

int rec_signals__fd(void)
{
	return sig_fd;
}

void rec_signals__read(struct rec_signals *s)
{
	struct signalfd_siginfo si[16];
	ssize_t n;

	while (sig_fd >= 0 && (n = read(sig_fd, si, sizeof(si))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(si[0]); i++) {
			int sig = (int)si[i].ssi_signo;

			if (sig == SIGUSR1)
				s->snapshots++;
			else if (sig == SIGCHLD)
				s->child = true;
			else if (!s->stop)
				s->stop = sig;
		}
	}
}
