#!/usr/bin/env bash
# make bench's Python table (also alone: BENCH=python make bench), kept in
# bench/results/python.txt: bench/py_alloc.py under Debian's python3, natively, recorded
# in-process sampled at 512 KiB and every event (Python frames in every stack, pymalloc's
# objects through its wrapped domains), under tracemalloc with one frame (`-X tracemalloc=1`,
# what every Python user has) and under heaptrack. The workload's own CPU time (its loop,
# without start-up), median of RUNS runs, interleaved; and each recording's bytes per event
# it holds (heaptrack's: its file over the allocations and frees in it, `malloc`'s alone,
# since pymalloc's objects never reach it).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
R=$OUT/heapsnap-record
RUNS=${RUNS:-5}
N=${PY_ITERATIONS:-1000000}
PY=/usr/bin/python3
W=bench/py_alloc.py
[ -x $PY ] || { echo "bench/python.sh: no Debian $PY" >&2; exit 0; }
TMP=$(mktemp -d /tmp/heapsnap-pybench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

modes=(native sampled every tracemalloc heaptrack)
command -v heaptrack >/dev/null || modes=(native sampled every tracemalloc)
for _ in $(seq "$RUNS"); do
	for m in "${modes[@]}"; do
		case $m in
		native) $PY $W $N >"$TMP/out" ;;
		sampled) "$R" -s 512k -o "$TMP/s.hsnap" -- $PY $W $N >"$TMP/out" 2>"$TMP/err" ;;
		every) "$R" -s 0 -o "$TMP/e.hsnap" -- $PY $W $N >"$TMP/out" 2>"$TMP/err"
			grep -o 'wrote [^:]*: [0-9]* allocations, [0-9]* frees' "$TMP/err" | awk '{ print $3 + $5 }' >"$TMP/events" ;;
		tracemalloc) $PY -X tracemalloc=1 $W $N >"$TMP/out" ;;
		heaptrack) heaptrack -o "$TMP/ht" $PY $W $N >"$TMP/out" 2>/dev/null
			awk -v b="$(stat -c %s "$TMP"/ht.*)" -v e="$(zstd -dc "$TMP"/ht.* | grep -c '^[+-] ')" \
				'BEGIN { print (e > 0 ? b / e : 0) }' >>"$TMP/heaptrack.bpe"
			rm -f "$TMP"/ht* ;;
		esac
		# The recording's bytes over the events it holds, from the recorder's last line.
		case $m in sampled | every)
			awk '/: wrote .* bytes \(/ { for (i = 2; i < NF; i++) if ($i == "allocations,") a = $(i - 1); else if ($i == "frees,") f = $(i - 1); else if ($i == "bytes" && $(i + 1) ~ /^\(/) b = $(i - 1) } END { print (a + f > 0 ? b / (a + f) : 0) }' \
				"$TMP/err" >>"$TMP/$m.bpe" ;;
		esac
		awk '/^cpu/ { print $2 }' "$TMP/out" >>"$TMP/$m"
	done
done
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
nat=$(median "$TMP/native")
events=$(cat "$TMP/events")
{
	echo
	echo "Python (bench/py_alloc.py, $N iterations, $PY $($PY -c 'import platform; print(platform.python_version())')), CPU seconds of the loop, median of $RUNS runs:"
	for m in "${modes[@]}"; do
		t=$(median "$TMP/$m")
		extra=
		[ $m = every ] && extra=$(awk -v t="$t" -v n="$nat" -v e="$events" 'BEGIN { printf "  (%d events, %.0f ns each)", e, (t - n) / e * 1e9 }')
		[ -s "$TMP/$m.bpe" ] && extra+=$(printf '  %.4f bytes/event' "$(median "$TMP/$m.bpe")")
		printf '  %-12s %7.3f s  %5.2fx native%s\n' "$m" "$t" "$(awk -v a="$t" -v b="$nat" 'BEGIN { print a / b }')" "$extra"
	done
} >"$TMP/table"
cat "$TMP/table"
# The last run's table, kept with the others (the README quotes it).
{
	echo "heapsnap Python benchmark, $(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs"
	tail -n +2 "$TMP/table"
} >bench/results/python.txt
