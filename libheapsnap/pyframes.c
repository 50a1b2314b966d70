// SPDX-License-Identifier: MIT
/* Python frames in a recorded stack: the calling thread's own frame chain, read at the
 * allocation (no Python API, no GIL: the thread's state from _PyRuntime's thread-state key,
 * which is this thread's whether it holds the GIL or not), spliced where the native stack
 * passes through the eval loop. One eval call runs one frame up to 3.10; from 3.11 it runs
 * frames up to its entry frame (3.11's is_entry; 3.12 on, the shim frame it pushes, owned by
 * the C stack, is below them). Only recorded events get here: a call the sampler passes by
 * never reads a frame.
 *
 * Every read of the interpreter's memory is checked first (py_readable, python.c), and code
 * objects by their type. The chain is walked at most MAX_PY_FRAMES deep.
 *
 * Code objects are named once per process: an id from a table keyed by the object's address.
 * A code object freed and another made at its address must not take its name. Two guards:
 *  - recording every event with the domains wrapped (pymem.c), every free of a code object is
 *    seen (py_code_freed): its entry becomes a tombstone and an epoch moves on, so that what a
 *    thread remembers of its frames' codes (the memo) is dropped;
 *  - otherwise (sampling: frees pass by unseen; or before the wrap) an entry matches only if
 *    the object's name, file name and line table (their addresses, and a fingerprint of their
 *    contents: code_fields), its first line and, up to 3.10, its bytecode object are all the
 *    entry's. Another object matching all of those is in practice the same function made again,
 *    whose name and lines are the same. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "libheapsnap.h"
#include "python.h"

#define MAX_PY_FRAMES 256
#define CODE_SLOTS (1u << 16)
#define CODE_PROBES 32

struct code_ent {
	uint64_t addr, name, file, table, bytecode;
	uint64_t ends; /* the contents' fingerprint: see code_fields */
	uint32_t first, id;
	uint32_t gen; /* the table's generation it was made in: older entries are empty */
	uint32_t seq; /* odd while the entry is written: lookups take no lock, and retry */
};
static struct code_ent *codes;
static uint32_t codes_gen = 1, next_code_id = 1;
static int codes_lock;

/* Each thread's last ids, by the frame that ran the code: a frame still running the code it
 * ran at the last walk keeps that code alive (it holds a reference), so the code need not be
 * checked again, and its id is the one found then if its fields are still those (the guard,
 * as in the table). Most of a walk is outer frames, suspended in their calls since the last. */
#define MEMO_SLOTS 64
struct memo_ent {
	uint64_t frame;
	struct code_ent c;
};
struct py_memo {
	uint32_t gen;   /* codes_gen it was filled in: a fork's child starts afresh */
	uint32_t epoch; /* py_code_epoch it was filled in: no code object freed since */
	/* Recording every event, the last walks' frames by depth from the outermost, where
	 * frames stay from one event to the next: the next walk finds them in a few lines, not
	 * in a hashed entry each (its loads were a quarter of a walk's time in a profile). */
	uint64_t by_depth_frame[HS_MAX_STACK], by_depth_code[HS_MAX_STACK];
	uint32_t by_depth_id[HS_MAX_STACK];
	struct py_rcache rc; /* the ranges of the table its walks found */
	struct memo_ent e[MEMO_SLOTS];
};
static __thread struct py_memo *memo __attribute__((tls_model("initial-exec")));
static pthread_key_t memo_key;

static void memo_free(void *m)
{
	munmap(m, sizeof(struct py_memo));
	memo = NULL;
}

int py_codes_init(void)
{
	void *m;

	if (codes)
		return 0;
	if (pthread_key_create(&memo_key, memo_free))
		return -EAGAIN;
	m = mmap(NULL, CODE_SLOTS * sizeof(*codes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	codes = m;
	return 0;
}

/* Every entry of the table stale (another generation), every memo emptied (memo_get), ids
 * from 1 again: each code object is named anew. */
static void codes_renumber(void)
{
	__atomic_add_fetch(&codes_gen, 1, __ATOMIC_RELEASE);
	next_code_id = 1;
}

/* Ids are per process: the child names its code objects anew. */
void py_codes_after_fork_child(void)
{
	codes_lock = 0;
	codes_renumber();
}

/* And per recording: an attach's recorder has none of the names an earlier session's was
 * sent (HS_EV_PYCODE). Memos of a preloaded session taken over, which may have sampled, its
 * frees of code objects unseen, go with them. A walk that read the old generation just before
 * names its frames with old ids once. */
void py_codes_new_session(void)
{
	if (!codes)
		return;
	spin_lock(&codes_lock);
	codes_renumber();
	spin_unlock(&codes_lock);
}

static inline uint64_t rd64(uint64_t a)
{
	return *(const uint64_t *)(uintptr_t)a;
}

static inline bool in_eval(uint64_t ip)
{
	return ip - 1 - py.eval_lo < py.eval_hi - py.eval_lo;
}

/* Whether CODE is a code object we can read the fields of. */
static bool code_ok(struct py_rcache *rc, uint64_t code)
{
	const struct py_layout *l = &py.l;
	int32_t end = l->co_adaptive > l->co_linetable ? l->co_adaptive : l->co_linetable + 8;

	return !(code & 7) && py_readable_c(rc, code, (uint64_t)end) && rd64(code + 8) == py.code_type;
}

/* ---- strings and the PY_CODE event ---- */

struct pystr {
	const uint8_t *data;
	uint32_t len, kind; /* characters; bytes each (1, 2, 4), 0: none */
};

static void pystr_get(uint64_t o, struct pystr *s)
{
	const struct py_layout *l = &py.l;
	uint32_t state;
	uint64_t len;

	*s = (struct pystr){0};
	if (!o || (o & 7) || !py_readable(o, (uint64_t)l->uni_compact_size) || rd64(o + 8) != py.unicode_type)
		return;
	len = rd64(o + 16);
	state = *(const uint32_t *)(uintptr_t)(o + (uint64_t)l->uni_state);
	if (!(state >> 5 & 1) || len > 4096)
		return; /* not compact: not a code object's name, in practice */
	s->kind = state >> 2 & 7;
	if (s->kind != 1 && s->kind != 2 && s->kind != 4)
		return (void)(s->kind = 0);
	s->data = (const uint8_t *)(uintptr_t)(o + (uint64_t)(state >> 6 & 1 ? l->uni_ascii_size : l->uni_compact_size));
	s->len = (uint32_t)len;
	if (!py_readable((uint64_t)(uintptr_t)s->data, len * s->kind))
		*s = (struct pystr){0};
}

/* S in UTF-8 into OUT (NULL: only counted), at most CAP bytes, whole characters. */
static uint32_t pystr_utf8(const struct pystr *s, uint8_t *out, uint32_t cap)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->len; i++) {
		uint32_t c = s->kind == 1 ? s->data[i]
			     : s->kind == 2 ? ((const uint16_t *)s->data)[i] : ((const uint32_t *)s->data)[i];
		uint8_t b[4];
		uint32_t k;

		if (c < 0x80)
			b[0] = (uint8_t)c, k = 1;
		else if (c < 0x800)
			b[0] = (uint8_t)(0xc0 | c >> 6), b[1] = (uint8_t)(0x80 | (c & 0x3f)), k = 2;
		else if (c < 0x10000)
			b[0] = (uint8_t)(0xe0 | c >> 12), b[1] = (uint8_t)(0x80 | (c >> 6 & 0x3f)),
			b[2] = (uint8_t)(0x80 | (c & 0x3f)), k = 3;
		else
			b[0] = (uint8_t)(0xf0 | (c >> 18 & 7)), b[1] = (uint8_t)(0x80 | (c >> 12 & 0x3f)),
			b[2] = (uint8_t)(0x80 | (c >> 6 & 0x3f)), b[3] = (uint8_t)(0x80 | (c & 0x3f)), k = 4;
		if (n + k > cap)
			break;
		if (out)
			memcpy(out + n, b, k);
		n += k;
	}
	return n;
}

/* The line table's bytes, or none (0) if it is not a bytes object we can read. */
static uint32_t pybytes_get(uint64_t o, const uint8_t **data)
{
	const struct py_layout *l = &py.l;
	uint64_t size;

	if (!o || (o & 7) || !py_readable(o, (uint64_t)l->bytes_sval) || rd64(o + 8) != py.bytes_type)
		return 0;
	size = rd64(o + (uint64_t)l->bytes_size);
	if (size > (1u << 24) || !py_readable(o + (uint64_t)l->bytes_sval, size))
		return 0;
	*data = (const uint8_t *)(uintptr_t)(o + (uint64_t)l->bytes_sval);
	return (uint32_t)size;
}

static void send_code(struct tstate *t, const struct code_ent *c)
{
	struct pystr name, file;
	const uint8_t *table = NULL;
	uint32_t nl, fl, tl, need, cap = hs_hot.sl.shm->ring_bytes / 4;
	struct hs_pycode_event *e;

	pystr_get(c->name, &name);
	pystr_get(c->file, &file);
	tl = pybytes_get(c->table, &table);
	nl = pystr_utf8(&name, NULL, HS_PYCODE_MAX_NAME);
	fl = pystr_utf8(&file, NULL, HS_PYCODE_MAX_FILE);
	/* A table cut short would give wrong lines past its end: none is better. The event must
	 * also fit a quarter of a ring, whose writer waits for room. */
	if (tl > HS_PYCODE_MAX_TABLE || offsetof(struct hs_pycode_event, data) + nl + fl + tl > cap) {
		tl = 0;
		count(HS_CNT_PY_TABLE_DROPPED);
	}
	e = reserve(t, (uint32_t)offsetof(struct hs_pycode_event, data) + nl + fl + tl, &need);
	if (!e)
		return;
	fill_hdr(&e->h, HS_EV_PYCODE, 0, t->tid, now_ns());
	e->id = c->id;
	e->first_line = c->first;
	e->py_version = py.l.version;
	e->name_len = pystr_utf8(&name, e->data, nl);
	e->file_len = pystr_utf8(&file, e->data + nl, fl);
	e->table_len = tl;
	e->pad = 0;
	if (tl)
		memcpy(e->data + nl + fl, table, tl);
	commit(t, need);
	count(HS_CNT_PY_CODES);
}

/* ---- code ids ---- */

static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0x9e3779b97f4a7c15ull;
	return h ^ h >> 29;
}

/* The length of DATA's LEN bytes, its last 8 and its first 8: 8 bytes before the end lie in the
 * object (a str's or a bytes' header is longer than that), and the first 8 are read only when
 * the contents have them. */
static uint64_t ends(uint64_t data, uint64_t len)
{
	uint64_t h = mix(len, *(const uint64_t *)(uintptr_t)(data + len - 8));

	return len >= 8 ? mix(h, *(const uint64_t *)(uintptr_t)data) : h;
}

static uint64_t str_ends(uint64_t o)
{
	const struct py_layout *l = &py.l;
	uint64_t len = rd64(o + 16);
	uint32_t state = *(const uint32_t *)(uintptr_t)(o + (uint64_t)l->uni_state), kind = state >> 2 & 7;

	if (!(state >> 5 & 1) || len > 4096 || (kind != 1 && kind != 2 && kind != 4))
		return len; /* not compact: its length only */
	return ends(o + (uint64_t)(state >> 6 & 1 ? l->uni_ascii_size : l->uni_compact_size), len * kind);
}

/* What names a code object in the file, read from it: the addresses of its name, file name and
 * line table, its first line, and (the guard against an address reused) a fingerprint of their
 * contents. Objects made in the same pattern as freed ones take the freed ones' addresses, all
 * of them at once (code compiled and dropped in a loop: measured, t_python_code_ids): addresses
 * alone do not tell a code object from the one freed before it, contents do. Two code objects
 * whose name, file name and line table have the same lengths and the same first and last 8 bytes
 * (and the same first line) share an id: in practice the same function made again, named and
 * numbered as it was. The objects are alive: the code object, alive, holds them. */
static void code_fields(uint64_t code, struct code_ent *c)
{
	const struct py_layout *l = &py.l;
	uint64_t tlen;

	c->addr = code;
	c->name = rd64(code + (uint64_t)(l->co_qualname >= 0 ? l->co_qualname : l->co_name));
	c->file = rd64(code + (uint64_t)l->co_filename);
	c->table = rd64(code + (uint64_t)l->co_linetable);
	c->bytecode = l->co_code >= 0 ? rd64(code + (uint64_t)l->co_code) : 0;
	c->first = *(const uint32_t *)(uintptr_t)(code + (uint64_t)l->co_firstlineno);
	c->ends = mix(c->first, c->name && !(c->name & 7) ? str_ends(c->name) : 0);
	c->ends = mix(c->ends, c->file && !(c->file & 7) ? str_ends(c->file) : 0);
	if (c->table && !(c->table & 7) && (tlen = rd64(c->table + (uint64_t)l->bytes_size)) < (1u << 24))
		c->ends = mix(c->ends, ends(c->table + (uint64_t)l->bytes_sval, tlen));
}

static inline bool same(const struct code_ent *a, const struct code_ent *b)
{
	return a->addr == b->addr && a->name == b->name && a->file == b->file && a->table == b->table &&
	       a->bytecode == b->bytecode && a->first == b->first && a->ends == b->ends;
}

/* Without the lock: the id if the table has this object as it is, else 0. An entry being
 * written (odd seq) or rewritten meanwhile (seq moved) sends the caller to the locked path. */
static uint32_t code_lookup(const struct code_ent *c, uint32_t h)
{
	uint32_t gen = __atomic_load_n(&codes_gen, __ATOMIC_RELAXED);

	for (uint32_t k = 0; k < CODE_PROBES; k++) {
		const struct code_ent *e = &codes[(h + k) & (CODE_SLOTS - 1)];
		uint32_t s = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE), id;
		bool hit, end;

		if (s & 1)
			return 0;
		hit = e->gen == gen && e->addr == c->addr;
		end = e->gen != gen;
		id = hit && same(e, c) ? e->id : 0;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != s)
			return 0;
		if (hit || end)
			return id;
	}
	return 0;
}

/* Code objects freed, watched through the object domain's free (pymem.c): a filter of the
 * addresses in the table, so that a free of anything else costs one load; and an epoch,
 * bumped at each free of a code object of the table, which the memos follow. */
#define FILTER_BITS 16
static uint64_t code_filter[(1u << FILTER_BITS) / 64];
uint32_t py_code_epoch;

static inline uint32_t filter_bit(uint64_t a)
{
	return (uint32_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> (64 - FILTER_BITS));
}

static void filter_set(uint64_t a)
{
	uint32_t b = filter_bit(a);

	__atomic_fetch_or(&code_filter[b >> 6], 1ull << (b & 63), __ATOMIC_RELAXED);
}

void py_code_freed(const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	uint32_t b = filter_bit(a), h = (uint32_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 48) & (CODE_SLOTS - 1);

	if (LIKELY(!(__atomic_load_n(&code_filter[b >> 6], __ATOMIC_RELAXED) >> (b & 63) & 1)) || !codes)
		return;
	spin_lock(&codes_lock);
	for (uint32_t k = 0; k < CODE_PROBES; k++) {
		struct code_ent *e = &codes[(h + k) & (CODE_SLOTS - 1)];

		if (e->gen != codes_gen)
			break;
		if (e->addr == a) {
			/* A tombstone (address 1): later entries of the probe stay reachable. */
			__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_RELEASE);
			e->addr = 1;
			__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELEASE);
			__atomic_add_fetch(&py_code_epoch, 1, __ATOMIC_ACQ_REL);
			break;
		}
	}
	spin_unlock(&codes_lock);
}

uint32_t py_code_id(struct tstate *t, uint64_t code)
{
	struct code_ent c, *home;
	uint32_t h = (uint32_t)((code >> 4) * 0x9e3779b97f4a7c15ull >> 48) & (CODE_SLOTS - 1), id;
	bool fresh = false;

	code_fields(code, &c);
	if (LIKELY((id = code_lookup(&c, h))))
		return id;
	spin_lock(&codes_lock);
	home = &codes[h];
	for (uint32_t k = 0; k < CODE_PROBES; k++) {
		struct code_ent *e = &codes[(h + k) & (CODE_SLOTS - 1)];

		if (e->gen == codes_gen && e->addr == code) {
			if (same(e, &c)) {
				id = e->id;
				break;
			}
			home = e; /* a freed object's address, taken by another: its entry is stale */
			break;
		}
		if (e->gen != codes_gen) {
			home = e;
			break;
		}
	}
	/* Not there: in the first free slot, the stale one, or (all probes taken) over the home
	 * slot, whose object then gets a new id if it is seen again. */
	if (!id && next_code_id < (1u << HS_PYFRAME_CODE_BITS)) {
		/* An entry of a live object given up (or one whose free was missed): a free of its
		 * object would not be found, so no memo may trust what it holds. */
		if (home->gen == codes_gen && home->addr > 1)
			__atomic_add_fetch(&py_code_epoch, 1, __ATOMIC_ACQ_REL);
		filter_set(code);
		c.id = id = next_code_id++;
		c.gen = codes_gen;
		c.seq = home->seq + 1;
		__atomic_store_n(&home->seq, c.seq, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		*home = c;
		__atomic_store_n(&home->seq, c.seq + 1, __ATOMIC_RELEASE);
		fresh = true;
	}
	spin_unlock(&codes_lock);
	if (fresh)
		send_code(t, &c);
	return id;
}

/* ---- the walk ---- */

struct pyf {
	uint64_t frame;
	uint64_t code; /* 0: an eval call running no frame of its own (one being cleared) */
	uint32_t off;
	bool last;     /* the last frame of its eval call */
};

/* The calling thread's PyThreadState, or 0. */
static uint64_t thread_pystate(struct py_rcache *rc)
{
	const struct py_layout *l = &py.l;
	const uint8_t *tss = (const uint8_t *)(uintptr_t)(py.runtime + (uint64_t)l->rt_tss);
	uint64_t ts;

	if (!*(const int *)tss)
		return 0;
	/* glibc answers NULL for a key past its limit: nothing here can fault. */
	ts = (uint64_t)(uintptr_t)pthread_getspecific(*(const pthread_key_t *)(tss + 4));
	if (!ts || (ts & 7) || !py_readable_c(rc, ts, (uint64_t)(l->ts_frame > l->ts_interp ? l->ts_frame : l->ts_interp) + 8))
		return 0;
	/* A subinterpreter's frames are another interpreter's: not read (not supported). */
	if (rd64(ts + (uint64_t)l->ts_interp) != rd64(py.runtime + (uint64_t)l->rt_main)) {
		static int said;

		py_say_once(&said, "a subinterpreter's frames (not supported; the main interpreter's are read)");
		return 0;
	}
	return ts;
}

static uint32_t frame_off(uint64_t frame, uint64_t code)
{
	const struct py_layout *l = &py.l;

	if (py.l.family == PY_FAM_FRAMEOBJ) {
		int lasti = *(const int *)(uintptr_t)(frame + (uint64_t)l->fr_instr);

		return lasti < 0 ? (uint32_t)HS_PYFRAME_OFF_NONE : (uint32_t)lasti * l->lasti_scale;
	}
	uint64_t p = rd64(frame + (uint64_t)l->fr_instr), base = code + (uint64_t)l->co_adaptive;

	return p >= base && p - base < HS_PYFRAME_OFF_NONE ? (uint32_t)(p - base) : (uint32_t)HS_PYFRAME_OFF_NONE;
}

/* The thread's Python frames, innermost first, each marked if its eval call runs no more. */
static uint32_t py_frames(struct py_rcache *rc, struct pyf *out, uint32_t max)
{
	const struct py_layout *l = &py.l;
	uint64_t ts = thread_pystate(rc), frame;
	int32_t span = l->fr_back;
	uint32_t n = 0;

	if (!ts) {
		count(HS_CNT_PY_NOT_WALKED);
		return 0;
	}
	for (int32_t f = 0, fs[] = {l->fr_code, l->fr_instr + 8, l->fr_is_entry + 1, l->fr_owner + 1}; f < 4; f++)
		span = fs[f] > span ? fs[f] : span;
	frame = rd64(ts + (uint64_t)l->ts_frame);
	if (l->cf_current >= 0) /* 3.11, 3.12: the eval call's _PyCFrame, on the C stack */
		frame = frame && !(frame & 7) && py_readable_c(rc, frame, (uint64_t)l->cf_current + 8)
			? rd64(frame + (uint64_t)l->cf_current) : 0;
	/* The layout's fields in locals: the stores to OUT could alias them. */
	const uint64_t back = (uint64_t)l->fr_back, code_at = (uint64_t)l->fr_code, reach = (uint64_t)span + 8;
	const int32_t owner = l->version >= 0x30c ? l->fr_owner : -1, entry = l->fr_is_entry;
	const bool one_each = l->family == PY_FAM_FRAMEOBJ;
	for (uint32_t steps = 0; frame && steps < MAX_PY_FRAMES && n < max; steps++) {
		uint64_t code;

		if ((frame & 7) || !py_readable_c(rc, frame, reach)) {
			count(HS_CNT_PY_WALK_STOPPED);
			break;
		}
		if (owner >= 0 && *(const uint8_t *)(uintptr_t)(frame + (uint64_t)owner) == PY_OWNED_BY_CSTACK) {
			/* The end of an eval call's frames. None before it: the call is returning,
			 * its last frame unlinked already while it is cleared. */
			if (n && !out[n - 1].last)
				out[n - 1].last = true;
			else
				out[n++] = (struct pyf){.last = true};
			frame = rd64(frame + back);
			continue;
		}
		code = rd64(frame + code_at);
		if (!code) {
			count(HS_CNT_PY_WALK_STOPPED);
			break;
		}
		/* The code is checked when its id is wanted (frame_code_id). */
		out[n].frame = frame;
		out[n].code = code;
		out[n].off = frame_off(frame, code);
		out[n].last = one_each || (entry >= 0 && *(const uint8_t *)(uintptr_t)(frame + (uint64_t)entry));
		n++;
		frame = rd64(frame + back);
	}
	return n;
}

/* The thread's memo, emptied if a code object was freed since it was filled or a fork's child
 * names codes anew; NULL if none can be had. Once a walk. */
static struct py_memo *memo_get(void)
{
	uint32_t gen = __atomic_load_n(&codes_gen, __ATOMIC_RELAXED), epoch;

	if (UNLIKELY(!memo)) {
		void *m = mmap(NULL, sizeof(*memo), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return NULL;
		memo = m;
		depth_in(); /* a key past the first 32 takes an allocation */
		pthread_setspecific(memo_key, m);
		depth_out();
	}
	epoch = __atomic_load_n(&py_code_epoch, __ATOMIC_ACQUIRE);
	if (memo->gen != gen || memo->epoch != epoch) {
		memset(memo->by_depth_frame, 0, sizeof(memo->by_depth_frame));
		memset(memo->e, 0, sizeof(memo->e));
		memo->gen = gen;
		memo->epoch = epoch;
	}
	py_rcache_sync(&memo->rc);
	return memo;
}

/* The id of the code FRAME runs, DEPTH frames from the outermost, 0 if it is not a code object
 * we can read. M: the thread's memo, or NULL; TRUST: every free of a code object is seen (every
 * event, the domains wrapped), so that a frame of the memo still running its code runs the
 * one the memo names, as none was freed since it was filled. */
static uint32_t frame_code_id(struct tstate *t, struct py_rcache *rc, struct py_memo *m, bool trust, uint32_t depth,
			      uint64_t frame, uint64_t code)
{
	struct memo_ent *e;
	struct code_ent c;
	uint32_t id;

	if (!m)
		return code_ok(rc, code) ? py_code_id(t, code) : 0;
	if (trust && m->by_depth_frame[depth] == frame && m->by_depth_code[depth] == code)
		return m->by_depth_id[depth];
	e = &m->e[(frame >> 4 ^ frame >> 10) & (MEMO_SLOTS - 1)];
	if (e->frame == frame && e->c.addr == code) {
		if (trust) {
			id = e->c.id;
			goto by_depth;
		}
		code_fields(code, &c);
		if (same(&e->c, &c))
			return e->c.id;
	}
	if (!code_ok(rc, code))
		return 0;
	if (!(id = py_code_id(t, code)))
		return 0;
	code_fields(code, &e->c);
	e->c.id = id;
	e->frame = frame;
by_depth:
	if (trust) {
		m->by_depth_frame[depth] = frame;
		m->by_depth_code[depth] = code;
		m->by_depth_id[depth] = id;
	}
	return id;
}

uint32_t py_splice(struct tstate *t, uint64_t *ips, uint32_t n, uint32_t max)
{
	struct pyf f[HS_MAX_STACK];
	uint64_t out[HS_MAX_STACK];
	struct py_rcache own = {0}, *rc;
	uint32_t i, k = 0, fi = 0, nf;
	struct py_memo *m;
	bool trust;

	for (i = 0; i < n && !in_eval(ips[i]); i++)
		;
	if (i == n)
		return n; /* not in the eval loop: no Python frame to read */
	m = memo_get();
	rc = m ? &m->rc : &own;
	trust = m && pymem_sees_frees();
	nf = py_frames(rc, f, HS_MAX_STACK);
	for (i = 0; i < n && k < max; i++) {
		if (!in_eval(ips[i])) {
			out[k++] = ips[i];
			continue;
		}
		if (fi == nf) {
			count(HS_CNT_PY_UNMATCHED);
			out[k++] = ips[i];
			continue;
		}
		if (!f[fi].code) { /* an eval call between frames: the loop's own frame stays */
			out[k++] = ips[i];
			fi++;
			continue;
		}
		do {
			uint32_t id = frame_code_id(t, rc, m, trust, nf - 1 - fi, f[fi].frame, f[fi].code);

			if (!id) { /* not a code object: the rest of the chain is not to be trusted */
				count(HS_CNT_PY_WALK_STOPPED);
				nf = fi;
				break;
			}
			out[k++] = HS_PYFRAME(id, f[fi].off);
		} while (!f[fi++].last && fi < nf && k < max);
	}
	if (i < n)
		count(HS_CNT_STACK_TRUNCATED);
	memcpy(ips, out, k * sizeof(*out));
	return k;
}
