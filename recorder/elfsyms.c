// SPDX-License-Identifier: MIT
/* Reading ELF files on disk: a library's allocator functions by the one table
 * (common/allocators.def), for the BPF way's probes and the injector's look; a symbol for
 * --probe; whether a command is dynamic (choosing the way in); an executable's text offset
 * (process tracking). On the layer below the ways in, since all of them read it. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsyms.h"
#include "record.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* Rust allocator shims: legacy `__rust_alloc`, or v0-mangled `_R...12___rust_alloc`: the name
 * preceded by its length, and by a `_` when it starts with one or a digit. */
static bool rust_v0(const char *name, const char *shim)
{
	char suffix[64];
	bool sep = shim[0] == '_' || (shim[0] >= '0' && shim[0] <= '9');
	int n = snprintf(suffix, sizeof(suffix), "%zu%s%s", strlen(shim), sep ? "_" : "", shim);

	return n > 0 && (size_t)n < sizeof(suffix) && ends_with(name, suffix);
}

enum alloc_nest { NEST_LEAF, NEST_CALLS, NEST_FREE, NEST_WRAPS };
enum alloc_hook { HOOK_OWN, HOOK_ALLOC, HOOK_FREE, HOOK_NEW, HOOK_DELETE, HOOK_BPF, HOOK_RUST };

/* The allocator functions (common/allocators.def): what the probes need of each. */
static const struct {
	const char *name;
	enum hs_prog prog;
	uint32_t kind;
	enum alloc_nest nest;
	bool rust;
} alloc_table[] = {
#define HS_ALLOC(sym, kind, args, nest, hook, ret, params) \
	{#sym, PROG_##args, HS_KIND_##kind, NEST_##nest, HOOK_##hook == HOOK_RUST},
#include "allocators.def"
#undef HS_ALLOC
};

static bool from_table(size_t i, bool in_libc, enum hs_prog *prog, uint32_t *kind, bool *wrapper, bool *leaf)
{
	*prog = alloc_table[i].prog;
	*kind = alloc_table[i].kind;
	/* Outside glibc a free may call another probed free (free -> mi_free). */
	*wrapper = alloc_table[i].nest == NEST_WRAPS || (alloc_table[i].nest == NEST_FREE && !in_libc);
	*leaf = in_libc && alloc_table[i].nest == NEST_LEAF;
	return true;
}

#define NR_ALLOC_TABLE (sizeof(alloc_table) / sizeof(alloc_table[0]))

/* The table's lines by name, for a binary search: a library's every symbol is looked up. */
static uint8_t by_name[NR_ALLOC_TABLE];
static pthread_once_t by_name_once = PTHREAD_ONCE_INIT;

static int by_name_cmp(const void *a, const void *b)
{
	return strcmp(alloc_table[*(const uint8_t *)a].name, alloc_table[*(const uint8_t *)b].name);
}

static void by_name_sort(void)
{
	_Static_assert(NR_ALLOC_TABLE <= 256, "the allocator table's index is a byte");
	for (size_t i = 0; i < NR_ALLOC_TABLE; i++)
		by_name[i] = (uint8_t)i;
	qsort(by_name, NR_ALLOC_TABLE, sizeof(by_name[0]), by_name_cmp);
}

static int name_cmp(const void *key, const void *elem)
{
	return strcmp(key, alloc_table[*(const uint8_t *)elem].name);
}

bool alloc_func__classify(const char *name, bool in_libc, enum hs_prog *prog, uint32_t *kind, bool *wrapper,
			  bool *leaf)
{
	const uint8_t *hit;

	pthread_once(&by_name_once, by_name_sort);
	hit = bsearch(name, by_name, NR_ALLOC_TABLE, sizeof(by_name[0]), name_cmp);
	if (hit)
		return from_table(*hit, in_libc, prog, kind, wrapper, leaf);
	for (size_t i = 0; !strncmp(name, "_R", 2) && i < NR_ALLOC_TABLE; i++)
		if (alloc_table[i].rust && rust_v0(name, alloc_table[i].name))
			return from_table(i, in_libc, prog, kind, wrapper, leaf);
	/* A C++ operator new or delete the table does not list (a runtime's newer variant): every
	 * new takes the size first (m = unsigned long), every delete the pointer. */
	*leaf = false;
	if (!strncmp(name, "_Znwm", 5) || !strncmp(name, "_Znam", 5)) {
		*prog = PROG_SIZE1;
		*kind = name[3] == 'w' ? HS_KIND_NEW : HS_KIND_NEW_ARRAY;
		*wrapper = false;
		*leaf = in_libc;
		return true;
	}
	if (!strncmp(name, "_ZdlPv", 6) || !strncmp(name, "_ZdaPv", 6)) {
		*prog = PROG_FREE;
		*kind = name[3] == 'l' ? HS_KIND_NEW : HS_KIND_NEW_ARRAY;
		*wrapper = true;
		return true;
	}
	return false;
}

bool alloc_func__parse_kind(const char *s, enum hs_prog *prog, uint32_t *kind)
{
	static const struct {
		const char *name;
		enum hs_prog prog;
		uint32_t kind;
	} kinds[] = {
		{"malloc", PROG_SIZE1, HS_KIND_CUSTOM},     {"calloc", PROG_CALLOC, HS_KIND_CUSTOM},
		{"realloc", PROG_REALLOC, HS_KIND_CUSTOM},  {"free", PROG_FREE, HS_KIND_CUSTOM},
		{"memalign", PROG_SIZE2, HS_KIND_CUSTOM},   {"posix_memalign", PROG_POSIX_MEMALIGN, HS_KIND_CUSTOM},
		{"new", PROG_SIZE1, HS_KIND_NEW},
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!strcmp(s, kinds[i].name)) {
			*prog = kinds[i].prog;
			*kind = kinds[i].kind;
			return true;
		}
	}
	return false;
}

/* Length of an instruction the kernel's uprobe code emulates instead of single-stepping
 * (push reg, jmp, jcc, call, nop), or 0. */
static size_t emulated_len(const uint8_t *c, size_t len)
{
	if (len >= 1 && ((c[0] >= 0x50 && c[0] <= 0x57) || c[0] == 0x90))
		return 1;
	if (len >= 2 && c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57)
		return 2;
	if (len >= 2 && (c[0] == 0xeb || (c[0] >= 0x70 && c[0] <= 0x7f)))
		return 2;
	if (len >= 5 && (c[0] == 0xe9 || c[0] == 0xe8))
		return 5;
	if (len >= 6 && c[0] == 0x0f && c[1] >= 0x80 && c[1] <= 0x8f)
		return 6;
	return 0;
}

/* Length of an instruction that changes neither rsp, the argument registers, memory nor
 * control flow, so a probe may sit after it; or 0. */
static size_t harmless_len(const uint8_t *c, size_t len)
{
	if (len >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
		return 4; /* endbr64 */
	if (len >= 3 && c[0] == 0x48 && c[1] == 0x85 && (c[2] & 0xc0) == 0xc0)
		return 3; /* test r64, r64 */
	if (len >= 2 && c[0] == 0x85 && (c[1] & 0xc0) == 0xc0)
		return 2; /* test r32, r32 */
	if (len >= 7 && c[0] == 0x80 && c[1] == 0x3d)
		return 7; /* cmpb $imm8, disp32(%rip) */
	if (len >= 5 && c[0] == 0xb8)
		return 5; /* mov $imm32, %eax */
	return 0;
}

uint64_t probe_placement(const uint8_t *c, size_t len, bool skip_null_check)
{
	size_t off = 0, n;

	if (len >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
		off = 4;
	/* free-like: `test %rdi,%rdi; je` returns at once for NULL; past it is the real work. */
	if (skip_null_check && off + 3 < len && c[off] == 0x48 && c[off + 1] == 0x85 && c[off + 2] == 0xff) {
		size_t j = off + 3;

		if (j + 2 <= len && c[j] == 0x74)
			j += 2;
		else if (j + 6 <= len && c[j] == 0x0f && c[j + 1] == 0x84)
			j += 6;
		else
			j = 0;
		if (j && emulated_len(c + j, len - j) && c[j] != 0xeb && c[j] != 0xe9 && c[j] != 0xe8)
			return j;
	}
	for (size_t k = off; k < len;) {
		if (emulated_len(c + k, len - k))
			return k;
		n = harmless_len(c + k, len - k);
		if (!n)
			break;
		k += n;
	}
	return off; /* no emulated instruction in reach: at least step over endbr64 */
}

/* Converts a symbol's virtual address to a file offset through its section. */
static bool vaddr_to_off(Elf *elf, GElf_Sym *sym, uint64_t *off)
{
	Elf_Scn *scn = elf_getscn(elf, sym->st_shndx);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
		return false;
	if (sym->st_value < sh.sh_addr || sym->st_value >= sh.sh_addr + sh.sh_size)
		return false;
	*off = sym->st_value - sh.sh_addr + sh.sh_offset;
	return true;
}

typedef int (*sym_cb)(Elf *elf, const char *name, GElf_Sym *sym, void *ctx);

/* CB for each function PATH defines, in .symtab and .dynsym, or in .dynsym alone (what it
 * exports) with DYNSYM_ONLY. */
static int for_each_func_in(const char *path, bool dynsym_only, sym_cb cb, void *ctx)
{
	Elf_Scn *scn = NULL;
	int fd, ret = 0;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOEXEC;
	}
	while (!ret && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && (dynsym_only || sh.sh_type != SHT_SYMTAB)))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !sh.sh_entsize)
			continue;
		for (size_t i = 0; !ret && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (name && *name)
				ret = cb(elf, name, &sym, ctx);
		}
	}
	elf_end(elf);
	close(fd);
	return ret;
}

static int for_each_func(const char *path, sym_cb cb, void *ctx)
{
	return for_each_func_in(path, false, cb, ctx);
}

struct scan_ctx {
	struct alloc_func_list *out;
	bool in_libc, place;
	int fd;
	const char *path;
};

static int scan_cb(Elf *elf, const char *name, GElf_Sym *sym, void *ctx)
{
	struct scan_ctx *s = ctx;
	struct alloc_func *f, *v;
	enum hs_prog prog;
	uint32_t kind;
	uint64_t off;
	bool wrapper, leaf;

	if (!alloc_func__classify(name, s->in_libc, &prog, &kind, &wrapper, &leaf) || !vaddr_to_off(elf, sym, &off))
		return 0;
	f = NULL;
	for (int i = 0; i < s->out->nr && !f; i++) {
		if (s->out->v[i].offset != off)
			continue;
		/* An alias (.symtab and .dynsym, or __libc_malloc): probed once, under its public
		 * name when it has one (malloc or mi_malloc rather than __libc_malloc). */
		if (strncmp(s->out->v[i].name, "__", 2) || !strncmp(name, "__", 2))
			return 0;
		f = &s->out->v[i];
		free(f->name);
	}
	if (!f) {
		v = realloc(s->out->v, sizeof(*v) * (size_t)(s->out->nr + 1));
		if (!v)
			return -ENOMEM;
		s->out->v = v;
		f = &v[s->out->nr++];
	}
	*f = (struct alloc_func){.name = strdup(name), .offset = off, .probe_offset = off, .prog = prog,
				 .kind = kind, .wrapper = wrapper, .leaf = leaf};
	if (s->place) {
		uint8_t code[32];

		if (pread(s->fd, code, sizeof(code), (off_t)off) == (ssize_t)sizeof(code)) {
			f->probe_offset = off + probe_placement(code, sizeof(code), prog == PROG_FREE && !wrapper);
			if (hs_verbose)
				fprintf(stderr, "heapsnap-record: %s:%s probed at +%llu%s\n", s->path, name,
					(unsigned long long)(f->probe_offset - off),
					f->probe_offset != off ? " (past instructions that leave sp and the arguments alone)" : "");
		}
	}
	return f->name ? 0 : -ENOMEM;
}

int alloc_funcs__scan(const char *path, bool in_libc, bool place_probes, struct alloc_func_list *out)
{
	struct scan_ctx s = {.out = out, .in_libc = in_libc, .place = place_probes, .path = path};
	int ret;

	s.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s.fd < 0)
		return -errno;
	ret = for_each_func(path, scan_cb, &s);
	close(s.fd);
	return ret;
}

struct find_ctx {
	const char *const *symbols;
	uint64_t *offs;
	int n, found;
};

static int find_cb(Elf *elf, const char *name, GElf_Sym *sym, void *ctx)
{
	struct find_ctx *f = ctx;

	for (int i = 0; i < f->n; i++) {
		if (f->offs[i] || strcmp(name, f->symbols[i]) || !vaddr_to_off(elf, sym, &f->offs[i]))
			continue;
		f->found++;
		break;
	}
	return f->found == f->n; /* all found: the walk ends */
}

int elf_find_symbols(const char *path, const char *const *symbols, int n, uint64_t *offs)
{
	struct find_ctx f = {.symbols = symbols, .offs = offs, .n = n};
	int ret;

	memset(offs, 0, (size_t)n * sizeof(*offs));
	ret = for_each_func(path, find_cb, &f);
	return ret < 0 ? ret : f.found;
}

int elf_find_symbol(const char *path, const char *symbol, uint64_t *off)
{
	int ret = elf_find_symbols(path, &symbol, 1, off);

	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

bool elf_is_dynamic(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool interp = false;
	size_t phnum;
	Elf *elf;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && !elf_getphdrnum(elf, &phnum)) {
		for (size_t i = 0; i < phnum && !interp; i++) {
			GElf_Phdr ph;

			interp = gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return interp;
}

int elf_exec_offset(const char *path, uint64_t *off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -ENOENT;
	size_t phnum;
	Elf *elf;

	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && !elf_getphdrnum(elf, &phnum)) {
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
				*off = ph.p_offset & ~0xfffull;
				ret = 0;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

void alloc_funcs__free(struct alloc_func_list *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->nr; i++)
		free(l->v[i].name);
	free(l->v);
	l->v = NULL;
	l->nr = 0;
}

/* The C allocator's entry points an executable may define for itself, ahead of any library. */
static const char *const c_allocator[] = {"malloc", "free", "calloc", "realloc"};

static int exports_cb(Elf *elf, const char *name, GElf_Sym *sym, void *ctx)
{
	size_t *best = ctx;

	if (GELF_ST_BIND(sym->st_info) == STB_LOCAL || GELF_ST_VISIBILITY(sym->st_other) != STV_DEFAULT)
		return 0;
	/* The first of the list found, whatever the table's order: malloc when it is there. */
	for (size_t i = 0; i < *best; i++) {
		if (!strcmp(name, c_allocator[i])) {
			*best = i;
			return i == 0;
		}
	}
	return 0;
}

int elf_exported_allocator(const char *path, const char **which)
{
	size_t best = sizeof(c_allocator) / sizeof(c_allocator[0]);
	int ret = for_each_func_in(path, true, exports_cb, &best);

	*which = best < sizeof(c_allocator) / sizeof(c_allocator[0]) ? c_allocator[best] : NULL;
	return ret < 0 ? ret : *which != NULL;
}
