/* SPDX-License-Identifier: MIT */
/* Helpers for expanding the allocator table (common/allocators.def): what its columns mean to
 * the C that libheapsnap.so and the injector generate from it. */
#ifndef HEAPSNAP_ALLOCATORS_H
#define HEAPSNAP_ALLOCATORS_H

/* HS_ALLOC_IF_HOOKED(hook, x...): x when libheapsnap.so hooks the line's function (its GOT
 * entries are pointed at a hook of ours), nothing when BPF alone probes it. */
#define HS_ALLOC_IF_HOOKED(hook, ...) HS_ALLOC_HOOKED_##hook(__VA_ARGS__)
#define HS_ALLOC_HOOKED_OWN(...) __VA_ARGS__
#define HS_ALLOC_HOOKED_ALLOC(...) __VA_ARGS__
#define HS_ALLOC_HOOKED_FREE(...) __VA_ARGS__
#define HS_ALLOC_HOOKED_NEW(...) __VA_ARGS__
#define HS_ALLOC_HOOKED_DELETE(...) __VA_ARGS__
#define HS_ALLOC_HOOKED_BPF(...)
#define HS_ALLOC_HOOKED_RUST(...)

/* HS_ALLOC_IF_REAL(hook, x...): x when the hook forwards through a pointer in struct real_fns,
 * resolved when the library starts (C++ operators are looked up on first use instead). */
#define HS_ALLOC_IF_REAL(hook, ...) HS_ALLOC_REAL_##hook(__VA_ARGS__)
#define HS_ALLOC_REAL_OWN(...) __VA_ARGS__
#define HS_ALLOC_REAL_ALLOC(...) __VA_ARGS__
#define HS_ALLOC_REAL_FREE(...) __VA_ARGS__
#define HS_ALLOC_REAL_NEW(...)
#define HS_ALLOC_REAL_DELETE(...)
#define HS_ALLOC_REAL_BPF(...)
#define HS_ALLOC_REAL_RUST(...)

/* A line's parameter types, (size_t, const void *), named: (size_t a0, const void * a1); and
 * the call that passes them on: (a0, a1). Up to four parameters. */
#define HS_CAT_(a, b) a##b
#define HS_CAT(a, b) HS_CAT_(a, b)
#define HS_NARG_(a, b, c, d, n, ...) n
#define HS_NARG(...) HS_NARG_(__VA_ARGS__, 4, 3, 2, 1, 0)
#define HS_PARAMS(...) HS_CAT(HS_PARAMS_, HS_NARG(__VA_ARGS__))(__VA_ARGS__)
#define HS_PARAMS_1(t0) (t0 a0)
#define HS_PARAMS_2(t0, t1) (t0 a0, t1 a1)
#define HS_PARAMS_3(t0, t1, t2) (t0 a0, t1 a1, t2 a2)
#define HS_PARAMS_4(t0, t1, t2, t3) (t0 a0, t1 a1, t2 a2, t3 a3)
#define HS_ARGS(...) HS_CAT(HS_ARGS_, HS_NARG(__VA_ARGS__))
#define HS_ARGS_1 (a0)
#define HS_ARGS_2 (a0, a1)
#define HS_ARGS_3 (a0, a1, a2)
#define HS_ARGS_4 (a0, a1, a2, a3)

/* The size and the pointer, by the args column, for the hooks generated from a line: a line
 * whose args have no such entry here cannot have a generated hook (it fails to compile). */
#define HS_SIZE_OF_SIZE1 a0
#define HS_SIZE_OF_SIZE2 a1
#define HS_PTR_OF_FREE a0
#endif
