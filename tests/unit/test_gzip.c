// SPDX-License-Identifier: MIT
/* gzip_compress (analyzer/gzip.c) against zlib's own inflate, which checks the gzip member's
 * CRC and length itself, compared byte for byte; and in small pieces (as gzip_compress hands
 * zlib, whose counts are 32 bits, an input over 1 GiB), so that a piece lost or read twice
 * shows. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "gzip.h"

/* Inflates GZ's LEN bytes; checks that they hold one gzip member of WANT_LEN bytes, equal to
 * WANT (or zeros if WANT is NULL). */
static void check_inflates(const uint8_t *gz, size_t len, const uint8_t *want, size_t want_len, const char *what)
{
	static uint8_t chunk[1 << 20];
	z_stream z = {0};
	size_t got = 0, bad = SIZE_MAX;
	int zr;

	CHECK(inflateInit2(&z, 15 + 16) == Z_OK, "%s: inflateInit2", what);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	do {
		size_t n;

		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = inflate(&z, Z_NO_FLUSH);
		n = sizeof(chunk) - z.avail_out;
		for (size_t i = 0; i < n && bad == SIZE_MAX && got + i < want_len; i++)
			if (chunk[i] != (want ? want[got + i] : 0))
				bad = got + i;
		got += n;
	} while (zr == Z_OK);
	CHECK(zr == Z_STREAM_END, "%s: inflate ended with %d (%s)", what, zr, z.msg ? z.msg : "no message");
	CHECK(z.avail_in == 0, "%s: %u bytes after the member", what, z.avail_in);
	CHECK(got == want_len, "%s: %zu bytes inflated, %zu wanted", what, got, want_len);
	CHECK(bad == SIZE_MAX, "%s: byte %zu differs", what, bad);
	inflateEnd(&z);
}

/* IN's LEN bytes through gzip_compress_pieces in pieces of PIECE (0: gzip_compress). */
static void check_round_trip(const uint8_t *in, size_t len, size_t piece, const char *what)
{
	uint8_t *gz = NULL;
	size_t gz_len = 0;
	int err = piece ? gzip_compress_pieces(in, len, piece, &gz, &gz_len) : gzip_compress(in, len, &gz, &gz_len);

	CHECK(err == 0, "%s: gzip_compress failed: %d", what, err);
	if (!gz)
		return;
	CHECK(gz_len >= 18 && gz[0] == 0x1f && gz[1] == 0x8b, "%s: no gzip header (%zu bytes)", what, gz_len);
	check_inflates(gz, gz_len, in, len, what);
	free(gz);
}

int main(void)
{
	size_t n = 5u << 20;
	uint8_t *text = malloc(n), *gz = NULL;
	size_t gz_len = 0;
	uint32_t x = 1;

	check_round_trip((const uint8_t *)"", 0, 0, "empty");
	check_round_trip((const uint8_t *)"a", 1, 0, "one byte");
	/* Half noise (deflate stores it), half repeats (it matches them). */
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		text[i] = i < n / 2 ? (uint8_t)(x >> 24) : (uint8_t)"heapsnap "[i % 9];
	}
	check_round_trip(text, n, 0, "5 MiB");
	check_round_trip(text, n, 4093, "5 MiB in pieces of 4093");
	check_round_trip(text + n / 2 - 500, 1000, 1, "1000 bytes in pieces of 1");
	CHECK(gzip_compress_pieces(text, n, 0, &gz, &gz_len) == -EINVAL, "pieces of 0 taken");
	free(text);
	printf("%d checks, %d failed\n", checks, failures);
	return failures != 0;
}
