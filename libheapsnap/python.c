// SPDX-License-Identifier: MIT
/* libheapsnap.so and CPython, the interpreter found: its exported symbols (_PyRuntime,
 * _PyEval_EvalFrameDefault with its size, PyCode_Type, Py_Version or Py_GetVersion()) in the
 * executable or in a libpython3.X.so, looked up once at start-up, at an injection, or after a
 * dlopen (an interpreter embedded later) -- never on a hook's path.
 *
 * And what lets the frame walk read the interpreter's memory without faulting: the process's
 * readable mappings, as /proc/self/maps lists them, in a sorted table that a read is checked
 * against (a binary search, tens of nanoseconds). An address outside it makes the table be read
 * again (a new arena, a new chunk of frames: some hundred microseconds, counted as
 * python.maps_read); still outside, the walk stops there (python.walk_stopped). The other
 * ways measured on this machine (README): process_vm_readv of the calling process (2.2 to 2.8
 * us for 80 bytes), or a write of the bytes to a pipe and a read back (1.4 to 1.7 us), are
 * system calls per read, which at two reads per Python frame would cost a 12-frame walk some
 * 60 us, where the whole walk costs about 90 ns with the table. What the table cannot see is a mapping gone since it was read: the walk
 * only follows pointers the interpreter itself holds for the calling thread, which stay live
 * while that thread is in an allocator, so the check stands guard against a wrong layout or a
 * torn chain, not against memory the interpreter is still using. Files under /dev and the
 * vDSO's data pages ([vvar]) are left out: reading them can fault or have effects. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libheapsnap.h"
#include "python.h"

struct py_interp py;
static int py_refused; /* an interpreter this library does not read: said once */

/* ---- the readable ranges ---- */

#define MAX_RANGES 16384
struct ranges {
	uint32_t seq; /* odd while the table is being written: readers try again */
	uint32_t n;
	uint64_t lo[MAX_RANGES], hi[MAX_RANGES];
};
static struct ranges *rr;
static int rr_lock;

/* One line of maps, parsed as it streams by: a line can be longer than the buffer. */
struct maps_line {
	int field;       /* 0 the range, 1 the permissions, 5 the path */
	uint64_t lo, hi;
	bool in_hi, readable;
	char path[8];
	uint32_t path_len;
};

static bool excluded(const struct maps_line *m)
{
	return (m->path_len >= 5 && !memcmp(m->path, "[vvar", 5)) || (m->path_len >= 5 && !memcmp(m->path, "/dev/", 5));
}

static void line_end(struct maps_line *m)
{
	if (m->readable && m->hi > m->lo && !excluded(m) && rr->n < MAX_RANGES) {
		if (rr->n && rr->hi[rr->n - 1] == m->lo)
			rr->hi[rr->n - 1] = m->hi; /* adjoining: one range */
		else {
			rr->lo[rr->n] = m->lo;
			rr->hi[rr->n] = m->hi;
			rr->n++;
		}
	}
	memset(m, 0, sizeof(*m));
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void maps_char(struct maps_line *m, char c, bool *space)
{
	if (c == '\n') {
		line_end(m);
		*space = false;
		return;
	}
	if (c == ' ') {
		if (!*space && m->field < 5)
			m->field++;
		*space = true;
		return;
	}
	*space = false;
	if (m->field == 0) {
		int v = hexval(c);

		if (c == '-')
			m->in_hi = true;
		else if (v >= 0 && m->in_hi)
			m->hi = m->hi << 4 | (uint64_t)v;
		else if (v >= 0)
			m->lo = m->lo << 4 | (uint64_t)v;
	} else if (m->field == 1 && c == 'r' && !m->readable) {
		m->readable = true;
	} else if (m->field == 5 && m->path_len < sizeof(m->path)) {
		m->path[m->path_len++] = c;
	}
}

/* Under rr_lock: the table read again from /proc/self/maps (sorted as the kernel lists it).
 * No allocation: a buffer on the stack, the file read by its descriptor. */
static void ranges_read(void)
{
	struct maps_line m = {0};
	bool space = false;
	char buf[4096];
	ssize_t got;
	int fd = hs_open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	__atomic_store_n(&rr->seq, rr->seq + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	rr->n = 0;
	while ((got = hs_read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got; i++)
			maps_char(&m, buf[i], &space);
	hs_close(fd);
	__atomic_store_n(&rr->seq, rr->seq + 1, __ATOMIC_RELEASE);
	count(HS_CNT_PY_MAPS_READ);
}

/* Whether [a, a+len) lies in one range, by a table that may be rewritten meanwhile: a torn
 * read gives a wrong answer, which the sequence number throws away. */
static bool ranges_have(uint64_t a, uint64_t len, uint64_t *rlo, uint64_t *rhi)
{
	for (int tries = 0; tries < 8; tries++) {
		uint32_t s = __atomic_load_n(&rr->seq, __ATOMIC_ACQUIRE), lo = 0, hi, n;
		bool found = false;

		if (s & 1) {
			sched_yield();
			continue;
		}
		n = __atomic_load_n(&rr->n, __ATOMIC_RELAXED);
		hi = n < MAX_RANGES ? n : MAX_RANGES;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (a < rr->lo[mid])
				hi = mid;
			else if (a >= rr->hi[mid])
				lo = mid + 1;
			else {
				found = a + len <= rr->hi[mid];
				*rlo = rr->lo[mid];
				*rhi = rr->hi[mid];
				break;
			}
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&rr->seq, __ATOMIC_RELAXED) == s)
			return found;
	}
	return false;
}

void py_rcache_sync(struct py_rcache *c)
{
	uint32_t seq = rr ? __atomic_load_n(&rr->seq, __ATOMIC_ACQUIRE) : 0;

	if (c->seq != seq)
		*c = (struct py_rcache){.seq = seq};
}

bool py_readable(uint64_t a, uint64_t len)
{
	struct py_rcache c = {0};

	return py_readable_slow(&c, a, len);
}

bool py_readable_slow(struct py_rcache *c, uint64_t a, uint64_t len)
{
	uint64_t *lo = &c->lo[c->next], *hi = &c->hi[c->next];
	uint32_t seq;

	if (a < 4096 || a + len < a || a + len > (1ull << 47) || !rr)
		return false;
	c->hot = c->next;
	c->next = (c->next + 1) % PY_RCACHE;
	if (LIKELY(ranges_have(a, len, lo, hi)))
		return true;
	/* Not there as last read: read again, unless another thread did since we looked. */
	seq = __atomic_load_n(&rr->seq, __ATOMIC_ACQUIRE);
	spin_lock(&rr_lock);
	if (__atomic_load_n(&rr->seq, __ATOMIC_ACQUIRE) == seq)
		ranges_read();
	spin_unlock(&rr_lock);
	return ranges_have(a, len, lo, hi);
}

/* ---- finding the interpreter ---- */

/* Said once per process, by the recorder (the shared memory's note), and counted in the file. */
void py_say_once(int *said, const char *why)
{
	struct hs_shm_hdr *h = hs_hot.sl.shm;
	uint32_t free_slot = 0;
	int n;

	if (__atomic_exchange_n(said, 1, __ATOMIC_ACQ_REL))
		return;
	count(HS_CNT_PY_UNSUPPORTED);
	if (!h || !__atomic_compare_exchange_n(&h->note_pid, &free_slot, hs_hot.sl.self_pid, false, __ATOMIC_ACQUIRE,
					       __ATOMIC_RELAXED))
		return; /* the counter says it */
	n = snprintf(h->note, sizeof(h->note), "Python frames not read in process %u: %s", hs_hot.sl.self_pid, why);
	if (n < 0)
		n = 0;
	__atomic_store_n(&h->note_len, (uint32_t)n < sizeof(h->note) ? (uint32_t)n : (uint32_t)sizeof(h->note) - 1,
			 __ATOMIC_RELEASE);
}

static void refuse(const char *why)
{
	py_say_once(&py_refused, why);
}

/* major << 8 | minor: Py_Version (3.11 on, PY_VERSION_HEX), else Py_GetVersion()'s "3.X.Y ...". */
static uint16_t interp_version(void)
{
	const uint32_t *hex = dlsym(RTLD_DEFAULT, "Py_Version");
	const char *(*getv)(void);
	const char *s;
	unsigned major, minor;

	if (hex)
		return (uint16_t)((*hex >> 24) << 8 | (*hex >> 16 & 0xff));
	getv = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	if (!getv || !(s = getv()) || sscanf(s, "%u.%u", &major, &minor) != 2 || major > 255 || minor > 255)
		return 0;
	return (uint16_t)(major << 8 | minor);
}

/* The eval loop's code: from its symbol's size (no .symtab is needed: it is exported). */
static bool eval_range(void *eval)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	if (!dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
		return false;
	py.eval_lo = (uint64_t)(uintptr_t)eval;
	py.eval_hi = py.eval_lo + sym->st_size;
	return true;
}

static bool find_symbols(void)
{
#define SYM(field, name) (py.field = (__typeof__(py.field))(uintptr_t)dlsym(RTLD_DEFAULT, name))
	void *rt = dlsym(RTLD_DEFAULT, "_PyRuntime"), *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");

	if (!rt || !eval)
		return false;
	py.runtime = (uint64_t)(uintptr_t)rt;
	SYM(code_type, "PyCode_Type");
	SYM(unicode_type, "PyUnicode_Type");
	SYM(bytes_type, "PyBytes_Type");
	SYM(is_initialized, "Py_IsInitialized");
	SYM(add_pending_call, "Py_AddPendingCall");
	SYM(get_allocator, "PyMem_GetAllocator");
	SYM(set_allocator, "PyMem_SetAllocator");
	SYM(this_thread_state, "PyGILState_GetThisThreadState");
	if (!SYM(current_thread_state, "PyThreadState_GetUnchecked"))
		SYM(current_thread_state, "_PyThreadState_UncheckedGet");
	SYM(sys_get_object, "PySys_GetObject");
	SYM(sys_set_object, "PySys_SetObject");
	SYM(cfunction_new, "PyCFunction_NewEx");
	SYM(call_object, "PyObject_CallObject");
	SYM(get_attr, "PyObject_GetAttrString");
	SYM(incref, "Py_IncRef");
	SYM(decref, "Py_DecRef");
	SYM(err_clear, "PyErr_Clear");
	SYM(import_module, "PyImport_ImportModule");
	SYM(call_args, "PyObject_CallFunctionObjArgs");
	SYM(none, "_Py_NoneStruct");
#undef SYM
	if (!eval_range(eval) || !py.code_type || !py.unicode_type || !py.bytes_type) {
		refuse("the interpreter's symbols (_PyEval_EvalFrameDefault's size, PyCode_Type...) are not all exported");
		return false;
	}
	return true;
}

/* Looks for an interpreter in the process, once it has one. */
void py_attach(void)
{
	const struct py_layout *l;
	uint16_t v;

	if (__atomic_load_n(&hs_hot.sl.py_ready, __ATOMIC_ACQUIRE) || py_refused)
		return;
	depth_in(); /* what dlsym allocates is ours */
	if (!find_symbols())
		goto out;
	v = interp_version();
	l = pylayout_for(v);
	if (!l) {
		char why[96];

		snprintf(why, sizeof(why), "CPython %u.%u is not one of 3.8 to 3.13", v >> 8, v & 0xff);
		refuse(why);
		goto out;
	}
	py.l = *l;
	if (v >= 0x30d) {
		int err = pylayout_from_debug_offsets((const uint8_t *)(uintptr_t)py.runtime, &py.l);

		if (err == -EOPNOTSUPP) {
			refuse("a free-threaded build (not supported)");
			goto out;
		}
		if (err) {
			refuse("_Py_DebugOffsets is not 3.13's");
			goto out;
		}
	}
	if (!rr) {
		void *m = mmap(NULL, sizeof(*rr), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			goto out;
		rr = m;
		spin_lock(&rr_lock);
		ranges_read();
		spin_unlock(&rr_lock);
	}
	if (py_codes_init())
		goto out;
	__atomic_store_n(&hs_hot.sl.py_ready, 1, __ATOMIC_RELEASE);
	pymem_wait_begin();
out:
	depth_out();
}

/* No other thread is in the child: a lock another held at the fork is free, and a table it
 * was writing is read anew. */
void py_after_fork_child(void)
{
	rr_lock = 0;
	if (rr && (rr->seq & 1)) {
		rr->seq++;
		ranges_read();
	}
	py_codes_after_fork_child();
}
