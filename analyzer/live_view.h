/* SPDX-License-Identifier: MIT */
/* The live subcommand's full-screen view (ncurses): a header of the recording's figures, a
 * chart of the live heap and RSS over time, a table of functions. It keeps copies of what
 * it shows, so that a resize, a key or a pause redraws without the replay. */
#ifndef HEAPSNAP_LIVE_VIEW_H
#define HEAPSNAP_LIVE_VIEW_H
#include <stdbool.h>
#include <sys/types.h>

#include "profile.h"

struct live_view;

struct live_view_opts {
	const char *label;  /* the file, as the header names it */
	pid_t recorder;     /* the recorder writing it (--recorder): q ends it, m marks a snapshot; 0: none */
};

/* What a key asked of the loop. */
enum live_action {
	LIVE_NONE,
	LIVE_UPDATE, /* the table's frames, process or thread changed: an update now */
	LIVE_QUIT,   /* leave now */
};

/* Takes the terminal (standard output, keys from /dev/tty). 0, or -errno (-ENOTTY: no
 * terminal to draw on, -ENOENT: no terminal description). */
int live_view__open(struct live_view **out, const struct live_view_opts *o);
/* The descriptor keys arrive on, to wait on beside the input. */
int live_view__key_fd(const struct live_view *v);
/* Reads the keys typed so far and redraws what they change. */
enum live_action live_view__keys(struct live_view *v);
/* Whether the view is paused (updates are not shown; the input is still read). */
bool live_view__paused(const struct live_view *v);
/* Whether a q is waiting for the recording's end (the recorder was told to stop). */
bool live_view__quitting(const struct live_view *v);
/* The heap at the moment of P's replay: figures copied, then drawn. FINAL: the recording
 * has ended. 0 or -ENOMEM. */
int live_view__update(struct live_view *v, const struct profile *p, double moment, bool final);
/* Gives the terminal back as it was found, then prints the last update's header as text. */
void live_view__close(struct live_view *v);
void live_view__free(struct live_view *v);
#endif
