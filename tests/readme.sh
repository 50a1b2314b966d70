# README.md: every ```sh block runs as written.

# readme_blocks FILE DIR: splits FILE's ```sh blocks into DIR/N.sh (N from 1), and writes
# DIR/index, a line per block: N, its first line in FILE, and "run" or the reason given by a
# `<!-- not run: REASON -->` comment on the line before its fence.
readme_blocks() {
	awk -v dir="$2" '
		/^<!-- not run: .* -->$/ { reason = $0; sub(/^<!-- not run: /, "", reason); sub(/ -->$/, "", reason); marked = NR; next }
		!inblock && /^```sh$/ {
			n++; inblock = 1; f = dir "/" n ".sh"; printf "" > f
			printf "%d\t%d\t%s\n", n, NR + 1, (marked == NR - 1 ? reason : "run") > (dir "/index")
			next }
		inblock && /^```$/ { inblock = 0; close(f); next }
		inblock { print > f }
		{ marked = 0 }' "$1"
}

# The quickstart's blocks run one after another in one shell (an export in one holds for the
# next), in a directory laid out as the checkout is (.output and docs linked), with only the
# system's PATH: the README's own `export PATH=...` is what finds the programs. A block fails
# the test by any command's non-zero exit (errexit, pipefail); then every file a command wrote
# with -o must be there and not empty, each recording must read (info), and each pprof
# profile must read in `go tool pprof -top`. Blocks marked not run are counted and named.
t_readme_blocks() {
	need_go
	[ -x "$T/demo" ] || skip "no $T/demo (make $T/demo)"
	local d=$TMP/readme out n line why ran notrun reasons f rc
	out=$(cd "$OUT" && pwd)
	mkdir -p "$d/blocks" "$d/run"
	readme_blocks README.md "$d/blocks"
	[ -s "$d/blocks/index" ] || die "no \`\`\`sh block in README.md"
	ln -s "$out" "$d/run/.output"
	ln -s "$(pwd)/docs" "$d/run/docs"
	ran=$(awk -F'\t' '$3 == "run"' "$d/blocks/index" | wc -l)
	notrun=$(awk -F'\t' '$3 != "run"' "$d/blocks/index" | wc -l)
	reasons=$(awk -F'\t' '$3 != "run" { printf "%sREADME.md:%d (%s)", (n++ ? "; " : ""), $2, $3 }' "$d/blocks/index")
	[ "$ran" -gt 0 ] || die "every \`\`\`sh block of README.md is marked not run"
	{
		echo 'set -eo pipefail'
		while IFS=$'\t' read -r n line why; do
			[ "$why" = run ] || continue
			echo "echo '== block $n (README.md:$line)'"
			echo ". '$d/blocks/$n.sh'"
			cat "$d/blocks/$n.sh" >>"$d/run.sh"
		done <"$d/blocks/index"
		echo "echo '== all done'"
	} >"$d/driver.sh"
	(cd "$d/run" && env -i HOME="$HOME" TERM=dumb PATH="$(dirname "$GO"):/usr/local/bin:/usr/bin:/bin" \
		bash "$d/driver.sh") >"$d/out" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || ! grep -q '^== all done$' "$d/out"; then
		tail -40 "$d/out"
		die "README.md: $(grep '^== block [0-9]* (' "$d/out" | tail -1 | cut -c4-) exited $rc"
	fi
	# Every file a block that runs writes (-o, --pprof, --base-pprof).
	for f in $(grep -v '^ *#' "$d/run.sh" | grep -oE -- '(-o|--pprof|--base-pprof) [^ ]+' | awk '{ print $2 }' | sort -u); do
		[ -s "$d/run/$f" ] || die "README.md: $f was not written, or is empty"
		case $f in
		*.hsnap) "$A" info "$d/run/$f" >/dev/null 2>"$d/err" || { cat "$d/err"; die "$f does not read"; } ;;
		*.pb.gz) go tool pprof -top "$d/run/$f" >"$d/pprof.out" 2>&1 || { cat "$d/pprof.out"; die "go tool pprof -top $f"; }
			grep -q 'flat%' "$d/pprof.out" || { cat "$d/pprof.out"; die "go tool pprof -top $f: no table"; } ;;
		*.html) grep -q '<html' "$d/run/$f" || die "$f is not HTML" ;;
		esac
		echo "checked $f"
	done
	# What the demo is known to hold (tests/workloads/demo.c): 200 x 4096 bytes in cache_insert.
	grep -q '^ *819200 .*cache_insert$' "$d/out" || { cat "$d/out"; die "README.md's top of the demo: no 819200 bytes in cache_insert"; }
	echo "NOTE: $ran blocks run, $notrun not run: $reasons"
}

ALL="$ALL t_readme_blocks"
