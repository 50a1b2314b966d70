/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_ELFSYMS_H
#define HEAPSNAP_ELFSYMS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which BPF entry program handles a function, by where its arguments are. */
enum hs_prog {
	PROG_SIZE1,        /* malloc(size), operator new(size, ...), __rust_alloc(size, align) */
	PROG_SIZE2,        /* memalign(align, size), aligned_alloc(align, size) */
	PROG_CALLOC,       /* calloc(n, size) */
	PROG_REALLOC,      /* realloc(ptr, size) */
	PROG_REALLOCARRAY, /* reallocarray(ptr, n, size) */
	PROG_RUST_REALLOC, /* __rust_realloc(ptr, old_size, align, size) */
	PROG_POSIX_MEMALIGN,
	PROG_FREE,
	PROG__COUNT,
};

struct alloc_func {
	char *name;
	uint64_t offset;       /* file offset of the function */
	uint64_t probe_offset; /* where the entry probe goes (after a skippable NULL check for free) */
	enum hs_prog prog;
	uint32_t kind;         /* enum hs_alloc_kind */
	bool wrapper;          /* a free that calls another probed free: needs a return probe */
	bool leaf;             /* calls no other probed allocator (glibc's malloc, calloc, memalign) */
};

struct alloc_func_list {
	struct alloc_func *v;
	int nr;
};

/* Classifies a symbol name by the allocator table (common/allocators.def). Returns false when it
 * is not an allocator entry point. IN_LIBC: the symbol is glibc's (*leaf may then be true). */
bool alloc_func__classify(const char *name, bool in_libc, enum hs_prog *prog, uint32_t *kind, bool *wrapper,
			  bool *leaf);
bool alloc_func__parse_kind(const char *s, enum hs_prog *prog, uint32_t *kind);
/* Finds the allocator functions PATH defines. IN_LIBC marks glibc, whose free is a primary. */
int alloc_funcs__scan(const char *path, bool in_libc, bool place_probes, struct alloc_func_list *out);
/* Finds SYMBOL in PATH; returns its file offset in *off. */
int elf_find_symbol(const char *path, const char *symbol, uint64_t *off);
/* Finds N symbols in one pass over PATH: OFFS[i] is the file offset of SYMBOLS[i], 0 if absent.
 * Returns how many were found, or -errno. */
int elf_find_symbols(const char *path, const char *const *symbols, int n, uint64_t *offs);
void alloc_funcs__free(struct alloc_func_list *l);
/* 1 when PATH exports a C allocator function of its own (malloc, free, calloc or realloc:
 * *WHICH, the first found), which the dynamic loader binds ahead of any preloaded library;
 * 0 if not, -errno if PATH cannot be read. */
int elf_exported_allocator(const char *path, const char **which);
/* True when PATH is an ELF executable with an interpreter (the dynamic loader). */
bool elf_is_dynamic(const char *path);
/* The page-aligned file offset of PATH's first executable segment. */
int elf_exec_offset(const char *path, uint64_t *off);
/* Decodes a function's first bytes and returns where to probe it: the first instruction
 * the kernel emulates (push, jmp, jcc, call, nop), reached only over instructions that
 * change neither rsp nor the arguments. SKIP_NULL_CHECK also steps over free's
 * `test %rdi,%rdi; je`. Returns 0 for the entry. */
uint64_t probe_placement(const uint8_t *code, size_t len, bool skip_null_check);
extern int hs_verbose;
#endif
