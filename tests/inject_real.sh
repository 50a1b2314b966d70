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

# real_detach NAME PID ROUND [PRELOADED]: stops the recorder (Ctrl-C); the process lives on, with
# no GOT entry of any module left pointing at the library or the stub (or, for a process whose
# executable PRELOADED was launched with the library preloaded, its malloc entry still at the
# library, as before the attach), and the file is readable.
real_detach() {
	local name=$1 pid=$2 i=$3
	kill -INT $RPID
	wait $RPID || { RPID=; cat "$TMP/$name$i.rerr"; die "$name: the recorder failed (attach $i)"; }
	RPID=
	kill -0 "$pid" 2>/dev/null || die "$name: the target died during attach $i"
	if [ -n "${4:-}" ]; then
		eq "$name: GOT entry of malloc after detach $i, preloaded" libheapsnap "$(python3 tests/gotvalue.py "$pid" "$4" malloc)"
	else
		eq "$name: GOT entries after detach $i" clean "$(python3 tests/gotvalue.py "$pid" --all)"
	fi
	"$A" info "$TMP/$name$i.hsnap" >/dev/null 2>&1 || die "$name: recording $i unreadable"
}

# real_interp NAME INTERPRETER SCRIPT EXECUTABLE SIZE: the script's (tests/workloads/real_alloc.*)
# keep_blocks allocate SIZE bytes each; four attaches, every event then sampled in turn.
real_interp() {
	local name=$1 interp=$2 script=$3 exe=$4 size=$5 i n=0 len=$(($5 - ${6:-0}))
	fifo_target $name "$interp" "$script"
	REAL_PIDS=$TJOB
	trap real_cleanup EXIT
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
	# Each attach names its Python frames: the third's recorder was sent no name the first's
	# was (its code objects are named anew each session, from id 1).
	local i
	for i in 1 3; do
		"$A" collapsed "$TMP/rpy$i.hsnap" >"$TMP/rpy$i.folded" 2>/dev/null || die "rpy: collapsed $i"
		grep -q ";keep_blocks (real_alloc.py);" "$TMP/rpy$i.folded" ||
			{ grep keep "$TMP/rpy$i.folded" | head -3; die "rpy: attach $i names no Python frame keep_blocks (real_alloc.py)"; }
	done
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
	fifo_target cpl "$T/canon_plt"
	REAL_PIDS=$TJOB
	trap real_cleanup EXIT
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
	fifo_target lal "$T/linked_alloc"
	REAL_PIDS=$TJOB
	trap real_cleanup EXIT
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

# mc_ask PORT: one set and get through memcached's text protocol; prints its answer's lines.
mc_ask() {
	local reply
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'set hs 0 0 5\r\nhello\r\nget hs\r\nquit\r\n' >&3
	reply=$(timeout 10 cat <&3 | tr -d '\r' | tr '\n' ' ')
	exec 3<&-
	echo "$reply"
}

# mc_store PORT SIZE: stores a value of SIZE bytes under key bigSIZE; prints memcached's reply.
# A size of a slab class no item used yet makes memcached malloc a slab page for it.
mc_store() {
	local reply
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	{ printf 'set big%s 0 0 %s\r\n' "$2" "$2"; head -c "$2" /dev/zero | tr '\0' x; printf '\r\nquit\r\n'; } >&3
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
		# A connection's buffers are reused from earlier ones (memcached keeps them per
		# thread); a value of a slab class not used yet is a malloc of a slab page.
		eq "memcached stores a value of a new size ($i)" "STORED " "$(mc_store $port $((40000 * i * i)))"
		kill -INT $RPID
		wait $RPID || { cat "$TMP/mc$i.rerr"; kill $mpid; die "memcached: the recorder failed ($i)"; }
		n=$("$A" stats --json "$TMP/mc$i.hsnap" | grep -o '"events.alloc":[0-9]*' | cut -d: -f2)
		[ "${n:-0}" -gt 0 ] || { kill $mpid; die "memcached: nothing recorded of a new slab ($i)"; }
		"$A" info "$TMP/mc$i.hsnap" >/dev/null 2>&1 || { kill $mpid; die "memcached: recording $i unreadable"; }
		eq "memcached answers after the detach ($i)" "STORED VALUE hs 0 5 hello END " "$(mc_ask $port)"
	done
	kill $mpid; wait $mpid 2>/dev/null
	return 0
}

# Sampled at 256 KiB, blocks are placed on the library's own pages, laid out as glibc's mmapped
# chunks (libheapsnap/pool.c): once the library has detached, glibc must realloc
# (remapping them, a shrink in place) and free them itself, and so in a later session, which
# takes them for glibc's: one at 64 KiB, which keeps its samples in the table and must record
# no free of them, then one at 256 KiB again, whose pool must be whole
# (tests/workloads/pool_detach.c checks every byte). glibc's own count of mmapped bytes
# (mallinfo2) at the first round says the pool held blocks: glibc mmaps blocks of 1 MiB
# itself, and alone would count all 16.
t_inject_pool_detach() {
	need_inject; need_go
	local i k m p v rate
	fifo_target pd "$T/pool_detach"
	REAL_PIDS=$TJOB
	trap real_cleanup EXIT
	for i in 1 2 3 4; do
		k=$((2 * i - 1))
		rate=256k; [ $i = 3 ] && rate=64k
		real_attach pd $TPID $i -s $rate
		if [ $i -ge 3 ]; then # the session before's blocks
			echo keep >"$TMP/pd.fifo"
			waitfor "$TMP/pd.out" "released $((k - 1))" || { cat "$TMP/pd.terr"; die "pd: round $((k - 1)) in session $i"; }
		fi
		echo keep >"$TMP/pd.fifo"
		waitfor "$TMP/pd.out" "kept $k mmapped" || { cat "$TMP/pd.terr"; die "pd: no answer to keep, attach $i"; }
		real_detach pd $TPID $i
		p=$TMP/pd$i.pb.gz
		"$A" pprof -o "$p" "$TMP/pd$i.hsnap" 2>/dev/null || die "pd: pprof $i"
		within "pd: pool_keep inuse_space (16 x 1 MiB, estimated), attach $i at $rate" 16777216 "$(pv $p inuse_space pool_keep)" 25
		v=$("$A" stats "$TMP/pd$i.hsnap" 2>/dev/null | awk '$1 == "frees.unknown" { print $2 }')
		eq "pd: frees of blocks not of session $i recorded" 0 "$v"
		[ $i = 2 ] || [ $i = 3 ] && continue # released in the next session
		echo keep >"$TMP/pd.fifo"
		waitfor "$TMP/pd.out" "released $((k + 1))" || { cat "$TMP/pd.terr"; die "pd: glibc's realloc and free after detach $i"; }
	done
	m=$(awk '$1 == "kept" { print $4 }' "$TMP/pd.out" | head -1)
	[ -n "$m" ] && [ "$m" -lt 16777216 ] || die "pd: glibc counted ${m:-nothing} bytes mmapped with 16 MiB kept: the pool held none of it"
	echo exit >"$TMP/pd.fifo"
	wait $TJOB; eq "pd: the target's own exit status" 9 $?
	REAL_PIDS=
	[ -s "$TMP/pd.terr" ] && { cat "$TMP/pd.terr"; die "pd: the target wrote to stderr"; }
	eq "pd: the target's stdout" "ready $TPID kept 1 released 2 kept 3 released 4 kept 5 released 6 kept 7 released 8" \
		"$(sed 's/ mmapped [0-9]*//' "$TMP/pd.out" | tr '\n' ' ' | sed 's/ $//')"
}

# Countdowns that outlive their session (tests/workloads/stale_countdown.cc): three threads',
# drawn at 1 GiB in a sampled session that then detaches, are far from run out when an attach
# that records every event follows. No thread's countdown can be reset from another, so the
# calls that pass it must be recorded all the same: malloc's and calloc's pass-bys jump to
# their full paths, and operator new's is gated off (hs_hot.pass, passing).
t_inject_stale_countdown() {
	need_inject; need_go
	local i p
	fifo_target sc "$T/stale_countdown"
	REAL_PIDS=$TJOB
	trap real_cleanup EXIT
	for i in 1 2; do
		if [ $i = 1 ]; then real_attach sc $TPID $i -s 1g; else real_attach sc $TPID $i -s 0; fi
		echo keep >"$TMP/sc.fifo"
		waitfor "$TMP/sc.out" "round $i" || { cat "$TMP/sc.terr"; die "sc: no round $i in session $i"; }
		real_detach sc $TPID $i
	done
	echo exit >"$TMP/sc.fifo"
	wait $TJOB; eq "sc: the target's own exit status" 6 $?
	REAL_PIDS=
	p=$TMP/sc2.pb.gz
	"$A" pprof -o "$p" "$TMP/sc2.hsnap" 2>/dev/null || die "sc: pprof"
	eq "sc: stale_malloc inuse_space, every event" 5000 "$(pv $p inuse_space stale_malloc)"
	eq "sc: stale_malloc inuse_objects" 5 "$(pv $p inuse_objects stale_malloc)"
	eq "sc: stale_calloc inuse_space" 1500 "$(pv $p inuse_space stale_calloc)"
	eq "sc: stale_calloc inuse_objects" 3 "$(pv $p inuse_objects stale_calloc)"
	eq "sc: stale_new inuse_space" 1000 "$(pv $p inuse_space stale_new)"
	eq "sc: stale_new inuse_objects" 4 "$(pv $p inuse_objects stale_new)"
	[ -s "$TMP/sc.terr" ] && { cat "$TMP/sc.terr"; die "sc: the target wrote to stderr"; }
	eq "sc: the target's stdout" "ready $TPID round 1 round 2" "$(tr '\n' ' ' <"$TMP/sc.out" | sed 's/ $//')"
}

# A process launched preloaded (sampled at 1 GiB) outlives its recording (--duration, whose
# recorder then waits for it), and is attached twice (tests/workloads/dormant_countdown.c). Its
# library learns that the recording ended only at its next event, which at 1 GiB may be
# minutes away: the first attach must take the place of the ended session, not refuse it as
# recording still (the recorder then fell back to uprobes), and its rings must be read (20 GiB
# allocated while attached: 2 samples or more). Each detach leaves the preloaded hooks where
# they were. Between the two attaches, dormant, the hooks pass 20 GiB of calls on unrecorded:
# the main thread's countdown must not run down meanwhile to the size of those calls and stay
# there, or the second session, keeping a countdown drawn at its rate, samples the first such
# call (dormant_probe), which no countdown drawn at 1 GiB does.
t_inject_after_preload() {
	need_inject; need_go
	local i p pid
	TPID=
	mkfifo "$TMP/dc.fifo"
	"$R" --via preload -s 1g --duration 1 -o "$TMP/dc1.hsnap" -- "$T/dormant_countdown" "$TMP/dc.fifo" \
		>"$TMP/dc.out" 2>"$TMP/dc1.rerr" &
	LPID=$! # once the recording ends it waits for its command, deaf to signals: the target is killed
	REAL_PIDS=
	trap 'real_cleanup; [ -n "${TPID:-}" ] && kill $TPID 2>/dev/null' EXIT
	waitfor "$TMP/dc.out" ready || { kill $LPID; die "dc: the target never said ready"; }
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/dc.out")
	waitfor "$TMP/dc1.rerr" "wrote $TMP/dc1.hsnap" || { cat "$TMP/dc1.rerr"; die "dc: --duration 1 never ended the recording"; }
	kill -0 "$TPID" 2>/dev/null || die "dc: the target ended with its recording"
	eq "dc: GOT entry of malloc, preloaded" libheapsnap "$(python3 tests/gotvalue.py $TPID "$T/dormant_countdown" malloc)"
	for i in 2 3; do
		real_attach dc $TPID $i -s 1g
		echo keep >"$TMP/dc.fifo" # round 1, a spend, then round 3, the probe
		waitfor "$TMP/dc.out" "round $((2 * i - 3))" || die "dc: no round $((2 * i - 3)) in session $i"
		real_detach dc $TPID $i "$T/dormant_countdown"
		if [ $i = 2 ]; then # round 2, the spend, dormant
			echo keep >"$TMP/dc.fifo"
			waitfor "$TMP/dc.out" "round 2" || die "dc: no round 2 after detach 2"
		fi
	done
	echo exit >"$TMP/dc.fifo"
	wait $LPID; eq "dc: the target's own exit status, through its launching recorder" 7 $?
	pid=$TPID
	TPID=
	eq "dc: the target's stdout" "ready $pid round 1 round 2 round 3" \
		"$(tr '\n' ' ' <"$TMP/dc.out" | sed 's/ $//')"
	for i in 2 3; do "$A" pprof -o "$TMP/dc$i.pb.gz" "$TMP/dc$i.hsnap" 2>/dev/null || die "dc: pprof $i"; done
	p=$(pv "$TMP/dc2.pb.gz" alloc_objects dormant_spend)
	[ "$p" != absent ] && [ "$p" -gt 0 ] || die "dc: session 2 sampled nothing of 20 GiB at 1 GiB ($p): its rings were not read"
	eq "dc: dormant_probe's block sampled at 1 GiB" absent "$(pv "$TMP/dc3.pb.gz" alloc_objects dormant_probe)"
}

ALL="$ALL t_inject_after_preload"
ALL="$ALL t_inject_real_python t_inject_real_node t_inject_real_canon_plt t_inject_real_linked_alloc t_inject_pool_detach"
ALL="$ALL t_inject_stale_countdown"
ALL="$ALL t_inject_real_redis t_inject_real_nginx t_inject_memcached_idle"

# An idle PostgreSQL 15 postmaster (Debian's) sleeps in select() between connections, up to a
# minute at a time, and calls nothing through a GOT meanwhile: it is injected from that wait,
# in process, long before --attach-timeout (it waited 10 s out and fell back to BPF, 0
# allocations recorded). A connection's backend, forked while attached, is recorded; the
# detach leaves every GOT entry as it was; the server answers throughout.
PG_DIR=
pg_cleanup() {
	[ -n "$PG_DIR" ] || return 0
	su postgres -s /bin/sh -c "/usr/lib/postgresql/15/bin/pg_ctl -D $PG_DIR/data -m immediate stop" >/dev/null 2>&1
	rm -rf "$PG_DIR"
	return 0
}

# From / : psql, run as postgres, says it cannot enter a checkout only its owner may (a clone
# in a mktemp -d directory, mode 0700), and its answer carries the complaint.
pg_ask() {
	(cd / && su postgres -s /bin/sh -c "/usr/lib/postgresql/15/bin/psql -h $PG_DIR -p $1 -Atc 'select 6 * 7' postgres" 2>&1)
}

t_inject_real_postgres() {
	need_inject
	local bin=/usr/lib/postgresql/15/bin port=$((20000 + RANDOM % 20000)) pm i n
	[ -x $bin/postgres ] || skip "no PostgreSQL 15 in $bin"
	id postgres >/dev/null 2>&1 || skip "no user postgres"
	PG_DIR=$(mktemp -d /tmp/heapsnap-pg.XXXXXX) || die "mktemp"
	trap 'kill ${RPID:-} 2>/dev/null; pg_cleanup' EXIT
	chown postgres "$PG_DIR"; chmod 755 "$PG_DIR"
	su postgres -s /bin/sh -c "$bin/initdb -D $PG_DIR/data" >"$TMP/pg.init" 2>&1 || { cat "$TMP/pg.init"; die "initdb"; }
	su postgres -s /bin/sh -c "$bin/pg_ctl -D $PG_DIR/data -o '-p $port -k $PG_DIR -c listen_addresses=' -l $PG_DIR/log -w start" \
		>"$TMP/pg.start" 2>&1 || { cat "$TMP/pg.start" "$PG_DIR/log"; die "pg_ctl start"; }
	pm=$(head -1 "$PG_DIR/data/postmaster.pid")
	eq "postgres answers" 42 "$(pg_ask $port)"
	for i in 1 2; do
		# Idle again once the last connection's backend is gone: in select() (pselect6).
		for n in $(seq 200); do grep -qE '^(23|270) ' /proc/$pm/syscall && break; sleep 0.05; done
		"$R" -v -p $pm -s 0 --attach-timeout 5s -o "$TMP/pg$i.hsnap" >/dev/null 2>"$TMP/pg$i.rerr" &
		RPID=$!
		waitfor "$TMP/pg$i.rerr" "attached to $pm" || { cat "$TMP/pg$i.rerr"; die "postgres: attach $i never happened"; }
		contains "$TMP/pg$i.rerr" "recording via inject"
		contains "$TMP/pg$i.rerr" "idle in system call"
		eq "postgres answers while attached ($i)" 42 "$(pg_ask $port)"
		kill -INT $RPID
		wait $RPID || { RPID=; cat "$TMP/pg$i.rerr"; die "postgres: the recorder failed ($i)"; }
		RPID=
		n=$("$A" stats --json "$TMP/pg$i.hsnap" | grep -o '"events.alloc":[0-9]*' | cut -d: -f2)
		[ "${n:-0}" -gt 0 ] || die "postgres: nothing of a connection's backend recorded ($i)"
		eq "postgres: GOT entries after detach $i" clean "$(python3 tests/gotvalue.py $pm --all)"
		eq "postgres answers after the detach ($i)" 42 "$(pg_ask $port)"
	done
	return 0
}
ALL="$ALL t_inject_real_postgres"
