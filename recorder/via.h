/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_VIA_H
#define HEAPSNAP_VIA_H
struct session;
struct run;

/* Chooses the way in (session.via, .via_why, .way) from the options and the command (U->exe):
 * -EINVAL, said, for a --via the other options rule out. */
int choose_via(struct session *s, const struct run *u);
#endif
