#!/usr/bin/env bash
# make bench's export table (also alone: BENCH=export make bench): what --export costs beside
# recording alone. The workload is bench.sh's sqlite3 one (Debian's sqlite3 building a 1M-row
# index in :memory:, bench/index.sql, 6.1M events), recorded every event in-process (--via
# preload -s 0), exported every EXPORT_INTERVAL (default 1s: many intervals in a short run, a
# worst case beside the default 60s), RUNS rounds of every mode, medians reported:
#   native      sqlite3 alone;
#   recorded    heapsnap-record --via preload -s 0 -o F -- sqlite3 ...;
#   dir         the same with --export dir:D (gzip'd pprof files);
#   otlp        the same with --export otlp+http:// to the Collector of scripts/build-otelcol.sh
#               (skipped when it cannot be built);
#   otlp, no -o --export otlp+http:// and no file: the stream through a pipe to the exporter.
# Timed: the target itself (`/usr/bin/time sqlite3`), the recorder's own CPU and RSS
# (--stats), and the exporter's (the recorder runs the heapsnap-analyze beside its own
# executable: here a shim that times it).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(cd "${OUTPUT:-.output}" && pwd)
RUNS=${RUNS:-5}
EVERY=${EXPORT_INTERVAL:-1}
TMP=$(mktemp -d /tmp/heapsnap-exportbench.XXXXXX)
OC_PID=
trap '[ -n "$OC_PID" ] && kill $OC_PID 2>/dev/null; rm -rf "$TMP"' EXIT
for p in sqlite3 /usr/bin/time; do
	command -v $p >/dev/null || { echo "bench/export.sh: no $p" >&2; exit 1; }
done
mkdir "$TMP/bin"
cp "$OUT/heapsnap-record" "$TMP/bin/"
# The shim runs the real exporter as its child and writes its wall, user, sys seconds and max
# RSS (KiB) to exp.time, as /usr/bin/time would; but it passes on the signals the recorder
# sends its exporter (SIGUSR2 at the recording's end, SIGTERM on a failure), which would
# kill /usr/bin/time before it wrote anything.
cat >"$TMP/bin/heapsnap-analyze" <<EOF
#!/usr/bin/env python3
import os, signal, sys, time
t = time.monotonic()
pid = os.fork()
if pid == 0:
    os.execv("$OUT/heapsnap-analyze", ["$OUT/heapsnap-analyze"] + sys.argv[1:])
for sig in (signal.SIGUSR2, signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda n, f: os.kill(pid, n))
_, status, ru = os.wait4(pid, 0)
with open("$TMP/exp.time", "w") as f:
    f.write("%.2f %.2f %.2f %d\\n" % (time.monotonic() - t, ru.ru_utime, ru.ru_stime, ru.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
EOF
chmod +x "$TMP/bin/heapsnap-analyze"
export HEAPSNAP_LIB=$OUT/libheapsnap.so
R=$TMP/bin/heapsnap-record
TARGET=(/usr/bin/time -f "%e %U %S %M" -o "$TMP/target.time" sqlite3 :memory: -init bench/index.sql .quit)

MODES=(native recorded dir)
if OC=$(scripts/build-otelcol.sh 2>"$TMP/oc.build"); then
	PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	OTLP_PORT=$PORT OUT_FILE=$TMP/oc.json "$OC" --config=file:tests/otelcol/config.yaml \
		--feature-gates=service.profilesSupport >"$TMP/oc.log" 2>&1 &
	OC_PID=$!
	for _ in $(seq 600); do grep -q "Everything is ready" "$TMP/oc.log" && break; sleep 0.05; done
	MODES+=(otlp otlpnofile)
else
	echo "bench/export.sh: no Collector ($(tail -1 "$TMP/oc.build")): OTLP rows left out" >&2
fi

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run() {
	local m=$1 args=()
	rm -f "$TMP/target.time" "$TMP/exp.time" "$TMP/run.hsnap"
	rm -rf "$TMP/d"
	case $m in
	native) "${TARGET[@]}" </dev/null >/dev/null 2>&1 ;;
	*)
		case $m in
		recorded) args=(-o "$TMP/run.hsnap") ;;
		dir) args=(-o "$TMP/run.hsnap" --export "dir:$TMP/d") ;;
		otlp) args=(-o "$TMP/run.hsnap" --export "otlp+http://127.0.0.1:$PORT") ;;
		otlpnofile) args=(--export "otlp+http://127.0.0.1:$PORT") ;;
		esac
		[ $m != recorded ] && args+=(--export-interval "${EVERY}s")
		"$R" --via preload -s 0 --stats "${args[@]}" -- "${TARGET[@]}" </dev/null >/dev/null 2>"$TMP/run.err" ||
			{ cat "$TMP/run.err" >&2; exit 1; } ;;
	esac
	read -r _ u s _ <"$TMP/target.time"
	awk -v u="$u" -v s="$s" 'BEGIN { print u + s }' >>"$TMP/$m.cpu"
	[ $m = native ] && return
	awk '/^recorder: cpu/ { gsub(/s/, "", $3); gsub(/s/, "", $5); print $3 + $5 }' "$TMP/run.err" >>"$TMP/$m.rcpu"
	awk '/^recorder: cpu/ { for (i = 1; i <= NF; i++) if ($i == "rss") print $(i + 1) / 1024 }' "$TMP/run.err" >>"$TMP/$m.rrss"
	[ $m = recorded ] && return
	read -r _ u s kib <"$TMP/exp.time"
	awk -v u="$u" -v s="$s" 'BEGIN { print u + s }' >>"$TMP/$m.ecpu"
	echo $((kib / 1024)) >>"$TMP/$m.erss"
	grep -o 'exported [0-9]* profiles of [0-9]* intervals' "$TMP/run.err" | awk '{ print $5 }' >>"$TMP/$m.iv"
	grep -o 'lost.export_profiles [0-9]*' "$TMP/run.err" | tail -1 | awk '{ print $2 }' >>"$TMP/$m.lost"
}

for _ in $(seq "$RUNS"); do
	for m in "${MODES[@]}"; do run $m; done
done
med() { [ -s "$TMP/$1" ] && median "$TMP/$1" || echo -; }
ratio() { paste "$TMP/$1" "$TMP/$2" | awk '{ print ($2 > 0 ? $1 / $2 : 0) }' >"$TMP/r"; printf '%.2fx' "$(median "$TMP/r")"; }
{
	echo
	echo "Export (--export-interval ${EVERY}s) on sqlite3 :memory: building a 1M-row index, recorded every event"
	echo "(--via preload -s 0), median of $RUNS rounds: the target's own CPU (user+sys), the recorder's and"
	echo "the exporter's (heapsnap-analyze export beside it) CPU and max RSS, intervals sent, profiles lost:"
	F='  %-12s %8s %8s %8s %9s %8s %9s %8s %9s %5s\n'
	# shellcheck disable=SC2059
	printf "$F" "" "target s" "x native" "x rec." "recorder s" "rec MiB" "export s" "exp MiB" intervals lost
	for m in "${MODES[@]}"; do
		label=$m
		[ $m = otlpnofile ] && label="otlp, no -o"
		if [ $m = native ]; then
			# shellcheck disable=SC2059
			printf "$F" "$label" "$(printf %.2f "$(med $m.cpu)")" 1.00x - - - - - - -
			continue
		fi
		# shellcheck disable=SC2059
		printf "$F" "$label" "$(printf %.2f "$(med $m.cpu)")" "$(ratio $m.cpu native.cpu)" "$(ratio $m.cpu recorded.cpu)" \
			"$(printf %.2f "$(med $m.rcpu)")" "$(printf %.0f "$(med $m.rrss)")" \
			"$([ $m = recorded ] && echo - || printf %.2f "$(med $m.ecpu)")" "$(med $m.erss)" "$(med $m.iv)" "$(med $m.lost)"
	done
} >"$TMP/table"
cat "$TMP/table"
[ -n "${EXPORT_TABLE:-}" ] && cp "$TMP/table" "$EXPORT_TABLE"
exit 0
