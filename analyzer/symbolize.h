/* SPDX-License-Identifier: MIT */
#ifndef HEAPSNAP_SYMBOLIZE_H
#define HEAPSNAP_SYMBOLIZE_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <elfutils/libdwfl.h>

#include "model.h"

struct sym_frame {
	const char *function; /* demangled; NULL when unknown */
	const char *system_name; /* as in the binary (mangled) */
	const char *file;     /* NULL when unknown */
	uint32_t line;
};

struct sym_result {
	const struct sym_frame *frames; /* innermost (inlined) first */
	uint32_t nr;
	int module; /* index for symbolizer__module_flags, -1 if none */
};

struct sym_opts {
	const char **debug_dirs;
	int nr_debug_dirs;
	bool no_symbolize;
};

struct symbolizer;

struct symbolizer *symbolizer__new(const struct sym_opts *o);
/* Resolves ADDR (already pc - 1 for return addresses) in mapping M. */
void symbolizer__lookup(struct symbolizer *s, const struct mapping *m, uint64_t addr, struct sym_result *out);
/* The local file whose build-id matches mapping M (found as for symbols), or NULL. */
const char *symbolizer__file(struct symbolizer *s, const struct mapping *m);
/* What symbolization found in a module: the truthful pprof has_* flags. */
void symbolizer__module_flags(const struct symbolizer *s, int module, bool *functions, bool *filenames, bool *lines,
			      bool *inlines);
/* Lists each mapping that stayed unsymbolized, and why. */
void symbolizer__report(const struct symbolizer *s, FILE *out);
void symbolizer__free(struct symbolizer *s);
/* Demangles C++ and Rust (legacy and v0) names; returns a malloc'd string or NULL. */
char *hs_demangle(const char *name);
/* dwfl_report_elf on a file opened with hs_open_elf: only ever a regular file, and never an
 * open that blocks, whatever path a recording names. Every ELF file is reported this way. */
Dwfl_Module *dwfl_report_elf_safe(Dwfl *dwfl, const char *name, const char *path, GElf_Addr base, bool add_p_vaddr);
#endif
