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
/* The module cache the symbolizer finds its files in, which the unwinder shares. */
struct modules *symbolizer__modules(struct symbolizer *s);
/* What symbolization found in a module: the truthful pprof has_* flags. */
void symbolizer__module_flags(const struct symbolizer *s, int module, bool *functions, bool *filenames, bool *lines,
			      bool *inlines);
/* Lists each mapping that stayed unsymbolized, and why. */
void symbolizer__report(const struct symbolizer *s, FILE *out);
void symbolizer__free(struct symbolizer *s);
/* Demangles C++ and Rust (legacy and v0) names; returns a malloc'd string or NULL. */
char *hs_demangle(const char *name);
#endif
