# Following a recording as it is written: heapsnap-record -o - (the record stream on stdout),
# heapsnap-analyze live (text updates, as top prints them), heapsnap-record --live. The
# figures are tests/workloads/live_phases.c's (phase_keep 10 x 100000, then phase_second
# 5 x 7000, each held on a FIFO until the test has seen it in an update) and, for Python,
# tracemalloc's.

# live_rows FILE N: the rows (from "Showing") of update N of a live output.
live_rows() { awk -v n="$2" '/^File:/ { k++ } k == n && !/^$/' "$1" | sed -n '/^Showing/,$p'; }
# live_moment FILE N: the moment T update N names.
live_moment() { awk -v n="$2" '/^File:/ { k++ } k == n && /^Snapshot:/ { sub(/.* at /, ""); sub(/s.*/, ""); print }' "$1"; }
# flat FILE NAME: the last flat figure a text update shows for function NAME.
live_flat() { awk -v fn="$2" '$NF == fn { v = $1 } END { print v }' "$1"; }

# What a test started, ended by pid when it fails (a workload waits on its FIFO forever).
LIVE_PIDS=
# The workload and its recorder are found by the test's own FIFO (under $TMP), at the failure.
live_die() {
	local p
	p="$LIVE_PIDS $(pgrep -f -- "$TMP/lp.fifo" | tr '\n' ' ')"
	[ -n "${p// /}" ] && kill $p 2>/dev/null
	die "$@"
}

# live_drive OUT: waits for phase_keep's bytes in OUT, lets the workload go on, waits for
# phase_second's, lets it end (its FIFO is $TMP/lp.fifo).
live_drive() {
	waitfor "$1" "     1000000 " || { cat "$1"; live_die "no update showed phase_keep's 1000000 bytes"; }
	grep -qE '^ +1000000 .* phase_keep$' "$1" || { cat "$1"; live_die "phase_keep's bytes not its own"; }
	echo go >"$TMP/lp.fifo"
	waitfor "$1" "  phase_second" || { cat "$1"; live_die "no update showed phase_second"; }
	echo go >"$TMP/lp.fifo"
}

live_fifo() { rm -f "$TMP/lp.fifo"; mkfifo "$TMP/lp.fifo"; }

# (a) --live on a launched command: each phase's exact bytes as it runs, and the file whole.
t_live_record() {
	live_fifo
	"$R" --via preload --live --refresh 0.2s -o "$TMP/lr.hsnap" -- "$T/live_phases" "$TMP/lp.fifo" \
		>"$TMP/lr.out" 2>"$TMP/lr.err" &
	local pid=$!
	LIVE_PIDS=$pid
	live_drive "$TMP/lr.out"
	wait $pid || { cat "$TMP/lr.err"; live_die "recorder exit"; }
	# After phase two: phase_keep's blocks freed, phase_second's 35000 live, in the last update.
	contains "$TMP/lr.out" "Snapshot: live, the end, at "
	eq "last update: phase_second" 35000 "$(live_flat "$TMP/lr.out" phase_second)"
	eq "last update: phase_keep gone" "" "$(awk '/^File:/ { k++; t = "" } { t = t $0 "\n" } END { printf "%s", t }' "$TMP/lr.out" | grep ' phase_keep$')"
	"$A" top "$TMP/lr.hsnap" >"$TMP/lr.top" || live_die "the file reads whole"
	grep -qE '^ +35000 .* phase_second$' "$TMP/lr.top" || live_die "top of the file"
}

# (b) live FILE follows another recorder's file, from its start, and ends with it; (d) every
# update's figures are top --at T's of the finished file.
t_live_follow() {
	live_fifo
	"$R" --via preload -o "$TMP/lf.hsnap" -- "$T/live_phases" "$TMP/lp.fifo" 2>"$TMP/lf.rec.err" &
	local pid=$! n i t
	LIVE_PIDS=$pid
	waitfor "$TMP/lf.rec.err" "kept" || live_die "the workload did not start"
	for i in $(seq 200); do [ -s "$TMP/lf.hsnap" ] && break; sleep 0.05; done
	"$A" live --refresh 0.2s "$TMP/lf.hsnap" >"$TMP/lf.out" 2>"$TMP/lf.err" &
	local lpid=$!
	LIVE_PIDS="$LIVE_PIDS $lpid"
	live_drive "$TMP/lf.out"
	wait $pid || live_die "recorder exit"
	wait $lpid || { cat "$TMP/lf.err"; live_die "live exit"; }
	contains "$TMP/lf.out" "Snapshot: live, the end, at "
	n=$(grep -c '^File:' "$TMP/lf.out")
	[ "$n" -ge 3 ] || live_die "only $n updates"
	for i in $(seq "$n"); do
		t=$(live_moment "$TMP/lf.out" "$i")
		live_rows "$TMP/lf.out" "$i" >"$TMP/lf.u$i"
		"$A" top --at "${t}s" "$TMP/lf.hsnap" 2>/dev/null | sed -n '/^Showing/,$p' >"$TMP/lf.at$i"
		diff "$TMP/lf.u$i" "$TMP/lf.at$i" >/dev/null || { diff "$TMP/lf.u$i" "$TMP/lf.at$i"; live_die "update $i (at ${t}s) is not top --at ${t}s"; }
	done
	echo "NOTE: $n updates, each top --at T's figures"
}

# (c) heapsnap-record -o - | heapsnap-analyze live -: the same figures, the command's stdout
# kept out of the stream; -o - refuses a terminal and --live.
t_live_stdout() {
	live_fifo
	("$R" --via preload -o - -- "$T/live_phases" "$TMP/lp.fifo" 2>"$TMP/ls.rec.err" |
		"$A" live --batch --refresh 0.2s - >"$TMP/ls.out" 2>"$TMP/ls.err") &
	local pid=$!
	LIVE_PIDS=$pid
	live_drive "$TMP/ls.out"
	wait $pid || { cat "$TMP/ls.err"; live_die "pipeline exit"; }
	contains "$TMP/ls.out" "File: -"
	eq "end: phase_second" 35000 "$(live_flat "$TMP/ls.out" phase_second)"
	# The stream is the file: written to a file through a pipe, it reads whole.
	"$R" --via preload -o - -- "$T/phases" 2>/dev/null | cat >"$TMP/ls.hsnap"
	"$A" top "$TMP/ls.hsnap" >"$TMP/ls.top" 2>&1 || { cat "$TMP/ls.top"; live_die "the stream as a file"; }
	grep -qE '^ +1000000 .* phase_two$' "$TMP/ls.top" || live_die "phases through -o -"
	"$R" --via preload -o - --live -- /bin/true >/dev/null 2>"$TMP/ls.both" && live_die "-o - with --live"
	contains "$TMP/ls.both" "pipe it to"
	if command -v script >/dev/null; then
		script -qec "$R --via preload -o - -- /bin/true" /dev/null >"$TMP/ls.tty" 2>&1 && live_die "-o - to a terminal"
		contains "$TMP/ls.tty" "terminal"
	fi
}

# (e) A Python program's updates: its Python function's bytes, as tracemalloc counts them.
t_live_python() {
	local py=/usr/bin/python3 want
	[ -x "$py" ] || skip "no Debian /usr/bin/python3"
	want=$("$py" tests/workloads/live_phases.py --tracemalloc) || live_die "tracemalloc"
	live_fifo
	"$R" --via preload --live --refresh 0.2s -o "$TMP/lpy.hsnap" -- "$py" "$(realpath tests/workloads/live_phases.py)" "$TMP/lp.fifo" \
		>"$TMP/lpy.out" 2>"$TMP/lpy.err" &
	local pid=$!
	LIVE_PIDS=$pid
	waitfor "$TMP/lpy.out" "keep_py (live_phases.py)" || { cat "$TMP/lpy.err" "$TMP/lpy.out"; live_die "no Python function in an update"; }
	waitfor "$TMP/lpy.out" "Snapshot: live at" || live_die "no update"
	# The update after the one that first showed it: the program is waiting by then.
	local i
	for i in $(seq 100); do
		[ "$(grep -c '^File:' "$TMP/lpy.out")" -ge 3 ] && break
		sleep 0.1
	done
	echo go >"$TMP/lp.fifo"
	wait $pid || { cat "$TMP/lpy.err"; live_die "recorder exit"; }
	grep -A1000 'Python functions' "$TMP/lpy.out" | grep -m1 'keep_py (live_phases.py)' >"$TMP/lpy.row"
	awk -v w="$want" '{ if ($1 != w) exit 1 }' "$TMP/lpy.row" || { cat "$TMP/lpy.out"; live_die "keep_py: expected own $want, got $(cat "$TMP/lpy.row")"; }
	echo "NOTE: keep_py $want bytes, as tracemalloc counts"
}

# (f) Damage: a stream cut mid-frame waits while it may grow, and at a pipe's end is a
# warning naming the offset; a damaged frame is an error naming file and offset (exit 3).
t_live_damage() {
	local f=$TMP/ld.hsnap size
	"$R" --via preload -o "$f" -- "$T/phases" 2>/dev/null || live_die "record"
	size=$(stat -c %s "$f")
	head -c $((size - 40)) "$f" | "$A" live - >"$TMP/ld.out" 2>"$TMP/ld.err"
	eq "cut pipe exit" 0 $?
	contains "$TMP/ld.err" "standard input: truncated at offset"
	# A frame cut mid-way while following a file: waited for, then read when it is whole.
	head -c $((size - 40)) "$f" >"$TMP/ld.grow"
	"$A" live --refresh 0.1s "$TMP/ld.grow" >"$TMP/ld.gout" 2>"$TMP/ld.gerr" &
	local lpid=$!
	LIVE_PIDS=$lpid
	waitfor "$TMP/ld.gout" "Snapshot: live at" || { cat "$TMP/ld.gerr"; live_die "no update while waiting"; }
	kill -0 $lpid || live_die "live ended on a frame being written"
	tail -c 40 "$f" >>"$TMP/ld.grow"
	wait $lpid || { cat "$TMP/ld.gerr"; live_die "live exit after the rest came"; }
	[ ! -s "$TMP/ld.gerr" ] || { cat "$TMP/ld.gerr"; live_die "said something of a frame being written"; }
	contains "$TMP/ld.gout" "Snapshot: live, the end, at "
	python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[40] ^= 0xff; open(sys.argv[2], "wb").write(d)' "$f" "$TMP/ld.bad"
	"$A" live "$TMP/ld.bad" >/dev/null 2>"$TMP/ld.berr"
	eq "damaged exit" 3 $?
	grep -qE "ld.bad: offset [0-9]+" "$TMP/ld.berr" || { cat "$TMP/ld.berr"; live_die "no file and offset"; }
	cat "$TMP/ld.bad" | "$A" live - >/dev/null 2>"$TMP/ld.pberr"
	eq "damaged pipe exit" 3 $?
	grep -qE "standard input: offset [0-9]+" "$TMP/ld.pberr" || { cat "$TMP/ld.pberr"; live_die "pipe: no offset"; }
}

# (g) -a --live: every process but the recorder and its own view, whose allocations (a few
# MB: sampled at the default rate, some of them always are) would otherwise feed the view
# what it does itself. Sampled: every event of a whole host is the bench's, not a test's.
t_live_all() {
	need_bpf
	local i rpid
	"$R" -a --live --refresh 0.3s --duration 60 -o "$TMP/la.hsnap" >"$TMP/la.out" 2>"$TMP/la.err" &
	rpid=$!
	LIVE_PIDS=$rpid
	for i in $(seq 200); do grep -q "recording every process" "$TMP/la.err" && break; sleep 0.05; done
	"$T/quick" la1 || live_die "the workload"
	waitfor "$TMP/la.out" "Snapshot: live at" || { cat "$TMP/la.err"; live_die "no update"; }
	for i in $(seq 200); do [ "$(grep -c '^File:' "$TMP/la.out")" -ge 3 ] && break; sleep 0.05; done
	kill -INT $rpid
	wait $rpid || { cat "$TMP/la.err"; live_die "recorder -a --live"; }
	contains "$TMP/la.out" "Snapshot: live, the end, at "
	"$A" summary --json "$TMP/la.hsnap" >"$TMP/la.json" 2>/dev/null || live_die "summary"
	grep -q '"cmdline":"[^"]*quick la1"' "$TMP/la.json" || live_die "the workload not recorded"
	grep -q '"cmdline":"[^"]*heapsnap-analyze live --recorder' "$TMP/la.json" && live_die "the recorder's own view was recorded"
	return 0
}

ALL="$ALL t_live_record t_live_follow t_live_stdout t_live_python t_live_damage t_live_all"
