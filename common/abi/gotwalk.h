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

/* An imported name's hash (FNV-1a, 64 bits): the recorder hands the library one for each
 * allocator entry the trampoline takes (inject_abi.h, slot_hash), which it then hooks without
 * a walk; the library's table of hooked names is looked up by it too (got_hooks.c). */
static inline uint64_t gw_name_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

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

/* ---- what the dynamic section says, read once for either use below ---- */

#define GW_MAX_BUCKETS (1u << 24)
#define GW_MAX_CHAIN (1u << 16) /* symbols looked at for one name in one module */

/* Addresses in memory (relocated by gw_ptr), sizes as they are. */
struct gw_dynamic {
	uint64_t jmprel, pltrelsz, pltrel, rela, relasz;
	uint64_t symtab, strtab, strsz, gnu_hash, hash, versym;
};

static inline int gw_dynamic_of(const struct gw_module *m, gw_read_fn rd, void *rctx, struct gw_dynamic *t)
{
	memset(t, 0, sizeof(*t));
	t->pltrel = DT_RELA;
	for (int i = 0; i < GW_MAX_DYN; i++) {
		Elf64_Dyn d;

		if (rd(rctx, m->dyn + (uint64_t)i * sizeof(d), &d, sizeof(d)))
			return -1;
		if (d.d_tag == DT_NULL)
			break;
		switch (d.d_tag) {
		case DT_JMPREL: t->jmprel = gw_ptr(m, d.d_un.d_ptr); break;
		case DT_PLTRELSZ: t->pltrelsz = d.d_un.d_val; break;
		case DT_PLTREL: t->pltrel = d.d_un.d_val; break;
		case DT_RELA: t->rela = gw_ptr(m, d.d_un.d_ptr); break;
		case DT_RELASZ: t->relasz = d.d_un.d_val; break;
		case DT_SYMTAB: t->symtab = gw_ptr(m, d.d_un.d_ptr); break;
		case DT_STRTAB: t->strtab = gw_ptr(m, d.d_un.d_ptr); break;
		case DT_STRSZ: t->strsz = d.d_un.d_val; break;
		case DT_GNU_HASH: t->gnu_hash = gw_ptr(m, d.d_un.d_ptr); break;
		case DT_HASH: t->hash = gw_ptr(m, d.d_un.d_ptr); break;
		case DT_VERSYM: t->versym = gw_ptr(m, d.d_un.d_ptr); break;
		}
	}
	return 0;
}

/* Calls CB for each JUMP_SLOT and GLOB_DAT relocation of module M. */
static inline int gw_walk(const struct gw_module *m, gw_read_fn rd, void *rctx, gw_slot_fn cb, void *cctx)
{
	struct gw_dynamic t;
	int ret;

	if (gw_dynamic_of(m, rd, rctx, &t))
		return -1;
	if (!t.symtab || !t.strtab || !t.strsz)
		return 0;
	if (t.jmprel && t.pltrel == DT_RELA) {
		ret = gw_walk_table(m, rd, rctx, t.jmprel, t.pltrelsz, t.symtab, t.strtab, t.strsz, cb, cctx);
		if (ret)
			return ret;
	}
	if (t.rela)
		return gw_walk_table(m, rd, rctx, t.rela, t.relasz, t.symtab, t.strtab, t.strsz, cb, cctx);
	return 0;
}

/* ---- a module's own definition of a symbol, through its hash table ---- */

/* Whether symbol SI is NAME as the loader would bind it: defined here (an executable's
 * canonical PLT entry is undefined, with a value), a function, global or weak, and of the
 * default version (a hidden one is only for binaries linked against it by name). */
static inline int gw_sym_is(const struct gw_dynamic *t, gw_read_fn rd, void *rctx, uint32_t si, const char *name,
			    size_t len, Elf64_Sym *out)
{
	char buf[GW_NAME_MAX];
	uint16_t ver;
	Elf64_Sym s;

	if (rd(rctx, t->symtab + (uint64_t)si * sizeof(s), &s, sizeof(s)) || s.st_name >= t->strsz ||
	    t->strsz - s.st_name < len + 1 || rd(rctx, t->strtab + s.st_name, buf, len + 1) || memcmp(buf, name, len + 1))
		return 0;
	if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || !s.st_value)
		return 0;
	if (ELF64_ST_TYPE(s.st_info) != STT_FUNC && ELF64_ST_TYPE(s.st_info) != STT_GNU_IFUNC)
		return 0;
	if (ELF64_ST_BIND(s.st_info) != STB_GLOBAL && ELF64_ST_BIND(s.st_info) != STB_WEAK)
		return 0;
	if (t->versym && (rd(rctx, t->versym + (uint64_t)si * 2, &ver, 2) || (ver & 0x8000) || ver == 0))
		return 0;
	*out = s;
	return 1;
}

static inline uint32_t gw_gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

static inline uint32_t gw_sysv_hash(const char *s)
{
	uint32_t h = 0, g;

	for (; *s; s++) {
		h = (h << 4) + (uint8_t)*s;
		g = h & 0xf0000000;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/* Module M's own definition of NAME (see gw_sym_is) in *OUT: 1 found, 0 none, -1 unreadable.
 * Only its hash table's chain for NAME is read, each step bounded. */
static inline int gw_find_def(const struct gw_module *m, gw_read_fn rd, void *rctx, const char *name, Elf64_Sym *out)
{
	size_t len = strlen(name);
	struct gw_dynamic t;

	if (len >= GW_NAME_MAX || gw_dynamic_of(m, rd, rctx, &t) || !t.symtab || !t.strtab || !t.strsz ||
	    !(t.gnu_hash || t.hash))
		return -1;
	if (t.gnu_hash) {
		uint32_t hdr[4], h = gw_gnu_hash(name), i, c;

		if (rd(rctx, t.gnu_hash, hdr, sizeof(hdr)) || !hdr[0] || hdr[0] > GW_MAX_BUCKETS || hdr[2] > GW_MAX_BUCKETS)
			return -1;
		uint64_t buckets = t.gnu_hash + sizeof(hdr) + (uint64_t)hdr[2] * 8, chain = buckets + (uint64_t)hdr[0] * 4;

		if (rd(rctx, buckets + (uint64_t)(h % hdr[0]) * 4, &i, 4))
			return -1;
		if (!i || i < hdr[1])
			return 0;
		for (uint32_t n = 0; n < GW_MAX_CHAIN; n++, i++) {
			if (rd(rctx, chain + (uint64_t)(i - hdr[1]) * 4, &c, 4))
				return -1;
			if ((c | 1) == (h | 1) && gw_sym_is(&t, rd, rctx, i, name, len, out))
				return 1;
			if (c & 1)
				return 0;
		}
		return 0;
	}
	uint32_t hdr[2], i;

	if (rd(rctx, t.hash, hdr, sizeof(hdr)) || !hdr[0] || hdr[0] > GW_MAX_BUCKETS || hdr[1] > GW_MAX_BUCKETS)
		return -1;
	if (rd(rctx, t.hash + 8 + (uint64_t)(gw_sysv_hash(name) % hdr[0]) * 4, &i, 4))
		return -1;
	for (uint32_t n = 0; i != STN_UNDEF && i < hdr[1] && n < GW_MAX_CHAIN; n++) {
		if (gw_sym_is(&t, rd, rctx, i, name, len, out))
			return 1;
		if (rd(rctx, t.hash + 8 + (uint64_t)hdr[0] * 4 + (uint64_t)i * 4, &i, 4))
			return -1;
	}
	return 0;
}
#endif
