// SPDX-License-Identifier: MIT
/* A Python code object named by libheapsnap.so (libheapsnap/pyframes.c), written
 * as a PY_CODE record of its process: its id is the one the process's stacks carry in
 * HS_PYFRAME entries. The event comes from memory the target can write: every length is
 * checked against its limit and against the event's own length before anything is read. */
#include <string.h>

#include "output.h"
#include "py_code.h"
#include "session.h"

void on_pycode_event(struct session *s, const void *data, size_t len, uint64_t t)
{
	const struct hs_pycode_event *e = data;
	char name[HS_PYCODE_MAX_NAME + 1], file[HS_PYCODE_MAX_FILE + 1];
	struct hs_record r;

	if (len < offsetof(struct hs_pycode_event, data) || e->name_len > HS_PYCODE_MAX_NAME ||
	    e->file_len > HS_PYCODE_MAX_FILE || e->table_len > HS_PYCODE_MAX_TABLE ||
	    len < offsetof(struct hs_pycode_event, data) + (size_t)e->name_len + e->file_len + e->table_len ||
	    !e->id || e->id >= (1ull << HS_PYFRAME_CODE_BITS))
		return;
	/* Names end at their length: a NUL inside one would cut it, never run past it. */
	memcpy(name, e->data, e->name_len);
	name[e->name_len] = 0;
	memcpy(file, e->data + e->name_len, e->file_len);
	file[e->file_len] = 0;
	memset(&r, 0, sizeof(r));
	r.type = HS_REC_PY_CODE;
	r.time = t;
	r.pid = e->h.pid;
	r.py_code.id = e->id;
	r.py_code.qualname = name;
	r.py_code.filename = file;
	r.py_code.first_line = e->first_line;
	r.py_code.py_version = e->py_version;
	r.py_code.line_table = (struct hs_bytes){e->data + e->name_len + e->file_len, e->table_len};
	write_rec(&s->out, &r);
}
