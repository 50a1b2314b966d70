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
# A Python program's recording, crafted (tests/unit/craft_py.c: its figures) with Debian's
# python3.11's line tables of tests/workloads/py_exact.py, its codes naming /srv/app/py_exact.py.
p=testdata/py_exact.hsnap
py_line() { grep -n -- "$1" tests/workloads/py_exact.py | head -1 | cut -d: -f1; }
eval "$(sed -n '/^py_specs() {/,/^}/p' tests/python.sh)"
/usr/bin/python3 tests/pylines.py --code "$(realpath tests/workloads/py_exact.py)" '<module>' main keep_large keep_small \
	chain_a chain_b chain_c worker key_fn sort_with_key >"$OUT/py_exact.codes"
"$OUT/tests/craft_py" $p "$OUT/py_exact.codes" /srv/app/py_exact.py a $(py_specs)
"$A" top -n 0 $p >testdata/py_exact.top
"$A" collapsed $p >testdata/py_exact.collapsed
"$A" leaks -n 4 $p >testdata/py_exact.leaks
echo "regenerated testdata/ from $f and $p"
