// SPDX-License-Identifier: MIT
/* Offline unwinding of --stack dwarf captures, as perf --call-graph dwarf does: one Dwfl
 * per process with every mapped file reported at its load bias, and a thread whose
 * registers and memory come from the capture. */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hmap.h"
#include "modules.h"
#include "dwarf_unwind.h"

const char *const unwind_fail_names[UNW__COUNT] = {"ok", "no binary", "no CFI", "window too small"};

#define MAX_FRAMES 256

struct proc_dwfl {
	uint32_t pid;
	Dwfl *dwfl;
	bool attached;
};

struct unwinder {
	struct replay *r;
	struct modules *mods; /* the symbolizer's: each file found and read once */
	struct proc_dwfl *procs;
	uint32_t nr_procs, cap_procs;
	struct hmap proc_idx; /* pid -> index + 1 */
	struct hmap cache; /* (pid, id) -> index into results */
	uint64_t **results; /* [0] = nr, then frames */
	uint32_t nr_results, cap_results;
	struct unwind_stats st;

	/* The capture being unwound, for the thread callbacks. */
	const struct dwarf_stack *cur;
	uint32_t cur_pid;
	bool window_miss;
	uint64_t pcs[MAX_FRAMES];
	uint32_t npcs;
	/* The session's --max-stack: a copied stack is cut where a walked one would have been. */
	uint32_t limit;
};

struct unwinder *unwinder__new(struct replay *r, struct symbolizer *sym)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->r = r;
	u->mods = symbolizer__modules(sym);
	u->limit = r->max_stack && r->max_stack < MAX_FRAMES ? (uint32_t)r->max_stack : MAX_FRAMES;
	return u;
}

/* ---- the thread a capture describes ---- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return (pid_t)u->cur_pid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwinder *u = arg;
	const struct dwarf_stack *d = u->cur;
	uint64_t sp = d->regs[1];

	if (addr < sp || addr - sp + sizeof(*result) > d->len) {
		if (getenv("HEAPSNAP_DEBUG_UNWIND"))
			fprintf(stderr, "unwind: read 0x%lx outside [0x%lx, +%u)\n", (unsigned long)addr,
				(unsigned long)sp, d->len);
		/* Past the end of a window that was cut short: more bytes would have helped. A read
		 * anywhere else is a bad frame, not a small window. */
		if (addr >= sp + d->len && addr < sp + d->used)
			u->window_miss = true;
		return false;
	}
	memcpy(result, d->data + (addr - sp), sizeof(*result));
	return true;
}

/* x86-64 DWARF register numbers: rbx 3, rbp 6, rsp 7, r12-r15 12-15. Caller-saved
 * registers are unknown at a call, and are left unset.
 * Every capture is taken at a function's entry (the allocator's, or the in-process hook's),
 * where the return address is at [sp] and the callee-saved registers are still the caller's:
 * the unwind starts in the caller, as if the allocator had returned. It needs no CFI of the
 * allocator's module, which a process that lived a few milliseconds may not have had listed
 * (libdwfl's fallback would then take rbp for that frame's and skip the caller). */
static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	const uint64_t *g = u->cur->regs;
	Dwarf_Word bx = g[3], bpsp[2] = {g[2], g[1] + 8}, r12_15[4] = {g[4], g[5], g[6], g[7]}, ret;

	if (u->cur->len < 8)
		return false;
	memcpy(&ret, u->cur->data, sizeof(ret));
	return dwfl_thread_state_registers(thread, 3, 1, &bx) && dwfl_thread_state_registers(thread, 6, 2, bpsp) &&
	       dwfl_thread_state_registers(thread, 12, 4, r12_15) && (dwfl_thread_state_register_pc(thread, ret), true);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || u->npcs >= u->limit)
		return DWARF_CB_ABORT;
	u->pcs[u->npcs++] = pc;
	return DWARF_CB_OK;
}

/* ---- one Dwfl per process ---- */

/* Reports mapping M's file at its load bias: runtime address = ELF address + bias. The
 * program headers come from the module cache, which read them when it found the file. */
static void report_mapping(struct unwinder *u, Dwfl *dwfl, const struct mapping *m)
{
	struct module *mod = modules__get(u->mods, modules__index(u->mods, m));
	const GElf_Phdr *pick = NULL;

	if (getenv("HEAPSNAP_DEBUG_UNWIND"))
		fprintf(stderr, "unwind: mapping %s -> %s\n", m->path, mod && mod->found ? mod->found : "(not found)");
	if (!mod || !mod->mod)
		return;
	/* The executable segment the kernel mapped at m->start: its page-aligned file offset is
	 * the mapping's. Matching by containment alone can pick the segment before it, when the
	 * code starts mid-page (lld's layout). */
	for (int i = 0; i < mod->nr_loads && !pick; i++)
		if ((mod->loads[i].p_flags & PF_X) && (mod->loads[i].p_offset & ~(GElf_Off)0xfff) == m->offset)
			pick = &mod->loads[i];
	for (int i = 0; i < mod->nr_loads && !pick; i++)
		if (m->offset >= mod->loads[i].p_offset && m->offset < mod->loads[i].p_offset + mod->loads[i].p_filesz)
			pick = &mod->loads[i];
	if (pick) {
		GElf_Addr base = m->start - (pick->p_vaddr - (pick->p_offset - m->offset));
		Dwfl_Module *rm = dwfl_report_elf_safe(dwfl, m->path, mod->found, base, true);

		if (getenv("HEAPSNAP_DEBUG_UNWIND")) {
			Dwarf_Addr lo = 0, hi = 0;

			if (rm)
				dwfl_module_info(rm, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
			fprintf(stderr, "unwind: %s mapped %lx-%lx off %lx: bias %lx module %lx-%lx\n", mod->found,
				(unsigned long)m->start, (unsigned long)m->end, (unsigned long)m->offset,
				(unsigned long)base, (unsigned long)lo, (unsigned long)hi);
		}
	}
}

/* PID's Dwfl, made on first use with every file it has mapped; NULL when out of memory. */
static struct proc_dwfl *proc_dwfl(struct unwinder *u, uint32_t pid)
{
	struct hmap_slot *slot = hmap_put(&u->proc_idx, pid, 0, NULL);
	const struct mapping *maps;
	struct proc_dwfl *p;
	size_t nr_maps;

	if (!slot)
		return NULL;
	if (slot->val)
		return &u->procs[slot->val - 1];
	if (u->nr_procs == u->cap_procs) {
		uint32_t ncap = u->cap_procs ? u->cap_procs * 2 : 16;

		p = realloc(u->procs, sizeof(*p) * ncap);
		if (!p) {
			hmap_remove_slot(&u->proc_idx, slot);
			return NULL;
		}
		u->procs = p;
		u->cap_procs = ncap;
	}
	p = &u->procs[u->nr_procs++];
	slot->val = u->nr_procs;
	*p = (struct proc_dwfl){.pid = pid, .dwfl = dwfl_begin(modules__callbacks(u->mods))};
	if (!p->dwfl)
		return p;
	dwfl_report_begin(p->dwfl);
	maps = replay__maps_of(u->r, pid, &nr_maps);
	for (size_t i = 0; i < nr_maps; i++)
		if (maps[i].t_unmap == UINT64_MAX)
			report_mapping(u, p->dwfl, &maps[i]);
	dwfl_report_end(p->dwfl, NULL, NULL);
	p->attached = dwfl_attach_state(p->dwfl, NULL, (pid_t)pid, &thread_callbacks, u);
	return p;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int grow_results(struct unwinder *u)
{
	uint32_t ncap = u->cap_results ? u->cap_results * 2 : 256;
	uint64_t **r = realloc(u->results, sizeof(*r) * ncap);

	if (!r)
		return -1;
	u->results = r;
	u->cap_results = ncap;
	return 0;
}

const uint64_t *unwinder__stack(struct unwinder *u, uint32_t pid, uint64_t id, uint32_t *nr)
{
	const struct dwarf_stack *d = replay__dwarf_stack(u->r, id);
	struct proc_dwfl *p;
	struct hmap_slot *slot;
	uint64_t *res, ret0 = 0;
	enum unwind_fail why = UNW_OK;
	bool created;
	double t0;

	*nr = 0;
	if (!d)
		return NULL;
	slot = hmap_put(&u->cache, pid, id, &created);
	if (!slot)
		return NULL;
	if (!created) {
		u->st.cache_hits++;
		*nr = (uint32_t)u->results[slot->val][0];
		return u->results[slot->val] + 1;
	}
	t0 = now_s();
	u->st.unwinds++;
	u->cur = d;
	u->cur_pid = pid;
	u->window_miss = false;
	u->npcs = 0;
	p = proc_dwfl(u, pid);
	if (p && p->attached) {
		int rc = dwfl_getthread_frames(p->dwfl, (pid_t)pid, frame_cb, u);

		if (getenv("HEAPSNAP_DEBUG_UNWIND"))
			fprintf(stderr, "unwind: pid %u id %lu rc %d frames %u: %s\n", pid, (unsigned long)id, rc, u->npcs,
				rc ? dwfl_errmsg(-1) : "ok");

		if (rc != 0 && u->npcs < u->limit) {
			Dwarf_Addr last = u->npcs ? u->pcs[u->npcs - 1] - 1 : d->regs[0];

			if (u->window_miss)
				why = UNW_WINDOW;
			else if (!dwfl_addrmodule(p->dwfl, last))
				why = UNW_NO_BINARY;
			else
				why = UNW_NO_CFI; /* libdwfl found the module but no rule to unwind this pc */
		}
	} else {
		why = UNW_NO_BINARY;
	}
	/* pcs[0] is the caller's return address, read from [sp]; the rest are return addresses
	 * too. Whatever happened, that first one is known. */
	if (d->len >= 8)
		memcpy(&ret0, d->data, 8);
	res = malloc(sizeof(uint64_t) * (MAX_FRAMES + 2));
	if (!res || (u->nr_results == u->cap_results && grow_results(u))) {
		/* Out of memory: no stack, as for an unknown one (profile counts it missing). */
		free(res);
		hmap_remove_slot(&u->cache, slot);
		return NULL;
	}
	res[0] = 0;
	if (u->npcs >= 1) {
		for (uint32_t i = 0; i < u->npcs; i++)
			res[1 + res[0]++] = u->pcs[i];
	} else if (ret0) {
		res[1 + res[0]++] = ret0;
	}
	u->st.fail[why]++;
	u->st.frames += res[0];
	slot->val = u->nr_results;
	u->results[u->nr_results++] = res;
	u->st.seconds += now_s() - t0;
	*nr = (uint32_t)res[0];
	return res + 1;
}

const struct unwind_stats *unwinder__stats(const struct unwinder *u)
{
	return &u->st;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	for (uint32_t i = 0; i < u->nr_procs; i++)
		if (u->procs[i].dwfl)
			dwfl_end(u->procs[i].dwfl);
	free(u->procs);
	for (uint32_t i = 0; i < u->nr_results; i++)
		free(u->results[i]);
	free(u->results);
	hmap_free(&u->cache);
	hmap_free(&u->proc_idx);
	free(u);
}
