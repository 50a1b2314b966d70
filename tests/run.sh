#!/usr/bin/env bash
# heapsnap test runner. Every test compares against figures known independently of the
# code under test: the exact sizes the workloads in tests/workloads allocate (see their
# header comments), `go tool pprof` reading our output, and golden files in testdata/.
# Ends with one line: N passed, N failed, N skipped. Exits non-zero on any failure. A test that
# passes may say one thing more on its PASS line: its log's first line starting "NOTE: ".
#
#   tests/run.sh [SUBSTRING]   runs the tests whose names (or old names, below) contain SUBSTRING
#   tests/run.sh --list        lists every test, its old name beside it where it has one
#
# The tests live in files by area, each registering its own on `ALL="$ALL ..."` lines:
# lib.sh (helpers), format.sh, analyzer.sh, live.sh, live_view.sh (the view in tmux),
# export.sh (to a Collector, Pyroscope's /ingest, a folder),
# security.sh, ways.sh (tests of every way in), bpf.sh, preload.sh (--via preload),
# inject.sh, inject_real.sh, realprog.sh, units.sh,
# python.sh, python_memray.sh (memray as a second oracle), install.sh, readme.sh (README.md's
# shell blocks, run as written).
#
# Names: t_AREA_WHAT is one test (t_bpf_errors, t_inject_wake, t_analyzer_html...). A test
# written once for every way in is one function, t_WHAT, registered once per way as
# t_WHAT@WAY (t_c_exact@bpf, t_c_exact@preload): run sets VIA to WAY and calls t_WHAT, which
# records through `record` or "$R" --via "$VIA". Its old name t_WAY_WHAT (t_bpf_c_exact,
# t_preload_c_exact) still selects it, so `tests/run.sh t_preload` runs everything recorded
# in-process, `tests/run.sh @bpf` the tests of every way run with BPF, and
# `tests/run.sh c_exact` both ways of one test.
set -u
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
R=$OUT/heapsnap-record
A=$OUT/heapsnap-analyze
T=$OUT/tests
TMP=$(mktemp -d /tmp/heapsnap-tests.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
PASS=0 FAIL=0 SKIP=0
# The way in the recording tests use: bpf, or the WAY of a t_WHAT@WAY test.
VIA=bpf
ONLY=${1:-}
ALL=

# old_name NAME: t_WHAT@WAY was t_WAY_WHAT before tests of every way were written once.
old_name() { local fn=${1%@*}; [[ "$1" == *@* ]] && echo "t_${1#*@}_${fn#t_}"; }

run() {
	local name=$1 fn=${1%@*} way= rc
	[[ "$name" == *@* ]] && way=${name#*@}
	[ -n "$ONLY" ] && [[ "$name" != *"$ONLY"* ]] && [[ "$(old_name "$name")" != *"$ONLY"* ]] && return
	(set -u; [ -n "$way" ] && VIA=$way; "$fn") >"$TMP/$name.log" 2>&1
	rc=$?
	case $rc in
	0) PASS=$((PASS + 1)); echo "PASS $name$(grep -m1 '^NOTE: ' "$TMP/$name.log" | sed 's/^NOTE//')" ;;
	77) SKIP=$((SKIP + 1)); echo "SKIP $name: $(grep -m1 '^SKIP:' "$TMP/$name.log" | cut -c7-)" ;;
	*) FAIL=$((FAIL + 1)); echo "FAIL $name (exit $rc)"; tail -30 "$TMP/$name.log" | sed 's/^/    /' ;;
	esac
}

for area in lib format analyzer live live_view export security ways bpf preload inject inject_real realprog units python python_memray install readme; do
	. "tests/$area.sh"
done

# --list also finds a test registered without its function, and a t_* function registered
# under no name (an ALL line forgotten), either of which fails it.
if [ "$ONLY" = --list ]; then
	for t in $ALL; do
		declare -F "${t%@*}" >/dev/null || { echo "$t: no function ${t%@*}" >&2; exit 1; }
		echo "$t $(old_name "$t")"
	done
	for t in $(declare -F | awk '$3 ~ /^t_/ { print $3 }'); do
		[[ " $ALL " == *" $t "* || " $ALL " == *" $t@"* ]] || { echo "$t: registered on no ALL line" >&2; exit 1; }
	done
	return 0 2>/dev/null || exit 0
fi

bpf_check
[ -z "$ONLY" ] && echo "go tool pprof: ${GO:-none} ($([ -n "$GO" ] && "$GO" version))"
for t in $ALL; do
	run $t
done
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ $FAIL -eq 0 ]
