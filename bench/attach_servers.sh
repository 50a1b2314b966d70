#!/usr/bin/env bash
# Throughput of real programs nobody here wrote, attached by injection (`heapsnap-record -p`,
# the default way in), relative to the same process not attached (`BENCH=servers make bench`,
# or this script alone). Each program serves a fixed load on a 127.0.0.1 port: redis-server
# (redis-benchmark SET/GET), nginx's single worker, Debian's python3 -m http.server and a node
# HTTP server (ab, keep-alive, 8 clients). Each run measures the three states one after the
# other on one process: not attached, attached at the default sampling, attached recording
# every event (-s 0), in an order that turns with each run; a state's throughput is requests
# over the load's wall time (the attach itself before it, the detach after), and its cost the
# server process's CPU time (user and system, its threads and ours in it) per request. Prints
# the medians over RUNS runs of each run's ratios to not attached, and writes
# bench/results/attach_servers.txt. A measurement on whatever else the machine runs: on a
# shared machine the throughput carries its noise; the CPU per request much less. PROGS picks
# some of redis, nginx, python and node (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
R=$OUT/heapsnap-record
RUNS=${RUNS:-5}
SECS=${SECS:-4} # each load's length, not attached
TMP=$(mktemp -d /tmp/heapsnap-servers.XXXXXX)
SERVER=
cleanup() {
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "attach_servers: failed at line $LINENO ($PROG)" >&2' ERR
RES=bench/results
mkdir -p "$RES"

[ "$(id -u)" = 0 ] || { echo "attach_servers: needs root (ptrace of the servers)" >&2; exit 1; }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
ticks() { sed 's/.*) //' "/proc/$TPID/stat" | awk '{ print $12 + $13 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
until_up() { # COMMAND...: until it succeeds, 20 s at most
	local i
	for i in $(seq 400); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
	echo "attach_servers: never up: $*" >&2
	return 1
}

# load N: N requests to the current program; prints requests per second of wall time, and
# writes the server's CPU ticks per 1000 requests to $TMP/cpu.
load() {
	local t0 t1 c0 c1
	c0=$(ticks)
	t0=$(now)
	case $PROG in
	redis) redis-benchmark -h 127.0.0.1 -p "$PORT" -c 8 -n $(($1 / 2)) -r 10000 -d 200 -t set,get -q >"$TMP/load.out" 2>&1 ;;
	*) ab -q -k -c 8 -n "$1" "$URL" >"$TMP/load.out" 2>&1 ;;
	esac || { cat "$TMP/load.out" >&2; return 1; }
	if [ "$PROG" != redis ] && ! grep -q "^Failed requests: *0$" "$TMP/load.out"; then
		grep -E "^(Failed|Non-2xx)" "$TMP/load.out" >&2
		return 1
	fi
	t1=$(now)
	c1=$(ticks)
	awk -v n="$1" -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 / n }' >"$TMP/cpu"
	awk -v n="$1" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", n / (b - a) }'
}

# poke: one request, to give an idle server an allocator call to load the library at.
poke() {
	case $PROG in
	redis) redis-cli -p "$PORT" ping >/dev/null 2>&1 ;;
	*) curl -sf -o /dev/null "$URL" ;;
	esac
}

# measure N OPTIONS...: the load's rate with the recorder attached with OPTIONS to $TPID.
measure() {
	local n=$1 rpid i rate
	shift
	"$R" -v -p "$TPID" "$@" -o "$TMP/a.hsnap" >/dev/null 2>"$TMP/a.err" &
	rpid=$!
	for i in $(seq 400); do
		grep -q "attached to" "$TMP/a.err" && break
		kill -0 $rpid 2>/dev/null || break
		poke || true
		sleep 0.05
	done
	grep -q "recording via inject" "$TMP/a.err" || { cat "$TMP/a.err" >&2; kill -INT $rpid 2>/dev/null; return 1; }
	rate=$(load "$n")
	cp "$TMP/cpu" "$TMP/cpu.attached"
	kill -INT $rpid
	wait $rpid || { cat "$TMP/a.err" >&2; return 1; }
	echo "$rate"
}

start_redis() {
	redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir "$TMP" \
		--logfile "$TMP/redis.log" >/dev/null 2>&1 &
	SERVER=$! TPID=$!
	until_up redis-cli -p "$PORT" ping
}

start_nginx() {
	mkdir -p "$TMP/ngx/www" "$TMP/ngx/tmp"
	head -c 16384 /dev/urandom >"$TMP/ngx/www/f.bin"
	cat >"$TMP/ngx/nginx.conf" <<EOC
daemon off;
master_process on;
worker_processes 1;
user root;
pid $TMP/ngx/nginx.pid;
error_log $TMP/ngx/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $TMP/ngx/tmp/body;
	proxy_temp_path $TMP/ngx/tmp/proxy;
	fastcgi_temp_path $TMP/ngx/tmp/fastcgi;
	uwsgi_temp_path $TMP/ngx/tmp/uwsgi;
	scgi_temp_path $TMP/ngx/tmp/scgi;
	server { listen 127.0.0.1:$PORT; root $TMP/ngx/www; }
}
EOC
	nginx -p "$TMP/ngx" -c "$TMP/ngx/nginx.conf" -e "$TMP/ngx/error.log" >/dev/null 2>&1 &
	SERVER=$!
	URL=http://127.0.0.1:$PORT/f.bin
	until_up curl -sf -o /dev/null "$URL"
	TPID=$(pgrep -P "$SERVER" | head -1)
}

start_python() {
	mkdir -p "$TMP/www"
	head -c 16384 /dev/urandom >"$TMP/www/f.bin"
	/usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$TMP/www" "$PORT" >/dev/null 2>&1 &
	SERVER=$! TPID=$!
	URL=http://127.0.0.1:$PORT/f.bin
	until_up curl -sf -o /dev/null "$URL"
}

start_node() {
	# Each answer a fresh 16 KiB buffer (a malloc outside V8's heap) and a JSON header line.
	cat >"$TMP/server.js" <<'EOJ'
const http = require('http');
let n = 0;
http.createServer((req, res) => {
	const b = Buffer.allocUnsafeSlow(16384);
	b.fill(n++ & 255);
	res.setHeader('X-Info', JSON.stringify({n, url: req.url}));
	res.end(b);
}).listen(Number(process.argv[2]), '127.0.0.1');
EOJ
	/usr/bin/node "$TMP/server.js" "$PORT" >/dev/null 2>&1 &
	SERVER=$! TPID=$!
	URL=http://127.0.0.1:$PORT/f.bin
	until_up curl -sf -o /dev/null "$URL"
}

echo "Attached by injection to real programs, throughput relative to not attached"
echo "($(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, median of $RUNS runs of ${SECS} s loads):"
echo "(throughput: attached / alone, higher is better; CPU per request: attached / alone, lower is better)"

table=$(printf '%-22s %9s | %-20s | %-20s\n' "" "" "throughput ratio" "CPU/request ratio")
table+=$'\n'$(printf '%-22s %9s | %9s %10s | %9s %10s' program "req/s" sampled "every ev." sampled "every ev.")
echo "$table"
PROG=
for PROG in ${PROGS:-redis nginx python node}; do
	case $PROG in
	redis) command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || { echo "  redis: not installed, skipped"; continue; } ;;
	nginx) command -v nginx >/dev/null && command -v ab >/dev/null || { echo "  nginx: nginx or ab (apache2-utils) missing, skipped"; continue; } ;;
	python) [ -x /usr/bin/python3 ] && command -v ab >/dev/null || { echo "  python3: missing, skipped"; continue; } ;;
	node) [ -x /usr/bin/node ] && command -v ab >/dev/null || { echo "  node: missing, skipped"; continue; } ;;
	esac
	PORT=$(free_port)
	"start_$PROG"
	# Sized so that a load takes about SECS not attached.
	rate=$(load 2000)
	n=$(awk -v r="$rate" -v s="$SECS" 'BEGIN { n = int(r * s / 100) * 100; print (n < 1000 ? 1000 : n) }')
	: >"$TMP/alone"; : >"$TMP/sampled"; : >"$TMP/every"; : >"$TMP/csampled"; : >"$TMP/cevery"
	load "$n" >/dev/null # warm: caches, the server's own pools
	for r in $(seq "$RUNS"); do
		# The three in turn, each run starting from another: a drift of the machine's load
		# falls on each state alike.
		for k in 0 1 2; do
			case $(((r + k) % 3)) in
			0) alone=$(load "$n"); calone=$(cat "$TMP/cpu") ;;
			1) sampled=$(measure "$n"); csampled=$(cat "$TMP/cpu.attached") ;;
			2) every=$(measure "$n" -s 0); cevery=$(cat "$TMP/cpu.attached") ;;
			esac
		done
		echo "$alone" >>"$TMP/alone"
		awk -v a="$alone" -v b="$sampled" 'BEGIN { print b / a }' >>"$TMP/sampled"
		awk -v a="$alone" -v b="$every" 'BEGIN { print b / a }' >>"$TMP/every"
		awk -v a="$calone" -v b="$csampled" 'BEGIN { print (a > 0 ? b / a : 0) }' >>"$TMP/csampled"
		awk -v a="$calone" -v b="$cevery" 'BEGIN { print (a > 0 ? b / a : 0) }' >>"$TMP/cevery"
		echo "  $PROG run $r: $alone req/s alone, $sampled sampled, $every every event;" \
			"CPU ticks per 1000 requests $calone, $csampled, $cevery" >&2
	done
	name=$PROG
	[ $PROG = python ] && name="python3 -m http.server"
	[ $PROG = nginx ] && name="nginx (worker)"
	line=$(printf '%-22s %9.0f | %9.2f %10.2f | %9.2f %10.2f' "$name" "$(median <"$TMP/alone")" \
		"$(median <"$TMP/sampled")" "$(median <"$TMP/every")" "$(median <"$TMP/csampled")" "$(median <"$TMP/cevery")")
	echo "$line"
	table+=$'\n'"$line"
	kill "$SERVER"
	wait "$SERVER" 2>/dev/null || true
	SERVER=
done
{
	echo "heapsnap attach_servers, $(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs, median of $RUNS runs of ${SECS} s loads"
	echo "$table"
} >"$RES/attach_servers.txt"
