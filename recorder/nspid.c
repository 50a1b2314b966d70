// SPDX-License-Identifier: MIT
/* Translating a PID namespace's pids and tids to the host's (nspid.h): the last field of
 * NSpid in /proc/PID/status is the process's number in its own namespace. A pid is looked for
 * among the target and its descendants (through task/TID/children), a tid among its process's
 * threads; each answer is kept, so /proc is read once per process or thread. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hmap.h"
#include "nspid.h"

/* Bounds on what one lookup reads: the target's tree is its own to grow. */
#define MAX_VISIT 4096

struct nspid {
	pid_t host;
	struct hmap pids; /* (0, ns pid) -> host pid; (host pid, ns tid) -> host tid */
};

/* The last field of NSpid of /proc/PID[/task/TID]/status, or 0. */
static uint32_t last_nspid(const char *status_path)
{
	char line[256];
	uint32_t v = 0;
	FILE *f = fopen(status_path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t');

			v = (uint32_t)strtoul(last ? last + 1 : line + 6, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

int nspid__open(pid_t host, struct nspid **out)
{
	char a[64], b[64], p[64];
	ssize_t na, nb;
	struct nspid *x;

	*out = NULL;
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", host);
	na = readlink("/proc/self/ns/pid", a, sizeof(a) - 1);
	nb = readlink(p, b, sizeof(b) - 1);
	if (na <= 0 || nb <= 0)
		return nb <= 0 ? -errno : 0;
	if (na == nb && !memcmp(a, b, (size_t)na))
		return 0;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->host = host;
	*out = x;
	return 0;
}

/* How long a thread found gone stays so before its number is looked up again. */
#define GONE_RECHECK_MS 100

static uint32_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}

static void remember(struct nspid *x, uint64_t k1, uint64_t k2, uint64_t v)
{
	struct hmap_slot *s = hmap_put(&x->pids, k1, k2, NULL);

	if (s)
		s->val = v;
}

uint32_t nspid__pid(struct nspid *x, uint32_t ns_pid)
{
	struct hmap_slot *s = hmap_find(&x->pids, 0, ns_pid);
	pid_t queue[MAX_VISIT];
	int head = 0, tail = 0;

	if (s)
		return (uint32_t)s->val;
	queue[tail++] = x->host;
	/* Breadth first through the target's descendants, each one's threads' children. */
	while (head < tail) {
		pid_t pid = queue[head++];
		char path[96];
		DIR *d;
		struct dirent *e;

		snprintf(path, sizeof(path), "/proc/%d/status", pid);
		if (last_nspid(path) == ns_pid) {
			remember(x, 0, ns_pid, (uint32_t)pid);
			return (uint32_t)pid;
		}
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		if (!(d = opendir(path)))
			continue;
		while ((e = readdir(d)) && tail < MAX_VISIT) {
			char cp[128];
			FILE *f;
			int c;

			if (e->d_name[0] == '.')
				continue;
			snprintf(cp, sizeof(cp), "/proc/%d/task/%.16s/children", pid, e->d_name);
			if (!(f = fopen(cp, "re")))
				continue;
			while (tail < MAX_VISIT && fscanf(f, "%d", &c) == 1)
				queue[tail++] = c;
			fclose(f);
		}
		closedir(d);
	}
	remember(x, 0, ns_pid, ns_pid + HS_NSPID_GONE);
	return ns_pid + HS_NSPID_GONE;
}

uint32_t nspid__tid(struct nspid *x, uint32_t host_pid, uint32_t ns_tid)
{
	struct hmap_slot *s = hmap_find(&x->pids, (uint64_t)host_pid + 1, ns_tid);
	char path[96];
	uint32_t found = ns_tid + HS_NSPID_GONE;
	DIR *d;
	struct dirent *e;
	int n = 0;

	uint32_t now = now_ms();

	if (s && ((uint32_t)s->val < HS_NSPID_GONE || now - (uint32_t)(s->val >> 32) < GONE_RECHECK_MS))
		return (uint32_t)s->val;
	if (host_pid >= HS_NSPID_GONE)
		return ns_tid + HS_NSPID_GONE;
	snprintf(path, sizeof(path), "/proc/%u/task", host_pid);
	if ((d = opendir(path))) {
		while ((e = readdir(d)) && n++ < MAX_VISIT) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%u/task/%.16s/status", host_pid, e->d_name);
			if (last_nspid(path) == ns_tid) {
				found = (uint32_t)strtoul(e->d_name, NULL, 10);
				break;
			}
		}
		closedir(d);
	}
	/* A thread gone is remembered as gone for a while only: its number may come back as a
	 * new thread's. Not at all, each event of it would read the process's threads again:
	 * the events of a thread that has exited are mostly read after it has (a server's
	 * thread per request), which made the recorder seconds late for every target thread. */
	remember(x, (uint64_t)host_pid + 1, ns_tid, found < HS_NSPID_GONE ? found : (uint64_t)now << 32 | found);
	return found;
}

void nspid__forget(struct nspid *x, uint32_t ns_pid)
{
	struct hmap_slot *s = hmap_find(&x->pids, 0, ns_pid);

	if (s)
		hmap_remove_slot(&x->pids, s);
}

void nspid__free(struct nspid *x)
{
	if (!x)
		return;
	hmap_free(&x->pids);
	free(x);
}
