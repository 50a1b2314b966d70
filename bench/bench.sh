#!/usr/bin/env bash
# heapsnap benchmark (`make bench`). Runs each workload natively, under the BPF trap floor
# (the same probes with no-op BPF programs), under the bare trap floor (perf probes on the
# same points, no BPF program at all), and under heapsnap in three modes, RUNS times each, in
# one run of this script. Prints medians as ratios to native and to the floor, then writes
# bench/results/latest.txt and bench/results/latest.json. The floor and sampling also run
# with classic probes (a uprobe and a uretprobe per function, in multi links): a session
# probe lets sampling skip the return trap of the calls it passes by, which is most of why it
# beats the floor, and the classic figures show that part.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
R=$OUT/heapsnap-record
A=$OUT/heapsnap-analyze
B=$OUT/bench
RUNS=${RUNS:-5}
TMP=$(mktemp -d /tmp/heapsnap-bench.XXXXXX)
# The perf probes of the bare trap floor, in a group of their own, removed on the way out.
TRAP_GROUP=heapsnap_bench
TRAP_ADDED=
trap '[ -z "$TRAP_ADDED" ] || perf probe -q -d "$TRAP_GROUP:*" >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT
RES=bench/results
mkdir -p "$RES"

# Analyzer throughput and memory on synthetic files with a constant 1M-block live set: a
# report from one replay (summary), and the HTML report (two replays, the second keeping the
# heap at up to 48 moments), with its size.
analyzer_bench() {
	local n secs kib size rate hsecs hkib hsize first=1
	echo
	echo "Analyzer (no symbols) on synthetic churn with a constant 1M-block live set:"
	json+=",\"analyzer\":["
	for n in 10000000 50000000; do
		"$B/genfile" "$TMP/g.hsnap" $n 1000000
		/usr/bin/time -f "%e %M" -o "$TMP/at" "$A" summary --no-symbolize "$TMP/g.hsnap" >/dev/null
		read -r secs kib <"$TMP/at"
		/usr/bin/time -f "%e %M" -o "$TMP/ah" "$A" html --no-symbolize -o "$TMP/g.html" "$TMP/g.hsnap"
		read -r hsecs hkib <"$TMP/ah"
		size=$(stat -c %s "$TMP/g.hsnap")
		hsize=$(stat -c %s "$TMP/g.html")
		rate=$(awk -v n=$n -v s="$secs" 'BEGIN { printf "%.1f", (s > 0 ? n / s / 1e6 : 0) }')
		printf '  %9d events (%d MiB file): summary %.2fs, %sM events/s, peak RSS %d MiB; html %.2fs, peak RSS %d MiB, %d KiB\n' \
			$n $((size >> 20)) "$secs" "$rate" $((kib / 1024)) "$hsecs" $((hkib / 1024)) $((hsize >> 10))
		[ $first = 1 ] || json+=","
		first=0
		json+="{\"events\":$n,\"file_bytes\":$size,\"seconds\":$secs,\"m_events_per_s\":$rate,\"peak_rss_kib\":$kib"
		json+=",\"html_seconds\":$hsecs,\"html_peak_rss_kib\":$hkib,\"html_bytes\":$hsize}"
		rm -f "$TMP/g.hsnap" "$TMP/g.html"
	done
	json+="]"
}

# BENCH=analyzer: the analyzer alone (no root needed); the results files keep the last full run.
if [ "${BENCH:-}" = analyzer ]; then
	json=
	analyzer_bench
	exit 0
fi

# BENCH=servers: real programs attached by injection (bench/attach_servers.sh) alone.
[ "${BENCH:-}" = servers ] && exec bench/attach_servers.sh
# BENCH=python: the Python table (bench/python.sh) alone.
[ "${BENCH:-}" = python ] && exec bench/python.sh
# BENCH=live: the live view's cost beside the recorder's on the sqlite3 workload (bench/live.sh).
[ "${BENCH:-}" = live ] && exec bench/live.sh
# BENCH=export: what --export costs beside recording alone (bench/export.sh).
[ "${BENCH:-}" = export ] && exec bench/export.sh

# name|extra modes|command (each prints "elapsed S ops N events E cpu C" for its timed part)
WORKLOADS=(
	"churn|dwarf|$B/workload churn 300000"
	"mt2||$B/workload mt 2 300000"
	"mt8||$B/workload mt 8 300000"
	"live1M||$B/workload live 1000000"
	"cxx|dwarf|$B/workload_cxx 200000"
)
# name|recorder options ("native" runs the workload alone)
MODES=(
	"native|"
	"floor|--via bpf --noop-probes"
	"floor-classic|--via bpf --noop-probes --probe-links multi"
	"trap|trap"
	"fp|--via bpf -s 0 --stack fp"
	"auto|--via bpf -s 0 --stack auto"
	"sampled512k|--via bpf -s 512k --stack fp"
	"sampled-classic|--via bpf -s 512k --stack fp --probe-links multi"
	"none|--via bpf -s 0 --stack none"
	"preload|--via preload -s 0 --stack fp"
	"preload-auto|--via preload -s 0 --stack auto"
	"preload512k|--via preload -s 512k --stack fp"
	"heaptrack|heaptrack"
)
# Run only where a workload asks for them: a dwarf copy per event is slow to measure.
DWARF_MODES=(
	"dwarf|--via bpf -s 0 --stack dwarf"
	"dwarf512k|--via bpf -s 512k --stack dwarf"
)

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run_once() { # mode_opts command... -> writes $TMP/run.out, $TMP/run.err
	local opts=$1; shift
	if [ -z "$opts" ]; then
		"$@" >"$TMP/run.out" 2>"$TMP/run.err"
	elif [[ "$opts" == floor* ]]; then
		# The floor, or one built with a byte sampler's checks (bench/floor.c).
		LD_PRELOAD=$B/lib$opts.so "$@" >"$TMP/run.out" 2>"$TMP/run.err"
	elif [ "$opts" = trap ]; then
		# The bare trap floor: perf counting its probes, no BPF program (trap_setup).
		perf stat -e "$TRAP_GROUP:*" -x, -o "$TMP/trap.stat" -- "$@" >"$TMP/run.out" 2>"$TMP/run.err"
	elif [ "$opts" = heaptrack ]; then
		# heaptrack 1.4 records every event in process (LD_PRELOAD, libunwind): the tool to beat.
		rm -f "$TMP"/ht.*
		heaptrack -o "$TMP/ht" "$@" >"$TMP/run.out" 2>"$TMP/run.err"
	else
		# shellcheck disable=SC2086
		"$R" $opts --stats -o "$TMP/run.hsnap" -- "$@" >"$TMP/run.out" 2>"$TMP/run.err"
	fi
}

# The micro workloads at a length (half a second or more natively) where the hooks, not the
# start-up, are what is timed: natively, under the interposition floor (bench/floor.c: a
# preloaded library whose allocators only forward, what any LD_PRELOAD or GOT hook costs),
# in-process passing every call by (sampled at 1 GiB: the hooks' pass-by paths and almost no
# sample), sampled at 512 KiB and every event (--stack fp), and heaptrack. Rounds, each
# running every workload in every mode once, as for sqlite3 below; the quick modes (native,
# floor, pass-by, sampled: under a second each) run MICRO_EXTRA rounds more than RUNS, since
# on this kind of machine their ratios move by 2 to 3% between runs of 5. Times are the
# workloads' own loops; the recorders' start and finish (wall time of the whole command
# outside the loop, beyond native's) are reported on a line of their own, with
# heapsnap-record on `true`. Beside them, the floor built with a byte sampler's two checks
# at their cheapest (bench/floor.c): the countdown malloc takes, the filter bit free tests,
# and both, never sampling: what any sampler that leaves blocks to the real allocator pays
# before it samples anything. MICRO_MODES (names) and MICRO_WORKLOADS (names) narrow it, for a
# look while developing.
# The single-threaded ones run each round on one CPU, the next round on the next
# (bench/pin.h): every mode of a round on the same CPU, since this machine's two CPUs can
# differ in speed by 40% from one minute to the next, and a round's ratio of two runs that
# landed on different CPUs measured the CPUs. The threaded ones run where they land.
MICRO_PINNED=" churn cxx "
MICRO=(
	"churn|$B/workload churn 24000000"
	"mt2|$B/workload mt 2 24000000"
	"mt8|$B/workload mt 8 24000000"
	"cxx|$B/workload_cxx 16000000"
)
MICRO_ALL_MODES=(
	"native|"
	"floor|floor"
	"countdown|floor_countdown"
	"filter|floor_filter"
	"checks|floor_both"
	"passby|--via preload -s 1g --stack fp"
	"sampled|--via preload -s 512k --stack fp"
	"dense|--via preload -s 8k --stack fp"
	"every|--via preload -s 0 --stack fp"
	"heaptrack|heaptrack"
)
MICRO_EXTRA=${MICRO_EXTRA:-16}
MICRO_QUICK=" native floor countdown filter checks passby sampled dense "
# A sampled allocation and its free, counted by cachegrind: the command recorded at 512 KiB
# and at 1 GiB (passing by), the address space unrandomized so that the two lay out alike;
# the difference in the library's own functions and clock_gettime (not the allocator's, nor
# the loop's, whose counts move with where blocks land), over the difference in samples. The
# library's lines include common/allocators.def's: code a hook generated from the table has its
# lines there.
# Prints "INSTRUCTIONS instructions, READ read, WRITE written a sample", or nothing without
# valgrind.
counted_sample() {
	local s ir rd wr n sums=()
	command -v valgrind >/dev/null && command -v setarch >/dev/null || return 0
	for s in 512k 1g; do
		setarch -R "$R" --via preload -s $s --stack fp --stats -o "$TMP/cg.hsnap" -- \
			valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$TMP/cg.$s" "$@" >"$TMP/cg.out" 2>&1 ||
			{ cat "$TMP/cg.out" >&2; return 1; }
		n=$(awk '$1 == "sampler.sampled" { v = $2 } END { print v + 0 }' "$TMP/cg.out")
		# Each function's line: counts (a "." for none), each with its share in parentheses,
		# then file:function.
		read -r ir rd wr < <(cg_annotate --auto=no --threshold=0 --show=Ir,D1mr,D1mw "$TMP/cg.$s" |
			awk '/\/libheapsnap\/|\/common\/allocators\.def:|clock_gettime/ && $1 ~ /^[0-9,.]+$/ {
				l = $0; gsub(/\([^)]*\)/, "", l); gsub(",", "", l); split(l, a, " ")
				ir += a[1]; rd += a[2]; wr += a[3] } END { print ir + 0, rd + 0, wr + 0 }')
		sums+=("$ir $rd $wr $n")
	done
	echo "${sums[0]} ${sums[1]}" | awk '{ k = $4 - $8; if (k > 0) printf "%.0f instructions, %.1f read, %.1f written a sample (%d samples)\n", ($1 - $5) / k, ($2 - $6) / k, ($3 - $7) / k, k }'
}
say() { echo "$1"; micro_lines+="$1"$'\n'; }
micro_bench() {
	local r w m wname wcmd mname mopts t0 t1 first=1 modes=() works=() quick=$((RUNS + MICRO_EXTRA))
	for m in "${MICRO_ALL_MODES[@]}"; do
		[ -z "${MICRO_MODES:-}" ] || [[ " native $MICRO_MODES " == *" ${m%%|*} "* ]] && modes+=("$m")
	done
	for w in "${MICRO[@]}"; do
		[ -z "${MICRO_WORKLOADS:-}" ] || [[ " $MICRO_WORKLOADS " == *" ${w%%|*} "* ]] && works+=("$w")
	done
	echo
	say "Micro workloads at length, in-process: the loop's time as a ratio to native's, the median of each"
	say "round's ratio ($quick rounds for native, the floor, passing by and sampled; the first $RUNS for every"
	say "event and heaptrack), by the process's CPU time (what a machine shared with other work inflates"
	say "least; for every event and heaptrack, whose recorders run beside the target, wall time only);"
	say "passing by (sampled at 1 GiB: the hooks' pass-by paths, almost no sample) and sampled at 512 KiB"
	say "over the floor (a preloaded library that only forwards); bytes per event recorded (heaptrack: its"
	say "file over the loop's events). The single-threaded ($(echo $MICRO_PINNED | sed 's/ /, /g')) run all of a round on one CPU,"
	say "the next round on the next (bench/pin.h): a round's ratios do not compare two CPUs' speeds."
	say "Every other round runs its modes in reverse order: a machine that speeds up or slows down"
	say "during a round (two runs of 21 rounds here gave the checks alone over the floor 1.018 and 1.041"
	say "on churn, the mode run third after the floor) favours neither end of the list."
	rm -f "$TMP"/mi-*
	local order=() i
	for r in $(seq "$quick"); do
		order=()
		for i in "${!modes[@]}"; do
			if [ $((r % 2)) = 1 ]; then order+=("${modes[$i]}"); else order=("${modes[$i]}" "${order[@]}"); fi
		done
		for w in "${works[@]}"; do
			wname=${w%%|*}; wcmd=${w#*|}
			for m in "${order[@]}"; do
				mname=${m%%|*}; mopts=${m#*|}
				[ "$r" -le "$RUNS" ] || [[ "$MICRO_QUICK" == *" $mname "* ]] || continue
				unset HEAPSNAP_BENCH_CPU HEAPSNAP_LIB
				[[ "$MICRO_PINNED" != *" $wname "* ]] || export HEAPSNAP_BENCH_CPU=$r
				[ "$mname" != dense ] || export HEAPSNAP_LIB=$B/dense/libheapsnap.so
				t0=$(date +%s.%N)
				# shellcheck disable=SC2086
				run_once "$mopts" $wcmd || { cat "$TMP/run.err"; exit 1; }
				t1=$(date +%s.%N)
				unset HEAPSNAP_BENCH_CPU HEAPSNAP_LIB
				[ "$mname" != dense ] ||
					awk '$1 == "sampler.sampled" { print $2 }' "$TMP/run.err" >>"$TMP/mi-$wname-$mname.n"
				awk '/^elapsed/ { print $2 }' "$TMP/run.out" >>"$TMP/mi-$wname-$mname.t"
				awk '/^elapsed/ { print $8 }' "$TMP/run.out" >>"$TMP/mi-$wname-$mname.c"
				awk -v a="$t0" -v b="$t1" '/^elapsed/ { print b - a - $2 }' "$TMP/run.out" >>"$TMP/mi-$wname-$mname.out"
				if [ "$mopts" = heaptrack ]; then
					awk -v f="$(stat -c %s "$TMP"/ht.* 2>/dev/null | head -1)" '/^elapsed/ { print (f > 0 ? f / $6 : 0) }' \
						"$TMP/run.out" >>"$TMP/mi-$wname-$mname.bpe"
				elif [[ "$mopts" != floor* ]] && [ "$mname" != passby ] && [ "$mname" != dense ] && [ -n "$mopts" ]; then
					# (passing by records almost nothing: no bytes per event to speak of)
					awk '/bytes\/event\)/ { for (i = 1; i <= NF; i++) if ($i == "bytes/event)") { v = $(i - 1); gsub(/\(/, "", v); print v } }' \
						"$TMP/run.err" >>"$TMP/mi-$wname-$mname.bpe"
				fi
			done
		done
		# The recorder's start and finish alone: a command that does nothing.
		if [ "$r" -le "$RUNS" ] && [[ " ${modes[*]%%|*} " == *" sampled "* ]]; then
			t0=$(date +%s.%N); /bin/true; t1=$(date +%s.%N)
			awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' >>"$TMP/mi-true-native"
			t0=$(date +%s.%N); run_once "--via preload -s 512k --stack fp" /bin/true || { cat "$TMP/run.err"; exit 1; }; t1=$(date +%s.%N)
			awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' >>"$TMP/mi-true-sampled"
		fi
	done
	v() { [ -s "$1" ] && median <"$1" || echo 0; }
	# A ratio is the median of each round's: the modes of a round run one after another, so
	# a round's ratio shares that minute's machine, where a ratio of two medians mixes
	# rounds whose machine drifted between them (run to run, native moved by 10%).
	rounds() { paste "$1" "$2" | awk 'NF == 2 && $1 > 0 && $2 > 0 { print $1 / $2 }'; } # each round's ratio
	ratio() {
		if [ ! -s "$1" ] || [ ! -s "$2" ]; then printf -; return; fi
		rounds "$1" "$2" | median | awk '{ printf "%.3f", $1 }'
	}
	# The middle half of the rounds' ratios, "Q1..Q3": how far one round's figure may be from
	# the median on this machine.
	quartiles() {
		if [ ! -s "$1" ] || [ ! -s "$2" ]; then printf -; return; fi
		rounds "$1" "$2" | sort -g |
			awk '{ v[NR] = $1 } END { lo = int((NR + 3) / 4); printf "%.3f..%.3f", v[lo], v[NR + 1 - lo] }'
	}
	bpe() { [ -s "$1" ] && median <"$1" | awk '{ printf "%.2f", $1 }' || echo -; }
	f() { echo "$TMP/mi-$wname-$1"; } # this workload's figures of one mode
	say "$(printf '  %-8s %8s | %-39s | %-23s | %-19s | %s' "" native "by CPU time" "by wall time" "wall, every event" "")"
	say "$(printf '  %-8s %8s | %7s %7s %7s %7s %7s | %7s %7s %7s | %9s %9s | %s' workload "cpu s" floor passby sampled \
		pass/fl samp/fl floor sampled /floor heapsnap heaptrack "bytes/event: every, sampled, heaptrack")"
	json+=",\"micro\":["
	for w in "${works[@]}"; do
		wname=${w%%|*}; wcmd=${w#*|}
		local tn tf ts te th cn cf cp cs
		tn=$(v "$TMP/mi-$wname-native.t"); tf=$(v "$TMP/mi-$wname-floor.t"); ts=$(v "$TMP/mi-$wname-sampled.t")
		te=$(v "$TMP/mi-$wname-every.t"); th=$(v "$TMP/mi-$wname-heaptrack.t")
		cn=$(v "$TMP/mi-$wname-native.c"); cf=$(v "$TMP/mi-$wname-floor.c"); cs=$(v "$TMP/mi-$wname-sampled.c")
		cp=$(v "$TMP/mi-$wname-passby.c")
		say "$(printf '  %-8s %8.3f | %7s %7s %7s %7s %7s | %7s %7s %7s | %9s %9s | %s, %s, %s' "$wname" "$cn" \
			"$(ratio "$(f floor.c)" "$(f native.c)")" "$(ratio "$(f passby.c)" "$(f native.c)")" \
			"$(ratio "$(f sampled.c)" "$(f native.c)")" "$(ratio "$(f passby.c)" "$(f floor.c)")" \
			"$(ratio "$(f sampled.c)" "$(f floor.c)")" "$(ratio "$(f floor.t)" "$(f native.t)")" \
			"$(ratio "$(f sampled.t)" "$(f native.t)")" "$(ratio "$(f sampled.t)" "$(f floor.t)")" \
			"$(ratio "$(f every.t)" "$(f native.t)")" "$(ratio "$(f heaptrack.t)" "$(f native.t)")" \
			"$(bpe "$TMP/mi-$wname-every.bpe")" "$(bpe "$TMP/mi-$wname-sampled.bpe")" "$(bpe "$TMP/mi-$wname-heaptrack.bpe")")"
		[ $first = 1 ] || json+=","
		first=0
		json+="{\"name\":\"$wname\",\"command\":\"$wcmd\",\"native_s\":$tn,\"floor_s\":$tf,\"sampled512k_s\":$ts,\"every_s\":$te,"
		json+="\"heaptrack_s\":$th,\"native_cpu_s\":$cn,\"floor_cpu_s\":$cf,\"passby_cpu_s\":$cp,\"sampled512k_cpu_s\":$cs,"
		json+="\"every_bytes_per_event\":$(v "$TMP/mi-$wname-every.bpe"),"
		json+="\"sampled_bytes_per_event\":$(v "$TMP/mi-$wname-sampled.bpe"),\"heaptrack_bytes_per_event\":$(v "$TMP/mi-$wname-heaptrack.bpe")}"
	done
	json+="]"
	local ran=" ${modes[*]%%|*} "
	if [[ "$ran" == *" floor "* && "$ran" == *" countdown "* && "$ran" == *" filter "* && "$ran" == *" checks "* &&
		"$ran" == *" passby "* && "$ran" == *" sampled "* ]]; then
		say "  the checks alone, at their cheapest (the floor built with them; no sample ever taken), passing by"
		say "  and sampled at 512 KiB, CPU time over the floor's, with the middle half of the rounds' sampled"
		say "  ratios; then passing by and sampled over both checks alone (the least a byte sampler that"
		say "  interposes can pay before it samples):"
		say "$(printf '  %-8s %9s %9s %9s %9s %9s %13s | %9s %9s' workload countdown filter both passby sampled \
			"(quartiles)" pass/both samp/both)"
		json+=",\"checks_over_floor\":["
		first=1
		for w in "${works[@]}"; do
			wname=${w%%|*}
			say "$(printf '  %-8s %9s %9s %9s %9s %9s %13s | %9s %9s' "$wname" "$(ratio "$(f countdown.c)" "$(f floor.c)")" \
				"$(ratio "$(f filter.c)" "$(f floor.c)")" "$(ratio "$(f checks.c)" "$(f floor.c)")" \
				"$(ratio "$(f passby.c)" "$(f floor.c)")" "$(ratio "$(f sampled.c)" "$(f floor.c)")" \
				"$(quartiles "$(f sampled.c)" "$(f floor.c)")" "$(ratio "$(f passby.c)" "$(f checks.c)")" \
				"$(ratio "$(f sampled.c)" "$(f checks.c)")")"
			[ $first = 1 ] || json+=","
			first=0
			json+="{\"name\":\"$wname\",\"countdown\":$(ratio "$(f countdown.c)" "$(f floor.c)"),"
			json+="\"filter\":$(ratio "$(f filter.c)" "$(f floor.c)"),\"both\":$(ratio "$(f checks.c)" "$(f floor.c)"),"
			json+="\"passby\":$(ratio "$(f passby.c)" "$(f floor.c)"),\"sampled\":$(ratio "$(f sampled.c)" "$(f floor.c)"),"
			json+="\"sampled_quartiles\":\"$(quartiles "$(f sampled.c)" "$(f floor.c)")\","
			json+="\"passby_over_both\":$(ratio "$(f passby.c)" "$(f checks.c)"),"
			json+="\"sampled_over_both\":$(ratio "$(f sampled.c)" "$(f checks.c)")}"
		done
		json+="]"
	fi
	# A sample's own cost, weighed where samples are many: the loop sampled every 8 KiB by a
	# library that places samples in its pool from 4 KiB (the Makefile's bench/dense/), over
	# passing by, per sampled allocation and its free, each round's own. At 512 KiB a sample
	# comes once in about a thousand calls, and its cost (0.5% of churn's time is 110 ns a
	# sample) is within a run's spread; here it is tens of percent, and its lines are warmer.
	if [[ "$ran" == *" passby "* && "$ran" == *" dense "* ]]; then
		local line on
		say "  a sampled allocation and its free, ns (sampled every 8 KiB, the library placing samples from 4 KiB;"
		say "  CPU time over passing by's, per sample):"
		line="  "
		json+=",\"sample_pair_ns\":{"
		first=1
		for w in "${works[@]}"; do
			wname=${w%%|*}
			on=
			[ ! -s "$(f dense.n)" ] || on=$(paste "$(f dense.c)" "$(f passby.c)" "$(f dense.n)" |
				awk 'NF == 3 && $3 > 0 { print ($1 - $2) / $3 * 1e9 }' | median | awk '{ printf "%.0f", $1 }')
			line+=" $wname ${on:--},"
			[ $first = 1 ] || json+=","
			first=0
			json+="\"$wname\":${on:-null}"
		done
		json+="}"
		say "${line%,}"
	fi
	# The same, counted rather than timed: no machine's noise, and the sparse rate itself.
	if [[ "$ran" == *" sampled "* ]]; then
		local cw cc
		say "  a sampled allocation and its free, counted (cachegrind, 512 KiB over 1 GiB, address space"
		say "  unrandomized; the library's own code and clock_gettime): instructions, L1 data misses read, written"
		json+=",\"sample_pair_counted\":{"
		first=1
		for cw in "churn|$B/workload churn 2400000" "cxx|$B/workload_cxx 8000000"; do
			# shellcheck disable=SC2086
			cc=$(counted_sample ${cw#*|}) || cc= # a failed count leaves the timed figures written
			say "$(printf '   %-6s %s' "${cw%%|*}" "${cc:-skipped: valgrind (cachegrind) is not installed}")"
			[ $first = 1 ] || json+=","
			first=0
			json+="\"${cw%%|*}\":$([ -n "$cc" ] && echo "$cc" | awk '{ printf "{\"instructions\":%s,\"d1_read_misses\":%s,\"d1_write_misses\":%s}", $1, $3, $5 }' || echo null)"
		done
		json+="}"
	fi
	# Start and finish: the whole command's wall time outside its loop, beyond native's.
	local line="  start and finish, ms of wall time outside the loop beyond native's (${works[*]%%|*}):" on
	for m in "${modes[@]}"; do
		mname=${m%%|*}
		[ "$mname" = native ] && continue
		line+=" $mname"
		for w in "${works[@]}"; do
			wname=${w%%|*}
			on=$(awk -v a="$(v "$TMP/mi-$wname-$mname.out")" -v b="$(v "$TMP/mi-$wname-native.out")" 'BEGIN { printf "%.1f", (a - b) * 1000 }')
			line+=" $on,"
		done
		line="${line%,};"
	done
	say "${line%;}"
	if [ -s "$TMP/mi-true-sampled" ]; then
		say "$(printf '  heapsnap-record --via preload -s 512k on /bin/true: %.1f ms wall (/bin/true alone %.1f ms)' \
			"$(awk -v a="$(v "$TMP/mi-true-sampled")" 'BEGIN { print a * 1000 }')" \
			"$(awk -v a="$(v "$TMP/mi-true-native")" 'BEGIN { print a * 1000 }')")"
		json+=",\"record_true_s\":$(v "$TMP/mi-true-sampled"),\"true_s\":$(v "$TMP/mi-true-native")"
	fi
}

# BENCH=micro: that comparison alone (no root needed), written to bench/results/micro.txt; the
# other results files keep the last full run.
if [ "${BENCH:-}" = micro ]; then
	json=
	micro_lines="heapsnap benchmark, micro at length, $(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs"$'\n'
	echo "$micro_lines"
	micro_bench
	[ -n "${MICRO_MODES:-}${MICRO_WORKLOADS:-}" ] || printf '%s' "$micro_lines" >"$RES/micro.txt"
	exit 0
fi

[ "$(id -u)" = 0 ] || { echo "bench: needs root for BPF" >&2; exit 1; }

# The bare trap floor: uprobes with no BPF program, made by perf probe on the points the BPF
# recorder traps at when it records every event with --stack fp (as its -v says them: malloc
# and free of the C library, free past its NULL test), and counted by perf stat: each trap
# fires and nothing else runs, the least any uprobe-based recorder pays. The BPF floor above
# it (--noop-probes) is our own probes with programs that return at once. Only for the
# workloads that call nothing but malloc and free (TRAP_WORKLOADS): the C++ one's operators
# trap at other points. Sets TRAP_OK, or TRAP_WHY when perf probe cannot make them.
TRAP_WORKLOADS=" churn mt2 mt8 live1M "
TRAP_OK=
TRAP_WHY=
TRAP_POINTS=
trap_setup() {
	local libc moff foff
	if ! command -v perf >/dev/null; then
		TRAP_WHY="perf is not installed (Debian: linux-perf)"
		return 0
	fi
	"$R" -v --via bpf -s 0 --stack fp -o "$TMP/trap.hsnap" -- "$B/workload" churn 1 >/dev/null 2>"$TMP/trap.v" || {
		TRAP_WHY="heapsnap-record -v failed: $(tail -1 "$TMP/trap.v")"
		return 0
	}
	# "heapsnap-record: /lib/x86_64-linux-gnu/libc.so.6:free probed at +9 (past ...)"
	libc=$(awk '$2 ~ /:malloc$/ && $3 == "probed" { sub(/:malloc$/, "", $2); print $2; exit }' "$TMP/trap.v")
	moff=$(awk '$2 ~ /:malloc$/ && $3 == "probed" { sub(/^\+/, "", $5); print $5; exit }' "$TMP/trap.v")
	foff=$(awk '$2 ~ /:free$/ && $3 == "probed" { sub(/^\+/, "", $5); print $5; exit }' "$TMP/trap.v")
	if [ -z "$libc" ] || [ -z "$moff" ] || [ -z "$foff" ]; then
		TRAP_WHY="heapsnap-record -v named no probe of malloc and free"
		return 0
	fi
	perf probe -q -d "$TRAP_GROUP:*" >/dev/null 2>&1 || true
	TRAP_ADDED=1
	# Event names of their own: perf probe refuses one that another group has.
	if ! perf probe -x "$libc" -a "$TRAP_GROUP:hsb_malloc=malloc+$moff" -a "$TRAP_GROUP:hsb_malloc_ret=malloc%return" \
		-a "$TRAP_GROUP:hsb_free=free+$foff" >"$TMP/trap.add" 2>&1; then
		TRAP_WHY="perf probe: $(grep -m1 -i 'error' "$TMP/trap.add" | sed 's/^ *//')"
		return 0
	fi
	if ! perf stat -e "$TRAP_GROUP:*" -x, -o "$TMP/trap.stat" -- "$B/workload" churn 1000 >/dev/null 2>"$TMP/trap.add" ||
		! awk -F, '$3 ~ /:hsb_free$/ && $1 >= 1000 { ok = 1 } END { exit !ok }' "$TMP/trap.stat"; then
		TRAP_WHY="perf stat does not count the probes: $(cat "$TMP/trap.add" "$TMP/trap.stat" 2>/dev/null | grep -m1 -v '^#\|^$')"
		return 0
	fi
	TRAP_POINTS="$(basename "$libc"): malloc+$moff, malloc%return, free+$foff"
	TRAP_OK=1
}

echo "heapsnap benchmark, $(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, median of $RUNS runs"
json="{\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"kernel\":\"$(uname -r)\",\"cpus\":$(nproc),\"runs\":$RUNS,\"workloads\":["
table=$(printf '%-8s %-15s %10s %9s %9s %10s %9s %9s %11s\n' workload mode "time(s)" "x native" "x floor" "bytes/ev" "dropped" "rec cpu" "rec rss MiB")
first_w=1

# A busy process's own throughput (workload rate: three threads churning malloc/free,
# counting operations per quarter second) before, during and after recorders attached to it:
# injected and sampled at 512 KiB; after it detached; injected again and SIGKILLed; and BPF
# sampled at 512 KiB for comparison. Quarter seconds are placed by CLOCK_BOOTTIME, which
# /proc/uptime reads too. Ratios are to the same run's before, medians over the runs.
attach_bench() { # WORKLOAD-ARGS...
	local r wp line d0 d1 k0 b0 b1
	: >"$TMP/at-during"; : >"$TMP/at-after"; : >"$TMP/at-killed"; : >"$TMP/at-bpf"; : >"$TMP/at-stop"; : >"$TMP/at-before"
	up() { awk '{ print $1 }' /proc/uptime; }
	attached() { # recorder's stderr: until it is in, or gone
		local i
		for i in $(seq 400); do grep -q "attached to" "$1" && return 0; sleep 0.05; done
		return 1
	}
	win() { awk -v a="$1" -v b="$2" '$1 == "q" && $2 >= a && $2 <= b { print $3 }' "$TMP/rate.out" | median; }
	for r in $(seq "$RUNS"); do
		"$B/workload" rate 3 60 "$@" >"$TMP/rate.out" &
		for _ in $(seq 100); do grep -q '^pid' "$TMP/rate.out" && break; sleep 0.05; done
		wp=$(awk '/^pid/ { print $2 }' "$TMP/rate.out")
		sleep 5
		"$R" -v -p $wp -s 512k --duration 4 -o "$TMP/at.hsnap" 2>"$TMP/at.err" &
		attached "$TMP/at.err" || { cat "$TMP/at.err"; exit 1; }
		d0=$(up)
		wait $! || { cat "$TMP/at.err"; exit 1; }
		d1=$(up)
		grep -q "recording via inject" "$TMP/at.err" || { cat "$TMP/at.err"; exit 1; }
		awk '/injected into/ { for (i = 1; i <= NF; i++) if ($i == "stopped") print $(i + 1) }' "$TMP/at.err" >>"$TMP/at-stop"
		sleep 4
		"$R" -p $wp -s 512k -o "$TMP/at2.hsnap" 2>"$TMP/at2.err" &
		attached "$TMP/at2.err" || { cat "$TMP/at2.err"; exit 1; }
		sleep 2
		kill -9 $!
		wait $! 2>/dev/null || true
		k0=$(up)
		sleep 4
		"$R" --via bpf -p $wp -s 512k --duration 3 -o "$TMP/at3.hsnap" 2>"$TMP/at3.err" &
		attached "$TMP/at3.err" || { cat "$TMP/at3.err"; exit 1; }
		b0=$(up)
		wait $! || { cat "$TMP/at3.err"; exit 1; }
		b1=$(up)
		kill $wp; wait $wp 2>/dev/null || true
		line=$(awk '$1 == "q" { print $2; exit }' "$TMP/rate.out")
		local before during after killed bpf
		before=$(win "$(awk -v t="$line" 'BEGIN { print t + 1 }')" "$(awk -v t="$d0" 'BEGIN { print t - 1.5 }')")
		during=$(win "$(awk -v t="$d0" 'BEGIN { print t + 0.3 }')" "$(awk -v t="$d1" 'BEGIN { print t - 0.3 }')")
		after=$(win "$(awk -v t="$d1" 'BEGIN { print t + 0.5 }')" "$(awk -v t="$d1" 'BEGIN { print t + 4 }')")
		killed=$(win "$(awk -v t="$k0" 'BEGIN { print t + 0.5 }')" "$(awk -v t="$k0" 'BEGIN { print t + 4 }')")
		bpf=$(win "$(awk -v t="$b0" 'BEGIN { print t + 0.3 }')" "$(awk -v t="$b1" 'BEGIN { print t - 0.3 }')")
		echo "$before" >>"$TMP/at-before"
		awk -v a="$during" -v b="$before" 'BEGIN { print a / b * 100 }' >>"$TMP/at-during"
		awk -v a="$after" -v b="$before" 'BEGIN { print a / b * 100 }' >>"$TMP/at-after"
		awk -v a="$killed" -v b="$before" 'BEGIN { print a / b * 100 }' >>"$TMP/at-killed"
		awk -v a="$bpf" -v b="$before" 'BEGIN { print a / b * 100 }' >>"$TMP/at-bpf"
	done
	AT_BEFORE=$(median <"$TMP/at-before"); AT_DURING=$(median <"$TMP/at-during"); AT_AFTER=$(median <"$TMP/at-after")
	AT_KILLED=$(median <"$TMP/at-killed"); AT_BPF=$(median <"$TMP/at-bpf"); AT_STOP=$(median <"$TMP/at-stop")
	at_table=$(printf 'attached to %s (3 threads, %.1fM ops per quarter second before): injected, sampled 512k %.1f%% of before; after detach %.1f%%; after a SIGKILLed recorder %.1f%%; BPF sampled 512k %.1f%%; stopped %.2f ms to inject' \
		"$([ $# = 0 ] && echo "a tight malloc/free loop" || echo "a loop that uses each block")" \
		"$(awk -v b="$AT_BEFORE" 'BEGIN { print b / 1e6 }')" "$AT_DURING" "$AT_AFTER" "$AT_KILLED" "$AT_BPF" "$AT_STOP")
	echo "  $at_table"
	at_tables+="$at_table"$'\n'
	json+=",\"attach_$([ $# = 0 ] && echo tight || echo use)\":{\"before_ops_per_quarter_s\":$AT_BEFORE,\"during_inject512k_pct\":$AT_DURING,\"after_detach_pct\":$AT_AFTER,\"after_killed_recorder_pct\":$AT_KILLED,\"during_bpf512k_pct\":$AT_BPF,\"stopped_ms\":$AT_STOP}"
}

# BENCH=sqlite3 or BENCH=attach: that comparison alone.
if [ "${BENCH:-}" = attach ]; then
	echo "Attached to a running process, its own throughput (median of $RUNS runs):"
	attach_bench use
	attach_bench
	exit 0
fi
[ "${BENCH:-}" = sqlite3 ] && WORKLOADS=()
# BENCH=stacks: the cost of whole stacks against --stack fp, every event, alone.
if [ "${BENCH:-}" = stacks ]; then
	WORKLOADS=("churn||$B/workload churn 300000")
	MODES=("native|" "fp|--via bpf -s 0 --stack fp" "auto|--via bpf -s 0 --stack auto"
		"preload|--via preload -s 0 --stack fp" "preload-auto|--via preload -s 0 --stack auto")
fi
# BENCH=trap: BPF every event against the bare trap floor alone, on churn of TRAP_PAIRS
# malloc/free pairs (2M: 4M calls, several seconds of traps a run).
if [ "${BENCH:-}" = trap ]; then
	WORKLOADS=("churn||$B/workload churn ${TRAP_PAIRS:-2000000}")
	MODES=("native|" "floor|--via bpf --noop-probes" "trap|trap" "fp|--via bpf -s 0 --stack fp"
		"none|--via bpf -s 0 --stack none" "auto|--via bpf -s 0 --stack auto" "preload|--via preload -s 0 --stack fp")
fi
# The bare trap floor where a mode asks for it (not BENCH=stacks, nor sqlite3 alone).
TRAP_RUN=
[ ${#WORKLOADS[@]} -gt 0 ] && [[ " ${MODES[*]} " == *" trap|trap "* ]] && TRAP_RUN=1
if [ -n "$TRAP_RUN" ]; then
	trap_setup
	if [ -n "$TRAP_OK" ]; then
		echo "bare trap floor: perf probes on $TRAP_POINTS (no BPF program)"
	else
		echo "bare trap floor: skipped ($TRAP_WHY)"
	fi
fi
stack_cost= # "workload way auto/fp" lines
# BPF every event over the bare trap floor, a line per workload, and the preload figures beside.
trap_table=$(printf '  %-8s %10s %7s %7s %7s %7s | %7s %8s | %s' workload "trap cpu s" "no-op" fp none auto "fp wall" "fp cmd" \
	"preload every event (fp): x native")
for w in "${WORKLOADS[@]}"; do
	wname=${w%%|*}; rest=${w#*|}; extra=${rest%%|*}; wcmd=${rest#*|}
	modes=("${MODES[@]}")
	[ "$extra" = dwarf ] && modes+=("${DWARF_MODES[@]}")
	declare -A T=() C=() W=()
	[ $first_w = 1 ] || json+=","
	first_w=0
	json+="{\"name\":\"$wname\",\"command\":\"$wcmd\",\"modes\":["
	first_m=1
	for m in "${modes[@]}"; do
		mname=${m%%|*}; mopts=${m#*|}
		if [ "$mopts" = trap ] && { [ -z "$TRAP_OK" ] || [[ "$TRAP_WORKLOADS" != *" $wname "* ]]; }; then
			continue
		fi
		: >"$TMP/times"; : >"$TMP/cpu"; : >"$TMP/rss"; : >"$TMP/bpe"; : >"$TMP/drop"; : >"$TMP/evs"; : >"$TMP/ratio"
		: >"$TMP/wcpu"; : >"$TMP/whole"
		for _ in $(seq "$RUNS"); do
			t0=$(date +%s.%N)
			# shellcheck disable=SC2086
			run_once "$mopts" $wcmd || { cat "$TMP/run.err"; exit 1; }
			awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }' >>"$TMP/whole"
			awk '/^elapsed/ { print $2 }' "$TMP/run.out" >>"$TMP/times"
			awk '/^elapsed/ { print $8 }' "$TMP/run.out" >>"$TMP/wcpu"
			awk '/^elapsed/ { print $6 }' "$TMP/run.out" >>"$TMP/evs"
			if [ "$mopts" = heaptrack ]; then
				awk -v f="$(stat -c %s "$TMP"/ht.* 2>/dev/null | head -1)" '/^elapsed/ { print (f > 0 ? f / $6 : 0) }' \
					"$TMP/run.out" >>"$TMP/bpe"
			elif [ -n "$mopts" ]; then
				awk '/^recorder: cpu/ { gsub(/s/, "", $3); gsub(/s/, "", $5); print $3 + $5 }' "$TMP/run.err" >>"$TMP/cpu"
				awk '/^recorder: cpu/ { for (i = 1; i <= NF; i++) if ($i == "rss") print $(i + 1) / 1024 }' "$TMP/run.err" >>"$TMP/rss"
				awk '/bytes\/event\)/ { for (i = 1; i <= NF; i++) if ($i == "bytes/event)") { v = $(i - 1); gsub(/\(/, "", v); print v } }' "$TMP/run.err" >>"$TMP/bpe"
				awk '/^  lost\.(ringbuf_full|live_map_full|thread_map_full|missed_uretprobe)/ { s += $2 } END { print s + 0 }' "$TMP/run.err" >>"$TMP/drop"
				awk '/^recorder: cpu/ { for (i = 1; i <= NF; i++) { if ($i == "records") raw = $(i + 1); if ($i == "file") f = $(i + 1) } print ((raw > 0) ? f / raw : 0) }' "$TMP/run.err" >>"$TMP/ratio"
			fi
		done
		t=$(median <"$TMP/times")
		T[$mname]=$t
		C[$mname]=$(median <"$TMP/wcpu")
		W[$mname]=$(median <"$TMP/whole")
		evs=$(median <"$TMP/evs")
		xn=$(awk -v a="$t" -v b="${T[native]}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
		xf=$(awk -v a="$t" -v b="${T[floor]:-0}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
		if [ "$mopts" = heaptrack ]; then
			cpu=0; rss=0; bpe=$(median <"$TMP/bpe"); drop=0; cr=0
		elif [ -n "$mopts" ]; then
			cpu=$(median <"$TMP/cpu"); rss=$(median <"$TMP/rss"); bpe=$(median <"$TMP/bpe")
			drop=$(median <"$TMP/drop"); cr=$(median <"$TMP/ratio")
		else
			cpu=0; rss=0; bpe=0; drop=0; cr=0
		fi
		table+=$(printf '\n%-8s %-15s %10.4f %9s %9s %10.2f %9s %8.3fs %11.1f' "$wname" "$mname" "$t" "$xn" \
			"$([ "$mname" = native ] && echo - || echo "$xf")" "$bpe" "$drop" "$cpu" "$rss")
		[ $first_m = 1 ] || json+=","
		first_m=0
		json+="{\"mode\":\"$mname\",\"options\":\"$mopts\",\"seconds\":$t,\"cpu_seconds\":${C[$mname]},\"command_seconds\":${W[$mname]},"
		json+="\"events\":$evs,\"x_native\":$xn,\"x_floor\":$xf,"
		json+="\"bytes_per_event\":$bpe,\"compressed_over_raw\":$cr,\"dropped\":$drop,\"recorder_cpu_s\":$cpu,\"recorder_rss_mib\":$rss}"
		# The traps perf counted in the last run: each probe's, as the workload's calls say.
		[ "$mopts" != trap ] || trap_counts=$(awk -F, '$3 ~ /:/ { n = $3; sub(/.*:hsb_/, "", n); sub(/__return$/, "", n); printf "%s\"%s\":%s", (k++ ? "," : ""), n, $1 }' "$TMP/trap.stat")
	done
	json+="]"
	# Over the bare trap floor: CPU time of the loop (the target's own, which the traps and the
	# programs cost), the loop's wall time (which the recorder beside it on the other CPU can
	# stretch) and the whole command's (the recorder's start and finish in it).
	over() { # MODE [T|C|W]: MODE's figure over the trap floor's
		local -n fig=${2:-C}
		[ -n "${fig[$1]:-}" ] && [ -n "${fig[trap]:-}" ] && awk -v a="${fig[$1]}" -v b="${fig[trap]}" 'BEGIN { printf "%.2f", a / b }' || printf -
	}
	if [ -n "${T[trap]:-}" ]; then
		trap_table+=$(printf '\n  %-8s %10.3f %7s %7s %7s %7s | %7s %8s | %s' "$wname" "${C[trap]}" "$(over floor)" "$(over fp)" \
			"$(over none)" "$(over auto)" "$(over fp T)" "$(over fp W)" \
			"$([ -n "${T[preload]:-}" ] && awk -v a="${T[preload]}" -v b="${T[native]}" 'BEGIN { printf "%.2f", a / b }' || echo -)")
		json+=",\"trap_floor\":{\"points\":\"$TRAP_POINTS\",\"traps\":{$trap_counts},\"seconds\":${T[trap]},\"cpu_seconds\":${C[trap]},"
		json+="\"command_seconds\":${W[trap]},\"floor_over_trap_cpu\":$(over floor),\"fp_over_trap_cpu\":$(over fp),"
		json+="\"none_over_trap_cpu\":$(over none),\"auto_over_trap_cpu\":$(over auto),\"fp_over_trap_wall\":$(over fp T),"
		json+="\"fp_over_trap_command\":$(over fp W)}"
	else
		trap_table+=$(printf '\n  %-8s %s' "$wname" "$([ -n "$TRAP_OK" ] && echo "- (calls other allocators than malloc and free: they trap at other points)" ||
			echo "- (skipped: $TRAP_WHY)")")
		json+=",\"trap_floor\":null"
	fi
	json+="}"
	[ -n "${T[auto]:-}" ] && stack_cost+=$(printf '\n  %-8s bpf      %5.2fx' "$wname" "$(awk -v a="${T[auto]}" -v b="${T[fp]}" 'BEGIN { print a / b }')")
	[ -n "${T[preload-auto]:-}" ] && stack_cost+=$(printf '\n  %-8s preload  %5.2fx' "$wname" \
		"$(awk -v a="${T[preload-auto]}" -v b="${T[preload]}" 'BEGIN { print a / b }')")
	unset T C W
done
json+="]"
echo "$table"
trap_head="BPF every event over the bare trap floor (perf probes, no BPF program${TRAP_POINTS:+, on $TRAP_POINTS}):
the loop's CPU time over the floor's (the no-op BPF floor --noop-probes, then --stack fp, none and auto);
fp by the loop's wall time, and by the whole command's (the recorder's start and finish in it);
beside them, preload every event over native:"
if [ -n "$TRAP_RUN" ]; then
	echo
	echo "$trap_head"
	echo "$trap_table"
fi
[ "${BENCH:-}" = trap ] && exit 0
micro_lines=
[ -z "${BENCH:-}" ] && micro_bench

# Debian's sqlite3 building a 1M-row index (3.08M allocations, 6.1M events): a real program
# without frame pointers, every way in side by side, wall time of the whole command.
echo
echo "sqlite3 :memory: building a 1M-row index, wall seconds (median of $RUNS):"
# Default options (--stack auto: whole stacks) and --stack fp side by side: Debian builds
# sqlite3 without frame pointers, so fp gets a frame or two where auto gets every level.
SQ_MODES=(
	"native|"
	"preload512k|--via preload -s 512k"
	"preload|--via preload -s 0"
	"preload-fp|--via preload -s 0 --stack fp"
	"bpf512k|--via bpf -s 512k"
	"bpf|--via bpf -s 0"
	"bpf-fp|--via bpf -s 0 --stack fp"
	"heaptrack|heaptrack"
)
[ "${BENCH:-}" = stacks ] && SQ_MODES=("native|" "preload|--via preload -s 0" "preload-fp|--via preload -s 0 --stack fp"
	"bpf|--via bpf -s 0" "bpf-fp|--via bpf -s 0 --stack fp")
json+=",\"sqlite3_index\":["
first=1
declare -A SQ=()
# Rounds, each running every mode once: this machine's noise comes in spells, and a spell
# then falls on all the modes alike instead of on one.
for _ in $(seq "$RUNS"); do
	for m in "${SQ_MODES[@]}"; do
		mname=${m%%|*}; mopts=${m#*|}
		t0=$(date +%s.%N)
		run_once "$mopts" sqlite3 :memory: -init bench/index.sql .quit </dev/null || { cat "$TMP/run.err"; exit 1; }
		awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }' >>"$TMP/sq-$mname.times"
		if [ "$mopts" = heaptrack ]; then
			stat -c %s "$TMP"/ht.* | head -1 | awk '{ print $1 / 6100000 }' >>"$TMP/sq-$mname.bpe"
		elif [ -n "$mopts" ]; then
			# The file's size over the same 6.1M events, as heaptrack's, to four places: every
			# event here takes a few thousandths of a byte.
			awk '/: wrote .* bytes \(/ { for (i = 2; i < NF; i++) if ($i == "bytes" && $(i + 1) ~ /^\(/) print $(i - 1) / 6100000 }' \
				"$TMP/run.err" >>"$TMP/sq-$mname.bpe"
		fi
	done
done
# Every median first: each row is a ratio to native's and to heaptrack's, which comes last.
for m in "${SQ_MODES[@]}"; do
	mname=${m%%|*}
	SQ[$mname]=$(median <"$TMP/sq-$mname.times")
done
for m in "${SQ_MODES[@]}"; do
	mname=${m%%|*}; mopts=${m#*|}
	: >"$TMP/bpe"
	[ -f "$TMP/sq-$mname.bpe" ] && cp "$TMP/sq-$mname.bpe" "$TMP/bpe"
	t=${SQ[$mname]}
	bpe=$([ -s "$TMP/bpe" ] && median <"$TMP/bpe" || echo 0)
	printf '  %-12s %8.2f s  %5.2fx native  %5.2fx heaptrack  %8.4f bytes/event\n' "$mname" "$t" \
		"$(awk -v a="$t" -v b="${SQ[native]}" 'BEGIN { print a / b }')" \
		"$(awk -v a="$t" -v b="${SQ[heaptrack]:-0}" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$bpe"
	[ $first = 1 ] || json+=","
	first=0
	json+="{\"mode\":\"$mname\",\"options\":\"$mopts\",\"seconds\":$t,\"bytes_per_event\":$bpe}"
done
json+="]"
sq_table=$(printf 'sqlite3 1M-row index: native %.2fs; preload 512k %.2fx, every event %.2fx; bpf 512k %.2fx, every event %.2fx; heaptrack %.2fx native' \
	"${SQ[native]:-0}" "$(awk -v a="${SQ[preload512k]:-0}" -v b="${SQ[native]:-0}" 'BEGIN { print a / b }')" \
	"$(awk -v a="${SQ[preload]:-0}" -v b="${SQ[native]:-0}" 'BEGIN { print a / b }')" \
	"$(awk -v a="${SQ[bpf512k]:-0}" -v b="${SQ[native]:-0}" 'BEGIN { print a / b }')" \
	"$(awk -v a="${SQ[bpf]:-0}" -v b="${SQ[native]:-0}" 'BEGIN { print a / b }')" \
	"$(awk -v a="${SQ[heaptrack]:-0}" -v b="${SQ[native]:-0}" 'BEGIN { print a / b }')")
echo "  $sq_table"
stack_cost+=$(printf '\n  %-8s bpf      %5.2fx\n  %-8s preload  %5.2fx' sqlite3 \
	"$(awk -v a="${SQ[bpf]}" -v b="${SQ[bpf-fp]}" 'BEGIN { print a / b }')" sqlite3 \
	"$(awk -v a="${SQ[preload]}" -v b="${SQ[preload-fp]}" 'BEGIN { print a / b }')")
echo
echo "Whole stacks (--stack auto, the default) against --stack fp, every event, time ratio:$stack_cost"
json+=",\"stack_cost\":\"$(echo "$stack_cost" | tr '\n' ';')\""
# BENCH=sqlite3 looks only: the results files keep the last full run.
[ "${BENCH:-}" = sqlite3 ] || [ "${BENCH:-}" = stacks ] && exit 0

# The same sqlite3 recorded every event, watched with --live (text and full-screen): the
# target's time, the recorder's CPU and the view's own, side by side (bench/live.sh).
LIVE_TABLE=$TMP/live.txt bench/live.sh
# ... and exported every second (--export to a folder and to the Collector): the exporter's
# CPU and memory beside the recorder's, the target's time beside recording alone.
EXPORT_TABLE=$TMP/export.txt bench/export.sh

echo
echo "Attached to a running process, its own throughput (median of $RUNS runs):"
at_tables=
attach_bench use
attach_bench

# Recorder CPU per event, scaled to 1M events/s: fp mode on a longer churn (6M events, so
# that the noise of the start-up, about 0.15 s, does not drown the signal), less the same
# mode's start-up (BPF verification of the stack-walking programs, map allocation), which is
# measured on a one-pair churn. The floor's start-up is not the same: its programs are no-ops.
echo
echo "Recorder CPU (excluding its start-up and the traps charged to the target), churn, fp mode:"
cpu_of() { awk '/^recorder: cpu/ { gsub(/s/, "", $3); gsub(/s/, "", $5); print $3 + $5 }' "$TMP/run.err"; }
: >"$TMP/cpu_long"; : >"$TMP/cpu_start"
for _ in $(seq "$RUNS"); do
	run_once "--via bpf -s 0 --stack fp" "$B/workload" churn 3000000 || { cat "$TMP/run.err"; exit 1; }
	cpu_of >>"$TMP/cpu_long"
	long_events=$(awk '/^elapsed/ { print $6 }' "$TMP/run.out")
	long_secs=$(awk '/^elapsed/ { print $2 }' "$TMP/run.out")
	run_once "--via bpf -s 0 --stack fp" "$B/workload" churn 1 || { cat "$TMP/run.err"; exit 1; }
	cpu_of >>"$TMP/cpu_start"
done
cpu_long=$(median <"$TMP/cpu_long"); cpu_start=$(median <"$TMP/cpu_start")
pct=$(awk -v c="$cpu_long" -v f="$cpu_start" -v n="$long_events" 'BEGIN { printf "%.2f", (c - f) / n * 1000000 * 100 }')
ns=$(awk -v c="$cpu_long" -v f="$cpu_start" -v n="$long_events" 'BEGIN { printf "%.0f", (c - f) / n * 1e9 }')
echo "  $cpu_long s for $long_events events (at $(awk -v n="$long_events" -v s="$long_secs" 'BEGIN { printf "%.2f", n / s / 1e6 }')M events/s), $cpu_start s of it start-up:"
echo "  $ns ns per event, $pct% of one core at 1M events/s"
json+=",\"recorder_ns_per_event\":$ns,\"recorder_core_pct_at_1M_events_per_s\":$pct"

bench/python.sh | tee "$TMP/python.txt"
analyzer_bench
json+="}"
echo "$json" >"$RES/latest.json"
{
	echo "heapsnap benchmark, $(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, median of $RUNS runs"
	echo "$table"
	echo
	echo "$trap_head"
	echo "$trap_table"
	echo
	printf '%s' "$micro_lines"
	echo
	echo "$sq_table"
	printf '%s' "$at_tables"
	cat "$TMP/live.txt"
	cat "$TMP/export.txt"
	cat "$TMP/python.txt"
} >"$RES/latest.txt"
echo
echo "Wrote $RES/latest.txt and $RES/latest.json ($SECONDS s)"
