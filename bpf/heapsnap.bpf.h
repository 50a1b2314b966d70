/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* BPF-only helpers for heapsnap.bpf.c. */
#ifndef HEAPSNAP_BPF_HELPERS_H
#define HEAPSNAP_BPF_HELPERS_H

/* FNV-1a over 64-bit words: stacks are interned by this hash, so a repeat costs one lookup. */
#define HS_HASH_INIT 0xcbf29ce484222325ull
#define HS_HASH_PRIME 0x100000001b3ull

static __always_inline __u64 hs_hash_word(__u64 h, __u64 w)
{
	h ^= w;
	h *= HS_HASH_PRIME;
	h ^= h >> 29;
	return h;
}

#endif
