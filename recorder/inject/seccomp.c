// SPDX-License-Identifier: MIT
/* A classic-BPF interpreter for seccomp filters (see seccomp.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ptrace.h>

#include "seccomp.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif
#define MAX_FILTERS 64

/* Runs PROG on DATA. A malformed program gives KILL_PROCESS: the worst case. */
static uint32_t run_filter(const struct sock_filter *prog, long len, const struct seccomp_data *data)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
	const uint8_t *d = (const uint8_t *)data;

	for (long pc = 0; pc >= 0 && pc < len; pc++) {
		const struct sock_filter *f = &prog[pc];
		uint32_t src = BPF_SRC(f->code) == BPF_X ? x : f->k;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;

			switch (BPF_MODE(f->code)) {
			case BPF_IMM:
				v = f->k;
				break;
			case BPF_MEM:
				if (f->k >= BPF_MEMWORDS)
					return SECCOMP_RET_KILL_PROCESS;
				v = mem[f->k];
				break;
			case BPF_LEN:
				v = sizeof(*data);
				break;
			case BPF_ABS:
				if (BPF_SIZE(f->code) != BPF_W || f->k > sizeof(*data) - 4 || (f->k & 3))
					return SECCOMP_RET_KILL_PROCESS;
				memcpy(&v, d + f->k, 4);
				break;
			default:
				return SECCOMP_RET_KILL_PROCESS;
			}
			if (BPF_CLASS(f->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (f->k >= BPF_MEMWORDS)
				return SECCOMP_RET_KILL_PROCESS;
			mem[f->k] = BPF_CLASS(f->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_MUL: a *= src; break;
			case BPF_DIV: if (!src) return SECCOMP_RET_KILL_PROCESS; a /= src; break;
			case BPF_MOD: if (!src) return SECCOMP_RET_KILL_PROCESS; a %= src; break;
			case BPF_OR: a |= src; break;
			case BPF_AND: a &= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			break;
		case BPF_JMP: {
			bool t;

			if (BPF_OP(f->code) == BPF_JA) {
				pc += f->k;
				break;
			}
			switch (BPF_OP(f->code)) {
			case BPF_JEQ: t = a == src; break;
			case BPF_JGT: t = a > src; break;
			case BPF_JGE: t = a >= src; break;
			case BPF_JSET: t = (a & src) != 0; break;
			default: return SECCOMP_RET_KILL_PROCESS;
			}
			pc += t ? f->jt : f->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? a : f->k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return SECCOMP_RET_KILL_PROCESS;
		}
	}
	return SECCOMP_RET_KILL_PROCESS; /* fell off the end: the kernel never loads that */
}

static const char *action_name(uint32_t act)
{
	switch (act & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS: return "kill the process";
	case SECCOMP_RET_KILL_THREAD: return "kill the thread";
	case SECCOMP_RET_TRAP: return "send SIGSYS";
	case SECCOMP_RET_ERRNO: return "fail it";
	case SECCOMP_RET_USER_NOTIF: return "hand it to a supervisor";
	case SECCOMP_RET_TRACE: return "hand it to a tracer";
	case SECCOMP_RET_LOG: return "log it";
	default: return "allow it";
	}
}

int seccomp__check(pid_t tid, const struct sc_call *calls, int n, char *why, size_t why_len)
{
	struct sock_filter *progs[MAX_FILTERS] = {0};
	long lens[MAX_FILTERS];
	int nf = 0, err = 0;

	for (; nf < MAX_FILTERS; nf++) {
		long len = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)(long)nf, NULL);

		if (len < 0 && (errno == ENOENT || (errno == EINVAL && nf == 0)))
			break; /* no more filters, or none at all */
		if (len <= 0 || len > BPF_MAXINSNS) {
			snprintf(why, why_len, "cannot read seccomp filter %d of thread %d: %s", nf, tid,
				 len < 0 ? strerror(errno) : "bad length");
			err = len < 0 ? -errno : -EINVAL;
			goto out;
		}
		progs[nf] = calloc((size_t)len, sizeof(struct sock_filter));
		if (!progs[nf]) {
			err = -ENOMEM;
			goto out;
		}
		lens[nf] = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)(long)nf, progs[nf]);
		if (lens[nf] != len) {
			snprintf(why, why_len, "seccomp filter %d of thread %d changed while read", nf, tid);
			err = -EAGAIN;
			goto out;
		}
	}
	if (nf == MAX_FILTERS) {
		snprintf(why, why_len, "thread %d has more than %d seccomp filters", tid, MAX_FILTERS);
		err = -E2BIG;
		goto out;
	}
	for (int i = 0; i < n && !err; i++) {
		struct seccomp_data d = {.nr = calls[i].nr, .arch = AUDIT_ARCH_X86_64};
		uint32_t worst = SECCOMP_RET_ALLOW, act;
		bool ok;

		memcpy(d.args, calls[i].args, sizeof(d.args));
		/* The kernel takes the most restrictive answer of all the filters. */
		for (int f = 0; f < nf; f++) {
			uint32_t r = run_filter(progs[f], lens[f], &d);

			if ((int32_t)(r & SECCOMP_RET_ACTION_FULL) < (int32_t)(worst & SECCOMP_RET_ACTION_FULL))
				worst = r;
		}
		act = worst & SECCOMP_RET_ACTION_FULL;
		if (calls[i].must_succeed)
			ok = act == SECCOMP_RET_ALLOW || act == SECCOMP_RET_LOG;
		else
			ok = act == SECCOMP_RET_ALLOW || act == SECCOMP_RET_LOG || act == SECCOMP_RET_ERRNO ||
			     act == SECCOMP_RET_TRACE;
		if (!ok) {
			snprintf(why, why_len, "the target's seccomp filter would %s on %s(), which the injection needs",
				 action_name(act), calls[i].name);
			err = -EPERM;
		}
	}
out:
	for (int f = 0; f < MAX_FILTERS; f++)
		free(progs[f]);
	return err;
}
