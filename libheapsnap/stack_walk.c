// SPDX-License-Identifier: MIT
/* --stack auto in the target: a walk of return addresses with unwind tables built from each
 * module's .eh_frame (common/unwtab.c, the same code the BPF path's tables come from), where
 * a frame-pointer walk would lose every caller of code built without frame pointers.
 *
 * A frame's rule comes from the module's own mapped .eh_frame, found through PT_GNU_EH_FRAME:
 * its FDE by .eh_frame_hdr's binary search table, its program run to the address by the code
 * that builds the BPF tables (a module without that search table gets a whole table, built
 * into memory of our own mmap: no allocator call, we are inside one). The rule is cached per
 * return address in one word, so that a walk through frames seen before costs about what a
 * frame-pointer walk does. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

#include "unwtab.h"
#include "libheapsnap.h"

#define MAX_MODULES 1024

struct umod {
	uint64_t lo, hi;   /* its executable segments in memory */
	uint64_t bias;     /* memory address - link-time address */
	uint64_t eh, eh_len; /* .eh_frame, link-time; eh_len 0: none */
	uint64_t hdr, hdr_len; /* .eh_frame_hdr, link-time; hdr_len 0: none */
	const struct hs_unw_row *rows; /* atomic: set once built */
	uint64_t rows_bytes; /* what was mapped for them */
	uint32_t n;
	int state;         /* atomic: 0 not built yet, 1 built, -1 none to be had */
	int no_lookup;     /* atomic: .eh_frame_hdr's table is not searchable: build a table */
	bool carried;      /* its table went on to the set that replaced this one */
};

struct modset {
	uint32_t n;
	uint64_t bytes;    /* what was mapped for it */
	unsigned long long adds, subs; /* dl_iterate_phdr's counts when it was made */
	struct modset *next_retired;
	struct umod m[];   /* sorted by lo */
};

/* The current set, replaced at a dlopen or dlclose. A replaced set is retired, and unmapped
 * (with the tables of modules gone) once no walk can still hold it: a walk counts itself in
 * `walkers` before it reads `mods`, so a count of zero seen after the replacement means every
 * walk that read the old set is over. Sequentially consistent, both: the replacement and the
 * count's read on one side, the count's increment and the read of `mods` on the other. */
static struct modset *mods;
static struct modset *retired; /* under unw_lock */
static int walkers, retired_pending;
static pthread_mutex_t unw_lock = PTHREAD_MUTEX_INITIALIZER;

/* A frame's rule in one word, so that threads read and write it without a lock: the return
 * address's bits above CACHE_BITS (its low bits are the slot's, given those) << PACK_BITS |
 * the rule packed by hs_unw_pack(). User addresses fit 47 bits: 47 - CACHE_BITS + PACK_BITS
 * must not pass 64. */
#define CACHE_BITS 12 /* 32 KiB: a program's hot return addresses are some hundreds */
#define CACHE_MASK ((1u << CACHE_BITS) - 1)
static uint64_t rule_cache[1u << CACHE_BITS];
_Static_assert(47 - CACHE_BITS + HS_UNW_PACK_BITS <= 64, "a cache word holds the key and the rule");

static inline uint32_t cache_slot(uint64_t ra)
{
	return (uint32_t)(ra ^ (ra >> CACHE_BITS)) & CACHE_MASK;
}

struct scan {
	struct modset *set;
	uint32_t cap, seen;
	unsigned long long adds, subs;
	bool counts_only;
};

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *s = arg;
	struct umod m = {.lo = UINT64_MAX, .bias = info->dlpi_addr};
	const ElfW(Phdr) *hdr = NULL;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		s->adds = info->dlpi_adds;
		s->subs = info->dlpi_subs;
	}
	if (s->counts_only)
		return 1; /* the counts are the same in every call: one is enough */
	s->seen++;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			uint64_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;

			m.lo = lo < m.lo ? lo : m.lo;
			m.hi = hi > m.hi ? hi : m.hi;
		} else if (p->p_type == PT_GNU_EH_FRAME) {
			hdr = p;
		}
	}
	if (m.lo >= m.hi || s->set->n == s->cap)
		return 0;
	if (hdr) {
		uint64_t eh = unwtab__eh_frame_from_hdr((const uint8_t *)(uintptr_t)(info->dlpi_addr + hdr->p_vaddr),
							hdr->p_memsz, hdr->p_vaddr);

		/* .eh_frame's length is not in the header: it runs to its terminator, and at most to
		 * the end of the segment that holds it. */
		for (int i = 0; eh && i < info->dlpi_phnum; i++) {
			const ElfW(Phdr) *p = &info->dlpi_phdr[i];

			if (p->p_type == PT_LOAD && eh >= p->p_vaddr && eh < p->p_vaddr + p->p_filesz) {
				m.eh = eh;
				m.eh_len = p->p_vaddr + p->p_filesz - eh;
				m.hdr = hdr->p_vaddr;
				m.hdr_len = hdr->p_memsz;
			}
		}
	}
	m.state = m.eh_len ? 0 : -1;
	s->set->m[s->set->n++] = m;
	return 0;
}

static void *map_anon(uint64_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void counts(unsigned long long *adds, unsigned long long *subs)
{
	struct scan s = {.counts_only = true};

	dl_iterate_phdr(scan_one, &s);
	*adds = s.adds;
	*subs = s.subs;
}

static struct umod *find_module(struct modset *set, uint64_t pc);

/* Unmaps the retired sets, and the tables of their modules that no later set took, if no walk
 * is under way: each one began after they were replaced, so none holds them. */
static void reclaim(void)
{
	struct modset *list = NULL;

	if (!__atomic_load_n(&retired_pending, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&unw_lock);
	if (!__atomic_load_n(&walkers, __ATOMIC_SEQ_CST)) {
		list = retired;
		retired = NULL;
		__atomic_store_n(&retired_pending, 0, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&unw_lock);
	while (list) {
		struct modset *next = list->next_retired;

		for (uint32_t i = 0; i < list->n; i++)
			if (!list->m[i].carried && list->m[i].state > 0 && list->m[i].rows)
				munmap((void *)list->m[i].rows, list->m[i].rows_bytes);
		munmap(list, list->bytes);
		list = next;
	}
}

/* The modules as the loader has them now; tables already built carry over. The loader's list
 * is read without unw_lock held: a thread inside dl_iterate_phdr holds the loader's lock, and
 * if its callback allocated, its walk would wait for unw_lock while we waited for the loader.
 * The set is sized to the modules there are, with room for some loaded meanwhile; more than
 * that, and it is made again. */
static void rescan(void)
{
	struct modset *old = __atomic_load_n(&mods, __ATOMIC_SEQ_CST), *set;
	struct scan s = {0};
	uint64_t bytes;

	if (old) {
		unsigned long long a, b;

		counts(&a, &b);
		if (a == old->adds && b == old->subs)
			return; /* nothing loaded or unloaded since */
	}
	/* A set with room for none: the scan only counts. */
	s.set = &(struct modset){0};
	dl_iterate_phdr(scan_one, &s);
	for (uint32_t cap = s.seen;;) {
		cap = cap + 16 < MAX_MODULES ? cap + 16 : MAX_MODULES;
		bytes = (sizeof(struct modset) + cap * sizeof(struct umod) + 4095) & ~4095ull;
		set = map_anon(bytes);
		if (!set)
			return;
		set->bytes = bytes;
		s = (struct scan){.set = set, .cap = cap};
		dl_iterate_phdr(scan_one, &s);
		if (s.seen <= cap || cap == MAX_MODULES)
			break;
		munmap(set, bytes);
		cap = s.seen;
	}
	set->adds = s.adds;
	set->subs = s.subs;
	/* Insertion sort: a few hundred modules, once per dlopen. */
	for (uint32_t i = 1; i < set->n; i++) {
		struct umod t = set->m[i];
		uint32_t j = i;

		for (; j && set->m[j - 1].lo > t.lo; j--)
			set->m[j] = set->m[j - 1];
		set->m[j] = t;
	}
	pthread_mutex_lock(&unw_lock);
	old = __atomic_load_n(&mods, __ATOMIC_SEQ_CST); /* another thread may have rescanned */
	for (uint32_t i = 0; old && i < set->n; i++) {
		struct umod *o = find_module(old, set->m[i].lo);

		if (o && o->lo == set->m[i].lo && o->hi == set->m[i].hi && o->bias == set->m[i].bias && o->state) {
			set->m[i].rows = o->rows;
			set->m[i].rows_bytes = o->rows_bytes;
			set->m[i].n = o->n;
			set->m[i].state = o->state;
			o->carried = true;
		}
	}
	/* Something was unloaded: a rule cached for its addresses may not be the new module's. */
	if (old && s.subs != old->subs)
		memset(rule_cache, 0, sizeof(rule_cache));
	__atomic_store_n(&mods, set, __ATOMIC_SEQ_CST);
	if (old) {
		old->next_retired = retired;
		retired = old;
		__atomic_store_n(&retired_pending, 1, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&unw_lock);
}

static void build(struct umod *m)
{
	const uint8_t *eh = (const uint8_t *)(uintptr_t)(m->bias + m->eh);
	long bound = unwtab__build(eh, m->eh_len, m->eh, NULL, 0), n;
	struct hs_unw_row *rows;

	if (bound <= 0 || bound > HS_UNW_MAX_ROWS || !(rows = map_anon((uint64_t)bound * sizeof(*rows)))) {
		__atomic_store_n(&m->state, -1, __ATOMIC_RELEASE);
		return;
	}
	n = unwtab__build(eh, m->eh_len, m->eh, rows, (uint64_t)bound);
	if (n <= 0) {
		munmap(rows, (uint64_t)bound * sizeof(*rows));
		__atomic_store_n(&m->state, -1, __ATOMIC_RELEASE);
		return;
	}
	m->rows = rows;
	m->rows_bytes = (uint64_t)bound * sizeof(*rows);
	m->n = (uint32_t)n;
	__atomic_store_n(&m->state, 1, __ATOMIC_RELEASE);
}

static struct umod *find_module(struct modset *set, uint64_t pc)
{
	uint32_t lo = 0, hi = set ? set->n : 0;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (pc < set->m[mid].lo)
			hi = mid;
		else if (pc >= set->m[mid].hi)
			lo = mid + 1;
		else
			return &set->m[mid];
	}
	return NULL;
}

/* The row at link-time address pc of module m (HS_UNW_NONE where no FDE covers it); false
 * when the module has no table. The module holds a return address of this thread's stack: it
 * stays mapped while its .eh_frame is read. */
static bool module_row(struct umod *m, uint64_t pc, struct hs_unw_row *row)
{
	const struct hs_unw_row *r;

	/* Through .eh_frame_hdr's search table one FDE is read and nothing is built: a process
	 * that lives a few milliseconds pays for the frames it has, not for its modules. */
	if (m->hdr_len && !__atomic_load_n(&m->no_lookup, __ATOMIC_RELAXED)) {
		int err = unwtab__lookup((const uint8_t *)(uintptr_t)(m->bias + m->hdr), m->hdr_len, m->hdr,
					 (const uint8_t *)(uintptr_t)(m->bias + m->eh), m->eh_len, m->eh, pc, row);

		if (!err)
			return true;
		if (err == -ENOENT) {
			row->cfa = HS_UNW_NONE;
			return true;
		}
		/* A search table in another form: a table of our own, built once. */
		__atomic_store_n(&m->no_lookup, 1, __ATOMIC_RELAXED);
	}
	if (!__atomic_load_n(&m->state, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&unw_lock);
		if (!m->state)
			build(m);
		pthread_mutex_unlock(&unw_lock);
	}
	if (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) < 0)
		return false;
	r = unwtab__find(m->rows, m->n, pc);
	*row = r ? *r : (struct hs_unw_row){.cfa = HS_UNW_NONE};
	return true;
}

#define FOUND (-1)

/* The rule for return address RA from its module's table. */
static int rule_from_modules(uint64_t ra, struct hs_unw_row *out)
{
	uint64_t pc = ra - 1;
	struct umod *m;
	uint32_t packed;

	/* The loader's list as it is now (rescan() only counts when nothing was loaded or
	 * unloaded): a module of an older list may be gone and cover an address of one loaded
	 * since, whose .eh_frame is elsewhere; reading the old one's would fault. */
	rescan();
	m = find_module(__atomic_load_n(&mods, __ATOMIC_SEQ_CST), pc);
	if (!m)
		return HS_CNT_UNW_NO_MODULE;
	if (!module_row(m, pc - m->bias, out))
		return HS_CNT_UNW_NO_TABLE;
	if (out->cfa == HS_UNW_NONE)
		return HS_CNT_UNW_NO_ROW;
	if (out->cfa == HS_UNW_EXPR)
		return HS_CNT_UNW_EXPRESSION;
	if (ra < (1ull << 47) && hs_unw_pack(out, &packed))
		__atomic_store_n(&rule_cache[cache_slot(ra)], (ra >> CACHE_BITS) << HS_UNW_PACK_BITS | packed,
				 __ATOMIC_RELAXED);
	return FOUND;
}

/* rule_for() when the cache does not have it: out of line, so that the walk's loop keeps its
 * registers. FOUND, or the counter of why there is no rule. */
static __attribute__((noinline)) int rule_slow(uint64_t ra, struct hs_unw_row *out)
{
	int ret;

	__atomic_add_fetch(&walkers, 1, __ATOMIC_SEQ_CST);
	ret = rule_from_modules(ra, out);
	if (!__atomic_sub_fetch(&walkers, 1, __ATOMIC_SEQ_CST))
		reclaim();
	return ret;
}

/* The rule for the frame whose return address is `ra`: FOUND, or why there is none. */
static inline int rule_for(uint64_t ra, struct hs_unw_row *out)
{
	uint64_t e = __atomic_load_n(&rule_cache[cache_slot(ra)], __ATOMIC_RELAXED);

	if (LIKELY(e >> HS_UNW_PACK_BITS == ra >> CACHE_BITS && e)) {
		hs_unw_unpack((uint32_t)e & ((1u << HS_UNW_PACK_BITS) - 1), out);
		return FOUND;
	}
	return rule_slow(ra, out);
}

/* The last walk's frames from J on, if what they were read from is unchanged: each return
 * address's slot, and each slot rbp was read from. Those reads do not wait on each other,
 * where a walk's do: allocations come in runs from one place, whose callers are the last
 * walk's. Appends them to IPS and to the new memo; false if a slot changed. */
static bool memo_suffix(const struct walk_memo *old, uint32_t j, struct walk_memo *nw, uint64_t *ips, uint32_t *n,
			uint32_t max)
{
	uint32_t k, at = *n;

	for (k = j + 1; k < old->n; k++) {
		const struct walk_frame *f = &old->f[k];

		if (*(const uint64_t *)(uintptr_t)(f->sp - 8) != f->ip ||
		    (f->rbp_at && *(const uint64_t *)(uintptr_t)f->rbp_at != f->rbp))
			return false;
	}
	for (k = j + 1; k < old->n && at < max; k++, at++) {
		ips[at] = old->f[k].ip;
		nw->f[at] = old->f[k];
	}
	*n = at;
	return true;
}

/* From the hook's frame (compiled with a frame pointer): frame 0 is its return address, as
 * in the frame-pointer walk; then one table lookup per frame, until a frame is the last
 * walk's in the same state (its stack pointer, return address and rbp) and the frames above
 * it are unchanged. Reads only within the thread's stack, each CFA above the last: a wrong
 * rule ends the walk, it cannot fault or loop. */
uint32_t unwind_walk(struct tstate *t, uint64_t fp, uint64_t *ips, uint32_t max)
{
	const struct walk_memo *old = &t->memo[t->memo_cur];
	struct walk_memo *nw = &t->memo[t->memo_cur ^ 1];
	uint64_t sp = fp + 16, rbp, pc, rbp_at = 0;
	bool rbp_ok = true;
	uint32_t n = 0, j = 0;
	int stop = FOUND;

	if (fp < t->stack_lo || fp + 16 > t->stack_hi)
		return 0;
	rbp = ((uint64_t *)(uintptr_t)fp)[0];
	pc = ((uint64_t *)(uintptr_t)fp)[1];
	while (pc && n < max) {
		struct hs_unw_row r;
		uint64_t cfa;

		while (j < old->n && old->f[j].sp < sp)
			j++;
		nw->f[n] = (struct walk_frame){.sp = sp, .ip = pc, .rbp = rbp, .rbp_at = rbp_at, .rbp_ok = rbp_ok};
		ips[n++] = pc;
		/* A walk cut at MAX lacks the callers past its last frame: a shallower walk that took
		 * its frames would lose them too, though they fit, and count itself cut. */
		if (j < old->n && old->stop != HS_CNT_STACK_TRUNCATED && old->f[j].sp == sp && old->f[j].ip == pc &&
		    old->f[j].rbp_ok == rbp_ok && (!rbp_ok || old->f[j].rbp == rbp) && memo_suffix(old, j, nw, ips, &n, max)) {
			stop = old->stop;
			break;
		}
		if (n == max)
			break;
		stop = rule_for(pc, &r);
		if (stop != FOUND || r.cfa == HS_UNW_END)
			break;
		if (r.cfa == HS_UNW_CFA_FP && !rbp_ok) {
			stop = HS_CNT_UNW_FP_LOST;
			break;
		}
		cfa = (r.cfa == HS_UNW_CFA_SP ? sp : rbp) + (uint64_t)(int64_t)r.cfa_off;
		if (cfa <= sp || cfa > t->stack_hi || (cfa & 7)) {
			stop = HS_CNT_UNW_BAD_FRAME;
			break;
		}
		rbp_at = 0;
		if (r.fp == HS_UNW_FP_AT) {
			rbp_at = cfa + (uint64_t)(int64_t)r.fp_off;
			if (rbp_at < sp || rbp_at + 8 > t->stack_hi) {
				stop = HS_CNT_UNW_BAD_FRAME;
				break;
			}
			rbp = *(const uint64_t *)(uintptr_t)rbp_at;
			rbp_ok = true;
		} else if (r.fp == HS_UNW_FP_LOST) {
			rbp_ok = false;
		}
		pc = *(const uint64_t *)(uintptr_t)(cfa - 8);
		sp = cfa;
	}
	if (n == max)
		stop = HS_CNT_STACK_TRUNCATED;
	if (stop != FOUND)
		t->walk_stop = stop;
	nw->n = n;
	nw->stop = stop;
	t->memo_cur ^= 1;
	return n;
}

/* A fork while another thread builds a table would leave the child's lock held forever. */
void unwind_before_fork(void)
{
	pthread_mutex_lock(&unw_lock);
}

void unwind_after_fork(bool child)
{
	/* The child's only thread is the one that forked, in no walk: walks counted are the
	 * parent's other threads', which the child does not have. */
	if (child)
		__atomic_store_n(&walkers, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&unw_lock);
}
