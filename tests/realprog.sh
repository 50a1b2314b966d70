# Programs shaped like real ones the library once harmed (issue 50): each test fails on the
# harm itself (a hang, a crash, a byte in the wrong place), never on time alone.

# hang_stacks PID...: every thread's user and kernel stack, for a test whose target hung.
hang_stacks() {
	local p t
	for p in "$@"; do
		kill -0 "$p" 2>/dev/null || continue
		echo "--- process $p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)):"
		for t in /proc/"$p"/task/*; do
			echo "  thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)) waits in $(cat "$t/wchan" 2>/dev/null)"
			sed 's/^/    /' "$t/stack" 2>/dev/null
		done
		command -v gdb >/dev/null && timeout -s KILL 20 gdb -q -batch -p "$p" -ex 'thread apply all bt' 2>/dev/null | grep '^#\|^Thread'
	done
}

# run_bounded SECONDS NAME CMD...: CMD, killed after SECONDS with every thread's stack shown.
run_bounded() {
	local secs=$1 name=$2 pid i=0
	shift 2
	"$@" &
	pid=$!
	while kill -0 $pid 2>/dev/null && [ $i -lt $((secs * 10)) ]; do
		i=$((i + 1))
		sleep 0.1
	done
	if kill -0 $pid 2>/dev/null; then
		hang_stacks $pid $(pgrep -P $pid)
		pkill -KILL -P $pid; kill -KILL $pid
		wait $pid
		die "$name: still running after ${secs}s"
	fi
	wait $pid
}

# getattr_thread's threads (tests/workloads/getattr_thread.c) make their first allocator call
# inside pthread_getattr_np, which holds the thread's lock: launched, every one ends and keeps
# its block, with its whole stack.
t_realprog_getattr_launched() {
	need_go
	run_bounded 60 "getattr_thread launched" "$R" --via preload -s 0 -o "$TMP/gl.hsnap" -- "$T/getattr_thread" 20 \
		2>"$TMP/gl.err" || { cat "$TMP/gl.err"; die "getattr_thread launched: the recorder or the target failed"; }
	"$A" pprof -o "$TMP/gl.pb.gz" "$TMP/gl.hsnap" 2>/dev/null || die "pprof"
	eq "getattr_keep inuse_space" $((20 * 4321)) "$(pv "$TMP/gl.pb.gz" inuse_space getattr_keep)"
	eq "getattr_keep's stack reaches start_thread" $((20 * 4321)) "$(pv "$TMP/gl.pb.gz" inuse_space start_thread cum)"
	"$R" --via preload -o "$TMP/gs.hsnap" -- "$T/getattr_thread" 20 2>"$TMP/gs.err" || die "sampled"
}

# The same attached: a thread made after the attach, one a round, four rounds (the fourth is
# where the hang was seen).
t_realprog_getattr_attached() {
	need_inject; need_go
	local i
	RARGS="--via inject -s 0" inject_start ga "$T/getattr_thread"
	for i in 1 2 3 4; do
		echo keep >"$TMP/ga.fifo"
		waitfor "$TMP/ga.out" "kept $i" || { hang_stacks $TPID; kill -KILL $TJOB $RPID; die "round $i never ended"; }
	done
	kill -INT $RPID
	wait $RPID || { cat "$TMP/ga.rerr"; die "the recorder failed"; }
	echo exit >"$TMP/ga.fifo"
	wait $TJOB || die "getattr_thread's exit status"
	"$A" pprof -o "$TMP/ga.pb.gz" "$TMP/ga.hsnap" 2>/dev/null || die "pprof"
	eq "getattr_keep inuse_space" $((4 * 4321)) "$(pv "$TMP/ga.pb.gz" inuse_space getattr_keep)"
}
ALL="$ALL t_realprog_getattr_launched t_realprog_getattr_attached"

# A parent that closed its stdin and stdout starts children (tests/workloads/closed_stdio.py,
# as CPython's test_subprocess does): each child finds fds 0 and 1 closed, as unrecorded,
# and prints into nothing rather than into the shared memory; every event and sampled, the
# same exit status as unrecorded and a file that reads, with every child in it.
t_realprog_closed_stdio() {
	local s rc
	[ -x /usr/bin/python3 ] || skip "Debian's python3 is not installed"
	/usr/bin/python3 tests/workloads/closed_stdio.py 3 2>"$TMP/cs0.err"; rc=$?
	eq "unrecorded: exit status" 0 $rc
	for s in 0 512k; do
		run_bounded 120 "closed_stdio -s $s" "$R" --via preload -s $s -o "$TMP/cs$s.hsnap" -- \
			/usr/bin/python3 tests/workloads/closed_stdio.py 3 2>"$TMP/cs$s.err" || { cat "$TMP/cs$s.err"; die "-s $s: exit status"; }
		grep -q clash "$TMP/cs$s.err" && { cat "$TMP/cs$s.err"; die "-s $s: a child's standard descriptor was ours"; }
		"$A" info "$TMP/cs$s.hsnap" >"$TMP/cs$s.info" 2>&1 || { cat "$TMP/cs$s.info"; die "-s $s: the file does not read"; }
		eq "-s $s: processes recorded" 4 "$(grep -c '^  [0-9]* (python3' "$TMP/cs$s.info")"
	done
}

# A program that closes the memory's descriptor and opens a file of its own at that number
# (tests/workloads/steal_fd.c): nothing of the library's is written into it.
t_realprog_stolen_fd() {
	run_bounded 120 steal_fd "$R" --via preload -s 0 -o "$TMP/sf.hsnap" -- "$T/steal_fd" "$TMP/sf.file" 2>"$TMP/sf.err" ||
		{ cat "$TMP/sf.err"; die "steal_fd's exit status (4: its file was written to, $(stat -c %s "$TMP/sf.file") bytes)"; }
	"$A" stats "$TMP/sf.hsnap" >/dev/null || die "the file does not read"
}
ALL="$ALL t_realprog_closed_stdio t_realprog_stolen_fd"

# An executable that defines its own malloc (tests/workloads/own_malloc.c, as Chromium's
# does): --via auto takes BPF for it, and sees its 35000 bytes; preloaded, the recorder names
# it before it starts, and names a descendant running one, counted as not recorded.
t_realprog_own_malloc() {
	need_go
	"$R" -v -o "$TMP/om.hsnap" -- "$T/own_malloc" 2>"$TMP/om.err" || { cat "$TMP/om.err"; die "auto"; }
	contains "$TMP/om.err" "recording via bpf: the executable defines its own allocator"
	"$A" pprof -o "$TMP/om.pb.gz" "$TMP/om.hsnap" 2>/dev/null || die "pprof"
	eq "auto: own_keep inuse_space" 35000 "$(pv "$TMP/om.pb.gz" inuse_space own_keep)"
	"$R" --via preload -o "$TMP/omp.hsnap" -- "$T/own_malloc" 2>"$TMP/omp.err" || { cat "$TMP/omp.err"; die "preload"; }
	contains "$TMP/omp.err" "warning: $T/own_malloc defines malloc itself, which the loader binds ahead of libheapsnap.so"
	mkfifo "$TMP/om.fifo"
	"$R" --via preload -o "$TMP/omc.hsnap" -- /bin/sh -c "$T/own_malloc $TMP/om.fifo; :" 2>"$TMP/omc.err" &
	local rpid=$!
	waitfor "$TMP/omc.err" "defines malloc itself" || { kill $rpid; cat "$TMP/omc.err"; die "a descendant was not named"; }
	echo go >"$TMP/om.fifo"
	wait $rpid || { cat "$TMP/omc.err"; die "preload, descendant"; }
	contains "$TMP/omc.err" "(own_malloc) is not recorded: its executable $(realpath "$T/own_malloc") defines malloc itself"
	"$A" stats "$TMP/omc.hsnap" >"$TMP/omc.stats" || die "stats"
	eq "lost.processes_unrecorded" 1 "$(awk '$1 == "lost.processes_unrecorded" { print $2 }' "$TMP/omc.stats")"
}
ALL="$ALL t_realprog_own_malloc"

# The quick slice of the real-program matrix (tests/realworld.sh, `make realworld`): rows that
# take seconds, each against the same program unrecorded, heaptrack's count of allocations
# where it applies, with every thread's stack shown if it hangs.
realworld_row() {
	OUTPUT=$OUT REALWORLD_BOUND=120 REALWORLD_RG_TREE=/usr/include/linux tests/realworld.sh "$1" >"$TMP/rw.out" 2>&1
	local rc=$?
	cat "$TMP/rw.out"
	grep -q "^0 passed, 0 failed, 1 skipped" "$TMP/rw.out" && skip "$(grep -m1 "^SKIP" "$TMP/rw.out")"
	grep -q "^1 passed, 0 failed, 0 skipped" "$TMP/rw.out" || die "$1: row failed (status $rc)"
}
t_realprog_rg_launched() { realworld_row rg@launched; }
t_realprog_rg_attached() { need_inject; realworld_row rg@attached; }
t_realprog_sqlite3_launched() { realworld_row sqlite3@launched; }
ALL="$ALL t_realprog_rg_launched t_realprog_rg_attached t_realprog_sqlite3_launched"
