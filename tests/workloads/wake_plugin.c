// SPDX-License-Identifier: MIT
/* Loaded by wake's "dlopen" mode (tests/workloads/wake.c): its constructor calls back into
 * wake, which allocates through wake's own GOT while dlopen holds the loader's lock. */
extern void wake_in_dlopen(void);

__attribute__((constructor)) static void wake_plugin_init(void)
{
	wake_in_dlopen();
}
