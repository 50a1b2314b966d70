# Tests of every way in: each is written once, t_WHAT, reading its way from $VIA, and
# registered once per way as t_WHAT@WAY (see the top of tests/run.sh); `record`, need_bpf and
# "$R" --via "$VIA" follow the way. Recorder + analyzer on real programs, exact figures.

c_profile() {
	[ -f "$TMP/c-$VIA.pb.gz" ] && return
	record -o "$TMP/c-$VIA.hsnap" -- "$T/alloc_c" || die "recording alloc_c failed"
	"$A" pprof -o "$TMP/c-$VIA.pb.gz" "$TMP/c-$VIA.hsnap" || die "pprof"
}

t_c_exact() {
	need_bpf; need_go; c_profile
	local p=$TMP/c-$VIA.pb.gz
	eq "thread_work inuse_space" 20000 "$(pv $p inuse_space thread_work)"
	eq "child_work inuse_space (fork child)" 15000 "$(pv $p inuse_space child_work)"
	eq "plugin_alloc inuse_space (dlopen)" 12288 "$(pv $p inuse_space plugin_alloc)"
	eq "leak_malloc inuse_space" 10000 "$(pv $p inuse_space leak_malloc)"
	eq "make_calloc inuse_space" 4000 "$(pv $p inuse_space make_calloc)"
	eq "aligned_allocs inuse_space" 1792 "$(pv $p inuse_space aligned_allocs)"
	eq "realloc_chain inuse_space" 300 "$(pv $p inuse_space realloc_chain)"
	eq "realloc_fail inuse_space (old block kept)" 128 "$(pv $p inuse_space realloc_fail)"
	eq "realloc_fail alloc_space (failure not recorded)" 128 "$(pv $p alloc_space realloc_fail)"
	eq "realloc_chain alloc_space" 5600 "$(pv $p alloc_space realloc_chain)"
	eq "realloc_chain alloc_objects" 4 "$(pv $p alloc_objects realloc_chain)"
	eq "churn_malloc alloc_space" 6400 "$(pv $p alloc_space churn_malloc)"
	eq "churn_malloc alloc_objects" 100 "$(pv $p alloc_objects churn_malloc)"
	eq "churn_malloc inuse_space" absent "$(pv $p inuse_space churn_malloc)"
	eq "realloc_zero alloc_space" 77 "$(pv $p alloc_space realloc_zero)"
	eq "realloc_zero inuse_space" absent "$(pv $p inuse_space realloc_zero)"
	eq "leak_malloc inuse_objects" 10 "$(pv $p inuse_objects leak_malloc)"
	eq "thread_work inuse_objects" 100 "$(pv $p inuse_objects thread_work)"
	eq "inline_helper inuse_space (an inline frame)" 2222 "$(pv $p inuse_space 'inline_helper (inline)')"
	eq "inline_outer cum inuse_space" 2222 "$(pv $p inuse_space inline_outer cum)"
	eq "thread_main cum inuse_space (caller chain)" 20000 "$(pv $p inuse_space thread_main cum)"
}

t_c_labels_inline() {
	need_bpf; need_go; c_profile
	go tool pprof -symbolize=none -tags "$TMP/c-$VIA.pb.gz" >"$TMP/tags" 2>&1 || die "pprof -tags"
	contains "$TMP/tags" "worker-1"
	contains "$TMP/tags" "worker-2"
	contains "$TMP/tags" "bytes"
	go tool pprof -symbolize=none -traces "$TMP/c-$VIA.pb.gz" >"$TMP/traces" 2>&1 || die "pprof -traces"
	grep -A1 "inline_helper (inline)" "$TMP/traces" | grep -q "inline_outer" || die "inline frame chain missing"
	go tool pprof -symbolize=none -raw "$TMP/c-$VIA.pb.gz" >"$TMP/raw" 2>&1 || die "pprof -raw"
	contains "$TMP/raw" "inline_outer"
	local bid
	bid=$("$A" info "$TMP/c-$VIA.hsnap" | awk '/\/alloc_c build-id/ {print $NF; exit}')
	[ -n "$bid" ] || die "no build-id recorded for alloc_c"
	contains "$TMP/raw" "$bid"
	"$A" collapsed "$TMP/c-$VIA.hsnap" >"$TMP/coll"
	grep -q ";thread_main;thread_work 20000$" "$TMP/coll" || die "collapsed thread_work line"
	grep -q ";inline_outer;inline_helper 2222$" "$TMP/coll" || die "collapsed inline line"
	"$A" stats --json "$TMP/c-$VIA.hsnap" >"$TMP/stats.json"
	# A failed realloc releases its block before the call, then restores it (both ways).
	contains "$TMP/stats.json" '"restored":1'
	contains "$TMP/stats.json" '"lost.ringbuf_full":0'
	"$A" summary --json "$TMP/c-$VIA.hsnap" >"$TMP/sum.json"
	[ "$(grep -o '"pid":' "$TMP/sum.json" | wc -l)" = 2 ] || die "two processes (parent and fork child) expected"
	"$A" leaks --min-age 0 -n 0 "$TMP/c-$VIA.hsnap" >"$TMP/leaks"
	contains "$TMP/leaks" "20000 bytes in 100 blocks"
	contains "$TMP/leaks" "leak_malloc"
}

t_cxx_exact() {
	need_bpf; need_go
	record -o "$TMP/cxx.hsnap" -- "$T/alloc_cxx" || die "recording alloc_cxx failed"
	[ "$VIA" = preload ] || contains "$TMP/record.err" "allocator functions in libstdc++"
	"$A" pprof -o "$TMP/cxx.pb.gz" "$TMP/cxx.hsnap"
	local p=$TMP/cxx.pb.gz
	eq "new Widget x20" 960 "$(pv $p inuse_space 'cxx_new_objects()')"
	eq "new char[1000] x5" 5000 "$(pv $p inuse_space 'cxx_new_array()')"
	eq "nothrow new x3" 999 "$(pv $p inuse_space 'cxx_nothrow()')"
	eq "aligned new x2" 256 "$(pv $p inuse_space 'cxx_aligned()')"
	eq "delete churn allocated" 10000 "$(pv $p alloc_space 'cxx_delete_churn()')"
	eq "delete churn objects" 100 "$(pv $p alloc_objects 'cxx_delete_churn()')"
	eq "delete churn live" absent "$(pv $p inuse_space 'cxx_delete_churn()')"
	"$A" stats --json "$TMP/cxx.hsnap" >"$TMP/s.json"
	contains "$TMP/s.json" '"lost.missed_uretprobe":0'
}

t_rust_exact() {
	need_bpf; need_go
	[ -x "$T/alloc_rust" ] || skip "no Rust compiler: the Rust workload was not built"
	record -o "$TMP/rs.hsnap" -- "$T/alloc_rust" || die "recording alloc_rust failed"
	[ "$VIA" = preload ] || contains "$TMP/record.err" "allocator functions in alloc_rust"
	"$A" pprof -o "$TMP/rs.pb.gz" "$TMP/rs.hsnap"
	local p=$TMP/rs.pb.gz
	eq "rust_boxes (leaked boxes)" 5000 "$(pv $p inuse_space alloc_rust::rust_boxes)"
	eq "rust_vec cum" 3000 "$(pv $p inuse_space alloc_rust::rust_vec cum)"
	eq "rust_churn allocated cum" 6400 "$(pv $p alloc_space alloc_rust::rust_churn cum)"
	eq "rust_churn objects cum (counted once, not again in malloc)" 100 "$(pv $p alloc_objects alloc_rust::rust_churn cum)"
	eq "rust_churn live" absent "$(pv $p inuse_space alloc_rust::rust_churn cum)"
}

t_sampled() {
	need_bpf; need_go
	record -s 64k -o "$TMP/s.hsnap" -- "$T/alloc_c" bulk || die "sampled recording failed"
	"$A" pprof -o "$TMP/s.pb.gz" "$TMP/s.hsnap"
	# bulk_keep: 20000 x 4096 + its 160000-byte table; bulk_churn: 200000 x 100 = 20000000.
	within "bulk_keep inuse_space estimate" 82080000 "$(pv "$TMP/s.pb.gz" inuse_space bulk_keep)" 10
	within "bulk_churn alloc_space estimate" 20000000 "$(pv "$TMP/s.pb.gz" alloc_space bulk_churn)" 20
	within "bulk_churn alloc_objects estimate" 200000 "$(pv "$TMP/s.pb.gz" alloc_objects bulk_churn)" 20
	eq "bulk_churn inuse" absent "$(pv "$TMP/s.pb.gz" inuse_space bulk_churn)"
	"$A" stats "$TMP/s.hsnap" >"$TMP/st"
	contains "$TMP/st" "Sampler: Poisson, mean 65536 bytes"
	local events
	events=$("$A" stats --json "$TMP/s.hsnap" | grep -o '"events":[0-9]*' | cut -d: -f2)
	[ "$events" -lt 20000 ] || die "sampling must keep far fewer than the 220000 events, kept $events"
}

# The sampler's draws are independent of one another: over RUNS recordings of strata (256
# stacks, each 2000 back-to-back mallocs of 1000 bytes), the samples per stack and the total
# per run spread as Poisson byte sampling says (p = 1 - e^(-1000/4096) per block), neither
# wider nor narrower. The in-process sampler once drew its next threshold by a hash of the
# time, which a loop's even pace turned into a sequence: the totals then spread 2.7 times as
# wide as they should, and sampled figures with them (t_analyzer_gate_sampled).
t_sampler_strata() {
	need_bpf
	local i runs=24
	[ "$VIA" = bpf ] && runs=8 # 2.6 s each through uprobes
	for i in $(seq 1 $runs); do
		record -s 4096 -o "$TMP/st$i.hsnap" -- "$T/strata" 2000 || die "sampled recording $i"
		"$A" collapsed --value alloc_space "$TMP/st$i.hsnap" >"$TMP/st$i.txt" || die "collapsed $i"
	done
	python3 - "$TMP" $runs <<-'PY' || die "the samples do not spread as independent draws would"
	import math, sys
	tmp, runs = sys.argv[1], int(sys.argv[2])
	m, size, rate = 2000, 1000, 4096
	p = 1 - math.exp(-size / rate)
	per, totals = [], []
	for r in range(1, runs + 1):
	    by_path, shapes = {}, []
	    for line in open("%s/st%d.txt" % (tmp, r)):
	        stack, v = line.rsplit(" ", 1)
	        if stack.endswith(";stratum"):
	            # A stratum is its 9 calls of zero and one: one stack may reach it by two
	            # lists of outer frames (BPF under load: a stack copied, unwound offline).
	            path = tuple(stack.split(";")[-10:-1])
	            c = int(v) / (size / p) # each sample weighs size / p
	            assert abs(c - round(c)) < 1e-3, (r, stack, v)
	            assert set(path) <= {"zero", "one"}, (r, stack)
	            by_path[path] = by_path.get(path, 0) + round(c)
	    counts = list(by_path.values())
	    assert len(counts) == 256, (r, len(counts))
	    per += [(c - m * p) ** 2 / (m * p * (1 - p)) for c in counts]
	    totals.append(sum(counts))
	n = 256 * m
	within = sum(per) / len(per)
	across = sum((t - n * p) ** 2 for t in totals) / runs / (n * p * (1 - p))
	mean = sum(totals) / runs
	print("runs %d: samples per run %.0f (expected %.0f); variance to Poisson's: per stack %.3f, per run %.2f"
	      % (runs, mean, n * p, within, across))
	# Each statistic is a chi-square over its degrees of freedom, divided by them: bounds at
	# 4 standard normal deviates by Wilson and Hilferty's approximation, so that a correct
	# sampler fails about once in 30,000 runs. Fewer samples than Poisson's are not the fault
	# looked for across runs (6 runs' chi-square is often small), so that bound is one-sided.
	def bound(df, z):
	    c = 2 / (9 * df)
	    return (1 - c + z * math.sqrt(c)) ** 3
	assert bound(len(per), -4) <= within <= bound(len(per), 4), within
	assert across <= bound(runs, 4), across
	assert abs(mean - n * p) < 4 * math.sqrt(n * p * (1 - p) / runs), mean
	PY
}

# Version 4 names a free by its block's class (thread, pair, TIME record: docs/FORMAT.md) and
# swaps the names of two blocks of a class, so the file's blocks are not the program's. Every
# figure must stay: temporary allocations against the workload's own count, thread 0's ring
# live at exit, and every report of the file against the same events written slot by slot
# (version 3.0, which has no classes) and re-encoded from those to version 4.
t_class_frees() {
	need_bpf
	local n f
	record -o "$TMP/cf4.hsnap" -- "$T/classes" || die "recording"
	n=$(awk '/^temporary/ { print $2 }' "$TMP/record.out")
	[ -n "$n" ] && [ "$n" -gt 1000 ] || die "the workload's count of temporary allocations: '$n'"
	"$A" temporary --json -n 0 "$TMP/cf4.hsnap" >"$TMP/cf4.json" || die "temporary"
	# The count is the file's whole, its rows' sum, and the workload's functions': no other
	# code frees its last allocation at once. This caught BPF's stack copies coming out empty
	# while the kernel's lookup of the stack's mapping was busy, with a core busy (1 run in 6,
	# 84 temporary allocations under no stack; stacks.dwarf_end_unknown now).
	python3 - "$TMP/cf4.json" "$n" <<-'PY' || die "temporary allocations against the workload's count"
	import json, sys
	d = json.load(open(sys.argv[1]))
	n = int(sys.argv[2])
	assert d["temporary"] == n, (d["temporary"], n)
	assert sum(f["temporary"] for f in d["functions"]) == n, d["functions"]
	named = sum(f["temporary"] for f in d["functions"] if f["function"] in ("temp_alloc", "ring_a", "ring_b", "grow"))
	assert named == n, (named, n, d["functions"])
	PY
	"$A" collapsed --value inuse_objects "$TMP/cf4.hsnap" | awk '/;(ring_a|ring_b|grow) [0-9]+$/ { n += $NF } END { print n + 0 }' >"$TMP/cf4.live"
	eq "thread 0's ring, live at exit" 256 "$(cat "$TMP/cf4.live")"
	"$T/mutate" "$TMP/cf4.hsnap" "$TMP/cf3.hsnap" 0 3 && "$T/mutate" "$TMP/cf3.hsnap" "$TMP/cf4b.hsnap" 0 ||
		die "re-encoding"
	"$A" info "$TMP/cf3.hsnap" | grep -q "Format: 3.0, complete" || die "not written as 3.0"
	# The file's bytes and its zstd frames differ by encoding: the writer ends a frame at a
	# size of records, which the frees by class reach later (3.0 read 4 frames, 4 read 3,
	# once under load).
	for f in "top -n 0" "temporary -n 0" "leaks -n 0" "summary --json" "timeline" "collapsed --value alloc_space" \
		"collapsed --value inuse_objects" "stats --json" "top -n 0 --snapshot peak" "leaks -n 0 --at 50ms"; do
		# shellcheck disable=SC2086
		"$A" $f "$TMP/cf3.hsnap" 2>&1 | sed "s|$TMP/cf3.hsnap|FILE|g; /^File:/d; s/\"bytes\":[0-9]*,//; s/\"frames\":[0-9]*,//" >"$TMP/cf.a"
		# shellcheck disable=SC2086
		"$A" $f "$TMP/cf4b.hsnap" 2>&1 | sed "s|$TMP/cf4b.hsnap|FILE|g; /^File:/d; s/\"bytes\":[0-9]*,//; s/\"frames\":[0-9]*,//" >"$TMP/cf.b"
		diff -u "$TMP/cf.a" "$TMP/cf.b" || die "$f differs between the file by slot and by class"
	done
	# And it is what makes the file smaller: the frees of 3.0 name one block of 800. The
	# saving is bounded per free, not as a share of the file: the rest of the file (times
	# above all) carries more entropy by BPF, the more so on a loaded machine, and only
	# the frees' names differ between the two. Measured: 1.1 to 2.0 bits a free, by either
	# way, loaded or not, on the instances of this VM before 2026-11-27 (by BPF on that day's,
	# below, -0.3 to 0.2); slots re-encoded without classes would save nothing.
	local s3 s4 frees
	s3=$(stat -c %s "$TMP/cf3.hsnap") s4=$(stat -c %s "$TMP/cf4b.hsnap")
	frees=$("$A" stats "$TMP/cf3.hsnap" | sed -n 's/^Events: .* allocations, \([0-9]*\) frees.*/\1/p')
	[ -n "$frees" ] && [ "$frees" -gt 100000 ] || die "the file's count of frees: '$frees'"
	echo "version 4: $s4 bytes, 3.0: $s3, for $frees frees"
	# At least half a bit a free, in-process. By BPF the saving is the host's to give: a class
	# is a millisecond's blocks, and where a uprobe's trap takes 10 us (a VM of 2026-11-27:
	# the workload ran 3.9 s, not 0.5) the events are ten times sparser in time, a class
	# holds a block or two, and the time back to it costs as much as the slot it saves
	# (version 4 then read 0.3% larger than 3.0; docs/FORMAT.md, Size).
	[ "$VIA" = bpf ] && return 0
	[ $(((s3 - s4) * 16)) -ge "$frees" ] ||
		die "version 4: $s4 bytes against 3.0's $s3, for $frees frees: under half a bit saved a free"
}

# A failed realloc is no event to heaptrack's temporary allocations: both ways write the FREE
# before the call (the allocator could hand the block to another thread before it returns)
# and the block restored after it, which the analyzer undoes. Both give
# tests/workloads/failrealloc.c's counts.
t_failed_realloc_temporary() {
	need_bpf
	local s
	# Every event, and sampled at one byte, where each block is sampled and a restore
	# carries its size (the recorder holds no size of a sampled block's).
	for s in 0 1; do
		record -s $s -o "$TMP/frt-$s.hsnap" -- "$T/failrealloc" || die "recording -s $s"
		"$A" temporary --json -n 0 "$TMP/frt-$s.hsnap" >"$TMP/frt-$s.json" || die "temporary -s $s"
		"$A" summary --json "$TMP/frt-$s.hsnap" >"$TMP/frs-$s.json" || die "summary -s $s"
		python3 - "$TMP/frt-$s.json" "$TMP/frs-$s.json" <<-'PY' || die "failed reallocs, -s $s"
		import json, sys
		f = {x["function"]: x["temporary"] for x in json.load(open(sys.argv[1]))["functions"]}
		want = {"fr_one": 1, "fr_two": 0, "fr_three": 1, "fr_four": 0, "fr_five": 0}
		got = {k: f.get(k, 0) for k in want}
		assert got == want, got
		p = json.load(open(sys.argv[2]))["processes"][0]
		got = {k: p[k] for k in ("allocated_count", "allocated_bytes", "freed_count", "live_bytes", "peak_bytes")}
		want = {"allocated_count": 5, "allocated_bytes": 1500, "freed_count": 5, "live_bytes": 0, "peak_bytes": 900}
		assert got == want, got
		PY
	done
}

t_snapshots_diff() {
	need_bpf; need_go
	record --interval 0.05 --snapshot-at-peak -o "$TMP/d.hsnap" -- "$T/demo" || die "demo recording"
	"$A" info --json "$TMP/d.hsnap" >"$TMP/info.json"
	contains "$TMP/info.json" '"origin":"interval"'
	# --interval 0.05 means 0.05 s apart (the loop used to sleep 0.1 s between looks).
	local gap
	gap=$(grep -o '"time":[0-9.]*,"origin":"interval"' "$TMP/info.json" | cut -d: -f2 | cut -d, -f1 |
		awk 'NR > 1 { print $1 - prev } { prev = $1 }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	[ -n "$gap" ] && awk -v g="$gap" 'BEGIN { exit !(g > 0.03 && g < 0.075) }' ||
		die "--interval 0.05: median gap between interval snapshots $gap s"
	contains "$TMP/info.json" '"label":"peak"'
	contains "$TMP/info.json" '"label":"exit"'
	"$A" top --snapshot peak "$TMP/d.hsnap" >"$TMP/peak.top" || die "top at peak"
	contains "$TMP/peak.top" "cache_insert"
	"$A" top --snapshot exit "$TMP/d.hsnap" >"$TMP/exit.top"
	grep -q "^ *819200 .*cache_insert$" "$TMP/exit.top" || die "cache_insert must hold 819200 bytes at exit"
	grep -q "^ *25600 .*session_open$" "$TMP/exit.top" || die "session_open must hold 25600 bytes at exit"
	# --peak replays to the analyzer's own peak; --at past the end equals the end.
	"$A" top --peak "$TMP/d.hsnap" | grep -q "cache_insert$" || die "top --peak"
	"$A" top --at 3600 "$TMP/d.hsnap" >/dev/null 2>"$TMP/e"; eq "--at past the end exit" 4 $?
	contains "$TMP/e" "--at 3600s is past the end of the recording"
	[ "$("$A" top --at 0 "$TMP/d.hsnap" | grep -c cache_insert)" = 0 ] || die "nothing is live at 0s"
	"$A" top --value alloc_space "$TMP/d.hsnap" >"$TMP/alloc.top"
	grep -q "^ *512000 .*parse_request$" "$TMP/alloc.top" || die "parse_request must allocate 1000 x 512 bytes"
	"$A" diff --json --from 1 --to exit "$TMP/d.hsnap" >"$TMP/diff.json" || die "diff"
	grep -q '"name":"cache_insert","from":[0-9]*,"to":819200' "$TMP/diff.json" || die "diff cache_insert"
	"$A" diff --from 1 --to exit --pprof "$TMP/to.pb.gz" --base-pprof "$TMP/from.pb.gz" "$TMP/d.hsnap" >"$TMP/diff.txt"
	contains "$TMP/diff.txt" "cache_insert"
	go tool pprof -symbolize=none -top -unit=B -diff_base "$TMP/from.pb.gz" "$TMP/to.pb.gz" >"$TMP/pd" 2>&1 ||
		{ cat "$TMP/pd"; die "go tool pprof -diff_base rejected our output"; }
	contains "$TMP/pd" "cache_insert"
	# Two files: a second run of the same program does not grow.
	record -o "$TMP/d2.hsnap" -- "$T/demo" || die "second demo recording"
	"$A" diff --json "$TMP/d.hsnap" "$TMP/d2.hsnap" >"$TMP/diff2.json" || die "diff of two files"
	contains "$TMP/diff2.json" '"delta":0,'
	# SIGUSR1 marks a snapshot, once recording (the target has started).
	"$R" --via "$VIA" -o "$TMP/u.hsnap" -- "$T/alloc_c" loop 1.5 2>"$TMP/u.err" &
	local rpid=$! i
	for i in $(seq 100); do pgrep -P $rpid alloc_c >/dev/null && break; sleep 0.05; done
	kill -USR1 $rpid
	wait $rpid || die "recorder with SIGUSR1"
	"$A" info --json "$TMP/u.hsnap" | grep -q '"origin":"signal"' || die "no signal snapshot"
	"$A" top --snapshot 1 "$TMP/u.hsnap" >/dev/null || die "top at the signal snapshot"
}

# Blocks handed from a thread on one CPU to a thread on another, addresses reused across
# them: exact only if the per-CPU rings are merged in time order.
t_handoff() {
	handoff_at 0
}

# The same, sampled at a mean of 1 byte, which samples every block at its own size: each
# allocation enters the table of sampled blocks and sets its filter bit on one CPU while the
# other CPU's frees take blocks out and clear bits. A bit cleared while a block still stands
# for it, or a block lost from the table, turns its free away and leaves handoff_make live.
t_handoff_sampled() {
	handoff_at 1
}

handoff_at() {
	need_bpf; need_go
	[ "$(nproc)" -ge 2 ] || skip "one CPU: nothing to merge across"
	record -s "$1" --stats -o "$TMP/h.hsnap" -- "$T/handoff" || die "handoff recording at -s $1"
	"$A" pprof -o "$TMP/h.pb.gz" "$TMP/h.hsnap"
	local p=$TMP/h.pb.gz
	eq "handoff_make alloc_space" 9600000 "$(pv $p alloc_space handoff_make)"
	eq "handoff_make inuse_space (all freed on the other CPU)" absent "$(pv $p inuse_space handoff_make)"
	eq "handoff_keep inuse_space" 48000 "$(pv $p inuse_space handoff_keep)"
	eq "handoff_keep inuse_objects" 1000 "$(pv $p inuse_objects handoff_keep)"
	contains "$TMP/record.err" "lost.ringbuf_full        0"
}

# Other allocators, preloaded in front of glibc: their entry points must be found and
# probed, nested calls counted once, and the figures stay exact.
t_other_allocators() {
	need_bpf
	local lib n=0 top
	for lib in libjemalloc.so.2 libtcmalloc_minimal.so.4 libmimalloc.so.2.0; do
		lib=/usr/lib/x86_64-linux-gnu/$lib
		[ -r "$lib" ] || continue
		n=$((n + 1))
		LD_PRELOAD=$lib "$R" --via "$VIA" -o "$TMP/o.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/o.err" || { cat "$TMP/o.err"; die "$lib"; }
		[ "$VIA" = preload ] || contains "$TMP/o.err" "allocator functions in $(basename "$lib")"
		top=$("$A" top -n 0 "$TMP/o.hsnap" 2>/dev/null)
		for want in "20000 thread_work" "15000 child_work" "12288 plugin_alloc" "10000 leak_malloc" \
			"4000 make_calloc" "1792 aligned_allocs" "300 realloc_chain"; do
			echo "$top" | grep -qE "^ *${want% *} .* ${want#* }$" || die "$(basename "$lib"): expected $want"
		done
		"$A" stats --json "$TMP/o.hsnap" | grep -q '"lost.missed_uretprobe":0' || die "$(basename "$lib"): missed uretprobes"
	done
	[ $n -gt 0 ] || skip "none of jemalloc, tcmalloc or mimalloc is installed"
}

# --stack dwarf: the point is the contrast with fp on code built without frame pointers.
t_dwarf_nofp() {
	need_bpf; need_go
	record --stack dwarf -o "$TMP/nd.hsnap" -- "$T/nofp" || die "dwarf recording"
	record --stack fp -o "$TMP/nf.hsnap" -- "$T/nofp" || die "fp recording"
	"$A" pprof -o "$TMP/nd.pb.gz" "$TMP/nd.hsnap"
	"$A" pprof -o "$TMP/nf.pb.gz" "$TMP/nf.hsnap"
	local p=$TMP/nd.pb.gz
	eq "dwarf: nofp_level3 flat" 20000 "$(pv $p inuse_space nofp_level3)"
	eq "dwarf: nofp_level2 cum" 20000 "$(pv $p inuse_space nofp_level2 cum)"
	eq "dwarf: nofp_level1 cum" 20000 "$(pv $p inuse_space nofp_level1 cum)"
	eq "dwarf: main cum" 20000 "$(pv $p inuse_space main cum)"
	# fp keeps the allocating function ([sp]) but loses its callers.
	eq "fp: nofp_level3 flat" 20000 "$(pv "$TMP/nf.pb.gz" inuse_space nofp_level3)"
	eq "fp: nofp_level1 lost" absent "$(pv "$TMP/nf.pb.gz" inuse_space nofp_level1 cum)"
	"$A" stats "$TMP/nd.hsnap" >"$TMP/st"
	grep -q "DWARF stacks: 20 captures; 20 unwinds .*no binary 0, no CFI 0, window too small 0" "$TMP/st" ||
		{ cat "$TMP/st"; die "every dwarf stack must unwind"; }
	# A window too small to reach the callers is counted, and the frames reached are kept.
	record --stack dwarf=256 -o "$TMP/ns.hsnap" -- "$T/nofp" || die "small-window recording"
	"$A" stats --json "$TMP/ns.hsnap" | grep -q '"stacks.dwarf_window_short":[1-9]' || die "truncations not counted"
	# The documented maximum window loads and unwinds every level.
	record --stack dwarf=32768 -o "$TMP/n32.hsnap" -- "$T/nofp" || die "--stack dwarf=32768 recording"
	"$A" pprof -o "$TMP/n32.pb.gz" "$TMP/n32.hsnap"
	eq "dwarf=32768: nofp_level1 cum" 20000 "$(pv "$TMP/n32.pb.gz" inuse_space nofp_level1 cum)"
	"$A" top "$TMP/ns.hsnap" | grep -q "^ *20000 .*nofp_level3$" || die "frames reached must be kept"
}

# Default options, on a workload built without frame pointers: every level exact, every
# event and sampled (at 64 bytes a 1000-byte block is sampled with probability 1 - e^-15.6
# and weighs exactly one), through exec and fork, and for C++ and Rust.
t_auto_nofp() {
	need_bpf; need_go
	record -o "$TMP/an.hsnap" -- "$T/nofp" || die "recording"
	nofp_check an
	record -s 64 -o "$TMP/as.hsnap" -- "$T/nofp" || die "sampled recording"
	nofp_check as
	# Callers taking turns, their stacks alike but for one return address: each its own.
	record -o "$TMP/aa.hsnap" -- "$T/nofp" alt || die "recording nofp alt"
	"$A" pprof -o "$TMP/aa.pb.gz" "$TMP/aa.hsnap"
	eq "alt: nofp_level3 flat" 20000 "$(pv "$TMP/aa.pb.gz" inuse_space nofp_level3)"
	eq "alt: nofp_left cum" 10000 "$(pv "$TMP/aa.pb.gz" inuse_space nofp_left cum)"
	eq "alt: nofp_right cum" 10000 "$(pv "$TMP/aa.pb.gz" inuse_space nofp_right cum)"
	"$A" info "$TMP/an.hsnap" | grep -q "stacks: auto" || die "auto is not the default"
	# A shell that forks, and a child that execs: the tables follow.
	record -o "$TMP/af.hsnap" -- /bin/sh -c "$T/nofp; exit 0" || die "recording through a shell"
	nofp_check af main
	record -o "$TMP/ac.hsnap" -- "$T/alloc_cxx_nofp" || die "C++ recording"
	"$A" pprof -o "$TMP/ac.pb.gz" "$TMP/ac.hsnap"
	eq "C++ new Widget x20" 960 "$(pv "$TMP/ac.pb.gz" inuse_space 'cxx_new_objects()')"
	eq "C++ main cum (every level reached)" 7215 "$(pv "$TMP/ac.pb.gz" inuse_space main cum)"
	[ -x "$T/alloc_rust_nofp" ] || return 0
	record -o "$TMP/ar.hsnap" -- "$T/alloc_rust_nofp" || die "Rust recording"
	"$A" pprof -o "$TMP/ar.pb.gz" "$TMP/ar.hsnap"
	eq "Rust rust_boxes" 5000 "$(pv "$TMP/ar.pb.gz" inuse_space alloc_rust::rust_boxes)"
	eq "Rust alloc_rust::main cum" 8000 "$(pv "$TMP/ar.pb.gz" inuse_space alloc_rust::main cum)"
}

# Debian's own programs, built without frame pointers, default options: most of the heap
# at its peak sits in stacks that reach __libc_start_call_main.
reach_main() {
	local name=$1 p=$TMP/$1.pb.gz share
	"$A" pprof --snapshot peak -o "$p" "$TMP/$name.hsnap" 2>/dev/null || die "$name: pprof"
	share=$(go tool pprof -symbolize=none -top -cum -nodecount=100000 -sample_index=inuse_space -unit=B "$p" 2>/dev/null |
		awk '/Showing nodes accounting for/ { for (i = 1; i <= NF; i++) if ($i == "total") { t = $(i - 1); sub(/B,?$/, "", t) } }
		     $NF == "__libc_start_call_main" { v = $4; sub(/B$/, "", v) }
		     END { if (t > 0) printf "%d", 100 * v / t; else print 0 }')
	echo "$name: $share% of the in-use bytes at the peak reach __libc_start_call_main"
	[ "$share" -ge 90 ] || { "$A" stats "$TMP/$name.hsnap"; die "$name: only $share% reach __libc_start_call_main"; }
}

t_auto_debian() {
	need_bpf; need_go
	[ -x /usr/bin/python3 ] && command -v sqlite3 >/dev/null && command -v git >/dev/null ||
		skip "python3, sqlite3 or git from Debian is missing"
	record --snapshot-at-peak -o "$TMP/dsq.hsnap" -- sqlite3 :memory: "create table t(a integer primary key, b text);
		with recursive c(x) as (select 1 union all select x+1 from c where x < 100000)
		insert into t select x, hex(randomblob(20)) from c; create index i on t(b);" || die "sqlite3"
	reach_main dsq
	PYTHONMALLOC=malloc record --snapshot-at-peak -o "$TMP/dpy.hsnap" -- /usr/bin/python3 -c \
		'import json; d = {i: str(i) * 3 for i in range(200000)}; print(len(json.dumps(list(d.values())[:1000])))' ||
		die "python3"
	reach_main dpy
	mkdir -p "$TMP/repo" && git -C "$TMP/repo" init -q && for i in $(seq 200); do echo "line $i" >"$TMP/repo/f$i"; done
	record --snapshot-at-peak -o "$TMP/dgit.hsnap" -- git -C "$TMP/repo" add -A || die "git add"
	reach_main dgit
}

t_dwarf_cxx_rust() {
	need_bpf; need_go
	record --stack dwarf -o "$TMP/cd.hsnap" -- "$T/alloc_cxx_nofp" || die "C++ dwarf recording"
	"$A" pprof -o "$TMP/cd.pb.gz" "$TMP/cd.hsnap"
	eq "C++ new Widget x20" 960 "$(pv "$TMP/cd.pb.gz" inuse_space 'cxx_new_objects()')"
	eq "C++ main cum (every level reached)" 7215 "$(pv "$TMP/cd.pb.gz" inuse_space main cum)"
	[ -x "$T/alloc_rust_nofp" ] || skip "no Rust compiler: the Rust workload was not built"
	record --stack dwarf -o "$TMP/rd.hsnap" -- "$T/alloc_rust_nofp" || die "Rust dwarf recording"
	"$A" pprof -o "$TMP/rd.pb.gz" "$TMP/rd.hsnap"
	eq "Rust rust_boxes" 5000 "$(pv "$TMP/rd.pb.gz" inuse_space alloc_rust::rust_boxes)"
	eq "Rust alloc_rust::main cum" 8000 "$(pv "$TMP/rd.pb.gz" inuse_space alloc_rust::main cum)"
}

t_dwarf_debian() {
	need_bpf
	[ -x /usr/bin/python3 ] && command -v sqlite3 >/dev/null || skip "python3 or sqlite3 from Debian is missing"
	PYTHONMALLOC=malloc "$R" --via "$VIA" --stack dwarf -s 64k --snapshot-at-peak -o "$TMP/py.hsnap" -- /usr/bin/python3 -c \
		'd = {i: str(i) * 3 for i in range(300000)}; print(len(d))' >/dev/null 2>"$TMP/py.err" || { cat "$TMP/py.err"; die "python3"; }
	"$A" top -n 0 --snapshot peak "$TMP/py.hsnap" >"$TMP/py.top" 2>/dev/null
	grep -q " Py_BytesMain$" "$TMP/py.top" || die "python3 stacks must reach Py_BytesMain"
	grep -qE " _?Py[A-Za-z_]+$" "$TMP/py.top" || die "no CPython function names"
	"$R" --via "$VIA" --stack dwarf -s 64k --snapshot-at-peak -o "$TMP/sq.hsnap" -- sqlite3 :memory: \
		"create table t(a integer primary key, b text); with recursive c(x) as (select 1 union all select x+1 from c where x < 200000) insert into t select x, hex(randomblob(20)) from c;" \
		>/dev/null 2>"$TMP/sq.err" || { cat "$TMP/sq.err"; die "sqlite3"; }
	"$A" top -n 0 --snapshot peak "$TMP/sq.hsnap" >"$TMP/sq.top" 2>/dev/null
	grep -q " sqlite3_step$" "$TMP/sq.top" || die "sqlite3 stacks must reach sqlite3_step"
	grep -q " sqlite3VdbeExec$" "$TMP/sq.top" || die "sqlite3 stacks must reach sqlite3VdbeExec"
}

t_killed_recorder() {
	need_bpf
	local rpid i
	# A shell between them keeps the target's exit status when the recorder is gone.
	"$R" --via "$VIA" -o "$TMP/k.hsnap" -- /bin/sh -c "$T/alloc_c loop 3; echo \$? >$TMP/k.status" 2>"$TMP/k.err" &
	rpid=$!
	for i in $(seq 100); do pgrep -f "alloc_c loop 3" >/dev/null && break; sleep 0.05; done
	pgrep -f "alloc_c loop 3" >/dev/null || die "target not started"
	# Killed once the file holds allocations (a condition, not a time: a loaded machine can
	# take longer than a second to write the first frame).
	for i in $(seq 400); do
		"$A" stats --json "$TMP/k.hsnap" 2>/dev/null | grep -q '"allocs":[1-9]' && break
		sleep 0.05
	done
	kill -9 $rpid; wait $rpid 2>/dev/null
	pgrep -f "alloc_c loop 3" >/dev/null || die "the target died with the recorder"
	for i in $(seq 100); do [ -s "$TMP/k.status" ] && break; sleep 0.1; done
	eq "the target's own exit status, after its recorder was killed" 0 "$(cat "$TMP/k.status" 2>/dev/null)"
	"$A" top --no-symbolize "$TMP/k.hsnap" >"$TMP/k.top" 2>"$TMP/k.e" || { cat "$TMP/k.e"; die "a killed recorder's file must stay readable"; }
	contains "$TMP/k.e" "no footer"
	# The report's own header says where it ends, not only the warning on stderr.
	contains "$TMP/k.top" "Snapshot: end of the file at "
	contains "$TMP/k.top" "(cut short: the recorder did not finish)"
	"$A" stats --json "$TMP/k.hsnap" | grep -q '"allocs":[1-9]' || die "allocations recorded before the kill are lost"
}

# 2000 dlopen/dlclose rounds of a plugin, each at a new address and named by a relative path
# (dlopen keeps it as given): 2000 x 16 bytes from plugin_alloc, and the profiler in the
# process keeps nothing of the modules gone (alloc_c prints how the address space grew).
t_dlcycle() {
	need_bpf
	record --stack auto -o "$TMP/dl.hsnap" -- "$T/alloc_c" dlcycle 2000 || die "dlcycle"
	"$A" top -n 0 "$TMP/dl.hsnap" >"$TMP/dl.top" 2>&1
	grep -q "^ *32000 .*plugin_alloc$" "$TMP/dl.top" || { head -20 "$TMP/dl.top"; die "plugin_alloc: 2000 x 16"; }
	eq "plugin_alloc's bytes under main;dlcycle" 32000 \
		"$("$A" collapsed "$TMP/dl.hsnap" 2>/dev/null | awk '/;main;dlcycle;plugin_alloc / { n += $NF } END { print n + 0 }')"
	local grew
	grew=$(sed -n 's/^dlcycle grew \(-*[0-9]*\) KiB$/\1/p' "$TMP/record.out")
	[ -n "$grew" ] && [ "$grew" -lt 1024 ] || die "the address space grew by ${grew:-?} KiB over 1900 rounds"
}

# A launched fork storm: 100 children, each exec'ing a short command, all named.
t_fork_storm() {
	need_bpf
	record -o "$TMP/fs.hsnap" -- /bin/sh -c "for i in \$(seq 100); do $T/quick y\$i & done; wait" || die "fork storm"
	"$A" summary --json "$TMP/fs.hsnap" >"$TMP/fs.json" 2>/dev/null
	eq "fork storm children named quick" 100 "$(grep -o '"comm":"quick","cmdline":"[^"]*quick y[0-9]*"' "$TMP/fs.json" | sort -u | wc -l)"
	! grep -q '"comm":"",' "$TMP/fs.json" || die "a process without a name"
	"$A" top -n 0 "$TMP/fs.hsnap" 2>/dev/null | grep -q "^ *300000 .*quick_alloc$" || die "quick_alloc: 100 x 3000"
}

# --max-stack's default holds a deep interpreter stack whole: Debian's python3 recursing 25
# levels through a C call (functools.partial: 4 native frames a level, 114 in all, where 3.11
# runs a plain Python call in the same C frame), then b'x' * 4000037 (a 4000070-byte block).
t_max_stack_default() {
	[ -x /usr/bin/python3.11 ] || skip "no /usr/bin/python3.11 (Debian's python3.11)"
	cat >"$TMP/deep.py" <<'EOF'
import functools
kept = []
def level(n):
    if n:
        return functools.partial(level, n - 1)()
    kept.append(b'x' * 4000037)
level(25)
EOF
	local via=$VIA line n
	need_bpf
	"$R" --via $via -s 0 -o "$TMP/deep-$via.hsnap" -- /usr/bin/python3.11 "$TMP/deep.py" >/dev/null 2>"$TMP/deep.err" ||
		{ cat "$TMP/deep.err"; die "$via: recording python3"; }
	eq "$via: stacks.cut_at_max_stack" 0 "$("$A" stats "$TMP/deep-$via.hsnap" 2>/dev/null | awk '$1 == "stacks.cut_at_max_stack" { print $2 }')"
	line=$("$A" collapsed --value alloc_space "$TMP/deep-$via.hsnap" 2>/dev/null | awk '$NF == 4000070')
	[ -n "$line" ] || die "$via: no stack with the 4000070-byte block"
	if [ "$via" = bpf ]; then
		n=$(echo "${line% *}" | tr ';' '\n' | grep -c '^_PyEval_EvalFrameDefault$')
		eq "$via: interpreter frames (the module's, one per partial call: 25)" 26 "$n"
	else
		# In-process, the Python frames stand where the eval loop ran (issue 25): the
		# module, level(25) and one level per partial call; no eval frame is left.
		eq "$via: eval-loop frames left" 0 "$(echo "${line% *}" | tr ';' '\n' | grep -c '^_PyEval_EvalFrameDefault$')"
		eq "$via: Python frames (<module>, then level 26 times)" "1 26" \
			"$(echo "${line% *}" | tr ';' '\n' | grep -c '^<module> (deep.py)$') $(echo "${line% *}" | tr ';' '\n' | grep -c '^level (deep.py)$')"
	fi
	eq "$via: the outermost frame" _start "$(echo "$line" | cut -d';' -f1)"
	n=$(echo "${line% *}" | tr ';' '\n' | wc -l)
	[ "$n" -gt 64 ] || die "$via: the stack has $n frames: it no longer tests a default above 64"
}

# A stack cut at --max-stack must not cut the next ones: the in-process unwinder took the
# frames of a shallower walk's callers from the last walk's, which lacked the frames past its
# cut. 25 levels (114 frames, cut at 100), then, back at level 20 (94 frames), b'y' * 3000017.
t_max_stack_after_cut() {
	[ -x /usr/bin/python3.11 ] || skip "no /usr/bin/python3.11 (Debian's python3.11)"
	cat >"$TMP/memo.py" <<'EOF'
import functools
kept = []
def level(n):
    if n:
        r = functools.partial(level, n - 1)()
        if n == 5:
            kept.append(b'y' * 3000017)
        return r
    kept.append(b'x' * 4000037)
level(25)
EOF
	local via=$VIA line n
	need_bpf
	"$R" --via $via -s 0 --max-stack 100 -o "$TMP/memo-$via.hsnap" -- /usr/bin/python3.11 "$TMP/memo.py" >/dev/null 2>"$TMP/memo.err" ||
		{ cat "$TMP/memo.err"; die "$via: recording python3"; }
	n=$("$A" stats "$TMP/memo-$via.hsnap" 2>/dev/null | awk '$1 == "stacks.cut_at_max_stack" { print $2 }')
	if [ "$via" = bpf ]; then
		eq "$via: stacks.cut_at_max_stack (the 114-frame one only)" 1 "$n"
	else
		# In-process, pymalloc's objects are seen too (issue 25), some made deeper than 100
		# frames: the 114-frame one is among those cut.
		[ "${n:-0}" -ge 1 ] || die "$via: stacks.cut_at_max_stack is ${n:-absent}: the 114-frame stack was not cut"
	fi
	line=$("$A" collapsed --value alloc_space "$TMP/memo-$via.hsnap" 2>/dev/null | awk '$NF == 3000050')
	[ -n "$line" ] || die "$via: no stack with the 3000050-byte block"
	eq "$via: the 94-frame stack's outermost frame" _start "$(echo "$line" | cut -d';' -f1)"
	if [ "$via" = bpf ]; then
		eq "$via: its interpreter frames (the module's, one per partial call: 20)" 21 "$(echo "${line% *}" | tr ';' '\n' | grep -c '^_PyEval_EvalFrameDefault$')"
	else
		eq "$via: its Python frames (<module>, then level(25) down to level(5))" "1 21" \
			"$(echo "${line% *}" | tr ';' '\n' | grep -c '^<module> (memo.py)$') $(echo "${line% *}" | tr ';' '\n' | grep -c '^level (memo.py)$')"
	fi
}

# ---- the allocator table (common/allocators.def) ----

# libc_alloc (tests/workloads/libc_alloc.c) calls __libc_malloc and __libc_free, which the table
# lists: their exact figures by each way in, next to plain malloc's.
t_alloctab_libc_malloc() {
	need_bpf; need_go
	record -o "$TMP/alt-$VIA.hsnap" -- "$T/libc_alloc" || die "recording libc_alloc failed"
	alloctab_check alt-$VIA
}

ALL="$ALL t_c_exact@bpf t_c_exact@preload t_c_labels_inline@bpf t_c_labels_inline@preload t_cxx_exact@bpf t_cxx_exact@preload"
ALL="$ALL t_rust_exact@bpf t_rust_exact@preload t_sampled@bpf t_sampled@preload t_sampler_strata@bpf t_sampler_strata@preload t_class_frees@bpf t_class_frees@preload t_failed_realloc_temporary@bpf t_failed_realloc_temporary@preload t_snapshots_diff@bpf t_snapshots_diff@preload"
ALL="$ALL t_handoff@bpf t_handoff@preload t_handoff_sampled@bpf t_handoff_sampled@preload t_other_allocators@bpf t_other_allocators@preload t_dwarf_nofp@bpf t_dwarf_nofp@preload"
ALL="$ALL t_dwarf_cxx_rust@bpf t_dwarf_cxx_rust@preload t_dwarf_debian@bpf t_dwarf_debian@preload"
ALL="$ALL t_killed_recorder@bpf t_killed_recorder@preload t_fork_storm@bpf t_fork_storm@preload t_dlcycle@bpf t_dlcycle@preload"
ALL="$ALL t_auto_nofp@bpf t_auto_nofp@preload t_auto_debian@bpf t_auto_debian@preload"
ALL="$ALL t_max_stack_default@preload t_max_stack_default@bpf t_max_stack_after_cut@preload t_max_stack_after_cut@bpf"
ALL="$ALL t_alloctab_libc_malloc@bpf t_alloctab_libc_malloc@preload"

# The recorder's layering (recorder/way.h, docs/ARCHITECTURE.md): not a test of one way, but of
# how the ways in sit in the recorder; registered once, without @WAY.

# The recorder's layers: no file includes one above its own, the files every way in shares
# reach a way only through struct way_ops, and no way in includes another's internals (the
# injected way wraps in-process's, as its header says). Fails when someone adds, say,
# #include "bpf_way.h" or a call to attach_object() to processes.c.
t_recorder_layers() {
	local f inc bad=""
	# file:forbidden-includes (a | separated extended regex of header names)
	local rules=(
		"recorder/output.[ch] recorder/objects.[ch] recorder/procfs.[ch] recorder/nspid.[ch] recorder/signals.[ch] recorder/sampling.[ch] recorder/launch.[ch] recorder/ptrmap.h:session|way|processes|pipeline|ring_reader|bpf_way|preload_way|preload_shm|inject|heapsnap\\.skel|via"
		"recorder/session.h recorder/way.h recorder/processes.h recorder/pipeline.h recorder/ring_reader.h:bpf_way|preload_way|preload_shm|inject|heapsnap\\.skel|via|processes|pipeline|ring_reader"
		"recorder/processes.c:pipeline|ring_reader|bpf_way|preload_way|preload_shm|inject|heapsnap\\.skel|via|bpf/libbpf|bpf/bpf"
		"recorder/pipeline.c:ring_reader|bpf_way|preload_way|preload_shm|inject|heapsnap\\.skel|via|bpf/libbpf|bpf/bpf"
		"recorder/ring_reader.c:bpf_way|preload_way|preload_shm|inject|heapsnap\\.skel|via|bpf/libbpf|bpf/bpf"
		"recorder/bpf/bpf_way.[ch] recorder/bpf/bpf_probes.c recorder/bpf/bpf_unwind_tables.c:via|preload_way|preload_shm|inject"
		"recorder/preload/preload_way.[ch] recorder/preload/preload_children.c:via|bpf_way|heapsnap\\.skel|inject"
		"recorder/inject/inject_way.c:via|bpf_way|heapsnap\\.skel"
	)
	local r files re
	for r in "${rules[@]}"; do
		files=${r%%:*}
		re=${r#*:}
		for f in $files; do
			[ -f "$f" ] || die "layering rule names $f, which does not exist"
			inc=$(grep -E '^#include [<"]' "$f" | sed -E 's/^#include [<"]([^">]*)[">].*/\1/' |
				grep -E "^($re)(\\.h)?$" || true)
			[ -z "$inc" ] || bad="$bad $f->$(echo $inc | tr ' ' ',')"
		done
	done
	[ -z "$bad" ] || die "upward or sideways includes:$bad"
	# The shared files call BPF's probes only through the table.
	! grep -nE '\b(attach_object|scan_object|detach_pid|unw_tables__|bpf_map_|skel)\b' \
		recorder/processes.c recorder/pipeline.c recorder/ring_reader.c recorder/session.c ||
		die "a file every way shares calls BPF directly"
	! grep -nE '\b(preload__|inject__)[a-z_]*\(' recorder/processes.c recorder/pipeline.c recorder/ring_reader.c \
		recorder/session.c || die "a file every way shares calls the in-process or injected way directly"
}

ALL="$ALL t_recorder_layers"

# A snapshot marked by SIGUSR1 holds every event made before the signal and none after
# (tests/workloads/snap_signal.c: 200,000 x 100 bytes kept from snap_keep, the signal sent
# with no pause, the blocks freed once the snapshot is in the file). The recorder read its
# signals after a drain: the snapshot held 136,022 (preload) and 193,205 (bpf) of them.
t_snapshot_signal_drained() {
	need_bpf
	local name=ssd-$VIA
	mkfifo "$TMP/$name.fifo"
	"$R" --via "$VIA" -s 0 -o "$TMP/$name.hsnap" -- "$T/snap_signal" 200000 "$TMP/$name.fifo" \
		>"$TMP/$name.out" 2>"$TMP/$name.rerr" &
	RPID=$!
	waitfor "$TMP/$name.out" ready || { kill $RPID; cat "$TMP/$name.rerr"; die "$name: never ready"; }
	echo parent >"$TMP/$name.fifo"
	snap_signal_check $name 200000
}

ALL="$ALL t_snapshot_signal_drained@preload t_snapshot_signal_drained@bpf"

# The warning for stacks cut at --max-stack advises raising it only when it can be raised: at
# its default, 127, it said "it goes up to 127, the default" all the same. A Python recursion
# 200 deep has more than 127 frames. (BPF's walk stops at --max-stack uncounted: preload only.)
t_max_stack_message() {
	need_bpf
	printf 'kept = []\ndef level(n):\n    if n:\n        return level(n - 1)\n    kept.append(bytes(4000037))\nlevel(200)\n' >"$TMP/deep200.py"
	"$R" --via "$VIA" -s 0 -o "$TMP/msm.hsnap" -- /usr/bin/python3 "$TMP/deep200.py" >/dev/null 2>"$TMP/msm.err" ||
		{ cat "$TMP/msm.err"; die "recording python3"; }
	contains "$TMP/msm.err" "stacks cut at 127 frames, the most a record file holds"
	grep -q "it goes up to 127" "$TMP/msm.err" && { cat "$TMP/msm.err"; die "at the default, the warning advises raising --max-stack"; }
	"$R" --via "$VIA" -s 0 --max-stack 20 -o "$TMP/msm.hsnap" -- /usr/bin/python3 "$TMP/deep200.py" >/dev/null 2>"$TMP/msm.err" ||
		{ cat "$TMP/msm.err"; die "recording python3 at --max-stack 20"; }
	contains "$TMP/msm.err" "stacks cut at --max-stack; it goes up to 127"
}

ALL="$ALL t_max_stack_message@preload"

# A fork child gone before its maps were read ran in its parent's image as it was at the fork,
# even if the parent exec'd since: dash's command substitution runs in a subshell, then dash
# execs sleep. The subshell read as /usr/bin/sleep (preload), and its frames as bare addresses
# (both ways): it was given its parent's maps as last read, the new image's.
t_fork_then_parent_exec() {
	need_bpf
	[ -x /usr/bin/dash ] || skip "no /usr/bin/dash"
	local f=$TMP/fpe-$VIA.hsnap child
	"$R" --via "$VIA" -s 0 -o "$f" -- /usr/bin/dash -c 'a=$(echo hi; x=aaaa; echo $x); exec /usr/bin/sleep 0.3' \
		>/dev/null 2>"$TMP/fpe.err" || { cat "$TMP/fpe.err"; die "recording"; }
	"$A" info "$f" >"$TMP/fpe.info" || die "info"
	child=$(awk '/^  [0-9]+ \(.*forked/ { print $1 }' "$TMP/fpe.info")
	[ -n "$child" ] || { cat "$TMP/fpe.info"; die "no fork child in the recording"; }
	[ "$VIA" = bpf ] || grep -q "^  $child (dash, forked, parent [0-9]*) /usr/bin/dash " "$TMP/fpe.info" ||
		{ cat "$TMP/fpe.info"; die "the subshell $child is not /usr/bin/dash"; }
	"$A" collapsed --pid "$child" "$f" >"$TMP/fpe.collapsed" 2>/dev/null || die "collapsed --pid $child"
	[ -s "$TMP/fpe.collapsed" ] || die "the subshell's allocations are not in the recording"
	grep -q "dash+0x\|;dash\b" "$TMP/fpe.collapsed" || { cat "$TMP/fpe.collapsed"; die "no frame of dash in the subshell's stacks"; }
	grep -E '(^|;)0x[0-9a-f]+' "$TMP/fpe.collapsed" && die "the subshell's stacks hold bare addresses"
	return 0
}

ALL="$ALL t_fork_then_parent_exec@preload t_fork_then_parent_exec@bpf"
