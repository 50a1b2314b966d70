#!/usr/bin/env bash
# Re-records testdata/alloc_c.hsnap with the real recorder and regenerates the golden
# outputs that tests/run.sh compares against. Review the diff before committing: the
# figures must match the table at the top of tests/workloads/alloc_c.c. testdata/v1/ is not
# touched: it holds a recording made by format version 1 and what version 1 printed for it.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
make --no-print-directory all test-programs >/dev/null
A=$OUT/heapsnap-analyze
f=testdata/alloc_c.hsnap
"$OUT/heapsnap-record" -o $f -- "$OUT/tests/alloc_c"
"$A" top -n 0 --no-symbolize $f >testdata/alloc_c.top
"$A" top -n 0 --no-symbolize --value alloc_space $f >testdata/alloc_c.alloc.top
"$A" collapsed --no-symbolize $f >testdata/alloc_c.collapsed
"$A" summary --no-symbolize $f >testdata/alloc_c.summary
"$A" leaks -n 5 --no-symbolize $f >testdata/alloc_c.leaks
"$A" info $f >testdata/alloc_c.info
"$A" summary --json --no-symbolize $f >testdata/alloc_c.summary.json
echo "regenerated testdata/ from $f"
