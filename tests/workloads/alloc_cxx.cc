// SPDX-License-Identifier: MIT
/* C++ allocations through libstdc++'s operator new (built without frame pointers):
 *
 *   cxx_new_objects   20 x sizeof(Widget) = 20 x 48 = 960 live
 *   cxx_new_array     5 x 1000 = 5000 live
 *   cxx_nothrow       3 x 333 = 999 live
 *   cxx_aligned       2 x 128 = 256 live (alignas(64): the aligned operator new)
 *   cxx_delete_churn  100 x 100 allocated with new[], all deleted
 *
 * "bulk": cxx_bulk_keep keeps 20000 x new char[4096] = 81920000 (in a static table), and
 * cxx_bulk_churn makes and deletes 200000 Widgets (9600000 allocated, none live).
 *
 * "throw": a new too large for any allocator throws std::bad_alloc, caught in main; then
 * cxx_after_throw keeps 7 x new char[1111] = 7777. Before it: the nothrow new[] of that size
 * returns NULL (its operator new[] throws inside it), and the throwing new[] first calls
 * cxx_new_handler, which keeps one new char[222] and uninstalls itself, so that the retry
 * fails and throws. "throw align": first an aligned new of alignment 3, which throws before
 * it allocates, caught too.
 *
 * "inject FIFO": a thread churns new/delete in cxx_idle_churn, "ready PID" is printed, and
 * the above runs once a line is read from FIFO (an injected recorder is in by then).
 */
#include <cstdio>
#include <new>
#include <pthread.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

struct Widget {
	long a[6];
};

struct alignas(64) Aligned {
	char b[128];
};

static void *volatile keep[64];
static int nkeep;

NOINLINE void cxx_new_objects()
{
	for (int i = 0; i < 20; i++)
		keep[nkeep++] = new Widget();
}

NOINLINE void cxx_new_array()
{
	for (int i = 0; i < 5; i++)
		keep[nkeep++] = new char[1000];
}

NOINLINE void cxx_nothrow()
{
	for (int i = 0; i < 3; i++)
		keep[nkeep++] = new (std::nothrow) char[333];
}

NOINLINE void cxx_aligned()
{
	for (int i = 0; i < 2; i++)
		keep[nkeep++] = new Aligned();
}

NOINLINE void cxx_delete_churn()
{
	for (int i = 0; i < 100; i++) {
		char *volatile p = new char[100];
		delete[] p;
	}
}

static char *volatile bulk[20000];

NOINLINE void cxx_bulk_keep()
{
	for (int i = 0; i < 20000; i++)
		bulk[i] = new char[4096];
}

NOINLINE void cxx_bulk_churn()
{
	for (int i = 0; i < 200000; i++) {
		Widget *volatile w = new Widget();
		delete w;
	}
}

static volatile size_t too_large = (size_t)1 << 60;
static volatile size_t bad_align = 3;

NOINLINE void cxx_new_handler()
{
	keep[nkeep++] = new char[222];
	std::set_new_handler(nullptr);
}

NOINLINE void cxx_after_throw()
{
	for (int i = 0; i < 7; i++)
		keep[nkeep++] = new char[1111];
}

static volatile int churn_stop;

NOINLINE void *cxx_idle_churn(void *)
{
	while (!churn_stop) {
		for (int i = 0; i < 100; i++) {
			char *volatile p = new char[40];
			delete[] p;
		}
		usleep(500);
	}
	return nullptr;
}

int main(int argc, char **argv)
{
	static_assert(sizeof(Widget) == 48, "Widget size");
	static_assert(sizeof(Aligned) == 128, "Aligned size");
	pthread_t churn;
	bool wait = argc == 3 && argv[1][0] == 'i';

	if ((argc == 2 || (argc == 3 && argv[2][0] == 'a')) && argv[1][0] == 't') {
		if (new (std::nothrow) char[too_large])
			return 5;
		if (argc == 3) {
			try {
				keep[nkeep++] = ::operator new(64, std::align_val_t(bad_align));
				return 6;
			} catch (const std::bad_alloc &) {
			}
		}
		std::set_new_handler(cxx_new_handler);
		try {
			keep[nkeep++] = new char[too_large];
			return 3;
		} catch (const std::bad_alloc &) {
		}
		cxx_after_throw();
		return 0;
	}
	if (argc == 2 && argv[1][0] == 'b') {
		cxx_bulk_keep();
		cxx_bulk_churn();
		return 0;
	}

	if (wait) {
		char line[16];
		FILE *f;

		pthread_create(&churn, nullptr, cxx_idle_churn, nullptr);
		printf("ready %d\n", getpid());
		fflush(stdout);
		f = fopen(argv[2], "r");
		if (!f || !fgets(line, sizeof(line), f))
			return 4;
		fclose(f);
	}
	cxx_new_objects();
	cxx_new_array();
	cxx_nothrow();
	cxx_aligned();
	cxx_delete_churn();
	if (wait) {
		churn_stop = 1;
		pthread_join(churn, nullptr);
	}
	return 0;
}
