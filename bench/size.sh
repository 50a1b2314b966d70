#!/usr/bin/env bash
# docs/FORMAT.md's Size table: every event recorded in-process with the default options and under
# heaptrack, one after the other, RUNS times each; the median file of each, in bytes and bytes per
# event (over the allocations and frees the file holds: the recorder's count, and heaptrack's +
# and - lines). Sizes, not times: a busy machine changes them only by where a frame ends.
# Usage: bench/size.sh [RUNS [PATTERN]]   (OUTPUT=.output by default; PATTERN: the workloads whose
# names hold it)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
RUNS=${1:-3}
ONLY=${2:-}
R=$OUT/heapsnap-record
B=$OUT/bench
TMP=$(mktemp -d /tmp/heapsnap-size.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
command -v heaptrack >/dev/null || { echo "size.sh: heaptrack is not installed (scripts/install-deps.sh)" >&2; exit 1; }

median() { sort -n | awk '{v[NR] = $0} END {print v[int((NR + 1) / 2)]}'; }

# NAME|ENV|COMMAND: ENV is one VAR=VALUE or -, given to the command under both recorders.
WORKLOADS=(
	"churn|-|$B/workload churn 300000"
	"mt2|-|$B/workload mt 2 300000"
	"mt8|-|$B/workload mt 8 300000"
	"cxx|-|$B/workload_cxx 200000"
	"sqlite3 1M-row index|-|sqlite3 :memory: -init bench/index.sql .quit"
	"git log -p -n 300 --stat|-|git -C $PWD log -p -n 300 --stat"
	"python3 py_json.py|-|/usr/bin/python3 bench/py_json.py"
	"python3 py_json.py, PYTHONMALLOC=malloc|PYTHONMALLOC=malloc|/usr/bin/python3 bench/py_json.py"
)
printf '%-42s %12s %18s %18s %8s\n' workload events heapsnap heaptrack ratio
for w in "${WORKLOADS[@]}"; do
	IFS='|' read -r name env cmd <<<"$w"
	[[ "$name" == *"$ONLY"* ]] || continue
	envs=()
	[ "$env" != - ] && envs=("$env")
	: >"$TMP/hs" && : >"$TMP/ht"
	for i in $(seq 1 "$RUNS"); do
		env "${envs[@]}" "$R" -o "$TMP/f.hsnap" -- $cmd </dev/null >/dev/null 2>"$TMP/rec.err" ||
			{ tail -3 "$TMP/rec.err"; exit 1; }
		# A recording that lost events measures nothing: say so beside the figures.
		grep -E "warning: .*(lost|stopped|gave up)" "$TMP/rec.err" | sed "s/^/  run $i: /" || true
		# "wrote F: A allocations, F frees, ..."
		ev=$(sed -n 's/.*: \([0-9]*\) allocations, \([0-9]*\) frees,.*/\1 \2/p' "$TMP/rec.err" | awk '{print $1 + $2}')
		echo "$(stat -c %s "$TMP/f.hsnap") $ev" >>"$TMP/hs"
		rm -f "$TMP"/ht.*
		env "${envs[@]}" heaptrack -o "$TMP/ht" $cmd </dev/null >/dev/null 2>&1 || { echo "heaptrack failed: $cmd" >&2; exit 1; }
		f=$(ls "$TMP"/ht.*)
		ev=$(zstd -dc "$f" | grep -c '^[+-] ' || true)
		echo "$(stat -c %s "$f") $ev" >>"$TMP/ht"
	done
	hs=$(awk '{print $1}' "$TMP/hs" | median); hse=$(awk '{print $2}' "$TMP/hs" | median)
	ht=$(awk '{print $1}' "$TMP/ht" | median); hte=$(awk '{print $2}' "$TMP/ht" | median)
	printf '%-42s %12s %9s (%.3g) %9s (%.3g) %8.2f\n' "$name" "$hse" "$hs" "$(echo "$hs / $hse" | bc -l)" \
		"$ht" "$(echo "$ht / $hte" | bc -l)" "$(echo "($hs / $hse) / ($ht / $hte)" | bc -l)"
	[ "$hte" != "$hse" ] && echo "  (heaptrack holds $hte events)"
	echo "  runs (bytes events): heapsnap $(paste -sd, "$TMP/hs"); heaptrack $(paste -sd, "$TMP/ht")"
done
