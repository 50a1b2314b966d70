/* SPDX-License-Identifier: MIT */
/* The files the targets map, by device and inode: each named and identified (build-id) once,
 * whatever pids map it and whichever way in records them. What a way in keeps of a file (BPF:
 * its allocator functions, probes, unwind table) it keeps by the object's index. */
#ifndef HEAPSNAP_OBJECTS_H
#define HEAPSNAP_OBJECTS_H
#include <stdbool.h>
#include <stdint.h>

#include "buildid.h"
#include "hmap.h"

struct object {
	uint64_t dev, ino;
	char *path;
	bool is_libc;
	bool identified; /* its build-id was looked for */
	int index;       /* in the table, for a way's own per-object state */
	uint8_t build_id[HS_BUILD_ID_MAX];
	int build_id_len;
};

struct objects {
	struct hmap by_id; /* (dev, ino) -> struct object * */
	struct object **v; /* each allocated on its own: records point into it */
	int nr;
};

/* The object of (DEV, INO), made with PATH if new; NULL when out of memory. */
struct object *objects__get(struct objects *t, uint64_t dev, uint64_t ino, const char *path);
struct object *objects__find(const struct objects *t, uint64_t dev, uint64_t ino);
/* Reads O's build-id once. OPEN_PATH goes through the /proc/PID/root of the process that
 * mapped it; returns the path to read O by: OPEN_PATH, or O's own path where OPEN_PATH is
 * gone (its process exited) and O's path leads to that file. */
const char *object__identify(struct object *o, const char *open_path);
void objects__free(struct objects *t);
#endif
