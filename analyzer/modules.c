// SPDX-License-Identifier: MIT
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buildid.h"
#include "hmap.h"
#include "modules.h"

struct modules {
	const char *const *debug_dirs;
	int nr_debug_dirs;
	char *debuginfo_path;
	Dwfl_Callbacks cb;
	struct module *mods;
	int nr_mods, cap_mods;
	struct hmap mod_idx; /* hash(build-id or path) -> index + 1 */
	debuginfod_client *dbg;
	bool dbg_tried;
};

struct modules *modules__new(const char *const *debug_dirs, int nr_debug_dirs)
{
	struct modules *s = calloc(1, sizeof(*s));
	size_t len = 64;

	if (!s)
		return NULL;
	s->debug_dirs = debug_dirs;
	s->nr_debug_dirs = nr_debug_dirs;
	for (int i = 0; i < nr_debug_dirs; i++)
		len += strlen(debug_dirs[i]) + 1;
	s->debuginfo_path = malloc(len);
	if (!s->debuginfo_path) {
		free(s);
		return NULL;
	}
	/* Separate debug info: next to the file, in .debug/, in /usr/lib/debug, in --debug-dir. */
	strcpy(s->debuginfo_path, ":.debug:/usr/lib/debug");
	for (int i = 0; i < nr_debug_dirs; i++) {
		strcat(s->debuginfo_path, ":");
		strcat(s->debuginfo_path, debug_dirs[i]);
	}
	s->cb.find_elf = dwfl_build_id_find_elf;
	s->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	s->cb.section_address = dwfl_offline_section_address;
	s->cb.debuginfo_path = &s->debuginfo_path;
	return s;
}

const Dwfl_Callbacks *modules__callbacks(const struct modules *c)
{
	return &c->cb;
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
static bool try_dir(const char *dir, struct module *m, char *out, size_t outlen)
{
	char hex[2 * HS_MAX_BUILD_ID + 1];
	const char *base = basename(m->orig_path);
	char cand[4][4200];

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

static void find_file(struct modules *s, struct module *m)
{
	char path[4200], hex[2 * HS_MAX_BUILD_ID + 1];
	const char *env = getenv("PPROF_BINARY_PATH");

	for (int i = 0; i < s->nr_debug_dirs; i++) {
		if (try_dir(s->debug_dirs[i], m, path, sizeof(path))) {
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

static void open_module(struct modules *s, struct module *m)
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
	if (!m->loads) {
		snprintf(m->why, sizeof(m->why), "reading %s: out of memory", m->found);
		m->mod = NULL;
		return;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			m->loads[m->nr_loads++] = ph;
	}
}

/* Whether M is the module of MAP: by build-id; a file without one by path and inode. */
static bool module_is(const struct module *m, const struct mapping *map)
{
	if (m->bid_len != map->build_id_len || memcmp(m->bid, map->build_id, m->bid_len))
		return false;
	return m->bid_len || (m->inode == map->inode && !strcmp(m->orig_path, map->path));
}

int modules__index(struct modules *s, const struct mapping *map)
{
	uint64_t k1 = map->build_id_len, k2 = 0;
	struct hmap_slot *slot;
	struct module *m;
	bool created;

	/* The seeded hash of the build-id (or of the path and inode), chained on k2 + 1 for the
	 * rare module that shares it: a file cannot choose build-ids that collide. */
	for (uint32_t i = 0; i < map->build_id_len; i++)
		k2 = hmap_hash(k2, map->build_id[i]);
	if (!map->build_id_len) {
		for (const char *p = map->path; *p; p++)
			k2 = hmap_hash(k2, (uint8_t)*p);
		k1 = map->inode | (1ull << 63);
	}
	for (;; k2++) {
		slot = hmap_put(&s->mod_idx, k1, k2, &created);
		if (!slot)
			return -ENOMEM;
		if (created)
			break;
		if (module_is(&s->mods[slot->val - 1], map))
			return (int)slot->val - 1;
	}
	if (s->nr_mods == s->cap_mods) {
		int ncap = s->cap_mods ? s->cap_mods * 2 : 16;

		m = realloc(s->mods, sizeof(*m) * (size_t)ncap);
		if (!m) {
			hmap_remove_slot(&s->mod_idx, slot);
			return -ENOMEM;
		}
		s->mods = m;
		s->cap_mods = ncap;
	}
	m = &s->mods[s->nr_mods];
	memset(m, 0, sizeof(*m));
	memcpy(m->bid, map->build_id, map->build_id_len);
	m->bid_len = map->build_id_len;
	m->inode = map->inode;
	m->orig_path = strdup(map->path);
	if (!m->orig_path) {
		hmap_remove_slot(&s->mod_idx, slot);
		return -ENOMEM;
	}
	slot->val = (uint64_t)++s->nr_mods;
	open_module(s, m);
	return s->nr_mods - 1;
}

struct module *modules__get(struct modules *c, int index)
{
	return index >= 0 && index < c->nr_mods ? &c->mods[index] : NULL;
}

int modules__count(const struct modules *c)
{
	return c->nr_mods;
}

bool module__vaddr(const struct module *m, uint64_t off, uint64_t *vaddr)
{
	for (int i = 0; i < m->nr_loads; i++) {
		const GElf_Phdr *ph = &m->loads[i];

		if (off >= ph->p_offset && off < ph->p_offset + ph->p_filesz) {
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			return true;
		}
	}
	return false;
}

void modules__report(const struct modules *c, FILE *out)
{
	for (int i = 0; i < c->nr_mods; i++) {
		const struct module *m = &c->mods[i];
		char hex[2 * HS_MAX_BUILD_ID + 1];

		if (m->mod)
			continue;
		hs_hex(m->bid, m->bid_len, hex);
		fprintf(out, "heapsnap-analyze: warning: %s (build-id %s) stays unsymbolized: %s\n", m->orig_path,
			m->bid_len ? hex : "none", m->why[0] ? m->why : "unreadable");
	}
}

void modules__free(struct modules *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nr_mods; i++) {
		if (c->mods[i].dwfl)
			dwfl_end(c->mods[i].dwfl);
		free(c->mods[i].loads);
		free(c->mods[i].found);
		free(c->mods[i].orig_path);
	}
	free(c->mods);
	hmap_free(&c->mod_idx);
	if (c->dbg)
		debuginfod_end(c->dbg);
	free(c->debuginfo_path);
	free(c);
}
