// SPDX-License-Identifier: MIT
/* A library whose constructor frees before it allocates anything, as cleanup code may (a
 * free(NULL) first), then allocates and frees: initialized before libheapsnap.so when the
 * program links it or it is preloaded after ours, so these calls reach the hooks before the
 * library's own constructor (t_preload_ctor_free). Built with -fno-builtin: the compiler
 * would drop a free(NULL) and a malloc freed unused. */
#include <stdlib.h>

__attribute__((constructor)) static void free_first(void)
{
	void *p;

	free(NULL);
	p = malloc(64);
	free(p);
	free(realloc(NULL, 32));
}
