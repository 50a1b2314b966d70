# The BPF way in (--via bpf, recorder/bpf/): what only it does or only it is tested with:
# probe links, attaching, -a, static binaries, capabilities, signals at start-up, PID
# namespaces, a full disk.

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

# A C++ program that catches std::bad_alloc from operator new runs on as it does natively:
# libstdc++'s throwing operator new gets no return probe, whose trampoline in its return
# address the unwinder could not pass (alloc_cxx throw ended in std::terminate, exit 134,
# launched under BPF or run beside -a). The malloc it calls returns for it: the figures after
# the throws stay exact, in every kind of link, the new_handler's own new and retry included,
# and an aligned new that throws before it allocates leaves nothing behind (no return missed).
t_bpf_cxx_throw() {
	need_bpf; need_go
	local btf mode rc rrc p rpid
	"$T/alloc_cxx" throw align >/dev/null 2>&1 || die "alloc_cxx throw align fails natively"
	btf=$(bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null)
	for mode in auto multi perf; do
		[ $mode = multi ] && ! grep -q "'BPF_TRACE_UPROBE_MULTI'" <<<"$btf" && continue
		"$R" --via bpf --probe-links $mode -v -s 0 -o "$TMP/th.hsnap" -- "$T/alloc_cxx" throw align >/dev/null 2>"$TMP/th.err"; rc=$?
		grep -q "terminate called" "$TMP/th.err" && { grep -A1 "terminate called" "$TMP/th.err"; die "$mode: std::terminate"; }
		eq "$mode: alloc_cxx throw align's exit status, launched" 0 $rc
		grep -q "libstdc++.so.6:_Znwm (size1) at file offset 0x[0-9a-f]*\( (multi)\| (session, entry only)\|\)\$" "$TMP/th.err" ||
			{ grep "_Znwm " "$TMP/th.err"; die "$mode: operator new must be probed at entry only"; }
		grep -q "libstdc++.so.6:_ZnwmRKSt9nothrow_t (size1) at file offset 0x[0-9a-f]*\( + return (multi)\| (session)\| + return\)\$" "$TMP/th.err" ||
			{ grep "_ZnwmRKSt9nothrow_t " "$TMP/th.err"; die "$mode: nothrow operator new (which never throws) keeps its return"; }
		"$A" pprof -o "$TMP/th.pb.gz" "$TMP/th.hsnap" 2>/dev/null || die "$mode: pprof of the recording"
		p=$TMP/th.pb.gz
		eq "$mode: cxx_after_throw inuse_space (7 x new char[1111])" 7777 "$(pv $p inuse_space 'cxx_after_throw()')"
		eq "$mode: cxx_after_throw inuse_objects" 7 "$(pv $p inuse_objects 'cxx_after_throw()')"
		eq "$mode: cxx_new_handler inuse_space (new char[222])" 222 "$(pv $p inuse_space 'cxx_new_handler()')"
		# Nothing main calls itself allocates: the aligned new's state, left as it threw, is
		# given to no later call (the exception's malloc would be main's 64 bytes).
		eq "$mode: main's own alloc_space" 0 "$(pv $p alloc_space main)"
		"$A" stats "$TMP/th.hsnap" >"$TMP/th.stats" 2>&1 || die "$mode: stats"
		grep -q "^ *lost.missed_uretprobe *0$" "$TMP/th.stats" || { cat "$TMP/th.stats"; die "$mode: returns missed"; }
		# The nothrow new[] (NULL), the malloc under the throwing new[], its retry after the handler.
		grep -q "^ *calls.failed_alloc *3$" "$TMP/th.stats" || { cat "$TMP/th.stats"; die "$mode: calls.failed_alloc"; }
		# Calls inside an outer one: new and malloc under each throwing new[] (the huge one, the
		# handler's, cxx_after_throw's 7: 18); new[], new, malloc and the malloc of the exception
		# it catches under the nothrow new[] (4).
		grep -q "^ *calls.nested *22$" "$TMP/th.stats" || { cat "$TMP/th.stats"; die "$mode: calls.nested"; }
	done
	# Beside a recorder of the whole host (sampled, as -a is by default), which probes
	# libstdc++ before it says it records.
	"$R" --via bpf -a --duration 60 -o "$TMP/tha.hsnap" >/dev/null 2>"$TMP/tha.err" &
	rpid=$!
	trap 'kill -INT $rpid 2>/dev/null; wait $rpid 2>/dev/null' EXIT
	waitfor "$TMP/tha.err" "recording every process" || { cat "$TMP/tha.err"; die "-a never said it records"; }
	"$T/alloc_cxx" throw >/dev/null 2>"$TMP/tha.out"; rc=$?
	kill -INT $rpid; wait $rpid; rrc=$?
	trap - EXIT
	grep -q "terminate called" "$TMP/tha.out" && { cat "$TMP/tha.out"; die "beside -a: std::terminate"; }
	eq "beside -a: alloc_cxx throw's exit status" 0 $rc
	[ $rrc = 0 ] || { cat "$TMP/tha.err"; die "recorder -a failed"; }
	"$A" info "$TMP/tha.hsnap" >/dev/null 2>&1 || die "the -a recording is unreadable"
}

# Sampled and every event, C++ through session probes and classic ones: a noret operator new
# passed by the draw still has its malloc seen nested (its bytes counted once, not again in
# malloc), and every event the figures are exact, each new[] -> new -> malloc counting two
# nested calls and each new -> malloc one (20000 x 2 + 200000 = 240000).
t_bpf_cxx_sampled() {
	need_bpf; need_go
	local btf mode p
	btf=$(bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null)
	for mode in auto multi; do
		[ $mode = multi ] && ! grep -q "'BPF_TRACE_UPROBE_MULTI'" <<<"$btf" && continue
		record --probe-links $mode -s 16k -o "$TMP/cs.hsnap" -- "$T/alloc_cxx" bulk || die "$mode: sampled recording"
		"$A" pprof -o "$TMP/cs.pb.gz" "$TMP/cs.hsnap" 2>/dev/null || die "$mode: pprof"
		p=$TMP/cs.pb.gz
		within "$mode: new char[4096] x20000 inuse_space estimate" 81920000 "$(pv $p inuse_space 'cxx_bulk_keep()' cum)" 10
		within "$mode: new Widget x200000 alloc_space estimate" 9600000 "$(pv $p alloc_space 'cxx_bulk_churn()' cum)" 20
		eq "$mode: deleted Widgets inuse" absent "$(pv $p inuse_space 'cxx_bulk_churn()' cum)"
		record --probe-links $mode -s 0 -o "$TMP/ce.hsnap" -- "$T/alloc_cxx" bulk || die "$mode: recording"
		"$A" pprof -o "$TMP/ce.pb.gz" "$TMP/ce.hsnap" 2>/dev/null || die "$mode: pprof"
		p=$TMP/ce.pb.gz
		eq "$mode: new char[4096] x20000 inuse_space" 81920000 "$(pv $p inuse_space 'cxx_bulk_keep()' cum)"
		eq "$mode: new Widget x200000 alloc_objects" 200000 "$(pv $p alloc_objects 'cxx_bulk_churn()' cum)"
		"$A" stats "$TMP/ce.hsnap" >"$TMP/ce.stats" 2>&1 || die "$mode: stats"
		grep -q "^ *calls.nested *240000$" "$TMP/ce.stats" || { cat "$TMP/ce.stats"; die "$mode: calls.nested"; }
		grep -q "^ *lost.missed_uretprobe *0$" "$TMP/ce.stats" || { cat "$TMP/ce.stats"; die "$mode: returns missed"; }
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

# ---- BPF recorder in a PID namespace; a full disk ----

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
	mount -t tmpfs -o size=12k heapsnap-test "$TMP/small" 2>/dev/null || skip "cannot mount a tmpfs here"
	# bulk eight times over: 8 x 420,001 events, about 30 KiB of file in format 4.0 (9 frames of
	# 3-4 KiB; 500-900 KiB in 2.1), so that the disk fills after some frames of events whatever the speed.
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

ALL="$ALL t_bpf_attach_pid t_bpf_errors t_bpf_all_processes t_bpf_probe_links t_bpf_ring_wrap t_bpf_static"
ALL="$ALL t_bpf_not_root t_bpf_symbolize_moved t_bpf_attach_busy t_bpf_signals_startup t_bpf_all_short_lived"
ALL="$ALL t_unwind_tables t_bpf_auto_attached t_bpf_pidns_launched t_bpf_pidns_attach t_bpf_pidns_all"
ALL="$ALL t_bpf_full_disk t_bpf_cxx_throw t_bpf_cxx_sampled"

# ---- a process tree attached to: -p --children, fork children from their fork ----

# -p --children takes the descendants already running, as a launched command's tree is taken:
# each process of forktree recorded with its exact bytes, the old children (forked before the
# attach, woken after) and the new (forked after, which allocate at once and exit), each by
# its own pid; nothing lost.
t_bpf_attach_children() {
	need_bpf
	local lost
	tree_run btc 3 4 --via bpf --children
	contains "$TMP/btc.rerr" "recording 3 child processes of $TPID that were already running"
	grep -q "add --children" "$TMP/btc.rerr" && die "btc: --children given, yet said to add it"
	tree_check btc yes
	"$A" stats --json "$TMP/btc.hsnap" >"$TMP/btc.stats" 2>/dev/null || die "btc: stats"
	lost=$(grep -o '"lost\.[a-z_]*":[0-9]*' "$TMP/btc.stats" | awk -F: '{ s += $2 } END { print s + 0 }')
	eq "btc: lost.* in all" 0 "$lost"
	contains "$TMP/btc.stats" '"lost.forks_untracked":0'
}

# Without --children the children already running are left out, and the recorder says how
# many and what to add; what the process forks from then on is still recorded.
t_bpf_attach_children_left() {
	need_bpf
	tree_run btl 2 3 --via bpf
	contains "$TMP/btl.rerr" "process $TPID has 2 child processes running (its descendants), not recorded: add --children to record them too"
	tree_check btl no
	# None to leave out: nothing said.
	tree_run btn 0 1 --via bpf
	grep -q "child process" "$TMP/btn.rerr" && { cat "$TMP/btn.rerr"; die "btn: children said of a process with none"; }
	tree_check btn no
}

# A fork child is tracked by BPF at its fork, with probes bound to no pid: its very first
# allocations are seen, though it exits before the recorder could read its /proc (probes
# bound to the target's pid missed a child until user space attached for it: pgbench -C on
# PostgreSQL had 553 of 569 backends recorded with no allocation). 16 children, one at a
# time, each allocating at once after fork and exiting.
t_bpf_fork_first_alloc() {
	need_bpf
	tree_run bff 0 16 --via bpf
	tree_check bff no
}

# PostgreSQL 15 (Debian's), a postmaster attached to with --children: its checkpointer, running
# before the attach, recorded as it checkpoints; and every backend pgbench -C forks (one per
# transaction), each recorded with allocations (every backend allocates as it starts); none
# lost.
pg_stop() { su postgres -s /bin/sh -c "/usr/lib/postgresql/15/bin/pg_ctl -D $1 -m immediate stop" >/dev/null 2>&1; }
t_bpf_postgres_children() {
	need_bpf
	local pgb=/usr/lib/postgresql/15/bin d pm ckpt old n empty
	[ -x $pgb/postgres ] && [ -x $pgb/pgbench ] || skip "PostgreSQL 15 is not installed ($pgb: postgresql-15)"
	id postgres >/dev/null 2>&1 || skip "no user postgres to run the server as"
	d=$TMP/pg; mkdir -p "$d"; chown postgres "$d"; chmod 755 "$TMP"
	su postgres -s /bin/sh -c "$pgb/initdb -D $d/data -A trust -U postgres" >"$d/initdb.log" 2>&1 || { cat "$d/initdb.log"; die "initdb"; }
	su postgres -s /bin/sh -c "$pgb/pg_ctl -D $d/data -o '-k $d -p 54399 -c listen_addresses=' -l $d/log -w start" >/dev/null 2>&1 ||
		{ cat "$d/log"; die "the server did not start"; }
	pm=$(head -1 "$d/data/postmaster.pid")
	su postgres -s /bin/sh -c "$pgb/pgbench -h $d -p 54399 -i -s 1 postgres" >"$d/init.log" 2>&1 || { pg_stop $d/data; cat "$d/init.log"; die "pgbench -i"; }
	old=$(ps --ppid "$pm" -o pid= | tr -d ' ' | sort -n)
	ckpt=$(ps --ppid "$pm" -o pid=,cmd= | awk '/checkpointer/ { print $1 }')
	[ -n "$ckpt" ] || { pg_stop $d/data; die "no checkpointer among the postmaster's children"; }
	"$R" --via bpf -p "$pm" --children -o "$TMP/pgc.hsnap" -s 0 >/dev/null 2>"$TMP/pgc.rerr" &
	RPID=$!
	waitfor "$TMP/pgc.rerr" "attached to $pm" || { kill $RPID; pg_stop $d/data; cat "$TMP/pgc.rerr"; die "never attached"; }
	su postgres -s /bin/sh -c "$pgb/psql -h $d -p 54399 -c CHECKPOINT postgres" >"$d/ckpt.log" 2>&1
	su postgres -s /bin/sh -c "$pgb/pgbench -h $d -p 54399 -C -c 2 -t 50 postgres" >"$d/bench.log" 2>&1
	kill -INT $RPID; wait $RPID || { pg_stop $d/data; cat "$TMP/pgc.rerr"; die "the recorder failed"; }
	pg_stop $d/data
	grep -q "number of transactions actually processed: 100/100" "$d/bench.log" || { cat "$d/bench.log"; die "pgbench did not run its 100 transactions"; }
	contains "$TMP/pgc.rerr" "recording $(echo $old | wc -w) child processes of $pm that were already running"
	"$A" summary --json "$TMP/pgc.hsnap" >"$TMP/pgc.sum" 2>/dev/null || die "summary"
	# Each process: pid, ppid, allocations.
	grep -o '{"pid":[^}]*}' "$TMP/pgc.sum" | sed 's/^{"pid":\([0-9]*\),"ppid":\([0-9]*\),.*"allocated_count":\([0-9]*\),.*/\1 \2 \3/' >"$TMP/pgc.procs"
	[ "$(awk -v p="$ckpt" '$1 == p { print $3 }' "$TMP/pgc.procs")" -gt 0 ] 2>/dev/null ||
		die "the checkpointer ($ckpt, running before the attach) recorded no allocation as it checkpointed"
	# The backends: the postmaster's children not running before the attach (pgbench's 100,
	# psql's one).
	n=$(awk -v pm="$pm" -v old=" $(echo $old) " '$2 == pm && index(old, " " $1 " ") == 0' "$TMP/pgc.procs" | wc -l)
	empty=$(awk -v pm="$pm" -v old=" $(echo $old) " '$2 == pm && index(old, " " $1 " ") == 0 && $3 == 0' "$TMP/pgc.procs" | wc -l)
	[ "$n" -ge 101 ] || die "expected at least 101 backends forked by the postmaster (pgbench -C's 100, psql's), got $n"
	eq "backends recorded with no allocation (of $n)" 0 "$empty"
	"$A" stats --json "$TMP/pgc.hsnap" >"$TMP/pgc.stats" 2>/dev/null || die "stats"
	contains "$TMP/pgc.stats" '"lost.forks_untracked":0'
	contains "$TMP/pgc.stats" '"lost.ringbuf_full":0'
}

# A server forking a process per connection, more of them than BPF's set of tracked processes
# holds (4096): a pid leaves the set as its process exits, so each of 5,000 children, one at a
# time, is tracked from its fork: 1,000 x (j % 64 + 1) bytes each, 162,276,000 in all, and no
# fork untracked (lost.forks_untracked, which the recorder warns of).
t_bpf_fork_many() {
	need_bpf
	local f=$TMP/bfm.hsnap
	tree_run bfm 0 5000 --via bpf
	eq "bfm: tree_new_first of the 5,000 children" 162276000 \
		"$("$A" collapsed --value alloc_space "$f" 2>/dev/null | awk '/;tree_new_first / { s += $NF } END { print s + 0 }')"
	"$A" stats --json "$f" >"$TMP/bfm.stats" 2>/dev/null || die "bfm: stats"
	contains "$TMP/bfm.stats" '"lost.forks_untracked":0'
	grep -q "forks_untracked" "$TMP/bfm.rerr" && { cat "$TMP/bfm.rerr"; die "bfm: warned of untracked forks"; }
	return 0
}

ALL="$ALL t_bpf_attach_children t_bpf_attach_children_left t_bpf_fork_first_alloc t_bpf_postgres_children"
ALL="$ALL t_bpf_fork_many"
# Messages that said the wrong thing: "probing 1 allocator functions", advice to use --stack
# auto while it is in use (the default), and sudo on the help's example of the preload way.
t_bpf_messages() {
	need_bpf
	printf '#include <stddef.h>\nvoid *pvalloc(size_t n) { (void)n; return NULL; }\n' >"$TMP/one.c"
	cc -shared -fPIC -o "$TMP/libone.so" "$TMP/one.c" || die "building a library with one allocator function"
	LD_PRELOAD=$TMP/libone.so "$R" --via bpf -o "$TMP/one.hsnap" -- /bin/true >/dev/null 2>"$TMP/one.err" ||
		{ cat "$TMP/one.err"; die "recording with libone.so"; }
	contains "$TMP/one.err" "probing 1 allocator function in libone.so"
	# Debian's python3 has no frame pointers: BPF's walk meets some before its modules are known
	# (exec'd by a shell, it is not the command whose tables are built before it runs).
	PYTHONMALLOC=malloc "$R" --via bpf -o "$TMP/nofp.hsnap" -- /bin/sh -c \
		"exec /usr/bin/python3 -c 'x = [str(i) for i in range(20000)]'" \
		>/dev/null 2>"$TMP/nofp.err" || { cat "$TMP/nofp.err"; die "recording python3"; }
	contains "$TMP/nofp.err" "stacks.fp_walk_stopped"
	grep "stacks.fp_walk_stopped" "$TMP/nofp.err" | grep -q -- "--stack auto walks" &&
		{ cat "$TMP/nofp.err"; die "--stack auto advised while in use"; }
	"$R" --help | grep -E '^  sudo heapsnap-record .*-- ' | grep -v -- '--via bpf' &&
		die "the help's example of a launched command (preloaded) asks for sudo"
	return 0
}

ALL="$ALL t_bpf_messages"
