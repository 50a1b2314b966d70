#!/usr/bin/env bash
# make bench's Python tables (also alone: BENCH=python make bench), kept in
# bench/results/python.txt: two workloads under Debian's python3, bench/py_alloc.py (a loop of
# allocations) and bench/py_render.py (a template engine rendering HTML pages from real-looking
# data), each natively, recorded in-process sampled at 512 KiB and every event (Python frames in
# every stack, pymalloc's objects through its wrapped domains), under tracemalloc with one frame
# (`-X tracemalloc=1`, what every Python user has), under heaptrack, and under memray (pinned,
# from PyPI, in the venv of scripts/py-venv.sh, whose python is this same /usr/bin/python3) in
# its three modes: `memray run` (malloc's calls with Python stacks, no pymalloc object),
# `--native` (and native stacks) and `--native --trace-python-allocators` (pymalloc's objects
# too: what heapsnap every event sees). The workload's own CPU time (its loop, without start-up
# nor the profilers' work at exit): the median of PY_RUNS rounds (21) for native, the floor and
# sampled, whose differences are a few percent (for the floor and sampled, also the median of
# their rounds' ratios to native), of the first PY_SLOW_RUNS (7) for the others, each round's
# modes interleaved, its workload's thread pinned to one CPU (bench/py_pin.py), the next
# round's to the next; and each recording's bytes
# per event it holds (heaptrack's: its file over the allocations and frees in it, `malloc`'s
# alone, since pymalloc's objects never reach it; memray's: its file as `memray run` leaves it,
# lz4-compressed at exit, over the allocations and frees in its header, from the first run).
# Without the venv (scripts/py-venv.sh failed) the memray rows are left out, and said. The
# floor (pyfloor) is heapsnap sampled with the Makefile's bench/pyfloor/libheapsnap.so, whose
# pass-by of the domains only jumps to pymalloc: what any wrapper of them costs (Debian's
# python3.11 inlines pymalloc only where a domain holds pymalloc's own function), beside what
# the countdown adds; left out when that library was not built (make bench builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
R=$OUT/heapsnap-record
RUNS=${PY_RUNS:-21}
SLOW_RUNS=${PY_SLOW_RUNS:-7}
[ "$SLOW_RUNS" -le "$RUNS" ] || SLOW_RUNS=$RUNS
N=${PY_ITERATIONS:-1000000}
PAGES=${PY_PAGES:-6000}
PY=/usr/bin/python3
[ -x $PY ] || { echo "bench/python.sh: no Debian $PY" >&2; exit 0; }
TMP=$(mktemp -d /tmp/heapsnap-pybench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

FLOOR_LIB=$OUT/bench/pyfloor/libheapsnap.so
modes=(native)
[ -f "$FLOOR_LIB" ] && modes+=(pyfloor)
modes+=(sampled every tracemalloc)
command -v heaptrack >/dev/null && modes+=(heaptrack)
MEMRAY_NOTE=
if VENV=$(scripts/py-venv.sh 2>"$TMP/venv.err"); then
	MPY=$VENV/bin/python
	modes+=(memray memray-nat memray-natpy)
else
	MEMRAY_NOTE="  (no memray rows: $(tail -1 "$TMP/venv.err"))"
fi

# The workloads: NAME (a file under bench/) and its arguments.
workloads=("py_alloc.py $N" "py_render.py $PAGES")

# bpe MODE FILE EVENTS: FILE's bytes over EVENTS, appended to MODE's figures.
bpe() { awk -v b="$(stat -c %s "$2")" -v e="$3" 'BEGIN { print (e > 0 ? b / e : 0) }' >>"$TMP/$W.$1.bpe"; }

for wl in "${workloads[@]}"; do
	W=${wl%% *}
	args=${wl#* }
	for run in $(seq "$RUNS"); do
		# The modes measured fine (a few percent apart) every round, the others in the first.
		round=()
		for m in "${modes[@]}"; do
			case $m in
			native | pyfloor | sampled) round+=("$m") ;;
			*) if [ "$run" -le "$SLOW_RUNS" ]; then round+=("$m"); fi ;;
			esac
		done
		# Each round in an order turned by one, so that no mode always follows the same one
		# (a heavy run's file written back, or memory given back, lands on the next).
		export HEAPSNAP_BENCH_CPU=$run
		for k in "${!round[@]}"; do
			m=${round[$(((k + run) % ${#round[@]}))]}
			case $m in
			native) $PY bench/$W $args >"$TMP/out" ;;
			pyfloor) HEAPSNAP_LIB=$FLOOR_LIB "$R" -s 512k -o "$TMP/s.hsnap" -- $PY bench/$W $args >"$TMP/out" 2>"$TMP/err" ;;
			sampled) "$R" -s 512k -o "$TMP/s.hsnap" -- $PY bench/$W $args >"$TMP/out" 2>"$TMP/err" ;;
			every) "$R" -s 0 -o "$TMP/e.hsnap" -- $PY bench/$W $args >"$TMP/out" 2>"$TMP/err"
				grep -o 'wrote [^:]*: [0-9]* allocations, [0-9]* frees' "$TMP/err" | awk '{ print $3 + $5 }' >"$TMP/$W.events" ;;
			tracemalloc) $PY -X tracemalloc=1 bench/$W $args >"$TMP/out" ;;
			heaptrack) heaptrack -o "$TMP/ht" $PY bench/$W $args >"$TMP/out" 2>/dev/null
				bpe heaptrack "$(ls "$TMP"/ht.*)" "$(zstd -dc "$TMP"/ht.* | grep -c '^[+-] ')"
				rm -f "$TMP"/ht* ;;
			memray*)
				flags=
				case $m in memray-nat) flags=--native ;; memray-natpy) flags="--native --trace-python-allocators" ;; esac
				rm -f "$TMP/m.bin"
				# Its own warnings ("Correcting symbol for malloc") to stderr, left out.
				"$MPY" -m memray run -q $flags -o "$TMP/m.bin" bench/$W $args >"$TMP/out" 2>"$TMP/err" ||
					{ cat "$TMP/err" >&2; exit 1; }
				# Reading the header decompresses the whole file: the first run's alone.
				[ "$run" = 1 ] && bpe $m "$TMP/m.bin" "$("$MPY" -c 'import memray, sys
print(memray.FileReader(sys.argv[1]).metadata.total_allocations)' "$TMP/m.bin")"
				;;
			esac
			# The recording's bytes over the events it holds, from the recorder's last line.
			case $m in sampled | every)
				awk '/: wrote .* bytes \(/ { for (i = 2; i < NF; i++) if ($i == "allocations,") a = $(i - 1); else if ($i == "frees,") f = $(i - 1); else if ($i == "bytes" && $(i + 1) ~ /^\(/) b = $(i - 1) } END { print (a + f > 0 ? b / (a + f) : 0) }' \
					"$TMP/err" >>"$TMP/$W.$m.bpe" ;;
			esac
			awk '/^cpu/ { print $2 }' "$TMP/out" >>"$TMP/$W.$m"
		done
	done
done
unset HEAPSNAP_BENCH_CPU
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# The median over the rounds of MODE's time over native's in the same round: what drifts
# between rounds (this machine's neighbours) moves both alike.
paired() { paste "$TMP/$W.native" "$TMP/$W.$1" | awk '$1 > 0 { print $2 / $1 }' >"$TMP/$W.$1.ratio"; median "$TMP/$W.$1.ratio"; }

# Sampling's cost in instructions, which the machine's noise does not move (cachegrind): the
# whole process natively and sampled at 512 KiB, on shorter runs (PY_CG_ITERATIONS, PY_CG_PAGES).
# Without ASLR (setarch -R), as bench.sh's counted sample: under valgrind the library's pool
# reservation may fail otherwise. PYTHONHASHSEED=0: with its hashes drawn anew, the same run
# natively counted 10M instructions more or less from one run to the next.
CG_N=${PY_CG_ITERATIONS:-300000}
CG_PAGES=${PY_CG_PAGES:-1500}
cg_refs() { awk '/I +refs:/ { gsub(",", "", $NF); v = $NF } END { print v + 0 }' "$1"; }
# cg_run OUT [RECORDER ARGS -- ]: the workload counted, under the recorder if asked; valgrind's
# report in OUT.
cg_run() {
	local out=$1
	shift
	PYTHONHASHSEED=0 setarch -R "$@" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
		$PY bench/$W $args >/dev/null 2>"$out"
}
if command -v valgrind >/dev/null && command -v setarch >/dev/null; then
	for wl in "py_alloc.py $CG_N" "py_render.py $CG_PAGES"; do
		W=${wl%% *}
		args=${wl#* }
		cg_run "$TMP/cg.n"
		cg_run "$TMP/cg.s" "$R" -s 512k -o "$TMP/cg.hsnap" --
		: >"$TMP/cg.f"
		[ -f "$FLOOR_LIB" ] && cg_run "$TMP/cg.f" env HEAPSNAP_LIB="$FLOOR_LIB" "$R" -s 512k -o "$TMP/cg.hsnap" --
		echo "$args $(cg_refs "$TMP/cg.n") $(cg_refs "$TMP/cg.s") $(cg_refs "$TMP/cg.f")" >"$TMP/$W.cg"
	done
fi
{
	for wl in "${workloads[@]}"; do
		W=${wl%% *}
		nat=$(median "$TMP/$W.native")
		events=$(cat "$TMP/$W.events")
		echo
		case $W in
		py_alloc.py) what="$N iterations" ;;
		*) what="$PAGES pages" ;;
		esac
		echo "Python (bench/$W, $what, $PY $($PY -c 'import platform; print(platform.python_version())')), CPU seconds of the loop,"
		echo "median of $RUNS rounds (native, pyfloor, sampled) or of $SLOW_RUNS (the others), each round on one CPU:"
		for m in "${modes[@]}"; do
			t=$(median "$TMP/$W.$m")
			extra=
			[ $m = every ] && extra=$(awk -v t="$t" -v n="$nat" -v e="$events" 'BEGIN { printf "  (%d events, %.0f ns each)", e, (t - n) / e * 1e9 }')
			[ -s "$TMP/$W.$m.bpe" ] && extra+=$(printf '  %.4f bytes/event' "$(median "$TMP/$W.$m.bpe")")
			case $m in pyfloor | sampled) extra+=$(printf '  (%.3fx round by round)' "$(paired $m)") ;; esac
			printf '  %-12s %7.3f s  %5.2fx native%s\n' "$m" "$t" "$(awk -v a="$t" -v b="$nat" 'BEGIN { print a / b }')" "$extra"
		done
		if [ -s "$TMP/$W.cg" ] && read -r cga cgn cgs cgf <"$TMP/$W.cg" && [ "$cgn" -gt 0 ]; then
			printf '  sampled in instructions (cachegrind, %s): %.3fx native (%d, %d)' "$cga" \
				"$(awk -v a="$cgs" -v b="$cgn" 'BEGIN { print a / b }')" "$cgn" "$cgs"
			[ "$cgf" -gt 0 ] && printf '; the floor %.3fx (%d)' "$(awk -v a="$cgf" -v b="$cgn" 'BEGIN { print a / b }')" "$cgf"
			echo
		fi
	done
	echo
	if [ -n "$MEMRAY_NOTE" ]; then
		echo "$MEMRAY_NOTE"
	else
		echo "  memray $("$MPY" -c 'import memray; print(memray.__version__)' 2>/dev/null): memray = \`memray run\`, memray-nat = --native,"
		echo "  memray-natpy = --native --trace-python-allocators (pymalloc's objects too, as every event)"
	fi
	if [[ " ${modes[*]} " == *" pyfloor "* ]]; then
		echo "  pyfloor = sampled, its pass-by of Python's domains a bare jump to pymalloc (no countdown):"
		echo "  what any wrapper of them costs here"
	fi
} >"$TMP/table"
cat "$TMP/table"
# The last run's table, kept with the others (the README quotes it).
{
	echo "heapsnap Python benchmark, $(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs"
	tail -n +2 "$TMP/table"
} >bench/results/python.txt
