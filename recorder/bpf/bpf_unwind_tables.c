// SPDX-License-Identifier: MIT
/* --stack auto through BPF: the unwind tables of the modules tracked processes map, built
 * once per build-id (common/unwtab.c) straight into the BPF program's array of rows, and
 * each process's executable mappings with where their module's rows are. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_way.h"
#include "buildid.h"
#include "heapsnap.h"
#include "heapsnap.skel.h"
#include "objects.h"
#include "output.h"
#include "processes.h"
#include "session.h"
#include "unwtab.h"

struct unw_tables {
	struct hs_unw_row *rows; /* the BPF array, mapped */
	uint64_t map_len;
	uint32_t cap, used;
	int procs_fd;
	struct hmap by_bid;      /* build-id -> row_start << 32 | row_count */
	struct hs_unw_proc *val; /* scratch for one process's update */
	uint32_t gen;            /* of the last update: unique to each */
	bool warned_full, warned_update;
};

int unw_tables__open(struct session *s)
{
	struct bpf_way *b = bpf_of(s);
	struct unw_tables *u = calloc(1, sizeof(*u));
	struct bpf_map *rows = b->skel->maps.unw_rows;
	int err;

	if (!u)
		return -ENOMEM;
	u->cap = bpf_map__max_entries(rows);
	u->map_len = ((uint64_t)u->cap * sizeof(struct hs_unw_row) + 4095) & ~4095ull;
	u->rows = mmap(NULL, u->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(rows), 0);
	u->val = calloc(1, sizeof(*u->val));
	if (u->rows == MAP_FAILED || !u->val) {
		err = u->rows == MAP_FAILED ? -errno : -ENOMEM;
		rec_warnx("failed to map the unwind table array (%u rows): %s", u->cap, strerror(-err));
		u->rows = NULL;
		unw_tables__free(u);
		return err;
	}
	u->procs_fd = bpf_map__fd(b->skel->maps.unw_procs);
	b->unw = u;
	return 0;
}

void unw_tables__free(struct unw_tables *u)
{
	if (!u)
		return;
	if (u->rows)
		munmap(u->rows, u->map_len);
	hmap_free(&u->by_bid);
	free(u->val);
	free(u);
}

/* .eh_frame of ELF, by its section header, else through PT_GNU_EH_FRAME. */
static int find_eh_frame(Elf *elf, const uint8_t **data, uint64_t *len, uint64_t *addr)
{
	size_t shstr, phnum, size;
	const uint8_t *raw = (const uint8_t *)elf_rawfile(elf, &size);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (!elf_getshdrstrndx(elf, &shstr)) {
		while ((scn = elf_nextscn(elf, scn))) {
			const char *name;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
				continue;
			name = elf_strptr(elf, shstr, sh.sh_name);
			if (name && !strcmp(name, ".eh_frame") && raw && sh.sh_offset <= size &&
			    sh.sh_size <= size - sh.sh_offset) {
				*data = raw + sh.sh_offset;
				*len = sh.sh_size;
				*addr = sh.sh_addr;
				return 0;
			}
		}
	}
	if (!raw || elf_getphdrnum(elf, &phnum))
		return -ENOENT;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph, seg;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME || ph.p_offset > size ||
		    ph.p_filesz > size - ph.p_offset)
			continue;
		*addr = unwtab__eh_frame_from_hdr(raw + ph.p_offset, ph.p_filesz, ph.p_vaddr);
		for (size_t j = 0; *addr && j < phnum; j++) {
			if (!gelf_getphdr(elf, (int)j, &seg) || seg.p_type != PT_LOAD || *addr < seg.p_vaddr ||
			    *addr >= seg.p_vaddr + seg.p_filesz || seg.p_offset > size || seg.p_filesz > size - seg.p_offset)
				continue;
			*data = raw + seg.p_offset + (*addr - seg.p_vaddr);
			*len = seg.p_vaddr + seg.p_filesz - *addr;
			return 0;
		}
	}
	return -ENOENT;
}

/* .debug_frame of ELF, where code built without unwind tables describes its frames
 * (decompressed in memory if need be, to at most DEBUG_FRAME_MAX: the size is the file's
 * word; the data lives as long as ELF). */
#define DEBUG_FRAME_MAX (64u << 20)
static int find_debug_frame(Elf *elf, const uint8_t **data, uint64_t *len)
{
	size_t shstr;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstr))
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstr, sh.sh_name);
		if (!name || strcmp(name, ".debug_frame"))
			continue;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			if (!gelf_getchdr(scn, &ch) || ch.ch_size > DEBUG_FRAME_MAX || elf_compress(scn, 0, 0) < 0)
				return -EINVAL;
		}
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size)
			return -ENOENT;
		*data = d->d_buf;
		*len = d->d_size;
		return 0;
	}
	return -ENOENT;
}

/* Builds O's table from the file open at FD, or finds it built for the same build-id. */
static void load_object(struct unw_tables *u, struct object *o, struct obj_unwind *t, int fd)
{
	uint64_t k1 = 0, k2 = 0, len, addr, dbg_len;
	struct hmap_slot *slot = NULL;
	const uint8_t *eh, *dbg;
	size_t phnum;
	long bound, n;
	bool created;
	Elf *elf;

	t->state = -1;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum))
		goto out;
	for (size_t i = 0; i < phnum && t->nsegs < OBJ_UNW_SEGS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			t->segs[t->nsegs++] = (struct obj_seg){ph.p_offset & ~0xfffull, ph.p_vaddr & ~0xfffull,
							      ph.p_filesz + (ph.p_offset & 0xfff)};
	}
	if (!o->build_id_len) {
		int n = hs_read_build_id_fd(fd, o->build_id, sizeof(o->build_id));

		o->build_id_len = n > 0 ? n : 0;
	}
	if (o->build_id_len > 0) {
		memcpy(&k1, o->build_id, o->build_id_len < 8 ? (size_t)o->build_id_len : 8);
		if (o->build_id_len > 8)
			memcpy(&k2, o->build_id + 8, o->build_id_len < 16 ? (size_t)o->build_id_len - 8 : 8);
		slot = hmap_put(&u->by_bid, k1, k2 ^ (uint64_t)o->build_id_len, &created);
		if (slot && !created) {
			t->row_start = (uint32_t)(slot->val >> 32);
			t->row_count = (uint32_t)slot->val;
			t->state = 1;
			goto out;
		}
	}
	if (find_eh_frame(elf, &eh, &len, &addr))
		eh = NULL, len = addr = 0;
	if (find_debug_frame(elf, &dbg, &dbg_len))
		dbg = NULL, dbg_len = 0;
	bound = unwtab__build_file(eh, len, addr, dbg, dbg_len, NULL, 0);
	if (bound <= 0)
		goto out;
	if ((uint64_t)u->used + (uint64_t)bound > u->cap) {
		if (!u->warned_full)
			rec_warnx("the unwind tables are full (%u rows): stacks through %s and modules after it "
				  "stop there; --unwind-rows N raises the limit", u->cap, o->path);
		u->warned_full = true;
		goto out;
	}
	n = unwtab__build_file(eh, len, addr, dbg, dbg_len, u->rows + u->used, (uint64_t)bound);
	if (n <= 0)
		goto out;
	t->row_start = u->used;
	t->row_count = (uint32_t)n;
	u->used += (uint32_t)n;
	t->state = 1;
	if (slot)
		slot->val = (uint64_t)t->row_start << 32 | t->row_count;
out:
	/* A build-id whose file had no table: the next file of that build-id tries its own. */
	if (slot && t->state < 0)
		hmap_remove_slot(&u->by_bid, slot);
	if (elf)
		elf_end(elf);
}

/* The module's link-time address of a mapping's start: through the executable segment
 * that its file offset falls in. */
static bool link_bias(const struct obj_unwind *t, const struct proc_map *m, uint64_t *bias)
{
	for (uint32_t i = 0; i < t->nsegs; i++) {
		const struct obj_seg *g = &t->segs[i];

		if (m->offset >= g->off && m->offset < g->off + g->filesz) {
			*bias = m->start - (g->vaddr + (m->offset - g->off));
			return true;
		}
	}
	return false;
}

/* The table of the object at PATH built now, before a held command runs: a program that runs
 * for a tenth of a second (python3.11 of a short script) was over before the recorder, reading
 * its exec, had built its 5 MiB executable's table, and every stack of it was copied, or walked
 * by frame pointers when the copies did not fit the ring. */
void unw_tables__preload(struct session *s, const char *path)
{
	struct bpf_way *b = bpf_of(s);
	struct object *obj;
	struct bpf_obj *o;
	struct stat st;
	int fd;

	if (!b->unw || stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	obj = objects__get(&s->objs, (uint64_t)st.st_dev, (uint64_t)st.st_ino, path);
	o = obj ? bpf_obj(b, obj) : NULL;
	if (!o || o->unw.state)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	load_object(b->unw, obj, &o->unw, fd);
	close(fd);
}

/* P's executable mappings, as just read from /proc, to the BPF program. */
void unw_tables__update(struct session *s, const struct proc *p)
{
	struct bpf_way *b = bpf_of(s);
	struct unw_tables *u = b->unw;
	struct hs_unw_proc *v = u->val;
	uint32_t key = (uint32_t)p->pid;

	v->n = 0;
	v->gen = ++u->gen;
	for (int i = 0; i < p->nr_maps && v->n < HS_UNW_MAX_MAPS; i++) {
		const struct proc_map *m = &p->maps[i];
		struct hs_unw_map *e = &v->m[v->n];
		struct object *obj = objects__get(&s->objs, makedev(m->dev_major, m->dev_minor), m->inode, m->path);
		struct bpf_obj *o = obj ? bpf_obj(b, obj) : NULL;
		uint64_t bias = 0;

		if (!o)
			continue;
		if (!o->unw.state) {
			int fd = proc_open_mapped(p->pid, m);

			if (fd < 0) {
				if (s->o->verbose)
					rec_warnx("no unwind table for %s in process %d: %s", m->path, p->pid,
						  strerror(-fd));
				continue; /* not known: the BPF side copies the stack when it meets it */
			}
			load_object(u, obj, &o->unw, fd);
			close(fd);
		}
		e->start = m->start;
		e->end = m->end;
		if (o->unw.state > 0 && link_bias(&o->unw, m, &bias)) {
			e->bias = bias;
			e->row_start = o->unw.row_start;
			e->row_count = o->unw.row_count;
		} else {
			e->bias = 0;
			e->row_start = e->row_count = 0;
		}
		v->n++;
	}
	if (p->nr_maps > HS_UNW_MAX_MAPS && !b->warned_unw_maps) {
		rec_warnx("process %d has %d executable mappings; stacks through those past the first %d "
			  "are copied and unwound offline", p->pid, p->nr_maps, HS_UNW_MAX_MAPS);
		b->warned_unw_maps = true;
	}
	if (bpf_map_update_elem(u->procs_fd, &key, v, BPF_ANY) && !u->warned_update) {
		rec_warnx("cannot give the BPF program the mappings of process %d: %s; its stacks are copied "
			  "and unwound offline", p->pid, strerror(errno));
		u->warned_update = true;
	}
}
