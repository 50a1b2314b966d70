# Installing: make install into a DESTDIR, and what it installs.

# make install into a DESTDIR: both programs, the library where the recorder looks for it, man
# pages that man renders (made from --help, so every option is in them), bash completion.
t_install() {
	command -v man >/dev/null || skip "no man (man-db) to render the pages"
	make --no-print-directory -s install OUTPUT="$OUT" DESTDIR="$TMP/inst" PREFIX=/usr >"$TMP/inst.log" 2>&1 ||
		{ cat "$TMP/inst.log"; die "make install"; }
	local d=$TMP/inst/usr f opt
	for f in bin/heapsnap-record bin/heapsnap-analyze lib/heapsnap/libheapsnap.so share/man/man1/heapsnap-record.1 \
		share/man/man1/heapsnap-analyze.1 share/bash-completion/completions/heapsnap-record \
		share/bash-completion/completions/heapsnap-analyze; do
		[ -s "$d/$f" ] || die "make install did not install $f"
	done
	MANWIDTH=100 man -l "$d/share/man/man1/heapsnap-record.1" >"$TMP/rec.man" 2>"$TMP/man.err" || { cat "$TMP/man.err"; die "man -l"; }
	MANWIDTH=100 man -l "$d/share/man/man1/heapsnap-analyze.1" >"$TMP/ana.man" 2>>"$TMP/man.err" || { cat "$TMP/man.err"; die "man -l"; }
	[ -s "$TMP/man.err" ] && { cat "$TMP/man.err"; die "man complained"; }
	contains "$TMP/rec.man" "heapsnap-record - record the heap allocations"
	contains "$TMP/ana.man" "EXAMPLES"
	# Every long option of --help is in the rendered page.
	for opt in $("$R" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
		grep -qF -- "$opt" "$TMP/rec.man" || die "$opt missing from heapsnap-record(1)"
	done
	for opt in $("$A" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
		grep -qF -- "$opt" "$TMP/ana.man" || die "$opt missing from heapsnap-analyze(1)"
	done
	# The installed recorder finds the installed library (../lib/heapsnap).
	"$d/bin/heapsnap-record" --via preload -o "$TMP/inst.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/inst.err" ||
		{ cat "$TMP/inst.err"; die "the installed recorder"; }
	"$d/bin/heapsnap-analyze" top "$TMP/inst.hsnap" 2>/dev/null | grep -q "^ *10000 .*leak_malloc$" || die "installed: leak_malloc"
	# Completion of subcommands, options and option values.
	bash -c 'source "$1/share/bash-completion/completions/heapsnap-analyze"
		COMP_WORDS=("$1/bin/heapsnap-analyze" pp); COMP_CWORD=1; _heapsnap_analyze; echo "${COMPREPLY[*]}"
		COMP_WORDS=("$1/bin/heapsnap-record" --sta); COMP_CWORD=1; _heapsnap_record; echo "${COMPREPLY[*]}"
		COMP_WORDS=("$1/bin/heapsnap-record" --via ""); COMP_CWORD=2; _heapsnap_record; echo "${COMPREPLY[*]}"' _ "$d" >"$TMP/comp"
	eq "completion: heapsnap-analyze pp" pprof "$(sed -n 1p "$TMP/comp")"
	eq "completion: heapsnap-record --sta" "--stack --stack-cache --stats" "$(sed -n 2p "$TMP/comp")"
	eq "completion: heapsnap-record --via" "auto preload inject bpf" "$(sed -n 3p "$TMP/comp")"
}

ALL="$ALL t_install"
