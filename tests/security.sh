# The security boundary: files from elsewhere never crash, hang or blow up the analyzer
# (damaged, truncated, mutated, crafted, fuzzed), sanitizers see no memory error, and output
# files are 0600 and never written through a symlink or over another user's file.

t_bad_input() {
	local f=testdata/alloc_c.hsnap rc size
	"$T/garbage_ok" "$TMP/garbage.bin" 4096
	"$A" info "$TMP/garbage.bin" 2>"$TMP/e"; rc=$?
	eq "garbage exit" 1 $rc; contains "$TMP/e" "$TMP/garbage.bin: offset 0: not a heapsnap record file"
	: >"$TMP/empty.hsnap"
	"$A" top "$TMP/empty.hsnap" 2>"$TMP/e"; rc=$?; eq "empty file exit" 1 $rc; contains "$TMP/e" "shorter than its 16-byte header"
	"$A" top "$TMP/missing.hsnap" 2>"$TMP/e"; rc=$?; eq "missing file exit" 1 $rc; contains "$TMP/e" "$TMP/missing.hsnap: cannot open"
	"$A" top "$TMP" 2>"$TMP/e"; rc=$?; eq "directory exit" 1 $rc; contains "$TMP/e" "not a regular file"
	head -c 16 $f >"$TMP/header-only.hsnap"
	"$A" top "$TMP/header-only.hsnap" 2>"$TMP/e"; rc=$?; eq "header-only exit" 4 $rc; contains "$TMP/e" "no session header"
	# A newer major version is refused by name (this one reads 1 to 5).
	cp $f "$TMP/v6.hsnap"; printf '\x06' | dd of="$TMP/v6.hsnap" bs=1 seek=8 conv=notrunc 2>/dev/null
	"$A" info "$TMP/v6.hsnap" 2>"$TMP/e"; rc=$?; eq "newer major exit" 1 $rc; contains "$TMP/e" "format version 6.0 is not supported"
	# A damaged frame: exit 3, naming the offset; what came before is still reported.
	size=$(stat -c %s $f)
	cp $f "$TMP/bad.hsnap"; printf '\xff\xff\xff\xff' | dd of="$TMP/bad.hsnap" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
	"$A" summary --no-symbolize "$TMP/bad.hsnap" >/dev/null 2>"$TMP/e"; rc=$?
	eq "corrupt exit" 3 $rc; contains "$TMP/e" "offset"
	# No such snapshot.
	"$A" top --snapshot 99 $f 2>"$TMP/e"; rc=$?; eq "missing snapshot exit" 4 $rc; contains "$TMP/e" "no snapshot '99'"
	"$A" top --snapshot nolabel $f 2>"$TMP/e"; rc=$?; eq "missing label exit" 4 $rc
	"$A" top --snapshot peak $f 2>"$TMP/e"; rc=$?; eq "no peak snapshot exit" 4 $rc
	contains "$TMP/e" "--peak replays to the peak the analyzer finds itself"
	# Truncated anywhere: never a crash; a cut file reads up to its last complete frame.
	local cut ok=0
	for cut in $(seq 16 53 "$size") $((size - 17)) $((size - 1)); do # size - 17: inside the footer frame
		head -c "$cut" $f >"$TMP/cut.hsnap"
		for sub in summary pprof collapsed info stats; do
			"$A" $sub --no-symbolize -o "$TMP/cut.out" "$TMP/cut.hsnap" >/dev/null 2>"$TMP/e"; rc=$?
			[ $rc -lt 5 ] || die "$sub on a $cut-byte prefix exited $rc: $(cat "$TMP/e")"
			[ $rc = 0 ] && grep -q "truncated\|no footer" "$TMP/e" && ok=$((ok + 1))
		done
	done
	[ $ok -gt 0 ] || die "no truncated prefix was read with a warning"
	# Random garbage behind a valid header.
	for seed in 1 2 3 4 5 6 7 8; do
		head -c 16 $f >"$TMP/g.hsnap"; "$T/garbage_ok" "$TMP/gb" $((seed * 300)); cat "$TMP/gb" >>"$TMP/g.hsnap"
		"$A" summary --no-symbolize "$TMP/g.hsnap" >/dev/null 2>&1; rc=$?
		[ $rc -lt 5 ] || die "garbage after the header crashed the analyzer ($rc)"
	done
}

# Mutated records (valid encoding, absurd values) must never crash the analyzer.
t_fuzz_records() {
	local seed rc sub crashes=0
	for seed in $(seq 1 60); do
		"$T/mutate" testdata/alloc_c.hsnap "$TMP/m.hsnap" $seed || die "mutate $seed"
		for sub in summary pprof collapsed leaks stats info top; do
			timeout 20 "$A" $sub -o "$TMP/m.out" "$TMP/m.hsnap" >/dev/null 2>"$TMP/m.err"; rc=$?
			if [ $rc -ge 5 ]; then
				echo "seed $seed: $sub exited $rc: $(head -2 "$TMP/m.err")"
				crashes=$((crashes + 1))
			fi
		done
	done
	[ $crashes = 0 ] || die "$crashes crashes or hangs on mutated records"
}

# The same programs built with ASan and UBSan (leak checks on): a memory error anywhere in
# recording, unwinding, symbolizing or writing output fails the test.
t_sanitizers() {
	local SR=$OUT/asan/heapsnap-record SA=$OUT/asan/heapsnap-analyze sub seed
	[ -x "$SA" ] || die "no sanitizer build"
	export ASAN_OPTIONS=abort_on_error=0:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:exitcode=99
	for sub in pprof top leaks stats summary info collapsed; do
		"$SA" $sub --no-symbolize -o "$TMP/san.out" testdata/alloc_c.hsnap 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "analyzer $sub"; }
	done
	for seed in 1 2 3 4 5 6 7 8 9 10; do
		"$T/mutate" testdata/alloc_c.hsnap "$TMP/sm.hsnap" $seed
		"$SA" pprof --no-symbolize -o "$TMP/san.out" "$TMP/sm.hsnap" 2>"$TMP/san.err"
		[ $? -ne 99 ] || { cat "$TMP/san.err"; die "analyzer on mutant $seed"; }
	done
	# In-process first (no BPF needed), its library found where the plain build put it.
	export HEAPSNAP_LIB=$OUT/libheapsnap.so
	"$SR" --via preload -o "$TMP/s0.hsnap" -- "$T/alloc_cxx" >/dev/null 2>"$TMP/san.err" ||
		{ cat "$TMP/san.err"; die "recorder, in-process"; }
	"$SA" top -o "$TMP/san.out" "$TMP/s0.hsnap" 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "analyzer top s0"; }
	[ -z "$BPF_REASON" ] || skip "analyzer and in-process recorder checked; BPF needs: $BPF_REASON"
	"$SR" --via bpf -o "$TMP/s1.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "recorder"; }
	"$SR" --stack dwarf -o "$TMP/s2.hsnap" -- "$T/nofp" >/dev/null 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "recorder dwarf"; }
	"$SR" -s 64k --interval 0.05 --snapshot-at-peak -o "$TMP/s3.hsnap" -- "$T/demo" >/dev/null 2>"$TMP/san.err" ||
		{ cat "$TMP/san.err"; die "recorder sampled"; }
	for f in s1 s2 s3; do
		for sub in pprof top leaks stats; do
			"$SA" $sub -o "$TMP/san.out" "$TMP/$f.hsnap" 2>"$TMP/san.err" || { cat "$TMP/san.err"; die "analyzer $sub $f"; }
		done
	done
	"$SA" diff --pprof "$TMP/san.pb.gz" "$TMP/s1.hsnap" "$TMP/s3.hsnap" >/dev/null 2>"$TMP/san.err" ||
		{ cat "$TMP/san.err"; die "analyzer diff"; }
}

# Output files, as root: never through a symlink, never over another user's file, created
# 0600, devices and FIFOs written in place, no temporary file left behind.
t_output_files() {
	local f=testdata/alloc_c.hsnap rc d=$TMP/out
	mkdir -p "$d"; chmod 1777 "$d"
	echo victim >"$TMP/victim"
	ln -s "$TMP/victim" "$d/link.txt"
	"$A" top --no-symbolize -o "$d/link.txt" $f 2>"$TMP/e"; rc=$?
	eq "analyzer -o symlink exit" 1 $rc; contains "$TMP/e" "symbolic link"
	eq "victim untouched by the analyzer" victim "$(cat "$TMP/victim")"
	echo theirs >"$d/theirs.txt"; chown 65534 "$d/theirs.txt"
	"$A" top --no-symbolize -o "$d/theirs.txt" $f 2>"$TMP/e"; rc=$?
	eq "analyzer -o another user's file exit" 1 $rc; contains "$TMP/e" "belongs to another user"
	eq "their file untouched" theirs "$(cat "$d/theirs.txt")"
	"$A" top --no-symbolize -o "$d/mine.txt" $f || die "analyzer -o a new file"
	eq "analyzer output mode" 600 "$(stat -c %a "$d/mine.txt")"
	"$A" top --no-symbolize -o "$d/mine.txt" $f || die "analyzer -o over its own file"
	"$A" top --no-symbolize -o /dev/null $f || die "analyzer -o /dev/null"
	[ -c /dev/null ] || die "/dev/null is no longer a character device"
	mkfifo "$d/fifo"
	cat "$d/fifo" >"$TMP/fifo.out" &
	"$A" top --no-symbolize -o "$d/fifo" $f || die "analyzer -o FIFO"
	wait
	[ -p "$d/fifo" ] || die "the FIFO was replaced"
	grep -q "leak_malloc\|alloc_c+" "$TMP/fifo.out" || die "nothing came through the FIFO"
	# A failure leaves nothing: no output, no temporary file.
	"$A" top --no-symbolize -o "$d/none.txt" "$TMP/missing.hsnap" 2>/dev/null && die "a missing input succeeded"
	[ ! -e "$d/none.txt" ] || die "a failed run left its output"
	eq "files in the output directory" "fifo link.txt mine.txt theirs.txt" "$(ls -A "$d" | tr '\n' ' ' | sed 's/ $//')"
	[ -n "$BPF_REASON" ] && skip "analyzer checked; the recorder half needs BPF: $BPF_REASON"
	"$R" --via "$VIA" -o "$d/link.txt" -- /bin/true 2>"$TMP/e"; rc=$?
	eq "recorder -o symlink exit" 1 $rc; contains "$TMP/e" "symbolic link"
	eq "victim untouched by the recorder" victim "$(cat "$TMP/victim")"
	"$R" --via "$VIA" -o "$d/theirs.txt" -- /bin/true 2>"$TMP/e"; rc=$?
	eq "recorder -o another user's file exit" 1 $rc
	eq "their file untouched by the recorder" theirs "$(cat "$d/theirs.txt")"
	"$R" --via "$VIA" -o "$d/rec.hsnap" -- "$T/alloc_c" >/dev/null 2>&1 || die "recorder -o a new file"
	eq "recording mode" 600 "$(stat -c %a "$d/rec.hsnap")"
	"$R" --via "$VIA" -o /dev/null -- /bin/true 2>/dev/null || die "recorder -o /dev/null"
	[ -c /dev/null ] || die "the recorder replaced /dev/null"
	eq "files after recording" "fifo link.txt mine.txt rec.hsnap theirs.txt" "$(ls -A "$d" | tr '\n' ' ' | sed 's/ $//')"
	# Another user's FIFO is a line to that user: refused, as their file is.
	mkfifo "$d/their.fifo"; chown 65534 "$d/their.fifo"
	timeout 60 "$R" --via "$VIA" -o "$d/their.fifo" -- /bin/true 2>"$TMP/e"; rc=$? # (it used to wait for a reader)
	eq "recorder -o another user's FIFO exit" 1 $rc; contains "$TMP/e" "FIFO of another user"
	# A reader that goes away: the write fails with EPIPE, said, and the command runs on.
	local wait_go='touch "$1.started"; while [ ! -e "$1" ]; do sleep 0.01; done'
	( exec 3<"$d/fifo"; head -c 4096 <&3 >/dev/null ) &
	"$R" --via "$VIA" -o "$d/fifo" -- sh -c "$wait_go" sh "$TMP/go1" 2>"$TMP/e" &
	local rp=$!
	waitfor "$TMP/e" "Broken pipe" || { cat "$TMP/e"; die "the recorder did not say its reader went away"; }
	touch "$TMP/go1"
	wait $rp; rc=$?
	eq "recorder into a FIFO its reader closed: exit" 1 $rc; contains "$TMP/e" "failed to write $d/fifo: Broken pipe"
	# A name as long as a name can be: the temporary name beside it is short.
	local long=$d/$(printf 'n%.0s' $(seq 250))
	"$R" --via "$VIA" -o "$long" -- /bin/true 2>"$TMP/e" || die "recorder -o a 250-character name: $(cat "$TMP/e")"
	rm -f "$long"
	# The directory swapped for a link to another while recording: the file is still put in
	# the directory opened at the start, and nothing is written into the other.
	mkdir "$d/mine.d" "$TMP/victim.d"; echo precious >"$TMP/victim.d/out.hsnap"
	"$R" --via "$VIA" -o "$d/mine.d/out.hsnap" -- sh -c "$wait_go" sh "$TMP/go2" 2>"$TMP/e" &
	rp=$!
	for rc in $(seq 400); do [ -e "$TMP/go2.started" ] && break; sleep 0.05; done
	[ -e "$TMP/go2.started" ] || die "the recorded command never started"
	mv "$d/mine.d" "$d/moved.d"; ln -s "$TMP/victim.d" "$d/mine.d"
	touch "$TMP/go2"
	wait $rp || die "recording while the directory moved: $(cat "$TMP/e")"
	eq "the other directory's file" precious "$(cat "$TMP/victim.d/out.hsnap")"
	[ -s "$d/moved.d/out.hsnap" ] || die "the recording is not in the directory it was opened in"
}

# Crafted recordings (tests/unit/craft.c), each past what the recorder ever writes: none may
# hang the analyzer, cost it memory or time beyond its content, or reach a terminal raw.
t_analyzer_crafted() {
	local C=$T/craft rc sub
	mkfifo "$TMP/fifo"
	"$C" fifo "$TMP/fifo.hsnap" 1 "$TMP/fifo" || die "craft fifo"
	for sub in "top" "top --no-symbolize" "pprof -o $TMP/f.pb.gz" "stats"; do
		timeout 20 "$A" $sub "$TMP/fifo.hsnap" >/dev/null 2>&1; rc=$?
		[ $rc -lt 5 ] || die "a mapping naming a FIFO: $sub exited $rc (124: hung)"
	done
	"$C" fifo "$TMP/zero.hsnap" 1 /dev/zero && timeout 20 "$A" top "$TMP/zero.hsnap" >/dev/null 2>&1
	[ $? -lt 5 ] || die "a mapping naming /dev/zero"
	# A private file a recording names is not even opened, by root's analyzer least of all.
	if command -v strace >/dev/null && [ -e /etc/shadow ]; then
		"$C" fifo "$TMP/shadow.hsnap" 1 /etc/shadow || die "craft shadow"
		strace -f -qq -e trace=open,openat -o "$TMP/shadow.trace" "$A" top "$TMP/shadow.hsnap" >/dev/null 2>"$TMP/shadow.err"
		contains "$TMP/shadow.err" "/etc/shadow is not a regular file anyone may read; not opened"
		! grep -q '"/etc/shadow"' "$TMP/shadow.trace" || die "the analyzer opened /etc/shadow for a recording"
	fi
	# Each within 10 s and 400 MB of address space (the analyzer needs ~100 MB for them).
	lim() { ( ulimit -v 400000; timeout 10 "$A" "$@" ) >"$TMP/lim.out" 2>"$TMP/lim.err"; }
	"$C" deepstack "$TMP/deep.hsnap" 20000 || die "craft deepstack"
	lim summary "$TMP/deep.hsnap"; eq "stacks past max_stack exit" 3 $?
	contains "$TMP/lim.err" "stack deeper than the session's max_stack"
	"$C" bigwindow "$TMP/big.hsnap" 2000 || die "craft bigwindow"
	lim summary --no-symbolize "$TMP/big.hsnap"; eq "64 KiB dwarf windows exit" 3 $?
	"$C" counters "$TMP/cnt.hsnap" 400 || die "craft counters"
	lim stats "$TMP/cnt.hsnap"; rc=$?; [ $rc = 0 ] || [ $rc = 4 ] || die "400 x 1024 counter names: exit $rc"
	"$C" maps "$TMP/maps.hsnap" 200000 || die "craft maps"
	lim top --no-symbolize "$TMP/maps.hsnap"; eq "200000 mappings and unmaps exit" 0 $?
	# Terminal escapes from the file never reach the output raw.
	"$C" escape "$TMP/esc.hsnap" || die "craft escape"
	for sub in info summary top leaks stats collapsed "info --json" "summary --json"; do
		"$A" $sub --no-symbolize "$TMP/esc.hsnap" >"$TMP/esc.out" 2>&1
		! grep -q $'\x1b\|\x07\|\xc2\x9b' "$TMP/esc.out" || die "$sub let a control character through"
	done
	"$A" info "$TMP/esc.hsnap" | grep -qF 'evil\x1b[31m' || die "escaped names must stay readable"
	# A trailer cut by 1 to 16 bytes is no longer complete.
	local f=testdata/alloc_c.hsnap size cut
	size=$(stat -c %s $f)
	for cut in $(seq 1 16); do
		head -c $((size - cut)) $f >"$TMP/cut.hsnap"
		"$A" info "$TMP/cut.hsnap" 2>"$TMP/cut.err" | grep -q "^Format: 2.0, truncated" || die "cut by $cut bytes reads as complete"
		contains "$TMP/cut.err" "trailer"
	done
}

# Files written to stall or swell the analyzer (tests/hostile.py): keys that collided in the
# hash tables before their seed, a quadratic match of processes, a long walk of mappings per
# frame, memory asked for by records that need none. Each ran out of 10 s of CPU (or 400 MB)
# before the fixes, and now takes well under one; CPU time, so a busy machine does not count.
t_analyzer_hostile() {
	local H="python3 tests/hostile.py" rc
	hostile() { ( ulimit -t 10; ulimit -v 400000; timeout 120 "$A" "$@" ) >"$TMP/h.out" 2>"$TMP/h.err"; }
	$H stackids "$TMP/s.hsnap" 200000 && $H classes "$TMP/c.hsnap" 32768 1000000 && $H pairs "$TMP/p.hsnap" 1000000 &&
		$H pids "$TMP/pa.hsnap" 150000 && $H maps "$TMP/m.hsnap" 50000 && $H unknown "$TMP/u.hsnap" &&
		$H pycodes "$TMP/py.hsnap" 400 && $H samecomm "$TMP/sc.hsnap" 350000 && $H longname "$TMP/lp.hsnap" path &&
		$H longname "$TMP/ln.hsnap" name || die "tests/hostile.py"
	hostile summary "$TMP/s.hsnap"; eq "200,000 stack ids of one home: exit" 0 $?
	hostile stats --json "$TMP/c.hsnap"; eq "32,768 threads' classes of one home: exit" 0 $?
	contains "$TMP/h.out" '"frees":1000000,'

	hostile summary "$TMP/p.hsnap"; eq "4096 pairs of one key: exit" 0 $?
	hostile diff --pid 1 "$TMP/pa.hsnap" "$TMP/pa.hsnap"; eq "diff --pid of 150,000 processes: exit" 0 $?
	# All 350,000 of one command: each is --pid 1's in the second file, whose replay looked
	# each process up among them (ran out of its 10 s; now 0.5 s and 300 MB, so 1 GB here).
	( ulimit -t 10; ulimit -v 1000000; timeout 120 "$A" diff --pid 1 "$TMP/sc.hsnap" "$TMP/sc.hsnap" ) >"$TMP/h.out" 2>"$TMP/h.err"
	eq "diff --pid of 350,000 processes of one command: exit" 0 $?
	hostile pprof -o "$TMP/m.pb.gz" "$TMP/m.hsnap"; eq "50,000 samples over 4096 mappings: exit" 0 $?
	# ... and the frames are still found in the large mapping under the small ones.
	hostile top --no-symbolize "$TMP/m.hsnap"; eq "top of them: exit" 0 $?
	contains "$TMP/h.out" "x+0x7dffffff0000"
	hostile summary "$TMP/u.hsnap"; eq "a 16 MiB record of an unknown type: exit" 0 $?
	# Each table decodes to 4 MiB of lines: refused at the limit, which counts them, by name.
	hostile top "$TMP/py.hsnap"; rc=$?
	eq "400 line tables of one-byte entries: exit" 1 $rc
	contains "$TMP/h.err" "bytes of names, line tables and their lines decoded): PY_CODE record of code 241"
	# A string longer than any recorder writes, which reports would show at every frame: corrupt.
	for f in lp ln; do
		hostile top "$TMP/$f.hsnap"; rc=$?
		eq "a string past its limit ($f): exit" 3 $rc
		contains "$TMP/h.err" "string longer than any recorder writes there"
	done
}

# One runtime address, two functions: the same module mapped at another file offset in each
# file of a diff. The symbols of one file's addresses were kept for the other's.
t_diff_symbols_by_offset() {
	[ -x "$T/alloc_c" ] || skip "no tests/alloc_c"
	python3 tests/hostile.py symoff "$TMP/a.hsnap" "$T/alloc_c" leak_malloc churn_malloc "$TMP/b.hsnap" || die "hostile.py symoff"
	"$A" top "$TMP/a.hsnap" 2>/dev/null | grep -q "leak_malloc" || die "the first file's block is not in leak_malloc"
	"$A" top "$TMP/b.hsnap" 2>/dev/null | grep -q "churn_malloc" || die "the second file's block is not in churn_malloc"
	"$A" diff "$TMP/a.hsnap" "$TMP/b.hsnap" >"$TMP/d.out" 2>/dev/null || die "diff"
	grep -qE '^ *\+4096 +0 +4096  churn_malloc$' "$TMP/d.out" || { cat "$TMP/d.out"; die "diff: churn_malloc did not grow by 4096"; }
	grep -qE '^ *-4096 +4096 +0  leak_malloc$' "$TMP/d.out" || die "diff: leak_malloc did not shrink by 4096"
}

# libFuzzer: the regression inputs, then a few seconds of fuzzing per target.
t_fuzz_targets() {
	[ -x "$OUT/fuzz/fuzz_replay" ] || skip "no libFuzzer build (clang with -fsanitize=fuzzer)"
	OUTPUT=$OUT scripts/fuzz.sh "${FUZZ_SECONDS:-5}" || die "fuzzing found a problem"
}

ALL="$ALL t_bad_input t_fuzz_records t_sanitizers t_output_files t_analyzer_crafted t_analyzer_hostile t_diff_symbols_by_offset t_fuzz_targets"

# -o /dev/stdout (a link to /proc/self/fd/1) writes the descriptor the shell opened: a file it
# created, or a pipe; it was refused as a symbolic link. Still refused: any other link, a
# terminal for binary output, and a file already holding something (>>).
t_output_stdout() {
	local rc
	"$R" --via preload -s 0 -o /dev/stdout -- "$T/alloc_c" >"$TMP/so.hsnap" 2>"$TMP/so.err" || { cat "$TMP/so.err"; die "recorder -o /dev/stdout into a file"; }
	"$A" top -n 0 "$TMP/so.hsnap" | grep -q "^ *15000 .*child_work$" || die "the file written through /dev/stdout"
	"$R" --via preload -s 0 -o /dev/stdout -- "$T/alloc_c" 2>"$TMP/sp.err" | cat >"$TMP/sp.hsnap" || die "recorder -o /dev/stdout into a pipe"
	"$A" top -n 0 "$TMP/sp.hsnap" | grep -q "^ *15000 .*child_work$" || die "the file written through a pipe"
	"$A" pprof -o /dev/stdout "$TMP/so.hsnap" | gzip -t || die "analyzer pprof -o /dev/stdout into a pipe"
	"$A" top -n 0 -o /dev/fd/1 "$TMP/so.hsnap" >"$TMP/so.top" || die "analyzer -o /dev/fd/1"
	grep -q "^ *15000 .*child_work$" "$TMP/so.top" || die "analyzer -o /dev/fd/1: the report"
	echo x >"$TMP/so.app"
	"$R" --via preload -s 0 -o /dev/stdout -- /bin/true >>"$TMP/so.app" 2>"$TMP/e"; rc=$?
	eq "recorder -o /dev/stdout appended to a file exit" 1 $rc; contains "$TMP/e" "not empty"
	ln -s "$TMP/so.top" "$TMP/so.link"
	"$A" top -o "$TMP/so.link" "$TMP/so.hsnap" 2>"$TMP/e"; rc=$?
	eq "analyzer -o symlink exit" 1 $rc; contains "$TMP/e" "symbolic link"
	command -v script >/dev/null || skip "no script(1) to give a terminal as stdout"
	script -qec "$R --via preload -o /dev/stdout -- /bin/true" /dev/null >"$TMP/so.tty" 2>&1 </dev/null
	contains "$TMP/so.tty" "it is a terminal"
	script -qec "$A pprof -o /dev/stdout $TMP/so.hsnap" /dev/null >"$TMP/so.tty" 2>&1 </dev/null
	contains "$TMP/so.tty" "refusing to write binary pprof data to the terminal"
}

ALL="$ALL t_output_stdout"
