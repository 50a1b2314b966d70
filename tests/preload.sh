# The in-process way in (--via preload, recorder/preload/ and libheapsnap.so): what only it
# does. The tests it shares with BPF are in tests/ways.sh (t_WHAT@preload).

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

# A target that overwrites its own ring (tests/workloads/scribble.c) costs that ring, said
# aloud, and nothing else: the recorder does not read past the record or crash.
t_preload_scribbled_ring() {
	"$R" --via preload -o "$TMP/sc.hsnap" -- "$T/scribble" >/dev/null 2>"$TMP/sc.err"
	eq "the target's own exit status" 0 $?
	contains "$TMP/sc.err" "a ring held a record of 536870912 bytes past what its producer wrote"
	"$A" info "$TMP/sc.hsnap" >/dev/null 2>&1 || die "the recording must stay readable"
}

# A recorder stopped (Ctrl-Z) while its target allocates, recording every event: the program
# does not wait for it for ever. Once a thread's ring is full and the recorder has not been
# heard from for 2 s, the process stops recording, and the recording says so wherever its
# figures are shown. It used to say that one event was lost, the 2 million after it missing
# without a word, and to stop at the first check after 2 s even with room left in the ring.
t_preload_recorder_stopped() {
	local rec rc i
	mkfifo "$TMP/rs.in"
	PYTHONMALLOC=malloc "$R" --via preload -s 0 -o "$TMP/rs.hsnap" -- /usr/bin/python3 -c '
import sys
print("ready", flush=True)
sys.stdin.readline()
for i in range(2000000):
    bytes(64)
print("done", flush=True)' <"$TMP/rs.in" >"$TMP/rs.out" 2>"$TMP/rs.err" &
	rec=$!
	exec 8>"$TMP/rs.in"
	waitfor "$TMP/rs.out" ready || { kill $rec; die "python3 never said ready"; }
	kill -STOP $rec
	echo go >&8
	# The program ends while its recorder is still stopped (a condition: up to 60 s).
	for i in $(seq 1200); do grep -q done "$TMP/rs.out" && break; sleep 0.05; done
	kill -CONT $rec
	exec 8>&-
	grep -q done "$TMP/rs.out" || { wait $rec; die "the program waited for its stopped recorder"; }
	wait $rec; rc=$?
	eq "the command's exit status" 0 $rc
	contains "$TMP/rs.err" "1 process stopped recording (lost.processes_stopped, 1 in all)"
	"$A" summary "$TMP/rs.hsnap" >"$TMP/rs.sum" 2>"$TMP/rs.aerr" || die "summary"
	contains "$TMP/rs.sum" "everything 1 process did after it stopped recording (lost.processes_stopped 1: "
	contains "$TMP/rs.aerr" "everything 1 process did after it stopped recording"
	grep -q "Sampling: every allocation$" "$TMP/rs.sum" && die "a file with a process stopped says every allocation"
	"$A" summary --json "$TMP/rs.hsnap" 2>/dev/null | grep -q '"processes_stopped":1' || die "JSON processes_stopped"
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

# Requests of INT64_MAX bytes, which fail (CPython's own tests make them), each sampled for
# certain: at 512 KiB the draw comes before the call (the pool places samples), and adding
# draws up to the size took INT64_MAX / 512 KiB steps, the thread held for about a day.
# Sampled at 512 KiB, 64 KiB and every byte, each fails at once and the program goes on; at
# every byte, huge_after's block after them is there (1000 bytes live). The bound is what a
# hang runs into, not a wait.
t_preload_sampled_huge() {
	local s
	for s in 512k 64k 1; do
		timeout 120 "$R" --via preload -s $s -o "$TMP/sh$s.hsnap" -- "$T/alloc_c" huge >"$TMP/sh$s.out" 2>"$TMP/sh$s.err" ||
			{ cat "$TMP/sh$s.err"; die "-s $s: the program did not end well (124: held past the bound)"; }
		contains "$TMP/sh$s.out" "huge: all failed"
	done
	need_go
	"$A" pprof -o "$TMP/sh.pb.gz" "$TMP/sh1.hsnap" 2>/dev/null || die "pprof"
	eq "huge_after inuse_space" 1000 "$(pv "$TMP/sh.pb.gz" inuse_space huge_after)"
}

# The library's table of sampled blocks grows to 30,000 blocks live and shrinks back to its
# least, three times over, each block leaving in a scattered order (each removal moves later
# entries of its probe back): every sampled block's free is still matched, and what stays
# live is exact. A free the table lost would leave wave_make's bytes live.
t_preload_sampled_waves() {
	record --via preload -s 16 -o "$TMP/sw.hsnap" -- "$T/alloc_c" waves || die "sampled waves"
	"$A" pprof -o "$TMP/sw.pb.gz" "$TMP/sw.hsnap" 2>/dev/null
	need_go
	within "wave_make alloc_space" 23040000 "$(pv "$TMP/sw.pb.gz" alloc_space wave_make)" 1
	eq "wave_make inuse (every sampled block freed)" absent "$(pv "$TMP/sw.pb.gz" inuse_space wave_make)"
	within "wave_last inuse_space" 1536000 "$(pv "$TMP/sw.pb.gz" inuse_space wave_last)" 1
}

# Blocks 64 KiB apart share bits of the library's filter of sampled blocks, which a free
# reads to pass by blocks never sampled: each bit is cleared only with the last block it
# stands for. A bit cleared with the first would turn away its siblings' frees and leave
# sibling_make's blocks live.
t_preload_sampled_siblings() {
	record --via preload -s 1 -o "$TMP/sb.hsnap" -- "$T/alloc_c" siblings || die "sampled siblings"
	"$A" pprof -o "$TMP/sb.pb.gz" "$TMP/sb.hsnap" 2>/dev/null
	need_go
	within "sibling_make alloc_space" 4193280 "$(pv "$TMP/sb.pb.gz" alloc_space sibling_make)" 1
	within "sibling_make inuse_space (one block of 64 kept)" 65520 "$(pv "$TMP/sb.pb.gz" inuse_space sibling_make)" 1
}

# A free preempted between its reads of the filter word and of its block's bit, as long as the
# filter takes to grow and shrink back to the size that word names, 3,000 times over
# (tests/workloads/filter_reader.c): the live block's bit must never read clear. A filter
# rebuilt by clearing its array and refilling it read clear in every run checked, loaded or not.
t_preload_filter_rebuild() {
	local off
	off=$(nm "$OUT/libheapsnap.so" | awk '$3 == "hs_hot" { print $1 }')
	[ -n "$off" ] || die "no symbol hs_hot in $OUT/libheapsnap.so"
	record --via preload -s 1 -o "$TMP/fr.hsnap" -- "$T/filter_reader" "$off" || die "recording the filter's reader"
	grep -E '^reads [0-9]+ clear [0-9]+ grown [0-9]+ back [0-9]+$' "$TMP/record.out" >"$TMP/fr.txt" ||
		{ cat "$TMP/record.out"; die "no count from the filter's reader"; }
	eq "rebuilds to a larger filter" 3000 "$(awk '{ print $6 }' "$TMP/fr.txt")"
	eq "rebuilds back to the first" 3000 "$(awk '{ print $8 }' "$TMP/fr.txt")"
	eq "reads that found a live block's bit clear" 0 "$(awk '{ print $4 }' "$TMP/fr.txt")"
}

# Counts the target's threads make, each exactly once: every block sampled and every stack cut
# at one frame, handoff's 201,003 allocations, 200,000 of them by a producer thread whose blocks
# a consumer thread frees (tests/workloads/handoff.c), each sampled block in the table of the
# shard of its address (sampled.c), so that every free finds its block.
t_preload_counts_threads() {
	"$R" --via preload -s 1 --stack fp --max-stack 1 -o "$TMP/cr.hsnap" -- "$T/handoff" >/dev/null 2>"$TMP/cr.err" ||
		{ cat "$TMP/cr.err"; die "recording handoff"; }
	local n
	"$A" stats "$TMP/cr.hsnap" >"$TMP/cr.stats" 2>/dev/null || die "stats"
	n=$(awk '$1 == "Events:" { sub(/\(/, "", $3); print $3 }' "$TMP/cr.stats")
	[ "${n:-0}" -ge 201000 ] || die "handoff: ${n:-no} allocations recorded, expected 201,000 and the runtime's"
	eq "stacks.cut_at_max_stack, one per allocation" "$n" \
		"$(awk '$1 == "stacks.cut_at_max_stack" { print $2 }' "$TMP/cr.stats")"
	eq "frees of no live block" 0 "$(awk '$1 == "Events:" { print $13 }' "$TMP/cr.stats")"
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
	if [ -n "$GO" ]; then
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

# ---- the in-process recorder's shared memory: rings of exited threads reused, children that
# close inherited descriptors still recorded (issue 23, items 5 and 6); churn_check is in
# tests/lib.sh ----

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

# The allocator table's compile-time check (libheapsnap/hooks.c): a line marked OWN whose hook is
# not written fails to compile, and so does a written hook the table has no OWN line for.
t_alloctab_compile_check() {
	command -v "${CC:-gcc}" >/dev/null || skip "no C compiler"
	local f="-std=gnu11 -fsyntax-only -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -I. -Ibpf -Icommon -Iformat"
	f="$f -Irecorder -Irecorder/preload -Irecorder/inject -Ilibheapsnap"
	${CC:-gcc} $f libheapsnap/hooks.c 2>"$TMP/atc0.err" || { cat "$TMP/atc0.err"; die "hooks.c as it is does not compile"; }
	grep -q '^HOOK_WRITTEN(realloc);$' libheapsnap/hooks.c || die "hooks.c marks no realloc hook"
	sed 's/^HOOK_WRITTEN(realloc);$//' libheapsnap/hooks.c >"$TMP/atc1.c"
	${CC:-gcc} $f "$TMP/atc1.c" 2>"$TMP/atc1.err" && die "a listed hook left unwritten compiled"
	contains "$TMP/atc1.err" "hs_written_realloc"
	sed 's/^HOOK_WRITTEN(realloc);$/HOOK_WRITTEN(realloc); HOOK_WRITTEN(strdup);/' libheapsnap/hooks.c >"$TMP/atc2.c"
	${CC:-gcc} $f "$TMP/atc2.c" 2>"$TMP/atc2.err" && die "a hook the table does not list compiled"
	contains "$TMP/atc2.err" "hs_kind_of_strdup"
	return 0
}

# The sampled hooks' pass-by paths of new/delete and realloc.
# Against the workloads' exact sizes: sampled, a passed-by operator new counts its bytes once
# (not again in the malloc it calls, nor in operator new inside new[]), a delete or realloc
# never passes a sampled block by (none stays live), a realloc passed by still counts its
# bytes; every event, each figure exact through the same paths. Cumulative figures: an
# allocation counted twice would add the inner one under operator new's frame.
t_preload_sampled_cxx_realloc() {
	need_go
	local VIA=preload p
	record -s 16k -o "$TMP/scx.hsnap" -- "$T/alloc_cxx" bulk || die "sampled C++ recording"
	"$A" pprof -o "$TMP/scx.pb.gz" "$TMP/scx.hsnap" 2>/dev/null || die "pprof of sampled C++"
	p=$TMP/scx.pb.gz
	within "new char[4096] x20000 inuse_space estimate" 81920000 "$(pv $p inuse_space 'cxx_bulk_keep()' cum)" 10
	within "new Widget x200000 alloc_space estimate" 9600000 "$(pv $p alloc_space 'cxx_bulk_churn()' cum)" 20
	within "new Widget x200000 alloc_objects estimate" 200000 "$(pv $p alloc_objects 'cxx_bulk_churn()' cum)" 20
	eq "deleted Widgets inuse" absent "$(pv $p inuse_space 'cxx_bulk_churn()' cum)"
	record -s 16k -o "$TMP/sra.hsnap" -- "$T/alloc_c" rbulk || die "sampled realloc recording"
	"$A" pprof -o "$TMP/sra.pb.gz" "$TMP/sra.hsnap" 2>/dev/null || die "pprof of sampled realloc"
	p=$TMP/sra.pb.gz
	within "realloc_keep inuse_space estimate" 81920000 "$(pv $p inuse_space realloc_keep cum)" 10
	within "realloc_keep alloc_space estimate" 83920000 "$(pv $p alloc_space realloc_keep cum)" 10
	within "realloc_churn alloc_space estimate" 505000000 "$(pv $p alloc_space realloc_churn cum)" 10
	eq "realloc_churn inuse" absent "$(pv $p inuse_space realloc_churn cum)"
	record -s 0 -o "$TMP/ecx.hsnap" -- "$T/alloc_cxx" bulk || die "C++ recording"
	"$A" pprof -o "$TMP/ecx.pb.gz" "$TMP/ecx.hsnap" 2>/dev/null || die "pprof of C++"
	p=$TMP/ecx.pb.gz
	eq "new char[4096] x20000 inuse_space" 81920000 "$(pv $p inuse_space 'cxx_bulk_keep()' cum)"
	eq "new Widget x200000 alloc_objects" 200000 "$(pv $p alloc_objects 'cxx_bulk_churn()' cum)"
	eq "deleted Widgets inuse (every event)" absent "$(pv $p inuse_space 'cxx_bulk_churn()' cum)"
	record -s 0 -o "$TMP/era.hsnap" -- "$T/alloc_c" rbulk || die "realloc recording"
	"$A" pprof -o "$TMP/era.pb.gz" "$TMP/era.hsnap" 2>/dev/null || die "pprof of realloc"
	p=$TMP/era.pb.gz
	eq "realloc_keep inuse_space" 81920000 "$(pv $p inuse_space realloc_keep cum)"
	eq "realloc_keep alloc_space" 83920000 "$(pv $p alloc_space realloc_keep cum)"
	eq "realloc_churn alloc_space" 505000000 "$(pv $p alloc_space realloc_churn cum)"
	eq "realloc_churn inuse (every event)" absent "$(pv $p inuse_space realloc_churn cum)"
}

# Sampling at 256 KiB, sampled blocks are placed on pages of libheapsnap.so's own, laid out as
# glibc's mmapped chunks (libheapsnap/pool.c), so a free is told by its address; at
# 128 KiB they stay glibc's. tests/workloads/pool_paths.c takes a block there and back by every
# allocator, realloc, a thread and a fork, checking the bytes, zeros, alignments and usable
# sizes itself; its blocks of 4 MiB are sampled with a probability of 1 - e^-16, so their
# figures are exact. glibc's own count of mmapped bytes (mallinfo2) says who placed them.
t_preload_pool_paths() {
	need_go
	local VIA=preload s p f v
	"$T/pool_paths" >"$TMP/ppn.out" || die "pool_paths natively"
	v=$(awk '$1 == "glibc" { print $3 }' "$TMP/ppn.out")
	[ "${v:-0}" -ge 33554432 ] || die "natively, glibc mmapped ${v:-nothing}, under pool_malloc's 33554432"
	for s in 256k 128k; do
		record -s $s -o "$TMP/pp$s.hsnap" -- "$T/pool_paths" || die "pool_paths sampled at $s"
		grep -q '^pool_paths: ok' "$TMP/record.out" || { cat "$TMP/record.out"; die "pool_paths at $s"; }
		v=$(awk '$1 == "glibc" { print $3 }' "$TMP/record.out")
		if [ $s = 256k ]; then
			eq "glibc's mmapped bytes at $s (the pool holds the sampled blocks)" 0 "$v"
		else
			[ "${v:-0}" -ge 33554432 ] || die "at $s, glibc mmapped ${v:-nothing}: the pool took blocks below its rate"
		fi
		"$A" pprof -o "$TMP/pp$s.pb.gz" "$TMP/pp$s.hsnap" 2>/dev/null || die "pprof of pool_paths at $s"
		p=$TMP/pp$s.pb.gz
		for f in "pool_malloc 33554432 8388608" "pool_usable 12583012 absent" "pool_sparse 805306368 absent" \
			"pool_stopper 4194304 4194304" "pool_after 23068672 14680064" "pool_calloc 16777216 16777216" "pool_realloc 26214400 5242880" \
			"pool_aligned 16777216 16777216" "pool_thread 33554432 absent" "pool_forked 16777216 16777216"; do
			set -- $f
			eq "$s: $1 alloc_space" "$2" "$(pv $p alloc_space $1)"
			eq "$s: $1 inuse_space" "$3" "$(pv $p inuse_space $1)"
		done
		eq "$s: pool_small inuse (every block freed)" absent "$(pv $p inuse_space pool_small)"
		v=$("$A" stats "$TMP/pp$s.hsnap" 2>/dev/null | awk '$1 == "sampler.pool_stopped" { print $2 }')
		eq "$s: sessions whose pool stopped (pool_stopper's alignment)" "$([ $s = 256k ] && echo 1 || echo 0)" "$v"
	done
}

# A library initialized before libheapsnap.so (preloaded after it, as a program's own are
# too) whose constructor frees before anything is allocated: the hooks are reached before the
# library's constructor has run. Once every such free jumped to a real free not yet looked up.
# The program must run, and be recorded as ever.
t_preload_ctor_free() {
	local s
	for s in 0 512k; do
		LD_PRELOAD=$T/libctor_free.so "$R" --via preload -s $s -o "$TMP/cf$s.hsnap" -- "$T/quick" >"$TMP/cf.out" 2>"$TMP/cf.err" ||
			{ cat "$TMP/cf.err"; die "quick with libctor_free.so preloaded, at -s $s"; }
	done
	need_go
	"$A" pprof -o "$TMP/cf.pb.gz" "$TMP/cf0.hsnap" 2>/dev/null || die "pprof"
	eq "quick_alloc inuse_space" 3000 "$(pv "$TMP/cf.pb.gz" inuse_space quick_alloc)"
}

# Exact figures of FUNC in the C++ program PROG (blocks of 4 MiB, sampled with a probability of
# 1 - e^-16): ALLOC and INUSE bytes, at 256 KiB, where glibc's sampled blocks go to the pool and
# PROG's first sample of an operator new that is not the runtime's plain one stops it
# (sampler.pool_stopped), and at 128 KiB, where they stay in the table.
cxx_exact_both_ways() {
	local VIA=preload prog=$1 fn=$2 alloc=$3 inuse=$4 s p v
	for s in 256k 128k; do
		record -s $s -o "$TMP/$prog$s.hsnap" -- "$T/$prog" || die "$prog sampled at $s"
		grep -q "^$prog: ok" "$TMP/record.out" || { cat "$TMP/record.out"; die "$prog at $s"; }
		"$A" pprof -o "$TMP/$prog$s.pb.gz" "$TMP/$prog$s.hsnap" 2>/dev/null || die "pprof of $prog at $s"
		p=$TMP/$prog$s.pb.gz
		eq "$s: $fn alloc_space" "$alloc" "$(pv $p alloc_space $fn)"
		eq "$s: $fn inuse_space" "$inuse" "$(pv $p inuse_space $fn)"
		v=$("$A" stats "$TMP/$prog$s.hsnap" 2>/dev/null | awk '$1 == "sampler.pool_stopped" { print $2 }')
		eq "$s: sessions whose pool stopped" "$([ $s = 256k ] && echo 1 || echo 0)" "$v"
	done
}

# A program whose operator new and delete are a library's own, built on mmap, not malloc
# (tests/workloads/own_new.cc), while malloc stays glibc's: the hooks keep the operator's
# samples in the table, where its delete finds them, at every rate.
t_preload_own_new() {
	need_go
	cxx_exact_both_ways own_new own_new_keep 67108864 33554432
}

# The C++ runtime's nothrow new, whose samples stay in the table (its blocks may be any
# operator new's), freed by the runtime's plain sized delete, as std::get_temporary_buffer
# pairs them (tests/workloads/nothrow_pair.cc): that delete passes by on the pool's range
# alone, so such a sample stops the pool, and every free is found.
t_preload_nothrow_pair() {
	need_go
	cxx_exact_both_ways nothrow_pair nothrow_keep 67108864 33554432
}

# A new that throws (std::bad_alloc, caught by the program) through the hooks leaves the
# thread recorded as before: the depth that keeps an allocator's own calls from being counted
# again is not held across the runtime's plain operator new, whose exception would skip its
# undoing (the thread then recorded nothing more: 0 of alloc_cxx throw's 7777 bytes); across
# an aligned new, which is called at depth, a cleanup gives it back as the exception passes
# (alloc_cxx throw align: an alignment of 3 refused).
t_preload_cxx_after_bad_alloc() {
	need_go
	local VIA=preload p
	record -s 0 -o "$TMP/cba.hsnap" -- "$T/alloc_cxx" throw || die "recording alloc_cxx throw"
	"$A" pprof -o "$TMP/cba.pb.gz" "$TMP/cba.hsnap" 2>/dev/null || die "pprof"
	p=$TMP/cba.pb.gz
	eq "every event: cxx_after_throw inuse_space" 7777 "$(pv $p inuse_space 'cxx_after_throw()')"
	eq "every event: cxx_after_throw inuse_objects" 7 "$(pv $p inuse_objects 'cxx_after_throw()')"
	record -s 16 -o "$TMP/cbs.hsnap" -- "$T/alloc_cxx" throw || die "recording alloc_cxx throw, sampled"
	"$A" pprof -o "$TMP/cbs.pb.gz" "$TMP/cbs.hsnap" 2>/dev/null || die "pprof, sampled"
	within "sampled at 16 bytes: cxx_after_throw inuse_space" 7777 "$(pv "$TMP/cbs.pb.gz" inuse_space 'cxx_after_throw()')" 2
	record -s 0 -o "$TMP/cbal.hsnap" -- "$T/alloc_cxx" throw align || die "recording alloc_cxx throw align"
	"$A" pprof -o "$TMP/cbal.pb.gz" "$TMP/cbal.hsnap" 2>/dev/null || die "pprof, throw align"
	eq "after an aligned new's throw: cxx_after_throw inuse_space" 7777 "$(pv "$TMP/cbal.pb.gz" inuse_space 'cxx_after_throw()')"
}

ALL="$ALL t_preload_sampled_dense t_preload_sampled_waves t_preload_sampled_siblings t_preload_filter_rebuild t_preload_counts_threads t_preload_scribbled_ring t_preload_unprivileged t_preload_dwarf_debug_dir"
ALL="$ALL t_preload_thread_churn t_preload_threads_past_limit t_preload_closed_fds t_preload_python_workers"
ALL="$ALL t_preload_socket_refused t_preload_unrecorded_said t_preload_process_churn"
ALL="$ALL t_alloctab_compile_check"
ALL="$ALL t_preload_sampled_cxx_realloc t_preload_cxx_after_bad_alloc t_preload_recorder_stopped"
ALL="$ALL t_preload_pool_paths t_preload_own_new t_preload_nothrow_pair t_preload_ctor_free"
ALL="$ALL t_preload_sampled_huge"
