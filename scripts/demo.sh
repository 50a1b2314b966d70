#!/usr/bin/env bash
# `make demo`: records the bundled demo workload (in-process, the default for a command: no
# root needed), then writes a pprof profile, collapsed stacks, a text top report and the
# HTML report into .output/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
D=$OUT/demo
mkdir -p "$D"
echo "== recording $OUT/tests/demo (a toy request handler; see tests/workloads/demo.c)"
"$OUT/heapsnap-record" -v --interval 0.05 --snapshot-at-peak -o "$D/demo.hsnap" -- "$OUT/tests/demo" 2>&1 |
	grep -v "^libbpf"
echo
echo "== heapsnap-analyze info"
"$OUT/heapsnap-analyze" info "$D/demo.hsnap" | sed -n '1,8p'
"$OUT/heapsnap-analyze" pprof -o "$D/demo.pb.gz" "$D/demo.hsnap"
"$OUT/heapsnap-analyze" collapsed --value alloc_space -o "$D/demo.collapsed" "$D/demo.hsnap"
"$OUT/heapsnap-analyze" top -n 10 -o "$D/demo.top.txt" "$D/demo.hsnap"
"$OUT/heapsnap-analyze" html -o "$D/demo.html" "$D/demo.hsnap"
echo
echo "== top (live bytes at exit)"
cat "$D/demo.top.txt"
echo
echo "== growth from the first snapshot to exit"
"$OUT/heapsnap-analyze" diff -n 5 --from 1 --to exit "$D/demo.hsnap" | sed -n '1,12p'
echo
echo "Wrote $D/demo.html (open it in a browser: the heap over time, flame graphs, tables),"
echo "$D/demo.pb.gz (pprof), $D/demo.collapsed (flame graphs), $D/demo.top.txt"
echo "View the profile with:"
echo "  go tool pprof -http=:8080 $D/demo.pb.gz"
