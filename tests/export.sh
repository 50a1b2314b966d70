# Export into a fleet's pipeline: heapsnap-analyze export and heapsnap-record --export, to a
# real OpenTelemetry Collector (built from its own Go modules by scripts/build-otelcol.sh, its
# file exporter read back by tests/otlpread.py), to a stand-in for Pyroscope's /ingest
# (tests/ingest_server.py, Python's own multipart parser) and to a folder that `go tool
# pprof` reads. The figures are tests/workloads/live_phases.c's: phase_keep 10 x 100000,
# then phase_second 5 x 7000, each held on a FIFO (live.sh's helpers).

# The Collector, built once per run (minutes when its modules are not cached yet).
OTELCOL=
otelcol_need() {
	need_go
	if [ -z "$OTELCOL" ]; then
		OTELCOL=$(scripts/build-otelcol.sh 2>"$TMP/otelcol.build") ||
			{ OTELCOL=; skip "cannot build the OpenTelemetry Collector: $(tail -1 "$TMP/otelcol.build")"; }
	fi
}

# What an export test started (recorders, workloads, servers), ended however it ends: a test
# that fails in a check leaves nothing running.
export_cleanup() {
	local p
	p="$LIVE_PIDS $(pgrep -f -- "$TMP/lp.fifo" | tr '\n' ' ')"
	[ -n "${p// /}" ] && kill $p 2>/dev/null
	return 0
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# otelcol_start NAME PORT: a Collector on PORT writing $TMP/NAME.json; sets OC_PID.
otelcol_start() {
	local i
	rm -f "$TMP/$1.json"
	OTLP_PORT=$2 OUT_FILE=$TMP/$1.json "$OTELCOL" --config=file:tests/otelcol/config.yaml \
		--feature-gates=service.profilesSupport >"$TMP/$1.log" 2>&1 &
	OC_PID=$!
	LIVE_PIDS="$LIVE_PIDS $OC_PID"
	for i in $(seq 1200); do
		grep -q "Everything is ready" "$TMP/$1.log" 2>/dev/null && return 0
		kill -0 $OC_PID 2>/dev/null || break
		sleep 0.05
	done
	cat "$TMP/$1.log"
	live_die "the Collector $1 did not start"
}

otelcol_stop() {
	kill "$OC_PID" 2>/dev/null
	wait "$OC_PID" 2>/dev/null
}

# otlp_wait NAME REGEX: until a profile the Collector NAME wrote matches REGEX (otlpread.py's
# lines), up to 60 s.
otlp_wait() {
	local i
	for i in $(seq 300); do
		[ -s "$TMP/$1.json" ] && python3 tests/otlpread.py "$TMP/$1.json" 2>/dev/null | grep -qE -- "$2" && return 0
		sleep 0.2
	done
	python3 tests/otlpread.py "$TMP/$1.json" 2>&1 | tail -20
	live_die "the Collector $1 never received a profile matching '$2'"
}

# pv0 PROFILE TYPE FUNC: pv's flat figure, 0 for a function not in the profile.
pv0() { local v; v=$(pv "$1" "$2" "$3"); [ "$v" = absent ] && v=0; echo "$v"; }

# sum_of LINES TYPE FUNC: FUNC's values of TYPE summed over every profile in LINES.
sum_of() { awk -v t="$2" -v f="$3" '$4 == t { for (i = 7; i <= NF; i++) { split($i, kv, "="); if (kv[1] == f) s += kv[2] } } END { print s + 0 }' "$1"; }

# (a) heapsnap-record --export to a Collector, stopped and started again mid-run: each
# interval's exact figures, the resource and the build-ids; while it is down the target and
# the recording go on and what the queue cannot keep is dropped, counted and said; export
# resumes when it is back.
t_export_otlp() {
	trap export_cleanup EXIT
	otelcol_need
	local port pid wpid bid
	port=$(free_port)
	otelcol_start c1 "$port"
	live_fifo
	"$R" --via preload --export "otlp+http://127.0.0.1:$port" --export-interval 1s --export-queue 2 \
		-o "$TMP/eo.hsnap" -- "$T/live_phases" "$TMP/lp.fifo" 2>"$TMP/eo.err" &
	pid=$!
	LIVE_PIDS="$LIVE_PIDS $pid"
	waitfor "$TMP/eo.err" kept || { cat "$TMP/eo.err"; live_die "the workload did not start"; }
	wpid=$(pgrep -f -- "^$T/live_phases $TMP/lp.fifo")
	otlp_wait c1 " inuse_space .* phase_keep=1000000"
	python3 tests/otlpread.py "$TMP/c1.json" --attrs --mappings --samples >"$TMP/c1.lines"
	# Each of phase_keep's blocks is 100000 bytes, made on the process's main thread.
	local comm smp
	comm=$(cat "/proc/$wpid/comm")
	smp=$(grep -E '^SMP[0-9]+ alloc_space phase_keep ' "$TMP/c1.lines") || live_die "no sample of phase_keep"
	[ "$(grep -cvF " bytes=100000[bytes] thread.id=$wpid thread.name=$comm" <<<"$smp")" = 0 ] ||
		{ echo "$smp"; live_die "phase_keep's samples: not bytes=100000[bytes] thread.id=$wpid thread.name=$comm"; }
	eq "phase_keep allocated, over the intervals" 1000000 "$(sum_of "$TMP/c1.lines" alloc_space phase_keep)"
	eq "phase_keep's objects" 10 "$(sum_of "$TMP/c1.lines" alloc_objects phase_keep)"
	grep -qE " inuse_objects .* phase_keep=10( |$)" "$TMP/c1.lines" || live_die "inuse_objects of phase_keep"
	grep -qE " 1000000000 .*phase_keep" "$TMP/c1.lines" || live_die "an interval of 1 s"
	contains "$TMP/c1.lines" "service.name=live_phases"
	contains "$TMP/c1.lines" "process.pid=$wpid "
	contains "$TMP/c1.lines" "host.name=$(hostname)"
	bid=$(readelf -n "$T/live_phases" | awk '/Build ID/ { print $3 }')
	grep -qE "^MAP[0-9]+ .*/live_phases $bid$" "$TMP/c1.lines" || { grep MAP "$TMP/c1.lines" | sort -u; live_die "live_phases's build-id $bid"; }
	# Down: the next phase is recorded all the same; the queue of 2 overflows.
	otelcol_stop
	echo go >"$TMP/lp.fifo"
	waitfor "$TMP/eo.err" second || live_die "the workload stopped while the Collector was down"
	waitfor "$TMP/eo.err" "cannot send to otlp+http://127.0.0.1:$port" || { cat "$TMP/eo.err"; live_die "no word of the failure"; }
	waitfor "$TMP/eo.err" "dropped the profiles of 1 processes" || { cat "$TMP/eo.err"; live_die "no drop said"; }
	otelcol_start c2 "$port"
	otlp_wait c2 " inuse_space .* phase_second=35000"
	waitfor "$TMP/eo.err" "answers again" || { cat "$TMP/eo.err"; live_die "no word of the recovery"; }
	echo go >"$TMP/lp.fifo"
	wait $pid || { cat "$TMP/eo.err"; live_die "recorder exit"; }
	python3 tests/otlpread.py "$TMP/c2.json" >"$TMP/c2.lines"
	# The last interval: phase_second's blocks live, phase_keep's freed.
	grep ' inuse_space ' "$TMP/c2.lines" | tail -1 >"$TMP/c2.last"
	contains "$TMP/c2.last" "phase_second=35000"
	grep -q phase_keep "$TMP/c2.last" && live_die "phase_keep still live at the end"
	eq "phase_keep allocated before the outage only" 0 "$(sum_of "$TMP/c2.lines" alloc_space phase_keep)"
	[ "$(sum_of "$TMP/c2.lines" alloc_space phase_second)" -le 35000 ] || live_die "phase_second allocated more than once"
	grep -qE "exported [0-9]+ profiles of [0-9]+ intervals to .*lost.export_profiles [1-9]" "$TMP/eo.err" ||
		{ tail -3 "$TMP/eo.err"; live_die "the recorder's summary of the export"; }
	"$A" stats "$TMP/eo.hsnap" >"$TMP/eo.stats" 2>&1 || live_die "stats"
	grep -qE "lost.export_profiles +[1-9]" "$TMP/eo.stats" || { cat "$TMP/eo.stats"; live_die "lost.export_profiles in stats"; }
	# The file's counters are the recorder's last word, the last interval included.
	eq "stats and the recorder agree" "$(grep -o 'lost.export_profiles [0-9]*' "$TMP/eo.err" | tail -1 | awk '{ print $2 }')" \
		"$(awk '$1 == "lost.export_profiles" { print $2 }' "$TMP/eo.stats")"
	eq "every interval in the file's count" "$(grep -oE 'of [0-9]+ intervals' "$TMP/eo.err" | awk '{ print $2 }')" \
		"$(awk '$1 == "export.intervals" { print $2 }' "$TMP/eo.stats")"
	"$A" top "$TMP/eo.hsnap" | grep -qE '^ +35000 .* phase_second$' || live_die "the file, whole"
	otelcol_stop
	echo "NOTE: $(grep -c ' inuse_space ' "$TMP/c1.lines") + $(grep -c ' inuse_space ' "$TMP/c2.lines") intervals received, $(grep -o 'lost.export_profiles [0-9]*' "$TMP/eo.err" | tail -1) while down"
}

# (b) export FILE|- to dir:, followed as it is written: go tool pprof reads each profile with
# the interval's figures; --keep bounds the folder; the stream from -o - without a file.
t_export_dir() {
	trap export_cleanup EXIT
	need_go
	local pid epid n last keep
	live_fifo
	"$R" --via preload -o "$TMP/ed.hsnap" -- "$T/live_phases" "$TMP/lp.fifo" 2>"$TMP/ed.rec.err" &
	pid=$!
	LIVE_PIDS=$pid
	waitfor "$TMP/ed.rec.err" kept || live_die "the workload did not start"
	for n in $(seq 200); do [ -s "$TMP/ed.hsnap" ] && break; sleep 0.05; done
	"$A" export --to "dir:$TMP/ed" --interval 1s "$TMP/ed.hsnap" 2>"$TMP/ed.err" &
	epid=$!
	LIVE_PIDS="$LIVE_PIDS $epid"
	# Two intervals written (the second has phase_keep allocated before it), then phase two.
	for n in $(seq 600); do [ "$(ls "$TMP/ed" 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.1; done
	echo go >"$TMP/lp.fifo"
	waitfor "$TMP/ed.rec.err" second || live_die "phase two"
	n=$(ls "$TMP/ed" | wc -l)
	for i in $(seq 600); do [ "$(ls "$TMP/ed" | wc -l)" -ge $((n + 2)) ] && break; sleep 0.1; done
	echo go >"$TMP/lp.fifo"
	wait $pid || live_die "recorder exit"
	wait $epid || { cat "$TMP/ed.err"; live_die "export exit"; }
	local f ka=0 ko=0 had=0 files
	files=$(ls "$TMP/ed")
	for f in $files; do
		[ "$(stat -c %a "$TMP/ed/$f")" = 600 ] || live_die "$f is not 0600"
		ka=$((ka + $(pv0 "$TMP/ed/$f" alloc_space phase_keep)))
		ko=$((ko + $(pv0 "$TMP/ed/$f" alloc_objects phase_keep)))
		[ "$(pv0 "$TMP/ed/$f" inuse_space phase_keep)" = 1000000 ] && had=$((had + 1))
	done
	eq "phase_keep allocated, over the intervals" 1000000 "$ka"
	eq "phase_keep's objects" 10 "$ko"
	[ "$had" -ge 1 ] || live_die "no interval ended with phase_keep's blocks live"
	last=$TMP/ed/$(echo "$files" | tail -1)
	eq "the last interval: phase_second live" 35000 "$(pv0 "$last" inuse_space phase_second)"
	eq "the last interval: phase_keep freed" 0 "$(pv0 "$last" inuse_space phase_keep)"
	# The finished file again, whole and keeping 2: the same newest 2 (a finished file sends a run
	# of intervals without events with the next one that has some: 3 intervals here).
	"$A" export --to "dir:$TMP/ea" --interval 1s "$TMP/ed.hsnap" 2>"$TMP/ea.err" || live_die "export of the file"
	"$A" export --to "dir:$TMP/ek" --keep 2 --interval 1s "$TMP/ed.hsnap" 2>"$TMP/ek.err" || live_die "export --keep"
	[ "$(ls "$TMP/ea" | wc -l)" -gt 2 ] || live_die "too few intervals in the file to test --keep"
	eq "--keep 2" "$(ls "$TMP/ea" | tail -2)" "$(ls "$TMP/ek")"
	eq "the file: phase_keep allocated once" 1000000 "$(for f in "$TMP"/ea/*; do pv0 "$f" alloc_space phase_keep; done | awk '{ s += $1 } END { print s }')"
	# -o - into export -: no file, the same last interval.
	"$R" --via preload -o - -- "$T/phases" 2>/dev/null | "$A" export --to "dir:$TMP/es" --interval 1h - 2>"$TMP/es.err" ||
		{ cat "$TMP/es.err"; live_die "export -"; }
	eq "phases through a pipe" 1000000 "$(pv0 "$TMP/es/$(ls "$TMP/es" | tail -1)" inuse_space phase_two)"
	echo "NOTE: $(echo "$files" | wc -l) intervals, each read by go tool pprof"
}

# (c) pyroscope+http:// sends /ingest's documented form: name with labels, from/until, the
# pprof in its profile part, sample_type_config; headers from --export-header-file only.
t_export_pyroscope() {
	trap export_cleanup EXIT
	need_go
	local spid i q
	mkdir -p "$TMP/py"
	python3 tests/ingest_server.py "$TMP/py" 2>"$TMP/py.err" &
	spid=$!
	LIVE_PIDS=$spid
	for i in $(seq 200); do [ -s "$TMP/py/port" ] && break; sleep 0.05; done
	printf 'Authorization: Bearer s3cret-token\nX-Scope-OrgID: team-a\n' >"$TMP/hdr"
	"$R" --via preload --export "pyroscope+http://127.0.0.1:$(cat "$TMP/py/port")" --service-name shop \
		--export-header-file "$TMP/hdr" -o "$TMP/ep.hsnap" -- "$T/phases" 2>"$TMP/ep.err" ||
		{ cat "$TMP/ep.err" "$TMP/py.err"; live_die "recorder exit"; }
	kill $spid
	[ -s "$TMP/py/1.profile" ] || { cat "$TMP/ep.err" "$TMP/py.err"; live_die "nothing ingested"; }
	q=$(cat "$TMP/py/1.query")
	python3 - "$q" <<-'EOF' || live_die "the /ingest query: $q"
	import sys, urllib.parse
	q = urllib.parse.parse_qs(sys.argv[1])
	assert q["name"][0].startswith("shop{hostname="), q["name"]
	assert ",pid=" in q["name"][0] and q["name"][0].endswith("}"), q["name"]
	assert q["format"] == ["pprof"] and q["spyName"] == ["heapsnap"], q
	assert int(q["from"][0]) <= int(q["until"][0]), q
	EOF
	contains "$TMP/py/1.headers" "Authorization: Bearer s3cret-token"
	contains "$TMP/py/1.headers" "X-Scope-OrgID: team-a"
	contains "$TMP/py/1.config" '"inuse_space":{"units":"bytes","aggregation":"average"'
	eq "phase_two through /ingest" 1000000 "$(pv0 "$TMP/py/1.profile" inuse_space phase_two)"
	eq "phase_two allocated" 1000000 "$(pv0 "$TMP/py/1.profile" alloc_space phase_two)"
	# The token never on a command line: not in the exporter's argv.
	grep -q s3cret "$TMP/ep.err" && live_die "the token was printed"
	return 0
}

# (d) https:// checks the server against --export-cacert: refused at the start without it.
t_export_https() {
	trap export_cleanup EXIT
	need_go
	command -v openssl >/dev/null || skip "no openssl to make a certificate"
	local spid i url
	mkdir -p "$TMP/tls"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$TMP/tls.key" -out "$TMP/tls.pem" 2>"$TMP/tls.err" || { cat "$TMP/tls.err"; die "openssl"; }
	python3 tests/ingest_server.py "$TMP/tls" "$TMP/tls.pem" "$TMP/tls.key" 2>"$TMP/tls.srv" &
	spid=$!
	LIVE_PIDS=$spid
	for i in $(seq 200); do [ -s "$TMP/tls/port" ] && break; sleep 0.05; done
	url="pyroscope+https://127.0.0.1:$(cat "$TMP/tls/port")"
	"$R" --via preload --export "$url" -- "$T/phases" 2>"$TMP/tls.no" && live_die "a certificate nobody vouches for"
	contains "$TMP/tls.no" "cannot reach it"
	"$R" --via preload --export "$url" --export-cacert "$TMP/tls.pem" -- "$T/phases" 2>"$TMP/tls.rec" ||
		{ cat "$TMP/tls.rec" "$TMP/tls.srv"; live_die "recorder exit over https"; }
	kill $spid
	eq "phase_two over https" 1000000 "$(pv0 "$TMP/tls/1.profile" inuse_space phase_two)"
}

# (e) A sampled recording exports its estimates, within the standard errors it states, of the
# workload's exact figures (phases.c: 4,000,000 B allocated, 1,000,000 B live at the end).
t_export_sampled() {
	need_go
	local f line
	"$R" --via preload -s 64k -o "$TMP/xs.hsnap" -- "$T/phases" 2>"$TMP/xs.err" || { cat "$TMP/xs.err"; die "record"; }
	"$A" export --to "dir:$TMP/xs" --interval 1h "$TMP/xs.hsnap" 2>"$TMP/xs.exp" || { cat "$TMP/xs.exp"; die "export"; }
	f=$TMP/xs/$(ls "$TMP/xs")
	line=$(go tool pprof -top "$f" 2>/dev/null | grep -m1 "standard errors")
	[ -n "$line" ] || die "no standard errors stated"
	python3 - "$line" <<-'EOF' || die "outside 4 standard errors: $line"
	import re, sys
	m = dict((k, (float(v), float(e))) for k, v, e in re.findall(r"(\w+) ([0-9.]+) \+- ([0-9.]+)", sys.argv[1]))
	# phases.c's figures, and what the C runtime allocates beside them (under 2 KiB).
	for k, truth in (("inuse_space", 1000000), ("alloc_space", 4000000)):
	    v, e = m[k]
	    assert abs(v - truth) <= 4 * e + 2048, (k, v, e)
	EOF
	echo "NOTE: $line"
}

# (f) Bad destinations are said at the start, before the command runs.
t_export_errors() {
	local port
	"$A" export --to http://x "$TMP/none" 2>"$TMP/xe1" && die "a URL without a kind"
	contains "$TMP/xe1" "expected otlp+http://HOST:PORT"
	"$A" export --to otlp+http://[::1 "$TMP/none" 2>"$TMP/xe2"; eq "bad URL exit" 2 $?
	"$A" export "$TMP/none" 2>"$TMP/xe3"; eq "no --to" 2 $?
	"$A" export --to otlp+http://127.0.0.1:1 --keep 3 "$TMP/none" 2>"$TMP/xe4"; eq "--keep without dir:" 2 $?
	port=$(free_port)
	"$R" --via preload --export "otlp+http://127.0.0.1:$port" -- sh -c "touch $TMP/ran" 2>"$TMP/xe5" &&
		die "recorded to an endpoint nobody listens on"
	contains "$TMP/xe5" "cannot reach it"
	[ -e "$TMP/ran" ] && die "the command ran although the export could not start"
	"$R" --via preload --export "dir:$TMP/xd" --export-header-file /dev/null -- true 2>"$TMP/xe6" && true
	"$A" export --to "otlp+http://127.0.0.1:$port" --export-header-file "$TMP" "$TMP/none" 2>"$TMP/xe7" && die "a folder as header file"
	contains "$TMP/xe7" "not a regular file"
	"$R" --via preload --export-interval 5s -- true 2>"$TMP/xe8" && die "--export-interval alone"
	contains "$TMP/xe8" "go with --export URL"
	return 0
}

ALL="$ALL t_export_otlp t_export_dir t_export_pyroscope t_export_https t_export_sampled t_export_errors"
