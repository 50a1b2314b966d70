/* SPDX-License-Identifier: MIT */
/* gzip, as pprof files and OTLP's Content-Encoding: gzip take it. */
#ifndef HEAPSNAP_GZIP_H
#define HEAPSNAP_GZIP_H
#include <stddef.h>
#include <stdint.h>

/* IN's LEN bytes as one gzip member in *OUT (malloc'd, *OUT_LEN bytes); 0 or -ENOMEM, -EIO. */
int gzip_compress(const void *in, size_t len, uint8_t **out, size_t *out_len);

/* The same, handing zlib, whose counts are 32 bits, at most PIECE bytes (> 0) of input and of
 * room at a time: gzip_compress's are 1 GiB. */
int gzip_compress_pieces(const void *in, size_t len, size_t piece, uint8_t **out, size_t *out_len);
#endif
