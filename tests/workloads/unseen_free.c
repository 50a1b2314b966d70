// SPDX-License-Identifier: MIT
/* A free the in-process recorder does not see: glibc's own free called through its address
 * (dlvsym of the versioned name, which the unversioned hook of an LD_PRELOAD'ed library does not
 * answer), not through the `free` that library interposes (nor __libc_free: interposed too).
 * The block's address then comes back from the next malloc of its size (the thread's tcache)
 * while the recorder still holds it live: the new block takes its slot, and the old one is
 * freed by implication.
 *
 *   unseen_first   1000 bytes, freed unseen; its address is unseen_second's
 *   unseen_second  1000 bytes, freed with free()
 *   unseen_keep    3000 bytes live at exit
 * So: 5000 bytes allocated in 3 blocks, 2000 freed in 2 (1000 in 1 implied), 3000 live.
 * Exits 3 if malloc did not hand the address out again (nothing would be tested), 4 if there is
 * no free@GLIBC_2.2.5. */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile kept;

NOINLINE void *unseen_first(void)
{
	return malloc(1000);
}

NOINLINE void *unseen_second(void)
{
	return malloc(1000);
}

NOINLINE void unseen_keep(void)
{
	kept = malloc(3000);
}

int main(void)
{
	/* Looked up before the first block: nothing may come between its free and the next malloc. */
	void (*libc_free)(void *) = (void (*)(void *))dlvsym(RTLD_DEFAULT, "free", "GLIBC_2.2.5");
	void *a, *b;

	if (!libc_free)
		return 4;
	a = unseen_first();
	libc_free(a);
	b = unseen_second();
	if (b != a)
		return 3;
	free(b);
	unseen_keep();
	return 0;
}
