/* SPDX-License-Identifier: MIT */
/* analyzer/report.html, the HTML report's page, as bytes in the program (html.c fills it in). */
	.section .rodata
	.globl	hs_html_page
	.type	hs_html_page, @object
hs_html_page:
	.incbin	"analyzer/report.html"
	.globl	hs_html_page_end
hs_html_page_end:
	.byte	0
	.section .note.GNU-stack,"",@progbits
