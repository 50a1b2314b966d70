// SPDX-License-Identifier: MIT
/* The C++ runtime's nothrow operator new, its blocks freed by the runtime's plain sized delete,
 * as std::get_temporary_buffer and return_temporary_buffer pair them (std::stable_sort's
 * buffer): t_preload_nothrow_pair.
 *
 *   nothrow_keep    16 x operator new(4 MiB, nothrow), 8 freed by operator delete(p, 4 MiB):
 *                   alloc 67108864, inuse 33554432 (sampled at 256 KiB with a probability of
 *                   1 - e^-16 each, so exact) */
#include <cstdio>
#include <cstring>
#include <new>

__attribute__((noinline)) static void nothrow_keep(void **keep)
{
	for (int i = 0; i < 16; i++) {
		keep[i] = ::operator new(4u << 20, std::nothrow);
		if (!keep[i])
			return;
		std::memset(keep[i], i, 4096);
	}
	for (int i = 0; i < 8; i++)
		::operator delete(keep[i], 4u << 20);
}

int main()
{
	static void *keep[16];

	nothrow_keep(keep);
	std::printf("nothrow_pair: %s\n", keep[15] ? "ok" : "failed");
	return keep[15] ? 0 : 1;
}
