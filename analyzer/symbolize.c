// SPDX-License-Identifier: MIT
/* Offline symbolization with libdwfl, in the eu-addr2line way: one Dwfl per module file,
 * found by build-id, then address -> symbol, source line and inline chain. */
#include <dwarf.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"
#include "hmap.h"
#include "symbolize.h"

struct sym_module {
	uint8_t bid[HS_MAX_BUILD_ID];
	uint32_t bid_len;
	char *orig_path;
	char *found;      /* the file used, or NULL */
	const char *how;  /* where it was found */
	char why[256];    /* why it was not, when not */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Phdr *loads;
	int nr_loads;
	bool functions, filenames, lines, inlines;
};

struct cached {
	uint32_t first, nr;
	int module;
};

struct symbolizer {
	struct sym_opts o;
	char *debuginfo_path;
	Dwfl_Callbacks cb;
	struct sym_module *mods;
	int nr_mods;
	struct hmap mod_idx; /* hash(build-id or path) -> index + 1 */
	struct hmap cache;   /* (module, addr) -> index into results */
	struct cached *results;
	uint32_t nr_results, cap_results;
	struct sym_frame *frames;
	uint32_t nr_frames, cap_frames;
	debuginfod_client *dbg;
	bool dbg_tried;
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
	size_t len = 64;

	if (!s)
		return NULL;
	s->o = *o;
	for (int i = 0; i < o->nr_debug_dirs; i++)
		len += strlen(o->debug_dirs[i]) + 1;
	s->debuginfo_path = malloc(len);
	if (!s->debuginfo_path) {
		free(s);
		return NULL;
	}
	/* Separate debug info: next to the file, in .debug/, in /usr/lib/debug, in --debug-dir. */
	strcpy(s->debuginfo_path, ":.debug:/usr/lib/debug");
	for (int i = 0; i < o->nr_debug_dirs; i++) {
		strcat(s->debuginfo_path, ":");
		strcat(s->debuginfo_path, o->debug_dirs[i]);
	}
	s->cb.find_elf = dwfl_build_id_find_elf;
	s->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	s->cb.section_address = dwfl_offline_section_address;
	s->cb.debuginfo_path = &s->debuginfo_path;
	return s;
}

/* Whether the analyzer may look into PATH for a recording's sake: a regular file anyone may
 * read, or one of the caller's own when the caller is not root. A crafted recording run
 * through root's analyzer can name /etc/shadow; it is not even opened. Checked before any
 * open, since every file a recording names is first tried here. */
static bool may_read(const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	return (st.st_mode & S_IROTH) || (getuid() != 0 && st.st_uid == getuid());
}

static bool build_id_matches(const char *path, const uint8_t *bid, uint32_t len)
{
	uint8_t got[HS_BUILD_ID_MAX];
	int n = may_read(path) ? hs_read_build_id(path, got, sizeof(got)) : -EACCES;

	return n > 0 && (uint32_t)n == len && !memcmp(got, bid, len);
}

/* Tries DIR/.build-id/xx/rest{.debug,}, DIR/<basename>, DIR/<full path>, DIR/<hex>/<basename>. */
static bool try_dir(const char *dir, struct sym_module *m, char *out, size_t outlen)
{
	char hex[2 * HS_MAX_BUILD_ID + 1];
	const char *base = strrchr(m->orig_path, '/');
	char cand[4][4200];

	base = base ? base + 1 : m->orig_path;
	hs_hex(m->bid, m->bid_len, hex);
	snprintf(cand[0], sizeof(cand[0]), "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	snprintf(cand[1], sizeof(cand[1]), "%s/%s", dir, base);
	snprintf(cand[2], sizeof(cand[2]), "%s%s", dir, m->orig_path);
	snprintf(cand[3], sizeof(cand[3]), "%s/%s/%s", dir, hex, base);
	for (int i = 0; i < 4; i++) {
		if (i == 0 && !m->bid_len)
			continue;
		if (access(cand[i], R_OK))
			continue;
		if (m->bid_len ? build_id_matches(cand[i], m->bid, m->bid_len) : false)
			return snprintf(out, outlen, "%s", cand[i]) > 0;
	}
	if (m->bid_len) {
		snprintf(cand[0], sizeof(cand[0]), "%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
		if (!access(cand[0], R_OK) && build_id_matches(cand[0], m->bid, m->bid_len))
			return snprintf(out, outlen, "%s", cand[0]) > 0;
	}
	return false;
}

/* A separate debug file: its .text (and .eh_frame) are NOBITS. Fine for symbols, but
 * the unwinder needs the CFI that only the real binary carries. */
static bool debug_only(const char *path)
{
	Elf_Scn *scn = NULL;
	bool text = false;
	size_t shstrndx;
	int fd = hs_open_elf(path);
	Elf *elf;

	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && !elf_getshdrstrndx(elf, &shstrndx)) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (name && !strcmp(name, ".text")) {
				text = sh.sh_type != SHT_NOBITS;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return !text;
}

static void find_file(struct symbolizer *s, struct sym_module *m)
{
	char path[4200], hex[2 * HS_MAX_BUILD_ID + 1];
	const char *env = getenv("PPROF_BINARY_PATH");

	for (int i = 0; i < s->o.nr_debug_dirs; i++) {
		if (try_dir(s->o.debug_dirs[i], m, path, sizeof(path))) {
			m->how = "--debug-dir";
			goto found;
		}
	}
	if (env && *env) {
		char *copy = strdup(env), *save = NULL;

		for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
			if (try_dir(d, m, path, sizeof(path))) {
				free(copy);
				m->how = "PPROF_BINARY_PATH";
				goto found;
			}
		}
		free(copy);
	}
	if (m->bid_len && try_dir("/usr/lib/debug", m, path, sizeof(path))) {
		m->how = "/usr/lib/debug";
		goto found;
	}
	if (!access(m->orig_path, R_OK)) {
		if (m->bid_len && build_id_matches(m->orig_path, m->bid, m->bid_len)) {
			snprintf(path, sizeof(path), "%s", m->orig_path);
			m->how = "original path";
			goto found;
		}
		if (!may_read(m->orig_path))
			snprintf(m->why, sizeof(m->why), "%s is not a regular file anyone may read; not opened",
				 m->orig_path);
		else if (m->bid_len)
			snprintf(m->why, sizeof(m->why), "%s has a different build-id (rebuilt or upgraded?)",
				 m->orig_path);
		else
			snprintf(m->why, sizeof(m->why), "no build-id was recorded, so %s cannot be verified",
				 m->orig_path);
	} else {
		snprintf(m->why, sizeof(m->why), "not found by build-id in --debug-dir, PPROF_BINARY_PATH or "
						 "/usr/lib/debug, and %s is absent", m->orig_path);
	}
	if (m->bid_len && getenv("DEBUGINFOD_URLS") && *getenv("DEBUGINFOD_URLS")) {
		char *dpath = NULL;
		int fd;

		if (!s->dbg_tried) {
			s->dbg_tried = true;
			s->dbg = debuginfod_begin();
		}
		fd = s->dbg ? debuginfod_find_executable(s->dbg, m->bid, (int)m->bid_len, &dpath) : -1;
		if (fd >= 0) {
			close(fd);
			snprintf(path, sizeof(path), "%s", dpath);
			free(dpath);
			m->how = "debuginfod";
			goto found;
		}
		snprintf(m->why + strlen(m->why), sizeof(m->why) - strlen(m->why), "; debuginfod: %s",
			 strerror(-fd));
	}
	(void)hex;
	return;
found:
	/* A debug-only file: use the binary, if it is still at its path with this build-id;
	 * libdwfl then finds the debug file by build-id for lines and inlines. */
	if (debug_only(path) && m->bid_len && !access(m->orig_path, R_OK) &&
	    build_id_matches(m->orig_path, m->bid, m->bid_len)) {
		snprintf(path, sizeof(path), "%s", m->orig_path);
		m->how = "original path, with separate debug info";
	}
	m->found = strdup(path);
	m->why[0] = 0;
}

Dwfl_Module *dwfl_report_elf_safe(Dwfl *dwfl, const char *name, const char *path, GElf_Addr base, bool add_p_vaddr)
{
	int fd = hs_open_elf(path);
	Dwfl_Module *mod;

	if (fd < 0)
		return NULL;
	/* libdwfl keeps the fd with the module and closes it with it; on failure it is ours. */
	mod = dwfl_report_elf(dwfl, name, path, fd, base, add_p_vaddr);
	if (!mod)
		close(fd);
	return mod;
}

static void open_module(struct symbolizer *s, struct sym_module *m)
{
	GElf_Addr bias;
	Elf *elf;
	size_t phnum;

	find_file(s, m);
	if (!m->found)
		return;
	m->dwfl = dwfl_begin(&s->cb);
	if (!m->dwfl) {
		snprintf(m->why, sizeof(m->why), "dwfl_begin: %s", dwfl_errmsg(-1));
		return;
	}
	dwfl_report_begin(m->dwfl);
	m->mod = dwfl_report_elf_safe(m->dwfl, m->orig_path, m->found, 0, false);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!m->mod) {
		snprintf(m->why, sizeof(m->why), "cannot read %s: %s", m->found, dwfl_errmsg(-1));
		return;
	}
	elf = dwfl_module_getelf(m->mod, &bias);
	if (!elf || elf_getphdrnum(elf, &phnum)) {
		snprintf(m->why, sizeof(m->why), "no program headers in %s", m->found);
		m->mod = NULL;
		return;
	}
	m->loads = calloc(phnum ? phnum : 1, sizeof(*m->loads));
	for (size_t i = 0; m->loads && i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			m->loads[m->nr_loads++] = ph;
	}
}

static int module_for(struct symbolizer *s, const struct mapping *map)
{
	uint64_t k1 = 0, k2 = map->build_id_len;
	struct hmap_slot *slot;
	struct sym_module *m;
	bool created;

	/* Keyed by build-id; files without one by path and inode. */
	for (uint32_t i = 0; i < map->build_id_len; i++)
		k1 = k1 * 131 + map->build_id[i];
	if (!map->build_id_len) {
		for (const char *p = map->path; *p; p++)
			k1 = k1 * 131 + (uint8_t)*p;
		k2 = map->inode | (1ull << 63);
	}
	slot = hmap_put(&s->mod_idx, k1, k2, &created);
	if (!slot)
		return -1;
	if (!created)
		return (int)slot->val - 1;
	m = realloc(s->mods, sizeof(*m) * (size_t)(s->nr_mods + 1));
	if (!m)
		return -1;
	s->mods = m;
	m = &s->mods[s->nr_mods];
	memset(m, 0, sizeof(*m));
	memcpy(m->bid, map->build_id, map->build_id_len);
	m->bid_len = map->build_id_len;
	m->orig_path = strdup(map->path);
	slot->val = (uint64_t)++s->nr_mods;
	open_module(s, m);
	return s->nr_mods - 1;
}

static uint32_t push_frame(struct symbolizer *s, const char *fn, const char *sys, const char *file, uint32_t line)
{
	if (s->nr_frames == s->cap_frames) {
		s->cap_frames = s->cap_frames ? s->cap_frames * 2 : 1024;
		s->frames = realloc(s->frames, sizeof(*s->frames) * s->cap_frames);
		if (!s->frames)
			exit(1);
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
	return s->nr_frames++;
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
static void resolve(struct symbolizer *s, struct sym_module *m, uint64_t addr, struct cached *c)
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
			push_frame(s, name, linkage, file, lineno > 0 ? (uint32_t)lineno : 0);
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
	if (!c->nr && symname) {
		push_frame(s, symname, symname, file, lineno > 0 ? (uint32_t)lineno : 0);
		c->nr = 1;
	}
	if (c->nr)
		m->functions = true;
}

void symbolizer__lookup(struct symbolizer *s, const struct mapping *map, uint64_t addr, struct sym_result *out)
{
	struct hmap_slot *slot;
	struct sym_module *m;
	struct cached *c;
	uint64_t off, vaddr = 0;
	bool created, in_load = false;
	int mi;

	out->frames = NULL;
	out->nr = 0;
	out->module = -1;
	if (!map || s->o.no_symbolize)
		return;
	mi = module_for(s, map);
	if (mi < 0)
		return;
	out->module = mi;
	slot = hmap_put(&s->cache, (uint64_t)mi, addr, &created);
	if (!slot)
		return;
	if (!created) {
		c = &s->results[slot->val];
		out->frames = s->frames + c->first;
		out->nr = c->nr;
		return;
	}
	if (s->nr_results == s->cap_results) {
		s->cap_results = s->cap_results ? s->cap_results * 2 : 1024;
		s->results = realloc(s->results, sizeof(*s->results) * s->cap_results);
		if (!s->results)
			exit(1);
	}
	slot->val = s->nr_results;
	c = &s->results[s->nr_results++];
	*c = (struct cached){.first = s->nr_frames, .nr = 0, .module = mi};
	m = &s->mods[mi];
	if (!m->mod)
		return;
	/* runtime address -> file offset -> ELF virtual address */
	off = addr - map->start + map->offset;
	for (int i = 0; i < m->nr_loads; i++) {
		const GElf_Phdr *ph = &m->loads[i];

		if (off >= ph->p_offset && off < ph->p_offset + ph->p_filesz) {
			vaddr = off - ph->p_offset + ph->p_vaddr;
			in_load = true;
			break;
		}
	}
	if (!in_load)
		return;
	resolve(s, m, vaddr, c);
	out->frames = s->frames + c->first;
	out->nr = c->nr;
}

const char *symbolizer__file(struct symbolizer *s, const struct mapping *map)
{
	int mi = map ? module_for(s, map) : -1;

	return mi >= 0 ? s->mods[mi].found : NULL;
}

void symbolizer__module_flags(const struct symbolizer *s, int module, bool *functions, bool *filenames, bool *lines,
			      bool *inlines)
{
	const struct sym_module *m = module >= 0 && module < s->nr_mods ? &s->mods[module] : NULL;

	*functions = m && m->functions;
	*filenames = m && m->filenames;
	*lines = m && m->lines;
	*inlines = m && m->inlines;
}

void symbolizer__report(const struct symbolizer *s, FILE *out)
{
	for (int i = 0; i < s->nr_mods; i++) {
		const struct sym_module *m = &s->mods[i];
		char hex[2 * HS_MAX_BUILD_ID + 1];

		if (m->mod)
			continue;
		hs_hex(m->bid, m->bid_len, hex);
		fprintf(out, "heapsnap-analyze: warning: %s (build-id %s) stays unsymbolized: %s\n", m->orig_path,
			m->bid_len ? hex : "none", m->why[0] ? m->why : "unreadable");
	}
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nr_mods; i++) {
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
		free(s->mods[i].loads);
		free(s->mods[i].found);
		free(s->mods[i].orig_path);
	}
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		free((char *)s->frames[i].function);
		free((char *)s->frames[i].system_name);
		free((char *)s->frames[i].file);
	}
	free(s->frames);
	free(s->results);
	free(s->mods);
	hmap_free(&s->mod_idx);
	hmap_free(&s->cache);
	if (s->dbg)
		debuginfod_end(s->dbg);
	free(s->debuginfo_path);
	free(s);
}
