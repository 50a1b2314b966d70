// SPDX-License-Identifier: MIT
/* A program whose operator new and delete are its own library's, not built on malloc (as
 * mimalloc-new-delete.h's are), while malloc stays glibc's (t_preload_own_new). Built twice:
 * with OWN_NEW_LIB, the library (mmap and munmap, a 16-byte header of the mapping's size);
 * without, the program, linked to it.
 *
 *   own_new_keep   16 x new of 4 MiB, 8 deleted: alloc 67108864, inuse 33554432
 * (sampled at 256 KiB with a probability of 1 - e^-16 each, so exact). */
#include <cstddef>
#include <cstdio>
#include <new>
#include <sys/mman.h>

#ifdef OWN_NEW_LIB
void *operator new(std::size_t n)
{
	void *p = mmap(nullptr, n + 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		throw std::bad_alloc();
	*(std::size_t *)p = n + 16;
	return (char *)p + 16;
}

void operator delete(void *p) noexcept
{
	if (p)
		munmap((char *)p - 16, *(std::size_t *)((char *)p - 16));
}

void operator delete(void *p, std::size_t) noexcept
{
	operator delete(p);
}
#else
struct Big {
	char b[4 << 20];
};

__attribute__((noinline)) static void own_new_keep(Big **keep)
{
	for (int i = 0; i < 16; i++)
		keep[i] = new Big;
	for (int i = 0; i < 8; i++)
		delete keep[i];
}

int main()
{
	static Big *keep[16];

	own_new_keep(keep);
	for (int i = 8; i < 16; i++)
		keep[i]->b[0] = 1;
	std::printf("own_new: ok\n");
	return 0;
}
#endif
