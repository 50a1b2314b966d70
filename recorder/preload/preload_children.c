// SPDX-License-Identifier: MIT
/* The command's descendants, in-process: the shared memory handed to those that ask the
 * recorder's socket for it (their inherited descriptors were closed), and those found
 * running without recording, said. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsyms.h"
#include "preload_shm.h"
#include "preload_way.h"
#include "output.h"
#include "processes.h"
#include "procfs.h"

/* ---- the shared memory for children that closed their inherited descriptors ---- */

/* Whether PID descends from ROOT, walking parents in /proc (bounded: a chain of pids ends at
 * 1 or 0, and none is longer than there are processes). */
static bool descends(pid_t pid, pid_t root)
{
	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		if (pid == root)
			return true;
		pid = proc_ppid(pid);
	}
	return false;
}

/* Why PEER may not have the recording's memory, or NULL if it may: it must be the command or
 * descend from it (or be a process the recording follows, whose parent may have exited),
 * and still be the process that connected. The recorder runs as root: nothing else on the
 * host may read or write the recording through it. */
static const char *peer_refused(struct session *s, const struct preload_peer *peer)
{
	if (!s->child)
		return "the recorder launched no command";
	/* A process the recording follows may have lost its parent (a daemon's double fork);
	 * the table may still name a pid since recycled, so it counts only for the command's
	 * own user. */
	if (!descends(peer->pid, s->child) && !(peer->uid == geteuid() && proc_find(s, peer->pid)))
		return "it is not the command or a process started by it";
	/* The pid walked above is still the one that connected (its pidfd), or, on a kernel
	 * without SO_PEERPIDFD, it still runs as the user that connected. */
	if (!preload__peer_alive(peer))
		return "it exited before it could be checked";
	if (peer->pidfd < 0) {
		char *st = proc_read_string(peer->pid, "status"), *uid = st ? strstr(st, "\nUid:") : NULL;
		unsigned long r = ULONG_MAX;

		if (uid)
			r = strtoul(uid + 5, NULL, 10);
		free(st);
		if (r != (unsigned long)peer->uid)
			return "its pid now names another process";
	}
	return NULL;
}

/* Says that PID (of UID, if known: >= 0) is not recorded, and why, and counts it in the
 * file: for the first 20 only, since anyone may connect and must not flood the output. */
static void say_unrecorded(struct session *s, pid_t pid, int64_t uid, const char *why)
{
	struct preload_way *iw = preload_of(s);
	char *comm = proc_read_string(pid, "comm"), who[64] = "";

	/* Its name, or, gone already, that it has exited ("(gone, uid 0)" read as a name). */
	if (comm && *comm)
		snprintf(who, sizeof(who), " (%s%s", comm, uid >= 0 ? ", " : ")");
	else
		snprintf(who, sizeof(who), ", which has exited%s", uid >= 0 ? " (" : "");
	if (uid >= 0)
		snprintf(who + strlen(who), sizeof(who) - strlen(who), "uid %" PRId64 ")", uid);

	if (++iw->procs_unrecorded <= 20)
		rec_warnx("warning: process %d%s%s is not recorded: %s%s", (int)pid, who, comm && *comm ? "" : ",", why,
			  iw->procs_unrecorded == 20 ? " (further ones are only counted, in lost.processes_unrecorded)" : "");
	free(comm);
}

/* Hands the memory to the children that asked for it (a few per round: a flood of
 * connections cannot hold the loop), and says which were refused, and why. */
void serve_children(struct session *s)
{
	struct preload *pre = preload_of(s)->pre;
	struct preload_peer peer;

	for (int n = 0; pre && n < 16; n++) {
		const char *why;
		int err = preload__accept(pre, &peer);

		if (err <= 0) {
			if (err < 0)
				rec_warnx("warning: accepting a child's request for the shared memory failed: %s", strerror(-err));
			return;
		}
		why = peer_refused(s, &peer);
		if (!why && !(err = preload__grant(pre, &peer)))
			continue;
		/* The socket closed on it: the child was gone before its answer ("is not
		 * recorded: Broken pipe" said nothing of that). */
		if (!why && (err == -EPIPE || err == -ECONNRESET))
			why = "it ended before it could be handed the shared memory";
		say_unrecorded(s, peer.pid, (int64_t)peer.uid, why ? why : strerror(-err));
		preload__peer_close(&peer);
	}
}

/* ---- descendants running without recording ---- */

#define SCAN_MAX_PROCS 4096 /* looked at per scan */
#define SEEN_MAX 65536      /* images remembered in all */

/* An image of process PID: its start time and where its code starts, which an exec moves
 * (the same pid then runs another program). 0 if it is gone. */
static uint64_t image_key(pid_t pid)
{
	char *st = proc_read_string(pid, "stat"), *p;
	unsigned long long start = 0, code = 0;

	if (!st)
		return 0;
	p = strrchr(st, ')'); /* comm may hold spaces and parentheses */
	if (p)
		sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu %*u %*d %*u %llu",
		       &start, &code);
	free(st);
	return hmap_hash(start, code) | 1;
}

/* Whether libheapsnap.so is mapped in PID (read up to 100,000 lines of its maps). */
static bool has_library(pid_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	for (int n = 0; !yes && n < 100000 && getline(&line, &cap, f) > 0; n++)
		yes = strstr(line, "libheapsnap.so") != NULL;
	free(line);
	fclose(f);
	return yes;
}

/* The first time an image is seen it may still be starting (its library's first event not
 * read yet); the second time, a second later, it is recorded (libheapsnap.so mapped and the
 * process known to the recording) or it is said not to be. Each image is looked at that
 * once: a process that runs on costs one read of its stat per scan. */
static void check_image(struct session *s, pid_t pid)
{
	struct preload_way *iw = preload_of(s);
	uint64_t key = image_key(pid);
	struct hmap_slot *slot;
	bool created, lib;

	if (!key)
		return;
	slot = hmap_find(&iw->seen_images, (uint64_t)pid, key);
	if (!slot) {
		if (iw->seen_images.nr >= SEEN_MAX) {
			if (!iw->seen_full)
				rec_warnx("warning: over %d programs run under the command: those started from now on are "
					  "not checked for being recorded", SEEN_MAX);
			iw->seen_full = true;
			return;
		}
		slot = hmap_put(&iw->seen_images, (uint64_t)pid, key, &created);
		if (slot)
			slot->val = 1;
		return;
	}
	if (slot->val != 1)
		return;
	lib = has_library(pid);
	slot->val = 2;
	if (lib && proc_find(s, pid))
		return;
	say_unrecorded(s, pid, -1,
		       lib ? "libheapsnap.so is loaded in it but sent nothing (it could not reach the recorder's memory)"
			   : "libheapsnap.so is not loaded in it (its environment lost LD_PRELOAD, or it is a static or "
			     "set-id program)");
}

/* ---- programs whose executable brings its own allocator ---- */

/* An executable that exports malloc (Chromium's PartitionAlloc shim, a program linking a
 * static jemalloc) is bound ahead of any preloaded library: the process runs with the
 * library loaded and sends its start and mappings, but not one allocation. Said once per
 * executable, with the way in that sees it; each such process counted as not recorded. */
static const char own_alloc_why[] = "defines %s itself, which the loader binds ahead of libheapsnap.so: none of "
				    "its allocations can be seen this way; --via bpf sees them";

/* PATH's executable, looked at once by its (device, inode): the slot, its val 1 if PATH
 * exports its own allocator (*WHICH then names it, the first time only), 2 if not. */
static struct hmap_slot *own_alloc_exe(struct preload_way *iw, const char *path, const char **which)
{
	struct hmap_slot *exe;
	struct stat st;
	bool created;

	*which = NULL;
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return NULL;
	exe = hmap_find(&iw->own_alloc_exes, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
	if (exe || iw->own_alloc_exes.nr >= SEEN_MAX)
		return exe;
	exe = hmap_put(&iw->own_alloc_exes, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &created);
	if (exe)
		exe->val = elf_exported_allocator(path, which) > 0 ? 1 : 2;
	return exe;
}

/* The command's own executable, said before it starts: it may be gone before its mappings
 * are read. */
void check_command_allocator(struct session *s, const char *exe)
{
	const char *which;
	struct hmap_slot *slot = own_alloc_exe(preload_of(s), exe, &which);
	char why[sizeof(own_alloc_why) + 16];

	if (!slot || !which)
		return;
	snprintf(why, sizeof(why), own_alloc_why, which);
	rec_warnx("warning: %s %s", exe, why);
}

void check_own_allocator(struct session *s, struct proc *p, bool attach)
{
	struct preload_way *iw = preload_of(s);
	struct hmap_slot *exe, *seen;
	const char *which;
	char path[64], why[PATH_MAX + sizeof(own_alloc_why) + 64], *real;
	struct stat st;
	bool created;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)p->pid);
	exe = own_alloc_exe(iw, path, &which);
	if (!exe || stat(path, &st))
		return;
	if (which) {
		int n;

		real = realpath(path, NULL);
		n = snprintf(why, sizeof(why), "its executable %s ", real ? real : path);
		snprintf(why + n, sizeof(why) - (size_t)n, own_alloc_why, which);
		free(real);
	}
	if (exe->val != 1 || iw->own_alloc_procs.nr >= SEEN_MAX)
		return;
	seen = hmap_put(&iw->own_alloc_procs, (uint64_t)p->pid, (uint64_t)st.st_ino, &created);
	if (!seen || !created)
		return;
	if (which)
		say_unrecorded(s, p->pid, -1, why);
	else
		iw->procs_unrecorded++;
}

static void check_descendant(pid_t pid, pid_t ppid, void *ctx)
{
	check_image(ctx, pid);
}

void scan_children(struct session *s)
{
	if (!preload_of(s)->pre || !s->child || s->child_reaped)
		return;
	check_image(s, s->child);
	proc_for_each_descendant(s->child, SCAN_MAX_PROCS - 1, check_descendant, s);
}
