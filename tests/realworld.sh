#!/usr/bin/env bash
# The real-program matrix (`make realworld`): programs nobody here wrote, each under every way
# in that applies, against the same program unrecorded. Each row runs the program unrecorded,
# then recorded, bounded in time (on expiry every thread's stack is printed, the whole process
# group killed and the row marked HANG); it compares exit status and output, checks that no
# process of the row is left behind, and, for the programs whose allocator calls are the same
# from run to run, compares heapsnap's count of allocations (every event, -s 0) with
# heaptrack's "calls to allocation functions" for the same command.
#
#   tests/realworld.sh [SUBSTRING]   the rows whose name (PROGRAM@WAY) contains SUBSTRING
#
# Ways: launched (--via preload -- CMD), attached (CMD started, then -p PID for the length of
# a workload, the recorder then stopped with SIGINT), bpf (--via bpf -- CMD). Ends with a
# table and "N passed, N failed, N skipped"; exits non-zero on a failure.
set -u
set -m # each background job its own process group: a hung row's whole tree is killed
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
R=$OUT/heapsnap-record
A=$OUT/heapsnap-analyze
T=$OUT/tests
TMP=$(mktemp -d /tmp/heapsnap-realworld.XXXXXX)
chmod 755 "$TMP"
trap 'rm -rf "$TMP"' EXIT
PASS=0 FAIL=0 SKIP=0
ONLY=${1:-}
ALL=
. tests/lib.sh
. tests/realprog.sh
ALL=
PY=/usr/bin/python3
VIA=bpf # bpf_check probes BPF itself
# A row's bound: generous, as the machine may be busy; a hang is a hang at any bound.
BOUND=${REALWORLD_BOUND:-300}

# Rows that fail because of a defect known and being fixed elsewhere: ROW REASON.
declare -A KNOWN=()

# ---- helpers ----

free_port() { $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# res KEY VALUE: one field of this row's line in the table.
res() { echo "$1=$2" >>"$TMP/$ROW.res"; }

# bounded SECS NAME CMD...: CMD in a process group of its own, its stdout in $TMP/NAME.out and
# stderr in $TMP/NAME.err (stdin from STDIN_FROM when set); on expiry, every thread's stack of
# the group, the group killed, status 124 and the row marked HANG. Returns CMD's status.
bounded() {
	local secs=$1 name=$2 pid i=0 rc
	shift 2
	"$@" <"${STDIN_FROM:-/dev/null}" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	pid=$!
	LAST_PG=$pid
	while kill -0 $pid 2>/dev/null && [ $i -lt $((secs * 10)) ]; do
		i=$((i + 1))
		sleep 0.1
	done
	if kill -0 $pid 2>/dev/null; then
		echo "HANG: $name still running after ${secs}s: $*"
		hang_stacks $(pgrep -g $pid)
		kill -KILL -- -$pid 2>/dev/null
		wait $pid
		res status HANG
		return 124
	fi
	wait $pid
	rc=$?
	return $rc
}

# wait_bounded SECS NAME PID: waits for background job PID; on expiry as bounded.
wait_bounded() {
	local secs=$1 name=$2 pid=$3 i=0
	while kill -0 $pid 2>/dev/null && [ $i -lt $((secs * 10)) ]; do
		i=$((i + 1))
		sleep 0.1
	done
	if kill -0 $pid 2>/dev/null; then
		echo "HANG: $name (pid $pid) still running after ${secs}s"
		hang_stacks $(pgrep -g $pid) $(pgrep -P $pid)
		kill -KILL -- -$pid 2>/dev/null; kill -KILL $pid 2>/dev/null
		wait $pid
		res status HANG
		return 124
	fi
	wait $pid
}

# until_in SECS FILE TEXT: until TEXT is in FILE.
until_in() {
	local i
	for i in $(seq $(($1 * 20))); do grep -qF -- "$3" "$2" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}

# harmed WHAT: the program behaved otherwise recorded than unrecorded.
harmed() { res status HARMED; die "$*"; }

# same_output NAME: the recorded run's normalised output ($TMP/NAME.norm) is the unrecorded one's
# ($TMP/NAME.want).
same_output() {
	if cmp -s "$TMP/$1.want" "$TMP/$1.norm"; then
		res output y
	else
		res output n
		diff "$TMP/$1.want" "$TMP/$1.norm" | head -20
		harmed "$1: output differs from unrecorded"
	fi
}

# same_status NAME WANT GOT
same_status() { [ "$2" = "$3" ] || { cat "$TMP/$1.err" | tail -20; harmed "$1: exit status $3, unrecorded $2"; }; }

# alive PGID...: the processes of these groups not yet dead (a zombie has ended: chromium's
# zygotes, orphaned to a slow init, stay zombies a while after the browser has exited).
alive() {
	local g p
	for g in "$@"; do
		for p in $(pgrep -g "$g"); do
			[ "$(awk '{ print $3 }' /proc/$p/stat 2>/dev/null)" = Z ] || [ ! -d /proc/$p ] || echo $p
		done
	done
}

# left_behind PGID...: no process of these groups still runs, 10 s after the row's own end
# (the last of a group may still be on its way out).
left_behind() {
	local left i
	for i in $(seq 100); do
		left=$(alive "$@")
		[ -z "$left" ] && break
		sleep 0.1
	done
	left=$(echo $left)
	if [ -n "$left" ]; then
		ps -o pid,pgid,args -p "${left// /,}"
		kill -KILL $left 2>/dev/null
		res status HARMED
		die "processes left behind: $left"
	fi
}

# allocs FILE: heapsnap's count of allocations in a record file (every process).
allocs() { "$A" stats "$1" 2>/dev/null | awk '$1 == "events.alloc" { print $2 }'; }

# vs_heaptrack NAME HSNAP CMD...: heaptrack on the same command (stdin STDIN_FROM); the ratio
# of heapsnap's allocations to heaptrack's calls to allocation functions, beyond 1% a failure.
vs_heaptrack() {
	local name=$1 f=$2 hs ht
	shift 2
	command -v heaptrack >/dev/null || { res figures "no heaptrack"; return 0; }
	bounded $BOUND "$name.ht" heaptrack -o "$TMP/$name.ht" "$@" || { tail "$TMP/$name.ht.err"; die "$name: heaptrack failed"; }
	ht=$(heaptrack_print -f "$TMP/$name.ht.zst" 2>/dev/null | awk -F': ' '/^calls to allocation functions/ { split($2, a, " "); print a[1] }')
	hs=$(allocs "$f")
	[ -n "$ht" ] && [ -n "$hs" ] || die "$name: no figure (heapsnap '$hs', heaptrack '$ht')"
	res figures "$hs/$ht ($(awk -v a="$hs" -v b="$ht" 'BEGIN { printf "%.4f", a / b }'))"
	awk -v a="$hs" -v b="$ht" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b / 100) }' ||
		{ res status HARMED; die "$name: heapsnap counts $hs allocations, heaptrack $ht: beyond 1%"; }
}

# recorder_ok NAME STATUS: the recorder's own failure (not the target's) is a failure.
recorder_said() { grep -E "heapsnap-record: (error|fatal)|cannot|failed" "$TMP/$1.err" | grep -v "^heapsnap-record: wrote" | head -5; }

# launched WAY NAME CMD...: the recorder starting CMD, every event; its status is CMD's.
launched() {
	local way=$1 name=$2
	shift 2
	bounded $BOUND "$name" "$R" --via "$way" -s 0 -o "$TMP/$name.hsnap" -- "$@"
}

# attach_to NAME PID: a recorder attached to PID (every event), waited for; sets RPID.
# attach_to NAME PID [PACE]: PACE (a function), if given, is called while the attach is under
# way, to give the target a line of input: a target blocked in a read that began before the
# attach makes no call through its GOT, where the library is loaded, and would be recorded
# with BPF instead.
attach_to() {
	local i
	# Not the writer of a FIFO the target reads (fd 7): the target would wait for its EOF.
	"$R" -v -p "$2" -s 0 -o "$TMP/$1.hsnap" >/dev/null 2>"$TMP/$1.rerr" 7>&- 8<&- &
	RPID=$!
	for i in $(seq 1200); do
		grep -qF "attached to $2" "$TMP/$1.rerr" 2>/dev/null && break
		[ -n "${3:-}" ] && $3
		sleep 0.05
	done
	grep -qF "attached to $2" "$TMP/$1.rerr" ||
		{ tail -20 "$TMP/$1.rerr"; hang_stacks "$2" $(pgrep -P "$2"); kill -INT $RPID; wait_bounded 20 rec $RPID; res status HANG; die "$1: never attached to $2"; }
	# Injection that cannot be done falls back to BPF: said in the table, with why.
	if grep -q "cannot inject" "$TMP/$1.rerr"; then
		res note "not injected, BPF instead: $(grep -m1 -o 'cannot inject into process [0-9]*: [^;]*' "$TMP/$1.rerr" | sed 's/process [0-9]*: //')"
	fi
}

# detach NAME: SIGINT to the recorder, which ends and leaves a file that reads.
detach() {
	local rc
	kill -INT $RPID 2>/dev/null
	wait_bounded 60 "$1 recorder" $RPID; rc=$?
	[ $rc = 0 ] || { tail -20 "$TMP/$1.rerr"; die "$1: the recorder ended with status $rc after SIGINT (124: hung)"; }
	"$A" info "$TMP/$1.hsnap" >/dev/null 2>&1 || die "$1: the record file does not read"
}

# some_allocs NAME: the recording holds at least one allocation.
some_allocs() {
	local n
	n=$(allocs "$TMP/$1.hsnap")
	res figures "${n:-0} recorded"
	[ "${n:-0}" -gt 0 ] || die "$1: no allocation recorded"
}

pace() {
	local l
	if [ -n "${PACE_LINE:-}" ]; then
		printf '%s\n' "$PACE_LINE" >&7
	elif IFS= read -r l <&8; then
		printf '%s\n' "$l" >&7
	fi
}

# ---- a short program: unrecorded, launched, attached (held at a FIFO), bpf ----

# short_row PROG WAY HEAPTRACK NORM CMD...: CMD's stdin is $TMP/PROG.in when that exists;
# attached, CMD is started with its stdin (or the FIFO $TMP/PROG.gate, for rg, in its
# arguments as GATE) a FIFO, attached to, then fed. NORM normalises the output.
short_row() {
	local prog=$1 way=$2 ht=$3 norm=$4 rc0 rc name=$1.$2 in=/dev/null tj
	shift 4
	[ -f "$TMP/$prog.in" ] && in=$TMP/$prog.in
	STDIN_FROM=$in bounded $BOUND "$name.0" "${@//GATE/$TMP/$prog.empty}"; rc0=$?
	[ $rc0 = 124 ] && die "unrecorded $prog hung"
	$norm <"$TMP/$name.0.out" >"$TMP/$name.want"
	case $way in
	launched|bpf)
		STDIN_FROM=$in launched ${way/launched/preload} "$name" "${@//GATE/$TMP/$prog.empty}"; rc=$?
		[ $rc = 124 ] && die "$prog $way hung"
		left_behind $LAST_PG
		cp "$TMP/$name.err" "$TMP/$name.rerr"
		same_status "$name" $rc0 $rc
		$norm <"$TMP/$name.out" >"$TMP/$name.norm"
		same_output "$name"
		[ "$ht" = yes ] && STDIN_FROM=$in vs_heaptrack "$name" "$TMP/$name.hsnap" "${@//GATE/$TMP/$prog.empty}"
		[ "$ht" = yes ] || some_allocs "$name"
		;;
	attached)
		rm -f "$TMP/$prog.gate"; mkfifo "$TMP/$prog.gate"
		if [[ " $* " == *GATE* ]]; then
			# The program opens the FIFO among its arguments, and waits there until it is
			# attached to.
			"${@//GATE/$TMP/$prog.gate}" <"$in" >"$TMP/$name.out" 2>"$TMP/$name.err" &
			tj=$!
		else
			# Its stdin the FIFO, whose writer is opened here: the program starts and waits
			# in its first read until it is attached to.
			"$@" <"$TMP/$prog.gate" >"$TMP/$name.out" 2>"$TMP/$name.err" &
			tj=$!
			exec 7>"$TMP/$prog.gate"
		fi
		until_in 30 /proc/$tj/comm "$(basename "$1" | cut -c1-15)" || die "$prog never started"
		if [[ " $* " == *GATE* ]]; then
			attach_to "$name" $tj
			: >"$TMP/$prog.gate"
		else
			# Fed a line at a time while the attach is under way (PACE_LINE, a line that
			# prints nothing, or else the input's next), the rest once attached.
			exec 8<"$in"
			attach_to "$name" $tj pace
			cat <&8 >&7
			exec 7>&- 8<&-
		fi
		wait_bounded $BOUND "$name" $tj; rc=$?
		[ $rc = 124 ] && die "$prog attached hung"
		wait_bounded 60 "$name recorder" $RPID || { tail -20 "$TMP/$name.rerr"; die "$name: the recorder failed at the target's exit"; }
		same_status "$name" $rc0 $rc
		$norm <"$TMP/$name.out" >"$TMP/$name.norm"
		same_output "$name"
		some_allocs "$name"
		left_behind $tj
		;;
	*) skip "no way $way for $prog" ;;
	esac
	res status ok
}

# rg over a tree of C headers, in path order (one thread: the same calls each run); attached,
# it waits at a FIFO named ahead of the tree, which it reads first.
RG_TREE=${REALWORLD_RG_TREE:-/usr/include}
rg_norm() { cat; }
rw_rg() {
	command -v rg >/dev/null || skip "no rg (package ripgrep)"
	: >"$TMP/rg.empty"
	short_row rg "$1" yes rg_norm rg --sort path -c -e 'struct [a-z_]+ \{' -e 'define [A-Z_]+ 0x' GATE "$RG_TREE"
}

# sqlite3: a scripted workload on its stdin, its answers deterministic.
sqlite_norm() { cat; }
rw_sqlite3() {
	command -v sqlite3 >/dev/null || skip "no sqlite3"
	cat >"$TMP/sqlite3.in" <<'EOF'
create table t(a integer primary key, b text, c real);
with recursive n(x) as (select 1 union all select x + 1 from n where x < 30000)
  insert into t select x, printf('%08d-%s', (x * 7919) % 100003, substr('abcdefghij', x % 10 + 1)), x / 7.0 from n;
create index tb on t(b);
select count(*), sum(length(b)), printf('%.3f', sum(c)) from t;
select count(*) from t where b like '1%';
select b from t order by b limit 3;
update t set b = upper(b) where a % 3 = 0;
delete from t where a % 5 = 0;
select count(*), max(b) from t;
select group_concat(a, ',') from (select a from t where b glob '*J' order by a limit 20);
vacuum;
select count(*) from t;
EOF
	PACE_LINE="create temp table if not exists pace(x);" short_row sqlite3 "$1" yes sqlite_norm sqlite3 :memory:
}

# git: read commands on a clone of this checkout's repository (the log with patches in the
# launched rows; attached, cat-file --batch reading every object named on its stdin).
git_norm() { md5sum; }
rw_git() {
	command -v git >/dev/null || skip "no git"
	[ -d "$RWDIR/repo.git" ] || git clone -q --bare --no-local . "$RWDIR/repo.git" || die "git clone of the checkout"
	if [ "$1" = attached ]; then
		git --git-dir="$RWDIR/repo.git" rev-list --objects --all | cut -d' ' -f1 >"$TMP/git.in"
		short_row git "$1" no git_norm git --git-dir="$RWDIR/repo.git" cat-file --batch
	else
		short_row git "$1" yes git_norm git --git-dir="$RWDIR/repo.git" log -p --stat -n 400 --no-color
	fi
}

# ---- python3 running a slice of CPython's own tests ----

# The whole slice launched; attached and with BPF (each allocator call a trap, so slower) the
# part without test_asyncio and test_signal (which sleeps), to keep the matrix under ~25 minutes.
PY_TESTS=${REALWORLD_PY_TESTS:-test_subprocess test_threading test_signal test_sys test_gc test_asyncio}
PY_PART=${REALWORLD_PY_PART:-test_subprocess test_threading test_sys test_gc}
# The unrecorded suite's own bound: minutes of tests, slower on a loaded machine.
PY_BOUND=${REALWORLD_PY_BOUND:-1200}
py_norm() { grep -E "^(Tests result|All [0-9]+ tests OK|[0-9]+ tests? failed)" ; }
rw_python3() {
	[ -x $PY ] && [ -d /usr/lib/python3.11/test/test_asyncio ] || skip "no Debian python3 with its tests (libpython3.11-testsuite)"
	local name=python3.$1 rc0 rc tj tests=$PY_TESTS set=full t0 bound
	[ $1 = launched ] || { tests=$PY_PART set=part; }
	# One unrecorded run of each set, for the ways that run it.
	if [ ! -f "$RWDIR/python3.$set.want" ]; then
		t0=$SECONDS
		bounded $PY_BOUND python3.$set.0 $PY -m test $tests; rc0=$?
		[ $rc0 = 124 ] && die "unrecorded python3 hung"
		py_norm <"$TMP/python3.$set.0.out" >"$RWDIR/python3.$set.want"
		echo $rc0 >"$RWDIR/python3.$set.rc"
		echo $((SECONDS - t0)) >"$RWDIR/python3.$set.secs"
	fi
	cp "$RWDIR/python3.$set.want" "$TMP/$name.want"
	rc0=$(cat "$RWDIR/python3.$set.rc")
	# The suite takes minutes unrecorded, more on a loaded machine: a hang is a recorded run
	# past three times the unrecorded one's length (or the bound, whichever is longer), not
	# one past the bound made for programs that take seconds.
	bound=$(( 3 * $(cat "$RWDIR/python3.$set.secs") ))
	[ $bound -gt $BOUND ] || bound=$BOUND
	case $1 in
	launched|bpf)
		BOUND=$bound launched ${1/launched/preload} "$name" $PY -m test $tests; rc=$?
		[ $rc = 124 ] && die "python3 $1 hung"
		left_behind $LAST_PG
		cp "$TMP/$name.err" "$TMP/$name.rerr"
		;;
	attached)
		$PY -m test $tests >"$TMP/$name.out" 2>"$TMP/$name.err" &
		tj=$!
		until_in 60 "$TMP/$name.out" "test_subprocess" || die "python3 never started its tests"
		attach_to "$name" $tj
		# Attached for the length of test_subprocess and test_threading.
		until_in $BOUND "$TMP/$name.out" "test_sys" ||
			{ hang_stacks $tj $(pgrep -P $tj); die "python3: test_subprocess and test_threading never ended while attached"; }
		detach "$name"
		wait_bounded $bound "$name" $tj; rc=$?
		[ $rc = 124 ] && die "python3 attached hung"
		left_behind $tj
		;;
	esac
	same_status "$name" $rc0 $rc
	py_norm <"$TMP/$name.out" >"$TMP/$name.norm"
	same_output "$name"
	some_allocs "$name"
	res status ok
}

# ---- servers under load ----

# server_row PROG WAY START READY LOAD STOP NORM: START (a function) starts the server in the
# background with the command prefix in $PRE (empty, or the recorder's) and sets SJOB; READY
# says when it serves; LOAD (bounded) prints what NORM keeps; STOP ends the server. Attached,
# the recorder is attached to SPID (set by START, else SJOB) before LOAD and stopped after.
server_row() {
	local prog=$1 way=$2 start=$3 ready=$4 load=$5 stop=$6 norm=$7 name=$1.$2 rc0 rc pg
	PRE=() SPID=
	# Files of the row's own (not of the program's): a log of another row's would say ready.
	$start "$name.0"; pg=$SJOB
	$ready "$name.0" || { $stop "$name.0"; die "unrecorded $prog never ready"; }
	bounded $BOUND "$name.0.load" $load "$name.0"; rc0=$?
	$norm <"$TMP/$name.0.load.out" >"$TMP/$name.want"
	$stop "$name.0" || die "unrecorded $prog did not stop"
	left_behind $pg
	[ $rc0 = 0 ] || { cat "$TMP/$name.0.load.out"; die "the load failed on unrecorded $prog"; }
	case $way in
	launched) PRE=("$R" --via preload -s 0 -o "$TMP/$name.hsnap" --) ;;
	bpf) PRE=("$R" --via bpf -s 0 -o "$TMP/$name.hsnap" --) ;;
	attached) PRE=() ;;
	esac
	SPID=
	$start "$name"; pg=$SJOB
	$ready "$name" || { hang_stacks $(pgrep -g $pg); tail -20 "$TMP/$name.err"; kill -KILL -- -$pg; res status HARMED; die "$prog $way never ready"; }
	[ $way = attached ] && attach_to "$name" ${SPID:-$SJOB}
	bounded $BOUND "$name.load" $load "$name"; rc=$?
	[ $rc = 124 ] && { hang_stacks $(pgrep -g $pg); kill -KILL -- -$pg; die "the load on $prog $way hung"; }
	[ $way = attached ] && detach "$name"
	$stop "$name" || { res status HARMED; die "$prog $way did not stop"; }
	left_behind $pg
	[ $way = attached ] || cp "$TMP/$name.err" "$TMP/$name.rerr"
	same_status "$name.load" 0 $rc
	$norm <"$TMP/$name.load.out" >"$TMP/$name.norm"
	same_output "$name"
	some_allocs "$name"
	res status ok
}

# stop_job NAME SIGNAL: SIGNAL to the server's job, waited for; status 0 (or the job's, when
# it is not 0 or a death by SIGNAL).
stop_job() {
	kill -$2 $SJOB 2>/dev/null
	wait_bounded 60 "$1 stop" $SJOB
}

# redis-server, with redis-benchmark's SETs and GETs.
redis_start() {
	PORT=$(free_port)
	"${PRE[@]}" redis-server --port $PORT --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir "$TMP" \
		--logfile "$TMP/$1.log" >"$TMP/$1.out" 2>"$TMP/$1.err" &
	SJOB=$!
}
redis_ready() { until_in 60 "$TMP/$1.log" "Ready to accept connections" && SPID=$(pgrep -g $SJOB -x redis-server); }
redis_load() { redis-benchmark -h 127.0.0.1 -p $PORT -c 4 -n 20000 -r 1000 -d 100 -t set,get,lpush,lpop; }
redis_stop() {
	redis-cli -p $PORT shutdown nosave >/dev/null 2>&1
	wait_bounded 60 "$1 stop" $SJOB || { tail "$TMP/$1.log"; return 1; }
	! grep -E "crashed|Segmentation|Assertion" "$TMP/$1.log"
}
redis_norm() { tr '\r' '\n' | grep -o '[0-9]* requests completed' | sort | uniq -c; }
rw_redis() {
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || skip "no redis-server or redis-benchmark"
	server_row redis "$1" redis_start redis_ready redis_load redis_stop redis_norm
}

# A node HTTP server (its answers computed from the URL), with ab's requests.
node_start() {
	PORT=$(free_port)
	cat >"$TMP/server.js" <<'EOF'
const http = require('http');
const port = +process.argv[2];
const server = http.createServer((req, res) => {
	const n = req.url.length;
	const body = JSON.stringify({ url: req.url, items: Array.from({ length: 200 }, (_, i) => ({ i, s: 'x'.repeat(i % 17 + n) })) });
	res.writeHead(200, { 'Content-Type': 'application/json' });
	res.end(body);
});
server.listen(port, '127.0.0.1', () => console.log('listening ' + port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
EOF
	"${PRE[@]}" node "$TMP/server.js" $PORT >"$TMP/$1.out" 2>"$TMP/$1.err" &
	SJOB=$!
}
node_ready() { until_in 60 "$TMP/$1.out" "listening" && SPID=$(pgrep -g $SJOB -x node); }
node_load() { ab -q -n 3000 -c 4 "http://127.0.0.1:$PORT/abc/def"; }
node_stop() { kill -TERM ${SPID:-$SJOB}; wait_bounded 60 "$1 stop" $SJOB; }
node_norm() { grep -E "^(Complete requests|Failed requests|Non-2xx|Document Length)"; }
rw_node() {
	command -v node >/dev/null && command -v ab >/dev/null || skip "no node or ab (packages nodejs, apache2-utils)"
	server_row node "$1" node_start node_ready node_load node_stop node_norm
}

# PostgreSQL (as the user postgres), with pgbench -C: a connection, so a backend, a transaction.
PG_BIN=/usr/lib/postgresql/15/bin
pg_start() {
	PORT=$(free_port)
	if [ ! -d "$RWDIR/pgdata" ]; then
		install -d -o postgres -g postgres "$RWDIR/pgdata" "$RWDIR/pgsock"
		setpriv --reuid postgres --regid postgres --init-groups $PG_BIN/initdb -D "$RWDIR/pgdata" -A trust -U postgres >"$TMP/initdb.log" 2>&1 ||
			{ cat "$TMP/initdb.log"; die "initdb"; }
	fi
	"${PRE[@]}" setpriv --reuid postgres --regid postgres --init-groups $PG_BIN/postgres -D "$RWDIR/pgdata" -p $PORT \
		-k "$RWDIR/pgsock" -c listen_addresses='' -c fsync=off >"$TMP/$1.out" 2>"$TMP/$1.err" &
	SJOB=$!
}
pg_ready() {
	local i
	for i in $(seq 1200); do
		$PG_BIN/pg_isready -q -h "$RWDIR/pgsock" -p $PORT && break
		sleep 0.05
	done
	$PG_BIN/pg_isready -q -h "$RWDIR/pgsock" -p $PORT || return 1
	SPID=$(head -1 "$RWDIR/pgdata/postmaster.pid")
	if [ ! -f "$RWDIR/pg.init" ]; then
		$PG_BIN/pgbench -i -s 1 -q -h "$RWDIR/pgsock" -p $PORT -U postgres postgres >"$TMP/pginit.log" 2>&1 ||
			{ cat "$TMP/pginit.log"; return 1; }
		touch "$RWDIR/pg.init"
	fi
}
pg_load() { $PG_BIN/pgbench -C -c 4 -t 100 -h "$RWDIR/pgsock" -p $PORT -U postgres postgres 2>&1; }
pg_stop() {
	kill -INT $SPID 2>/dev/null
	wait_bounded 120 "$1 stop" $SJOB
}
pg_norm() { grep -E "^number of (transactions actually processed|failed transactions)|error|FATAL" | sed 's/ (.*//'; }
rw_postgres() {
	[ -x $PG_BIN/postgres ] && [ -x $PG_BIN/pgbench ] && id postgres >/dev/null 2>&1 ||
		skip "no PostgreSQL 15 with pgbench and its user (packages postgresql, postgresql-contrib)"
	server_row postgres "$1" pg_start pg_ready pg_load pg_stop pg_norm
	# Each of pgbench's 400 connections is a backend the postmaster forked: each recorded, with
	# its allocations (launched, ~375 a backend; at least 100 asked for).
	local n a
	n=$("$A" info "$TMP/postgres.$1.hsnap" 2>/dev/null | awk '/^Processes:/ { print $2 }')
	a=$(allocs "$TMP/postgres.$1.hsnap")
	res figures "${a:-0} recorded in ${n:-0} processes"
	[ "${n:-0}" -gt 400 ] || { res status HARMED; die "postgres $1: ${n:-0} processes recorded, not the postmaster and its 400 backends"; }
	[ "${a:-0}" -ge $((100 * 400)) ] ||
		{ res status HARMED; die "postgres $1: ${a:-0} allocations in ${n} processes: the backends' allocations are not recorded"; }
	return 0
}

# ---- chromium --headless --dump-dom: its own allocator (PartitionAlloc), so BPF and preload
# (where the recorder names the executables it cannot hook) ----
chromium_norm() { cat; }
rw_chromium() {
	command -v chromium >/dev/null || skip "no chromium"
	cat >"$TMP/page.html" <<'EOF'
<!doctype html><html><head><title>t</title></head><body><ul id="l"></ul>
<script>
const l = document.getElementById('l');
for (let i = 0; i < 500; i++) { const e = document.createElement('li'); e.textContent = 'item ' + i * 7 % 101; l.appendChild(e); }
document.title = 'done ' + l.children.length;
</script></body></html>
EOF
	mkdir -p "$TMP/chr"
	short_row chromium "$1" no chromium_norm chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$TMP/chr" --dump-dom "file://$TMP/page.html"
	# Preloaded, the recorder names the executable whose malloc is its own (what it records is
	# the rest: the wrapper script's shell and its commands).
	[ "$1" = launched ] && { contains "$TMP/chromium.launched.rerr" "defines malloc itself"; res note "chromium's own malloc not hooked, named by the recorder"; }
	return 0
}

# ---- the matrix ----

ROWS="rg@launched rg@attached rg@bpf sqlite3@launched sqlite3@attached sqlite3@bpf git@launched git@attached git@bpf
	redis@launched redis@attached redis@bpf node@launched node@attached node@bpf
	postgres@launched postgres@attached postgres@bpf chromium@launched chromium@bpf
	python3@launched python3@attached python3@bpf"
RWDIR=$TMP/shared
mkdir -p "$RWDIR"
chmod 755 "$RWDIR"

row() {
	local rc prog=${1%@*} way=${1#*@} status
	ROW=$1
	[ -n "$ONLY" ] && [[ "$1" != *"$ONLY"* ]] && return
	[ "$way" != launched ] && [ "$(id -u)" != 0 ] && { echo "SKIP $1: not root"; SKIP=$((SKIP + 1)); echo "$1|SKIP|-|-|not root" >>"$TMP/table"; return; }
	: >"$TMP/$1.res"
	(set -u; set -m; ROW=$1; "rw_$prog" "$way") >"$TMP/$1.log" 2>&1
	rc=$?
	status=$(awk -F= '$1 == "status" { s = $2 } END { print s }' "$TMP/$1.res")
	local out=$(awk -F= '$1 == "output" { s = $2 } END { print s }' "$TMP/$1.res")
	local fig=$(awk -F= '$1 == "figures" { s = $2 } END { print s }' "$TMP/$1.res")
	local note=$(awk -F= '$1 == "note" { s = $2 } END { print s }' "$TMP/$1.res")
	case $rc in
	0) PASS=$((PASS + 1)); echo "PASS $1"; status=ok ;;
	77) SKIP=$((SKIP + 1)); status=SKIP; note=$(grep -m1 '^SKIP:' "$TMP/$1.log" | cut -c7-); echo "SKIP $1: $note" ;;
	*) FAIL=$((FAIL + 1)); [ "$status" = ok ] || [ -z "$status" ] && status=FAILED
	   note="${note:+$note; }$(grep -m1 '^FAILED:' "$TMP/$1.log" | cut -c9-)"
	   [ -n "${KNOWN[$1]:-}" ] && note="known: ${KNOWN[$1]}; $note"
	   echo "FAIL $1 ($status)"; sed 's/^/    /' "$TMP/$1.log" | tail -60 ;;
	esac
	echo "$1|$status|${out:--}|${fig:--}|$note" >>"$TMP/table"
	[ -n "${REALWORLD_KEEP:-}" ] && cp "$TMP/$1.log" "$REALWORLD_KEEP/" 2>/dev/null
	return 0
}

: >"$TMP/table"
for r in $ROWS; do
	[ -n "$ONLY" ] && [[ "$r" != *"$ONLY"* ]] && continue
	case $r in *@bpf) [ -f "$TMP/probe.log" ] || bpf_check; [ -n "$BPF_REASON" ] && { echo "SKIP $r: $BPF_REASON"; SKIP=$((SKIP + 1)); echo "$r|SKIP|-|-|$BPF_REASON" >>"$TMP/table"; continue; } ;; esac
	row $r
done

echo
echo "Real-program matrix, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), heapsnap $(git describe --always --dirty 2>/dev/null)"
echo
echo "| program | way in | result | output equal | allocations: heapsnap/heaptrack=ratio | note |"
echo "|---|---|---|---|---|---|"
awk -F'|' '{ split($1, p, "@"); printf "| %s | %s | %s | %s | %s | %s |\n", p[1], p[2], $2, $3, $4, $5 }' "$TMP/table"
echo
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ $FAIL -eq 0 ]
