// SPDX-License-Identifier: MIT
/* libheapsnap.so, injected: the GOT entries of every loaded module that name an allocator
 * (or dlopen, or a thread-naming call) are pointed at our hooks, and each one's old value is
 * kept to be put back at detach. Both walks run inside dl_iterate_phdr's callback, under the
 * loader's lock: a module listed there cannot be unmapped while we write its GOT. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "abi/gotwalk.h"
#include "abi/inject_abi.h"
#include "libheapsnap.h"

/* What we hook, by the name a module imports: every allocator the table (common/allocators.def)
 * has a hook for, then the calls that tell us of new modules and thread names. */
static const char *const hook_names[] = {
#define HS_ALLOC(sym, kind, args, nest, hook, ret, params) HS_ALLOC_IF_HOOKED(hook, #sym, )
#include "allocators.def"
#undef HS_ALLOC
	"dlopen", "pthread_setname_np", "prctl",
};
#define NR_HOOKS (sizeof(hook_names) / sizeof(hook_names[0]))
static uint64_t hook_addr[NR_HOOKS];

/* The names by hash: patch_slot sees every JUMP_SLOT and GLOB_DAT relocation of every module
 * while the target's allocator calls wait in the trampoline; one hash and a compare at most
 * each, not a compare with every name (Debian's python3 serving HTTP: its GOTs patched in
 * 0.78 ms, 1.23 that way). Index + 1 per bucket, 0 empty; open addressing. */
#define NAME_BUCKETS 256
_Static_assert(NAME_BUCKETS >= 2 * NR_HOOKS, "a table half empty at least");
static uint16_t name_bucket[NAME_BUCKETS];
static uint64_t name_hash[NR_HOOKS];

/* The index in hook_names of the name whose gw_name_hash is H (NAME, when given, compared
 * too) among those with a hook, -1 if none: the first such, as a walk of the list in order
 * would find. */
static int hook_index_h(uint64_t h, const char *name)
{
	for (uint32_t b = (uint32_t)h & (NAME_BUCKETS - 1); name_bucket[b]; b = (b + 1) & (NAME_BUCKETS - 1)) {
		int i = name_bucket[b] - 1;

		if (name_hash[i] == h && (!name || !strcmp(name, hook_names[i])))
			return i;
	}
	return -1;
}

static int hook_index(const char *name)
{
	return hook_index_h(gw_name_hash(name), name);
}

static void names_hash(void)
{
	for (size_t i = 0; i < NR_HOOKS; i++) {
		uint32_t b;

		if (!hook_addr[i] || hook_index(hook_names[i]) >= 0)
			continue; /* no hook, or the name is there already */
		name_hash[i] = gw_name_hash(hook_names[i]);
		for (b = name_hash[i] & (NAME_BUCKETS - 1); name_bucket[b]; b = (b + 1) & (NAME_BUCKETS - 1))
			;
		name_bucket[b] = (uint16_t)(i + 1);
	}
}

/* Every entry we rewrote, in memory of our own (no malloc: we may be called from a hook). */
struct patched {
	uint64_t got, orig, hook;
};
#define MAX_PATCHED (1u << 16)
static struct patched *patched;
static uint32_t nr_patched;
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;

/* The trampoline's entries, to be read through: the value before the recorder's. */
static const struct hs_inject_slot *tramp;
static uint32_t nr_tramp;
static uint64_t stub_lo, stub_hi;
static uint32_t modules_seen;

int got_init(void)
{
	void *self;
	Dl_info di;

	if (patched)
		return 0;
	patched = mmap(NULL, MAX_PATCHED * sizeof(*patched), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (patched == MAP_FAILED) {
		patched = NULL;
		return -1;
	}
	self = dlopen(HS_LIB_SONAME, RTLD_NOW | RTLD_NOLOAD);
	if (!self && dladdr((void *)got_init, &di))
		self = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (!self)
		return -1;
	for (size_t i = 0; i < NR_HOOKS; i++)
		hook_addr[i] = (uint64_t)(uintptr_t)dlsym(self, hook_names[i]);
	names_hash();
	return 0;
}

bool got_is_hook(const void *fn)
{
	for (size_t i = 0; i < NR_HOOKS; i++)
		if (hook_addr[i] && hook_addr[i] == (uint64_t)(uintptr_t)fn)
			return true;
	return false;
}

static int read_self(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return 0;
}

struct mod_ctx {
	uint64_t relro_lo, relro_hi;
	/* A walk's: the read-only page left writable for the next entries, which are mostly on
	 * the same page (a module's allocator entries are neighbours), until page_close. Two
	 * mprotect calls an entry cost 1.2 ms for PostgreSQL's 129 while its calls waited. */
	bool batch;
	uint64_t open_page;
};

static void page_close(struct mod_ctx *m)
{
	if (m->open_page)
		mprotect((void *)(uintptr_t)m->open_page, 4096, PROT_READ);
	m->open_page = 0;
}

/* An aligned 8-byte store: a thread calling through the entry sees the old value or the new. */
static void store_got(struct mod_ctx *m, uint64_t got, uint64_t value)
{
	uint64_t page = got & ~4095ull;
	bool ro = got >= m->relro_lo && got < m->relro_hi;

	if (ro && m->batch && m->open_page != page) {
		page_close(m);
		if (mprotect((void *)(uintptr_t)page, 4096, PROT_READ | PROT_WRITE))
			return;
		m->open_page = page;
	} else if (ro && !m->batch && mprotect((void *)(uintptr_t)page, 4096, PROT_READ | PROT_WRITE)) {
		return;
	}
	__atomic_store_n((uint64_t *)(uintptr_t)got, value, __ATOMIC_RELEASE);
	if (ro && !m->batch)
		mprotect((void *)(uintptr_t)page, 4096, PROT_READ);
}

/* GOT entry GOT of module M at hook I (hook_names), its value kept to be put back: the
 * trampoline's original for one of its entries. 1 when the table of them is full. */
static int patch_entry(struct mod_ctx *m, uint64_t got, int i)
{
	uint64_t cur;

	cur = __atomic_load_n((uint64_t *)(uintptr_t)got, __ATOMIC_ACQUIRE);
	if (cur == hook_addr[i])
		return 0; /* ours already (preloaded, or patched before) */
	if (cur >= stub_lo && cur < stub_hi) {
		/* The recorder's trampoline: its entry's original value is the one to keep. */
		for (uint32_t k = 0; k < nr_tramp; k++)
			if (tramp[k].got == got)
				cur = tramp[k].orig;
		if (cur >= stub_lo && cur < stub_hi)
			return 0;
	}
	if (nr_patched >= MAX_PATCHED)
		return 1;
	patched[nr_patched++] = (struct patched){got, cur, hook_addr[i]};
	store_got(m, got, hook_addr[i]);
	return 0;
}

static int patch_slot(void *ctx, uint64_t got, const char *name)
{
	int i;

	if (got & 7 || (i = hook_index(name)) < 0)
		return 0;
	return patch_entry(ctx, got, i);
}

/* Whether LEN bytes at ADDR lie within one of the module's loaded segments. */
static bool module_holds(const struct dl_phdr_info *info, uint64_t addr, uint64_t len)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && addr >= info->dlpi_addr + ph->p_vaddr &&
		    addr + len <= info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
			return true;
	}
	return false;
}

/* The loader, the vDSO, and our own module. */
static bool skip_module(const struct dl_phdr_info *info)
{
	const char *n = info->dlpi_name ? info->dlpi_name : "";

	return strstr(n, "ld-linux") || strstr(n, "linux-vdso") || module_holds(info, (uint64_t)(uintptr_t)got_init, 1);
}

static bool module_of(const struct dl_phdr_info *info, struct gw_module *gm, struct mod_ctx *mc)
{
	gm->dyn = 0;
	gm->bias = info->dlpi_addr;
	mc->relro_lo = mc->relro_hi = 0;
	mc->batch = false;
	mc->open_page = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			gm->dyn = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_GNU_RELRO) {
			mc->relro_lo = (info->dlpi_addr + ph->p_vaddr) & ~4095ull;
			mc->relro_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~4095ull;
		}
	}
	return gm->dyn != 0;
}

/* ---- the real functions: each from the module that defines it ---- */

struct def_ctx {
	const struct dl_phdr_info *info;
	const char *name;
	uint64_t addr;
};

/* Reads within the module's loaded segments only: its tables are trusted no further. */
static int read_module(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct def_ctx *c = ctx;

	if (!module_holds(c->info, addr, len))
		return -1;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return 0;
}

static bool module_exec_holds(const struct dl_phdr_info *info, uint64_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && addr >= info->dlpi_addr + ph->p_vaddr &&
		    addr < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
			return true;
	}
	return false;
}

static int def_cb(struct dl_phdr_info *info, size_t sz, void *ctx)
{
	struct def_ctx *c = ctx;
	struct gw_module gm;
	struct mod_ctx mc;
	Elf64_Sym sym;
	uint64_t addr;

	(void)sz;
	if (skip_module(info) || !module_of(info, &gm, &mc))
		return 0;
	c->info = info;
	if (gw_find_def(&gm, read_module, c, c->name, &sym) != 1)
		return 0;
	addr = info->dlpi_addr + sym.st_value;
	if (!module_exec_holds(info, addr))
		return 0;
	/* An IFUNC's resolver picks the implementation; the loader calls it with no argument on
	 * x86-64, and so do we. */
	if (ELF64_ST_TYPE(sym.st_info) == STT_GNU_IFUNC)
		addr = ((uint64_t(*)(void))(uintptr_t)addr)();
	c->addr = addr;
	return 1;
}

/* NAME's definition that the program's own calls reach: the first module, in the loader's
 * order, that defines it (an allocator the program links or preloads wins over glibc's),
 * ourselves left out. Never through a symbol lookup, which in an executable with a canonical
 * PLT entry for NAME (non-PIE, its address taken) gives that entry: a jump through the
 * executable's GOT entry, which is ours once the hooks are in. */
void *got_find_definition(const char *name)
{
	struct def_ctx c = {.name = name};

	dl_iterate_phdr(def_cb, &c);
	return (void *)(uintptr_t)c.addr;
}

static int patch_cb(struct dl_phdr_info *info, size_t sz, void *ctx)
{
	struct gw_module gm;
	struct mod_ctx mc;

	(void)sz;
	(void)ctx;
	if (skip_module(info) || !module_of(info, &gm, &mc))
		return 0;
	modules_seen++;
	mc.batch = true;
	gw_walk(&gm, read_self, NULL, patch_slot, &mc);
	page_close(&mc);
	return 0;
}

/* The trampoline's entries and the stub's range, under patch_lock: how many entries were
 * patched before. */
static uint32_t take_trampoline(const struct hs_inject_slot *t, uint32_t nt, uint64_t lo, uint64_t hi)
{
	tramp = t;
	nr_tramp = nt;
	stub_lo = lo;
	stub_hi = hi;
	return nr_patched;
}

uint32_t got_patch_all(const struct hs_inject_slot *t, uint32_t nt, uint64_t lo, uint64_t hi, uint32_t *modules)
{
	uint32_t before;

	pthread_mutex_lock(&patch_lock);
	before = take_trampoline(t, nt, lo, hi);
	modules_seen = 0;
	if (patched)
		dl_iterate_phdr(patch_cb, NULL);
	if (modules)
		*modules = modules_seen;
	pthread_mutex_unlock(&patch_lock);
	return nr_patched - before;
}

/* The modules got_patch_slots walks whole, the trampoline taking none of their entries: the
 * recorder leaves glibc's out (inject_look.c), whose own allocations (strdup, fopen...) go
 * through its GOT. */
static bool walked_first(const struct dl_phdr_info *info)
{
	const char *n = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	n = n ? n + 1 : info->dlpi_name ? info->dlpi_name : "";
	return !strncmp(n, "libc.so", 7) || !strncmp(n, "libc-", 5);
}

struct slots_q {
	const uint8_t *kind;
	const uint64_t *hash;
};

static int slots_cb(struct dl_phdr_info *info, size_t sz, void *ctx)
{
	const struct slots_q *q = ctx;
	struct gw_module gm;
	struct mod_ctx mc;

	(void)sz;
	if (skip_module(info) || !module_of(info, &gm, &mc))
		return 0;
	mc.batch = true;
	if (walked_first(info)) {
		gw_walk(&gm, read_self, NULL, patch_slot, &mc);
		page_close(&mc);
		return 0;
	}
	for (uint32_t k = 0; k < nr_tramp; k++) {
		uint64_t got = tramp[k].got;
		int i;

		if (q->kind[k] != HS_SLOT_ALLOC || !q->hash[k] || (got & 7) || !module_holds(info, got, 8) ||
		    (i = hook_index_h(q->hash[k], NULL)) < 0)
			continue;
		if (patch_entry(&mc, got, i)) {
			page_close(&mc);
			return 1;
		}
	}
	page_close(&mc);
	return 0;
}

/* The trampoline's allocator entries, each at the hook its imported name's hash (from the
 * recorder) names, and glibc's entries, which the trampoline does not take: every entry
 * whose calls wait meanwhile or go by uncounted, without walking the relocations of every
 * module (0.6 to 1.0 ms in Debian's python3 or node, while the calls wait). got_patch_all
 * then does the rest with nothing waiting (other hooks' entries, allocator entries past the
 * trampoline's room, modules loaded since the recorder looked). Returns how many entries it
 * rewrote; 0 if the recorder gave no hash (an older one). */
uint32_t got_patch_slots(const struct hs_inject_slot *t, const uint8_t *kind, const uint64_t *hash, uint32_t nt,
			 uint64_t lo, uint64_t hi)
{
	struct slots_q q = {kind, hash};
	uint32_t before, given = 0;

	for (uint32_t k = 0; k < nt; k++)
		given += kind[k] == HS_SLOT_ALLOC && hash[k];
	pthread_mutex_lock(&patch_lock);
	before = take_trampoline(t, nt, lo, hi);
	if (patched && given)
		dl_iterate_phdr(slots_cb, &q);
	pthread_mutex_unlock(&patch_lock);
	return nr_patched - before;
}

/* After a dlopen: the new modules' entries too. */
void got_patch_new(void)
{
	pthread_mutex_lock(&patch_lock);
	if (patched && nr_patched)
		dl_iterate_phdr(patch_cb, NULL);
	pthread_mutex_unlock(&patch_lock);
}

static int restore_cb(struct dl_phdr_info *info, size_t sz, void *ctx)
{
	struct gw_module gm;
	struct mod_ctx mc;

	(void)sz;
	(void)ctx;
	if (skip_module(info) || !module_of(info, &gm, &mc))
		return 0;
	for (uint32_t i = 0; i < nr_patched; i++) {
		struct patched *p = &patched[i];

		if (!p->got || !module_holds(info, p->got, 8))
			continue;
		/* Only an entry that still holds our hook: anything else was rewritten since. */
		if (__atomic_load_n((uint64_t *)(uintptr_t)p->got, __ATOMIC_ACQUIRE) == p->hook)
			store_got(&mc, p->got, p->orig);
		p->got = 0;
	}
	return 0;
}

/* Every entry back as it was; those of modules unloaded since are forgotten. */
void got_restore_all(void)
{
	pthread_mutex_lock(&patch_lock);
	if (patched) {
		dl_iterate_phdr(restore_cb, NULL);
		nr_patched = 0;
	}
	pthread_mutex_unlock(&patch_lock);
}
