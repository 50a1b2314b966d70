/* SPDX-License-Identifier: MIT */
/* Python code objects from the in-process recorder (HS_EV_PYCODE) into PY_CODE records. */
#ifndef HEAPSNAP_PY_CODE_H
#define HEAPSNAP_PY_CODE_H
#include <stddef.h>
#include <stdint.h>

struct session;
void on_pycode_event(struct session *s, const void *data, size_t len, uint64_t t);
#endif
