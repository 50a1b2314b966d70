/* SPDX-License-Identifier: MIT */
/* The module cache: every file a recording maps, found once by build-id (--debug-dir,
 * PPROF_BINARY_PATH, /usr/lib/debug, its own path, debuginfod), its program headers read
 * once, and opened once with libdwfl for symbols. The symbolizer and the unwinder both
 * take their files from here, with one set of libdwfl callbacks whose debug-info path
 * holds --debug-dir. */
#ifndef HEAPSNAP_MODULES_H
#define HEAPSNAP_MODULES_H
#include <stdbool.h>
#include <stdio.h>

#include <elfutils/libdwfl.h>

#include "model.h"

struct module {
	uint8_t bid[HS_MAX_BUILD_ID];
	uint32_t bid_len;
	uint64_t inode;   /* without a build-id, what tells apart files of one path */
	char *orig_path;
	char *found;      /* the file used, or NULL */
	const char *how;  /* where it was found */
	char why[256];    /* why it was not, when not */
	Dwfl *dwfl;       /* the file alone at bias 0: what symbols are looked up in */
	Dwfl_Module *mod; /* NULL when not found or unreadable */
	GElf_Phdr *loads; /* its PT_LOAD headers: file offset -> ELF address */
	int nr_loads;
	bool functions, filenames, lines, inlines; /* what symbolization found: pprof's has_* */
};

struct modules;

struct modules *modules__new(const char *const *debug_dirs, int nr_debug_dirs);
/* The module of mapping MAP, found and opened on first use (keyed by build-id; a file
 * without one by path and inode): its index, or -ENOMEM. */
int modules__index(struct modules *c, const struct mapping *map);
struct module *modules__get(struct modules *c, int index);
int modules__count(const struct modules *c);
/* For every Dwfl that reports these files: separate debug info found next to them, in
 * .debug/, /usr/lib/debug and --debug-dir. */
const Dwfl_Callbacks *modules__callbacks(const struct modules *c);
/* The ELF address of file offset OFF in M, or false when no PT_LOAD holds it. */
bool module__vaddr(const struct module *m, uint64_t off, uint64_t *vaddr);
/* Lists each module that stayed unsymbolized, and why. */
void modules__report(const struct modules *c, FILE *out);
void modules__free(struct modules *c);
/* dwfl_report_elf on a file opened with hs_open_elf: only ever a regular file, and never an
 * open that blocks, whatever path a recording names. Every ELF file is reported this way. */
Dwfl_Module *dwfl_report_elf_safe(Dwfl *dwfl, const char *name, const char *path, GElf_Addr base, bool add_p_vaddr);
#endif
