#!/usr/bin/env bash
# heapsnap test runner. Every test compares against figures known independently of the
# code under test: the exact sizes the workloads in tests/workloads allocate (see their
# header comments), `go tool pprof` reading our output, and golden files in testdata/.
# Ends with one line: N passed, N failed, N skipped. Exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
R=$OUT/heapsnap-record
A=$OUT/heapsnap-analyze
T=$OUT/tests
TMP=$(mktemp -d /tmp/heapsnap-tests.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
PASS=0 FAIL=0 SKIP=0
# The way in the recording tests use: bpf, or preload for the t_preload_* runs of the same tests.
VIA=bpf
ONLY=${1:-}

# ---- helpers (each test runs in a subshell: `die` ends only that test) ----
die() { echo "FAILED: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
eq() { [ "$2" = "$3" ] || die "$1: expected '$2', got '$3'"; }
# within NAME EXPECTED ACTUAL PERCENT
within() {
	awk -v e="$2" -v a="$3" -v p="$4" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(e > 0 && d <= e * p / 100) }' ||
		die "$1: expected $2 +-$4%, got $3"
}
contains() { grep -qF -- "$2" "$1" || { echo "--- $1:"; head -50 "$1"; die "'$2' not found in $1"; }; }

# pv FILE SAMPLE_INDEX FUNCTION [flat|cum]: one function's exact value, as go tool pprof reads it.
pv() {
	local col=1
	[ "${4:-flat}" = cum ] && col=4
	go tool pprof -symbolize=none -top -nodecount=100000 -nodefraction=0 -edgefraction=0 -unit=B -sample_index="$2" "$1" 2>/dev/null |
		awk -v fn="$3" -v col="$col" '
			/^ *flat/ { body = 1; next }
			body { name = $6; for (i = 7; i <= NF; i++) name = name " " $i
			       if (name == fn) { v = $col; sub(/B$/, "", v); print v; found = 1; exit } }
			END { if (!found) print "absent" }'
}

record() { "$R" --via "$VIA" "$@" >"$TMP/record.out" 2>"$TMP/record.err" || { cat "$TMP/record.err"; return 1; }; }

BPF_REASON=
bpf_check() {
	if [ "$(id -u)" != 0 ]; then
		BPF_REASON="not root: the recorder needs root (or CAP_BPF and CAP_PERFMON) to load BPF"
	elif [ ! -r /sys/kernel/btf/vmlinux ]; then
		BPF_REASON="the kernel has no BTF (/sys/kernel/btf/vmlinux)"
	elif ! "$R" --via "$VIA" -o "$TMP/probe.hsnap" -- /bin/true >"$TMP/probe.log" 2>&1; then
		BPF_REASON="the recorder cannot load or attach here: $(grep -m1 heapsnap-record "$TMP/probe.log")"
	fi
}
need_bpf() { [ "$VIA" = preload ] || [ -z "$BPF_REASON" ] || skip "$BPF_REASON"; }
need_go() { command -v go >/dev/null || skip "go (golang-go) is not installed: no go tool pprof to check against"; }

run() {
	local name=$1 rc
	[ -n "$ONLY" ] && [[ "$name" != *"$ONLY"* ]] && return
	(set -u; "$name") >"$TMP/$name.log" 2>&1
	rc=$?
	case $rc in
	0) PASS=$((PASS + 1)); echo "PASS $name" ;;
	77) SKIP=$((SKIP + 1)); echo "SKIP $name: $(grep -m1 '^SKIP:' "$TMP/$name.log" | cut -c7-)" ;;
	*) FAIL=$((FAIL + 1)); echo "FAIL $name (exit $rc)"; tail -30 "$TMP/$name.log" | sed 's/^/    /' ;;
	esac
}

# ---- format library ----

t_format_unit() { "$T/test_format" && "$T/test_format3"; }

# ---- analyzer: golden outputs of a recorded fixture (no symbols needed) ----

golden() {
	local name=$1 out="$TMP/${1//\//_}"; shift
	"$A" "$@" >"$out.out" 2>"$out.err" || { cat "$out.err"; die "$A $*"; }
	diff -u "testdata/$name" "$out.out" || die "output differs from testdata/$name"
}

t_golden() {
	local f=testdata/alloc_c.hsnap
	golden alloc_c.top top -n 0 --no-symbolize $f
	golden alloc_c.alloc.top top -n 0 --no-symbolize --value alloc_space $f
	golden alloc_c.collapsed collapsed --no-symbolize $f
	golden alloc_c.summary summary --no-symbolize $f
	golden alloc_c.leaks leaks -n 5 --no-symbolize $f
	golden alloc_c.info info $f
	golden alloc_c.summary.json summary --json --no-symbolize $f
}

# Version 1 files (blocks named by address) still read: a fixture recorded by version 1,
# against the outputs version 1 gave for it, with the reader now assigning the slots.
t_format_v1() {
	local f=testdata/v1/alloc_c.hsnap
	golden v1/alloc_c.top top -n 0 --no-symbolize $f
	golden v1/alloc_c.collapsed collapsed --no-symbolize $f
	golden v1/alloc_c.summary summary --no-symbolize $f
	golden v1/alloc_c.leaks leaks -n 5 --no-symbolize $f
	golden v1/alloc_c.summary.json summary --json --no-symbolize $f
	"$A" info $f >"$TMP/v1.info" || die "info of a version 1 file"
	contains "$TMP/v1.info" "Format: 1.0, complete"
	# Re-encoded by today's writer (version 3), it gives the same figures.
	"$T/mutate" $f "$TMP/v1to2.hsnap" 0 || die "re-encode"
	"$A" top -n 0 --no-symbolize "$TMP/v1to2.hsnap" | tail -n +2 >"$TMP/v1to2.top"
	tail -n +2 testdata/v1/alloc_c.top | diff -u - "$TMP/v1to2.top" || die "re-encoded file differs"
	"$A" info "$TMP/v1to2.hsnap" >"$TMP/v2.info" || die "info of the re-encoded file"
	contains "$TMP/v2.info" "Format: 3.0, complete"
}

t_analyzer_usage() {
	local rc
	"$A" frobnicate x 2>"$TMP/e"; rc=$?; eq "unknown subcommand exit" 2 $rc; contains "$TMP/e" "unknown subcommand 'frobnicate'"
	"$A" top --value bogus x 2>"$TMP/e"; rc=$?; eq "bad --value exit" 2 $rc; contains "$TMP/e" "invalid --value 'bogus'"
	"$A" top --peak --snapshot 1 x 2>"$TMP/e"; rc=$?; eq "conflicting options exit" 2 $rc
	"$A" top 2>"$TMP/e"; rc=$?; eq "no file exit" 2 $rc; contains "$TMP/e" "needs a record file"
	"$A" leaks --min-age 5parsecs x 2>"$TMP/e"; rc=$?; eq "bad duration" 2 $rc; contains "$TMP/e" "--min-age '5parsecs'"
	"$A" --help | grep -q "Usage: heapsnap-analyze" || die "help"
	# The version the Makefile builds in, and the format version record.h defines.
	local v fmt
	v=$(awk '/^VERSION :=/ { print $3 }' Makefile)
	fmt=$(awk '/define HS_FORMAT_MAJOR / { M = $3 } /define HS_FORMAT_MINOR / { m = $3 } END { print M "." m }' format/record.h)
	eq "heapsnap-analyze --version" "heapsnap-analyze $v (record format $fmt)" "$("$A" --version)"
	eq "heapsnap-record --version" "heapsnap-record $v (record format $fmt)" "$("$R" --version)"
}

t_bad_input() {
	local f=testdata/alloc_c.hsnap rc size
	"$T/garbage_ok" "$TMP/garbage.bin" 4096
	"$A" info "$TMP/garbage.bin" 2>"$TMP/e"; rc=$?
	eq "garbage exit" 1 $rc; contains "$TMP/e" "$TMP/garbage.bin: offset 0: not a heapsnap record file"
	: >"$TMP/empty.hsnap"
	"$A" top "$TMP/empty.hsnap" 2>"$TMP/e"; rc=$?; eq "empty file exit" 1 $rc; contains "$TMP/e" "shorter than its 16-byte header"
	"$A" top "$TMP/missing.hsnap" 2>"$TMP/e"; rc=$?; eq "missing file exit" 1 $rc; contains "$TMP/e" "$TMP/missing.hsnap: cannot open"
	"$A" top "$TMP" 2>"$TMP/e"; rc=$?; eq "directory exit" 1 $rc; contains "$TMP/e" "not a regular file"
	head -c 16 $f >"$TMP/header-only.hsnap"
	"$A" top "$TMP/header-only.hsnap" 2>"$TMP/e"; rc=$?; eq "header-only exit" 4 $rc; contains "$TMP/e" "no session header"
	# A newer major version is refused by name (this one reads 1 to 3).
	cp $f "$TMP/v4.hsnap"; printf '\x04' | dd of="$TMP/v4.hsnap" bs=1 seek=8 conv=notrunc 2>/dev/null
	"$A" info "$TMP/v4.hsnap" 2>"$TMP/e"; rc=$?; eq "newer major exit" 1 $rc; contains "$TMP/e" "format version 4.0 is not supported"
	# A damaged frame: exit 3, naming the offset; what came before is still reported.
	size=$(stat -c %s $f)
	cp $f "$TMP/bad.hsnap"; printf '\xff\xff\xff\xff' | dd of="$TMP/bad.hsnap" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
	"$A" summary --no-symbolize "$TMP/bad.hsnap" >/dev/null 2>"$TMP/e"; rc=$?
	eq "corrupt exit" 3 $rc; contains "$TMP/e" "offset"
	# No such snapshot.
	"$A" top --snapshot 99 $f 2>"$TMP/e"; rc=$?; eq "missing snapshot exit" 4 $rc; contains "$TMP/e" "no snapshot '99'"
	"$A" top --snapshot nolabel $f 2>"$TMP/e"; rc=$?; eq "missing label exit" 4 $rc
	"$A" top --snapshot peak $f 2>"$TMP/e"; rc=$?; eq "no peak snapshot exit" 4 $rc
	contains "$TMP/e" "--peak replays to the peak the analyzer finds itself"
	# Truncated anywhere: never a crash; a cut file reads up to its last complete frame.
	local cut ok=0
	for cut in $(seq 16 53 "$size") $((size - 17)) $((size - 1)); do # size - 17: inside the footer frame
		head -c "$cut" $f >"$TMP/cut.hsnap"
		for sub in summary pprof collapsed info stats; do
			"$A" $sub --no-symbolize -o "$TMP/cut.out" "$TMP/cut.hsnap" >/dev/null 2>"$TMP/e"; rc=$?
			[ $rc -lt 5 ] || die "$sub on a $cut-byte prefix exited $rc: $(cat "$TMP/e")"
			[ $rc = 0 ] && grep -q "truncated\|no footer" "$TMP/e" && ok=$((ok + 1))
		done
	done
	[ $ok -gt 0 ] || die "no truncated prefix was read with a warning"
	# Random garbage behind a valid header.
	for seed in 1 2 3 4 5 6 7 8; do
		head -c 16 $f >"$TMP/g.hsnap"; "$T/garbage_ok" "$TMP/gb" $((seed * 300)); cat "$TMP/gb" >>"$TMP/g.hsnap"
		"$A" summary --no-symbolize "$TMP/g.hsnap" >/dev/null 2>&1; rc=$?
		[ $rc -lt 5 ] || die "garbage after the header crashed the analyzer ($rc)"
	done
}

# Progress goes to stderr for files that take over a second, and only when it is a terminal.
t_analyzer_progress() {
	command -v script >/dev/null || skip "no script(1) to give the analyzer a terminal"
	"$OUT/bench/genfile" "$TMP/big.hsnap" 40000000 1000000 || die "genfile" # over a second of reading
	script -qec "$A summary --no-symbolize -o $TMP/big.txt $TMP/big.hsnap" /dev/null >"$TMP/tty.out" </dev/null ||
		die "summary under a terminal"
	grep -q "reading $TMP/big.hsnap: *[0-9]*%" "$TMP/tty.out" || { cat -v "$TMP/tty.out" | head -5; die "no progress on a terminal"; }
	"$A" summary --no-symbolize -o "$TMP/big2.txt" "$TMP/big.hsnap" 2>"$TMP/notty.err" || die "summary"
	[ ! -s "$TMP/notty.err" ] || { cat "$TMP/notty.err"; die "progress printed to a non-terminal"; }
	cmp -s "$TMP/big.txt" "$TMP/big2.txt" || die "output differs with a terminal"
}

# Mutated records (valid encoding, absurd values) must never crash the analyzer.
t_fuzz_records() {
	local seed rc sub crashes=0
	for seed in $(seq 1 60); do
		"$T/mutate" testdata/alloc_c.hsnap "$TMP/m.hsnap" $seed || die "mutate $seed"
		for sub in summary pprof collapsed leaks stats info top; do
			timeout 20 "$A" $sub -o "$TMP/m.out" "$TMP/m.hsnap" >/dev/null 2>"$TMP/m.err"; rc=$?
			if [ $rc -ge 5 ]; then
				echo "seed $seed: $sub exited $rc: $(head -2 "$TMP/m.err")"
				crashes=$((crashes + 1))
			fi
		done
	done
	[ $crashes = 0 ] || die "$crashes crashes or hangs on mutated records"
}

# ---- recorder + analyzer on real programs (BPF) ----

c_profile() {
	[ -f "$TMP/c-$VIA.pb.gz" ] && return
	record -o "$TMP/c-$VIA.hsnap" -- "$T/alloc_c" || die "recording alloc_c failed"
	"$A" pprof -o "$TMP/c-$VIA.pb.gz" "$TMP/c-$VIA.hsnap" || die "pprof"
}

t_bpf_c_exact() {
	need_bpf; need_go; c_profile
	local p=$TMP/c-$VIA.pb.gz
	eq "thread_work inuse_space" 20000 "$(pv $p inuse_space thread_work)"
	eq "child_work inuse_space (fork child)" 15000 "$(pv $p inuse_space child_work)"
	eq "plugin_alloc inuse_space (dlopen)" 12288 "$(pv $p inuse_space plugin_alloc)"
	eq "leak_malloc inuse_space" 10000 "$(pv $p inuse_space leak_malloc)"
	eq "make_calloc inuse_space" 4000 "$(pv $p inuse_space make_calloc)"
	eq "aligned_allocs inuse_space" 1792 "$(pv $p inuse_space aligned_allocs)"
	eq "realloc_chain inuse_space" 300 "$(pv $p inuse_space realloc_chain)"
	eq "realloc_fail inuse_space (old block kept)" 128 "$(pv $p inuse_space realloc_fail)"
	eq "realloc_fail alloc_space (failure not recorded)" 128 "$(pv $p alloc_space realloc_fail)"
	eq "realloc_chain alloc_space" 5600 "$(pv $p alloc_space realloc_chain)"
	eq "realloc_chain alloc_objects" 4 "$(pv $p alloc_objects realloc_chain)"
	eq "churn_malloc alloc_space" 6400 "$(pv $p alloc_space churn_malloc)"
	eq "churn_malloc alloc_objects" 100 "$(pv $p alloc_objects churn_malloc)"
	eq "churn_malloc inuse_space" absent "$(pv $p inuse_space churn_malloc)"
	eq "realloc_zero alloc_space" 77 "$(pv $p alloc_space realloc_zero)"
	eq "realloc_zero inuse_space" absent "$(pv $p inuse_space realloc_zero)"
	eq "leak_malloc inuse_objects" 10 "$(pv $p inuse_objects leak_malloc)"
	eq "thread_work inuse_objects" 100 "$(pv $p inuse_objects thread_work)"
	eq "inline_helper inuse_space (an inline frame)" 2222 "$(pv $p inuse_space 'inline_helper (inline)')"
	eq "inline_outer cum inuse_space" 2222 "$(pv $p inuse_space inline_outer cum)"
	eq "thread_main cum inuse_space (caller chain)" 20000 "$(pv $p inuse_space thread_main cum)"
}

t_bpf_c_labels_inline() {
	need_bpf; need_go; c_profile
	go tool pprof -symbolize=none -tags "$TMP/c-$VIA.pb.gz" >"$TMP/tags" 2>&1 || die "pprof -tags"
	contains "$TMP/tags" "worker-1"
	contains "$TMP/tags" "worker-2"
	contains "$TMP/tags" "bytes"
	go tool pprof -symbolize=none -traces "$TMP/c-$VIA.pb.gz" >"$TMP/traces" 2>&1 || die "pprof -traces"
	grep -A1 "inline_helper (inline)" "$TMP/traces" | grep -q "inline_outer" || die "inline frame chain missing"
	go tool pprof -symbolize=none -raw "$TMP/c-$VIA.pb.gz" >"$TMP/raw" 2>&1 || die "pprof -raw"
	contains "$TMP/raw" "inline_outer"
	local bid
	bid=$("$A" info "$TMP/c-$VIA.hsnap" | awk '/\/alloc_c build-id/ {print $NF; exit}')
	[ -n "$bid" ] || die "no build-id recorded for alloc_c"
	contains "$TMP/raw" "$bid"
	"$A" collapsed "$TMP/c-$VIA.hsnap" >"$TMP/coll"
	grep -q ";thread_main;thread_work 20000$" "$TMP/coll" || die "collapsed thread_work line"
	grep -q ";inline_outer;inline_helper 2222$" "$TMP/coll" || die "collapsed inline line"
	"$A" stats --json "$TMP/c-$VIA.hsnap" >"$TMP/stats.json"
	# BPF sees a failed realloc release its block at entry, then restores it.
	[ "$VIA" = bpf ] && contains "$TMP/stats.json" '"restored":1'
	contains "$TMP/stats.json" '"lost.ringbuf_full":0'
	"$A" summary --json "$TMP/c-$VIA.hsnap" >"$TMP/sum.json"
	[ "$(grep -o '"pid":' "$TMP/sum.json" | wc -l)" = 2 ] || die "two processes (parent and fork child) expected"
	"$A" leaks --min-age 0 -n 0 "$TMP/c-$VIA.hsnap" >"$TMP/leaks"
	contains "$TMP/leaks" "20000 bytes in 100 blocks"
	contains "$TMP/leaks" "leak_malloc"
}

t_bpf_cxx_exact() {
	need_bpf; need_go
	record -o "$TMP/cxx.hsnap" -- "$T/alloc_cxx" || die "recording alloc_cxx failed"
	[ "$VIA" = preload ] || contains "$TMP/record.err" "allocator functions in libstdc++"
	"$A" pprof -o "$TMP/cxx.pb.gz" "$TMP/cxx.hsnap"
	local p=$TMP/cxx.pb.gz
	eq "new Widget x20" 960 "$(pv $p inuse_space 'cxx_new_objects()')"
	eq "new char[1000] x5" 5000 "$(pv $p inuse_space 'cxx_new_array()')"
	eq "nothrow new x3" 999 "$(pv $p inuse_space 'cxx_nothrow()')"
	eq "aligned new x2" 256 "$(pv $p inuse_space 'cxx_aligned()')"
	eq "delete churn allocated" 10000 "$(pv $p alloc_space 'cxx_delete_churn()')"
	eq "delete churn objects" 100 "$(pv $p alloc_objects 'cxx_delete_churn()')"
	eq "delete churn live" absent "$(pv $p inuse_space 'cxx_delete_churn()')"
	"$A" stats --json "$TMP/cxx.hsnap" >"$TMP/s.json"
	contains "$TMP/s.json" '"lost.missed_uretprobe":0'
}

t_bpf_rust_exact() {
	need_bpf; need_go
	[ -x "$T/alloc_rust" ] || skip "no Rust compiler: the Rust workload was not built"
	record -o "$TMP/rs.hsnap" -- "$T/alloc_rust" || die "recording alloc_rust failed"
	[ "$VIA" = preload ] || contains "$TMP/record.err" "allocator functions in alloc_rust"
	"$A" pprof -o "$TMP/rs.pb.gz" "$TMP/rs.hsnap"
	local p=$TMP/rs.pb.gz
	eq "rust_boxes (leaked boxes)" 5000 "$(pv $p inuse_space alloc_rust::rust_boxes)"
	eq "rust_vec cum" 3000 "$(pv $p inuse_space alloc_rust::rust_vec cum)"
	eq "rust_churn allocated cum" 6400 "$(pv $p alloc_space alloc_rust::rust_churn cum)"
	eq "rust_churn objects cum (counted once, not again in malloc)" 100 "$(pv $p alloc_objects alloc_rust::rust_churn cum)"
	eq "rust_churn live" absent "$(pv $p inuse_space alloc_rust::rust_churn cum)"
}

# Session probes where the kernel has them (6.13+), and the classic uprobe + uretprobe pair
# on request, in multi links (6.6+) or as perf events: every way must give the same exact
# figures, nested C++ calls included.
t_bpf_probe_links() {
	need_bpf; need_go
	local btf mode
	btf=$(bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null)
	record -v -o "$TMP/cl.hsnap" -- "$T/alloc_c" || die "recording alloc_c failed"
	if grep -q "'BPF_TRACE_UPROBE_SESSION'" <<<"$btf"; then
		grep -q "libc.so.6:malloc (size1) at file offset 0x[0-9a-f]* (session)" "$TMP/record.err" ||
			die "malloc got no session probe"
	fi
	for mode in multi perf; do
		if [ $mode = multi ] && ! grep -q "'BPF_TRACE_UPROBE_MULTI'" <<<"$btf"; then
			"$R" --via "$VIA" --probe-links multi -o "$TMP/cl.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/record.err" &&
				die "--probe-links multi ran on a kernel without multi links"
			contains "$TMP/record.err" "this kernel has no such links"
			continue
		fi
		record -v --probe-links $mode -o "$TMP/cl.hsnap" -- "$T/alloc_c" || die "recording alloc_c --probe-links $mode failed"
		contains "$TMP/record.err" "allocators get a uprobe and a uretprobe each"
		grep -q "(session)" "$TMP/record.err" && die "--probe-links $mode attached a session probe"
		if [ $mode = multi ]; then
			grep -q "libc.so.6:malloc (size1) at file offset 0x[0-9a-f]* + return (multi)" "$TMP/record.err" ||
				die "malloc got no multi link"
		else
			grep -q "(multi)" "$TMP/record.err" && die "--probe-links perf made a multi link"
		fi
		"$A" pprof -o "$TMP/cl.pb.gz" "$TMP/cl.hsnap" || die "pprof"
		local p=$TMP/cl.pb.gz
		eq "$mode: thread_work inuse_space" 20000 "$(pv $p inuse_space thread_work)"
		eq "$mode: child_work inuse_space (fork child)" 15000 "$(pv $p inuse_space child_work)"
		eq "$mode: leak_malloc inuse_space" 10000 "$(pv $p inuse_space leak_malloc)"
		eq "$mode: realloc_chain inuse_space" 300 "$(pv $p inuse_space realloc_chain)"
		eq "$mode: realloc_zero alloc_space" 77 "$(pv $p alloc_space realloc_zero)"
		record --probe-links $mode -o "$TMP/clx.hsnap" -- "$T/alloc_cxx" || die "recording alloc_cxx --probe-links $mode failed"
		"$A" pprof -o "$TMP/clx.pb.gz" "$TMP/clx.hsnap"
		eq "$mode: new char[1000] x5" 5000 "$(pv "$TMP/clx.pb.gz" inuse_space 'cxx_new_array()')"
		eq "$mode: delete churn objects" 100 "$(pv "$TMP/clx.pb.gz" alloc_objects 'cxx_delete_churn()')"
		eq "$mode: delete churn live" absent "$(pv "$TMP/clx.pb.gz" inuse_space 'cxx_delete_churn()')"
	done
}

t_bpf_attach_pid() {
	need_bpf; need_go
	local fifo=$TMP/go.fifo rpid tpid i
	mkfifo "$fifo"
	"$T/alloc_c" wait "$fifo" >"$TMP/target.out" &
	tpid=$!
	for i in $(seq 50); do grep -q ready "$TMP/target.out" && break; sleep 0.1; done
	"$R" --via "$VIA" -p $tpid -s 0 -o "$TMP/pid.hsnap" >"$TMP/rec.out" 2>"$TMP/rec.err" &
	rpid=$!
	for i in $(seq 100); do grep -q "attached to" "$TMP/rec.err" && break; sleep 0.1; done
	contains "$TMP/rec.err" "attached to $tpid"
	echo go >"$fifo"
	wait $tpid || die "target failed"
	wait $rpid || { cat "$TMP/rec.err"; die "recorder failed"; }
	contains "$TMP/rec.err" "live bytes exclude memory allocated before the attach"
	"$A" info "$TMP/pid.hsnap" >"$TMP/pid.info"
	contains "$TMP/pid.info" "Command: $T/alloc_c wait $fifo"
	"$A" pprof -o "$TMP/pid.pb.gz" "$TMP/pid.hsnap"
	eq "after_attach inuse_space" 7777 "$(pv "$TMP/pid.pb.gz" inuse_space after_attach)"
	eq "after_attach inuse_objects" 7 "$(pv "$TMP/pid.pb.gz" inuse_objects after_attach)"
	eq "before_attach unseen" absent "$(pv "$TMP/pid.pb.gz" alloc_space before_attach)"
	"$A" stats --json "$TMP/pid.hsnap" >"$TMP/s.json"
	local unknown
	unknown=$(grep -o '"frees.unknown":[0-9]*' "$TMP/s.json" | cut -d: -f2)
	[ "${unknown:-0}" -ge 5 ] || die "the 5 frees of pre-attach blocks must count as unknown, got ${unknown:-none}"
}

# Attaching to a process that allocates all along: nothing may be dropped while the probes
# go in (the rings were put in place after the probes, and the first events were lost).
t_bpf_attach_busy() {
	need_bpf
	local tpid i
	"$T/alloc_c" loop 30 >/dev/null &
	tpid=$!
	for i in $(seq 100); do grep -q libc.so "/proc/$tpid/maps" 2>/dev/null && break; sleep 0.05; done
	"$R" --via "$VIA" -p $tpid -s 0 --duration 1 --stats -o "$TMP/busy.hsnap" >/dev/null 2>"$TMP/busy.err" || { kill $tpid; cat "$TMP/busy.err"; die "recorder"; }
	kill $tpid; wait $tpid 2>/dev/null
	contains "$TMP/busy.err" "lost.ringbuf_full        0"
	"$A" top --value alloc_objects "$TMP/busy.hsnap" 2>/dev/null | grep -q " loop_work$" || die "no loop_work allocations recorded"
}

t_bpf_sampled() {
	need_bpf; need_go
	record -s 64k -o "$TMP/s.hsnap" -- "$T/alloc_c" bulk || die "sampled recording failed"
	"$A" pprof -o "$TMP/s.pb.gz" "$TMP/s.hsnap"
	# bulk_keep: 20000 x 4096 + its 160000-byte table; bulk_churn: 200000 x 100 = 20000000.
	within "bulk_keep inuse_space estimate" 82080000 "$(pv "$TMP/s.pb.gz" inuse_space bulk_keep)" 10
	within "bulk_churn alloc_space estimate" 20000000 "$(pv "$TMP/s.pb.gz" alloc_space bulk_churn)" 20
	within "bulk_churn alloc_objects estimate" 200000 "$(pv "$TMP/s.pb.gz" alloc_objects bulk_churn)" 20
	eq "bulk_churn inuse" absent "$(pv "$TMP/s.pb.gz" inuse_space bulk_churn)"
	"$A" stats "$TMP/s.hsnap" >"$TMP/st"
	contains "$TMP/st" "Sampler: Poisson, mean 65536 bytes"
	local events
	events=$("$A" stats --json "$TMP/s.hsnap" | grep -o '"events":[0-9]*' | cut -d: -f2)
	[ "$events" -lt 20000 ] || die "sampling must keep far fewer than the 220000 events, kept $events"
}

t_bpf_snapshots_diff() {
	need_bpf; need_go
	record --interval 0.05 --snapshot-at-peak -o "$TMP/d.hsnap" -- "$T/demo" || die "demo recording"
	"$A" info --json "$TMP/d.hsnap" >"$TMP/info.json"
	contains "$TMP/info.json" '"origin":"interval"'
	# --interval 0.05 means 0.05 s apart (the loop used to sleep 0.1 s between looks).
	local gap
	gap=$(grep -o '"time":[0-9.]*,"origin":"interval"' "$TMP/info.json" | cut -d: -f2 | cut -d, -f1 |
		awk 'NR > 1 { print $1 - prev } { prev = $1 }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	[ -n "$gap" ] && awk -v g="$gap" 'BEGIN { exit !(g > 0.03 && g < 0.075) }' ||
		die "--interval 0.05: median gap between interval snapshots $gap s"
	contains "$TMP/info.json" '"label":"peak"'
	contains "$TMP/info.json" '"label":"exit"'
	"$A" top --snapshot peak "$TMP/d.hsnap" >"$TMP/peak.top" || die "top at peak"
	contains "$TMP/peak.top" "cache_insert"
	"$A" top --snapshot exit "$TMP/d.hsnap" >"$TMP/exit.top"
	grep -q "^ *819200 .*cache_insert$" "$TMP/exit.top" || die "cache_insert must hold 819200 bytes at exit"
	grep -q "^ *25600 .*session_open$" "$TMP/exit.top" || die "session_open must hold 25600 bytes at exit"
	# --peak replays to the analyzer's own peak; --at past the end equals the end.
	"$A" top --peak "$TMP/d.hsnap" | grep -q "cache_insert$" || die "top --peak"
	"$A" top --at 3600 "$TMP/d.hsnap" >/dev/null 2>"$TMP/e"; eq "--at past the end exit" 4 $?
	contains "$TMP/e" "--at 3600s is past the end of the recording"
	[ "$("$A" top --at 0 "$TMP/d.hsnap" | grep -c cache_insert)" = 0 ] || die "nothing is live at 0s"
	"$A" top --value alloc_space "$TMP/d.hsnap" >"$TMP/alloc.top"
	grep -q "^ *512000 .*parse_request$" "$TMP/alloc.top" || die "parse_request must allocate 1000 x 512 bytes"
	"$A" diff --json --from 1 --to exit "$TMP/d.hsnap" >"$TMP/diff.json" || die "diff"
	grep -q '"name":"cache_insert","from":[0-9]*,"to":819200' "$TMP/diff.json" || die "diff cache_insert"
	"$A" diff --from 1 --to exit --pprof "$TMP/to.pb.gz" --base-pprof "$TMP/from.pb.gz" "$TMP/d.hsnap" >"$TMP/diff.txt"
	contains "$TMP/diff.txt" "cache_insert"
	go tool pprof -symbolize=none -top -unit=B -diff_base "$TMP/from.pb.gz" "$TMP/to.pb.gz" >"$TMP/pd" 2>&1 ||
		{ cat "$TMP/pd"; die "go tool pprof -diff_base rejected our output"; }
	contains "$TMP/pd" "cache_insert"
	# Two files: a second run of the same program does not grow.
	record -o "$TMP/d2.hsnap" -- "$T/demo" || die "second demo recording"
	"$A" diff --json "$TMP/d.hsnap" "$TMP/d2.hsnap" >"$TMP/diff2.json" || die "diff of two files"
	contains "$TMP/diff2.json" '"delta":0,'
	# SIGUSR1 marks a snapshot, once recording (the target has started).
	"$R" --via "$VIA" -o "$TMP/u.hsnap" -- "$T/alloc_c" loop 1.5 2>"$TMP/u.err" &
	local rpid=$! i
	for i in $(seq 100); do pgrep -P $rpid alloc_c >/dev/null && break; sleep 0.05; done
	kill -USR1 $rpid
	wait $rpid || die "recorder with SIGUSR1"
	"$A" info --json "$TMP/u.hsnap" | grep -q '"origin":"signal"' || die "no signal snapshot"
	"$A" top --snapshot 1 "$TMP/u.hsnap" >/dev/null || die "top at the signal snapshot"
}

t_bpf_errors() {
	need_bpf
	local rc
	"$R" --via "$VIA" -p 999999 -o "$TMP/x.hsnap" 2>"$TMP/e"; rc=$?
	eq "missing pid exit" 1 $rc; contains "$TMP/e" "process 999999 not found"
	"$R" --via "$VIA" -o "$TMP/x.hsnap" -- /nonexistent/cmd 2>"$TMP/e"; rc=$?
	eq "missing command exit" 127 $rc; contains "$TMP/e" "command not found or not executable: /nonexistent/cmd"
	"$R" --via "$VIA" -o /proc/nonexistent/x.hsnap -- /bin/true 2>"$TMP/e"; rc=$?
	eq "unwritable output exit" 1 $rc; contains "$TMP/e" "cannot write /proc/nonexistent/x.hsnap"
	"$R" --via "$VIA" --probe "$T/alloc_c:no_such_fn:malloc" -o "$TMP/x.hsnap" -- /bin/true 2>"$TMP/e"; rc=$?
	eq "missing symbol exit" 1 $rc; contains "$TMP/e" "has no function no_such_fn"
	"$R" --via "$VIA" --probe "junk" -- /bin/true 2>"$TMP/e"; rc=$?
	eq "bad --probe exit" 2 $rc; contains "$TMP/e" "invalid value 'junk' for --probe"
	"$R" --via "$VIA" -o "$TMP/x.hsnap" 2>"$TMP/e"; rc=$?
	eq "no target exit" 2 $rc; contains "$TMP/e" "give exactly one target"
	"$R" --via "$VIA" --stack dwarfish -- /bin/true 2>"$TMP/e"; rc=$?
	eq "bad --stack exit" 2 $rc; contains "$TMP/e" "--stack"
	[ "$(grep -c . "$TMP/e")" -le 2 ] || die "errors must be one clear line, not a libbpf trace"
	"$R" --via "$VIA" -o "$TMP/x.hsnap" -- /bin/sh -c 'exit 7' 2>/dev/null; rc=$?
	eq "the command's exit status" 7 $rc
	# A start that fails leaves no file, and says why rather than guessing.
	rm -f "$TMP/x.hsnap"
	if [ "$(cat /proc/2/comm 2>/dev/null)" = kthreadd ]; then
		"$R" --via "$VIA" -p 2 -o "$TMP/x.hsnap" 2>"$TMP/e"; rc=$?
		eq "kernel thread exit" 1 $rc; contains "$TMP/e" "process 2 maps no memory: a kernel thread"
		[ ! -e "$TMP/x.hsnap" ] || die "a failed start left $(stat -c %s "$TMP/x.hsnap") bytes in $TMP/x.hsnap"
	fi
	"$R" --via "$VIA" --probe-links perf --stack dwarf=32768 -s 0 -o "$TMP/x.hsnap" -- /nonexistent 2>/dev/null
	[ ! -e "$TMP/x.hsnap" ] || die "a command not found left a file"
}

t_bpf_all_processes() {
	need_bpf
	"$R" --via "$VIA" -a -s 0 --duration 4 -o "$TMP/all.hsnap" 2>"$TMP/all.err" &
	local rpid=$!
	waitfor "$TMP/all.err" "recording every process" || { cat "$TMP/all.err"; die "-a never said it records"; }
	"$T/demo"
	wait $rpid || { cat "$TMP/all.err"; die "recorder -a failed"; }
	"$A" summary --json "$TMP/all.hsnap" >"$TMP/all.json"
	# demo's own 1000 frees land in its process (its pid may also carry the shell's pre-exec allocations).
	grep -q '"comm":"demo","cmdline":"[^"]*demo","allocated_bytes":[0-9]*,"allocated_count":[0-9]*,"freed_bytes":512000,"freed_count":1000' "$TMP/all.json" ||
		{ cat "$TMP/all.json"; die "-a must attribute demo's frees to its own process"; }
	"$A" top -n 0 "$TMP/all.hsnap" 2>/dev/null >"$TMP/all.top"
	"$A" top -n 0 --value alloc_space "$TMP/all.hsnap" 2>/dev/null >"$TMP/all.atop"
	grep -q "^ *819200 .*cache_insert$" "$TMP/all.top" || { grep -E "cache_insert|lost" "$TMP/all.top"; die "cache_insert under -a"; }
	grep -q "^ *512000 .*parse_request$" "$TMP/all.atop" ||
		{ grep -E "parse_request|lost" "$TMP/all.atop"; "$A" stats "$TMP/all.hsnap" | grep -E "lost|unknown"; die "parse_request under -a"; }
}

# Blocks handed from a thread on one CPU to a thread on another, addresses reused across
# them: exact only if the per-CPU rings are merged in time order.
t_bpf_handoff() {
	need_bpf; need_go
	[ "$(nproc)" -ge 2 ] || skip "one CPU: nothing to merge across"
	record -s 0 --stats -o "$TMP/h.hsnap" -- "$T/handoff" || die "handoff recording"
	"$A" pprof -o "$TMP/h.pb.gz" "$TMP/h.hsnap"
	local p=$TMP/h.pb.gz
	eq "handoff_make alloc_space" 9600000 "$(pv $p alloc_space handoff_make)"
	eq "handoff_make inuse_space (all freed on the other CPU)" absent "$(pv $p inuse_space handoff_make)"
	eq "handoff_keep inuse_space" 48000 "$(pv $p inuse_space handoff_keep)"
	eq "handoff_keep inuse_objects" 1000 "$(pv $p inuse_objects handoff_keep)"
	contains "$TMP/record.err" "lost.ringbuf_full        0"
}

# The recorder reads events in place in each CPU's ring: 420k events through 1 MiB rings wrap
# them about twenty times, records straddling the end included, and every byte must survive.
t_bpf_ring_wrap() {
	need_bpf; need_go
	record -s 0 --ringbuf-size 2 --stats -o "$TMP/w.hsnap" -- "$T/alloc_c" bulk || die "bulk recording"
	contains "$TMP/record.err" "lost.ringbuf_full        0"
	"$A" pprof -o "$TMP/w.pb.gz" "$TMP/w.hsnap"
	local p=$TMP/w.pb.gz
	# bulk_keep: 20000 x 4096 + its 160000-byte table; bulk_churn: 200000 x 100, all freed.
	eq "bulk_keep inuse_space" 82080000 "$(pv $p inuse_space bulk_keep)"
	eq "bulk_keep inuse_objects" 20001 "$(pv $p inuse_objects bulk_keep)"
	eq "bulk_churn alloc_space" 20000000 "$(pv $p alloc_space bulk_churn)"
	eq "bulk_churn alloc_objects" 200000 "$(pv $p alloc_objects bulk_churn)"
	eq "bulk_churn inuse_space" absent "$(pv $p inuse_space bulk_churn)"
}

# Other allocators, preloaded in front of glibc: their entry points must be found and
# probed, nested calls counted once, and the figures stay exact.
t_bpf_other_allocators() {
	need_bpf
	local lib n=0 top
	for lib in libjemalloc.so.2 libtcmalloc_minimal.so.4 libmimalloc.so.2.0; do
		lib=/usr/lib/x86_64-linux-gnu/$lib
		[ -r "$lib" ] || continue
		n=$((n + 1))
		LD_PRELOAD=$lib "$R" --via "$VIA" -o "$TMP/o.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/o.err" || { cat "$TMP/o.err"; die "$lib"; }
		[ "$VIA" = preload ] || contains "$TMP/o.err" "allocator functions in $(basename "$lib")"
		top=$("$A" top -n 0 "$TMP/o.hsnap" 2>/dev/null)
		for want in "20000 thread_work" "15000 child_work" "12288 plugin_alloc" "10000 leak_malloc" \
			"4000 make_calloc" "1792 aligned_allocs" "300 realloc_chain"; do
			echo "$top" | grep -qE "^ *${want% *} .* ${want#* }$" || die "$(basename "$lib"): expected $want"
		done
		"$A" stats --json "$TMP/o.hsnap" | grep -q '"lost.missed_uretprobe":0' || die "$(basename "$lib"): missed uretprobes"
	done
	[ $n -gt 0 ] || skip "none of jemalloc, tcmalloc or mimalloc is installed"
}

# A static binary: probed in the executable itself, and run exactly once (the dynamic
# loader's library listing must never be asked of it).
t_bpf_static() {
	need_bpf
	: >"$TMP/runs"
	record -o "$TMP/st.hsnap" -- "$T/static_once" "$TMP/runs" || die "recording a static binary"
	eq "times the command ran" 1 "$(wc -l <"$TMP/runs")"
	contains "$TMP/record.err" "allocator functions in static_once"
	"$A" top "$TMP/st.hsnap" | grep -q "^ *12963 .*static_alloc$" || die "static_alloc must hold 3 x 4321 bytes"
	# A script: libc is probed before its interpreter starts, and the exec'd program is followed.
	printf '#!/bin/sh\nexec "%s"\n' "$(readlink -f "$T/demo")" >"$TMP/demo.sh"
	chmod +x "$TMP/demo.sh"
	record -o "$TMP/sh.hsnap" -- "$TMP/demo.sh" || die "recording a script"
	"$A" top "$TMP/sh.hsnap" | grep -q "^ *819200 .*cache_insert$" || die "cache_insert through a script"
	"$A" top --value alloc_objects "$TMP/sh.hsnap" | grep -q "^ *1000 .*parse_request$" || die "parse_request through a script"
}

# What another user runs, where another user can reach it: the checkout may sit in a
# directory only its owner can enter.
unpriv_bin() {
	mkdir -p "$TMP/ub"
	cp "$R" "$OUT/libheapsnap.so" "$T/alloc_c" "$T/libplugin.so" "$TMP/ub/"
	chmod o+x "$TMP"; chmod -R o+rX "$TMP/ub"
}

t_bpf_not_root() {
	need_bpf
	command -v setpriv >/dev/null || skip "no setpriv to drop root"
	local rc
	unpriv_bin
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TMP/ub/heapsnap-record" --via "$VIA" -o "$TMP/nr.hsnap" -- /bin/true \
		2>"$TMP/e"; rc=$?
	eq "not root exit" 1 $rc
	contains "$TMP/e" "needs root (or CAP_BPF and CAP_PERFMON)"
	# What the message says suffices does: an unprivileged user with the two capabilities.
	mkdir -p "$TMP/nr"; chmod 777 "$TMP/nr"; unpriv_bin
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+bpf,+perfmon --ambient-caps=+bpf,+perfmon \
		"$TMP/ub/heapsnap-record" --via "$VIA" -o "$TMP/nr/c.hsnap" -- "$TMP/ub/alloc_c" >/dev/null 2>"$TMP/e" ||
		{ cat "$TMP/e"; die "CAP_BPF and CAP_PERFMON as uid 65534"; }
	"$A" top "$TMP/nr/c.hsnap" >"$TMP/nr.top" 2>&1; grep -q "^ *10000 .*leak_malloc$" "$TMP/nr.top" || { cat "$TMP/nr.top" "$TMP/e"; die "leak_malloc with capabilities only"; }
}

# --stack dwarf: the point is the contrast with fp on code built without frame pointers.
t_bpf_dwarf_nofp() {
	need_bpf; need_go
	record --stack dwarf -o "$TMP/nd.hsnap" -- "$T/nofp" || die "dwarf recording"
	record --stack fp -o "$TMP/nf.hsnap" -- "$T/nofp" || die "fp recording"
	"$A" pprof -o "$TMP/nd.pb.gz" "$TMP/nd.hsnap"
	"$A" pprof -o "$TMP/nf.pb.gz" "$TMP/nf.hsnap"
	local p=$TMP/nd.pb.gz
	eq "dwarf: nofp_level3 flat" 20000 "$(pv $p inuse_space nofp_level3)"
	eq "dwarf: nofp_level2 cum" 20000 "$(pv $p inuse_space nofp_level2 cum)"
	eq "dwarf: nofp_level1 cum" 20000 "$(pv $p inuse_space nofp_level1 cum)"
	eq "dwarf: main cum" 20000 "$(pv $p inuse_space main cum)"
	# fp keeps the allocating function ([sp]) but loses its callers.
	eq "fp: nofp_level3 flat" 20000 "$(pv "$TMP/nf.pb.gz" inuse_space nofp_level3)"
	eq "fp: nofp_level1 lost" absent "$(pv "$TMP/nf.pb.gz" inuse_space nofp_level1 cum)"
	"$A" stats "$TMP/nd.hsnap" >"$TMP/st"
	grep -q "DWARF stacks: 20 captures; 20 unwinds .*no binary 0, no CFI 0, window too small 0" "$TMP/st" ||
		{ cat "$TMP/st"; die "every dwarf stack must unwind"; }
	# A window too small to reach the callers is counted, and the frames reached are kept.
	record --stack dwarf=256 -o "$TMP/ns.hsnap" -- "$T/nofp" || die "small-window recording"
	"$A" stats --json "$TMP/ns.hsnap" | grep -q '"stacks.dwarf_window_short":[1-9]' || die "truncations not counted"
	# The documented maximum window loads and unwinds every level.
	record --stack dwarf=32768 -o "$TMP/n32.hsnap" -- "$T/nofp" || die "--stack dwarf=32768 recording"
	"$A" pprof -o "$TMP/n32.pb.gz" "$TMP/n32.hsnap"
	eq "dwarf=32768: nofp_level1 cum" 20000 "$(pv "$TMP/n32.pb.gz" inuse_space nofp_level1 cum)"
	"$A" top "$TMP/ns.hsnap" | grep -q "^ *20000 .*nofp_level3$" || die "frames reached must be kept"
}

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

# --pid and --comm narrow every report to processes: alloc_c and its fork child (its
# child_work's 15000 bytes are the child's alone, leak_malloc's 10000 the parent's).
t_analyzer_pid_filter() {
	need_go
	local parent child p
	"$R" --via preload -o "$TMP/pf.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/pf.err" || { cat "$TMP/pf.err"; die "recording"; }
	"$A" summary "$TMP/pf.hsnap" >"$TMP/pf.sum"
	parent=$(awk '/^process/ { print $2; exit }' "$TMP/pf.sum")
	child=$(awk -v p="$parent" '/^process/ && $5 == p ":" { print $2 }' "$TMP/pf.sum")
	[ -n "$parent" ] && [ -n "$child" ] || { cat "$TMP/pf.sum"; die "no parent and fork child in the summary"; }
	"$A" pprof --pid "$child" -o "$TMP/pfc.pb.gz" "$TMP/pf.hsnap" || die "pprof --pid child"
	eq "--pid child: child_work" 15000 "$(pv "$TMP/pfc.pb.gz" inuse_space child_work)"
	eq "--pid child: leak_malloc" absent "$(pv "$TMP/pfc.pb.gz" inuse_space leak_malloc)"
	"$A" pprof --pid "$parent" -o "$TMP/pfp.pb.gz" "$TMP/pf.hsnap" || die "pprof --pid parent"
	eq "--pid parent: leak_malloc" 10000 "$(pv "$TMP/pfp.pb.gz" inuse_space leak_malloc)"
	eq "--pid parent: child_work" absent "$(pv "$TMP/pfp.pb.gz" inuse_space child_work)"
	"$A" pprof --pid "$parent" --pid "$child" -o "$TMP/pfb.pb.gz" "$TMP/pf.hsnap" || die "pprof, both pids"
	eq "both pids: child_work" 15000 "$(pv "$TMP/pfb.pb.gz" inuse_space child_work)"
	eq "both pids: leak_malloc" 10000 "$(pv "$TMP/pfb.pb.gz" inuse_space leak_malloc)"
	"$A" summary --json --pid "$child" "$TMP/pf.hsnap" >"$TMP/pf.json"
	eq "--pid: one process in the summary" 1 "$(grep -o '"pid":' "$TMP/pf.json" | wc -l)"
	"$A" top --comm alloc_c "$TMP/pf.hsnap" | grep -q "^ *15000 .*child_work$" || die "--comm alloc_c"
	"$A" top --comm nosuch "$TMP/pf.hsnap" 2>/dev/null | grep -q child_work && die "--comm nosuch selected something"
	"$A" top --pid 0 "$TMP/pf.hsnap" 2>"$TMP/e"; eq "--pid 0 exit" 2 $?
	contains "$TMP/e" "invalid --pid '0'"
	return 0
}

# timeline: its series' maximum is summary's peak, exactly; at most 1024 points however many
# events (alloc_c bulk: 420k); times in order; snapshots and the peak beside the points.
t_analyzer_timeline() {
	local f
	"$R" --via preload --snapshot-at-peak -o "$TMP/tl.hsnap" -- "$T/demo" >/dev/null 2>"$TMP/tl.err" || { cat "$TMP/tl.err"; die "demo"; }
	"$R" --via preload -o "$TMP/tb.hsnap" -- "$T/alloc_c" bulk >/dev/null 2>"$TMP/tl.err" || { cat "$TMP/tl.err"; die "bulk"; }
	for f in tl tb; do
		"$A" timeline --json "$TMP/$f.hsnap" >"$TMP/$f.json" || die "timeline --json $f"
		"$A" summary --json "$TMP/$f.hsnap" >"$TMP/$f.sum" || die "summary $f"
		python3 - "$TMP/$f.json" "$TMP/$f.sum" <<-'PY' || die "timeline of $f"
		import json, sys
		tl, sm = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
		pts = tl["points"]
		peak = max(p["peak_bytes"] for p in sm["processes"]) if len(sm["processes"]) == 1 else None
		top = max(p["live_bytes"] for p in pts)
		assert 0 < len(pts) <= 1024, len(pts)
		assert all(set(p) == {"time", "live_bytes", "live_blocks", "rss_bytes"} for p in pts)
		assert all(a["time"] <= b["time"] for a, b in zip(pts, pts[1:])), "times out of order"
		assert top == tl["peak"]["live_bytes"], (top, tl["peak"])
		assert peak is None or top == peak, (top, peak)
		assert tl["snapshots"], "no snapshots listed"
		print(sys.argv[1], len(pts), "points, max", top)
		PY
	done
	"$A" timeline --peak "$TMP/tl.hsnap" 2>"$TMP/e"; eq "timeline --peak exit" 2 $?
}

# speedscope's file format: alloc_c's known figures, exactly, as the weights of the samples
# whose stacks hold each function, in-use and allocated, bytes and objects.
t_analyzer_speedscope() {
	"$R" --via preload -o "$TMP/ss.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/ss.err" || { cat "$TMP/ss.err"; die "recording"; }
	"$A" speedscope -o "$TMP/ss.json" "$TMP/ss.hsnap" 2>/dev/null || die "speedscope"
	python3 - "$TMP/ss.json" <<-'PY' || die "speedscope output"
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
	frames = [f["name"] for f in d["shared"]["frames"]]
	profiles = {p["name"]: p for p in d["profiles"]}
	assert set(profiles) == {"inuse_space", "inuse_objects", "alloc_space", "alloc_objects"}, set(profiles)
	want = {"inuse_space": {"leak_malloc": 10000, "child_work": 15000, "thread_work": 20000, "make_calloc": 4000},
	        "inuse_objects": {"leak_malloc": 10, "child_work": 5, "thread_work": 100}}
	for name, p in profiles.items():
	    assert p["type"] == "sampled" and len(p["samples"]) == len(p["weights"])
	    assert all(0 <= i < len(frames) for s in p["samples"] for i in s)
	    assert sum(p["weights"]) == p["endValue"], (name, sum(p["weights"]), p["endValue"])
	    for fn, v in want.get(name, {}).items():
	        got = sum(w for s, w in zip(p["samples"], p["weights"]) if fn in {frames[i] for i in s})
	        assert got == v, (name, fn, got, v)
	    # Root first: every in-use stack of the main thread starts at _start.
	    assert any(frames[s[0]] == "_start" for s in p["samples"] if s)
	print("ok")
	PY
	# speedscope itself opens it (npm's speedscope, as its command line does), and its own
	# totals of the profiles are alloc_c's (live blocks at exit from summary).
	local app=${HEAPSNAP_NPM_PREFIX:-$HOME/.cache/heapsnap/npm}/node_modules/speedscope/dist/release
	command -v chromium >/dev/null || skip "chromium is not installed (scripts/install-deps.sh installs it)"
	[ -f "$app/index.html" ] || skip "speedscope is not installed in $app (scripts/install-deps.sh installs it from npm)"
	"$A" summary --json "$TMP/ss.hsnap" >"$TMP/ss.sum" 2>/dev/null || die "summary"
	mkdir -p "$OUT/tests/screenshots"
	python3 tests/htmlcheck.py speedscope "$app" "$TMP/ss.json" "$OUT/tests/screenshots/speedscope.png" >"$TMP/ss.seen" ||
		die "speedscope in chromium"
	python3 - "$TMP/ss.seen" "$TMP/ss.sum" <<-'PY' || die "what speedscope showed (screenshot: $OUT/tests/screenshots/speedscope.png)"
	import json, sys
	seen, sm = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
	live = sum(p["live_count"] for p in sm["processes"])
	allocs = sum(p["allocated_count"] for p in sm["processes"])
	assert seen["title"].strip().endswith("- speedscope"), seen["title"]
	assert "inuse_space (1/4)" in seen["text"], seen["text"]
	for want in ("inuse_objects %d" % live, "alloc_objects %d" % allocs):
	    assert want in seen["text"], (want, seen["text"])
	assert seen["ink_pixels"] > 20000, seen["ink_pixels"]
	print(seen["text"])
	PY
}

# temporary: alloc_c's churn_malloc frees each of its 100 blocks of 64 before allocating the
# next (all temporary), leak_malloc frees none; bulk's bulk_churn does so 200000 times.
# The HTML report, loaded in headless Chromium: what its script drew is read back from the DOM
# and the screenshot's pixels. alloc_c's exact in-use bytes per function in the flame graph;
# phases' heap at the peak and at the end, and what grew between them, each known from its
# source alone; the chart drawn; nothing fetched from elsewhere; small however long.
t_analyzer_html() {
	command -v chromium >/dev/null || skip "chromium is not installed (scripts/install-deps.sh installs it)"
	local shots=$OUT/tests/screenshots
	mkdir -p "$shots"
	"$R" --via preload -o "$TMP/h1.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "alloc_c"; }
	"$R" --via preload -o "$TMP/h2.hsnap" -- "$T/phases" >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "phases"; }
	"$A" html -o "$TMP/h1.html" "$TMP/h1.hsnap" 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "html alloc_c"; }
	"$A" html -o "$TMP/h2.html" "$TMP/h2.hsnap" 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "html phases"; }
	! grep -qiE '(src|href)=|url\(|@import' "$TMP/h1.html" || die "the report refers to something outside itself"
	python3 tests/htmlcheck.py dom "$TMP/h1.html" "" >"$TMP/d1.json" || die "chromium on alloc_c's report"
	"$A" timeline --json "$TMP/h1.hsnap" >"$TMP/tl1.json" 2>/dev/null || die "timeline"
	python3 tests/htmlcheck.py dom "$TMP/h2.html" "moment=peak" >"$TMP/d2.json" || die "chromium: peak"
	python3 tests/htmlcheck.py dom "$TMP/h2.html" "moment=end" >"$TMP/d3.json" || die "chromium: end"
	python3 tests/htmlcheck.py dom "$TMP/h2.html" "range=peak,end" >"$TMP/d4.json" || die "chromium: range"
	python3 tests/htmlcheck.py dom "$TMP/h2.html" "range=peak,end&value=alloc_space" >"$TMP/d5.json" || die "chromium: alloc range"
	"$R" --via preload -o "$TMP/h6.hsnap" -- "$T/recurse" >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "recurse"; }
	"$A" html -o "$TMP/h6.html" "$TMP/h6.hsnap" 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "html recurse"; }
	python3 tests/htmlcheck.py dom "$TMP/h6.html" "" >"$TMP/d6r.json" || die "chromium: recurse"
	python3 - "$TMP" <<-'PY' || die "what rendered"
	import json, sys
	d = [json.load(open("%s/d%d.json" % (sys.argv[1], i))) for i in range(1, 6)]
	for x in d:
	    assert x["rendered"], "the page's script did not finish"
	v = d[0]["values"]
	want = {"leak_malloc": 10000, "make_calloc": 4000, "thread_work": 20000, "child_work": 15000, "plugin_alloc": 12288}
	for fn, b in want.items():
	    assert v.get(fn) == b, (fn, v.get(fn), b)
	assert "leak_malloc" in d[0]["table_functions"], d[0]["table_functions"][:10]
	# The chart drew every point of the timeline's series.
	tl = json.load(open("%s/tl1.json" % sys.argv[1]))["points"]
	assert d[0]["points"] == len(tl) > 0, (d[0]["points"], len(tl))
	peak, end, grew, alloc = (x["values"] for x in d[1:])
	assert peak.get("phase_one") == 3000000 and "phase_two" not in peak, peak
	assert end.get("phase_two") == 1000000 and "phase_one" not in end, end
	assert grew.get("phase_two") == 1000000 and "phase_one" not in grew, grew
	assert alloc.get("phase_two") == 1000000 and "phase_one" not in alloc, alloc
	assert "(peak)" in d[1]["caption"] and "Grew from" in d[3]["caption"], (d[1]["caption"], d[3]["caption"])
	# The functions table follows the view: [flat, cum] at the end, the peak, over a range.
	view = [x["view"] for x in d]
	for fn, b in want.items():
	    assert view[0].get(fn) == [b, b], (fn, view[0].get(fn), b)
	assert view[1].get("phase_one") == [3000000, 3000000] and "phase_two" not in view[1], view[1]
	assert view[2].get("phase_two") == [1000000, 1000000] and "phase_one" not in view[2], view[2]
	for g in view[3:]:
	    assert g.get("phase_two") == [1000000, 1000000] and "phase_one" not in g, g
	# Recursion counts once in cum: nest keeps 6000 bytes over three levels of itself.
	r = json.load(open("%s/d6r.json" % sys.argv[1]))["view"]
	assert r.get("nest") == [6000, 6000] and r.get("outer") == [0, 6000], r
	print("alloc_c", {k: v[k] for k in want}, "| phases peak", peak["phase_one"], "end", end["phase_two"])
	PY
	# The pictures: a filled chart and a flame graph, in pixels (kept for people to look at).
	python3 tests/htmlcheck.py shot "$TMP/h1.html" "" "$shots/alloc_c.png" >"$TMP/s1.json" || die "screenshot"
	python3 tests/htmlcheck.py shot "$TMP/h2.html" "range=peak,end" "$shots/phases-range.png" >"$TMP/s2.json" || die "screenshot"
	python3 - "$TMP/s1.json" "$TMP/s2.json" <<-'PY' || die "the screenshots show no chart or flame graph (in $shots)"
	import json, sys
	for f in sys.argv[1:]:
	    s = json.load(open(f))
	    assert s["live_pixels"] > 5000 and s["flame_pixels"] > 5000, (f, s)
	    print(f, s)
	PY
	# Small however long: 420k events and 200k temporary blocks.
	"$R" --via preload -o "$TMP/h3.hsnap" -- "$T/alloc_c" bulk >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "bulk"; }
	"$A" html -o "$TMP/h3.html" "$TMP/h3.hsnap" 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "html bulk"; }
	[ "$(stat -c %s "$TMP/h3.html")" -lt 3000000 ] || die "bulk report is $(stat -c %s "$TMP/h3.html") bytes"
	# 20000 stacks in a tree of 40000 call paths: 2500 kept, the rest folded into their callers,
	# every byte still counted (20000 blocks of 100 + i % 7 bytes).
	"$OUT/tests/craft" manystacks "$TMP/h5.hsnap" 20000 || die "craft manystacks"
	"$A" html -o "$TMP/h5.html" "$TMP/h5.hsnap" 2>/dev/null || die "html of many stacks"
	python3 tests/htmlcheck.py dom "$TMP/h5.html" "" >"$TMP/d7.json" || die "chromium on many stacks"
	python3 - "$TMP/d7.json" "$TMP/h5.html" <<-'PY' || die "folding"
	import json, re, sys
	d, page = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
	data = json.loads(re.search(r'<script id=data type="application/json">(.*?)</script>', page, re.S).group(1))
	assert d["values"]["all"] == sum(100 + i % 7 for i in range(20000)), d["values"]["all"]
	assert len(data["names"]) == 2500 and data["folded_nodes"] > 30000, (len(data["names"]), data["folded_nodes"])
	assert len(page) < 3000000, len(page)
	print("kept", len(data["names"]), "folded", data["folded_nodes"], "page", len(page))
	PY
	# A recording's strings cannot end the page's elements or its script: names, the command, a
	# snapshot label, each "</script><img onerror=...>", show as text and run nothing.
	"$OUT/tests/craft" html "$TMP/h4.hsnap" || die "craft html"
	"$A" html -o "$TMP/h4.html" "$TMP/h4.hsnap" 2>/dev/null || die "html of the crafted file"
	python3 tests/htmlcheck.py dom "$TMP/h4.html" "" >"$TMP/d6.json" || die "chromium on the crafted report"
	python3 - "$TMP/d6.json" "$TMP/h4.html" <<-'PY' || die "crafted strings"
	import json, sys
	d, page = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
	assert d["rendered"], "the page's script did not run to its end"
	assert set(d["body"]) == {"data-rendered"}, d["body"]
	assert "<img" not in page.replace("&lt;img", ""), "a raw tag from the recording"
	assert any("</script><img" in n for n in d["values"]), list(d["values"])
	PY
	"$A" html "$TMP/h1.hsnap" --peak 2>"$TMP/e"; eq "html --peak exit" 2 $?
}

# Diffs across two builds of one program (tests/workloads/growth.c): the new build moves every
# line and grows grow_here by exactly 200000 bytes; nothing else changes.
t_analyzer_diff_builds() {
	local pid rc
	# Each build in its own tree, as two checkouts would have them.
	mkdir -p "$TMP/b1" "$TMP/b2"
	cp "$T/growth_old" "$TMP/b1/growth"
	cp "$T/growth_new" "$TMP/b2/growth"
	"$R" --via preload -o "$TMP/old.hsnap" -- "$TMP/b1/growth" 1 1 >/dev/null 2>"$TMP/g.err" || { cat "$TMP/g.err"; die "old"; }
	"$R" --via preload -o "$TMP/new.hsnap" -- "$TMP/b2/growth" 1 3 >/dev/null 2>"$TMP/g.err" || { cat "$TMP/g.err"; die "new"; }
	"$A" diff --json -n 0 "$TMP/old.hsnap" "$TMP/new.hsnap" >"$TMP/d.json" 2>/dev/null || die "diff"
	"$A" diff --json -n 0 --lines "$TMP/old.hsnap" "$TMP/new.hsnap" >"$TMP/dl.json" 2>/dev/null || die "diff --lines"
	python3 - "$TMP/d.json" "$TMP/dl.json" <<-'PY' || die "stacks across builds"
	import json, sys
	d, dl = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
	assert d["delta"] == 200000, d["delta"]
	assert [(f["name"], f["delta"]) for f in d["functions"]] == [("grow_here", 200000)], d["functions"]
	# Only what grew: one stack, grow_here's, shown with the new build's lines (moved by 60).
	st = d["stacks"]
	assert len(st) == 1 and st[0]["delta"] == 200000 and st[0]["name"].startswith("grow_here (growth.c:"), st
	assert "stable_here" not in json.dumps(st), st
	old_line = int(dl["stacks"][-1]["name"].split(":")[1].split(")")[0])
	new_line = int(st[0]["name"].split(":")[1].split(")")[0])
	# --lines keys by file:line: every stack of the moved build is new, each old one gone.
	names = sorted((s["name"].split(" ")[0], s["delta"]) for s in dl["stacks"])
	assert names == [("grow_here", -100000), ("grow_here", 300000), ("stable_here", -500000), ("stable_here", 500000)], names
	print("stacks:", st[0]["name"][:60], "| --lines:", names)
	PY
	# Processes match across recordings by command and executable, not by pid.
	pid=$("$A" info --json "$TMP/old.hsnap" | python3 -c 'import json,sys; print(json.load(sys.stdin)["processes"][0]["pid"])')
	"$A" diff --json --pid "$pid" "$TMP/old.hsnap" "$TMP/new.hsnap" >"$TMP/dp.json" 2>/dev/null || die "diff --pid"
	eq "diff --pid: growth" 200000 "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["delta"])' "$TMP/dp.json")"
	"$A" diff --pid "$pid" "$TMP/old.hsnap" testdata/alloc_c.hsnap >/dev/null 2>"$TMP/e"; eq "diff --pid, no match: exit" 4 $?
	contains "$TMP/e" "has no process with the command and executable name of --pid's in"
	# The gate: exit 5 past the limit, with one line naming the growth and grow_here; 0 within.
	"$A" diff --max-growth 199999 "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>"$TMP/e"; rc=$?
	eq "growth 200000 over 199999: exit" 5 $rc
	grep -q "grew by +200000 .*over the limit of 199999; grew most: grow_here +200000" "$TMP/e" || { cat "$TMP/e"; die "gate line"; }
	"$A" diff --max-growth 200000 "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "growth 200000 within 200000: exit" 0 $?
	"$A" diff --max-growth 190k "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "over 190k (194560): exit" 5 $?
	"$A" diff --max-growth 200k "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "within 200k (204800): exit" 0 $?
	# 200000 of 600000 is 33.3%.
	"$A" diff --max-growth 33% "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "over 33%: exit" 5 $?
	"$A" diff --max-growth 34% "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "within 34%: exit" 0 $?
	"$A" diff --json --max-growth 33% "$TMP/old.hsnap" "$TMP/new.hsnap" >"$TMP/dg.json" 2>/dev/null
	python3 -c 'import json,sys; g = json.load(open(sys.argv[1]))["gate"]; assert g["exceeded"] and g["limit"] == 198000, g' \
		"$TMP/dg.json" || die "the verdict in --json"
	"$A" diff --max-growth 5parsecs "$TMP/old.hsnap" "$TMP/new.hsnap" 2>"$TMP/e"; eq "bad amount: exit" 2 $?
	contains "$TMP/e" "invalid --max-growth '5parsecs'"
	"$A" top --max-growth 5% "$TMP/old.hsnap" 2>/dev/null; eq "--max-growth on top: exit" 2 $?
}

# Sampled recordings: the standard error each estimate carries against the spread of 40
# recordings of one run, and the gate's 95% confidence: identical runs pass a 1% gate, a
# growth of 200% (tests/workloads/growth.c with GROW 13) fails it. 120 MB a run at a 4 KiB
# mean: a pair's growth has a standard error of about 0.8% of the total, so a correct gate
# fails two pairs of 20 about once in 2000 runs (at 60 MB, once in 200).
t_analyzer_gate_sampled() {
	local i pass=0
	for i in $(seq 1 40); do
		"$R" --via preload -s 4096 -o "$TMP/s$i.hsnap" -- "$T/growth_old" 200 1 >/dev/null 2>"$TMP/g.err" ||
			{ cat "$TMP/g.err"; die "sampled recording $i"; }
		"$A" top --json -n 0 "$TMP/s$i.hsnap" >"$TMP/s$i.json" 2>/dev/null || die "top $i"
	done
	python3 - "$TMP" <<-'PY' || die "standard errors against the spread of recordings"
	import json, statistics, sys
	for fn in ("grow_here", "stable_here"):
	    est, se = [], []
	    for i in range(1, 41):
	        f = {x["name"]: x for x in json.load(open("%s/s%d.json" % (sys.argv[1], i)))["functions"]}[fn]
	        est.append(f["flat"]); se.append(f["flat_se"])
	    ratio = statistics.stdev(est) / statistics.mean(se)
	    print(fn, "mean", round(statistics.mean(est)), "spread", round(statistics.stdev(est)),
	          "stated se", round(statistics.mean(se)), "ratio %.2f" % ratio)
	    assert 1 / 1.5 <= ratio <= 1.5, ratio
	PY
	for i in $(seq 1 2 39); do
		"$A" diff --max-growth 1% "$TMP/s$i.hsnap" "$TMP/s$((i + 1)).hsnap" >/dev/null 2>>"$TMP/gate.log" && pass=$((pass + 1))
	done
	echo "identical runs passing a 1% gate: $pass of 20"
	[ $pass -ge 19 ] || { cat "$TMP/gate.log"; die "only $pass of 20 pairs of identical runs pass a 1% gate"; }
	"$R" --via preload -s 4096 -o "$TMP/big.hsnap" -- "$T/growth_new" 200 13 >/dev/null 2>&1 || die "grown recording"
	"$A" diff --max-growth 1% "$TMP/s1.hsnap" "$TMP/big.hsnap" >/dev/null 2>"$TMP/e"
	eq "a 200% growth against a 1% gate: exit" 5 $?
	contains "$TMP/e" "grew most: grow_here"
}

t_analyzer_temporary() {
	"$R" --via preload -o "$TMP/tp.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/tp.err" || { cat "$TMP/tp.err"; die "recording"; }
	"$A" temporary -n 0 "$TMP/tp.hsnap" >"$TMP/tp.txt" 2>/dev/null || die "temporary"
	grep -qE '^ +100 +6400 +100\.0%  churn_malloc$' "$TMP/tp.txt" || { cat "$TMP/tp.txt"; die "churn_malloc: 100 temporary, 6400 bytes"; }
	grep -q "leak_malloc" "$TMP/tp.txt" && die "leak_malloc has no temporary allocation"
	"$R" --via preload -o "$TMP/tpb.hsnap" -- "$T/alloc_c" bulk >/dev/null 2>"$TMP/tp.err" || { cat "$TMP/tp.err"; die "bulk"; }
	"$A" temporary --json "$TMP/tpb.hsnap" >"$TMP/tpb.json" 2>/dev/null || die "temporary --json"
	python3 - "$TMP/tpb.json" <<-'PY' || die "bulk temporary"
	import json, sys
	d = json.load(open(sys.argv[1]))
	f = {x["function"]: x for x in d["functions"]}
	assert f["bulk_churn"]["temporary"] == 200000 and f["bulk_churn"]["temporary_bytes"] == 20000000, f.get("bulk_churn")
	assert f["bulk_churn"]["allocations"] == 200000
	assert "bulk_keep" not in f, f.get("bulk_keep")
	PY
}

# A stripped binary: its frames have no symbols, and every location still gets a function,
# named module+0xOFFSET as the text reports name it (viewers drop locations without one).
t_pprof_unsymbolized() {
	need_go
	cp "$T/libplugin.so" "$TMP/" # alloc_c dlopens it from its own directory
	cp "$T/alloc_c" "$TMP/alloc_stripped" && strip --strip-all "$TMP/alloc_stripped" || skip "no strip (binutils)"
	"$R" --via preload -o "$TMP/str.hsnap" -- "$TMP/alloc_stripped" >/dev/null 2>"$TMP/str.err" ||
		{ cat "$TMP/str.err"; die "recording a stripped binary"; }
	"$A" pprof -o "$TMP/str.pb.gz" "$TMP/str.hsnap" 2>/dev/null || die "pprof"
	go tool pprof -raw "$TMP/str.pb.gz" >"$TMP/str.raw" 2>/dev/null || die "go tool pprof -raw"
	sed -n '/^Locations/,/^Mappings/p' "$TMP/str.raw" >"$TMP/str.locs"
	grep -qE '^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ alloc_stripped\+0x[0-9a-f]+ ' "$TMP/str.locs" ||
		{ head -20 "$TMP/str.locs"; die "no module+0xOFFSET function for the stripped binary's frames"; }
	grep -E '^ +[0-9]+: 0x[0-9a-f]+( M=[0-9]+)? *$' "$TMP/str.locs" &&
		die "locations without a function"
	return 0
}

# ---- --stack auto (the default): unwind tables from .eh_frame ----

# The tables against binutils' own reading of .eh_frame, row by row, on Debian's binaries
# (none of them built with frame pointers) and ours.
t_unwind_tables() {
	local f n=0
	command -v readelf >/dev/null || skip "no readelf (binutils) to compare with"
	for f in "$T/nofp" "$T/nofp_debugframe" "$OUT/libheapsnap.so" /lib/x86_64-linux-gnu/libc.so.6 /usr/bin/python3.11 /usr/bin/sqlite3 \
		/usr/bin/git /usr/lib/x86_64-linux-gnu/libstdc++.so.6; do
		[ -r "$f" ] || continue
		python3 tests/unwcheck.py "$T/unwdump" "$f" || die "the unwind table of $f differs from readelf's reading"
		n=$((n + 1))
	done
	[ $n -ge 3 ] || die "too few binaries compared"
}

# nofp_check NAME [LEVEL]: tests/workloads/nofp.c's figures, every level up to LEVEL (default
# __libc_start_call_main, where only nofp's bytes are), in $TMP/NAME.hsnap.
nofp_check() {
	local p=$TMP/$1.pb.gz lvl
	"$A" pprof -o "$p" "$TMP/$1.hsnap" 2>/dev/null || die "$1: pprof"
	eq "$1: nofp_level3 flat" 20000 "$(pv $p inuse_space nofp_level3)"
	for lvl in nofp_level2 nofp_level1 main __libc_start_call_main; do
		eq "$1: $lvl cum" 20000 "$(pv $p inuse_space $lvl cum)"
		if [ "$lvl" = "${2:-}" ]; then break; fi
	done
}

# Default options, on a workload built without frame pointers: every level exact, every
# event and sampled (at 64 bytes a 1000-byte block is sampled with probability 1 - e^-15.6
# and weighs exactly one), through exec and fork, and for C++ and Rust.
t_bpf_auto_nofp() {
	need_bpf; need_go
	record -o "$TMP/an.hsnap" -- "$T/nofp" || die "recording"
	nofp_check an
	record -s 64 -o "$TMP/as.hsnap" -- "$T/nofp" || die "sampled recording"
	nofp_check as
	# Callers taking turns, their stacks alike but for one return address: each its own.
	record -o "$TMP/aa.hsnap" -- "$T/nofp" alt || die "recording nofp alt"
	"$A" pprof -o "$TMP/aa.pb.gz" "$TMP/aa.hsnap"
	eq "alt: nofp_level3 flat" 20000 "$(pv "$TMP/aa.pb.gz" inuse_space nofp_level3)"
	eq "alt: nofp_left cum" 10000 "$(pv "$TMP/aa.pb.gz" inuse_space nofp_left cum)"
	eq "alt: nofp_right cum" 10000 "$(pv "$TMP/aa.pb.gz" inuse_space nofp_right cum)"
	"$A" info "$TMP/an.hsnap" | grep -q "stacks: auto" || die "auto is not the default"
	# A shell that forks, and a child that execs: the tables follow.
	record -o "$TMP/af.hsnap" -- /bin/sh -c "$T/nofp; exit 0" || die "recording through a shell"
	nofp_check af main
	record -o "$TMP/ac.hsnap" -- "$T/alloc_cxx_nofp" || die "C++ recording"
	"$A" pprof -o "$TMP/ac.pb.gz" "$TMP/ac.hsnap"
	eq "C++ new Widget x20" 960 "$(pv "$TMP/ac.pb.gz" inuse_space 'cxx_new_objects()')"
	eq "C++ main cum (every level reached)" 7215 "$(pv "$TMP/ac.pb.gz" inuse_space main cum)"
	[ -x "$T/alloc_rust_nofp" ] || return 0
	record -o "$TMP/ar.hsnap" -- "$T/alloc_rust_nofp" || die "Rust recording"
	"$A" pprof -o "$TMP/ar.pb.gz" "$TMP/ar.hsnap"
	eq "Rust rust_boxes" 5000 "$(pv "$TMP/ar.pb.gz" inuse_space alloc_rust::rust_boxes)"
	eq "Rust alloc_rust::main cum" 8000 "$(pv "$TMP/ar.pb.gz" inuse_space alloc_rust::main cum)"
}

# Attached to a running process whose modules the recorder has read: the walk is the tables'
# own (no stack copied), every level exact, and no walk stops early.
t_bpf_auto_attached() {
	need_bpf; need_go
	[ "$VIA" = bpf ] || skip "BPF only: in-process attaching is t_inject_auto_nofp"
	local s
	for s in 0 64; do
		RARGS="--via bpf -s $s" inject_start aa$s "$T/nofp"
		inject_finish aa$s 0
		nofp_check aa$s
		"$A" stats --json "$TMP/aa$s.hsnap" >"$TMP/aa$s.json"
		grep -qE '"stacks\.unwind_[a-z_]+":[1-9]' "$TMP/aa$s.json" && { cat "$TMP/aa$s.json"; die "-s $s: a walk stopped or copied"; }
		contains "$TMP/aa$s.json" '"stacks.unwind_copied_instead":0'
	done
	# Its own frames described only in .debug_frame (-fno-asynchronous-unwind-tables -g), its C
	# runtime's in .eh_frame: the recorder's table holds both.
	readelf -S "$T/nofp_debugframe" | grep -q '\.debug_frame' || skip "the compiler put no .debug_frame in the test program"
	RARGS="--via bpf -s 0" inject_start ad "$T/nofp_debugframe"
	inject_finish ad 0
	nofp_check ad
	"$A" stats --json "$TMP/ad.hsnap" >"$TMP/ad.json"
	grep -qE '"stacks\.unwind_[a-z_]+":[1-9]' "$TMP/ad.json" && { cat "$TMP/ad.json"; die ".debug_frame: a walk stopped or copied"; }
	contains "$TMP/ad.json" '"stacks.unwind_copied_instead":0'
}

t_inject_auto_nofp() {
	need_inject; need_go
	local s
	for s in 0 64; do
		RARGS="-s $s" inject_start ia$s "$T/nofp"
		contains "$TMP/ia$s.rerr" "recording via inject"
		inject_finish ia$s 0
		nofp_check ia$s
	done
}

# Debian's own programs, built without frame pointers, default options: most of the heap
# at its peak sits in stacks that reach __libc_start_call_main.
reach_main() {
	local name=$1 p=$TMP/$1.pb.gz share
	"$A" pprof --snapshot peak -o "$p" "$TMP/$name.hsnap" 2>/dev/null || die "$name: pprof"
	share=$(go tool pprof -symbolize=none -top -cum -nodecount=100000 -sample_index=inuse_space -unit=B "$p" 2>/dev/null |
		awk '/Showing nodes accounting for/ { for (i = 1; i <= NF; i++) if ($i == "total") { t = $(i - 1); sub(/B,?$/, "", t) } }
		     $NF == "__libc_start_call_main" { v = $4; sub(/B$/, "", v) }
		     END { if (t > 0) printf "%d", 100 * v / t; else print 0 }')
	echo "$name: $share% of the in-use bytes at the peak reach __libc_start_call_main"
	[ "$share" -ge 90 ] || { "$A" stats "$TMP/$name.hsnap"; die "$name: only $share% reach __libc_start_call_main"; }
}

t_bpf_auto_debian() {
	need_bpf; need_go
	[ -x /usr/bin/python3 ] && command -v sqlite3 >/dev/null && command -v git >/dev/null ||
		skip "python3, sqlite3 or git from Debian is missing"
	record --snapshot-at-peak -o "$TMP/dsq.hsnap" -- sqlite3 :memory: "create table t(a integer primary key, b text);
		with recursive c(x) as (select 1 union all select x+1 from c where x < 100000)
		insert into t select x, hex(randomblob(20)) from c; create index i on t(b);" || die "sqlite3"
	reach_main dsq
	PYTHONMALLOC=malloc record --snapshot-at-peak -o "$TMP/dpy.hsnap" -- /usr/bin/python3 -c \
		'import json; d = {i: str(i) * 3 for i in range(200000)}; print(len(json.dumps(list(d.values())[:1000])))' ||
		die "python3"
	reach_main dpy
	mkdir -p "$TMP/repo" && git -C "$TMP/repo" init -q && for i in $(seq 200); do echo "line $i" >"$TMP/repo/f$i"; done
	record --snapshot-at-peak -o "$TMP/dgit.hsnap" -- git -C "$TMP/repo" add -A || die "git add"
	reach_main dgit
}

t_bpf_dwarf_cxx_rust() {
	need_bpf; need_go
	record --stack dwarf -o "$TMP/cd.hsnap" -- "$T/alloc_cxx_nofp" || die "C++ dwarf recording"
	"$A" pprof -o "$TMP/cd.pb.gz" "$TMP/cd.hsnap"
	eq "C++ new Widget x20" 960 "$(pv "$TMP/cd.pb.gz" inuse_space 'cxx_new_objects()')"
	eq "C++ main cum (every level reached)" 7215 "$(pv "$TMP/cd.pb.gz" inuse_space main cum)"
	[ -x "$T/alloc_rust_nofp" ] || skip "no Rust compiler: the Rust workload was not built"
	record --stack dwarf -o "$TMP/rd.hsnap" -- "$T/alloc_rust_nofp" || die "Rust dwarf recording"
	"$A" pprof -o "$TMP/rd.pb.gz" "$TMP/rd.hsnap"
	eq "Rust rust_boxes" 5000 "$(pv "$TMP/rd.pb.gz" inuse_space alloc_rust::rust_boxes)"
	eq "Rust alloc_rust::main cum" 8000 "$(pv "$TMP/rd.pb.gz" inuse_space alloc_rust::main cum)"
}

t_bpf_dwarf_debian() {
	need_bpf
	[ -x /usr/bin/python3 ] && command -v sqlite3 >/dev/null || skip "python3 or sqlite3 from Debian is missing"
	PYTHONMALLOC=malloc "$R" --via "$VIA" --stack dwarf -s 64k --snapshot-at-peak -o "$TMP/py.hsnap" -- /usr/bin/python3 -c \
		'd = {i: str(i) * 3 for i in range(300000)}; print(len(d))' >/dev/null 2>"$TMP/py.err" || { cat "$TMP/py.err"; die "python3"; }
	"$A" top -n 0 --snapshot peak "$TMP/py.hsnap" >"$TMP/py.top" 2>/dev/null
	grep -q " Py_BytesMain$" "$TMP/py.top" || die "python3 stacks must reach Py_BytesMain"
	grep -qE " _?Py[A-Za-z_]+$" "$TMP/py.top" || die "no CPython function names"
	"$R" --via "$VIA" --stack dwarf -s 64k --snapshot-at-peak -o "$TMP/sq.hsnap" -- sqlite3 :memory: \
		"create table t(a integer primary key, b text); with recursive c(x) as (select 1 union all select x+1 from c where x < 200000) insert into t select x, hex(randomblob(20)) from c;" \
		>/dev/null 2>"$TMP/sq.err" || { cat "$TMP/sq.err"; die "sqlite3"; }
	"$A" top -n 0 --snapshot peak "$TMP/sq.hsnap" >"$TMP/sq.top" 2>/dev/null
	grep -q " sqlite3_step$" "$TMP/sq.top" || die "sqlite3 stacks must reach sqlite3_step"
	grep -q " sqlite3VdbeExec$" "$TMP/sq.top" || die "sqlite3 stacks must reach sqlite3VdbeExec"
}

# The same programs built with ASan and UBSan (leak checks on): a memory error anywhere in
# recording, unwinding, symbolizing or writing output fails the test.
t_sanitizers() {
	local SR=$OUT/asan/heapsnap-record SA=$OUT/asan/heapsnap-analyze sub seed
	[ -x "$SA" ] || die "no sanitizer build"
	export ASAN_OPTIONS=abort_on_error=0:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:exitcode=99
	for sub in pprof top leaks stats summary info collapsed; do
		"$SA" $sub --no-symbolize -o "$TMP/san.out" testdata/alloc_c.hsnap 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "analyzer $sub"; }
	done
	for seed in 1 2 3 4 5 6 7 8 9 10; do
		"$T/mutate" testdata/alloc_c.hsnap "$TMP/sm.hsnap" $seed
		"$SA" pprof --no-symbolize -o "$TMP/san.out" "$TMP/sm.hsnap" 2>"$TMP/san.err"
		[ $? -ne 99 ] || { cat "$TMP/san.err"; die "analyzer on mutant $seed"; }
	done
	# In-process first (no BPF needed), its library found where the plain build put it.
	export HEAPSNAP_LIB=$OUT/libheapsnap.so
	"$SR" --via preload -o "$TMP/s0.hsnap" -- "$T/alloc_cxx" >/dev/null 2>"$TMP/san.err" ||
		{ cat "$TMP/san.err"; die "recorder, in-process"; }
	"$SA" top -o "$TMP/san.out" "$TMP/s0.hsnap" 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "analyzer top s0"; }
	[ -z "$BPF_REASON" ] || skip "analyzer and in-process recorder checked; BPF needs: $BPF_REASON"
	"$SR" --via bpf -o "$TMP/s1.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "recorder"; }
	"$SR" --stack dwarf -o "$TMP/s2.hsnap" -- "$T/nofp" >/dev/null 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "recorder dwarf"; }
	"$SR" -s 64k --interval 0.05 --snapshot-at-peak -o "$TMP/s3.hsnap" -- "$T/demo" >/dev/null 2>"$TMP/san.err" ||
		{ cat "$TMP/san.err"; die "recorder sampled"; }
	for f in s1 s2 s3; do
		for sub in pprof top leaks stats; do
			"$SA" $sub -o "$TMP/san.out" "$TMP/$f.hsnap" 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "analyzer $sub $f"; }
		done
	done
	"$SA" diff --pprof "$TMP/san.pb.gz" "$TMP/s1.hsnap" "$TMP/s3.hsnap" >/dev/null 2>"$TMP/san.err" ||
		{ cat "$TMP/san.err"; die "analyzer diff"; }
}

t_bpf_killed_recorder() {
	need_bpf
	local rpid i
	# A shell between them keeps the target's exit status when the recorder is gone.
	"$R" --via "$VIA" -o "$TMP/k.hsnap" -- /bin/sh -c "$T/alloc_c loop 3; echo \$? >$TMP/k.status" 2>"$TMP/k.err" &
	rpid=$!
	for i in $(seq 100); do pgrep -f "alloc_c loop 3" >/dev/null && break; sleep 0.05; done
	pgrep -f "alloc_c loop 3" >/dev/null || die "target not started"
	# Killed once the file holds allocations (a condition, not a time: a loaded machine can
	# take longer than a second to write the first frame).
	for i in $(seq 400); do
		"$A" stats --json "$TMP/k.hsnap" 2>/dev/null | grep -q '"allocs":[1-9]' && break
		sleep 0.05
	done
	kill -9 $rpid; wait $rpid 2>/dev/null
	pgrep -f "alloc_c loop 3" >/dev/null || die "the target died with the recorder"
	for i in $(seq 100); do [ -s "$TMP/k.status" ] && break; sleep 0.1; done
	eq "the target's own exit status, after its recorder was killed" 0 "$(cat "$TMP/k.status" 2>/dev/null)"
	"$A" top --no-symbolize "$TMP/k.hsnap" >"$TMP/k.top" 2>"$TMP/k.e" || { cat "$TMP/k.e"; die "a killed recorder's file must stay readable"; }
	contains "$TMP/k.e" "no footer"
	"$A" stats --json "$TMP/k.hsnap" | grep -q '"allocs":[1-9]' || die "allocations recorded before the kill are lost"
}

t_bpf_symbolize_moved() {
	need_bpf; need_go
	mkdir -p "$TMP/bin" "$TMP/dbg" "$TMP/wrong"
	cp "$T/alloc_c" "$T/libplugin.so" "$TMP/bin/"
	record -o "$TMP/m.hsnap" -- "$TMP/bin/alloc_c" || die "recording the copy"
	mv "$TMP/bin" "$TMP/moved"
	# Original path gone: unsymbolized, and the analyzer says why.
	"$A" top -n 0 "$TMP/m.hsnap" >"$TMP/m.top" 2>"$TMP/m.err"
	grep -q "leak_malloc" "$TMP/m.top" && die "symbolized without the binary"
	contains "$TMP/m.err" "$TMP/bin/alloc_c (build-id"
	contains "$TMP/m.err" "stays unsymbolized"
	# --debug-dir, plain tree.
	"$A" pprof --debug-dir "$TMP/moved" -o "$TMP/m1.pb.gz" "$TMP/m.hsnap" 2>/dev/null
	eq "found by --debug-dir" 10000 "$(pv "$TMP/m1.pb.gz" inuse_space leak_malloc)"
	eq "plugin found too" 12288 "$(pv "$TMP/m1.pb.gz" inuse_space plugin_alloc)"
	# --debug-dir, .build-id layout.
	local bid
	bid=$("$A" info "$TMP/m.hsnap" | awk -v p="$TMP/bin/alloc_c" '$0 ~ p " build-id" {print $NF; exit}')
	[ -n "$bid" ] || die "no build-id for the copy"
	mkdir -p "$TMP/dbg/.build-id/${bid:0:2}"
	cp "$TMP/moved/alloc_c" "$TMP/dbg/.build-id/${bid:0:2}/${bid:2}"
	"$A" pprof --debug-dir "$TMP/dbg" -o "$TMP/m2.pb.gz" "$TMP/m.hsnap" 2>/dev/null
	eq "found by build-id layout" 10000 "$(pv "$TMP/m2.pb.gz" inuse_space leak_malloc)"
	# PPROF_BINARY_PATH.
	PPROF_BINARY_PATH="$TMP/moved" "$A" pprof -o "$TMP/m3.pb.gz" "$TMP/m.hsnap" 2>/dev/null
	eq "found by PPROF_BINARY_PATH" 10000 "$(pv "$TMP/m3.pb.gz" inuse_space leak_malloc)"
	# A file with the right name and the wrong build-id is never used.
	cp "$T/demo" "$TMP/wrong/alloc_c"
	"$A" top -n 0 --debug-dir "$TMP/wrong" "$TMP/m.hsnap" >"$TMP/w.top" 2>/dev/null
	grep -q "leak_malloc\|main" "$TMP/w.top" && grep -q "cache_insert\|handle_request" "$TMP/w.top" && die "symbolized against the wrong build-id"
	grep -q "leak_malloc" "$TMP/w.top" && die "symbolized against a file with another build-id"
	# --no-symbolize: addresses, mappings and build-ids for pprof's own symbolizer.
	"$A" pprof --no-symbolize -o "$TMP/ns.pb.gz" "$TMP/m.hsnap"
	go tool pprof -symbolize=none -raw "$TMP/ns.pb.gz" >"$TMP/ns.raw" 2>&1
	contains "$TMP/ns.raw" "$bid"
	grep -q "leak_malloc" "$TMP/ns.raw" && die "--no-symbolize wrote function names"
	true
}


# Signals during start-up (loading and verifying the programs takes up to a second): SIGUSR1
# is kept as a snapshot once recording starts; SIGINT and SIGTERM end the recorder with no
# file and the command never run. Signals are sent as soon as the recorder blocks them.
wait_blocked() {
	local i m
	for i in $(seq 200); do
		# SigBlk: SIGINT is bit 1, SIGUSR1 bit 9; both are blocked first thing in main.
		m=$(awk '/^SigBlk:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
		[ -n "$m" ] && [ $((16#$m & 0x202)) = $((0x202)) ] && return 0
		sleep 0.01
	done
	return 1
}

t_bpf_signals_startup() {
	need_bpf
	local rpid rc sig
	"$R" --via "$VIA" -o "$TMP/su.hsnap" -- "$T/alloc_c" 2>"$TMP/su.err" >/dev/null &
	rpid=$!
	wait_blocked $rpid || die "the recorder never blocked its signals"
	kill -USR1 $rpid
	wait $rpid; rc=$?
	eq "SIGUSR1 at start-up: the command's exit status" 0 $rc
	"$A" info --json "$TMP/su.hsnap" >"$TMP/su.json" || die "no readable file after SIGUSR1 at start-up"
	contains "$TMP/su.json" '"origin":"signal"'
	"$A" top "$TMP/su.hsnap" | grep -q "^ *10000 .*leak_malloc$" || die "the command did not run whole"
	for sig in INT TERM; do
		rm -f "$TMP/marker" "$TMP/si.hsnap"
		"$R" --via "$VIA" -o "$TMP/si.hsnap" -- /bin/sh -c "touch $TMP/marker" 2>"$TMP/si.err" &
		rpid=$!
		wait_blocked $rpid || die "the recorder never blocked its signals"
		kill -$sig $rpid
		wait $rpid; rc=$?
		if grep -q "during start-up" "$TMP/si.err"; then
			eq "SIG$sig at start-up exit" $((128 + $(kill -l $sig))) $rc
			[ ! -e "$TMP/si.hsnap" ] || die "SIG$sig at start-up left a file"
			[ ! -e "$TMP/marker" ] || die "SIG$sig at start-up: the held command ran anyway"
			! pgrep -P $rpid >/dev/null || die "SIG$sig at start-up left a child"
		else
			# Start-up was over: a normal stop, with a readable file.
			"$A" info "$TMP/si.hsnap" >/dev/null || die "SIG$sig after start-up: unreadable file"
		fi
	done
}

# Output files, as root: never through a symlink, never over another user's file, created
# 0600, devices and FIFOs written in place, no temporary file left behind.
t_output_files() {
	local f=testdata/alloc_c.hsnap rc d=$TMP/out
	mkdir -p "$d"; chmod 1777 "$d"
	echo victim >"$TMP/victim"
	ln -s "$TMP/victim" "$d/link.txt"
	"$A" top --no-symbolize -o "$d/link.txt" $f 2>"$TMP/e"; rc=$?
	eq "analyzer -o symlink exit" 1 $rc; contains "$TMP/e" "symbolic link"
	eq "victim untouched by the analyzer" victim "$(cat "$TMP/victim")"
	echo theirs >"$d/theirs.txt"; chown 65534 "$d/theirs.txt"
	"$A" top --no-symbolize -o "$d/theirs.txt" $f 2>"$TMP/e"; rc=$?
	eq "analyzer -o another user's file exit" 1 $rc; contains "$TMP/e" "belongs to another user"
	eq "their file untouched" theirs "$(cat "$d/theirs.txt")"
	"$A" top --no-symbolize -o "$d/mine.txt" $f || die "analyzer -o a new file"
	eq "analyzer output mode" 600 "$(stat -c %a "$d/mine.txt")"
	"$A" top --no-symbolize -o "$d/mine.txt" $f || die "analyzer -o over its own file"
	"$A" top --no-symbolize -o /dev/null $f || die "analyzer -o /dev/null"
	[ -c /dev/null ] || die "/dev/null is no longer a character device"
	mkfifo "$d/fifo"
	cat "$d/fifo" >"$TMP/fifo.out" &
	"$A" top --no-symbolize -o "$d/fifo" $f || die "analyzer -o FIFO"
	wait
	[ -p "$d/fifo" ] || die "the FIFO was replaced"
	grep -q "leak_malloc\|alloc_c+" "$TMP/fifo.out" || die "nothing came through the FIFO"
	# A failure leaves nothing: no output, no temporary file.
	"$A" top --no-symbolize -o "$d/none.txt" "$TMP/missing.hsnap" 2>/dev/null && die "a missing input succeeded"
	[ ! -e "$d/none.txt" ] || die "a failed run left its output"
	eq "files in the output directory" "fifo link.txt mine.txt theirs.txt" "$(ls "$d" | tr '\n' ' ' | sed 's/ $//')"
	[ -n "$BPF_REASON" ] && skip "analyzer checked; the recorder half needs BPF: $BPF_REASON"
	"$R" --via "$VIA" -o "$d/link.txt" -- /bin/true 2>"$TMP/e"; rc=$?
	eq "recorder -o symlink exit" 1 $rc; contains "$TMP/e" "symbolic link"
	eq "victim untouched by the recorder" victim "$(cat "$TMP/victim")"
	"$R" --via "$VIA" -o "$d/theirs.txt" -- /bin/true 2>"$TMP/e"; rc=$?
	eq "recorder -o another user's file exit" 1 $rc
	eq "their file untouched by the recorder" theirs "$(cat "$d/theirs.txt")"
	"$R" --via "$VIA" -o "$d/rec.hsnap" -- "$T/alloc_c" >/dev/null 2>&1 || die "recorder -o a new file"
	eq "recording mode" 600 "$(stat -c %a "$d/rec.hsnap")"
	"$R" --via "$VIA" -o /dev/null -- /bin/true 2>/dev/null || die "recorder -o /dev/null"
	[ -c /dev/null ] || die "the recorder replaced /dev/null"
	eq "files after recording" "fifo link.txt mine.txt rec.hsnap theirs.txt" "$(ls "$d" | tr '\n' ' ' | sed 's/ $//')"
}

# Crafted recordings (tests/unit/craft.c), each past what the recorder ever writes: none may
# hang the analyzer, cost it memory or time beyond its content, or reach a terminal raw.
t_analyzer_crafted() {
	local C=$T/craft rc sub
	mkfifo "$TMP/fifo"
	"$C" fifo "$TMP/fifo.hsnap" 1 "$TMP/fifo" || die "craft fifo"
	for sub in "top" "top --no-symbolize" "pprof -o $TMP/f.pb.gz" "stats"; do
		timeout 20 "$A" $sub "$TMP/fifo.hsnap" >/dev/null 2>&1; rc=$?
		[ $rc -lt 5 ] || die "a mapping naming a FIFO: $sub exited $rc (124: hung)"
	done
	"$C" fifo "$TMP/zero.hsnap" 1 /dev/zero && timeout 20 "$A" top "$TMP/zero.hsnap" >/dev/null 2>&1
	[ $? -lt 5 ] || die "a mapping naming /dev/zero"
	# A private file a recording names is not even opened, by root's analyzer least of all.
	if command -v strace >/dev/null && [ -e /etc/shadow ]; then
		"$C" fifo "$TMP/shadow.hsnap" 1 /etc/shadow || die "craft shadow"
		strace -f -qq -e trace=open,openat -o "$TMP/shadow.trace" "$A" top "$TMP/shadow.hsnap" >/dev/null 2>"$TMP/shadow.err"
		contains "$TMP/shadow.err" "/etc/shadow is not a regular file anyone may read; not opened"
		! grep -q '"/etc/shadow"' "$TMP/shadow.trace" || die "the analyzer opened /etc/shadow for a recording"
	fi
	# Each within 10 s and 400 MB of address space (the analyzer needs ~100 MB for them).
	lim() { ( ulimit -v 400000; timeout 10 "$A" "$@" ) >"$TMP/lim.out" 2>"$TMP/lim.err"; }
	"$C" deepstack "$TMP/deep.hsnap" 20000 || die "craft deepstack"
	lim summary "$TMP/deep.hsnap"; eq "stacks past max_stack exit" 3 $?
	contains "$TMP/lim.err" "stack deeper than the session's max_stack"
	"$C" bigwindow "$TMP/big.hsnap" 2000 || die "craft bigwindow"
	lim summary --no-symbolize "$TMP/big.hsnap"; eq "64 KiB dwarf windows exit" 3 $?
	"$C" counters "$TMP/cnt.hsnap" 400 || die "craft counters"
	lim stats "$TMP/cnt.hsnap"; rc=$?; [ $rc = 0 ] || [ $rc = 4 ] || die "400 x 1024 counter names: exit $rc"
	"$C" maps "$TMP/maps.hsnap" 200000 || die "craft maps"
	lim top --no-symbolize "$TMP/maps.hsnap"; eq "200000 mappings and unmaps exit" 0 $?
	# Terminal escapes from the file never reach the output raw.
	"$C" escape "$TMP/esc.hsnap" || die "craft escape"
	for sub in info summary top leaks stats collapsed "info --json" "summary --json"; do
		"$A" $sub --no-symbolize "$TMP/esc.hsnap" >"$TMP/esc.out" 2>&1
		! grep -q $'\x1b\|\x07\|\xc2\x9b' "$TMP/esc.out" || die "$sub let a control character through"
	done
	"$A" info "$TMP/esc.hsnap" | grep -qF 'evil\x1b[31m' || die "escaped names must stay readable"
	# A trailer cut by 1 to 16 bytes is no longer complete.
	local f=testdata/alloc_c.hsnap size cut
	size=$(stat -c %s $f)
	for cut in $(seq 1 16); do
		head -c $((size - cut)) $f >"$TMP/cut.hsnap"
		"$A" info "$TMP/cut.hsnap" 2>"$TMP/cut.err" | grep -q "^Format: 2.0, truncated" || die "cut by $cut bytes reads as complete"
		contains "$TMP/cut.err" "trailer"
	done
}

# Losses are said wherever figures are shown, and only events that were lost are called so.
t_losses() {
	local sub
	"$T/craft" lost "$TMP/lost.hsnap" || die "craft lost"
	for sub in top summary leaks; do
		"$A" $sub --no-symbolize "$TMP/lost.hsnap" >"$TMP/l.out" 2>"$TMP/l.err" || die "$sub"
		contains "$TMP/l.out" "Lost: 400 events while recording (lost.ringbuf_full 400)"
		contains "$TMP/l.err" "400 events were lost while recording"
		grep -q "Sampling: every allocation$" "$TMP/l.out" && die "$sub says every allocation of a lossy file"
	done
	"$A" summary --json --no-symbolize "$TMP/lost.hsnap" 2>/dev/null | grep -q '"lost_events":400' || die "JSON lost_events"
	"$A" pprof --no-symbolize -o "$TMP/l.pb.gz" "$TMP/lost.hsnap" 2>/dev/null
	if command -v go >/dev/null; then
		go tool pprof -raw "$TMP/l.pb.gz" 2>/dev/null | grep -q "lost: 400 events" || die "pprof comment"
	fi
	"$A" top testdata/alloc_c.hsnap 2>&1 | grep -q "Lost:\|were lost" && die "a file with no loss reports one"
	need_bpf
	# A frame-pointer walk that stops early (Debian's python3 has no frame pointers) is no loss.
	PYTHONMALLOC=malloc record --stats -o "$TMP/py.hsnap" -- /usr/bin/python3 -c 'x = [str(i) for i in range(20000)]' ||
		die "python3 recording"
	grep -q "events lost" "$TMP/record.err" && { cat "$TMP/record.err"; die "the recorder called stopped walks lost events"; }
	"$A" stats --json "$TMP/py.hsnap" >"$TMP/py.json"
	contains "$TMP/py.json" '"stacks.fp_walk_stopped":'
	grep -q '"lost.stack_error"' "$TMP/py.json" && die "lost.stack_error is no longer a loss"
	true
}

# -a sees short-lived processes whole: 100 runs of quick at once, each gone in a millisecond
# or two, all named, with their command lines and symbols, and their figures exact.
t_bpf_all_short_lived() {
	need_bpf
	local i n
	"$R" --via "$VIA" -a -s 0 --duration 60 -o "$TMP/as.hsnap" 2>"$TMP/as.err" &
	local rpid=$!
	for i in $(seq 200); do grep -q "probing" "$TMP/as.err" && break; sleep 0.05; done
	for i in $(seq 100); do "$T/quick" z$i & done
	wait $(jobs -p | grep -v "^$rpid$")
	kill -INT $rpid; wait $rpid || { cat "$TMP/as.err"; die "recorder -a"; }
	"$A" summary --json "$TMP/as.hsnap" >"$TMP/as.json" 2>/dev/null
	n=$(grep -o '"comm":"quick","cmdline":"[^"]*quick z[0-9]*"' "$TMP/as.json" | sort -u | wc -l)
	eq "short-lived processes named, with their command lines" 100 "$n"
	"$A" top -n 0 "$TMP/as.hsnap" 2>/dev/null | grep -q "^ *300000 .*quick_alloc$" || die "quick_alloc: 100 x 3000 under -a"
}

# 2000 dlopen/dlclose rounds of a plugin, each at a new address and named by a relative path
# (dlopen keeps it as given): 2000 x 16 bytes from plugin_alloc, and the profiler in the
# process keeps nothing of the modules gone (alloc_c prints how the address space grew).
t_bpf_dlcycle() {
	need_bpf
	record --stack auto -o "$TMP/dl.hsnap" -- "$T/alloc_c" dlcycle 2000 || die "dlcycle"
	"$A" top -n 0 "$TMP/dl.hsnap" >"$TMP/dl.top" 2>&1
	grep -q "^ *32000 .*plugin_alloc$" "$TMP/dl.top" || { head -20 "$TMP/dl.top"; die "plugin_alloc: 2000 x 16"; }
	eq "plugin_alloc's bytes under main;dlcycle" 32000 \
		"$("$A" collapsed "$TMP/dl.hsnap" 2>/dev/null | awk '/;main;dlcycle;plugin_alloc / { n += $NF } END { print n + 0 }')"
	local grew
	grew=$(sed -n 's/^dlcycle grew \(-*[0-9]*\) KiB$/\1/p' "$TMP/record.out")
	[ -n "$grew" ] && [ "$grew" -lt 1024 ] || die "the address space grew by ${grew:-?} KiB over 1900 rounds"
}

# A launched fork storm: 100 children, each exec'ing a short command, all named.
t_bpf_fork_storm() {
	need_bpf
	record -o "$TMP/fs.hsnap" -- /bin/sh -c "for i in \$(seq 100); do $T/quick y\$i & done; wait" || die "fork storm"
	"$A" summary --json "$TMP/fs.hsnap" >"$TMP/fs.json" 2>/dev/null
	eq "fork storm children named quick" 100 "$(grep -o '"comm":"quick","cmdline":"[^"]*quick y[0-9]*"' "$TMP/fs.json" | sort -u | wc -l)"
	! grep -q '"comm":"",' "$TMP/fs.json" || die "a process without a name"
	"$A" top -n 0 "$TMP/fs.hsnap" 2>/dev/null | grep -q "^ *300000 .*quick_alloc$" || die "quick_alloc: 100 x 3000"
}

# libFuzzer: the regression inputs, then a few seconds of fuzzing per target.
t_fuzz_targets() {
	[ -x "$OUT/fuzz/fuzz_replay" ] || skip "no libFuzzer build (clang with -fsanitize=fuzzer)"
	OUTPUT=$OUT scripts/fuzz.sh "${FUZZ_SECONDS:-5}" || die "fuzzing found a problem"
}

# ---- the in-process recorder (--via preload): the same exact figures as BPF ----
t_preload_c_exact() { VIA=preload t_bpf_c_exact; }
t_preload_c_labels_inline() { VIA=preload t_bpf_c_labels_inline; }
t_preload_cxx_exact() { VIA=preload t_bpf_cxx_exact; }
t_preload_rust_exact() { VIA=preload t_bpf_rust_exact; }
t_preload_sampled() { VIA=preload t_bpf_sampled; }
t_preload_handoff() { VIA=preload t_bpf_handoff; }
t_preload_other_allocators() { VIA=preload t_bpf_other_allocators; }
t_preload_snapshots_diff() { VIA=preload t_bpf_snapshots_diff; }
t_preload_killed_recorder() { VIA=preload t_bpf_killed_recorder; }
t_preload_fork_storm() { VIA=preload t_bpf_fork_storm; }
t_preload_dlcycle() { VIA=preload t_bpf_dlcycle; }
# Unwinding finds its files where symbolization does (one module cache): a binary whose call
# frame information is only in a separate debug file, found through --debug-dir by build-id.
t_preload_dwarf_debug_dir() {
	need_go
	local bid
	mkdir -p "$TMP/dd/bin"
	cp "$T/nofp_debugframe" "$TMP/dd/bin/nofp"
	readelf -S "$TMP/dd/bin/nofp" | grep -q '\.debug_frame' || skip "the compiler put no .debug_frame in the test program"
	bid=$(readelf -n "$TMP/dd/bin/nofp" | awk '/Build ID/ { print $3 }')
	mkdir -p "$TMP/dd/dbg/.build-id/${bid:0:2}"
	objcopy --only-keep-debug "$TMP/dd/bin/nofp" "$TMP/dd/dbg/.build-id/${bid:0:2}/${bid:2}.debug"
	strip --strip-debug "$TMP/dd/bin/nofp"
	! readelf -S "$TMP/dd/bin/nofp" | grep -q '\.debug_frame' || die "strip left .debug_frame"
	"$R" --via preload --stack dwarf -o "$TMP/dd.hsnap" -- "$TMP/dd/bin/nofp" >/dev/null 2>"$TMP/dd.err" ||
		{ cat "$TMP/dd.err"; die "recording"; }
	"$A" pprof -o "$TMP/dd0.pb.gz" "$TMP/dd.hsnap" 2>/dev/null || die "pprof"
	"$A" pprof --debug-dir "$TMP/dd/dbg" -o "$TMP/dd1.pb.gz" "$TMP/dd.hsnap" 2>/dev/null || die "pprof --debug-dir"
	# Without the debug file the callers are out of reach (no CFI): the test can fail.
	eq "no debug file: nofp_level1" absent "$(pv "$TMP/dd0.pb.gz" inuse_space nofp_level1 cum)"
	eq "--debug-dir: nofp_level3 flat" 20000 "$(pv "$TMP/dd1.pb.gz" inuse_space nofp_level3)"
	eq "--debug-dir: nofp_level1 cum" 20000 "$(pv "$TMP/dd1.pb.gz" inuse_space nofp_level1 cum)"
	eq "--debug-dir: main cum" 20000 "$(pv "$TMP/dd1.pb.gz" inuse_space main cum)"
}

t_preload_dwarf_nofp() { VIA=preload t_bpf_dwarf_nofp; }
t_preload_dwarf_cxx_rust() { VIA=preload t_bpf_dwarf_cxx_rust; }
t_preload_dwarf_debian() { VIA=preload t_bpf_dwarf_debian; }
t_preload_auto_nofp() { VIA=preload t_bpf_auto_nofp; }
t_preload_auto_debian() { VIA=preload t_bpf_auto_debian; }

# A target that overwrites its own ring (tests/workloads/scribble.c) costs that ring, said
# aloud, and nothing else: the recorder does not read past the record or crash.
t_preload_scribbled_ring() {
	"$R" --via preload -o "$TMP/sc.hsnap" -- "$T/scribble" >/dev/null 2>"$TMP/sc.err"
	eq "the target's own exit status" 0 $?
	contains "$TMP/sc.err" "a ring held a record of 536870912 bytes past what its producer wrote"
	"$A" info "$TMP/sc.hsnap" >/dev/null 2>&1 || die "the recording must stay readable"
}

# Sampling every block (a 16-byte mean): the library's table of sampled blocks fills with
# the tombstones of 200,000 frees and is rebuilt on the way; the figures stay exact.
t_preload_sampled_dense() {
	record --via preload -s 16 -o "$TMP/sd.hsnap" -- "$T/alloc_c" bulk || die "dense sampling"
	"$A" pprof -o "$TMP/sd.pb.gz" "$TMP/sd.hsnap" 2>/dev/null
	need_go
	within "bulk_keep inuse_space" 82080000 "$(pv "$TMP/sd.pb.gz" inuse_space bulk_keep)" 1
	within "bulk_churn alloc_space" 20000000 "$(pv "$TMP/sd.pb.gz" alloc_space bulk_churn)" 2
	eq "bulk_churn inuse (every sampled block freed)" absent "$(pv "$TMP/sd.pb.gz" inuse_space bulk_churn)"
}

# A user records their own program with no privilege at all; auto picks the way and says why.
t_preload_unprivileged() {
	command -v setpriv >/dev/null || skip "no setpriv to drop root"
	mkdir -p "$TMP/up"; chmod 777 "$TMP/up"; unpriv_bin
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$TMP/ub/heapsnap-record" -v -o "$TMP/up/c.hsnap" \
		-- "$TMP/ub/alloc_c" >/dev/null 2>"$TMP/e" || { cat "$TMP/e"; die "recording as uid 65534 without capabilities"; }
	contains "$TMP/e" "recording via preload: a launched, dynamically linked command"
	"$A" info "$TMP/up/c.hsnap" >"$TMP/up.info" 2>/dev/null
	contains "$TMP/up.info" "Recorded via preload: a launched, dynamically linked command"
	"$A" pprof -o "$TMP/up.pb.gz" "$TMP/up/c.hsnap" 2>/dev/null
	if command -v go >/dev/null; then
		eq "unprivileged: leak_malloc inuse_space" 10000 "$(pv "$TMP/up.pb.gz" inuse_space leak_malloc)"
		eq "unprivileged: child_work (fork child)" 15000 "$(pv "$TMP/up.pb.gz" inuse_space child_work)"
	fi
	[ -n "$BPF_REASON" ] && return 0
	# auto: BPF for what preloading cannot reach.
	"$R" -v -o "$TMP/st.hsnap" -- "$T/static_once" "$TMP/runs" >/dev/null 2>"$TMP/e" || die "static"
	contains "$TMP/e" "recording via bpf: a static binary loads no preloaded library"
	"$R" --via preload --probe-links multi -o "$TMP/x.hsnap" -- /bin/true 2>"$TMP/e"; eq "--via preload --probe-links exit" 1 $?
	contains "$TMP/e" "is BPF's alone; use --via bpf"
}

# ---- injected into a running process (-p, --via inject) ----

# waitfor FILE TEXT: until TEXT is in FILE (a condition, not a time: up to 20 s).
waitfor() {
	local i
	for i in $(seq 400); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}

need_inject() {
	[ "$(id -u)" = 0 ] || skip "not root: attaching to processes of other users needs CAP_SYS_PTRACE"
	[ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" = 3 ] &&
		skip "kernel.yama.ptrace_scope is 3: no process may be attached to"
	return 0
}

# inject_start NAME TARGET...: starts TARGET with a FIFO to release it (its last argument),
# waits for "ready PID", attaches with the recorder's options in RARGS; sets TPID (the target),
# TJOB (its job) and RPID.
inject_start() {
	local name=$1
	shift
	mkfifo "$TMP/$name.fifo"; chmod 666 "$TMP/$name.fifo"
	"$@" "$TMP/$name.fifo" >"$TMP/$name.out" 2>"$TMP/$name.terr" &
	TJOB=$!
	waitfor "$TMP/$name.out" ready || die "$name: the target never said ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/$name.out")
	"$R" -v -p "$TPID" ${RARGS:--s 0} -o "$TMP/$name.hsnap" >/dev/null 2>"$TMP/$name.rerr" &
	RPID=$!
	waitfor "$TMP/$name.rerr" "attached to $TPID" || { cat "$TMP/$name.rerr"; die "$name: never attached"; }
}

# inject_finish NAME STATUS: releases the target; its own exit status and no output of ours in it.
inject_finish() {
	local rc
	echo go >"$TMP/$1.fifo"
	wait $TJOB; rc=$?
	eq "$1: the target's own exit status" "$2" $rc
	wait $RPID || { cat "$TMP/$1.rerr"; die "$1: the recorder failed"; }
	[ -s "$TMP/$1.terr" ] && { cat "$TMP/$1.terr"; die "$1: the target wrote to stderr"; }
	eq "$1: the target's stdout" "ready $TPID" "$(cat "$TMP/$1.out")"
}

# The exact figures of alloc_c's "inject" mode (tests/workloads/alloc_c.c), after the attach.
inject_check_c() {
	local name=$1 p=$TMP/$1.pb.gz unknown
	"$A" pprof -o "$p" "$TMP/$name.hsnap" 2>/dev/null || die "$name: pprof"
	eq "$name: after_attach inuse_space" 7777 "$(pv $p inuse_space after_attach)"
	eq "$name: after_attach inuse_objects" 7 "$(pv $p inuse_objects after_attach)"
	eq "$name: thread_work inuse_space (two threads)" 20000 "$(pv $p inuse_space thread_work)"
	eq "$name: child_work inuse_space (fork child)" 15000 "$(pv $p inuse_space child_work)"
	eq "$name: plugin_alloc inuse_space (dlopen'd after the attach)" 12288 "$(pv $p inuse_space plugin_alloc)"
	eq "$name: before_attach unseen" absent "$(pv $p alloc_space before_attach)"
	unknown=$("$A" stats --json "$TMP/$name.hsnap" | grep -o '"frees.unknown":[0-9]*' | cut -d: -f2)
	[ "${unknown:-0}" -ge 5 ] || die "$name: the 5 frees of pre-attach blocks must count as unknown, got ${unknown:-none}"
}

t_inject_threads() {
	need_inject; need_go
	inject_start thr "$T/alloc_c" inject
	contains "$TMP/thr.rerr" "recording via inject: libheapsnap.so loaded into the running process"
	grep -q "injected into $TPID: stopped [0-9.]* ms" "$TMP/thr.rerr" || die "the stop is not measured"
	eq "GOT entry of malloc while attached" libheapsnap "$(python3 tests/gotvalue.py $TPID "$T/alloc_c" malloc)"
	inject_finish thr 7
	inject_check_c thr
	"$A" info "$TMP/thr.hsnap" >"$TMP/thr.info"
	contains "$TMP/thr.info" "Recorded via inject: libheapsnap.so loaded into the running process"
	contains "$TMP/thr.info" "Command: $T/alloc_c inject $TMP/thr.fifo"
}

t_inject_cxx() {
	need_inject; need_go
	inject_start cxx "$T/alloc_cxx" inject
	inject_finish cxx 0
	local p=$TMP/cxx.pb.gz
	"$A" pprof -o "$p" "$TMP/cxx.hsnap" 2>/dev/null || die "pprof"
	eq "new Widget x20" 960 "$(pv $p inuse_space 'cxx_new_objects()')"
	eq "new char[1000] x5" 5000 "$(pv $p inuse_space 'cxx_new_array()')"
	eq "nothrow new x3" 999 "$(pv $p inuse_space 'cxx_nothrow()')"
	eq "aligned new x2" 256 "$(pv $p inuse_space 'cxx_aligned()')"
	eq "delete churn objects" 100 "$(pv $p alloc_objects 'cxx_delete_churn()')"
	eq "delete churn live" absent "$(pv $p inuse_space 'cxx_delete_churn()')"
}

# A target running as another user, and one in a mount namespace where the library's path
# on this host does not exist.
t_inject_other_user() {
	need_inject; need_go
	command -v setpriv >/dev/null || skip "no setpriv to run the target as another user"
	unpriv_bin
	inject_start ou setpriv --reuid=65534 --regid=65534 --clear-groups "$TMP/ub/alloc_c" inject
	eq "the target's user" 65534 "$(awk '/^Uid:/ { print $2 }' /proc/$TPID/status)"
	inject_finish ou 7
	inject_check_c ou
}

t_inject_mount_ns() {
	need_inject; need_go
	command -v unshare >/dev/null && command -v nsenter >/dev/null || skip "no unshare or nsenter (util-linux)"
	local lib
	lib=$(realpath "$OUT/libheapsnap.so")
	unpriv_bin
	inject_start mnt unshare -m --propagation private sh -c 'mount -t tmpfs none "$1" && exec "$2" inject "$3"' \
		sh "$(dirname "$lib")" "$TMP/ub/alloc_c"
	nsenter -t $TPID -m test -e "$lib" && die "the library's path is visible in the target's mount namespace"
	inject_finish mnt 7
	inject_check_c mnt
}

# Refused, with the reason, and nothing touched: a seccomp filter that kills on what the
# injection needs (auto then records with BPF, exactly), another tracer, no permission.
t_inject_refusals() {
	need_inject; need_go
	mkfifo "$TMP/sc.fifo"
	"$T/alloc_c" seccomp "$TMP/sc.fifo" >"$TMP/sc.out" 2>"$TMP/sc.terr" &
	TJOB=$!
	waitfor "$TMP/sc.out" ready || die "seccomp target not ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/sc.out")
	"$R" --via inject -p $TPID -o "$TMP/sc0.hsnap" 2>"$TMP/sc0.err"; eq "--via inject under seccomp: exit" 1 $?
	contains "$TMP/sc0.err" "cannot inject into process $TPID: the target's seccomp filter would kill the process on memfd_create()"
	[ -e "$TMP/sc0.hsnap" ] && die "a refused injection left a file"
	grep -q heapsnap "/proc/$TPID/maps" && die "a refused injection mapped something into the target"
	if [ -z "$BPF_REASON" ]; then
		"$R" -v -p $TPID -s 0 -o "$TMP/sc.hsnap" >/dev/null 2>"$TMP/sc.rerr" &
		RPID=$!
		waitfor "$TMP/sc.rerr" "attached to $TPID" || { cat "$TMP/sc.rerr"; die "auto did not fall back"; }
		contains "$TMP/sc.rerr" "recording with BPF uprobes instead"
		inject_finish sc 7
		"$A" info "$TMP/sc.hsnap" | grep -q "Recorded via bpf: the injection was refused" || die "info: fallback not said"
		"$A" pprof -o "$TMP/sc.pb.gz" "$TMP/sc.hsnap" 2>/dev/null
		eq "fallback to BPF: after_attach inuse_space" 7777 "$(pv "$TMP/sc.pb.gz" inuse_space after_attach)"
	else
		echo go >"$TMP/sc.fifo"; wait $TJOB; eq "seccomp target's exit status" 7 $?
	fi
	# Another tracer holds it.
	mkfifo "$TMP/tr.fifo"
	"$T/alloc_c" inject "$TMP/tr.fifo" >"$TMP/tr.out" 2>"$TMP/tr.terr" &
	TJOB=$!
	waitfor "$TMP/tr.out" ready || die "traced target not ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/tr.out")
	python3 -c 'import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, int(sys.argv[1]), 0, 0): sys.exit("seize failed")
print("seized", flush=True); time.sleep(60)' $TPID >"$TMP/tracer.out" &
	local tracer=$!
	waitfor "$TMP/tracer.out" seized || die "the test's tracer could not attach"
	"$R" --via inject -p $TPID -o "$TMP/tr.hsnap" 2>"$TMP/tr.err"; eq "--via inject when traced: exit" 1 $?
	contains "$TMP/tr.err" "is already traced by process $tracer"
	kill $tracer; wait $tracer 2>/dev/null
	# Without the right to ptrace it: a user's recorder against root's process.
	unpriv_bin
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$TMP/ub/heapsnap-record" --via inject -p $TPID \
		-o /dev/null 2>"$TMP/np.err"; eq "--via inject without permission: exit" 1 $?
	grep -q "cannot inject into process $TPID: .*\(Permission denied\|Operation not permitted\)" "$TMP/np.err" ||
		{ cat "$TMP/np.err"; die "no reason given for the refusal"; }
	grep -q heapsnap "/proc/$TPID/maps" && die "a refused injection mapped something into the target"
	echo go >"$TMP/tr.fifo"; wait $TJOB; eq "traced target's exit status" 7 $?
	[ -s "$TMP/tr.terr" ] && die "the refused target wrote to stderr"
	# An idle process blocked in open() of its FIFO (no call through a GOT at all, allocator or
	# other): no safe point to load at, so the trampoline is taken out again; auto then records
	# with BPF. One that idles in calls such as poll is injected (t_inject_idle_safe_point).
	mkfifo "$TMP/idle.fifo"
	"$T/alloc_c" wait "$TMP/idle.fifo" >"$TMP/idle.out" 2>"$TMP/idle.terr" &
	TJOB=$!
	waitfor "$TMP/idle.out" ready || die "idle target not ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/idle.out")
	"$R" --via inject -p $TPID --attach-timeout 0.5 -o "$TMP/idle.hsnap" 2>"$TMP/idle.err"; eq "--via inject, idle: exit" 1 $?
	contains "$TMP/idle.err" "process $TPID made no allocator call in 0.5 s"
	eq "GOT entry of malloc after an injection that timed out" libc "$(python3 tests/gotvalue.py $TPID "$T/alloc_c" malloc)"
	grep -q heapsnap "/proc/$TPID/maps" && die "the library was loaded into the idle process"
	echo go >"$TMP/idle.fifo"; wait $TJOB; eq "idle target's exit status" 0 $?
	[ -s "$TMP/idle.terr" ] && die "the idle target wrote to stderr"
	return 0
}

# Twenty attaches and detaches to one busy process, sampled as in production; it then ends
# with its own status and every GOT entry back.
t_inject_repeat() {
	need_inject; need_go
	local i
	mkfifo "$TMP/rep.fifo"
	"$T/alloc_c" inject "$TMP/rep.fifo" >"$TMP/rep.out" 2>"$TMP/rep.terr" &
	TJOB=$!
	waitfor "$TMP/rep.out" ready || die "target not ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/rep.out")
	for i in $(seq 20); do
		"$R" -v -p $TPID -s 512k --duration 0.2 -o "$TMP/rep$i.hsnap" >/dev/null 2>"$TMP/rep$i.err" ||
			{ cat "$TMP/rep$i.err"; die "attach $i failed"; }
		contains "$TMP/rep$i.err" "recording via inject"
		"$A" info "$TMP/rep$i.hsnap" >/dev/null 2>&1 || die "recording $i unreadable"
		eq "GOT entry of malloc after detach $i" libc "$(python3 tests/gotvalue.py $TPID "$T/alloc_c" malloc)"
	done
	eq "threads of ours left in the target" 0 "$(cat /proc/$TPID/task/*/comm | grep -c '^heapsnap$')"
	echo go >"$TMP/rep.fifo"
	wait $TJOB; eq "the target's own exit status" 7 $?
	[ -s "$TMP/rep.terr" ] && { cat "$TMP/rep.terr"; die "the target wrote to stderr"; }
	eq "the target's stdout" "ready $TPID" "$(cat "$TMP/rep.out")"
}

# SIGKILL of the recorder: the library notices (the pipe's only writer is gone) and puts every
# entry back; the file stays readable, and the next attach works.
t_inject_killed_recorder() {
	need_inject; need_go
	local i
	inject_start kil "$T/alloc_c" inject
	eq "GOT entry of malloc while attached" libheapsnap "$(python3 tests/gotvalue.py $TPID "$T/alloc_c" malloc)"
	# Killed once the idle_churn thread's events are in the file (it is flushed each second).
	for i in $(seq 200); do "$A" stats "$TMP/kil.hsnap" >/dev/null 2>&1 && break; sleep 0.05; done
	kill -9 $RPID; wait $RPID 2>/dev/null
	for i in $(seq 100); do
		[ "$(python3 tests/gotvalue.py $TPID "$T/alloc_c" malloc)" = libc ] && break
		sleep 0.05
	done
	eq "GOT entry of malloc after the recorder was killed" libc "$(python3 tests/gotvalue.py $TPID "$T/alloc_c" malloc)"
	"$A" top --no-symbolize "$TMP/kil.hsnap" >/dev/null 2>"$TMP/kil.e" || { cat "$TMP/kil.e"; die "a killed recorder's file must stay readable"; }
	contains "$TMP/kil.e" "no footer"
	"$R" -v -p $TPID -s 0 -o "$TMP/kil2.hsnap" >/dev/null 2>"$TMP/kil2.rerr" &
	RPID=$!
	waitfor "$TMP/kil2.rerr" "attached to $TPID" || { cat "$TMP/kil2.rerr"; die "no attach after a killed recorder"; }
	echo go >"$TMP/kil.fifo"
	wait $TJOB; eq "the target's own exit status" 7 $?
	wait $RPID || die "second recorder"
	mv "$TMP/kil2.hsnap" "$TMP/kil.hsnap"
	inject_check_c kil
}

# ---- the in-process recorder's shared memory: rings of exited threads reused, children that
# close inherited descriptors still recorded (issue 23, items 5 and 6) ----

# churn_check NAME FILE N: threadchurn's N threads each kept one 1234-byte block from
# churn_keep (tests/workloads/threadchurn.c), every one recorded, no event lost.
churn_check() {
	local name=$1 f=$2 n=$3 p=$TMP/$1.pb.gz lost
	"$A" pprof -o "$p" "$f" 2>/dev/null || die "$name: pprof"
	"$A" stats --json "$f" >"$TMP/$name.stats" 2>/dev/null || die "$name: stats"
	lost=$(grep -o '"lost\.[a-z_]*":[0-9]*' "$TMP/$name.stats" | awk -F: '{ s += $2 } END { print s + 0 }')
	eq "$name: lost.* in all" 0 "$lost"
	eq "$name: churn_keep inuse_objects (one per thread)" "$n" "$(pv "$p" inuse_objects churn_keep)"
	eq "$name: churn_keep inuse_space" $((n * 1234)) "$(pv "$p" inuse_space churn_keep)"
}

# 10,000 threads made and joined one after another, then with 64 and 250 alive at once: far
# more threads than rings (256), never more alive at once.
t_preload_thread_churn() {
	need_go
	local w
	for w in 1 64 250; do
		"$R" --via preload -o "$TMP/ch$w.hsnap" -- "$T/threadchurn" 10000 $w >/dev/null 2>"$TMP/ch$w.err" ||
			{ cat "$TMP/ch$w.err"; die "threadchurn 10000 $w"; }
		grep -q "lost" "$TMP/ch$w.err" && { cat "$TMP/ch$w.err"; die "threadchurn 10000 $w: the recorder warned of losses"; }
		churn_check "churn$w" "$TMP/ch$w.hsnap" 10000
	done
}

# The same attached (injected): threads of a running process churn as much.
t_inject_thread_churn() {
	need_inject; need_go
	local w
	for w in 1 64; do
		RARGS="--via inject -s 0" inject_start ich$w "$T/threadchurn" 10000 $w
		inject_finish ich$w 0
		churn_check "ich$w" "$TMP/ich$w.hsnap" 10000
	done
}

# 300 threads alive together, past the 256 rings: those without a ring are counted and said,
# and every thread is either recorded or counted.
t_preload_threads_past_limit() {
	need_go
	local lost kept
	"$R" --via preload -o "$TMP/pl.hsnap" -- "$T/threadchurn" 300 all >/dev/null 2>"$TMP/pl.err" ||
		{ cat "$TMP/pl.err"; die "threadchurn 300 all"; }
	contains "$TMP/pl.err" "more events lost (lost.thread_map_full"
	"$A" pprof -o "$TMP/pl.pb.gz" "$TMP/pl.hsnap" 2>/dev/null || die "pprof"
	lost=$("$A" stats --json "$TMP/pl.hsnap" | grep -o '"lost.thread_map_full":[0-9]*' | cut -d: -f2)
	kept=$(pv "$TMP/pl.pb.gz" inuse_objects churn_keep)
	[ "${lost:-0}" -gt 0 ] || die "no thread counted without a ring"
	eq "threads recorded ($kept) + threads counted without a ring ($lost)" 300 $((kept + lost))
}

# closefds (tests/workloads/closefds.c): its child closes every inherited descriptor, then
# runs the program again, which keeps 5 x 3000 bytes in closed_child_keep; the parent 2 x 1000
# in parent_keep. With a file, the child opens it at every number from 3 to 31 first: the
# library must take none of them for the recorder's, and write nothing to it.
t_preload_closed_fds() {
	need_go
	local p=$TMP/cf.pb.gz
	"$R" --via preload -o "$TMP/cf.hsnap" -- "$T/closefds" >/dev/null 2>"$TMP/cf.err" || { cat "$TMP/cf.err"; die "closefds"; }
	"$A" pprof -o "$p" "$TMP/cf.hsnap" 2>/dev/null || die "pprof"
	eq "parent_keep inuse_space" 2000 "$(pv $p inuse_space parent_keep)"
	eq "closed_child_keep inuse_space (the child that closed its descriptors)" 15000 "$(pv $p inuse_space closed_child_keep)"
	eq "closed_child_keep inuse_objects" 5 "$(pv $p inuse_objects closed_child_keep)"
	head -c 8192 /dev/zero >"$TMP/cf.file"
	"$R" --via preload -o "$TMP/cf2.hsnap" -- "$T/closefds" "$TMP/cf.file" >/dev/null 2>"$TMP/cf2.err" ||
		{ cat "$TMP/cf2.err"; die "closefds with a file at the old numbers"; }
	head -c 8192 /dev/zero | cmp -s - "$TMP/cf.file" || die "the file opened at the recorder's old descriptor numbers was changed"
	"$A" pprof -o "$p" "$TMP/cf2.hsnap" 2>/dev/null || die "pprof"
	eq "closed_child_keep inuse_space, another file at the old numbers" 15000 "$(pv $p inuse_space closed_child_keep)"
	# Python's subprocess closes inherited descriptors by default (close_fds=True).
	"$R" --via preload -o "$TMP/cf3.hsnap" -- /usr/bin/python3 -c \
		"import subprocess; subprocess.run(['$T/closefds', '--child'], check=True)" >/dev/null 2>"$TMP/cf3.err" ||
		{ cat "$TMP/cf3.err"; die "python3 subprocess"; }
	"$A" pprof -o "$p" "$TMP/cf3.hsnap" 2>/dev/null || die "pprof"
	eq "closed_child_keep inuse_space, run by python3's subprocess" 15000 "$(pv $p inuse_space closed_child_keep)"
}

# CPython's own test runner: its worker processes are started with close_fds=True, and each
# must be recorded with what it allocates (before: the coordinating process alone).
t_preload_python_workers() {
	[ -d /usr/lib/python3.11/test/test_json ] || skip "no CPython test suite (libpython3.11-testsuite)"
	local pids nw=0 pid total
	"$R" --via preload -o "$TMP/pw.hsnap" -- /usr/bin/python3 -m test -j1 test_json >"$TMP/pw.out" 2>"$TMP/pw.err" ||
		{ tail "$TMP/pw.out" "$TMP/pw.err"; die "python3 -m test -j1 test_json"; }
	contains "$TMP/pw.out" "Tests result: SUCCESS"
	"$A" info --json "$TMP/pw.hsnap" >"$TMP/pw.json" || die "info"
	pids=$(/usr/bin/python3 -c 'import json, sys; print(" ".join(str(p["pid"]) for p in json.load(open(sys.argv[1]))["processes"] if p["origin"] != "started"))' "$TMP/pw.json")
	for pid in $pids; do
		total=$("$A" top -n 1 --value alloc_space --pid "$pid" "$TMP/pw.hsnap" 2>/dev/null | awk '/accounting for/ { print $(NF - 1) }')
		[ "${total:-0}" -gt 1000000 ] && nw=$((nw + 1))
	done
	[ $nw -ge 1 ] || { head -c 300 "$TMP/pw.json"; die "no worker process recorded with its allocations (processes besides the command: ${pids:-none})"; }
}

# A process that is not the command's descendant asks the recorder's socket for the memory:
# refused (it gets no descriptor), and said, in the recorder's output and the file.
t_preload_socket_refused() {
	need_go
	[ "$(id -u)" = 0 ] || skip "not root: the asking process runs as another user"
	command -v setpriv >/dev/null || skip "no setpriv to run the asking process as another user"
	local cpid name got
	mkfifo "$TMP/sr.fifo"
	"$R" --via preload -o "$TMP/sr.hsnap" -- "$T/threadchurn" 1 1 "$TMP/sr.fifo" >"$TMP/sr.out" 2>"$TMP/sr.err" &
	RPID=$!
	waitfor "$TMP/sr.out" ready || { cat "$TMP/sr.err"; die "the command never said ready"; }
	cpid=$(awk '/^ready/ { print $2 }' "$TMP/sr.out")
	name=$(tr '\0' '\n' <"/proc/$cpid/environ" | sed -n 's/^HEAPSNAP_SOCK=\([^,]*\),.*/\1/p')
	[ -n "$name" ] || die "no HEAPSNAP_SOCK in the command's environment"
	got=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect("\0" + sys.argv[1])
msg, anc, flags, addr = s.recvmsg(1, socket.CMSG_SPACE(8))
print(len(msg), len(anc))' "$name")
	echo go >"$TMP/sr.fifo"
	wait $RPID || { cat "$TMP/sr.err"; die "the recorder failed"; }
	eq "bytes and descriptors a foreign process received" "0 0" "$got"
	grep -q "warning: process [0-9]* (python3, uid 65534) is not recorded: it is not the command or a process started by it" "$TMP/sr.err" ||
		{ cat "$TMP/sr.err"; die "the refusal was not said"; }
	"$A" stats --json "$TMP/sr.hsnap" | grep -q '"lost.processes_unrecorded":1' || die "the refusal is not counted in the file"
}

# A descendant that runs without the library (its environment lost LD_PRELOAD) is said not to
# be recorded, and counted in the file, while it runs.
t_preload_unrecorded_said() {
	mkfifo "$TMP/us.fifo"
	"$R" --via preload -o "$TMP/unrec.hsnap" -- /bin/sh -c "env -u LD_PRELOAD $T/threadchurn 1 1 $TMP/us.fifo" \
		>"$TMP/us.out" 2>"$TMP/us.err" &
	RPID=$!
	waitfor "$TMP/us.out" ready || { cat "$TMP/us.err"; die "the command never said ready"; }
	waitfor "$TMP/us.err" "is not recorded" || { echo go >"$TMP/us.fifo"; wait $RPID; cat "$TMP/us.err"; die "nothing said of the process run without the library"; }
	echo go >"$TMP/us.fifo"
	wait $RPID || { cat "$TMP/us.err"; die "the recorder failed"; }
	contains "$TMP/us.err" "(threadchurn) is not recorded: libheapsnap.so is not loaded in it (its environment lost LD_PRELOAD"
	"$A" stats --json "$TMP/unrec.hsnap" | grep -q '"lost.processes_unrecorded":1' || die "not counted in the file"
}

# 2,000 short-lived processes, 8 at a time, each keeping 3 x 1000 bytes in quick_alloc and
# ending with _exit (no destructor says so): the rings of processes gone are found and reused
# as soon as they run short, and of a process's image before its exec at once.
t_preload_process_churn() {
	need_go
	local lost
	"$R" --via preload -o "$TMP/pc.hsnap" -- /bin/sh -c "seq 2000 | xargs -P 8 -n 1 $T/quick" >/dev/null 2>"$TMP/pc.err" ||
		{ cat "$TMP/pc.err"; die "xargs -P 8 quick"; }
	"$A" pprof -o "$TMP/pc.pb.gz" "$TMP/pc.hsnap" 2>/dev/null || die "pprof"
	lost=$("$A" stats --json "$TMP/pc.hsnap" | grep -o '"lost\.[a-z_]*":[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }')
	eq "lost.* in all" 0 "$lost"
	eq "quick_alloc inuse_space (2,000 processes)" 6000000 "$(pv "$TMP/pc.pb.gz" inuse_space quick_alloc)"
}

# ---- injection into real programs (issue 23): interpreters and servers nobody here wrote ----

# psize FILE.pb.gz SIZE: "ALLOC_OBJECTS INUSE_OBJECTS" of the blocks of exactly SIZE bytes, as
# go tool pprof reads them (the bytes label of each sample).
psize() {
	go tool pprof -raw "$1" 2>/dev/null | awk -v sz="$2" '
		/^Samples:/ { s = 1; next }
		/^Locations/ { s = 0 }
		s && /^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+:/ { ao = $1; io = $3 }
		s && index($0, "bytes:[" sz " bytes]") { a += ao; i += io }
		END { print a + 0, i + 0 }'
}

# A test that fails leaves none of its servers, loads or recorders behind: the EXIT trap of
# the test's subshell ends those still running (REAL_PIDS, the recorder in RPID).
REAL_PIDS=
real_cleanup() {
	local p
	for p in ${RPID:-} $REAL_PIDS; do kill "$p" 2>/dev/null; done
	return 0
}

# real_attach NAME PID ROUND [RECORDER OPTIONS...]: attaches (the default way in), waits until
# attached; sets RPID.
real_attach() {
	local name=$1 pid=$2 i=$3
	shift 3
	"$R" -v -p "$pid" "$@" -o "$TMP/$name$i.hsnap" >/dev/null 2>"$TMP/$name$i.rerr" &
	RPID=$!
	waitfor "$TMP/$name$i.rerr" "attached to $pid" || { cat "$TMP/$name$i.rerr"; die "$name: attach $i never happened"; }
	contains "$TMP/$name$i.rerr" "recording via inject"
}

# real_detach NAME PID ROUND: stops the recorder (Ctrl-C); the process lives on, with no GOT
# entry of any module left pointing at the library or the stub, and the file is readable.
real_detach() {
	local name=$1 pid=$2 i=$3
	kill -INT $RPID
	wait $RPID || { RPID=; cat "$TMP/$name$i.rerr"; die "$name: the recorder failed (attach $i)"; }
	RPID=
	kill -0 "$pid" 2>/dev/null || die "$name: the target died during attach $i"
	eq "$name: GOT entries after detach $i" clean "$(python3 tests/gotvalue.py "$pid" --all)"
	"$A" info "$TMP/$name$i.hsnap" >/dev/null 2>&1 || die "$name: recording $i unreadable"
}

# real_interp NAME INTERPRETER SCRIPT EXECUTABLE SIZE: the script's (tests/workloads/real_alloc.*)
# keep_blocks allocate SIZE bytes each; four attaches, every event then sampled in turn.
real_interp() {
	local name=$1 interp=$2 script=$3 exe=$4 size=$5 i n=0 len=$(($5 - ${6:-0}))
	mkfifo "$TMP/$name.fifo"
	"$interp" "$script" "$TMP/$name.fifo" >"$TMP/$name.out" 2>"$TMP/$name.terr" &
	TJOB=$! REAL_PIDS=$!
	trap real_cleanup EXIT
	waitfor "$TMP/$name.out" ready || die "$name: the target never said ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/$name.out")
	for i in 1 2 3 4; do
		if [ $((i % 2)) = 1 ]; then real_attach $name $TPID $i -s 0; else real_attach $name $TPID $i; fi
		n=$((n + 10 * i))
		echo "keep $((10 * i))" >"$TMP/$name.fifo"
		waitfor "$TMP/$name.out" "kept $n $((n * len))" || { cat "$TMP/$name.out"; die "$name: no answer to keep, attach $i"; }
		real_detach $name $TPID $i
		eq "$name: GOT entry of malloc after detach $i" libc "$(python3 tests/gotvalue.py $TPID "$exe" malloc)"
		if [ $((i % 2)) = 1 ]; then
			"$A" pprof -o "$TMP/$name$i.pb.gz" "$TMP/$name$i.hsnap" 2>/dev/null || die "$name: pprof $i"
			eq "$name: $size-byte blocks kept during attach $i (allocated, live)" "$((10 * i)) $((10 * i))" \
				"$(psize "$TMP/$name$i.pb.gz" $size)"
		fi
	done
	echo "exit 5" >"$TMP/$name.fifo"
	wait $TJOB; eq "$name: the target's own exit status" 5 $?
	REAL_PIDS=
	[ -s "$TMP/$name.terr" ] && { cat "$TMP/$name.terr"; die "$name: the target wrote to stderr"; }
	contains "$TMP/$name.out" "rounds ok"
	grep -q bad "$TMP/$name.out" && die "$name: the target computed a wrong sum"
	return 0
}

# Debian's python3.11: non-PIE, canonical PLT entries for malloc and free.
t_inject_real_python() {
	need_inject; need_go
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	real_interp rpy /usr/bin/python3 tests/workloads/real_alloc.py "$(realpath /usr/bin/python3)" 5000 33
}

# node: non-PIE, canonical PLT entries for malloc, calloc, realloc and free.
t_inject_real_node() {
	need_inject; need_go
	[ -x /usr/bin/node ] || skip "no /usr/bin/node"
	real_interp rnd /usr/bin/node tests/workloads/real_alloc.js "$(realpath /usr/bin/node)" 50000
}

# A program built so (tests/workloads/canon_plt.c): every figure exact, at each of three attaches.
t_inject_real_canon_plt() {
	need_inject; need_go
	local i p
	mkfifo "$TMP/cpl.fifo"
	"$T/canon_plt" "$TMP/cpl.fifo" >"$TMP/cpl.out" 2>"$TMP/cpl.terr" &
	TJOB=$! REAL_PIDS=$!
	trap real_cleanup EXIT
	waitfor "$TMP/cpl.out" ready || die "the target never said ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/cpl.out")
	for i in 1 2 3; do
		real_attach cpl $TPID $i -s 0
		echo keep >"$TMP/cpl.fifo"
		waitfor "$TMP/cpl.out" "kept $i" || die "no answer to keep, attach $i"
		real_detach cpl $TPID $i
		eq "GOT entry of malloc after detach $i" libc "$(python3 tests/gotvalue.py $TPID "$T/canon_plt" malloc)"
		p=$TMP/cpl$i.pb.gz
		"$A" pprof -o "$p" "$TMP/cpl$i.hsnap" 2>/dev/null || die "pprof $i"
		eq "canon_keep inuse_space, attach $i" 27027 "$(pv $p inuse_space canon_keep)"
		eq "canon_keep inuse_objects, attach $i" 9 "$(pv $p inuse_objects canon_keep)"
		eq "canon_calloc inuse_space, attach $i" 8008 "$(pv $p inuse_space canon_calloc)"
		eq "canon_realloc inuse_space, attach $i" 5005 "$(pv $p inuse_space canon_realloc)"
		eq "canon_realloc alloc_space, attach $i" 6006 "$(pv $p alloc_space canon_realloc)"
		eq "canon_temp alloc_space, attach $i" 18018 "$(pv $p alloc_space canon_temp)"
		eq "canon_temp inuse_space, attach $i" absent "$(pv $p inuse_space canon_temp)"
	done
	echo exit >"$TMP/cpl.fifo"
	wait $TJOB; eq "the target's own exit status" 9 $?
	REAL_PIDS=
	[ -s "$TMP/cpl.terr" ] && { cat "$TMP/cpl.terr"; die "the target wrote to stderr"; }
	eq "the target's stdout" "ready $TPID kept 1 kept 2 kept 3" "$(cat "$TMP/cpl.out" | tr '\n' ' ' | sed 's/ $//')"
}

# An allocator the program links (tests/workloads/countalloc.c, a SysV hash table only) still
# gets the program's calls while attached: its own count of them, and exact figures.
t_inject_real_linked_alloc() {
	need_inject; need_go
	local i p k=0
	mkfifo "$TMP/lal.fifo"
	"$T/linked_alloc" "$TMP/lal.fifo" >"$TMP/lal.out" 2>"$TMP/lal.terr" &
	TJOB=$! REAL_PIDS=$!
	trap real_cleanup EXIT
	waitfor "$TMP/lal.out" ready || die "the target never said ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/lal.out")
	for i in 1 2 3; do
		real_attach lal $TPID $i -s 0
		# The first round of a thread may see the library's own first calls too; the second not.
		echo keep >"$TMP/lal.fifo"
		k=$((k + 1)); waitfor "$TMP/lal.out" "kept $k calls" || die "no answer to keep, attach $i"
		echo keep >"$TMP/lal.fifo"
		k=$((k + 1)); waitfor "$TMP/lal.out" "kept $k calls" || die "no answer to keep, attach $i"
		eq "calls libcountalloc.so saw from linked_keep, attach $i" "kept $k calls 6" "$(grep "^kept $k calls" "$TMP/lal.out")"
		real_detach lal $TPID $i
		p=$TMP/lal$i.pb.gz
		"$A" pprof -o "$p" "$TMP/lal$i.hsnap" 2>/dev/null || die "pprof $i"
		eq "linked_keep inuse_space, attach $i" 17776 "$(pv $p inuse_space linked_keep)"
		eq "linked_temp alloc_space, attach $i" 6666 "$(pv $p alloc_space linked_temp)"
		eq "linked_temp inuse_space, attach $i" absent "$(pv $p inuse_space linked_temp)"
	done
	echo exit >"$TMP/lal.fifo"
	wait $TJOB; eq "the target's own exit status" 6 $?
	REAL_PIDS=
	[ -s "$TMP/lal.terr" ] && { cat "$TMP/lal.terr"; die "the target wrote to stderr"; }
	return 0
}

# free_port: a TCP port of 127.0.0.1 that nothing listens on now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# redis_roundtrip PORT TAG: 200 SETs of known values, then their GETs, each answer checked.
redis_roundtrip() {
	local k
	for k in $(seq 200); do echo "SET hs:$2:$k v-$2-$k-$(printf '%0300d' $k)"; done |
		redis-cli -p $1 >"$TMP/rset.out" 2>&1 || die "redis-cli SET ($2)"
	eq "redis: SET answers ($2)" 200 "$(grep -c '^OK$' "$TMP/rset.out")"
	for k in $(seq 200); do echo "GET hs:$2:$k"; done | redis-cli -p $1 >"$TMP/rget.out" 2>&1 || die "redis-cli GET ($2)"
	for k in $(seq 200); do echo "v-$2-$k-$(printf '%0300d' $k)"; done >"$TMP/rget.want"
	cmp -s "$TMP/rget.out" "$TMP/rget.want" || { diff "$TMP/rget.want" "$TMP/rget.out" | head; die "redis: wrong GET answers ($2)"; }
}

# redis-server (PIE, its malloc jemalloc's, linked): four attaches under redis-benchmark's load,
# every event then sampled in turn; values set and read back right during each and after.
t_inject_real_redis() {
	need_inject
	local port i bench
	command -v redis-server >/dev/null && command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null ||
		skip "no redis-server, redis-cli or redis-benchmark (packages redis-server, redis-tools)"
	port=$(free_port)
	redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir "$TMP" \
		--logfile "$TMP/redis.log" >/dev/null 2>&1 &
	TJOB=$! REAL_PIDS=$!
	trap real_cleanup EXIT
	waitfor "$TMP/redis.log" "Ready to accept connections" || { cat "$TMP/redis.log"; die "redis-server never ready"; }
	# Bounded: 120 s at most, stopped after the last attach.
	timeout 120 redis-benchmark -h 127.0.0.1 -p $port -c 4 -n 100000 -l -r 10000 -d 200 -t set,get,lpush,lpop -q \
		>"$TMP/rbench.out" 2>&1 &
	bench=$!
	REAL_PIDS="$REAL_PIDS $bench"
	redis_roundtrip $port before
	for i in 1 2 3 4; do
		if [ $((i % 2)) = 1 ]; then real_attach rds $TJOB $i -s 0; else real_attach rds $TJOB $i; fi
		kill -0 $bench 2>/dev/null || { cat "$TMP/rbench.out"; die "redis: the load stopped before attach $i"; }
		redis_roundtrip $port $i
		real_detach rds $TJOB $i
		[ $((i % 2)) = 1 ] && { "$A" stats --json "$TMP/rds$i.hsnap" | grep -q '"allocs":[1-9]' ||
			die "redis: no allocation recorded under load (attach $i)"; }
	done
	redis_roundtrip $port after
	kill $bench; wait $bench 2>/dev/null
	REAL_PIDS=$TJOB
	redis-cli -p $port shutdown nosave >/dev/null 2>&1
	wait $TJOB; eq "redis-server's exit status" 0 $?
	REAL_PIDS=
	grep -E "crashed|Segmentation|Assertion" "$TMP/redis.log" && die "redis-server's log reports a crash"
	return 0
}

# nginx's worker (PIE), under a bounded HTTP load that checks every body: four attaches, every
# event then sampled in turn; a known file served right during each and after; nginx quits cleanly.
t_inject_real_nginx() {
	need_inject
	local d=$TMP/ngx port i worker load
	command -v nginx >/dev/null || skip "no nginx (package nginx-light)"
	mkdir -p "$d/www" "$d/tmp"
	head -c 100000 /dev/urandom >"$d/www/blob.bin"
	port=$(free_port)
	cat >"$d/nginx.conf" <<EOC
daemon off;
master_process on;
worker_processes 1;
user root;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server { listen 127.0.0.1:$port; root $d/www; }
}
EOC
	nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log" >"$TMP/ngx.out" 2>&1 &
	TJOB=$! REAL_PIDS=$!
	trap real_cleanup EXIT
	for i in $(seq 400); do
		worker=$(pgrep -P $TJOB | head -1)
		[ -n "$worker" ] && curl -sf -o /dev/null "http://127.0.0.1:$port/blob.bin" && break
		sleep 0.05
	done
	[ -n "$worker" ] || { cat "$d/error.log"; die "nginx never served"; }
	python3 tests/workloads/http_load.py $port /blob.bin "$d/www/blob.bin" "$TMP/ngx.stop" >"$TMP/hload.out" 2>&1 &
	load=$!
	REAL_PIDS="$REAL_PIDS $load"
	waitfor "$TMP/hload.out" "n 100" || { cat "$TMP/hload.out"; die "nginx: the load never got going"; }
	for i in 1 2 3 4; do
		if [ $((i % 2)) = 1 ]; then real_attach ngx $worker $i -s 0; else real_attach ngx $worker $i; fi
		curl -sf "http://127.0.0.1:$port/blob.bin" | cmp -s - "$d/www/blob.bin" || die "nginx: wrong answer during attach $i"
		kill -0 $load 2>/dev/null || { cat "$TMP/hload.out"; die "nginx: the load ended during attach $i"; }
		real_detach ngx $worker $i
		[ $((i % 2)) = 1 ] && { "$A" stats --json "$TMP/ngx$i.hsnap" | grep -q '"allocs":[1-9]' ||
			die "nginx: no allocation recorded under load (attach $i)"; }
	done
	curl -sf "http://127.0.0.1:$port/blob.bin" | cmp -s - "$d/www/blob.bin" || die "nginx: wrong answer after the attaches"
	touch "$TMP/ngx.stop"
	wait $load || { cat "$TMP/hload.out"; die "nginx: the load client saw a wrong answer"; }
	REAL_PIDS=$TJOB
	contains "$TMP/hload.out" "ok "
	eq "nginx: the same worker all along" "$worker" "$(pgrep -P $TJOB | head -1)"
	kill -QUIT $TJOB
	wait $TJOB; eq "nginx's exit status" 0 $?
	REAL_PIDS=
	grep -E "\[(alert|crit|emerg)\]|exited on signal" "$d/error.log" && die "nginx's log reports trouble"
	return 0
}

# ---- BPF recorder in a PID namespace; --max-stack's default; a full disk ----

need_pidns() {
	command -v unshare >/dev/null || skip "no unshare (util-linux)"
	unshare -fpm --mount-proc true 2>/dev/null || skip "cannot make a PID and mount namespace here (unshare -fpm --mount-proc)"
}

# The recorder in a PID namespace: BPF sees the host's pids, the recorder its namespace's.
# Launched, every figure of alloc_c exact (fork child and threads included).
t_bpf_pidns_launched() {
	need_bpf; need_go; need_pidns
	unshare -fpm --mount-proc "$R" --via bpf -s 0 -o "$TMP/nsl.hsnap" -- "$T/alloc_c" >"$TMP/nsl.out" 2>"$TMP/nsl.err" ||
		{ cat "$TMP/nsl.err"; die "recorder launching alloc_c in a PID namespace"; }
	"$A" pprof -o "$TMP/nsl.pb.gz" "$TMP/nsl.hsnap" || die "pprof"
	local p=$TMP/nsl.pb.gz
	eq "leak_malloc inuse_space" 10000 "$(pv $p inuse_space leak_malloc)"
	eq "thread_work inuse_space (threads)" 20000 "$(pv $p inuse_space thread_work)"
	eq "thread_work inuse_objects" 100 "$(pv $p inuse_objects thread_work)"
	eq "child_work inuse_space (fork child)" 15000 "$(pv $p inuse_space child_work)"
	eq "plugin_alloc inuse_space (dlopen)" 12288 "$(pv $p inuse_space plugin_alloc)"
	eq "make_calloc inuse_space" 4000 "$(pv $p inuse_space make_calloc)"
	eq "realloc_chain alloc_space" 5600 "$(pv $p alloc_space realloc_chain)"
	eq "churn_malloc alloc_objects" 100 "$(pv $p alloc_objects churn_malloc)"
	eq "churn_malloc inuse_space" absent "$(pv $p inuse_space churn_malloc)"
	# Without its own /proc, the namespace's pids would name the host's processes: refused.
	local rc
	unshare -fp "$R" --via bpf -o "$TMP/nsx.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/nsx.err"; rc=$?
	eq "exit status with the host's /proc" 1 $rc
	contains "$TMP/nsx.err" "/proc is another PID namespace's"
	[ ! -e "$TMP/nsx.hsnap" ] || die "a refused start left a file"
}

# Attached (-p) to a process of the namespace, by the pid the namespace gives it.
t_bpf_pidns_attach() {
	need_bpf; need_go; need_pidns
	export -f waitfor
	# shellcheck disable=SC2016
	unshare -fpm --mount-proc bash -c '
		T=$1 R=$2 D=$3
		mkfifo "$D/nsp.fifo"
		"$T/alloc_c" wait "$D/nsp.fifo" >"$D/nsp.target" &
		tpid=$!
		echo $tpid >"$D/nsp.pid"
		waitfor "$D/nsp.target" ready || exit 3
		"$R" --via bpf -p $tpid -s 0 -o "$D/nsp.hsnap" >/dev/null 2>"$D/nsp.err" &
		rpid=$!
		waitfor "$D/nsp.err" "attached to $tpid" || exit 4
		echo go >"$D/nsp.fifo"
		wait $tpid || exit 5
		wait $rpid || exit 6
	' _ "$T" "$R" "$TMP"
	local rc=$?
	[ $rc = 0 ] || { cat "$TMP/nsp.err"; die "in the namespace: step $rc failed (3 target not ready, 4 no attach, 5 target, 6 recorder)"; }
	[ "$(cat "$TMP/nsp.pid")" -lt 10 ] || die "the target's pid $(cat "$TMP/nsp.pid") is not the namespace's"
	"$A" pprof -o "$TMP/nsp.pb.gz" "$TMP/nsp.hsnap" || die "pprof"
	eq "after_attach inuse_space" 7777 "$(pv "$TMP/nsp.pb.gz" inuse_space after_attach)"
	eq "after_attach inuse_objects" 7 "$(pv "$TMP/nsp.pb.gz" inuse_objects after_attach)"
	eq "before_attach unseen" absent "$(pv "$TMP/nsp.pb.gz" alloc_space before_attach)"
}

# -a in a namespace records its processes, exactly, and nothing of the host's (demo, run
# outside it meanwhile).
t_bpf_pidns_all() {
	need_bpf; need_go; need_pidns
	export -f waitfor
	# shellcheck disable=SC2016
	unshare -fpm --mount-proc bash -c '
		T=$1 R=$2 D=$3
		"$R" --via bpf -a -s 0 --duration 120 -o "$D/nsa.hsnap" >/dev/null 2>"$D/nsa.err" &
		rpid=$!
		waitfor "$D/nsa.err" "recording every process" || { kill $rpid; exit 3; }
		"$T/alloc_c" >/dev/null || { kill $rpid; exit 4; }
		echo done >"$D/nsa.ns_done"
		waitfor "$D/nsa.host_done" done || { kill $rpid; exit 5; }
		kill -INT $rpid
		wait $rpid || exit 6
	' _ "$T" "$R" "$TMP" &
	local job=$!
	waitfor "$TMP/nsa.err" "recording every process" || { cat "$TMP/nsa.err"; die "-a never said it records"; }
	"$T/demo" >/dev/null || die "demo on the host"
	waitfor "$TMP/nsa.ns_done" done || die "alloc_c in the namespace never ended"
	echo done >"$TMP/nsa.host_done"
	wait $job || { cat "$TMP/nsa.err"; die "in the namespace: step $? failed (3 no start, 4 alloc_c, 5 wait, 6 recorder)"; }
	"$A" pprof -o "$TMP/nsa.pb.gz" "$TMP/nsa.hsnap" || die "pprof"
	local p=$TMP/nsa.pb.gz
	eq "leak_malloc inuse_space" 10000 "$(pv $p inuse_space leak_malloc)"
	eq "thread_work inuse_space (threads)" 20000 "$(pv $p inuse_space thread_work)"
	eq "child_work inuse_space (fork child)" 15000 "$(pv $p inuse_space child_work)"
	eq "plugin_alloc inuse_space (dlopen)" 12288 "$(pv $p inuse_space plugin_alloc)"
	eq "churn_malloc alloc_objects" 100 "$(pv $p alloc_objects churn_malloc)"
	eq "demo, outside the namespace, unseen" absent "$(pv $p alloc_space cache_insert)"
}

# A full disk: the closing message counts what the file holds, says the write failed, and
# exits non-zero; the file reads whole up to its last complete frame.
t_bpf_full_disk() {
	need_bpf
	[ "$(id -u)" = 0 ] || skip "not root: mounting a small tmpfs needs root"
	local rc held_a held_f held_s
	mkdir "$TMP/small"
	mount -t tmpfs -o size=192k heapsnap-test "$TMP/small" 2>/dev/null || skip "cannot mount a tmpfs here"
	# bulk eight times over: 8 x 420,001 events, 500-900 KiB of file with frame-pointer stacks in
	# frames of 20-40 KiB, so that the disk fills after some frames of events whatever the speed.
	"$R" --via bpf --stack fp -s 0 -o "$TMP/small/f.hsnap" -- /bin/sh -c "for i in 1 2 3 4 5 6 7 8; do $T/alloc_c bulk; done" \
		>/dev/null 2>"$TMP/fd.err"; rc=$?
	cp "$TMP/small/f.hsnap" "$TMP/fd.hsnap"; local cprc=$?
	umount "$TMP/small"
	[ $cprc = 0 ] || { cat "$TMP/fd.err"; die "no file left on the full disk"; }
	[ $rc != 0 ] || { cat "$TMP/fd.err"; die "exit status 0 after the disk filled"; }
	contains "$TMP/fd.err" "is INCOMPLETE: writing it failed (No space left on device); it holds "
	held_a=$(sed -n 's/.* it holds \([0-9]*\) allocations, \([0-9]*\) frees, \([0-9]*\) stacks .*/\1/p' "$TMP/fd.err")
	held_f=$(sed -n 's/.* it holds \([0-9]*\) allocations, \([0-9]*\) frees, \([0-9]*\) stacks .*/\2/p' "$TMP/fd.err")
	held_s=$(sed -n 's/.* it holds \([0-9]*\) allocations, \([0-9]*\) frees, \([0-9]*\) stacks .*/\3/p' "$TMP/fd.err")
	"$A" stats "$TMP/fd.hsnap" >"$TMP/fd.stats" 2>"$TMP/fd.aerr" || { cat "$TMP/fd.err" "$TMP/fd.aerr"; die "stats of the cut file"; }
	contains "$TMP/fd.aerr" "no footer"
	eq "allocations the message says the file holds" "$(sed -n 's/^Events: [0-9]* (\([0-9]*\) allocations.*/\1/p' "$TMP/fd.stats")" "$held_a"
	eq "frees the message says the file holds" "$(sed -n 's/^Events: .* allocations, \([0-9]*\) frees.*/\1/p' "$TMP/fd.stats")" "$held_f"
	eq "stacks the message says the file holds" "$(sed -n 's/^Stacks: \([0-9]*\) interned.*/\1/p' "$TMP/fd.stats")" "$held_s"
	[ "$held_a" -gt 0 ] && [ "$held_a" -lt 1760008 ] || die "the file should hold some but not all of the 8 x 220001 allocations, holds $held_a"
	# summary: one entry per process (sh and each alloc_c), which add up to the file's.
	eq "summary's allocations, every process" "$held_a" \
		"$("$A" summary --json "$TMP/fd.hsnap" 2>/dev/null | grep -o '"allocated_count":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')"
}

# --max-stack's default holds a deep interpreter stack whole: Debian's python3 recursing 25
# levels through a C call (functools.partial: 4 native frames a level, 114 in all, where 3.11
# runs a plain Python call in the same C frame), then b'x' * 4000037 (a 4000070-byte block).
t_bpf_max_stack_default() {
	[ -x /usr/bin/python3.11 ] || skip "no /usr/bin/python3.11 (Debian's python3.11)"
	cat >"$TMP/deep.py" <<'EOF'
import functools
kept = []
def level(n):
    if n:
        return functools.partial(level, n - 1)()
    kept.append(b'x' * 4000037)
level(25)
EOF
	local via line n
	for via in preload bpf; do
		[ $via = bpf ] && { [ -z "$BPF_REASON" ] || continue; }
		"$R" --via $via -s 0 -o "$TMP/deep-$via.hsnap" -- /usr/bin/python3.11 "$TMP/deep.py" >/dev/null 2>"$TMP/deep.err" ||
			{ cat "$TMP/deep.err"; die "$via: recording python3"; }
		eq "$via: stacks.cut_at_max_stack" 0 "$("$A" stats "$TMP/deep-$via.hsnap" 2>/dev/null | awk '$1 == "stacks.cut_at_max_stack" { print $2 }')"
		line=$("$A" collapsed --value alloc_space "$TMP/deep-$via.hsnap" 2>/dev/null | awk '$NF == 4000070')
		[ -n "$line" ] || die "$via: no stack with the 4000070-byte block"
		n=$(echo "${line% *}" | tr ';' '\n' | grep -c '^_PyEval_EvalFrameDefault$')
		eq "$via: interpreter frames (the module's, one per partial call: 25)" 26 "$n"
		eq "$via: the outermost frame" _start "$(echo "$line" | cut -d';' -f1)"
		n=$(echo "${line% *}" | tr ';' '\n' | wc -l)
		[ "$n" -gt 64 ] || die "$via: the stack has $n frames: it no longer tests a default above 64"
	done
}

# A stack cut at --max-stack must not cut the next ones: the in-process unwinder took the
# frames of a shallower walk's callers from the last walk's, which lacked the frames past its
# cut. 25 levels (114 frames, cut at 100), then, back at level 20 (94 frames), b'y' * 3000017.
t_max_stack_after_cut() {
	[ -x /usr/bin/python3.11 ] || skip "no /usr/bin/python3.11 (Debian's python3.11)"
	cat >"$TMP/memo.py" <<'EOF'
import functools
kept = []
def level(n):
    if n:
        r = functools.partial(level, n - 1)()
        if n == 5:
            kept.append(b'y' * 3000017)
        return r
    kept.append(b'x' * 4000037)
level(25)
EOF
	local via line
	for via in preload bpf; do
		[ $via = bpf ] && { [ -z "$BPF_REASON" ] || continue; }
		"$R" --via $via -s 0 --max-stack 100 -o "$TMP/memo-$via.hsnap" -- /usr/bin/python3.11 "$TMP/memo.py" >/dev/null 2>"$TMP/memo.err" ||
			{ cat "$TMP/memo.err"; die "$via: recording python3"; }
		eq "$via: stacks.cut_at_max_stack (the 114-frame one only)" 1 \
			"$("$A" stats "$TMP/memo-$via.hsnap" 2>/dev/null | awk '$1 == "stacks.cut_at_max_stack" { print $2 }')"
		line=$("$A" collapsed --value alloc_space "$TMP/memo-$via.hsnap" 2>/dev/null | awk '$NF == 3000050')
		[ -n "$line" ] || die "$via: no stack with the 3000050-byte block"
		eq "$via: the 94-frame stack's outermost frame" _start "$(echo "$line" | cut -d';' -f1)"
		eq "$via: its interpreter frames (the module's, one per partial call: 20)" 21 "$(echo "${line% *}" | tr ';' '\n' | grep -c '^_PyEval_EvalFrameDefault$')"
	done
}

# ---- analyzer: out-of-order times, bounded structures, counters that agree (issue 23) ----

# Event times that go back and forth (two threads' runs of 4, every other run 35-43 us behind,
# as rings of several CPUs give them; tests/unit/craft.c's outoforder): every subcommand,
# under ASan, gives the figures the file was made with. Today's timeline wrote past its 1,024
# points here (heap-buffer-overflow; html the same way).
t_analyzer_out_of_order() {
	local SA=$OUT/asan/heapsnap-analyze f=$TMP/ooo.hsnap g=$TMP/ooo2.hsnap sub
	[ -x "$SA" ] || die "no sanitizer build"
	export ASAN_OPTIONS=abort_on_error=0:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:exitcode=99
	"$T/craft" outoforder "$f" 20000 || die "craft outoforder"
	"$T/craft" outoforder "$g" 24000 || die "craft outoforder 24000"
	for sub in "timeline --json" "html" "speedscope" "temporary --json" "summary --json" "top --json -n 0" "leaks" \
		"stats" "info" "collapsed" "pprof"; do
		"$SA" $sub --no-symbolize -o "$TMP/ooo.${sub%% *}" "$f" 2>"$TMP/ooo.err" ||
			{ cat "$TMP/ooo.err"; die "$sub on out-of-order times"; }
	done
	"$SA" diff --json --no-symbolize "$f" "$g" >"$TMP/ooo.diff" 2>"$TMP/ooo.err" || { cat "$TMP/ooo.err"; die "diff"; }
	python3 - "$TMP"/ooo.timeline "$TMP"/ooo.summary "$TMP"/ooo.top "$TMP"/ooo.diff "$TMP"/ooo.temporary <<-'PY' || die "figures"
	import json, sys
	tl, sm, top, diff, tmp = (json.load(open(p)) for p in sys.argv[1:6])
	pts = tl["points"]
	(p,) = sm["processes"]
	# 20000 blocks of 100 bytes, then the first 10000 freed; the last allocation at tick
	# 1000 + 10 * 19999 - (35 + 19999 % 9) (its run, 4999, is behind).
	assert 0 < len(pts) <= 1024, len(pts)
	assert all(a["time"] <= b["time"] for a, b in zip(pts, pts[1:])), "points out of order"
	assert max(q["live_bytes"] for q in pts) == 2000000 == tl["peak"]["live_bytes"], (max(q["live_bytes"] for q in pts), tl["peak"])
	assert abs(tl["peak"]["time"] - (1000 + 10 * 19999 - 35 - 19999 % 9) / 1e6) < 1e-6, tl["peak"]
	assert (p["allocated_bytes"], p["freed_bytes"], p["live_bytes"], p["peak_bytes"]) == (2000000, 1000000, 1000000, 2000000), p
	assert (p["allocated_count"], p["freed_count"], p["live_count"]) == (20000, 10000, 10000), p
	assert {f["name"]: f["flat"] for f in top["functions"]} == {"ooo+0x100": 500000, "ooo+0x200": 500000}, top["functions"]
	assert diff["delta"] == 200000 and diff["from"]["total"] == 1000000 and diff["to"]["total"] == 1200000, diff
	print(len(pts), "points; peak", tl["peak"], "; temporary", tmp.get("temporary"))
	PY
	# At the peak all 20000 are live.
	"$SA" top --json --peak --no-symbolize "$f" >"$TMP/ooo.peak" 2>"$TMP/ooo.err" || { cat "$TMP/ooo.err"; die "top --peak"; }
	contains "$TMP/ooo.peak" '"total":2000000'
}

# An allocation into a slot still live (its block's free not read before it) frees the old
# block by implication, counted, so that allocated - freed = live (tests/unit/craft.c's reused:
# 1050 allocated, 600 freed of which 300 implied, 450 live); stats says what the counters
# say (craft's reused, sampled, sampledbpf); --at inside the recording is no "past the end".
t_analyzer_counters_agree() {
	local f=$TMP/re.hsnap
	"$T/craft" reused "$f" && "$T/craft" sampled "$TMP/sa.hsnap" && "$T/craft" sampledbpf "$TMP/sb.hsnap" || die "craft"
	"$A" summary --json "$f" >"$TMP/re.json" 2>/dev/null || die "summary"
	python3 - "$TMP/re.json" <<-'PY' || die "summary of blocks allocated into live slots"
	import json, sys
	(p,) = json.load(open(sys.argv[1]))["processes"]
	got = tuple(p[k] for k in ("allocated_bytes", "allocated_count", "freed_bytes", "freed_count", "implied_freed_bytes",
	                           "implied_freed_count", "live_bytes", "live_count", "peak_bytes"))
	assert got == (1050, 5, 600, 3, 300, 2, 450, 2, 500), got
	assert p["allocated_bytes"] - p["freed_bytes"] == p["live_bytes"]
	PY
	"$A" summary "$f" 2>/dev/null | grep -q "^    of which *300 bytes in *2 blocks implied" || die "summary's implied frees"
	"$A" stats "$f" >"$TMP/re.st" || die "stats"
	contains "$TMP/re.st" "Events: 6 (5 allocations, 1 frees, 0 restored by a failed realloc, 0 frees of no live block)"
	contains "$TMP/re.st" "Implied frees: 2 blocks"
	contains "$TMP/re.st" "Frees of unknown pointers: 7 (7 counted by the recorder and not written (frees.unknown)"
	! grep -q "Live map" "$TMP/re.st" || die "an every-event recording uses no live map"
	"$A" stats "$TMP/sa.hsnap" >"$TMP/sa.st" || die "stats sampled"
	contains "$TMP/sa.st" "2 allocations sampled (the recorder did not count allocation calls); 2 in the file"
	contains "$TMP/sa.st" "Frees of unknown pointers: 5 (5 counted"
	! grep -q "of 0 \|Live map" "$TMP/sa.st" || die "in-process: no calls counted, no kernel map"
	"$A" stats "$TMP/sb.hsnap" >"$TMP/sb.st" || die "stats sampledbpf"
	contains "$TMP/sb.st" "2 allocations sampled of 40 allocation calls (5.000%)"
	contains "$TMP/sb.st" "Live map: at most 2 sampled blocks live at once, of 65536 entries"
	for g in re sa sb; do
		"$A" stats --json "$TMP/$g.hsnap" | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["events"] == s["allocs"] + s["frees"] + s["restored"] + s["unknown_frees"], s' || die "stats --json of $g"
	done
	# A real one: a free the in-process recorder does not see (tests/workloads/unseen_free.c),
	# its address allocated again. The recorder's "live at the end" is the analyzer's live.
	"$R" --via preload -o "$TMP/us.hsnap" -- "$T/unseen_free" >/dev/null 2>"$TMP/us.err" || { cat "$TMP/us.err"; die "unseen_free"; }
	contains "$TMP/us.err" "live at the end: 3000 bytes"
	"$A" summary --json "$TMP/us.hsnap" >"$TMP/us.json" 2>/dev/null || die "summary unseen_free"
	contains "$TMP/us.json" '"allocated_bytes":5000,"allocated_count":3,"freed_bytes":2000,"freed_count":2,"implied_freed_bytes":1000,"implied_freed_count":1,"live_bytes":3000,"live_count":1'
	# --at inside a 0.301 s recording (outoforder 20000: 9904 blocks at or before 0.1 s).
	"$T/craft" outoforder "$TMP/at.hsnap" 20000 || die "craft outoforder"
	"$A" summary --at 0.1 --json "$TMP/at.hsnap" >"$TMP/at.json" 2>"$TMP/at.err" || { cat "$TMP/at.err"; die "--at 0.1"; }
	contains "$TMP/at.json" '"live_bytes":990400,"live_count":9904'
	"$A" summary --at 1 "$TMP/at.hsnap" >/dev/null 2>"$TMP/at.err"; eq "--at past the end exit" 4 $?
	contains "$TMP/at.err" "--at 1s is past the end of the recording (0.301s)"
	# Seconds no tick count holds are refused, not converted (a double past 2^64 has no integer).
	for sub in nan inf 1e300; do
		"$A" summary --at $sub "$TMP/at.hsnap" >/dev/null 2>"$TMP/at.err"; eq "--at $sub exit" 2 $?
		contains "$TMP/at.err" "invalid --at '$sub'"
	done
}

# ---- injection: the stub and the session (issue 23) ----

# wake_run NAME [RECORDER OPTIONS]: wake (tests/workloads/wake.c) attached to while asleep in
# read(), then woken; the recording stopped with the process still alive (it holds the stub's
# counts), then the process let go. WAKE_MODE, if set, is wake's mode (poll, dlopen). Sets
# W_MAIN, W_THR, W_DL (blocks recorded from each function), W_LOST
# (lost.inject_unhooked_calls) and W_HELD (inject.calls_held).
wake_run() {
	local name=$1 p rc
	shift
	mkfifo "$TMP/$name.fifo"
	"$T/wake" ${WAKE_MODE:+"$WAKE_MODE"} "$TMP/$name.fifo" >"$TMP/$name.out" 2>"$TMP/$name.terr" &
	TJOB=$!
	waitfor "$TMP/$name.out" ready || die "$name: the target never said ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/$name.out")
	"$R" -v --via inject -p "$TPID" -s 0 "$@" -o "$TMP/$name.hsnap" >/dev/null 2>"$TMP/$name.rerr" &
	RPID=$!
	# Woken once the trampoline is in: its first allocator call loads the library.
	waitfor "$TMP/$name.rerr" "waiting for an allocator call" || { cat "$TMP/$name.rerr"; die "$name: no trampoline"; }
	echo go >"$TMP/$name.fifo"
	waitfor "$TMP/$name.rerr" "attached to $TPID" || { cat "$TMP/$name.rerr"; die "$name: never attached"; }
	waitfor "$TMP/$name.out" done || die "$name: the target never said done"
	kill -INT $RPID
	wait $RPID || { cat "$TMP/$name.rerr"; die "$name: the recorder failed"; }
	echo go >"$TMP/$name.fifo"
	wait $TJOB; rc=$?
	eq "$name: the target's own exit status" 0 $rc
	[ -s "$TMP/$name.terr" ] && { cat "$TMP/$name.terr"; die "$name: the target wrote to stderr"; }
	p=$TMP/$name.pb.gz
	"$A" pprof -o "$p" "$TMP/$name.hsnap" 2>/dev/null || die "$name: pprof"
	W_MAIN=$(pv "$p" inuse_objects wake_main_keep); [ "$W_MAIN" = absent ] && W_MAIN=0
	W_THR=$(pv "$p" inuse_objects wake_thread_keep); [ "$W_THR" = absent ] && W_THR=0
	W_DL=$(pv "$p" inuse_objects wake_in_dlopen); [ "$W_DL" = absent ] && W_DL=0
	[ "$W_DL" = 0 ] || eq "$name: wake_in_dlopen inuse_space" $((W_DL * 5000)) "$(pv "$p" inuse_space wake_in_dlopen)"
	# Exact bytes of what was recorded: 4,000 and 3,000 a block.
	[ "$W_MAIN" = 0 ] || eq "$name: wake_main_keep inuse_space" $((W_MAIN * 4000)) "$(pv "$p" inuse_space wake_main_keep)"
	[ "$W_THR" = 0 ] || eq "$name: wake_thread_keep inuse_space" $((W_THR * 3000)) "$(pv "$p" inuse_space wake_thread_keep)"
	"$A" stats --json "$TMP/$name.hsnap" >"$TMP/$name.stats" || die "$name: stats"
	W_LOST=$(grep -o '"lost.inject_unhooked_calls":[0-9]*' "$TMP/$name.stats" | cut -d: -f2)
	W_HELD=$(grep -o '"inject.calls_held":[0-9]*' "$TMP/$name.stats" | cut -d: -f2)
	echo "$name: recorded $W_MAIN + $W_THR of 1000 + 1000, lost.inject_unhooked_calls ${W_LOST:-absent}, held ${W_HELD:-absent}"
	W_LOST=${W_LOST:-0} W_HELD=${W_HELD:-0}
}

# Attached asleep, woken: every allocation made as it wakes is recorded (the calls wait in the
# trampoline for the hooks), or counted. With no wait allowed (--attach-hold 0), those that
# went by are counted, each one.
t_inject_wake() {
	need_inject; need_go
	wake_run wk
	eq "wk: every allocation recorded or counted" 2000 $((W_MAIN + W_THR + W_LOST))
	[ "$W_MAIN" -le 1000 ] && [ "$W_THR" -le 1000 ] || die "wk: more recorded than made"
	[ "$W_HELD" -ge 1 ] || die "wk: no call waited for the hooks"
	"$A" info "$TMP/wk.hsnap" >"$TMP/wk.info" || die "wk: info"
	"$A" stats "$TMP/wk.hsnap" >"$TMP/wk.stats.txt" || die "wk: stats"
	contains "$TMP/wk.stats.txt" "lost.inject_unhooked_calls"
	wake_run wk0 --attach-hold 0
	eq "wk0: every allocation recorded or counted" 2000 $((W_MAIN + W_THR + W_LOST))
	[ "$W_LOST" -ge 1 ] || die "wk0: nothing waited, yet nothing went by"
	[ "$W_HELD" = 0 ] || die "wk0: $W_HELD calls waited with --attach-hold 0"
	"$A" top "$TMP/wk0.hsnap" >/dev/null 2>"$TMP/wk0.top.err"
	contains "$TMP/wk0.top.err" "lost.inject_unhooked_calls $W_LOST"
}

# The first allocator call made inside dlopen (a plugin's constructor), with the loader's lock
# held: the loader thread's own dlopen waits for that lock, so that call cannot wait for the
# hooks: it waits --attach-hold out, never for ever, and it and what follows before the hooks
# are in are counted; every allocation is recorded or counted, exactly.
t_inject_hold_in_dlopen() {
	need_inject; need_go
	WAKE_MODE=dlopen wake_run wkd
	eq "wkd: every allocation recorded or counted" 2010 $((W_MAIN + W_THR + W_DL + W_LOST))
	[ "$W_LOST" -ge 1 ] || die "wkd: the call made inside dlopen cannot have waited for the hooks, yet none went by"
	contains "$TMP/wkd.rerr" "waited --attach-hold out"
}

# Refusals that say what is wrong: the recorder itself, a process another recorder records
# (the target unharmed: the first recording stays exact), a zombie. Exit status 1, no file.
t_inject_messages() {
	need_inject; need_go
	local z zp rc
	sh -c 'exec "$1" -p $$ -o "$2"' sh "$R" "$TMP/self.hsnap" 2>"$TMP/self.err"; rc=$?
	eq "-p of the recorder itself: exit" 1 $rc
	contains "$TMP/self.err" "cannot attach to the recorder itself (process"
	[ -e "$TMP/self.hsnap" ] && die "a refused attach left a file"
	inject_start two "$T/alloc_c" inject
	"$R" -p "$TPID" -o "$TMP/two2.hsnap" 2>"$TMP/two2.err"; rc=$?
	eq "a second recorder: exit" 1 $rc
	contains "$TMP/two2.err" "process $TPID is already being recorded by heapsnap-record (pid $RPID)"
	[ -e "$TMP/two2.hsnap" ] && die "the refused second recorder left a file"
	inject_finish two 7
	inject_check_c two
	# A zombie: sleep never reaps the child its shell left it.
	sh -c 'sleep 0 & echo $!; exec sleep 60' >"$TMP/z.out" &
	zp=$!
	waitfor "$TMP/z.out" "" && z=$(head -1 "$TMP/z.out")
	for i in $(seq 200); do [ -n "$z" ] && grep -q "^State:.*Z" /proc/$z/status 2>/dev/null && break; z=$(head -1 "$TMP/z.out"); sleep 0.05; done
	grep -q "^State:.*Z" /proc/$z/status || die "no zombie to attach to"
	"$R" -p "$z" -o "$TMP/z.hsnap" 2>"$TMP/z.err"; rc=$?
	if [ -z "$BPF_REASON" ]; then
		"$R" --via bpf -p "$z" -o "$TMP/zb.hsnap" 2>"$TMP/zb.err"; eq "--via bpf -p of a zombie: exit" 1 $?
		contains "$TMP/zb.err" "process $z is a zombie: it has exited and its parent (process $zp) has not reaped it"
		grep -q "kernel thread" "$TMP/zb.err" && die "BPF called a zombie a kernel thread"
	fi
	kill $zp; wait $zp 2>/dev/null
	eq "-p of a zombie: exit" 1 $rc
	contains "$TMP/z.err" "process $z is a zombie: it has exited and its parent (process $zp) has not reaped it"
	grep -q "kernel thread" "$TMP/z.err" && die "a zombie called a kernel thread"
	[ -e "$TMP/z.hsnap" ] && die "a refused attach left a file"
	return 0
}

# ns_start NAME MODE: alloc_c MODE as uid 65534 in a PID and mount namespace of its own
# (unshare -fpm --mount-proc); sets TJOB (unshare), TPID (the target, as this namespace sees it).
ns_start() {
	local name=$1 i
	mkfifo "$TMP/$name.fifo"; chmod 666 "$TMP/$name.fifo"
	unshare -fpm --mount-proc setpriv --reuid=65534 --regid=65534 --clear-groups "$TMP/ub/alloc_c" "$2" "$TMP/$name.fifo" \
		>"$TMP/$name.out" 2>"$TMP/$name.terr" &
	TJOB=$!
	waitfor "$TMP/$name.out" ready || die "$name: the target never said ready"
	TPID=$(awk '{ print $1 }' /proc/$TJOB/task/$TJOB/children)
	eq "$name: the target's pid in its namespace" "ready 1" "$(cat "$TMP/$name.out")"
	eq "$name: the target's user" 65534 "$(awk '/^Uid:/ { print $2 }' /proc/$TPID/status)"
}

# A target in another PID and mount namespace, as another user: the injection fires (the stub
# compares getpid() with the target's pid as it sees it), every figure exact, its fork child
# and threads too (their pids made this namespace's). An idle one times out and keeps nothing
# of the injection: its maps and descriptors as before, malloc's GOT entry libc's.
t_inject_pid_ns() {
	need_inject; need_go
	command -v unshare >/dev/null && command -v setpriv >/dev/null || skip "no unshare or setpriv (util-linux)"
	unshare -fpm --mount-proc true 2>/dev/null || skip "cannot make a PID namespace here"
	local rc
	unpriv_bin
	ns_start pns inject
	"$R" -v -p "$TPID" -s 0 -o "$TMP/pns.hsnap" >/dev/null 2>"$TMP/pns.rerr" &
	RPID=$!
	waitfor "$TMP/pns.rerr" "attached to $TPID" || { cat "$TMP/pns.rerr"; die "pns: never attached"; }
	contains "$TMP/pns.rerr" "recording via inject"
	contains "$TMP/pns.rerr" "process $TPID is in another PID namespace"
	echo go >"$TMP/pns.fifo"
	wait $TJOB; rc=$?
	eq "pns: the target's own exit status" 7 $rc
	wait $RPID || { cat "$TMP/pns.rerr"; die "pns: the recorder failed"; }
	[ -s "$TMP/pns.terr" ] && { cat "$TMP/pns.terr"; die "pns: the target wrote to stderr"; }
	inject_check_c pns
	"$A" info "$TMP/pns.hsnap" >"$TMP/pns.info"
	contains "$TMP/pns.info" "  $TPID (alloc_c, attached"
	# Idle: no allocator call in 0.5 s.
	ns_start pidle wait
	ls -l /proc/$TPID/fd | awk '{ print $9, $10, $11 }' >"$TMP/pidle.fd0"
	cat /proc/$TPID/maps >"$TMP/pidle.maps0"
	"$R" --via inject -p "$TPID" --attach-timeout 0.5 -o "$TMP/pidle.hsnap" 2>"$TMP/pidle.err"; rc=$?
	eq "pidle: --via inject, idle: exit" 1 $rc
	contains "$TMP/pidle.err" "process $TPID made no allocator call in 0.5 s"
	ls -l /proc/$TPID/fd | awk '{ print $9, $10, $11 }' >"$TMP/pidle.fd1"
	diff "$TMP/pidle.maps0" /proc/$TPID/maps || die "pidle: the timed-out injection left mappings behind"
	diff "$TMP/pidle.fd0" "$TMP/pidle.fd1" || die "pidle: the timed-out injection left descriptors behind"
	eq "pidle: GOT entry of malloc" libc "$(python3 tests/gotvalue.py $TPID "$TMP/ub/alloc_c" malloc)"
	echo go >"$TMP/pidle.fifo"
	wait $TJOB; eq "pidle: the target's own exit status" 0 $?
	[ -s "$TMP/pidle.terr" ] && { cat "$TMP/pidle.terr"; die "pidle: the target wrote to stderr"; }
	return 0
}

# A process that calls no allocator while it idles (wake poll: poll() on a FIFO every 20 ms) is
# injected at one of its other calls through the GOT, which only starts the loader and is put
# back once the hooks are in; what it allocates when woken is then all recorded, exactly.
t_inject_idle_safe_point() {
	need_inject; need_go
	local rc p=$TMP/sp.pb.gz lost
	mkfifo "$TMP/sp.fifo"
	"$T/wake" poll "$TMP/sp.fifo" >"$TMP/sp.out" 2>"$TMP/sp.terr" &
	TJOB=$!
	waitfor "$TMP/sp.out" ready || die "sp: the target never said ready"
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/sp.out")
	"$R" -v --via inject -p "$TPID" -s 0 -o "$TMP/sp.hsnap" >/dev/null 2>"$TMP/sp.rerr" &
	RPID=$!
	waitfor "$TMP/sp.rerr" "attached to $TPID" || { cat "$TMP/sp.rerr"; die "sp: not injected while idle"; }
	contains "$TMP/sp.rerr" "trampoline entry (safe point only): poll in"
	eq "sp: GOT entry of poll while attached" libc "$(python3 tests/gotvalue.py $TPID "$T/wake" poll)"
	eq "sp: GOT entry of malloc while attached" libheapsnap "$(python3 tests/gotvalue.py $TPID "$T/wake" malloc)"
	echo go >"$TMP/sp.fifo"
	waitfor "$TMP/sp.out" done || die "sp: the target never said done"
	kill -INT $RPID
	wait $RPID || { cat "$TMP/sp.rerr"; die "sp: the recorder failed"; }
	eq "sp: GOT entry of poll after the detach" libc "$(python3 tests/gotvalue.py $TPID "$T/wake" poll)"
	echo go >"$TMP/sp.fifo"
	wait $TJOB; rc=$?
	eq "sp: the target's own exit status" 0 $rc
	[ -s "$TMP/sp.terr" ] && { cat "$TMP/sp.terr"; die "sp: the target wrote to stderr"; }
	"$A" pprof -o "$p" "$TMP/sp.hsnap" 2>/dev/null || die "sp: pprof"
	eq "sp: wake_main_keep inuse_objects" 1000 "$(pv "$p" inuse_objects wake_main_keep)"
	eq "sp: wake_main_keep inuse_space" 4000000 "$(pv "$p" inuse_space wake_main_keep)"
	eq "sp: wake_thread_keep inuse_objects" 1000 "$(pv "$p" inuse_objects wake_thread_keep)"
	eq "sp: wake_thread_keep inuse_space" 3000000 "$(pv "$p" inuse_space wake_thread_keep)"
	lost=$("$A" stats --json "$TMP/sp.hsnap" | grep -o '"lost.inject_unhooked_calls":[0-9]*' | cut -d: -f2)
	eq "sp: lost.inject_unhooked_calls" 0 "${lost:-absent}"
}

# mc_ask PORT: one set and get through memcached's text protocol; prints its answer's lines.
mc_ask() {
	local reply
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'set hs 0 0 5\r\nhello\r\nget hs\r\nquit\r\n' >&3
	reply=$(timeout 10 cat <&3 | tr -d '\r' | tr '\n' ' ')
	exec 3<&-
	echo "$reply"
}

# memcached idle (its threads wait in epoll_wait, no allocator call) is injected at those
# calls, answers correctly while attached and after, and its first connection's allocations
# are recorded; twice.
t_inject_memcached_idle() {
	need_inject
	command -v memcached >/dev/null || skip "no memcached"
	local port=$((20000 + RANDOM % 20000)) mpid i n
	memcached -u nobody -l 127.0.0.1 -p $port -U 0 -t 2 >"$TMP/mc.out" 2>&1 &
	mpid=$!
	for i in $(seq 200); do mc_ask $port >/dev/null 2>&1 && break; sleep 0.05; done
	eq "memcached answers" "STORED VALUE hs 0 5 hello END " "$(mc_ask $port)"
	for i in 1 2; do
		"$R" -v --via inject -p $mpid -s 0 -o "$TMP/mc$i.hsnap" >/dev/null 2>"$TMP/mc$i.rerr" &
		RPID=$!
		waitfor "$TMP/mc$i.rerr" "attached to $mpid" || { cat "$TMP/mc$i.rerr"; kill $mpid; die "memcached: not injected while idle ($i)"; }
		contains "$TMP/mc$i.rerr" "(safe point only): epoll_wait"
		eq "memcached answers while attached ($i)" "STORED VALUE hs 0 5 hello END " "$(mc_ask $port)"
		kill -INT $RPID
		wait $RPID || { cat "$TMP/mc$i.rerr"; kill $mpid; die "memcached: the recorder failed ($i)"; }
		# The first connection's buffers are allocated; later ones reuse them (memcached keeps them).
		n=$("$A" stats --json "$TMP/mc$i.hsnap" | grep -o '"events.alloc":[0-9]*' | cut -d: -f2)
		[ $i = 2 ] || [ "${n:-0}" -gt 0 ] || { kill $mpid; die "memcached: nothing recorded of a connection"; }
		"$A" info "$TMP/mc$i.hsnap" >/dev/null 2>&1 || { kill $mpid; die "memcached: recording $i unreadable"; }
		eq "memcached answers after the detach ($i)" "STORED VALUE hs 0 5 hello END " "$(mc_ask $port)"
	done
	kill $mpid; wait $mpid 2>/dev/null
	return 0
}

# ---- sizes and durations: one parser for both programs (common/units.c) ----

t_units_unit() { "$T/test_units"; }

# Every size and duration option takes the same units, and says what it came to with -v: the
# figures below are the options' values worked out by hand.
t_units_record_parsed() {
	local v
	"$R" --via preload -v -o "$TMP/up.hsnap" --duration 1.5m --interval 250ms --rss-interval 0.5s --attach-timeout 1h \
		-s 1.5m --ringbuf-size 2m --stack dwarf=16k -- /bin/true >/dev/null 2>"$TMP/up.err" || { cat "$TMP/up.err"; die "recording"; }
	contains "$TMP/up.err" "duration 90s, interval 0.25s, rss-interval 0.5s, attach-timeout 3600s, sample-rate 1572864 bytes, ringbuf-size 2 MiB, stack window 16384 bytes"
	# Plain figures keep their old meaning: seconds, bytes, and MiB for --ringbuf-size.
	"$R" --via preload -v -o "$TMP/up.hsnap" --duration 0.2 --interval 5 -s 4096 --ringbuf-size 16 --stack dwarf=300 \
		-- /bin/true >/dev/null 2>"$TMP/up.err" || { cat "$TMP/up.err"; die "recording"; }
	contains "$TMP/up.err" "duration 0.2s, interval 5s, rss-interval 1s, attach-timeout 10s, sample-rate 4096 bytes, ringbuf-size 16 MiB, stack window 300 bytes"
	"$R" --via preload -v -o "$TMP/up.hsnap" -s 1g --ringbuf-size 1g -- /bin/true >/dev/null 2>"$TMP/up.err" || { cat "$TMP/up.err"; die "recording"; }
	contains "$TMP/up.err" "sample-rate 1073741824 bytes, ringbuf-size 1024 MiB"
	# Refused before anything starts: exit 2, one line naming the option, the value and why.
	while read -r opt val why; do
		"$R" --via preload -o "$TMP/refused.hsnap" $opt "$val" -- /bin/true >/dev/null 2>"$TMP/bad.err"
		eq "$opt $val: exit" 2 $?
		contains "$TMP/bad.err" "heapsnap-record: invalid value '$val' for $opt: $why"
		eq "$opt $val: lines" 1 "$(grep -c . "$TMP/bad.err")"
	done <<-'EOF'
	--duration 5parsecs expected seconds, or a number with ms, s, m or h
	--duration nan not a number
	--duration inf not a number
	--duration -1 not a number
	--duration 0 expected more than 0 seconds
	--duration 1e3 expected seconds, or a number with ms, s, m or h
	--duration 1000000001 expected more than 0 seconds, at most 1e9
	--duration 1000000000001 more than 1e12 seconds
	--duration 99999999999999999999 too large
	--interval 5ms expected seconds, at least 0.01
	--rss-interval 50ms expected seconds, at least 0.1
	--attach-timeout 1.5h expected seconds, 0.1 to 3600
	--sample-rate 1.5 not a whole number of bytes
	--sample-rate 1t expected bytes, or a number with k, m or g
	--sample-rate 1025g expected bytes from 0 to 1024g
	--sample-rate 18446744073709551616 too large
	--ringbuf-size 3 expected a power of two from 1m to 1g
	--ringbuf-size 512k expected a power of two from 1m to 1g
	--ringbuf-size 2g expected a power of two from 1m to 1g
	--ringbuf-size 1x expected bytes, or a number with k, m or g
	--stack dwarf=64k dwarf=SIZE takes 256 to 32768
	--stack dwarf=1.5 dwarf=SIZE takes 256 to 32768
	EOF
	[ ! -e "$TMP/refused.hsnap" ] || die "a refused option left a file"
}

# --duration 5m and --ringbuf-size 1g with BPF: a command that ends first ends the recording,
# the kernel gets rings of the size asked for, and alloc_c's figures stay exact.
t_units_record_bpf() {
	need_bpf; need_go
	local ncpu ring=256 tpid t0 t1 last
	record -v -s 0 --duration 5m --ringbuf-size 1g -o "$TMP/ub.hsnap" -- "$T/alloc_c" || die "recording with --duration 5m --ringbuf-size 1g"
	contains "$TMP/record.err" "duration 300s"
	contains "$TMP/record.err" "ringbuf-size 1024 MiB"
	# As many rings as possible CPUs (libbpf's count), each the largest power of two they share 1 GiB by.
	ncpu=$(awk -F, '{ n = 0; for (i = 1; i <= NF; i++) { split($i, r, "-"); n += (i in r && r[2] != "" ? r[2] - r[1] + 1 : 1) } print n }' /sys/devices/system/cpu/possible)
	while [ $((ring * 2 * ncpu)) -le $((1024 * 1024)) ]; do ring=$((ring * 2)); done
	contains "$TMP/record.err" "$ncpu ring buffers of $ring KiB, one per CPU"
	"$A" pprof -o "$TMP/ub.pb.gz" "$TMP/ub.hsnap" || die "pprof"
	local p=$TMP/ub.pb.gz
	eq "thread_work inuse_space" 20000 "$(pv $p inuse_space thread_work)"
	eq "child_work inuse_space (fork child)" 15000 "$(pv $p inuse_space child_work)"
	eq "plugin_alloc inuse_space (dlopen)" 12288 "$(pv $p inuse_space plugin_alloc)"
	eq "leak_malloc inuse_space" 10000 "$(pv $p inuse_space leak_malloc)"
	eq "realloc_chain alloc_space" 5600 "$(pv $p alloc_space realloc_chain)"
	eq "churn_malloc alloc_objects" 100 "$(pv $p alloc_objects churn_malloc)"
	"$A" stats "$TMP/ub.hsnap" | grep -q "lost.ringbuf_full *0$" || die "events lost in 1 GiB of rings"
	# --duration 0.2 (plain seconds, as before) ends the recording of a process that runs on.
	"$T/alloc_c" loop 120 >/dev/null &
	tpid=$!
	"$R" --via "$VIA" -v -p $tpid -s 0 --duration 0.2 -o "$TMP/ud.hsnap" >/dev/null 2>"$TMP/ud.err" ||
		{ kill $tpid; cat "$TMP/ud.err"; die "recording with --duration 0.2"; }
	kill -0 $tpid 2>/dev/null || die "the target ended before the recording"
	kill $tpid; wait $tpid 2>/dev/null
	contains "$TMP/ud.err" "duration 0.2s"
	last=$("$A" info --json "$TMP/ud.hsnap" | grep -o '"last_time":[0-9.]*' | cut -d: -f2)
	awk -v t="$last" 'BEGIN { exit !(t >= 0.2 && t < 10) }' || die "--duration 0.2 recorded ${last}s"
}

# The sampling math, thresholds and weights, against figures worked out apart from it.
t_sampling_unit() { "$T/test_sampling"; }

# The analyzer reads them as the recorder does: figures checked through what it reports back.
t_units_analyzer() {
	local f=testdata/alloc_c.hsnap val
	"$A" summary --no-symbolize --at 5m $f >/dev/null 2>"$TMP/ua.err"; eq "--at 5m exit" 4 $?
	contains "$TMP/ua.err" "--at 300s is past the end"
	"$A" summary --no-symbolize --at 1.5h $f >/dev/null 2>"$TMP/ua.err"; eq "--at 1.5h exit" 4 $?
	contains "$TMP/ua.err" "--at 5400s is past the end"
	"$A" summary --no-symbolize --at 10ms $f >"$TMP/ua.ms" || die "--at 10ms"
	"$A" summary --no-symbolize --at 0.01 $f >"$TMP/ua.s" || die "--at 0.01"
	cmp -s "$TMP/ua.ms" "$TMP/ua.s" || die "--at 10ms and --at 0.01 differ"
	"$A" leaks --no-symbolize --min-age 1.5m $f >/dev/null || die "--min-age 1.5m"
	for val in 1.5m:1572864 1g:1073741824 512K:524288 1000:1000; do
		"$A" diff --no-symbolize --max-growth ${val%:*} $f $f >/dev/null 2>"$TMP/ua.err" || { cat "$TMP/ua.err"; die "--max-growth ${val%:*}"; }
		contains "$TMP/ua.err" "within the limit of ${val#*:}"
	done
	"$A" diff --no-symbolize --max-growth 2.5% $f $f >/dev/null 2>"$TMP/ua.err" || die "--max-growth 2.5%"
	while read -r opt val why; do
		"$A" diff --no-symbolize $opt "$val" $f $f >/dev/null 2>"$TMP/ua.err"; eq "$opt $val: exit" 2 $?
		contains "$TMP/ua.err" "heapsnap-analyze: invalid $opt '$val': $why"
	done <<-'EOF'
	--max-growth 1000.5 not a whole number of bytes, or a percent of the old total
	--max-growth 1t expected bytes, or a number with k, m or g
	--max-growth -5% not a number
	--max-growth nan% not a number
	--max-growth 5%% expected a number followed by %
	EOF
	while read -r opt val why; do
		"$A" leaks --no-symbolize $opt "$val" $f >/dev/null 2>"$TMP/ua.err"; eq "$opt $val: exit" 2 $?
		contains "$TMP/ua.err" "heapsnap-analyze: invalid $opt '$val': $why"
	done <<-'EOF'
	--min-age nan not a number
	--min-age inf not a number
	--min-age -1s not a number
	--min-age 1e300 expected seconds, or a number with ms, s, m or h
	--min-age 5parsecs expected seconds, or a number with ms, s, m or h
	--min-age 277777778h more than 1e12 seconds
	--at 1000000000001 more than 1e12 seconds
	EOF
}

# ---- format: the schema tables (format/schema.c) ----
# The writer's bytes and the reader's records and errors for every record type, random values
# at the edges, and damaged payloads: digests of what the hand-written encode_extended and
# decode_extended gave (commit b13c7fc, tests/unit/schemagen.c built against it), so the
# tables cannot change the file format unseen. File offsets are left out: they depend on the
# zstd library's compression, not on the schema.
t_format_schema() {
	local G seed bad
	G=$(realpath "$T/schemagen") || die "no $T/schemagen"
	cd "$TMP" || die "cd $TMP"
	"$G" check >check.log || { cat check.log; die "schema tables break their rules"; }
	for bad in 5 5000; do
		for seed in $(seq 1 25); do
			"$G" write s.hsnap 600 $seed $bad >>w.log || die "schemagen write $seed $bad"
			"$G" raw s.hsnap >>raw.bin || die "schemagen raw $seed $bad"
			"$G" dump s.hsnap >>read.log || die "schemagen dump $seed $bad"
			"$G" corrupt s.hsnap c.hsnap $seed || die "schemagen corrupt $seed $bad"
			"$G" dump c.hsnap >>read.log || die "schemagen dump of the damaged $seed $bad"
		done
	done
	sed -E 's/offset [0-9]+/offset N/g; s/followed by [0-9]+ bytes/followed by N bytes/g; s/ [0-9]+,([0-9]+,[0-9]+)/ \1/g' \
		read.log >read.norm
	eq "writer's bytes" 5e46fef87bdd2fd8f48a23d7e45c63aee2b6667d3137a2890e622c6bd1900927 \
		"$(cat w.log raw.bin | sha256sum | cut -c1-64)"
	eq "reader's records and errors" 294a9b360efc5d159aaf24f0ae1417112eb4192577b73e47797fc5c203a3e022 \
		"$(sha256sum <read.norm | cut -c1-64)"
}

# ---- format: version 2.1 files read as before, and version 3 keeps what they show ----
# testdata/v2 holds a 2.1 recording (heapsnap-record of main at 5bb7e6b, --via preload) and what
# that analyzer printed for it. Re-encoded as version 3 (tests/unit/mutate, seed 0), the figures
# that do not print times stay the same to the byte: blocks, bytes, stacks and which free ended
# which block (temporary); times move to the writer's 1 ms steps, never by a whole step.
t_format_v2() {
	local f=testdata/v2/alloc_c.hsnap n
	golden v2/alloc_c.top top -n 0 --no-symbolize $f
	golden v2/alloc_c.collapsed collapsed --no-symbolize $f
	golden v2/alloc_c.summary summary --no-symbolize $f
	golden v2/alloc_c.leaks leaks -n 5 --no-symbolize $f
	golden v2/alloc_c.summary.json summary --json --no-symbolize $f
	golden v2/alloc_c.timeline timeline --no-symbolize $f
	golden v2/alloc_c.temporary temporary --no-symbolize $f
	golden v2/alloc_c.info info $f
	"$T/mutate" $f "$TMP/v2to3.hsnap" 0 || die "re-encode"
	"$A" info "$TMP/v2to3.hsnap" >"$TMP/v2to3.info" || die "info of the re-encoded file"
	contains "$TMP/v2to3.info" "Format: 3.0, complete"
	for n in top collapsed temporary; do
		local more=()
		[ $n = top ] && more=(-n 0)
		"$A" "$n" "${more[@]}" --no-symbolize "$TMP/v2to3.hsnap" | tail -n +2 >"$TMP/v2to3.$n"
		tail -n +2 "testdata/v2/alloc_c.$n" | diff -u - "$TMP/v2to3.$n" || die "re-encoded $n differs"
	done
	# Peak and oldest times: the 2.1 file's, or at most one step (1 ms) earlier.
	"$A" summary --json --no-symbolize "$TMP/v2to3.hsnap" >"$TMP/v2to3.json" || die "summary of the re-encoded file"
	python3 - testdata/v2/alloc_c.summary.json "$TMP/v2to3.json" <<'PY' || die "re-encoded times"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def walk(x, y, path):
    if isinstance(x, dict):
        assert x.keys() == y.keys(), path
        for k in x:
            if k != "file": walk(x[k], y[k], path + "." + k)
    elif isinstance(x, list):
        assert len(x) == len(y), path
        for i, (p, q) in enumerate(zip(x, y)): walk(p, q, "%s[%d]" % (path, i))
    elif isinstance(x, float) and ("time" in path or "_at" in path or "age" in path or path.endswith("s")):
        assert -0.0011 <= y - x <= 0.0011, (path, x, y)
    else:
        assert x == y, (path, x, y)
walk(a, b, "")
PY
}

# Damaged version 3 frames (raw bytes changed or cut, recompressed: tests/unit/schemagen's
# corrupt) read by the sanitized reader: never a crash, and the version 3 checks are reached.
t_format_v3_damage() {
	local G seed f reasons
	G=$T/schemagen
	"$T/craft" outoforder "$TMP/d3a.hsnap" 3000 && "$T/craft" reused "$TMP/d3b.hsnap" || die "craft"
	"$T/mutate" testdata/v2/alloc_c.hsnap "$TMP/d3c.hsnap" 0 || die "re-encode"
	: >"$TMP/d3.log"
	for f in d3a d3b d3c; do
		for seed in $(seq 1 120); do
			"$G" corrupt "$TMP/$f.hsnap" "$TMP/d3x.hsnap" $seed || die "schemagen corrupt $f $seed"
			"$G" dump "$TMP/d3x.hsnap" >"$TMP/d3x.out" 2>&1 || { tail -5 "$TMP/d3x.out"; die "reading damaged $f $seed"; }
			grep '^ret' "$TMP/d3x.out" >>"$TMP/d3.log"
		done
	done
	reasons=$(grep -o 'status 3 .*' "$TMP/d3.log" | sed 's/.*record: //' | sort -u | tee "$TMP/d3.reasons" | wc -l)
	cat "$TMP/d3.reasons"
	[ "$reasons" -ge 4 ] || die "only $reasons kinds of damage found"
	grep -q 'COLUMNS\|column\|by age\|pair\|TIME\|slot freed last\|reserved' "$TMP/d3.reasons" || die "no version 3 check reached"
}

bpf_check
ALL="t_format_unit t_golden t_format_v1 t_analyzer_usage t_bad_input t_analyzer_progress t_fuzz_records t_bpf_c_exact t_bpf_c_labels_inline t_bpf_cxx_exact \
	t_bpf_rust_exact t_bpf_attach_pid t_bpf_sampled t_bpf_snapshots_diff t_bpf_errors t_bpf_all_processes \
	t_sanitizers t_bpf_handoff t_bpf_probe_links t_bpf_ring_wrap t_bpf_other_allocators t_bpf_static t_bpf_not_root t_bpf_dwarf_nofp t_bpf_dwarf_cxx_rust t_bpf_dwarf_debian t_bpf_killed_recorder \
	t_bpf_symbolize_moved t_bpf_attach_busy t_bpf_signals_startup t_output_files t_analyzer_crafted t_losses t_bpf_all_short_lived \
	t_bpf_fork_storm t_bpf_dlcycle t_preload_dlcycle t_preload_c_exact t_preload_c_labels_inline t_preload_cxx_exact t_preload_rust_exact t_preload_sampled \
	t_preload_handoff t_preload_other_allocators t_preload_snapshots_diff t_preload_killed_recorder t_preload_fork_storm \
	t_preload_sampled_dense t_preload_scribbled_ring t_preload_dwarf_nofp t_preload_dwarf_cxx_rust t_preload_dwarf_debian t_preload_unprivileged \
	t_inject_threads t_inject_cxx t_inject_other_user t_inject_mount_ns t_inject_refusals t_inject_repeat \
	t_inject_killed_recorder t_unwind_tables t_bpf_auto_nofp t_bpf_auto_attached t_bpf_auto_debian t_preload_auto_nofp \
	t_preload_auto_debian t_inject_auto_nofp t_pprof_unsymbolized t_install t_analyzer_pid_filter t_analyzer_timeline t_analyzer_speedscope t_analyzer_temporary t_analyzer_html t_preload_dwarf_debug_dir t_analyzer_diff_builds t_analyzer_gate_sampled t_fuzz_targets"
ALL="$ALL t_units_unit t_units_record_parsed t_units_record_bpf t_units_analyzer t_sampling_unit"
ALL="$ALL t_format_schema"
ALL="$ALL t_format_v2 t_format_v3_damage"
ALL="$ALL t_preload_thread_churn t_inject_thread_churn t_preload_threads_past_limit t_preload_closed_fds t_preload_python_workers t_preload_socket_refused t_preload_unrecorded_said t_preload_process_churn"
ALL="$ALL t_inject_real_python t_inject_real_node t_inject_real_canon_plt t_inject_real_linked_alloc t_inject_real_redis t_inject_real_nginx"
ALL="$ALL t_bpf_pidns_launched t_bpf_pidns_attach t_bpf_pidns_all t_bpf_full_disk t_bpf_max_stack_default t_max_stack_after_cut"
ALL="$ALL t_analyzer_out_of_order t_analyzer_counters_agree"
ALL="$ALL t_inject_wake t_inject_hold_in_dlopen t_inject_messages t_inject_pid_ns t_inject_idle_safe_point t_inject_memcached_idle"
for t in $ALL; do
	run $t
done
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ $FAIL -eq 0 ]
