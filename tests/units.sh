# Sizes and durations: one parser for both programs (common/units.c); the sampling math.

t_units_unit() { "$T/test_units"; }

# Every size and duration option takes the same units, and says what it came to with -v: the
# figures below are the options' values worked out by hand.
t_units_record_parsed() {
	local v
	"$R" --via preload -v -o "$TMP/up.hsnap" --duration 1.5m --interval 250ms --rss-interval 0.5s --attach-timeout 1h \
		-s 1.5m --ringbuf-size 2m --stack dwarf=16k -- /bin/true >/dev/null 2>"$TMP/up.err" || { cat "$TMP/up.err"; die "recording"; }
	contains "$TMP/up.err" "duration 90s, interval 0.25s, rss-interval 0.5s, attach-timeout 3600s, sample-rate 1572864 bytes, ringbuf-size 2 MiB, stack window 16384 bytes"
	# Plain figures keep their old meaning: seconds, bytes, and MiB for --ringbuf-size.
	"$R" --via preload -v -o "$TMP/up.hsnap" --duration 0.2 --interval 5 -s 4096 --ringbuf-size 16 --stack dwarf=300 \
		-- /bin/true >/dev/null 2>"$TMP/up.err" || { cat "$TMP/up.err"; die "recording"; }
	contains "$TMP/up.err" "duration 0.2s, interval 5s, rss-interval 1s, attach-timeout 10s, sample-rate 4096 bytes, ringbuf-size 16 MiB, stack window 300 bytes"
	"$R" --via preload -v -o "$TMP/up.hsnap" -s 1g --ringbuf-size 1g -- /bin/true >/dev/null 2>"$TMP/up.err" || { cat "$TMP/up.err"; die "recording"; }
	contains "$TMP/up.err" "sample-rate 1073741824 bytes, ringbuf-size 1024 MiB"
	# Refused before anything starts: exit 2, one line naming the option, the value and why.
	while read -r opt val why; do
		"$R" --via preload -o "$TMP/refused.hsnap" $opt "$val" -- /bin/true >/dev/null 2>"$TMP/bad.err"
		eq "$opt $val: exit" 2 $?
		contains "$TMP/bad.err" "heapsnap-record: invalid value '$val' for $opt: $why"
		eq "$opt $val: lines" 1 "$(grep -c . "$TMP/bad.err")"
	done <<-'EOF'
	--duration 5parsecs expected seconds, or a number with ms, s, m or h
	--duration nan not a number
	--duration inf not a number
	--duration -1 not a number
	--duration 0 expected more than 0 seconds
	--duration 1e3 expected seconds, or a number with ms, s, m or h
	--duration 1000000001 expected more than 0 seconds, at most 1e9
	--duration 1000000000001 more than 1e12 seconds
	--duration 99999999999999999999 too large
	--interval 5ms expected seconds, at least 0.01
	--rss-interval 50ms expected seconds, at least 0.1
	--attach-timeout 1.5h expected seconds, 0.1 to 3600
	--sample-rate 1.5 not a whole number of bytes
	--sample-rate 1t expected bytes, or a number with k, m or g
	--sample-rate 1025g expected bytes from 0 to 1024g
	--sample-rate 18446744073709551616 too large
	--ringbuf-size 3 expected a power of two from 1m to 1g
	--ringbuf-size 512k expected a power of two from 1m to 1g
	--ringbuf-size 2g expected a power of two from 1m to 1g
	--ringbuf-size 1x expected bytes, or a number with k, m or g
	--stack dwarf=64k dwarf=SIZE takes 256 to 32768
	--stack dwarf=1.5 dwarf=SIZE takes 256 to 32768
	EOF
	[ ! -e "$TMP/refused.hsnap" ] || die "a refused option left a file"
}

# --duration 5m and --ringbuf-size 1g with BPF: a command that ends first ends the recording,
# the kernel gets rings of the size asked for, and alloc_c's figures stay exact.
t_units_record_bpf() {
	need_bpf; need_go
	local ncpu ring=256 tpid t0 t1 last
	record -v -s 0 --duration 5m --ringbuf-size 1g -o "$TMP/ub.hsnap" -- "$T/alloc_c" || die "recording with --duration 5m --ringbuf-size 1g"
	contains "$TMP/record.err" "duration 300s"
	contains "$TMP/record.err" "ringbuf-size 1024 MiB"
	# As many rings as possible CPUs (libbpf's count), each the largest power of two they share 1 GiB by.
	ncpu=$(awk -F, '{ n = 0; for (i = 1; i <= NF; i++) { split($i, r, "-"); n += (i in r && r[2] != "" ? r[2] - r[1] + 1 : 1) } print n }' /sys/devices/system/cpu/possible)
	while [ $((ring * 2 * ncpu)) -le $((1024 * 1024)) ]; do ring=$((ring * 2)); done
	contains "$TMP/record.err" "$ncpu ring buffers of $ring KiB, one per CPU"
	"$A" pprof -o "$TMP/ub.pb.gz" "$TMP/ub.hsnap" || die "pprof"
	local p=$TMP/ub.pb.gz
	eq "thread_work inuse_space" 20000 "$(pv $p inuse_space thread_work)"
	eq "child_work inuse_space (fork child)" 15000 "$(pv $p inuse_space child_work)"
	eq "plugin_alloc inuse_space (dlopen)" 12288 "$(pv $p inuse_space plugin_alloc)"
	eq "leak_malloc inuse_space" 10000 "$(pv $p inuse_space leak_malloc)"
	eq "realloc_chain alloc_space" 5600 "$(pv $p alloc_space realloc_chain)"
	eq "churn_malloc alloc_objects" 100 "$(pv $p alloc_objects churn_malloc)"
	"$A" stats "$TMP/ub.hsnap" | grep -q "lost.ringbuf_full *0$" || die "events lost in 1 GiB of rings"
	# --duration 0.2 (plain seconds, as before) ends the recording of a process that runs on.
	"$T/alloc_c" loop 120 >/dev/null &
	tpid=$!
	"$R" --via "$VIA" -v -p $tpid -s 0 --duration 0.2 -o "$TMP/ud.hsnap" >/dev/null 2>"$TMP/ud.err" ||
		{ kill $tpid; cat "$TMP/ud.err"; die "recording with --duration 0.2"; }
	kill -0 $tpid 2>/dev/null || die "the target ended before the recording"
	kill $tpid; wait $tpid 2>/dev/null
	contains "$TMP/ud.err" "duration 0.2s"
	last=$("$A" info --json "$TMP/ud.hsnap" | grep -o '"last_time":[0-9.]*' | cut -d: -f2)
	awk -v t="$last" 'BEGIN { exit !(t >= 0.2 && t < 10) }' || die "--duration 0.2 recorded ${last}s"
}

# The analyzer's gzip (pprof files, OTLP bodies) against zlib's inflate, past a piece.
t_gzip_unit() { "$T/test_gzip"; }

# The sampling math, thresholds and weights, against figures worked out apart from it.
t_sampling_unit() { "$T/test_sampling"; }

# The analyzer reads them as the recorder does: figures checked through what it reports back.
t_units_analyzer() {
	local f=testdata/alloc_c.hsnap val
	"$A" summary --no-symbolize --at 5m $f >/dev/null 2>"$TMP/ua.err"; eq "--at 5m exit" 4 $?
	contains "$TMP/ua.err" "--at 300s is past the end"
	"$A" summary --no-symbolize --at 1.5h $f >/dev/null 2>"$TMP/ua.err"; eq "--at 1.5h exit" 4 $?
	contains "$TMP/ua.err" "--at 5400s is past the end"
	"$A" summary --no-symbolize --at 10ms $f >"$TMP/ua.ms" || die "--at 10ms"
	"$A" summary --no-symbolize --at 0.01 $f >"$TMP/ua.s" || die "--at 0.01"
	cmp -s "$TMP/ua.ms" "$TMP/ua.s" || die "--at 10ms and --at 0.01 differ"
	"$A" leaks --no-symbolize --min-age 1.5m $f >/dev/null || die "--min-age 1.5m"
	for val in 1.5m:1572864 1g:1073741824 512K:524288 1000:1000; do
		"$A" diff --no-symbolize --max-growth ${val%:*} $f $f >/dev/null 2>"$TMP/ua.err" || { cat "$TMP/ua.err"; die "--max-growth ${val%:*}"; }
		contains "$TMP/ua.err" "within the limit of ${val#*:}"
	done
	"$A" diff --no-symbolize --max-growth 2.5% $f $f >/dev/null 2>"$TMP/ua.err" || die "--max-growth 2.5%"
	while read -r opt val why; do
		"$A" diff --no-symbolize $opt "$val" $f $f >/dev/null 2>"$TMP/ua.err"; eq "$opt $val: exit" 2 $?
		contains "$TMP/ua.err" "heapsnap-analyze: invalid $opt '$val': $why"
	done <<-'EOF'
	--max-growth 1000.5 not a whole number of bytes, or a percent of the old total
	--max-growth 1t expected bytes, or a number with k, m or g
	--max-growth -5% not a number
	--max-growth nan% not a number
	--max-growth 5%% expected a number followed by %
	EOF
	while read -r opt val why; do
		"$A" leaks --no-symbolize $opt "$val" $f >/dev/null 2>"$TMP/ua.err"; eq "$opt $val: exit" 2 $?
		contains "$TMP/ua.err" "heapsnap-analyze: invalid $opt '$val': $why"
	done <<-'EOF'
	--min-age nan not a number
	--min-age inf not a number
	--min-age -1s not a number
	--min-age 1e300 expected seconds, or a number with ms, s, m or h
	--min-age 5parsecs expected seconds, or a number with ms, s, m or h
	--min-age 277777778h more than 1e12 seconds
	--at 1000000000001 more than 1e12 seconds
	EOF
}

ALL="$ALL t_units_unit t_units_record_parsed t_units_record_bpf t_units_analyzer t_sampling_unit t_gzip_unit"
