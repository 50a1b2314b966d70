// SPDX-License-Identifier: MIT
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <zlib.h>

#include "gzip.h"

int gzip_compress_pieces(const void *in, size_t len, size_t piece, uint8_t **out, size_t *out_len)
{
	const uint8_t *src = in;
	size_t left = len, cap;
	z_stream z = {0};
	uint8_t *buf;
	int zr;

	if (!piece || piece > UINT_MAX)
		return -EINVAL;
	/* windowBits 15 + 16: a gzip wrapper, not zlib's. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	/* Enough for any input at once, so that deflate never waits for room. */
	cap = deflateBound(&z, (uLong)len);
	if (cap < len || !(buf = malloc(cap))) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_out = buf;
	do {
		size_t n = left < piece ? left : piece;
		size_t room = cap - (size_t)(z.next_out - buf);

		z.next_in = (Bytef *)src;
		z.avail_in = (uInt)n;
		z.avail_out = (uInt)(room < piece ? room : piece);
		zr = deflate(&z, n == left ? Z_FINISH : Z_NO_FLUSH);
		n -= z.avail_in;
		src += n;
		left -= n;
	} while (zr == Z_OK);
	*out_len = (size_t)(z.next_out - buf);
	deflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	return 0;
}

int gzip_compress(const void *in, size_t len, uint8_t **out, size_t *out_len)
{
	return gzip_compress_pieces(in, len, (size_t)1 << 30, out, out_len);
}
