// SPDX-License-Identifier: MIT
/* The files the targets map, named and identified once each. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"
#include "objects.h"
#include "procfs.h"

struct object *objects__get(struct objects *t, uint64_t dev, uint64_t ino, const char *path)
{
	struct hmap_slot *slot;
	struct object *o, **v;
	const char *base;
	bool created;

	slot = hmap_put(&t->by_id, dev, ino, &created);
	if (!slot)
		return NULL;
	if (!created)
		return (struct object *)(uintptr_t)slot->val;
	/* Each object is allocated on its own: probe records point into it. */
	v = realloc(t->v, sizeof(*v) * (size_t)(t->nr + 1));
	o = calloc(1, sizeof(*o));
	if (!v || !o) {
		free(o);
		return NULL;
	}
	t->v = v;
	v[t->nr] = o;
	*o = (struct object){.dev = dev, .ino = ino, .path = strdup(path), .index = t->nr++};
	slot->val = (uint64_t)(uintptr_t)o;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	o->is_libc = !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
	return o;
}

struct object *objects__find(const struct objects *t, uint64_t dev, uint64_t ino)
{
	struct hmap_slot *slot = hmap_find(&t->by_id, dev, ino);

	return slot ? (struct object *)(uintptr_t)slot->val : NULL;
}

const char *object__identify(struct object *o, const char *open_path)
{
	int ret;

	/* What is read stays as read, for every process that maps the object later. */
	if (access(open_path, R_OK) && strcmp(open_path, o->path) && same_file(o->path, o->dev, o->ino))
		open_path = o->path;
	if (o->identified)
		return open_path;
	o->identified = true;
	ret = hs_read_build_id(open_path, o->build_id, sizeof(o->build_id));
	o->build_id_len = ret > 0 ? ret : 0;
	return open_path;
}

void objects__free(struct objects *t)
{
	for (int i = 0; i < t->nr; i++) {
		free(t->v[i]->path);
		free(t->v[i]);
	}
	free(t->v);
	hmap_free(&t->by_id);
}
