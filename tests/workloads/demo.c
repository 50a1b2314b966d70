// SPDX-License-Identifier: MIT
/* The `make demo` workload: a toy request handler with a cache that grows, a per-request
 * scratch buffer that is freed, and a session table that leaks one entry per 10 requests.
 *
 *   cache_insert     200 x 4096 = 819200 bytes live
 *   parse_request    1000 x 512 allocated, all freed
 *   session_open     100 x 256 = 25600 bytes live (leaked)
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile cache[200];
static void *volatile sessions[100];

NOINLINE void cache_insert(int i)
{
	cache[i % 200] = malloc(4096);
	memset(cache[i % 200], i, 4096);
}

static volatile int checksum;

NOINLINE void parse_request(int i)
{
	char *volatile buf = malloc(512);

	memset(buf, i, 512);
	checksum += buf[i % 512];
	free(buf);
}

NOINLINE void session_open(int i)
{
	sessions[i / 10] = calloc(1, 256);
}

NOINLINE void handle_request(int i)
{
	parse_request(i);
	if (i % 5 == 0)
		cache_insert(i / 5);
	if (i % 10 == 0)
		session_open(i);
}

int main(void)
{
	for (int i = 0; i < 1000; i++) {
		handle_request(i);
		if (i % 100 == 0)
			usleep(20000);
	}
	return 0;
}
