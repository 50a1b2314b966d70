// SPDX-License-Identifier: MIT
/* unwdump FILE: reads link-time addresses (hex, one per line) on stdin and prints the rule
 * heapsnap's unwind table (common/unwtab.c, from .eh_frame and .debug_frame, as the recorder
 * builds it) gives each, as readelf -wF writes rules:
 *   ADDR rsp+N|rbp+N|none|end|expr  c-N|u|same|lost
 * tests/unwcheck.py compares them with readelf's own reading. Each address is also looked up
 * without a table (unwtab__lookup(), through .eh_frame_hdr, as the in-process recorder does),
 * and "MISMATCH" printed where that differs from a table of .eh_frame alone. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwtab.h"

int main(int argc, char **argv)
{
	size_t shstr;
	Elf_Scn *scn = NULL, *hscn = NULL, *dscn = NULL;
	GElf_Shdr sh, hsh, dsh;
	Elf_Data *d, *hd = NULL, *dd = NULL;
	struct hs_unw_row *rows, *eh_rows;
	long bound, n, eh_bound, eh_n;
	char line[64];
	Elf *e;
	int fd;

	if (argc != 2 || elf_version(EV_CURRENT) == EV_NONE)
		return 2;
	fd = open(argv[1], O_RDONLY);
	e = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getshdrstrndx(e, &shstr))
		return 2;
	while ((hscn = elf_nextscn(e, hscn)))
		if (gelf_getshdr(hscn, &hsh) && !strcmp(elf_strptr(e, shstr, hsh.sh_name), ".eh_frame_hdr"))
			break;
	if (hscn)
		hd = elf_rawdata(hscn, NULL);
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(e, shstr, sh.sh_name), ".eh_frame"))
			break;
	if (!scn || !(d = elf_rawdata(scn, NULL)))
		return 3;
	while ((dscn = elf_nextscn(e, dscn)))
		if (gelf_getshdr(dscn, &dsh) && !strcmp(elf_strptr(e, shstr, dsh.sh_name), ".debug_frame"))
			break;
	if (dscn && !(dsh.sh_flags & SHF_COMPRESSED))
		dd = elf_rawdata(dscn, NULL);
	bound = unwtab__build_file(d->d_buf, d->d_size, sh.sh_addr, dd ? dd->d_buf : NULL, dd ? dd->d_size : 0, NULL, 0);
	rows = bound > 0 ? calloc((size_t)bound, sizeof(*rows)) : NULL;
	n = rows ? unwtab__build_file(d->d_buf, d->d_size, sh.sh_addr, dd ? dd->d_buf : NULL, dd ? dd->d_size : 0, rows,
				      (uint64_t)bound)
		 : -1;
	eh_bound = unwtab__build(d->d_buf, d->d_size, sh.sh_addr, NULL, 0);
	eh_rows = eh_bound > 0 ? calloc((size_t)eh_bound, sizeof(*eh_rows)) : NULL;
	eh_n = eh_rows ? unwtab__build(d->d_buf, d->d_size, sh.sh_addr, eh_rows, (uint64_t)eh_bound) : -1;
	if (n <= 0 || eh_n <= 0) {
		fprintf(stderr, "unwdump: %s: %ld, %ld\n", argv[1], n, eh_n);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		uint64_t pc = strtoull(line, NULL, 16);
		const struct hs_unw_row *r = unwtab__find(rows, (uint32_t)n, pc);
		const struct hs_unw_row *er = unwtab__find(eh_rows, (uint32_t)eh_n, pc);
		struct hs_unw_row l;
		char cfa[32], fp[32];
		int lr = hd ? unwtab__lookup(hd->d_buf, hd->d_size, hsh.sh_addr, d->d_buf, d->d_size, sh.sh_addr, pc, &l)
			    : -ENOENT;

		/* The table's gap rows are what a lookup finds no FDE for. */
		if (hd && (lr ? er && er->cfa != HS_UNW_NONE
			      : !er || l.cfa != er->cfa || l.cfa_off != er->cfa_off || l.fp != er->fp || l.fp_off != er->fp_off))
			printf("MISMATCH %" PRIx64 " lookup %d\n", pc, lr);
		if (!r || r->cfa == HS_UNW_NONE)
			snprintf(cfa, sizeof(cfa), "none");
		else if (r->cfa == HS_UNW_END)
			snprintf(cfa, sizeof(cfa), "end");
		else if (r->cfa == HS_UNW_EXPR)
			snprintf(cfa, sizeof(cfa), "expr");
		else
			snprintf(cfa, sizeof(cfa), "%s+%d", r->cfa == HS_UNW_CFA_SP ? "rsp" : "rbp", r->cfa_off);
		if (!r || r->fp == HS_UNW_FP_SAME)
			snprintf(fp, sizeof(fp), "same");
		else if (r->fp == HS_UNW_FP_AT)
			snprintf(fp, sizeof(fp), "c%d", r->fp_off);
		else
			snprintf(fp, sizeof(fp), "lost");
		printf("%" PRIx64 " %s %s\n", pc, cfa, fp);
	}
	free(rows);
	free(eh_rows);
	elf_end(e);
	return 0;
}
