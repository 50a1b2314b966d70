// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
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

/* Rust allocator shims: legacy `__rust_alloc`, or v0-mangled `_R...12___rust_alloc`. */
static bool rust_shim(const char *name, const char *shim, const char *v0_suffix)
{
	return !strcmp(name, shim) || (!strncmp(name, "_R", 2) && ends_with(name, v0_suffix));
}

bool alloc_func__classify(const char *name, bool in_libc, enum hs_prog *prog, uint32_t *kind, bool *wrapper)
{
	static const struct {
		const char *name;
		enum hs_prog prog;
		uint32_t kind;
	} plain[] = {
		{"malloc", PROG_SIZE1, HS_KIND_MALLOC},
		{"calloc", PROG_CALLOC, HS_KIND_CALLOC},
		{"realloc", PROG_REALLOC, HS_KIND_REALLOC},
		{"reallocarray", PROG_REALLOCARRAY, HS_KIND_REALLOC},
		{"memalign", PROG_SIZE2, HS_KIND_MEMALIGN},
		{"aligned_alloc", PROG_SIZE2, HS_KIND_MEMALIGN},
		{"posix_memalign", PROG_POSIX_MEMALIGN, HS_KIND_MEMALIGN},
		{"valloc", PROG_SIZE1, HS_KIND_MEMALIGN},
		{"pvalloc", PROG_SIZE1, HS_KIND_MEMALIGN},
		{"free", PROG_FREE, HS_KIND_MALLOC},
		{"cfree", PROG_FREE, HS_KIND_MALLOC},
		/* jemalloc, tcmalloc and mimalloc entry points beyond the standard names. */
		{"mallocx", PROG_SIZE1, HS_KIND_MALLOC},
		{"rallocx", PROG_REALLOC, HS_KIND_REALLOC},
		{"dallocx", PROG_FREE, HS_KIND_MALLOC},
		{"sdallocx", PROG_FREE, HS_KIND_MALLOC},
		{"tc_malloc", PROG_SIZE1, HS_KIND_MALLOC},
		{"tc_calloc", PROG_CALLOC, HS_KIND_CALLOC},
		{"tc_realloc", PROG_REALLOC, HS_KIND_REALLOC},
		{"tc_free", PROG_FREE, HS_KIND_MALLOC},
		{"tc_memalign", PROG_SIZE2, HS_KIND_MEMALIGN},
		{"mi_malloc", PROG_SIZE1, HS_KIND_MALLOC},
		{"mi_zalloc", PROG_SIZE1, HS_KIND_CALLOC},
		{"mi_calloc", PROG_CALLOC, HS_KIND_CALLOC},
		{"mi_realloc", PROG_REALLOC, HS_KIND_REALLOC},
		{"mi_free", PROG_FREE, HS_KIND_MALLOC},
	};

	*wrapper = false;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		if (!strcmp(name, plain[i].name)) {
			*prog = plain[i].prog;
			*kind = plain[i].kind;
			/* Outside glibc a free may call another probed free (free -> mi_free). */
			*wrapper = plain[i].prog == PROG_FREE && !in_libc;
			return true;
		}
	}
	/* operator new / new[]: every variant takes the size first (m = unsigned long). */
	if (!strncmp(name, "_Znwm", 5) || !strncmp(name, "_Znam", 5)) {
		*prog = PROG_SIZE1;
		*kind = name[3] == 'w' ? HS_KIND_NEW : HS_KIND_NEW_ARRAY;
		return true;
	}
	if (!strncmp(name, "_ZdlPv", 6) || !strncmp(name, "_ZdaPv", 6)) {
		*prog = PROG_FREE;
		*kind = name[3] == 'l' ? HS_KIND_NEW : HS_KIND_NEW_ARRAY;
		*wrapper = true;
		return true;
	}
	*kind = HS_KIND_RUST;
	if (rust_shim(name, "__rust_alloc", "12___rust_alloc") ||
	    rust_shim(name, "__rust_alloc_zeroed", "19___rust_alloc_zeroed")) {
		*prog = PROG_SIZE1;
		return true;
	}
	if (rust_shim(name, "__rust_realloc", "14___rust_realloc")) {
		*prog = PROG_RUST_REALLOC;
		return true;
	}
	if (rust_shim(name, "__rust_dealloc", "14___rust_dealloc")) {
		*prog = PROG_FREE;
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

uint64_t probe_placement(const uint8_t *c, size_t len)
{
	size_t n;

	/* test %rdi,%rdi */
	if (len < 12 || c[0] != 0x48 || c[1] != 0x85 || c[2] != 0xff)
		return 0;
	if (c[3] == 0x74)
		n = 5; /* je rel8 */
	else if (c[3] == 0x0f && c[4] == 0x84)
		n = 9; /* je rel32 */
	else
		return 0;
	/* The kernel emulates push without a single-step; anything else stays at entry. */
	if ((c[n] >= 0x50 && c[n] <= 0x57) || (c[n] == 0x41 && c[n + 1] >= 0x50 && c[n + 1] <= 0x57))
		return n;
	return 0;
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

static int for_each_func(const char *path, sym_cb cb, void *ctx)
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

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
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
	bool wrapper;

	if (!alloc_func__classify(name, s->in_libc, &prog, &kind, &wrapper) || !vaddr_to_off(elf, sym, &off))
		return 0;
	for (int i = 0; i < s->out->nr; i++)
		if (s->out->v[i].offset == off)
			return 0; /* an alias (.symtab and .dynsym, or __libc_malloc) */
	v = realloc(s->out->v, sizeof(*v) * (size_t)(s->out->nr + 1));
	if (!v)
		return -ENOMEM;
	s->out->v = v;
	f = &v[s->out->nr++];
	*f = (struct alloc_func){.name = strdup(name), .offset = off, .probe_offset = off, .prog = prog,
				 .kind = kind, .wrapper = wrapper};
	if (s->place && prog == PROG_FREE && !wrapper) {
		uint8_t code[16];

		if (pread(s->fd, code, sizeof(code), (off_t)off) == (ssize_t)sizeof(code)) {
			f->probe_offset = off + probe_placement(code, sizeof(code));
			if (hs_verbose)
				fprintf(stderr, "heapsnap-record: %s:%s probed at +%llu%s\n", s->path, name,
					(unsigned long long)(f->probe_offset - off),
					f->probe_offset != off ? " (past the NULL check; the kernel emulates the push)" : "");
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
	const char *symbol;
	uint64_t off;
	bool found;
};

static int find_cb(Elf *elf, const char *name, GElf_Sym *sym, void *ctx)
{
	struct find_ctx *f = ctx;

	if (strcmp(name, f->symbol) || !vaddr_to_off(elf, sym, &f->off))
		return 0;
	f->found = true;
	return 1;
}

int elf_find_symbol(const char *path, const char *symbol, uint64_t *off)
{
	struct find_ctx f = {.symbol = symbol};
	int ret = for_each_func(path, find_cb, &f);

	if (ret < 0)
		return ret;
	if (!f.found)
		return -ENOENT;
	*off = f.off;
	return 0;
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
