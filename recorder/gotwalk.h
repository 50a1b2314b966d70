/* SPDX-License-Identifier: MIT */
/* The GOT entries of a loaded module that name a function, found from its dynamic section
 * in memory: the recorder reads another process's memory with it (the trampoline's entries),
 * libheapsnap.so its own (the hooks'). Every count is bounded and every name read within
 * its table, since the recorder reads memory the target controls. */
#ifndef HEAPSNAP_GOTWALK_H
#define HEAPSNAP_GOTWALK_H
#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GW_MAX_DYN 512
#define GW_MAX_RELOCS (1u << 20)
#define GW_NAME_MAX 64

typedef int (*gw_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
/* Called with a GOT entry's address and its symbol's name; non-zero ends the walk. */
typedef int (*gw_slot_fn)(void *ctx, uint64_t got, const char *name);

struct gw_module {
	uint64_t bias; /* load address minus link-time address */
	uint64_t dyn;  /* the dynamic section, in memory */
};

/* The loader relocates most d_ptr values in place; a value below the bias was not. */
static inline uint64_t gw_ptr(const struct gw_module *m, uint64_t v)
{
	return v < m->bias ? v + m->bias : v;
}

static inline int gw_walk_table(const struct gw_module *m, gw_read_fn rd, void *rctx, uint64_t rela, uint64_t size,
				uint64_t symtab, uint64_t strtab, uint64_t strsz, gw_slot_fn cb, void *cctx)
{
	uint64_t n = size / sizeof(Elf64_Rela);

	if (n > GW_MAX_RELOCS)
		n = GW_MAX_RELOCS;
	for (uint64_t i = 0; i < n;) {
		Elf64_Rela r[64];
		uint64_t k = n - i < 64 ? n - i : 64;

		if (rd(rctx, rela + i * sizeof(Elf64_Rela), r, k * sizeof(Elf64_Rela)))
			return -1;
		for (uint64_t j = 0; j < k; j++) {
			uint32_t type = ELF64_R_TYPE(r[j].r_info), si = ELF64_R_SYM(r[j].r_info);
			char name[GW_NAME_MAX];
			Elf64_Sym sym;
			int ret;

			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !si)
				continue;
			if (rd(rctx, symtab + (uint64_t)si * sizeof(sym), &sym, sizeof(sym)) || sym.st_name >= strsz)
				continue;
			memset(name, 0, sizeof(name));
			if (rd(rctx, strtab + sym.st_name,
			       name, strsz - sym.st_name < sizeof(name) - 1 ? strsz - sym.st_name : sizeof(name) - 1))
				continue;
			ret = cb(cctx, m->bias + r[j].r_offset, name);
			if (ret)
				return ret;
		}
		i += k;
	}
	return 0;
}

/* Calls CB for each JUMP_SLOT and GLOB_DAT relocation of module M. */
static inline int gw_walk(const struct gw_module *m, gw_read_fn rd, void *rctx, gw_slot_fn cb, void *cctx)
{
	uint64_t jmprel = 0, pltrelsz = 0, rela = 0, relasz = 0, symtab = 0, strtab = 0, strsz = 0, pltrel = DT_RELA;
	int ret;

	for (int i = 0; i < GW_MAX_DYN; i++) {
		Elf64_Dyn d;

		if (rd(rctx, m->dyn + (uint64_t)i * sizeof(d), &d, sizeof(d)))
			return -1;
		if (d.d_tag == DT_NULL)
			break;
		switch (d.d_tag) {
		case DT_JMPREL: jmprel = d.d_un.d_ptr; break;
		case DT_PLTRELSZ: pltrelsz = d.d_un.d_val; break;
		case DT_PLTREL: pltrel = d.d_un.d_val; break;
		case DT_RELA: rela = d.d_un.d_ptr; break;
		case DT_RELASZ: relasz = d.d_un.d_val; break;
		case DT_SYMTAB: symtab = d.d_un.d_ptr; break;
		case DT_STRTAB: strtab = d.d_un.d_ptr; break;
		case DT_STRSZ: strsz = d.d_un.d_val; break;
		}
	}
	if (!symtab || !strtab || !strsz)
		return 0;
	symtab = gw_ptr(m, symtab);
	strtab = gw_ptr(m, strtab);
	if (jmprel && pltrel == DT_RELA) {
		ret = gw_walk_table(m, rd, rctx, gw_ptr(m, jmprel), pltrelsz, symtab, strtab, strsz, cb, cctx);
		if (ret)
			return ret;
	}
	if (rela)
		return gw_walk_table(m, rd, rctx, gw_ptr(m, rela), relasz, symtab, strtab, strsz, cb, cctx);
	return 0;
}
#endif
