# Injection into a running process (-p, --via inject, recorder/inject/): the attach, its
# refusals, detaching, the stub and the session. Real programs are in tests/inject_real.sh;
# inject_start and inject_finish in tests/lib.sh.

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
# injected_maps PID: whether anything of an injection is mapped in PID: the library, or the
# memory shared with the recorder. Not a match on "heapsnap" alone: a checkout's own path may
# hold it, and the target's executable lies in the checkout.
injected_maps() { grep -qE 'libheapsnap[^/]*\.so|/memfd:' "/proc/$1/maps"; }

t_inject_refusals() {
	need_inject; need_go
	fifo_target sc "$T/alloc_c" seccomp
	"$R" --via inject -p $TPID -o "$TMP/sc0.hsnap" 2>"$TMP/sc0.err"; eq "--via inject under seccomp: exit" 1 $?
	contains "$TMP/sc0.err" "cannot inject into process $TPID: the target's seccomp filter would kill the process on memfd_create()"
	[ -e "$TMP/sc0.hsnap" ] && die "a refused injection left a file"
	injected_maps $TPID && die "a refused injection mapped something into the target"
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
	fifo_target tr "$T/alloc_c" inject
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
	injected_maps $TPID && die "a refused injection mapped something into the target"
	echo go >"$TMP/tr.fifo"; wait $TJOB; eq "traced target's exit status" 7 $?
	[ -s "$TMP/tr.terr" ] && die "the refused target wrote to stderr"
	# An idle process blocked in open() of its FIFO (no call through a GOT at all, allocator or
	# other): no safe point to load at, so the trampoline is taken out again; auto then records
	# with BPF. One that idles in calls such as poll is injected (t_inject_idle_safe_point).
	fifo_target idle "$T/alloc_c" wait
	"$R" --via inject -p $TPID --attach-timeout 0.5 -o "$TMP/idle.hsnap" 2>"$TMP/idle.err"; eq "--via inject, idle: exit" 1 $?
	contains "$TMP/idle.err" "process $TPID made no allocator call in 0.5 s"
	eq "GOT entry of malloc after an injection that timed out" libc "$(python3 tests/gotvalue.py $TPID "$T/alloc_c" malloc)"
	injected_maps $TPID && die "the library was loaded into the idle process"
	echo go >"$TMP/idle.fifo"; wait $TJOB; eq "idle target's exit status" 0 $?
	[ -s "$TMP/idle.terr" ] && die "the idle target wrote to stderr"
	return 0
}

# Twenty attaches and detaches to one busy process, sampled as in production; it then ends
# with its own status and every GOT entry back.
t_inject_repeat() {
	need_inject; need_go
	local i
	fifo_target rep "$T/alloc_c" inject
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

# ---- injection: the stub and the session (issue 23) ----

# wake_run NAME [RECORDER OPTIONS]: wake (tests/workloads/wake.c) attached to while asleep in
# read(), then woken; the recording stopped with the process still alive (it holds the stub's
# counts), then the process let go. WAKE_MODE, if set, is wake's mode (poll, dlopen). Sets
# W_MAIN, W_THR, W_DL (blocks recorded from each function), W_LOST
# (lost.inject_unhooked_calls) and W_HELD (inject.calls_held).
wake_run() {
	local name=$1 p rc
	shift
	fifo_target $name "$T/wake" ${WAKE_MODE:+"$WAKE_MODE"}
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
# went by are counted, each one. Whether any call meets the hooks still loading is the
# scheduler's to say: a woken thread descheduled while the loader runs (a busy machine) finds
# them in place at its first call, and then none waits and none goes by. The accounting is
# checked on every run, and a run is repeated (up to 5) until calls met the loading.
t_inject_wake() {
	need_inject; need_go
	local i
	for i in 1 2 3 4 5; do
		wake_run wk$i
		eq "wk$i: every allocation recorded or counted" 2000 $((W_MAIN + W_THR + W_LOST))
		[ "$W_MAIN" -le 1000 ] && [ "$W_THR" -le 1000 ] || die "wk$i: more recorded than made"
		[ "$W_HELD" -ge 1 ] && break
	done
	[ "$W_HELD" -ge 1 ] || die "wk: no call waited for the hooks in 5 runs"
	"$A" info "$TMP/wk$i.hsnap" >"$TMP/wk.info" || die "wk: info"
	"$A" stats "$TMP/wk$i.hsnap" >"$TMP/wk.stats.txt" || die "wk: stats"
	contains "$TMP/wk.stats.txt" "lost.inject_unhooked_calls"
	for i in 1 2 3 4 5; do
		wake_run wk0$i --attach-hold 0
		eq "wk0$i: every allocation recorded or counted" 2000 $((W_MAIN + W_THR + W_LOST))
		[ "$W_HELD" = 0 ] || die "wk0$i: $W_HELD calls waited with --attach-hold 0"
		[ "$W_LOST" -ge 1 ] && break
	done
	[ "$W_LOST" -ge 1 ] || die "wk0: nothing waited, yet nothing went by, in 5 runs"
	"$A" top "$TMP/wk0$i.hsnap" >/dev/null 2>"$TMP/wk0.top.err"
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
	# A zombie: a parent that never waits for the child it forked, which exits at once. (A
	# shell's background child left to an exec'd sleep was reaped by the shell itself when
	# it had already exited before the exec, under load.)
	python3 -c 'import os, time
pid = os.fork()
if pid == 0:
    os._exit(0)
print(pid, flush=True)
time.sleep(60)' >"$TMP/z.out" &
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

# A target that exits while the trampoline waits for its first allocator call (a Python loop
# of pymalloc's objects alone), its parent never reaping it: a zombie, whose memory is gone
# though kill(PID, 0) still finds it. Said as an exit during the injection, with no fallback
# to BPF for a process that is gone; exit status 1.
t_inject_exit_unreaped() {
	need_inject
	[ -x /usr/bin/python3 ] || skip "no Debian python3"
	local z zp rc
	/usr/bin/python3 -c 'import os, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, b"x")
    t = time.monotonic()
    while time.monotonic() - t < 3:
        d = {"a": 1}
    os._exit(0)
os.read(r, 1)
print(pid, flush=True)
time.sleep(60)' >"$TMP/zx.out" &
	zp=$!
	waitfor "$TMP/zx.out" "" || die "no child"
	z=$(head -1 "$TMP/zx.out")
	"$R" --via inject -p "$z" -o "$TMP/zx.hsnap" 2>"$TMP/zx.err"; rc=$?
	grep -q "^State:.*Z" /proc/$z/status || { kill $zp; die "the child is not a zombie at the end"; }
	kill $zp; wait $zp 2>/dev/null
	eq "-p of a target that exits unreaped: exit" 1 $rc
	contains "$TMP/zx.err" "cannot inject into process $z: process $z exited during the injection"
	grep -q "BPF uprobes instead\|reading the stub" "$TMP/zx.err" && { cat "$TMP/zx.err"; die "not said as an exit"; }
	return 0
}
ALL="$ALL t_inject_exit_unreaped"

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

# Threads of a target in another PID namespace, made and gone by the thousand, each with more
# events than there are threads (threadchurn 3000 4 with 200 temporary blocks each): their
# tids are the namespace's, made this one's by the recorder, and a thread's events are mostly
# read after it exited. A gone thread looked up again at each of its events kept the recorder
# so late that the target's threads waited their 2 s for a ring and stopped recording
# (lost.processes_stopped); now every block is recorded, every free with it.
t_inject_pid_ns_threads() {
	need_inject; need_go
	command -v unshare >/dev/null && command -v setpriv >/dev/null || skip "no unshare or setpriv (util-linux)"
	unshare -fpm --mount-proc true 2>/dev/null || skip "cannot make a PID namespace here"
	local n=3000 temp=200 frees
	unpriv_bin
	cp "$T/threadchurn" "$TMP/ub/"; chmod o+rx "$TMP/ub/threadchurn"
	mkfifo "$TMP/pnt.fifo"; chmod 666 "$TMP/pnt.fifo"
	unshare -fpm --mount-proc setpriv --reuid=65534 --regid=65534 --clear-groups "$TMP/ub/threadchurn" $n 4 \
		"$TMP/pnt.fifo" $temp >"$TMP/pnt.out" 2>"$TMP/pnt.terr" &
	TJOB=$!
	waitfor "$TMP/pnt.out" ready || die "pnt: the target never said ready"
	TPID=$(awk '{ print $1 }' /proc/$TJOB/task/$TJOB/children)
	"$R" -v -p "$TPID" -s 0 -o "$TMP/pnt.hsnap" >/dev/null 2>"$TMP/pnt.rerr" &
	RPID=$!
	waitfor "$TMP/pnt.rerr" "attached to $TPID" || { cat "$TMP/pnt.rerr"; die "pnt: never attached"; }
	contains "$TMP/pnt.rerr" "process $TPID is in another PID namespace"
	echo go >"$TMP/pnt.fifo"
	wait $TJOB || die "pnt: the target's exit status $?"
	wait $RPID || { cat "$TMP/pnt.rerr"; die "pnt: the recorder failed"; }
	churn_check pnt "$TMP/pnt.hsnap" $n
	"$A" pprof -o "$TMP/pnt.pb.gz" "$TMP/pnt.hsnap" 2>/dev/null || die "pnt: pprof"
	eq "pnt: churn_temp alloc_objects" $((n * temp)) "$(pv "$TMP/pnt.pb.gz" alloc_objects churn_temp)"
	frees=$(pv "$TMP/pnt.pb.gz" inuse_objects churn_temp)
	[ "$frees" = absent ] || die "pnt: churn_temp blocks live at the end: $frees (each was freed)"
}
ALL="$ALL t_inject_pid_ns_threads"

# A process that calls no allocator while it idles (wake poll: poll() on a FIFO every 20 ms) is
# injected at one of its other calls through the GOT, which only starts the loader and is put
# back once the hooks are in; what it allocates when woken is then all recorded, exactly.
t_inject_idle_safe_point() {
	need_inject; need_go
	local rc p=$TMP/sp.pb.gz lost
	fifo_target sp "$T/wake" poll
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

# ---- the allocator table (common/allocators.def) ----

# libc_alloc (tests/workloads/libc_alloc.c) calls __libc_malloc and __libc_free, which the table
# lists: their exact figures by each way in, next to plain malloc's.
t_inject_alloctab_libc_malloc() {
	need_inject; need_go
	RARGS="--via inject -s 0" inject_start alti "$T/libc_alloc"
	inject_finish alti 0
	grep -q "BPF uprobes instead" "$TMP/alti.rerr" && { cat "$TMP/alti.rerr"; die "not injected"; }
	alloctab_check alti
}

# ---- a process tree: --children ----

# Injected, a process's fork children made after the attach are recorded in process, from
# their first allocation (forktree's new children allocate at once after fork and exit); the
# children already running are left out, and said with their number. --children, with none
# running, injects as before; with some, injection cannot reach them: --via inject refuses,
# naming their number (no file made), and --via auto records the tree with BPF.
t_inject_children() {
	need_inject
	local rc
	tree_run ich 2 3 --via inject
	grep -q "BPF uprobes instead" "$TMP/ich.rerr" && { cat "$TMP/ich.rerr"; die "ich: not injected"; }
	contains "$TMP/ich.rerr" "process $TPID has 2 child processes running (its descendants), not recorded: add --children to record them too"
	tree_check ich no
	tree_run ich0 0 4 --via inject --children
	grep -q "BPF uprobes instead" "$TMP/ich0.rerr" && { cat "$TMP/ich0.rerr"; die "ich0: not injected"; }
	"$A" info "$TMP/ich0.hsnap" 2>/dev/null | grep -q "^Recorded via inject" || die "ich0: not recorded via inject"
	tree_check ich0 no
	fifo_target ichr "$T/forktree" 2 1
	"$R" --via inject -p "$TPID" --children -o "$TMP/ichr.hsnap" >/dev/null 2>"$TMP/ichr.rerr" &
	RPID=$!
	# Refused at once; one that attached instead ends with the target.
	waitfor "$TMP/ichr.rerr" "heapsnap-record: " || { kill $RPID; die "ichr: the recorder said nothing"; }
	echo go >"$TMP/ichr.fifo"; wait $TJOB
	wait $RPID; rc=$?
	eq "ichr: --via inject --children with children running: exit status" 1 $rc
	contains "$TMP/ichr.rerr" "--via inject --children: process $TPID has 2 child processes running"
	[ -e "$TMP/ichr.hsnap" ] && die "ichr: a file was made"
	[ -z "$BPF_REASON" ] || skip "$BPF_REASON (the rest records with BPF)"
	tree_run icha 2 3 --children
	"$A" info "$TMP/icha.hsnap" 2>/dev/null | grep -q "^Recorded via bpf: --children" || { "$A" info "$TMP/icha.hsnap" | head -5; die "icha: not recorded via bpf for --children"; }
	tree_check icha yes
}

ALL="$ALL t_inject_threads t_inject_cxx t_inject_other_user t_inject_mount_ns t_inject_refusals"
ALL="$ALL t_inject_repeat t_inject_killed_recorder t_inject_auto_nofp t_inject_thread_churn t_inject_wake"
ALL="$ALL t_inject_hold_in_dlopen t_inject_messages t_inject_pid_ns t_inject_idle_safe_point"
ALL="$ALL t_inject_alloctab_libc_malloc"
ALL="$ALL t_inject_children"

# ---- attaching within milliseconds (issue 23, finding 3; tests/workloads/attach_shapes.c) ----

# shape_after_gate NAME I: the memory's descriptor in TPID at a high number (hs_fd_high: 1000,
# or 128 under a lower soft RLIMIT_NOFILE), moved there after the gate opened: a number past
# the descriptor table's size grows it, and in a process with threads the kernel waits an RCU
# grace period for that (5 to 15 ms), which the held calls waited too. The loader thread was
# made on the first thread's CPU (left to the scheduler, it waited 2-4 ms behind what ran on
# the other CPU of a loaded 2-core machine), and every thread has its CPU mask back.
shape_after_gate() {
	local name=$1 i=$2 f n=-1 lim min=1000 mask m
	grep -q "then, nothing held: .*its descriptors moved to high numbers" "$TMP/$name$i.rerr" ||
		{ cat "$TMP/$name$i.rerr"; die "$name: the descriptors not moved after the gate (attach $i)"; }
	# Nor is every module's relocations walked before the gate: the trampoline's entries are
	# hooked by the hashes of their names, the walk left for after.
	contains "$TMP/$name$i.rerr" "GOT entries hooked before the gate opened (the trampoline's and glibc's)"
	grep -q "then, nothing held: [0-9]* more hooked by a walk of every module's relocations" "$TMP/$name$i.rerr" ||
		{ cat "$TMP/$name$i.rerr"; die "$name: no walk after the gate (attach $i)"; }
	grep -q "loader thread running [0-9.]* on the first thread's CPU" "$TMP/$name$i.rerr" ||
		{ cat "$TMP/$name$i.rerr"; die "$name: the loader thread was not made on the first thread's CPU (attach $i)"; }
	mask=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/$$/status)
	for f in /proc/$TPID/task/*; do
		m=$(awk '/^Cpus_allowed_list/ { print $2 }' "$f/status" 2>/dev/null)
		[ -n "$m" ] || continue # a thread that ended meanwhile (the stacks shape makes them all along)
		eq "$name: thread ${f##*/}'s CPUs, attach $i" "$mask" "$m"
	done
	for f in /proc/$TPID/fd/*; do
		[ "$(readlink "$f")" = "/memfd:heapsnap (deleted)" ] && n=${f##*/}
	done
	lim=$(awk '/^Max open files/ { print $4 }' /proc/$TPID/limits)
	[ "$lim" != unlimited ] && [ $((lim - 128)) -lt $min ] && min=$((lim - 128))
	[ "$n" -ge "$min" ] || { ls -l /proc/$TPID/fd; die "$name: the memory's descriptor at $n, not at $min or above (attach $i)"; }
}

# shape_attach NAME I [RECORDER OPTIONS]: attaches to the attach_shapes in TPID (--attach-hold
# 1s), runs round I (attach_keep: 5 x 7007 bytes kept), stops the recorder. The hooks must be
# in place well before the hold could have run out (a call that waits it out makes the
# figure at least 1000 ms), no call may have waited it out, and round I is recorded exactly.
shape_attach() {
	local name=$1 i=$2 ms p=$TMP/$1$2.pb.gz
	shift 2
	"$R" -v -p "$TPID" -s 0 --attach-hold 1s "$@" -o "$TMP/$name$i.hsnap" >/dev/null 2>"$TMP/$name$i.rerr" &
	RPID=$!
	waitfor "$TMP/$name$i.rerr" "attached to $TPID" || { cat "$TMP/$name$i.rerr"; die "$name: attach $i never happened"; }
	contains "$TMP/$name$i.rerr" "recording via inject"
	echo keep >"$TMP/$name.fifo"
	waitfor "$TMP/$name.out" "kept $i" || die "$name: no answer to keep, attach $i"
	shape_after_gate "$name" "$i"
	kill -INT $RPID
	wait $RPID || { cat "$TMP/$name$i.rerr"; die "$name: the recorder failed (attach $i)"; }
	ms=$(sed -n 's/.*the hooks were in place \([0-9]*\)\.[0-9]* ms after the first call.*/\1/p' "$TMP/$name$i.rerr")
	echo "$name: attach $i: the hooks in place ${ms:-?} ms after the first call"
	[ -n "$ms" ] && [ "$ms" -lt 500 ] ||
		{ cat "$TMP/$name$i.rerr"; die "$name: the hooks were in place ${ms:-?} ms after the first call (hold 1 s)"; }
	grep -q "[1-9][0-9]* of them waited --attach-hold out" "$TMP/$name$i.rerr" &&
		{ cat "$TMP/$name$i.rerr"; die "$name: calls waited --attach-hold out, attach $i"; }
	"$A" pprof -o "$p" "$TMP/$name$i.hsnap" 2>/dev/null || die "$name: pprof $i"
	eq "$name: attach_keep inuse_space, attach $i" 35035 "$(pv "$p" inuse_space attach_keep)"
	eq "$name: attach_keep inuse_objects, attach $i" 5 "$(pv "$p" inuse_objects attach_keep)"
}

shape_end() {
	local rc
	echo exit >"$TMP/$1.fifo"
	wait $TJOB; rc=$?
	eq "$1: the target's own exit status" 0 $rc
	[ -s "$TMP/$1.terr" ] && { cat "$TMP/$1.terr"; die "$1: the target wrote to stderr"; }
	return 0
}

# The thread that starts the loader reuses a cached thread stack in pthread_create, whose old
# TLS glibc frees through free@plt: in a program with a canonical PLT entry for free that call
# took the trampoline again and waited there for a gate only its own return opens, the whole
# hold (Debian's python3 -m http.server, a thread per connection: 507 ms at each attach; this
# workload: 1003 ms with the hold at 1 s).
t_inject_stack_cache() {
	need_inject; need_go
	fifo_target stc "$T/attach_shapes" stacks
	trap 'kill $TJOB ${RPID:-} 2>/dev/null' EXIT # a failure leaves nothing running
	shape_attach stc 1
	shape_attach stc 2
	shape_end stc
}

# The dynamic loader allocates through the program's canonical malloc@plt holding its lock
# (a thread dlopens all along): a wait there in the trampoline held the lock that the
# library's dlopen needs, until the deadline (1012 and 1043 ms with the hold at 1 s). Its calls
# go on unrecorded instead, counted.
t_inject_loader_lock() {
	need_inject; need_go
	fifo_target ldl "$T/attach_shapes" dlopen
	trap 'kill $TJOB ${RPID:-} 2>/dev/null' EXIT # a failure leaves nothing running
	shape_attach ldl 1
	shape_attach ldl 2
	shape_end ldl
}

# A process asleep in select() with no timeout, its only thread (an idle PostgreSQL
# postmaster), takes no trampoline entry: it is made to start the loader from its wait, and
# the injection is in process, not BPF's after --attach-timeout.
t_inject_idle_select() {
	need_inject; need_go
	local lost
	fifo_target isl "$T/attach_shapes" select
	trap 'kill $TJOB ${RPID:-} 2>/dev/null' EXIT # a failure leaves nothing running
	shape_attach isl 1 --attach-timeout 5s
	contains "$TMP/isl1.rerr" "idle in system call"
	lost=$("$A" stats --json "$TMP/isl1.hsnap" | grep -o '"lost.inject_unhooked_calls":[0-9]*' | cut -d: -f2)
	eq "isl: lost.inject_unhooked_calls" 0 "${lost:-absent}"
	shape_attach isl 2 --attach-timeout 5s
	shape_end isl
}
ALL="$ALL t_inject_stack_cache t_inject_loader_lock t_inject_idle_select"

# t_snapshot_signal_drained (ways.sh), attached: the workload is told the recorder's pid.
t_inject_snapshot_signal_drained() {
	need_inject
	RARGS="--via inject -s 0" inject_start ssdi "$T/snap_signal" 200000
	grep -q "BPF uprobes instead" "$TMP/ssdi.rerr" && { cat "$TMP/ssdi.rerr"; die "not injected"; }
	echo $RPID >"$TMP/ssdi.fifo"
	snap_signal_check ssdi 200000
	wait $TJOB || die "ssdi: the workload failed"
}

ALL="$ALL t_inject_snapshot_signal_drained"
