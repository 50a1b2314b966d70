// SPDX-License-Identifier: MIT
/* An allocator a program links (tests/workloads/linked_alloc.c): malloc, calloc, realloc and
 * free of its own, each counting the calls of the calling thread and passing them to glibc's
 * __libc_* functions. Built with only a SysV hash table (--hash-style=sysv), so that the
 * injected library finds it through DT_HASH. */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

__thread unsigned long countalloc_calls;

void *malloc(size_t n)
{
	countalloc_calls++;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	countalloc_calls++;
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	countalloc_calls++;
	return __libc_realloc(p, n);
}

void free(void *p)
{
	countalloc_calls++;
	__libc_free(p);
}

unsigned long countalloc_thread_calls(void)
{
	return countalloc_calls;
}
