#!/usr/bin/env bash
# make bench's live view table (also alone: BENCH=live make bench; no root): what watching a
# recording costs, beside what recording it costs. The workload is bench.sh's sqlite3 one
# (Debian's sqlite3 building a 1M-row index in :memory:, bench/index.sql: 3.08M allocations,
# 6.1M events), recorded every event in-process (--via preload -s 0), in rounds of five runs,
# RUNS rounds (this machine's noise comes in spells, and a spell then falls on all the modes
# alike), medians reported:
#   native      sqlite3 alone;
#   recorded    heapsnap-record --via preload -s 0 -o F -- sqlite3 ...;
#   no view     the same with --live, whose follower is a heapsnap-analyze that exits at once:
#               what the recorder's --live mode (frames flushed every half refresh) costs alone;
#   live text   the same with --live, standard output to a file: the follower
#               (`heapsnap-analyze live --recorder PID --refresh 1s F`, a child of the
#               recorder, never in the target) prints text updates;
#   live full   the same with --live on a terminal (a tmux pane, 160x48): the follower
#               draws the full-screen ncurses view.
# What is timed, for each:
#   - the target itself: the launched command is `/usr/bin/time -o T sqlite3 ...` (natively
#     too), whose figures are sqlite3's own wall and CPU (user+sys), whatever the recorder and
#     the view do after it exits (the recorder's last words come after the view's last update);
#   - the recorder's CPU (user+sys) and max RSS: its own getrusage(RUSAGE_SELF), `--stats`;
#   - the view's CPU and max RSS: the recorder runs the heapsnap-analyze beside its own
#     executable, so the runs use a copy of heapsnap-record in a directory of this script's
#     whose heapsnap-analyze is a shim, `exec /usr/bin/time -o V .output/heapsnap-analyze "$@"`
#     (the library from HEAPSNAP_LIB): the follower's own rusage, nothing else's;
#   - the tail: from the target's exit to the view's last update (text: the recorder's exit,
#     which waits for the view, less the target's end; full-screen: until the pane says "the
#     recording ended", polled every 50 ms). Without a view, the recorder's own finish;
#   - updates: text, the updates printed; full-screen, the ticks of --refresh from the
#     follower's start to the end, plus the last update (estimated: the view prints no count).
#     The view's CPU per update and per event recorded follow from them.
# The full-screen view then waits for q on the finished recording: q is sent (tmux send-keys)
# as soon as the pane says the recording ended, so the view's CPU includes at most 50 ms of
# that wait, which costs a poll a second. Last, the analyzer reads the finished file once
# (`heapsnap-analyze top F`), for the view's CPU and memory to be set beside: the view replays
# the same events once, incrementally. LIVE_REFRESH (seconds, default 1) sets --refresh.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(cd "${OUTPUT:-.output}" && pwd)
A=$OUT/heapsnap-analyze
RUNS=${RUNS:-5}
REFRESH=${LIVE_REFRESH:-1}
TMP=$(mktemp -d /tmp/heapsnap-livebench.XXXXXX)
SOCK=$TMP/tmux.sock
trap 'tmux -S "$SOCK" kill-server 2>/dev/null || :; rm -rf "$TMP"' EXIT
for p in sqlite3 tmux /usr/bin/time; do
	command -v $p >/dev/null || { echo "bench/live.sh: no $p" >&2; exit 1; }
done

# The recorder beside the shim (a copy: the recorder finds heapsnap-analyze by its own path).
mkdir "$TMP/bin"
cp "$OUT/heapsnap-record" "$TMP/bin/"
cat >"$TMP/bin/heapsnap-analyze" <<EOF
#!/bin/sh
date +%s.%N >"$TMP/view.start"
exec /usr/bin/time -f "%e %U %S %M" -o "$TMP/view.time" "$A" "\$@"
EOF
chmod +x "$TMP/bin/heapsnap-analyze"
mkdir "$TMP/noview"
cp "$OUT/heapsnap-record" "$TMP/noview/"
printf '#!/bin/sh\nexit 0\n' >"$TMP/noview/heapsnap-analyze"
chmod +x "$TMP/noview/heapsnap-analyze"
export HEAPSNAP_LIB=$OUT/libheapsnap.so
R=$TMP/bin/heapsnap-record
TARGET=(/usr/bin/time -f "%e %U %S %M" -o "$TMP/target.time" sqlite3 :memory: -init bench/index.sql .quit)

now() { date +%s.%N; }
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
waitfile() { # FILE SECONDS: polls every 50 ms
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
pane_says() { tmux -S "$SOCK" capture-pane -p -t live 2>/dev/null | grep -q "$1"; }

run() { # MODE: one run, figures appended to $TMP/MODE.*
	local m=$1 t_end t_ended i cmd
	rm -f "$TMP"/{target,outer,view}.time "$TMP"/view.start "$TMP/rc" "$TMP/run.hsnap"
	case $m in
	native) "${TARGET[@]}" </dev/null >"$TMP/run.out" 2>"$TMP/run.err" ;;
	recorded | noview | text)
		# shellcheck disable=SC2046
		/usr/bin/time -f "%e" -o "$TMP/outer.time" "$([ $m = noview ] && echo "$TMP/noview/heapsnap-record" || echo "$R")" \
			--via preload -s 0 --stats $([ $m != recorded ] && echo "--live --refresh ${REFRESH}s") \
			-o "$TMP/run.hsnap" -- "${TARGET[@]}" </dev/null >"$TMP/run.out" 2>"$TMP/run.err" ;;
	full)
		printf -v cmd '%q ' /usr/bin/time -f "%e" -o "$TMP/outer.time" "$R" --via preload -s 0 --stats --live \
			--refresh "${REFRESH}s" -o "$TMP/run.hsnap" -- "${TARGET[@]}"
		tmux -S "$SOCK" new-session -d -s live -x 160 -y 48 \
			"cd $(printf %q "$PWD") && $cmd </dev/null 2>$TMP/run.err; echo \$? >$TMP/rc"
		waitfile "$TMP/target.time" 600 || { echo "bench/live.sh: sqlite3 did not end" >&2; exit 1; }
		t_end=$(now)
		for ((i = 0; i < 1200; i++)); do
			pane_says "the recording ended" && break
			sleep 0.05
		done
		t_ended=$(now)
		pane_says "the recording ended" || { echo "bench/live.sh: the view did not show the end" >&2
			tmux -S "$SOCK" capture-pane -p -t live >&2; exit 1; }
		tmux -S "$SOCK" send-keys -t live q
		waitfile "$TMP/rc" 60 || { echo "bench/live.sh: the recorder did not end after q" >&2; exit 1; }
		[ "$(cat "$TMP/rc")" = 0 ] || { cat "$TMP/run.err" >&2; exit 1; } ;;
	esac
	read -r wall u s _ <"$TMP/target.time"
	echo "$wall" >>"$TMP/$m.wall"
	awk -v u="$u" -v s="$s" 'BEGIN { print u + s }' >>"$TMP/$m.cpu"
	echo "$s" >>"$TMP/$m.sys"
	[ $m = native ] && return
	awk '/^recorder: cpu/ { gsub(/s/, "", $3); gsub(/s/, "", $5); print $3 + $5 }' "$TMP/run.err" >>"$TMP/$m.rcpu"
	awk '/^recorder: cpu/ { for (i = 1; i <= NF; i++) if ($i == "rss") print $(i + 1) / 1024 }' "$TMP/run.err" >>"$TMP/$m.rrss"
	grep -o 'wrote [^:]*: [0-9]* allocations, [0-9]* frees' "$TMP/run.err" | awk '{ print $3 + $5 }' >>"$TMP/$m.events"
	if [ $m = full ]; then
		awk -v a="$t_end" -v b="$t_ended" 'BEGIN { print b - a }' >>"$TMP/$m.tail"
		awk -v a="$(cat "$TMP/view.start")" -v b="$t_ended" -v r="$REFRESH" 'BEGIN { print int((b - a) / r) + 1 }' >>"$TMP/$m.updates"
	else
		awk -v a="$wall" -v b="$(cat "$TMP/outer.time")" 'BEGIN { print b - a }' >>"$TMP/$m.tail"
		[ $m = text ] && grep -c '^Snapshot: live' "$TMP/run.out" >>"$TMP/$m.updates"
	fi
	[ $m = recorded ] || [ $m = noview ] && return
	read -r _ u s kib <"$TMP/view.time"
	awk -v u="$u" -v s="$s" 'BEGIN { print u + s }' >>"$TMP/$m.vcpu"
	echo $((kib / 1024)) >>"$TMP/$m.vrss"
	awk -v c="$(tail -1 "$TMP/$m.vcpu")" -v n="$(tail -1 "$TMP/$m.updates")" 'BEGIN { print c / n * 1000 }' >>"$TMP/$m.vupd"
	awk -v c="$(tail -1 "$TMP/$m.vcpu")" -v n="$(tail -1 "$TMP/$m.events")" 'BEGIN { print c / n * 1e9 }' >>"$TMP/$m.vns"
	# The finished file read once, after the fact, by the analyzer: its CPU and memory.
	if [ $m = text ]; then
		/usr/bin/time -f "%U %S %M" -o "$TMP/top.time" "$A" top "$TMP/run.hsnap" >/dev/null
		read -r u s kib <"$TMP/top.time"
		awk -v u="$u" -v s="$s" 'BEGIN { print u + s }' >>"$TMP/top.cpu"
		echo $((kib / 1024)) >>"$TMP/top.rss"
	fi
}

MODES=(native recorded noview text full)
for _ in $(seq "$RUNS"); do
	for m in "${MODES[@]}"; do
		run $m
	done
done

med() { [ -s "$TMP/$1" ] && median "$TMP/$1" || echo 0; }
{
	echo
	echo "The live view (--refresh ${REFRESH}s) on sqlite3 :memory: building a 1M-row index, recorded every event"
	echo "(--via preload -s 0; $(med recorded.events) events), median of $RUNS rounds (a ratio: of the rounds' own). target: sqlite3's own wall and CPU (user+sys, of it sys);"
	echo "recorder, view: each process's own CPU (user+sys) and max RSS; tail: from the target's exit to the view's"
	echo "last update (without a view, the recorder's finish); updates: the view's (full-screen: its ticks, estimated);"
	echo "no view: --live with a follower that exits at once; live text: stdout to a file; live full: on a 160x48 tmux pane:"
	F='  %-10s %7s %6s %6s %7s %6s %6s %5s %8s %5s %7s %6s %5s %6s %7s %7s %7s\n'
	# shellcheck disable=SC2059
	printf "$F" "" "target" "x" "x" "target" "x" "x" "of it" "recorder" "rec" "view" "view" "view" "tail" "" "view ms" "view ns"
	# shellcheck disable=SC2059
	printf "$F" "" "wall s" native rec. "cpu s" native rec. "sys" "cpu s" MiB "cpu s" "/rec." MiB s updates /update /event
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }'; }
	# The median of each round's own ratio: a spell of noise falls on a round's modes alike.
	rratio() { paste "$TMP/$1" "$TMP/$2" | awk '{ print ($2 > 0 ? $1 / $2 : 0) }' >"$TMP/ratios"
		awk -v a="$(median "$TMP/ratios")" 'BEGIN { printf "%.2fx", a }'; }
	fix() { awk -v a="$1" -v f="$2" 'BEGIN { printf f, a }'; }
	for m in "${MODES[@]}"; do
		w=$(med $m.wall); c=$(med $m.cpu)
		label=$m
		case $m in noview) label="no view" ;; text) label="live text" ;; full) label="live full" ;; esac
		f=("$(fix "$w" %.2f)" "$(rratio $m.wall native.wall)" - "$(fix "$c" %.2f)" "$(rratio $m.cpu native.cpu)" - "$(fix "$(med $m.sys)" %.2f)" - - - - - - - - -)
		if [ $m != native ]; then
			f[2]=$(rratio $m.wall recorded.wall); f[5]=$(rratio $m.cpu recorded.cpu)
			f[7]=$(fix "$(med $m.rcpu)" %.2f); f[8]=$(fix "$(med $m.rrss)" %.0f); f[12]=$(fix "$(med $m.tail)" %.2f)
		fi
		if [ $m = text ] || [ $m = full ]; then
			vc=$(med $m.vcpu)
			f[9]=$(fix "$vc" %.2f); f[10]=$(rratio $m.vcpu $m.rcpu); f[11]=$(med $m.vrss)
			f[13]=$(med $m.updates); f[14]=$(fix "$(med $m.vupd)" %.0f); f[15]=$(fix "$(med $m.vns)" %.0f)
		fi
		# shellcheck disable=SC2059
		printf "$F" "$label" "${f[@]}"
	done
	printf '  the finished file read once, after the fact (heapsnap-analyze top F): %.2f s CPU, %d MiB max RSS\n' \
		"$(med top.cpu)" "$(med top.rss)"
} >"$TMP/table"
cat "$TMP/table"
[ -n "${LIVE_TABLE:-}" ] && cp "$TMP/table" "$LIVE_TABLE"
exit 0
