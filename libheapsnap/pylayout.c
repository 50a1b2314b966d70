// SPDX-License-Identifier: MIT
/* CPython's structures, per minor version: the offsets the frame walk and the code objects'
 * reading need. Layouts are stable within a minor version (CPython's ABI rule for these
 * internals in practice: Debian's 3.11.2 reads with the 3.11 table).
 *
 * Where they come from: the DWARF of pyenv's builds with -g (3.8.18, 3.9.18, 3.10.13,
 * 3.11.7, 3.12.1, 3.13.0), each read with gdb as `p &((TYPE *)0)->FIELD`, for example
 *   gdb -batch -ex 'p &((PyThreadState*)0)->cframe' libpython3.11.so.1.0    -> 0x38
 * and for 3.13 cross-checked with the interpreter's own _Py_DebugOffsets (read at run time
 * too, below). The Py_tss_t of _PyRuntime holds { int _is_initialized; pthread_key_t _key; }. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "python.h"

#define NONE (-1)

static const struct py_layout layouts[] = {
	{
		.version = 0x308, .family = PY_FAM_FRAMEOBJ, .lasti_scale = 1,
		.rt_tss = 0x570, .rt_main = 0x28, .ts_interp = 0x10, .ts_frame = 0x18, .cf_current = NONE,
		.fr_back = 0x18, .fr_code = 0x20, .fr_instr = 0x68, .fr_is_entry = NONE, .fr_owner = NONE,
		.co_name = 0x70, .co_qualname = NONE, .co_filename = 0x68, .co_firstlineno = 0x28,
		.co_linetable = 0x78 /* co_lnotab */, .co_code = 0x30, .co_adaptive = NONE,
		.uni_state = 0x20, .uni_ascii_size = 48, .uni_compact_size = 72, .bytes_size = 0x10, .bytes_sval = 0x20,
	},
	{
		.version = 0x309, .family = PY_FAM_FRAMEOBJ, .lasti_scale = 1,
		.rt_tss = 0x248, .rt_main = 0x28, .ts_interp = 0x10, .ts_frame = 0x18, .cf_current = NONE,
		.fr_back = 0x18, .fr_code = 0x20, .fr_instr = 0x68, .fr_is_entry = NONE, .fr_owner = NONE,
		.co_name = 0x70, .co_qualname = NONE, .co_filename = 0x68, .co_firstlineno = 0x28,
		.co_linetable = 0x78 /* co_lnotab */, .co_code = 0x30, .co_adaptive = NONE,
		.uni_state = 0x20, .uni_ascii_size = 48, .uni_compact_size = 72, .bytes_size = 0x10, .bytes_sval = 0x20,
	},
	{
		/* f_lasti counts 2-byte code units from 3.10 */
		.version = 0x30a, .family = PY_FAM_FRAMEOBJ, .lasti_scale = 2,
		.rt_tss = 0x248, .rt_main = 0x28, .ts_interp = 0x10, .ts_frame = 0x18, .cf_current = NONE,
		.fr_back = 0x18, .fr_code = 0x20, .fr_instr = 0x60, .fr_is_entry = NONE, .fr_owner = NONE,
		.co_name = 0x70, .co_qualname = NONE, .co_filename = 0x68, .co_firstlineno = 0x28,
		.co_linetable = 0x78, .co_code = 0x30, .co_adaptive = NONE,
		.uni_state = 0x20, .uni_ascii_size = 48, .uni_compact_size = 72, .bytes_size = 0x10, .bytes_sval = 0x20,
	},
	{
		.version = 0x30b, .family = PY_FAM_IFRAME, .lasti_scale = 0,
		.rt_tss = 0x250, .rt_main = 0x30, .ts_interp = 0x10, .ts_frame = 0x38 /* cframe */, .cf_current = 0x8,
		.fr_back = 0x30, .fr_code = 0x20, .fr_instr = 0x38 /* prev_instr */, .fr_is_entry = 0x44, .fr_owner = 0x45,
		.co_name = 0x78, .co_qualname = 0x80, .co_filename = 0x70, .co_firstlineno = 0x48,
		.co_linetable = 0x88, .co_code = NONE, .co_adaptive = 0xb8,
		.uni_state = 0x20, .uni_ascii_size = 48, .uni_compact_size = 72, .bytes_size = 0x10, .bytes_sval = 0x20,
	},
	{
		/* the unicode objects lost wstr: 8 bytes shorter, 16 for the compact form */
		.version = 0x30c, .family = PY_FAM_IFRAME, .lasti_scale = 0,
		.rt_tss = 0x608, .rt_main = 0x30, .ts_interp = 0x10, .ts_frame = 0x38 /* cframe */, .cf_current = 0x0,
		.fr_back = 0x8, .fr_code = 0x0, .fr_instr = 0x38 /* prev_instr */, .fr_is_entry = NONE, .fr_owner = 0x46,
		.co_name = 0x78, .co_qualname = 0x80, .co_filename = 0x70, .co_firstlineno = 0x44,
		.co_linetable = 0x88, .co_code = NONE, .co_adaptive = 0xc0,
		.uni_state = 0x20, .uni_ascii_size = 40, .uni_compact_size = 56, .bytes_size = 0x10, .bytes_sval = 0x20,
	},
	{
		.version = 0x30d, .family = PY_FAM_IFRAME, .lasti_scale = 0,
		.rt_tss = 0x870, .rt_main = 0x280, .ts_interp = 0x10, .ts_frame = 0x48 /* current_frame */,
		.cf_current = NONE, .fr_back = 0x8, .fr_code = 0x0 /* f_executable */, .fr_instr = 0x38 /* instr_ptr */,
		.fr_is_entry = NONE, .fr_owner = 0x46,
		.co_name = 0x78, .co_qualname = 0x80, .co_filename = 0x70, .co_firstlineno = 0x44,
		.co_linetable = 0x88, .co_code = NONE, .co_adaptive = 0xc8,
		.uni_state = 0x20, .uni_ascii_size = 40, .uni_compact_size = 56, .bytes_size = 0x10, .bytes_sval = 0x20,
	},
};

const struct py_layout *pylayout_for(uint16_t version)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].version == version)
			return &layouts[i];
	return NULL;
}

/* 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), its fields' places in it as
 * 3.13.0's DWARF gives them: each a uint64_t. 3.14 reorders the struct; its version field
 * tells, and only 3.13's is read. */
enum {
	DO_VERSION = 0x8, DO_FREE_THREADED = 0x10,
	DO_TS_INTERP = 0xb0, DO_TS_CURRENT_FRAME = 0xb8,
	DO_FR_PREVIOUS = 0xe8, DO_FR_EXECUTABLE = 0xf0, DO_FR_INSTR_PTR = 0xf8, DO_FR_OWNER = 0x108,
	DO_CO_FILENAME = 0x118, DO_CO_NAME = 0x120, DO_CO_QUALNAME = 0x128, DO_CO_LINETABLE = 0x130,
	DO_CO_FIRSTLINENO = 0x138, DO_CO_ADAPTIVE = 0x158,
	DO_BYTES_SIZE = 0x208, DO_BYTES_SVAL = 0x210, DO_UNI_STATE = 0x220, DO_UNI_ASCII_SIZE = 0x230,
	DO_END = 0x238,
};

static int32_t field(const uint8_t *d, size_t at)
{
	uint64_t v;

	memcpy(&v, d + at, sizeof(v));
	return v < 0x10000 ? (int32_t)v : NONE;
}

int pylayout_from_debug_offsets(const uint8_t *runtime, struct py_layout *l)
{
	static const struct {
		size_t at;
		size_t in; /* offsetof the struct py_layout member */
	} map[] = {
		{DO_TS_INTERP, offsetof(struct py_layout, ts_interp)},
		{DO_TS_CURRENT_FRAME, offsetof(struct py_layout, ts_frame)},
		{DO_FR_PREVIOUS, offsetof(struct py_layout, fr_back)},
		{DO_FR_EXECUTABLE, offsetof(struct py_layout, fr_code)},
		{DO_FR_INSTR_PTR, offsetof(struct py_layout, fr_instr)},
		{DO_FR_OWNER, offsetof(struct py_layout, fr_owner)},
		{DO_CO_FILENAME, offsetof(struct py_layout, co_filename)},
		{DO_CO_NAME, offsetof(struct py_layout, co_name)},
		{DO_CO_QUALNAME, offsetof(struct py_layout, co_qualname)},
		{DO_CO_LINETABLE, offsetof(struct py_layout, co_linetable)},
		{DO_CO_FIRSTLINENO, offsetof(struct py_layout, co_firstlineno)},
		{DO_CO_ADAPTIVE, offsetof(struct py_layout, co_adaptive)},
		{DO_BYTES_SIZE, offsetof(struct py_layout, bytes_size)},
		{DO_BYTES_SVAL, offsetof(struct py_layout, bytes_sval)},
		{DO_UNI_STATE, offsetof(struct py_layout, uni_state)},
		{DO_UNI_ASCII_SIZE, offsetof(struct py_layout, uni_ascii_size)},
	};
	uint64_t version, ft;

	if (memcmp(runtime, "xdebugpy", 8))
		return -ENOENT;
	memcpy(&version, runtime + DO_VERSION, 8);
	memcpy(&ft, runtime + DO_FREE_THREADED, 8);
	if ((version >> 16 & 0xffff) != 0x030d)
		return -EPROTO;
	if (ft)
		return -EOPNOTSUPP; /* free-threaded: frames and objects are laid out otherwise */
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		int32_t v = field(runtime, map[i].at);

		if (v == NONE)
			return -EPROTO;
		memcpy((uint8_t *)l + map[i].in, &v, sizeof(v));
	}
	/* The compact, non-ASCII form follows the ASCII one by utf8_length and utf8. */
	l->uni_compact_size = l->uni_ascii_size + 16;
	return 0;
}
