// SPDX-License-Identifier: MIT
/* Which way in records, and why: said with -v and kept in the file's header. */
#include <sys/stat.h>

#include "elfsyms.h"
#include "launch.h"
#include "output.h"
#include "procfs.h"
#include "session.h"
#include "via.h"
#include "way.h"

/* -p --children: how many descendants of the process run now. The injected library follows
 * the forks it sees from the attach on, but is loaded into the one process: the children
 * already running are BPF's to record (one memory per session, one process injected). */
static int children_running(const struct rec_opts *o)
{
	int n = o->pid && o->children ? proc_count_descendants(o->pid) : 0;

	return n > 0 ? n : 0;
}

/* Which way in, and why: said with -v and kept in the file. */
int choose_via(struct session *s, const struct run *u)
{
	const struct rec_opts *o = s->o;
	bool bpf_only = o->nr_probes || o->libc || o->noop || o->probe_entry || o->probe_links != LINKS_AUTO;
	int children = children_running(o);
	const char *which;
	struct stat st;

	s->via = o->via;
	if (o->via == VIA_AUTO) {
		if (o->pid && bpf_only)
			s->via = VIA_BPF, s->via_why = "bpf: an option of the probes (--probe, --libc, --noop-probes, ...)";
		else if (children)
			s->via = VIA_BPF, s->via_why = "bpf: --children, and children already running, which injection "
						       "into the process does not reach";
		else if (o->pid)
			s->via = VIA_INJECT, s->via_why = "inject: libheapsnap.so loaded into the running process";
		else if (o->all)
			s->via = VIA_BPF, s->via_why = "bpf: every process on the host";
		else if (bpf_only)
			s->via = VIA_BPF, s->via_why = "bpf: an option of the probes (--probe, --libc, --noop-probes, ...)";
		else if (!stat(u->exe, &st) && (st.st_mode & (S_ISUID | S_ISGID)))
			s->via = VIA_BPF, s->via_why = "bpf: a setuid or setgid program ignores LD_PRELOAD";
		else if (!elf_is_dynamic(u->exe) && !is_script(u->exe))
			s->via = VIA_BPF, s->via_why = "bpf: a static binary loads no preloaded library";
		else if (elf_exported_allocator(u->exe, &which) > 0)
			s->via = VIA_BPF, s->via_why = "bpf: the executable defines its own allocator, which the loader binds "
						       "ahead of a preloaded library";
		else
			s->via = VIA_PRELOAD, s->via_why = "preload: a launched, dynamically linked command";
	} else if (o->via == VIA_PRELOAD || o->via == VIA_INJECT) {
		bool inject = o->via == VIA_INJECT;

		s->via_why = inject ? "inject: asked for with --via inject" : "preload: asked for with --via preload";
		if (inject && !o->pid) {
			rec_warnx("--via inject attaches to a running process (-p PID); a command is preloaded (--via preload)");
			return -EINVAL;
		}
		if (!inject && !o->argv) {
			rec_warnx("--via preload records a command it starts (-- COMMAND); -p is injected (--via inject), -a uses BPF");
			return -EINVAL;
		}
		if (inject && children) {
			rec_warnx("--via inject --children: process %d has %d child process%s running, and the library is "
				  "injected into the process alone (what it forks from now on is recorded); use --via bpf, "
				  "or leave out --children", o->pid, children, children == 1 ? "" : "es");
			return -EINVAL;
		}
		if (bpf_only) {
			rec_warnx("--via %s: that probe option (--probe, --libc, --noop-probes, --probe-links, "
			      "--probe-at-entry) is BPF's alone; use --via bpf", inject ? "inject" : "preload");
			return -EINVAL;
		}
	} else {
		s->via_why = "bpf: asked for with --via bpf";
	}
	s->way = s->via == VIA_PRELOAD ? &preload_way : s->via == VIA_INJECT ? &inject_way : &bpf_way;
	if (o->verbose && s->via != VIA_INJECT)
		rec_warnx("recording via %s", s->via_why);
	return 0;
}
