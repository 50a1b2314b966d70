// SPDX-License-Identifier: MIT
/* Offline symbolization with libdwfl, in the eu-addr2line way: each module file from the
 * module cache (modules.c, by build-id), then address -> symbol, source line and inline
 * chain, cached per (module, address). */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hmap.h"
#include "modules.h"
#include "symbolize.h"


struct cached {
	uint32_t first, nr;
	int module;
};

struct symbolizer {
	struct sym_opts o;
	struct modules *mods;
	struct hmap cache;   /* (module, addr) -> index into results */
	struct cached *results;
	uint32_t nr_results, cap_results;
	struct sym_frame *frames;
	uint32_t nr_frames, cap_frames;
	uint64_t nomem; /* lookups left short for want of memory */
};

char *hs_demangle(const char *name)
{
	if (!name || (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2) && !strstr(name, "17h")))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
}

struct symbolizer *symbolizer__new(const struct sym_opts *o)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->o = *o;
	s->mods = modules__new(o->debug_dirs, o->nr_debug_dirs);
	if (!s->mods) {
		free(s);
		return NULL;
	}
	return s;
}

struct modules *symbolizer__modules(struct symbolizer *s)
{
	return s->mods;
}

/* Adds a frame; false when out of memory (the lookup then has the frames before it). */
static bool push_frame(struct symbolizer *s, const char *fn, const char *sys, const char *file, uint32_t line)
{
	if (s->nr_frames == s->cap_frames) {
		uint32_t ncap = s->cap_frames ? s->cap_frames * 2 : 1024;
		struct sym_frame *f = realloc(s->frames, sizeof(*f) * ncap);

		if (!f) {
			s->nomem++;
			return false;
		}
		s->frames = f;
		s->cap_frames = ncap;
	}
	char *dm = hs_demangle(sys ? sys : fn), *dmp = dm ? hs_strdup_printable(dm) : NULL;

	/* Names from a binary reach reports as strings from a recording do: escaped. */
	free(dm);
	s->frames[s->nr_frames] = (struct sym_frame){
		.function = dmp ? dmp : (fn ? hs_strdup_printable(fn) : NULL),
		.system_name = sys ? hs_strdup_printable(sys) : (fn ? hs_strdup_printable(fn) : NULL),
		.file = file ? hs_strdup_printable(file) : NULL,
		.line = line,
	};
	s->nr_frames++;
	return true;
}

static const char *die_name(Dwarf_Die *die, const char **linkage)
{
	Dwarf_Attribute attr;

	*linkage = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		*linkage = dwarf_formstring(&attr);
	return dwarf_diename(die) ? dwarf_diename(die)
				  : (dwarf_attr_integrate(die, DW_AT_name, &attr) ? dwarf_formstring(&attr) : NULL);
}

/* The inline chain at ADDR, innermost first; each outer frame's line is the call site. */
static void resolve(struct symbolizer *s, struct module *m, uint64_t addr, struct cached *c)
{
	const char *file = NULL, *symname;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie, *scopes = NULL;
	Dwfl_Line *line;
	int lineno = 0, nscopes;
	GElf_Off off;
	GElf_Sym sym;

	c->first = s->nr_frames;
	c->nr = 0;
	line = dwfl_module_getsrc(m->mod, addr);
	if (line) {
		file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		if (file)
			m->filenames = true;
		if (lineno > 0)
			m->lines = true;
	}
	symname = dwfl_module_addrinfo(m->mod, addr, &off, &sym, NULL, NULL, NULL);
	cudie = dwfl_module_addrdie(m->mod, addr, &bias);
	nscopes = cudie ? dwarf_getscopes(cudie, addr - bias, &scopes) : 0;
	if (nscopes > 0) {
		/* getscopes stops at the inlined instance (then lists its abstract origin's
		 * scopes); the DIE's own chain holds the functions it was inlined into. */
		Dwarf_Die innermost = scopes[0], *chain = NULL;
		int nchain = dwarf_getscopes_die(&innermost, &chain);

		if (nchain > 0) {
			free(scopes);
			scopes = chain;
			nscopes = nchain;
		}
	}
	if (nscopes > 0) {
		Dwarf_Files *files = NULL;
		size_t nfiles = 0;

		dwarf_getsrcfiles(cudie, &files, &nfiles);
		for (int i = 0; i < nscopes; i++) {
			Dwarf_Die *sc = &scopes[i];
			int tag = dwarf_tag(sc);
			const char *linkage, *name;
			Dwarf_Attribute attr;
			Dwarf_Word v;

			if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
				continue;
			name = die_name(sc, &linkage);
			if (tag == DW_TAG_subprogram && !name && !linkage)
				name = symname;
			if (!push_frame(s, name, linkage, file, lineno > 0 ? (uint32_t)lineno : 0))
				break;
			c->nr++;
			if (tag == DW_TAG_subprogram)
				break;
			file = NULL;
			lineno = 0;
			if (dwarf_formudata(dwarf_attr(sc, DW_AT_call_file, &attr), &v) == 0 && files)
				file = dwarf_filesrc(files, v, NULL, NULL);
			if (dwarf_formudata(dwarf_attr(sc, DW_AT_call_line, &attr), &v) == 0)
				lineno = (int)v;
		}
		free(scopes);
		if (c->nr > 1)
			m->inlines = true;
	}
	if (!c->nr && symname && push_frame(s, symname, symname, file, lineno > 0 ? (uint32_t)lineno : 0))
		c->nr = 1;
	if (c->nr)
		m->functions = true;
}

void symbolizer__lookup(struct symbolizer *s, const struct mapping *map, uint64_t addr, struct sym_result *out)
{
	struct hmap_slot *slot;
	struct module *m;
	struct cached *c;
	uint64_t vaddr = 0, off;
	bool created;
	int mi;

	out->frames = NULL;
	out->nr = 0;
	out->module = -1;
	if (!map || s->o.no_symbolize)
		return;
	mi = modules__index(s->mods, map);
	if (mi < 0) {
		s->nomem++;
		return;
	}
	out->module = mi;
	/* Keyed by the file offset, what the answer depends on: one runtime address is another
	 * place in the file wherever the module is mapped elsewhere (the other file of a diff). */
	off = addr - map->start + map->offset;
	slot = hmap_put(&s->cache, (uint64_t)mi, off, &created);
	if (!slot) {
		s->nomem++;
		return;
	}
	if (!created) {
		c = &s->results[slot->val];
		out->frames = s->frames + c->first;
		out->nr = c->nr;
		return;
	}
	if (s->nr_results == s->cap_results) {
		uint32_t ncap = s->cap_results ? s->cap_results * 2 : 1024;
		struct cached *r = realloc(s->results, sizeof(*r) * ncap);

		if (!r) {
			hmap_remove_slot(&s->cache, slot);
			s->nomem++;
			return;
		}
		s->results = r;
		s->cap_results = ncap;
	}
	slot->val = s->nr_results;
	c = &s->results[s->nr_results++];
	*c = (struct cached){.first = s->nr_frames, .nr = 0, .module = mi};
	m = modules__get(s->mods, mi);
	/* runtime address -> file offset -> ELF virtual address */
	if (!m->mod || !module__vaddr(m, off, &vaddr))
		return;
	resolve(s, m, vaddr, c);
	out->frames = s->frames + c->first;
	out->nr = c->nr;
}

void symbolizer__module_flags(const struct symbolizer *s, int module, bool *functions, bool *filenames, bool *lines,
			      bool *inlines)
{
	const struct module *m = modules__get(s->mods, module);

	*functions = m && m->functions;
	*filenames = m && m->filenames;
	*lines = m && m->lines;
	*inlines = m && m->inlines;
}

void symbolizer__report(const struct symbolizer *s, FILE *out)
{
	modules__report(s->mods, out);
	if (s->nomem)
		fprintf(out, "heapsnap-analyze: warning: out of memory: %" PRIu64 " lookups have fewer frames than "
			     "their binaries hold\n", s->nomem);
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		free((char *)s->frames[i].function);
		free((char *)s->frames[i].system_name);
		free((char *)s->frames[i].file);
	}
	free(s->frames);
	free(s->results);
	hmap_free(&s->cache);
	modules__free(s->mods);
	free(s);
}
