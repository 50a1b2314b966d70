#!/usr/bin/env bash
# The Python virtual environment of the bench and the tests: memray (and pytest-memray) from
# PyPI, at the versions scripts/py-venv.txt pins, wheels only, in
# ${HEAPSNAP_CACHE:-$HOME/.cache/heapsnap}/venv, made by Debian's /usr/bin/python3 -m venv: its
# python is Debian's python3.11 itself (a link), the interpreter bench/python.sh times natively,
# so memray's figures are of the same interpreter. Never installs into Debian's python3.
#
#   scripts/py-venv.sh     makes or updates the venv (nothing to do when its pins are the
#                          file's), then prints its path; on failure says why on stderr, exit 1
# Called by scripts/install-deps.sh; bench/python.sh and tests/python_memray.sh call it too,
# and go on without memray (the bench) or skip (the test) when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
VENV=${HEAPSNAP_CACHE:-$HOME/.cache/heapsnap}/venv
PINS=$PWD/scripts/py-venv.txt

[ -x $PY ] || { echo "py-venv: no Debian $PY" >&2; exit 1; }
mkdir -p "$(dirname "$VENV")"
# One maker at a time (the bench and the tests may both ask).
exec 9>"$VENV.lock"
flock 9
if [ -x "$VENV/bin/memray" ] && cmp -s "$PINS" "$VENV/heapsnap-pins.txt"; then
	echo "$VENV"
	exit 0
fi
echo "py-venv: making $VENV (memray $(awk -F'==' '$1 == "memray" { print $2 }' "$PINS") from PyPI)" >&2
rm -rf "$VENV"
$PY -m venv "$VENV" >"$VENV.log" 2>&1 ||
	{ tail -3 "$VENV.log" >&2; echo "py-venv: $PY -m venv failed (Debian's python3-venv missing?)" >&2; rm -rf "$VENV"; exit 1; }
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: -r "$PINS" >>"$VENV.log" 2>&1 ||
	{ tail -3 "$VENV.log" >&2; echo "py-venv: pip install -r $PINS failed (see $VENV.log)" >&2; rm -rf "$VENV"; exit 1; }
"$VENV/bin/python" -c 'import memray' >>"$VENV.log" 2>&1 ||
	{ tail -3 "$VENV.log" >&2; echo "py-venv: memray does not import in $VENV" >&2; rm -rf "$VENV"; exit 1; }
cp "$PINS" "$VENV/heapsnap-pins.txt"
echo "$VENV"
