/* SPDX-License-Identifier: MIT */
/* libheapsnap.so and CPython: what the interpreter's structures look like (pylayout.c), where
 * the interpreter is (python.c), its frames in stacks (python.c, pyframes.c) and its object
 * allocators (pymem.c). Nothing here calls the Python API on a hook's path. */
#ifndef HEAPSNAP_PYTHON_H
#define HEAPSNAP_PYTHON_H
#include <stdbool.h>
#include <stdint.h>

struct tstate;

/* How frames are chained: a PyFrameObject per eval call (3.8 to 3.10), or the interpreter's
 * own frames, several per eval call (3.11 on). */
enum py_family { PY_FAM_FRAMEOBJ = 1, PY_FAM_IFRAME = 2 };

/* Byte offsets into CPython's structures, per minor version (pylayout.c says where each
 * comes from). -1: the field does not exist in that version. */
struct py_layout {
	uint16_t version;      /* major << 8 | minor */
	uint8_t family;        /* enum py_family */
	uint8_t lasti_scale;   /* f_lasti in bytes (1) or in 2-byte code units (2); 0: pointer */
	int32_t rt_tss;        /* _PyRuntime: the Py_tss_t whose key holds each thread's state */
	int32_t rt_main;       /* _PyRuntime: interpreters.main */
	int32_t ts_interp;     /* PyThreadState: interp */
	int32_t ts_frame;      /* PyThreadState: frame (3.8-3.10), cframe (3.11, 3.12), current_frame (3.13) */
	int32_t cf_current;    /* _PyCFrame: current_frame (3.11, 3.12); -1: ts_frame is the frame */
	int32_t fr_back;       /* f_back, or previous */
	int32_t fr_code;       /* f_code, or f_executable (3.13) */
	int32_t fr_instr;      /* int f_lasti (3.8-3.10), prev_instr (3.11, 3.12), instr_ptr (3.13) */
	int32_t fr_is_entry;   /* 3.11: bool is_entry, the first frame of its eval call */
	int32_t fr_owner;      /* 3.11 on: char owner */
	int32_t co_name, co_qualname, co_filename, co_firstlineno, co_linetable;
	int32_t co_code;       /* 3.8-3.10: co_code, the bytes object (a guard field) */
	int32_t co_adaptive;   /* 3.11 on: co_code_adaptive, the bytecode inside the code object */
	int32_t uni_state, uni_ascii_size, uni_compact_size; /* PyUnicode's compact forms */
	int32_t bytes_size, bytes_sval;                      /* PyBytesObject's ob_size, ob_sval */
};
#define PY_OWNED_BY_CSTACK 3 /* 3.12 on: the shim frame an eval call pushes below its frames */

/* The layout for VERSION, NULL if not supported (said once by the caller). */
const struct py_layout *pylayout_for(uint16_t version);
/* 3.13's _Py_DebugOffsets at the start of _PyRuntime, checked against L (a copy of the table's):
 * the fields it has replace L's. -errno if it is not there or says another version, or a
 * free-threaded build (not supported). */
int pylayout_from_debug_offsets(const uint8_t *runtime, struct py_layout *l);

/* What python.c found of the interpreter in this process. */
struct py_interp {
	struct py_layout l;
	uint64_t runtime;          /* &_PyRuntime */
	uint64_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code */
	uint64_t code_type, unicode_type, bytes_type; /* &PyCode_Type, &PyUnicode_Type, &PyBytes_Type */
	int (*is_initialized)(void);
	int (*add_pending_call)(int (*)(void *), void *);
	void (*get_allocator)(int, void *);
	void (*set_allocator)(int, void *);
	/* Whether the calling thread holds the GIL: its own thread state (PyGILState's) is the
	 * one running (PyThreadState_GetUnchecked, _PyThreadState_UncheckedGet before 3.13). */
	void *(*this_thread_state)(void);
	void *(*current_thread_state)(void);
	/* For sys._debugmallocstats (pymem.c), at pending calls only. */
	void *(*sys_get_object)(const char *);
	int (*sys_set_object)(const char *, void *);
	void *(*cfunction_new)(void *def, void *self, void *module);
	void *(*call_object)(void *callable, void *args);
	void *(*get_attr)(void *o, const char *name);
	void (*incref)(void *);
	void (*decref)(void *);
	void (*err_clear)(void);
	/* For the snapshot at finalization (pymem.c): atexit.register, at pending calls only. */
	void *(*import_module)(const char *);
	void *(*call_args)(void *callable, ...);
	void *none; /* &_Py_NoneStruct */
};
extern struct py_interp py;
/* py_ready (libheapsnap.h, hs_sample_line): py is filled, frames are walked. */

/* python.c */
void py_say_once(int *said, const char *why);
void py_attach(void);         /* looks for an interpreter (start, dlopen, injection) */
void py_after_fork_child(void);
/* Where IPS[0..N) passes through the eval loop, the Python frames that loop ran stand
 * instead, innermost first; the new count (at most MAX). */
uint32_t py_splice(struct tstate *t, uint64_t *ips, uint32_t n, uint32_t max);
/* The code object at CODE (validated by the caller) as an id of this process, its PY_CODE
 * event sent the first time; 0 if it cannot have one. */
uint32_t py_code_id(struct tstate *t, uint64_t code);
/* Whether [A, A+LEN) is readable memory of this process, as its maps said when last read
 * (python.c: re-read when an address is not in them). */
bool py_readable(uint64_t a, uint64_t len);
/* The same, with ranges of the table found before: a walk's frames are in one chunk of the
 * interpreter's frame stack, its code objects in a few arenas. Kept by a thread from one walk
 * to the next while the table is the one they were found in (py_rcache_sync), they answer as
 * the table would, without its search (a binary search of a few hundred ranges, 3 a walk,
 * were a seventh to a fifth of a walk's time in two profiles). */
#define PY_RCACHE 4
struct py_rcache {
	uint64_t lo[PY_RCACHE], hi[PY_RCACHE];
	uint32_t next;
	uint32_t seq; /* the table's, when they were found */
	uint32_t hot; /* the last range that answered: a walk reads frame after frame of one */
};
bool py_readable_slow(struct py_rcache *c, uint64_t a, uint64_t len);
/* Empties C unless the table is still the one its ranges were found in. */
void py_rcache_sync(struct py_rcache *c);
static inline bool py_readable_c(struct py_rcache *c, uint64_t a, uint64_t len)
{
	if (a >= c->lo[c->hot] && a + len <= c->hi[c->hot] && a + len >= a)
		return true;
	for (uint32_t i = 0; i < PY_RCACHE; i++)
		if (a >= c->lo[i] && a + len <= c->hi[i] && a + len >= a) {
			c->hot = i;
			return true;
		}
	return py_readable_slow(c, a, len);
}

/* pyframes.c */
int py_codes_init(void);
void py_code_freed(const void *p); /* a block of the object domain, before it is freed */
extern uint32_t py_code_epoch;
void py_codes_after_fork_child(void);
void py_codes_new_session(void);

/* Python's functions of ours: PyMethodDef, the same from 3.0 on. */
struct py_method_def {
	const char *name;
	void *(*meth)(void *self, void *unused);
	int flags;
	const char *doc;
};
#define PY_METH_NOARGS 0x0004

/* pyfinal.c, at pending calls: the snapshot at finalization asked for (atexit), and given back. */
void pyfinal_take(void);
void pyfinal_give_back(void);

/* pymem.c */
void pymem_on_recorded(void); /* launched: wraps the domains once the interpreter runs */
void pymem_request_install(void);
void pymem_wait_begin(void);  /* launched: malloc's pass-bys look for the interpreter's start */
void pymem_detach(void);      /* injected: the originals back, with the GIL held */
bool pymem_sees_frees(void);  /* every free of the domains reaches py_code_freed */
#endif
