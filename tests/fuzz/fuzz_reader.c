// SPDX-License-Identifier: MIT
/* libFuzzer target: the record reader, every record to the end, then the footer. */
#include <stdint.h>

#include "fuzz_common.h"
#include "record.h"

static int footer_cb(const struct hs_record *rec, void *ctx)
{
	(void)rec;
	(void)ctx;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct record_reader *r;
	struct hs_record rec;
	char path[64], err[256];
	int fd = fuzz_file(data, size, path, sizeof(path));

	if (!record_reader__open(path, &r, err, sizeof(err))) {
		while (record_reader__next(r, &rec) == 1)
			;
		record_reader__footer(r, footer_cb, NULL);
		record_reader__free(r);
	}
	close(fd);
	return 0;
}
