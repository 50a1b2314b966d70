# Python programs (issue 25): Python frames in stacks, code objects, pymalloc's objects, by each
# in-process way in, against tracemalloc's reading of the same scripts.

# ---- Python, the in-process recorder's side (issue 25): Python frames in stacks, PY_CODE
# records, pymalloc's domains wrapped. tests/workloads/py_frames.py's functions are checked by
# tests/pycheck.py against tracemalloc's reading of the same script, run under each interpreter.
PY_FRAMES=$PWD/tests/workloads/py_frames.py

# py_oracle NAME INTERP: what tracemalloc holds per function at the script's end.
py_oracle() {
	PYCHECK_TRACEMALLOC=1 "$2" "$PY_FRAMES" >"$TMP/$1.tm" || die "$1: the script under tracemalloc ($2)"
}

# py_check NAME: the recording $TMP/NAME.hsnap against $TMP/NAME.tm.
py_check() {
	"$T/pydump" "$TMP/$1.hsnap" >"$TMP/$1.dump" || die "$1: pydump"
	python3 tests/pycheck.py "$TMP/$1.dump" "$TMP/$1.tm" "$PY_FRAMES" || die "$1: the recording is not tracemalloc's"
}

# py_launched NAME INTERP: launched, every event, --stack auto (the default).
py_launched() {
	py_oracle "$1" "$2"
	"$R" --via preload -o "$TMP/$1.hsnap" -- "$2" "$PY_FRAMES" >/dev/null 2>"$TMP/$1.err" ||
		{ cat "$TMP/$1.err"; die "$1: recording $2"; }
	py_check "$1"
}

# Debian's interpreter: non-PIE, libpython linked in, no frame pointers (the table walk).
t_python_launched_debian() {
	[ -x /usr/bin/python3.11 ] || skip "no Debian /usr/bin/python3.11"
	py_launched pyl_deb /usr/bin/python3.11
}

# --stack fp on an interpreter built without frame pointers (pyenv's 3.12): the walk starts in
# pymalloc's wrapper, called from code that keeps an int in rbp (long_neg: -8), which passed the
# stack-bounds check as fp + 16 wrapped, and faulted. The recording must finish, the target's
# exit status its own, the stacks stopped there counted.
t_python_fp_junk_rbp() {
	local p=$HOME/.pyenv/versions/3.12.1/bin/python3.12
	[ -x "$p" ] || skip "no pyenv CPython 3.12.1 ($p)"
	"$R" --via preload --stack fp -o "$TMP/pyfp.hsnap" -- "$p" "$PY_FRAMES" >/dev/null 2>"$TMP/pyfp.err" ||
		{ cat "$TMP/pyfp.err"; die "recording $p with --stack fp"; }
	"$T/pydump" "$TMP/pyfp.hsnap" >"$TMP/pyfp.dump" || die "pydump"
	grep -q "^counter stacks.fp_walk_stopped [1-9]" "$TMP/pyfp.dump" || die "no stack counted as stopped at a junk frame pointer"
}

# Shared libpython3.X.so builds (pyenv): one of each layout family the tables hold.
t_python_launched_shared() {
	local v n=0
	for v in 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0; do
		[ -x "$HOME/.pyenv/versions/$v/bin/python3" ] || continue
		py_launched "pyl_$v" "$HOME/.pyenv/versions/$v/bin/python3"
		n=$((n + 1))
	done
	[ $n -gt 0 ] || skip "no pyenv CPython 3.8 to 3.13 under ~/.pyenv/versions"
}

# py_attached NAME INTERP: attached (-p, every event) to INTERP running the script, which waits
# on a FIFO before its work: the domains are wrapped by a pending call, before the work, and put
# back at the detach.
py_attached() {
	py_oracle "$1" "$2"
	RARGS="-s 0" inject_start "$1" "$2" "$PY_FRAMES"
	echo go >"$TMP/$1.fifo"
	waitfor "$TMP/$1.out" done || die "$1: the script never finished its work"
	kill -INT $RPID
	wait $RPID || { cat "$TMP/$1.rerr"; die "$1: the recorder failed"; }
	echo go >"$TMP/$1.fifo"
	wait $TJOB
	[ -s "$TMP/$1.terr" ] && { cat "$TMP/$1.terr"; die "$1: the target wrote to stderr"; }
	py_check "$1"
}

# Debian's python3, and pyenv's shared-libpython 3.12 and 3.8 where they are.
t_python_attached() {
	local v
	need_inject
	[ -x /usr/bin/python3.11 ] || skip "no Debian /usr/bin/python3.11"
	py_attached pya /usr/bin/python3.11
	for v in 3.12.1 3.8.18; do
		[ -x "$HOME/.pyenv/versions/$v/bin/python3" ] && py_attached "pya_$v" "$HOME/.pyenv/versions/$v/bin/python3"
	done
	return 0
}

# An interpreter the tables do not hold (pyenv's 3.7): said once by the recorder, never
# on the program's stderr, counted, and its recording otherwise whole.
t_python_unsupported() {
	local p=$HOME/.pyenv/versions/3.7.16/bin/python3
	[ -x "$p" ] || skip "no pyenv CPython 3.7.16 ($p)"
	# The program's own stderr is a file of its own: the recorder says it, not the library.
	"$R" --via preload -o "$TMP/py37.hsnap" -- /bin/sh -c 'exec 2>"$1"; exec "$2" -c "k = [bytearray(5000) for _ in range(10)]"' \
		sh "$TMP/py37.target.err" "$p" >/dev/null 2>"$TMP/py37.err" || { cat "$TMP/py37.err"; die "recording 3.7"; }
	contains "$TMP/py37.err" "heapsnap-record: Python frames not read in process"
	contains "$TMP/py37.err" "CPython 3.7 is not one of 3.8 to 3.13"
	eq "said once" 1 "$(grep -c 'Python frames not read' "$TMP/py37.err")"
	[ ! -s "$TMP/py37.target.err" ] || { cat "$TMP/py37.target.err"; die "written into the program's stderr"; }
	"$T/pydump" "$TMP/py37.hsnap" >"$TMP/py37.dump" || die "pydump"
	contains "$TMP/py37.dump" "counter python.unsupported 1"
}

# Code objects compiled and dropped in a loop take the dropped ones' addresses (and so do their
# names, file names and line tables): each is still named by its own file; and a fork child
# numbers its own code objects from 1 (tests/workloads/py_codes.py, tests/pycodes_check.py).
t_python_code_ids() {
	[ -x /usr/bin/python3.11 ] || skip "no Debian /usr/bin/python3.11"
	"$R" --via preload -o "$TMP/pyc.hsnap" -- /usr/bin/python3.11 tests/workloads/py_codes.py >/dev/null 2>"$TMP/pyc.err" ||
		{ cat "$TMP/pyc.err"; die "recording py_codes.py"; }
	"$T/pydump" "$TMP/pyc.hsnap" >"$TMP/pyc.dump" || die "pydump"
	python3 tests/pycodes_check.py "$TMP/pyc.dump" || die "code ids"
}

# Sampled (16 KiB mean), launched: samples carry Python frames, pymalloc's included. big_objs'
# 20 blocks of 100,001 bytes are each sampled with probability 1 - exp(-100001/16384) = 0.998;
# small_objs' 314,000 bytes of objects under 512 bytes (pymalloc's) give 19 samples on average
# (fewer than 3: p < 1e-5).
t_python_sampled() {
	[ -x /usr/bin/python3.11 ] || skip "no Debian /usr/bin/python3.11"
	"$R" --via preload -s 16k -o "$TMP/pys.hsnap" -- /usr/bin/python3.11 "$PY_FRAMES" >/dev/null 2>"$TMP/pys.err" ||
		{ cat "$TMP/pys.err"; die "recording sampled"; }
	"$T/pydump" "$TMP/pys.hsnap" >"$TMP/pys.dump" || die "pydump"
	python3 - "$TMP/pys.dump" "$PY_FRAMES" <<'PY' || die "sampled Python frames"
import sys
codes, stacks, n = {}, {}, {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split(" ")
    if f[0] == "code" and " ".join(f[7:]) == sys.argv[2]:
        codes[(f[1], int(f[2]))] = f[6]
    elif f[0] == "stack":
        stacks[int(f[1])] = f[2:]
    elif f[0] == "alloc":
        py = [x for x in stacks.get(int(f[4]), []) if x.startswith("py:")]
        name = codes.get((f[1], int(py[0].split(":")[1]))) if py else None
        if (name == "big_objs" and f[3] != "100001") or (name == "small_objs" and int(f[3]) > 512):
            continue  # the list's own growth, under both
        n[name] = n.get(name, 0) + 1
print("samples by innermost function:", n)
sys.exit(0 if n.get("big_objs", 0) >= 18 and n.get("small_objs", 0) >= 3 else 1)
PY
}

# The BPF way reads no Python frames: the recording says so, and `info` shows it.
t_python_bpf_said() {
	[ -z "$BPF_REASON" ] || skip "$BPF_REASON"
	[ -x /usr/bin/python3.11 ] || skip "no Debian /usr/bin/python3.11"
	"$R" --via bpf -o "$TMP/pybpf.hsnap" -- /usr/bin/python3.11 -c 'k = [bytearray(5000) for _ in range(10)]' \
		>/dev/null 2>"$TMP/pybpf.err" || { cat "$TMP/pybpf.err"; die "recording via bpf"; }
	"$A" info "$TMP/pybpf.hsnap" >"$TMP/pybpf.info" 2>&1 || die "info"
	contains "$TMP/pybpf.info" "Python frames not captured: the BPF way reads no interpreter's frames"
}

ALL="$ALL t_python_launched_debian t_python_fp_junk_rbp t_python_launched_shared t_python_attached t_python_code_ids t_python_sampled t_python_unsupported t_python_bpf_said"

# ---- Python, the analyzer's side (issue 25): CPython's line tables read offline (common/pyline.c)
# against each interpreter's own reading; Python frames through every report, on crafted recordings
# with real line tables and on hostile ones; tests/workloads/py_exact.py recorded for real, launched
# and attached, against tracemalloc.

# The interpreters to check line tables against: Debian's and pyenv's 3.8 to 3.13, those present.
py_interpreters() {
	local v
	[ -x /usr/bin/python3 ] && echo /usr/bin/python3
	for v in 3.8 3.9 3.10 3.11 3.12 3.13; do
		ls -d "$HOME"/.pyenv/versions/$v.*/bin/python3 2>/dev/null | tail -1
	done
}

# common/pyline.c against each interpreter's own reading of its line tables (co_lines(),
# dis.findlinestarts()) at every instruction of 60 standard-library modules; then hostile tables.
t_python_linetables() {
	local py n=0 out
	"$T/test_pyline" --hostile || die "hostile line tables"
	for py in $(py_interpreters); do
		"$py" tests/pylines.py 60 >"$TMP/pylines.dump" 2>"$TMP/pylines.err" || die "$py tests/pylines.py: $(tail -1 "$TMP/pylines.err")"
		out=$("$T/test_pyline" "$TMP/pylines.dump" 2>&1) || die "$py: $out"
		echo "$py: $out"
		case $out in 0\ codes*) die "$py: no code objects dumped" ;; esac
		n=$((n + 1))
	done
	[ $n -gt 0 ] || skip "no Python interpreter (/usr/bin/python3 or pyenv's 3.8-3.13) to take line tables from"
	[ $n -ge 2 ] || echo "note: only $n interpreter checked"
}

# The oracle workload, and its line of each statement that keeps memory (FUNCTION=LINE, as
# craft_py takes them): main.F is main's call of F, worker2 the worker's second loop.
PY_EXACT=tests/workloads/py_exact.py
py_line() { grep -n -- "$1" "$PY_EXACT" | head -1 | cut -d: -f1; }
py_specs() {
	echo "module=$(py_line '^main()$') main.keep_large=$(py_line '^    keep_large()$')" \
		"main.keep_small=$(py_line '^    keep_small()$') main.chain_a=$(py_line '^    chain_a(N_CHAIN)$')" \
		"main.run_thread=$(py_line '^    run_thread()$') main.sort_with_key=$(py_line '^    sort_with_key()$')" \
		"keep_large=$(py_line 'large\[i\] = bytearray(LARGE)') keep_small=$(py_line 'small\[i\] = bytes(SMALL)')" \
		"chain_c=$(py_line 'chained\[i\] = bytes(CHAIN)') chain_b=$(py_line '^    chain_c(n)$') chain_a=$(py_line '^    chain_b(n)$')" \
		"worker=$(py_line 'threaded\[i\] = bytearray(T_LARGE)') worker2=$(py_line 'threaded\[N_T_LARGE + i\] = bytes(T_SMALL)')" \
		"key_fn=$(py_line 'called_back\[x\] = bytearray(CB)') sort_with_key=$(py_line 'return sorted(items, key=key_fn)')"
}

# py_craft NAME VARIANT PYTHON [FILE]: $TMP/NAME.hsnap, py_exact.py as craft_py writes it, with
# PYTHON's line tables of it, its codes naming FILE (default: the script's own path).
py_craft() {
	local name=$1 variant=$2 py=$3 f
	f=$(realpath "$PY_EXACT")
	"$py" tests/pylines.py --code "$f" '<module>' main keep_large keep_small chain_a chain_b chain_c worker key_fn \
		sort_with_key >"$TMP/$name.codes" || die "$py: the line tables of $f"
	"$T/craft_py" "$TMP/$name.hsnap" "$TMP/$name.codes" "${4:-$f}" "$variant" $(py_specs) || die "craft_py $name"
}

# pl PROFILE SAMPLE_INDEX "FUNCTION FILE:LINE": that line's cum value as go tool pprof -lines reads it.
pl() {
	go tool pprof -lines -top -nodecount=100000 -nodefraction=0 -edgefraction=0 -unit=B -sample_index="$2" "$1" 2>/dev/null |
		awk -v fn="$3" '
			/^ *flat/ { body = 1; next }
			body { name = $6; for (i = 7; i <= NF; i++) name = name " " $i
			       if (name == fn) { v = $4; sub(/B$/, "", v); print v; found = 1; exit } }
			END { if (!found) print "absent" }'
}

# A crafted recording of py_exact.py (tests/unit/craft_py.c: its figures) through go tool
# pprof: each Python function's bytes and objects (-top), on its line (-lines) with the line
# tables of each interpreter present, the frames of a callback from C in the order they ran
# (-traces), the source with bytes on the line (-list), a code id per process (-tagfocus).
t_python_crafted_pprof() {
	need_go
	local py f p=$TMP/pyc.pb.gz n=0
	f=$(realpath "$PY_EXACT")
	for py in $(py_interpreters); do
		py_craft pyc a "$py"
		"$A" pprof -o "$p" "$TMP/pyc.hsnap" 2>"$TMP/pyc.err" || { cat "$TMP/pyc.err"; die "pprof"; }
		eq "$py: keep_large's line" 800456 "$(pl "$p" inuse_space "keep_large $f:$(py_line 'large\[i\] = bytearray(LARGE)')")"
		eq "$py: worker's first line" 101140 "$(pl "$p" inuse_space "worker $f:$(py_line 'threaded\[i\] = bytearray(T_LARGE)')")"
		eq "$py: worker's second line" 16600 "$(pl "$p" inuse_space "worker $f:$(py_line 'threaded\[N_T_LARGE + i\] = bytes(T_SMALL)')")"
		eq "$py: main's call of chain_a" 19980 "$(pl "$p" inuse_space "main $f:$(py_line '^    chain_a(N_CHAIN)$')")"
		eq "$py: chain_b's call of chain_c" 60 "$(pl "$p" inuse_objects "chain_b $f:$(py_line '^    chain_c(n)$')")"
		eq "$py: sort_with_key, no offset: its first line" 1111 "$(pl "$p" inuse_space "sort_with_key $f:$(py_line '^def sort_with_key')")"
		n=$((n + 1))
	done
	[ $n -gt 0 ] || skip "no Python interpreter to take line tables from"
	for fn_want in "keep_large 800456 16" "keep_small 153000 1010" "chain_a 19980 60" "chain_b 19980 60" \
		"chain_c 19980 60" "worker 117740 240" "key_fn 48448 128" "sort_with_key 49559 129" "main 1010772 1206" \
		"<module> 1010772 1206" "[python code 999 not recorded] 7777 1"; do
		set -- $fn_want
		local fn=${*:1:$#-2} b=${*: -2:1} c=${*: -1}
		eq "$fn inuse_space (cum)" "$b" "$(pv "$p" inuse_space "$fn" cum)"
		eq "$fn inuse_objects (cum)" "$c" "$(pv "$p" inuse_objects "$fn" cum)"
		eq "$fn flat (a Python frame is never a leaf here)" 0 "$(pv "$p" inuse_space "$fn")"
	done
	# --no-symbolize leaves native frames to be symbolized later; Python frames are named now,
	# as nothing later could name them.
	"$A" pprof --no-symbolize -o "$TMP/pycn.pb.gz" "$TMP/pyc.hsnap" 2>/dev/null || die "pprof --no-symbolize"
	eq "--no-symbolize: keep_large" 800456 "$(pv "$TMP/pycn.pb.gz" inuse_space keep_large cum)"
	# Process 200's keep_small has the code id of process 100's keep_large.
	eq "pid 200: keep_small" 20000 "$(go tool pprof -tagfocus=pid:200 -top -unit=B -sample_index=inuse_space "$p" 2>/dev/null |
		awk '$6 == "keep_small" { v = $4; sub(/B$/, "", v); print v }')"
	eq "pid 200: keep_large" "" "$(go tool pprof -tagfocus=pid:200 -top -sample_index=inuse_space "$p" 2>/dev/null | awk '$6 == "keep_large"')"
	# Native -> Python -> native (sorted) -> Python, as it ran, innermost first.
	go tool pprof -traces -sample_index=inuse_space "$p" 2>/dev/null >"$TMP/pyc.traces"
	awk '/-----------/ { if (t ~ /key_fn/) print t; t = ""; next } $1 ~ /:$/ { next } { t = t " " $NF }' "$TMP/pyc.traces" |
		grep -F 'python3+0xf' >"$TMP/pyc.cb"
	eq "the callback's frames" " python3+0xf python3+0x1f key_fn python3+0x4f sort_with_key main <module> python3+0x2f" \
		"$(cat "$TMP/pyc.cb")"
	# -list: the source from the file the code names, with the bytes on the allocating line.
	go tool pprof -list '^keep_large$' -unit=B -sample_index=inuse_space "$p" >"$TMP/pyc.list" 2>/dev/null
	contains "$TMP/pyc.list" "ROUTINE ======================== keep_large in $f"
	eq "-list keep_large: its allocating line" "800456B $(py_line 'large\[i\] = bytearray(LARGE)'): large[i] = bytearray(LARGE)" \
		"$(awk '$2 ~ /B$/ && $2 != "800456B" { next } $2 == "800456B" { print $2, $3, $4, $5, $6 }' "$TMP/pyc.list" | tail -1)"
	eq "-list keep_large: starts at its def" "$(py_line '^def keep_large'):def keep_large():" \
		"$(grep -m1 -E '^ +[^ ]+ +[^ ]+ +[0-9]+:' "$TMP/pyc.list" | sed -E 's/^ +[^ ]+ +[^ ]+ +//')"
}

# go tool pprof -http on the same recording: its top, source and flame graph views hold the
# Python functions, with their bytes on the allocating line.
t_python_crafted_http() {
	need_go
	command -v curl >/dev/null || skip "no curl to read pprof's web pages"
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 for the line tables"
	local port=$((20000 + $$ % 20000)) pid i u
	py_craft pyw a /usr/bin/python3
	"$A" pprof -o "$TMP/pyw.pb.gz" "$TMP/pyw.hsnap" 2>/dev/null || die "pprof"
	go tool pprof -http=127.0.0.1:$port -no_browser -sample_index=inuse_space "$TMP/pyw.pb.gz" >"$TMP/pyw.log" 2>&1 &
	pid=$!
	u=http://127.0.0.1:$port/ui
	for i in $(seq 400); do curl -sf -o /dev/null "$u/" && break; sleep 0.05; done
	curl -sf "$u/top" >"$TMP/pyw.top"; curl -sf "$u/source?f=keep_large" >"$TMP/pyw.src"
	curl -sf "$u/flamegraph" >"$TMP/pyw.flame"
	kill_tree $pid
	contains "$TMP/pyw.top" '{"Name":"keep_large","InlineLabel":"","Flat":0,"Cum":800456,'
	contains "$TMP/pyw.top" '{"Name":"worker","InlineLabel":"","Flat":0,"Cum":117740,'
	grep -A3 -F "$(py_line 'large\[i\] = bytearray(LARGE)')" "$TMP/pyw.src" | grep -q 'bytearray(LARGE)' ||
		die "the source view lacks keep_large's line"
	grep -F "bytearray(LARGE)" "$TMP/pyw.src" | grep -q "781.70kB" || die "the source view lacks the bytes on keep_large's line"
	contains "$TMP/pyw.flame" '"key_fn"'
}

# The text reports of the same recording: top, collapsed (goldens of testdata/py_exact.hsnap,
# crafted so from Debian's python3.11, its codes naming /srv/app/py_exact.py), leaks with
# file:line, temporary by leaf and Python caller, JSON, speedscope, stats; diff of two runs
# whose code ids and pids differ: Python functions match by name and file.
t_python_crafted_reports() {
	local f
	golden py_exact.top top -n 0 testdata/py_exact.hsnap
	golden py_exact.collapsed collapsed testdata/py_exact.hsnap
	golden py_exact.leaks leaks -n 4 testdata/py_exact.hsnap
	"$A" temporary testdata/py_exact.hsnap >"$TMP/pyr.temp" 2>/dev/null || die "temporary"
	contains "$TMP/pyr.temp" "           5            320    0.5%  python3+0x1f in keep_small (py_exact.py)"
	"$A" top --json -n 0 testdata/py_exact.hsnap >"$TMP/pyr.json" 2>/dev/null || die "top --json"
	python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
d = {f["name"]: f["cum"] for f in j["functions"]}
assert d["keep_large (py_exact.py)"] == 800456 and d["worker (py_exact.py)"] == 117740, d
# Python functions by own (the innermost Python frame) and cum.
py = [(f["name"], f["own"], f["cum"]) for f in j["python_functions"]]
assert py[:5] == [("keep_large (py_exact.py)", 800456, 800456), ("keep_small (py_exact.py)", 153000, 153000),
                  ("worker (py_exact.py)", 117740, 117740), ("key_fn (py_exact.py)", 48448, 48448),
                  ("chain_c (py_exact.py)", 19980, 19980)], py[:5]
own = {n: (o, c) for n, o, c in py}
assert own["chain_a (py_exact.py)"] == (0, 19980) and own["sort_with_key (py_exact.py)"] == (1111, 49559), own
assert own["[python code 999 not recorded]"] == (7777, 7777) and own["main (py_exact.py)"] == (0, 1010772), own
assert not any(n.startswith("python3+") for n in own), own' "$TMP/pyr.json" || die "top --json"
	"$A" speedscope -o "$TMP/pyr.ss.json" testdata/py_exact.hsnap 2>/dev/null || die "speedscope"
	contains "$TMP/pyr.ss.json" '{"name":"key_fn (py_exact.py)"}'
	"$A" stats testdata/py_exact.hsnap >"$TMP/pyr.stats" 2>/dev/null || die "stats"
	contains "$TMP/pyr.stats" "Python code objects: 11 ("
	command -v /usr/bin/python3 >/dev/null || skip "no /usr/bin/python3 for the diff's recordings"
	f=$(realpath "$PY_EXACT")
	py_craft pyra a /usr/bin/python3
	py_craft pyrb b /usr/bin/python3
	"$A" diff --json -n 0 "$TMP/pyra.hsnap" "$TMP/pyrb.hsnap" >"$TMP/pyr.diff" 2>/dev/null || die "diff"
	# The same program, its file named otherwise: no Python function of one is one of the other.
	py_craft pyro a /usr/bin/python3 /srv/app/other.py
	"$A" diff --json -n 0 "$TMP/pyra.hsnap" "$TMP/pyro.hsnap" >"$TMP/pyro.diff" 2>/dev/null || die "diff, other file"
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
st = sorted((s["delta"], s["name"].split(" <- ")[2]) for s in d["stacks"] if s["name"].startswith("python3+0xf <- python3+0x1f <- keep_large"))
l = sys.argv[2]
assert st == [(-800008, "keep_large (py_exact.py:%s)" % l), (800008, "keep_large (other.py:%s)" % l)], st' \
		"$TMP/pyro.diff" "$(py_line 'large\[i\] = bytearray(LARGE)')" || die "Python functions of two files matched"
	python3 - "$TMP/pyr.diff" "$(py_line 'small\[i\] = bytes(SMALL)')" <<-'PY' || die "diff of two runs"
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["delta"] == 133000, d["delta"]
	st = [(s["name"], s["delta"]) for s in d["stacks"]]
	assert st == [("python3+0x1f <- keep_small (py_exact.py:%s) <- main (py_exact.py:%s) <- <module> (py_exact.py:%s) <- python3+0x2f"
	               % (sys.argv[2], st[0][0].split("main (py_exact.py:")[1].split(")")[0],
	                  st[0][0].split("<module> (py_exact.py:")[1].split(")")[0]), 133000)], st
	PY
}

# A Python function that recurs counts once per stack toward cum, as a C one does (recurse.c):
# nest(3) -> nest(2) -> nest(1), each level allocating level x 100,000 bytes after its call, so
# nest's cum is its own 600,000 and more, where counting each of its frames would give 1,000,000.
# Its caller outer keeps next to nothing of its own: its cum is nest's and at most a few objects.
t_python_recursion() {
	[ -x /usr/bin/python3 ] || skip "no Debian /usr/bin/python3"
	cat >"$TMP/pyrec.py" <<-'PY'
	kept = []
	def nest(level):
	    if level > 1:
	        nest(level - 1)
	    kept.append(bytearray(100000 * level))
	def outer():
	    nest(3)
	outer()
	PY
	"$R" --via preload -o "$TMP/pyrec.hsnap" -- /usr/bin/python3 "$TMP/pyrec.py" >/dev/null 2>"$TMP/pyrec.err" ||
		{ cat "$TMP/pyrec.err"; die "recording the recursion"; }
	# Allocated space: the interpreter frees kept as it exits.
	"$A" top --json -n 0 --value alloc_space "$TMP/pyrec.hsnap" >"$TMP/pyrec.json" 2>"$TMP/pyrec.err" ||
		{ cat "$TMP/pyrec.err"; die "top --json"; }
	python3 - "$TMP/pyrec.json" <<-'PY' || die "a recursive Python function's cum"
	import json, sys
	py = {f["name"]: (f["own"], f["cum"]) for f in json.load(open(sys.argv[1]))["python_functions"]}
	own, cum = py["nest (pyrec.py)"]
	assert own == cum and 600000 <= cum < 700000, ("nest: own, cum", own, cum)
	assert 0 <= py["outer (pyrec.py)"][1] - cum < 1000, ("outer", py["outer (pyrec.py)"], "nest's cum", cum)
	PY
}

# Hostile Python frames: line tables of random bytes (of every version, and of versions no
# interpreter has), codes not recorded, offsets past every table, names with escapes: every
# report finishes, under ASan and UBSan when built. A file of more code objects than the
# analyzer keeps is refused, naming the frame's offset.
t_python_hostile() {
	local a=$A seed c
	[ -x "$OUT/asan/heapsnap-analyze" ] && a=$OUT/asan/heapsnap-analyze
	for seed in 1 2 3 4 5 6; do
		"$T/craft_py" "$TMP/pyx.hsnap" --hostile $seed || die "craft_py --hostile $seed"
		for c in top collapsed "leaks -n 50" temporary "pprof -o $TMP/pyx.pb.gz" "html -o $TMP/pyx.html" \
			"speedscope -o $TMP/pyx.ss" "diff $TMP/pyx.hsnap"; do
			$a $c "$TMP/pyx.hsnap" >"$TMP/pyx.out" 2>"$TMP/pyx.err" || { tail -5 "$TMP/pyx.err"; die "seed $seed: $c"; }
		done
		grep -q $'\x1b' "$TMP/pyx.out" && die "seed $seed: a terminal escape from the file reached the output"
	done
	"$T/craft_py" "$TMP/pym.hsnap" --many 2097153 || die "craft_py --many"
	"$A" top "$TMP/pym.hsnap" >/dev/null 2>"$TMP/pym.err" && die "2097153 code objects accepted"
	grep -qE "pym.hsnap: frame at offset [0-9]+, record [0-9]+: more Python code objects than this analyzer reads \(at most 2097152" \
		"$TMP/pym.err" || { cat "$TMP/pym.err"; die "the refusal does not say where and why"; }
	# A code id named twice in one process: the first name kept, and said.
	"$T/craft_py" "$TMP/pyd.hsnap" --repeated || die "craft_py --repeated"
	"$A" collapsed "$TMP/pyd.hsnap" 2>/dev/null | grep -q "first (f.py)" || die "the first name of a repeated code id not kept"
	"$A" stats "$TMP/pyd.hsnap" 2>/dev/null | grep -q "^Python code objects: 1 (.*named again: the first kept" ||
		die "a repeated code id not said"
	"$T/craft_py" "$TMP/pym.hsnap" --many 1000 || die "craft_py --many 1000"
	"$A" stats "$TMP/pym.hsnap" 2>/dev/null | grep -q "^Python code objects: 1000 " || die "1000 code objects not read"
}

# ---- py_exact.py recorded for real: every figure as tracemalloc counts it ----

# py_tracemalloc [PYTHON NAME]: tracemalloc's figures of py_exact.py by function and line, in
# $TMP/NAME.tm ("FUNCTION LINE BYTES COUNT"; default: Debian's python3, py_exact), once per run of
# the tests, the script run from its absolute path (the path its code objects name).
py_tracemalloc() {
	local py=${1:-/usr/bin/python3} tm=$TMP/${2:-py_exact}.tm
	[ -s "$tm" ] && return 0
	"$py" "$(realpath "$PY_EXACT")" --tracemalloc >"$tm.out" 2>"$tm.err" ||
		{ cat "$tm.err"; die "$py py_exact.py --tracemalloc"; }
	grep -E '^(keep_large|keep_small|chain_a|chain_b|chain_c|worker|key_fn) ' "$tm.out" >"$tm"
	[ "$(wc -l <"$tm")" -ge 8 ] || { cat "$tm.out"; die "$py: tracemalloc's figures of py_exact.py are missing"; }
}

# py_need_codes NAME: skips unless recording NAME holds Python code objects (PY_CODE records),
# which only a recorder that reads Python frames writes.
py_need_codes() {
	local n
	n=$("$A" stats --json "$TMP/$1.hsnap" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin).get("python_codes", 0))')
	[ "${n:-0}" -gt 0 ] ||
		skip "the recording holds no Python code objects (PY_CODE records): this libheapsnap.so does not read Python frames"
}

# py_exact_check NAME [TM]: recording NAME's Python functions against tracemalloc's figures
# (py_tracemalloc's TM, default py_exact): each line's bytes and blocks in use (go tool pprof
# -lines), each function's (cum), and -list keep_large's line.
py_exact_check() {
	local p=$TMP/$1.pb.gz tm=$TMP/${2:-py_exact}.tm f fn line b c kb=0 line_kl
	f=$(realpath "$PY_EXACT")
	"$A" pprof -o "$p" "$TMP/$1.hsnap" 2>"$TMP/$1.aerr" || { cat "$TMP/$1.aerr"; die "$1: pprof"; }
	while read -r fn line b c; do
		eq "$1: $fn $f:$line inuse_space" "$b" "$(pl "$p" inuse_space "$fn $f:$line")"
		eq "$1: $fn $f:$line inuse_objects" "$c" "$(pl "$p" inuse_objects "$fn $f:$line")"
	done <"$tm"
	for fn in keep_large keep_small chain_a chain_b chain_c worker key_fn; do
		eq "$1: $fn inuse_space (cum)" "$(awk -v fn="$fn" '$1 == fn { s += $3 } END { print s }' "$tm")" \
			"$(pv "$p" inuse_space "$fn" cum)"
	done
	# top's Python functions: those that allocate themselves own what they hold.
	"$A" top --json -n 0 "$TMP/$1.hsnap" >"$TMP/$1.top.json" 2>/dev/null || die "$1: top --json"
	for fn in keep_large keep_small chain_c worker key_fn; do
		eq "$1: $fn own (top)" "$(awk -v fn="$fn" '$1 == fn { s += $3 } END { print s }' "$tm")" \
			"$(python3 -c 'import json, sys
print(next((round(f["own"]) for f in json.load(open(sys.argv[1])).get("python_functions", []) if f["name"] == sys.argv[2]), "absent"))' \
				"$TMP/$1.top.json" "$fn (py_exact.py)")"
	done
	line_kl=$(py_line 'large\[i\] = bytearray(LARGE)')
	kb=$(awk -v l="$line_kl" '$1 == "keep_large" && $2 == l { print $3 }' "$tm")
	go tool pprof -list '^keep_large$' -unit=B -sample_index=inuse_space "$p" >"$TMP/$1.list" 2>/dev/null
	eq "$1: -list keep_large" "${kb}B $line_kl: large[i] = bytearray(LARGE)" \
		"$(awk -v l="$line_kl:" '$3 == l { print $2, $3, $4, $5, $6 }' "$TMP/$1.list")"
}

# Launched through the preload way, every event: every figure of py_exact.py as tracemalloc
# counts it in a run of its own, on the right file and line.
t_python_exact_preload() {
	need_go
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	py_tracemalloc
	"$R" --via preload -s 0 -o "$TMP/pye.hsnap" -- /usr/bin/python3 "$(realpath "$PY_EXACT")" >"$TMP/pye.out" 2>"$TMP/pye.err" ||
		{ cat "$TMP/pye.err"; die "recording py_exact.py"; }
	contains "$TMP/pye.out" held
	py_need_codes pye
	py_exact_check pye
}

# Launched, sampled at 4 KiB: each function's estimate within 4 of its stated standard errors of
# tracemalloc's figure, or 1% (functions of 48 KB and more: at least ~10 samples each).
t_python_exact_sampled() {
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	py_tracemalloc
	"$R" --via preload -s 4k -o "$TMP/pys.hsnap" -- /usr/bin/python3 "$(realpath "$PY_EXACT")" >"$TMP/pys.out" 2>"$TMP/pys.err" ||
		{ cat "$TMP/pys.err"; die "recording py_exact.py"; }
	contains "$TMP/pys.out" held
	py_need_codes pys
	"$A" top --json -n 0 "$TMP/pys.hsnap" >"$TMP/pys.json" 2>/dev/null || die "top --json"
	python3 - "$TMP/pys.json" "$TMP/py_exact.tm" <<-'PY' || die "sampled estimates"
	import json, sys
	rows = {f["name"]: f for f in json.load(open(sys.argv[1]))["functions"]}
	truth = {}
	for l in open(sys.argv[2]):
	    fn, line, b, c = l.split()
	    truth[fn] = truth.get(fn, 0) + int(b)
	for fn in ("keep_large", "keep_small", "worker", "key_fn"):
	    r = rows.get(fn + " (py_exact.py)")
	    assert r, (fn, "not sampled")
	    # A class of blocks no sample saw states no error of its own (keep_large's 8 objects of
	    # 56 bytes, each sampled with p = 0.014, beside buffers sampled surely): 1% at least.
	    assert abs(r["cum"] - truth[fn]) <= max(4 * r["cum_se"], truth[fn] / 100), (fn, r["cum"], r["cum_se"], truth[fn])
	    print(fn, truth[fn], r["cum"], "+-", r["cum_se"])
	PY
}

# Launched and sampling, Python's domains are wrapped once the interpreter has started, even
# in a program whose every object is pymalloc's, where no sample of malloc's comes after the
# start to wrap them at (at 1 GiB, none at all): malloc's pass-bys look for the start
# (pymem_wait_step). The counter says the domains were wrapped.
t_python_sampled_wrapped() {
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	"$R" --via preload -s 1g --stats -o "$TMP/psw.hsnap" -- /usr/bin/python3 -c 'x = [bytes(10) for _ in range(1000)]' \
		>"$TMP/psw.out" 2>"$TMP/psw.err" || { cat "$TMP/psw.err"; die "recording"; }
	eq "domains wrapped (python.pymem_wrapped)" 1 "$(awk '$1 == "python.pymem_wrapped" { print $2 }' "$TMP/psw.err")"
}

# Sampling, Python's domains keep pymalloc's own free (pymem.c), and each sampled block is
# placed outside pymalloc's arenas so that its free reaches free's hook: of the objects
# py_sampled_frees.py makes and frees in churn, grow (pymalloc's realloc in its pools), shrink
# (its realloc of malloc's blocks) and big (buffers over 512 bytes, malloc's), none is live at
# the end, each sampled block's free seen; churn's bytes allocated (53,200,000: the workload's
# header), grow's and shrink's (what bytearray.__alloc__ says their reallocs asked for: each
# counted once, by our countdown in pymalloc's pools, by realloc's hook in malloc's) and
# keep's live (2,660,000) within 4 standard errors of the estimate.
t_python_sampled_frees() {
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	local h=$TMP/psf.hsnap v
	"$R" --via preload -s 64k -o "$h" -- /usr/bin/python3 "$PWD/tests/workloads/py_sampled_frees.py" >"$TMP/psf.out" 2>"$TMP/psf.err" ||
		{ cat "$TMP/psf.err"; die "recording py_sampled_frees.py"; }
	contains "$TMP/psf.out" done
	for v in inuse_space alloc_space; do
		"$A" top --json -n 0 --value $v "$h" >"$TMP/psf.$v.json" 2>/dev/null || die "top --value $v"
	done
	python3 - "$TMP/psf.inuse_space.json" "$TMP/psf.alloc_space.json" "$TMP/psf.out" <<-'PY' || die "sampled Python frees"
	import json, sys
	def rows(path):
	    return {f["name"].split(" ")[0]: f for f in json.load(open(path))["python_functions"]
	            if f["name"].endswith("(py_sampled_frees.py)")}
	inuse, alloc = rows(sys.argv[1]), rows(sys.argv[2])
	asked = dict(l.split() for l in open(sys.argv[3]) if l.split()[0].endswith("_bytes"))
	for fn in ("churn", "grow", "shrink", "big"):
	    assert fn in alloc, (fn, "never sampled")
	    assert fn not in inuse, (fn, "live at the end: a sampled block's free unseen", inuse[fn]["cum"])
	def near(row, truth, what):
	    print(what, truth, row["cum"], "+-", row["cum_se"])
	    assert abs(row["cum"] - truth) <= 4 * row["cum_se"], (what, truth, row["cum"], row["cum_se"])
	near(alloc["churn"], 400000 * 133, "churn alloc_space")
	for fn in ("grow", "shrink"):
	    near(alloc[fn], int(asked[fn + "_bytes"]), fn + " alloc_space")
	near(inuse["keep"], 20000 * 133, "keep inuse_space")
	PY
	"$A" stats "$h" >"$TMP/psf.stats" 2>/dev/null || die "stats"
	contains "$TMP/psf.stats" "0 frees of no live block"
	eq "frees of unknown blocks" 0 "$(awk '$1 == "frees.unknown" { print $2 }' "$TMP/psf.stats")"
}

# Sampling over pymalloc takes every call for a candidate at the chance a call of 512 bytes
# has, and a candidate of N bytes with the chance N's has over that (pymem.c): at 1 KiB, where
# the two chances are far from proportional to N (0.039 and 0.393 for 40 and 512 bytes), each
# of py_sampled_sizes.py's functions' bytes allocated (200,000 bytes objects of 40 to 512
# bytes, pymalloc's, and of 600, malloc's; their sizes as sys.getsizeof says) within 4
# standard errors of the estimate, none of the samples lost.
t_python_sampled_sizes() {
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	local h=$TMP/pss.hsnap
	"$R" --via preload -s 1k -o "$h" -- /usr/bin/python3 "$PWD/tests/workloads/py_sampled_sizes.py" 200000 >"$TMP/pss.out" 2>"$TMP/pss.err" ||
		{ cat "$TMP/pss.err"; die "recording py_sampled_sizes.py"; }
	contains "$TMP/pss.out" done
	"$A" top --json -n 0 --value alloc_space "$h" >"$TMP/pss.json" 2>/dev/null || die "top --value alloc_space"
	# A sample lost would read low as a bias would.
	"$A" stats "$h" >"$TMP/pss.stats" 2>/dev/null || die "stats"
	eq "samples lost to a full ring" 0 "$(awk '$1 == "lost.ringbuf_full" { print $2 }' "$TMP/pss.stats")"
	python3 - "$TMP/pss.json" "$TMP/pss.out" <<-'PY' || die "sampled Python sizes"
	import json, sys
	rows = {f["name"].split(" ")[0]: f for f in json.load(open(sys.argv[1]))["python_functions"]
	        if f["name"].endswith("(py_sampled_sizes.py)")}
	sizes = {l.split()[1]: int(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("size ")}
	assert len(sizes) == 5, sizes
	for fn, size in sizes.items():
	    truth, row = 200000 * size, rows[fn]
	    print(fn, truth, row["cum"], "+-", row["cum_se"])
	    assert abs(row["cum"] - truth) <= 4 * row["cum_se"], (fn, truth, row["cum"], row["cum_se"])
	PY
}

# Blocks of the pool's (libc's malloc, sampled at 256 KiB) given back through Python's memory
# domain, PYTHONMALLOC=malloc making its free plain free, which the wrapped domain keeps while
# sampling (pymem.c): each recorded freed once, by free's hook, and kept by the pool, not
# handed to glibc, which would unmap the pool's pages. take_blocks: 16 blocks of 4 MiB, sampled surely (p = 1 - e^-16).
t_python_pool_domain_free() {
	need_go
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	local p=$TMP/ppd.pb.gz
	PYTHONMALLOC=malloc "$R" --via preload -s 256k -o "$TMP/ppd.hsnap" -- /usr/bin/python3 \
		"$PWD/tests/workloads/py_pool_domain.py" >"$TMP/ppd.out" 2>"$TMP/ppd.err" ||
		{ cat "$TMP/ppd.err"; die "recording py_pool_domain.py"; }
	eq "glibc's mmapped bytes for take_blocks (the pool placed them)" 0 "$(awk '$1 == "glibc" && $2 == "mmapped" { print $3 }' "$TMP/ppd.out")"
	eq "glibc's mmapped bytes their frees took away (the pool kept them)" 0 "$(awk '$1 == "glibc" && $2 == "freed" { print $3 }' "$TMP/ppd.out")"
	"$A" pprof -o "$p" "$TMP/ppd.hsnap" 2>/dev/null || die "pprof of py_pool_domain.py"
	eq "take_blocks alloc_space" 67108864 "$(pv "$p" alloc_space take_blocks cum)"
	eq "take_blocks alloc_objects" 16 "$(pv "$p" alloc_objects take_blocks cum)"
	eq "take_blocks inuse_space (all freed)" absent "$(pv "$p" inuse_space take_blocks cum)"
	"$A" stats "$TMP/ppd.hsnap" >"$TMP/ppd.stats" 2>/dev/null || die "stats"
	contains "$TMP/ppd.stats" "0 frees of no live block"
	eq "frees of unknown blocks" 0 "$(awk '$1 == "frees.unknown" { print $2 }' "$TMP/ppd.stats")"
	eq "sessions whose pool stopped" 0 "$(awk '$1 == "sampler.pool_stopped" { print $2 }' "$TMP/ppd.stats")"
}

# The same launched with each shared-libpython build present (pyenv's 3.8 to 3.13): their own
# line-table formats and frame layouts, each against its own tracemalloc.
t_python_exact_shared() {
	need_go
	local py v n=0
	for v in 3.8 3.9 3.10 3.11 3.12 3.13; do
		py=$(ls -d "$HOME"/.pyenv/versions/$v.*/bin/python3 2>/dev/null | tail -1)
		[ -x "$py" ] || continue
		py_tracemalloc "$py" "pyt$v"
		"$R" --via preload -s 0 -o "$TMP/pyv$v.hsnap" -- "$py" "$(realpath "$PY_EXACT")" >"$TMP/pyv$v.out" 2>"$TMP/pyv$v.err" ||
			{ cat "$TMP/pyv$v.err"; die "recording py_exact.py with $py"; }
		contains "$TMP/pyv$v.out" held
		py_need_codes "pyv$v"
		py_exact_check "pyv$v" "pyt$v"
		n=$((n + 1))
	done
	[ $n -gt 0 ] || skip "no shared-libpython interpreter (pyenv's 3.8 to 3.13 under ~/.pyenv/versions)"
}

# Attached with -p to the running interpreter before it allocates, every event: the same.
t_python_exact_attach() {
	need_inject; need_go
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	local rc
	py_tracemalloc
	RARGS="--via inject -s 0" inject_start pya /usr/bin/python3 "$(realpath "$PY_EXACT")"
	echo go >"$TMP/pya.fifo"
	wait $TJOB; rc=$?
	eq "pya: the target's own exit status" 0 $rc
	wait $RPID || { cat "$TMP/pya.rerr"; die "pya: the recorder failed"; }
	[ -s "$TMP/pya.terr" ] && { cat "$TMP/pya.terr"; die "pya: the target wrote to stderr"; }
	eq "pya: the target's stdout" "ready $TPID held" "$(cat "$TMP/pya.out" | tr '\n' ' ' | sed 's/ $//')"
	py_need_codes pya
	py_exact_check pya
}

# The HTML report of the launched recording in Chromium: the Python functions in its flame
# graph and tables with tracemalloc's bytes.
t_python_exact_html() {
	command -v chromium >/dev/null || skip "chromium is not installed (scripts/install-deps.sh installs it)"
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	py_tracemalloc
	"$R" --via preload -s 0 -o "$TMP/pyeh.hsnap" -- /usr/bin/python3 "$(realpath "$PY_EXACT")" >/dev/null 2>"$TMP/pyeh.err" ||
		{ cat "$TMP/pyeh.err"; die "recording py_exact.py"; }
	py_need_codes pyeh
	"$A" html -o "$TMP/pyeh.html" "$TMP/pyeh.hsnap" 2>"$TMP/pyeh.aerr" || { cat "$TMP/pyeh.aerr"; die "html"; }
	sed -n '/<section id=python>/,/<\/section>/p' "$TMP/pyeh.html" >"$TMP/pyeh.py"
	contains "$TMP/pyeh.py" "<tr><td class=n>$(awk '$1 == "keep_large" { s += $3 } END { print s }' "$TMP/py_exact.tm")</td>"
	python3 tests/htmlcheck.py dom "$TMP/pyeh.html" "" >"$TMP/pyeh.json" || die "chromium on the report"
	python3 - "$TMP/pyeh.json" "$TMP/py_exact.tm" <<-'PY' || die "what rendered"
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["rendered"], "the page's script did not finish"
	want, lines = {}, set()
	for l in open(sys.argv[2]):
	    fn, line, b, c = l.split()
	    want[fn + " (py_exact.py)"] = want.get(fn + " (py_exact.py)", 0) + int(b)
	    lines.add("%s py_exact.py:%s" % (fn, line))
	# The flame graph: exact where nothing of the function was folded into "other" (the graph
	# keeps 2,500 nodes: a callback's many small paths through list.sort may be), never more.
	for fn, b in want.items():
	    v = d["values"].get(fn, 0)
	    assert v == b or (b < 100000 and 0 < v <= b), (fn, v, b)
	# The tables of live stacks: each allocating line and each line of a call between.
	rows = " | ".join(d["table_functions"])
	for l in lines:
	    assert l in rows, (l, rows[:2000])
	PY
}

# The HTML report of the crafted recording in Chromium: Python functions in its flame graph
# and tables, with their bytes.
t_python_crafted_html() {
	command -v chromium >/dev/null || skip "chromium is not installed (scripts/install-deps.sh installs it)"
	"$A" html -o "$TMP/pyh.html" testdata/py_exact.hsnap 2>"$TMP/pyh.err" || { cat "$TMP/pyh.err"; die "html"; }
	# The table of Python functions by own and cum, as top gives it.
	sed -n '/<section id=python>/,/<\/section>/p' "$TMP/pyh.html" >"$TMP/pyh.py"
	contains "$TMP/pyh.py" '<tr><td class=n>800456</td><td class=n>800456</td><td class=fn>keep_large (py_exact.py)</td></tr>'
	contains "$TMP/pyh.py" '<tr><td class=n>0</td><td class=n>19980</td><td class=fn>chain_a (py_exact.py)</td></tr>'
	python3 tests/htmlcheck.py dom "$TMP/pyh.html" "" >"$TMP/pyh.json" || die "chromium on the report"
	python3 - "$TMP/pyh.json" <<-'PY' || die "what rendered"
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["rendered"], "the page's script did not finish"
	want = {"keep_large (py_exact.py)": 800456, "keep_small (py_exact.py)": 153000, "chain_c (py_exact.py)": 19980,
	        "worker (py_exact.py)": 117740, "key_fn (py_exact.py)": 48448, "[python code 999 not recorded]": 7777}
	for fn, b in want.items():
	    assert d["values"].get(fn) == b, (fn, d["values"].get(fn), b)
	    assert d["view"].get(fn) == [0, b], (fn, d["view"].get(fn))
	    assert fn in d["table_functions"], (fn, d["table_functions"][:20])
	assert any("keep_large py_exact.py:47" in t for t in d["table_functions"]), "no leak row with the Python line"
	PY
}

ALL="$ALL t_python_linetables t_python_crafted_pprof t_python_crafted_http t_python_crafted_reports t_python_recursion t_python_crafted_html t_python_hostile"
ALL="$ALL t_python_exact_preload t_python_exact_shared t_python_exact_sampled t_python_exact_attach t_python_exact_html t_python_pool_domain_free t_python_sampled_frees t_python_sampled_sizes t_python_sampled_wrapped"

# Attached to Debian's python3 while it is idle, blocked in sys.stdin.read(1) (its stdin a
# FIFO), every event, then woken (tests/workloads/py_idle.py): the library loads at the
# allocator call the main thread makes back from the read, holding the GIL, and pymalloc's
# domains must be wrapped before it goes on (pymem.c: the pending call that Py_AddPendingCall
# queues from the loader's thread ran only when the main thread next took the GIL back, after
# the objects were made: keep_small's 20,000 objects absent, churn_free's 20,000 frees of
# unknown pointers). Each function's bytes are what sys.getsizeof says of its objects.
t_python_attach_idle() {
	need_inject; need_go
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	local p=$TMP/pyi.pb.gz rc i s l c th ch unknown
	fifo_target pyi /usr/bin/python3 "$PWD/tests/workloads/py_idle.py"
	# Idle: in read(2) on its stdin (syscall 0, fd 0), which no allocator call precedes now.
	for i in $(seq 400); do
		case $(cat /proc/$TPID/syscall 2>/dev/null) in "0 0x0 "*) break ;; esac
		sleep 0.05
	done
	case $(cat /proc/$TPID/syscall 2>/dev/null) in "0 0x0 "*) ;; *) kill $TJOB; die "pyi: the target never blocked in its read" ;; esac
	"$R" -v --via inject -p "$TPID" -s 0 -o "$TMP/pyi.hsnap" >/dev/null 2>"$TMP/pyi.rerr" &
	RPID=$!
	waitfor "$TMP/pyi.rerr" "waiting for an allocator call" || { cat "$TMP/pyi.rerr"; kill $TJOB $RPID; die "pyi: the trampoline never in place"; }
	echo x >"$TMP/pyi.fifo"
	wait $TJOB; rc=$?
	eq "pyi: the target's own exit status" 0 $rc
	wait $RPID || { cat "$TMP/pyi.rerr"; die "pyi: the recorder failed"; }
	contains "$TMP/pyi.rerr" "attached to $TPID"
	# Its stderr: sys._debugmallocstats's, with pymalloc's section, called before the main
	# thread let the GIL go (the loader's pending call would have run only then).
	contains "$TMP/pyi.terr" "Small block threshold = 512"
	read -r _ s l c th ch <<<"$(grep '^held' "$TMP/pyi.out")"
	[ -n "$ch" ] || { cat "$TMP/pyi.out"; die "pyi: the target never said held"; }
	py_need_codes pyi
	"$A" pprof -o "$p" "$TMP/pyi.hsnap" 2>/dev/null || die "pyi: pprof"
	# What the interpreter allocated for the library's own calls (sys._debugmallocstats and
	# atexit looked up, its function objects) is not the program's: no stack through it.
	eq "pyi: allocations made through libheapsnap.so's frames" 0 \
		"$(go tool pprof -traces -sample_index=alloc_objects "$p" 2>/dev/null | grep -c 'libheapsnap')"
	eq "pyi: keep_small inuse_space" $((20000 * s)) "$(pv "$p" inuse_space keep_small cum)"
	eq "pyi: keep_small inuse_objects" 20000 "$(pv "$p" inuse_objects keep_small cum)"
	eq "pyi: keep_large inuse_space" $((30 * l)) "$(pv "$p" inuse_space keep_large cum)"
	eq "pyi: chain_a inuse_space" $((500 * c)) "$(pv "$p" inuse_space chain_a cum)"
	eq "pyi: chain_c inuse_space" $((500 * c)) "$(pv "$p" inuse_space chain_c cum)"
	eq "pyi: worker inuse_space" $((1000 * th)) "$(pv "$p" inuse_space worker cum)"
	# Its line's (the function also makes the list's iterator, freed).
	i=$(grep -n 'churned\[i\] = bytes(CHURN)' tests/workloads/py_idle.py | cut -d: -f1)
	eq "pyi: churn_make's line alloc_space" $((20000 * ch)) \
		"$(pl "$p" alloc_space "churn_make $PWD/tests/workloads/py_idle.py:$i")"
	eq "pyi: churn_make inuse_space (all freed)" absent "$(pv "$p" inuse_space churn_make cum)"
	# The frees of blocks made before the attach: the read's buffer and its decoding's, a few
	# (3 in runs here); churn_free's 20,000 if the wrap came after churn_make.
	unknown=$("$A" stats --json "$TMP/pyi.hsnap" | grep -o '"frees.unknown":[0-9]*' | cut -d: -f2)
	[ "${unknown:-x}" -lt 100 ] 2>/dev/null || die "pyi: $unknown frees of unknown pointers (the read's few expected)"
}
ALL="$ALL t_python_attach_idle"

# sys._debugmallocstats() launched with the domains wrapped (pymem.c): CPython's pymalloc
# section printed (CPython leaves it out unless the object domain's malloc is pymalloc's own),
# and the wrappers back after the call: after_stats's objects recorded as before_stats's
# (tests/workloads/py_mallocstats.py). Then CPython's own test of it (Debian's
# libpython3.11-testsuite), whose child interpreter the preloaded library records too.
t_python_debugmallocstats() {
	need_go
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	local p=$TMP/pdm.pb.gz a b n
	"$R" --via preload -s 0 -o "$TMP/pdm.hsnap" -- /usr/bin/python3 "$PWD/tests/workloads/py_mallocstats.py" \
		>"$TMP/pdm.out" 2>"$TMP/pdm.err" || { cat "$TMP/pdm.err"; die "recording py_mallocstats.py"; }
	contains "$TMP/pdm.err" "Small block threshold = 512"
	contains "$TMP/pdm.err" "arenas * "
	read -r _ a b <<<"$(grep '^held' "$TMP/pdm.out")"
	[ -n "$b" ] || { cat "$TMP/pdm.out"; die "py_mallocstats.py never said held"; }
	py_need_codes pdm
	"$A" pprof -o "$p" "$TMP/pdm.hsnap" 2>/dev/null || die "pprof of py_mallocstats.py"
	eq "before_stats inuse_space" $((1000 * a)) "$(pv "$p" inuse_space before_stats cum)"
	eq "after_stats inuse_space" $((1000 * b)) "$(pv "$p" inuse_space after_stats cum)"
	[ -f /usr/lib/python3.11/test/test_sys.py ] ||
		skip "no CPython test suite for /usr/bin/python3 (Debian's libpython3.11-testsuite)"
	"$R" --via preload -s 0 -o "$TMP/pdm2.hsnap" -- /usr/bin/python3 -m test test_sys -m test_debugmallocstats \
		>"$TMP/pdm2.out" 2>"$TMP/pdm2.err" || { cat "$TMP/pdm2.out" "$TMP/pdm2.err"; die "test_sys.test_debugmallocstats under the recorder"; }
	contains "$TMP/pdm2.out" "Tests result: SUCCESS"
	# Its child (-c 'import sys; sys._debugmallocstats()') was recorded, its domains wrapped.
	"$A" summary "$TMP/pdm2.hsnap" 2>/dev/null | grep -q '^process .*-c import sys; sys._debugmallocstats()' ||
		die "test_debugmallocstats's child interpreter was not recorded"
	n=$("$A" stats "$TMP/pdm2.hsnap" 2>/dev/null | awk '$1 == "python.pymem_wrapped" { print $2 }')
	[ "${n:-0}" -ge 3 ] || die "test_sys's interpreters wrapped: ${n:-0}, 3 expected (the test, its two children)"
}
ALL="$ALL t_python_debugmallocstats"

# ---- the default moment of a Python program (issue 51) ----
# tests/workloads/py_globals.py keeps 37 MB in module globals and ends normally: finalization
# frees them, so the end of its recording held 399,540 bytes of shutdown leftovers and the 37 MB
# only --peak showed. The library marks a snapshot as the interpreter begins to finalize
# (pymem.c: an atexit callback), and the reports go there by default. The script's own
# figures (sys.getsizeof of what each function keeps) against the bytes under each function,
# recorded with the default options.
py_globals_check() { # NAME FIGURES: top's text and JSON, pprof by default; --at end
	local n=$1 f=$2 fn want got
	"$A" top -n 0 "$TMP/$n.hsnap" >"$TMP/$n.top" 2>/dev/null || die "$n: top"
	contains "$TMP/$n.top" "Snapshot: before Python finalization"
	"$A" top --json -n 0 "$TMP/$n.hsnap" >"$TMP/$n.top.json" 2>/dev/null || die "$n: top --json"
	"$A" pprof -o "$TMP/$n.pb.gz" "$TMP/$n.hsnap" 2>/dev/null || die "$n: pprof"
	for fn in keep_buffers keep_small; do
		want=$(awk -v fn=$fn '$1 == fn { s += $2 } END { print s }' "$f")
		got=$(awk -v fn="$fn (py_globals.py)" '/^Python functions/ { py = 1 }
			py { name = $5; for (i = 6; i <= NF; i++) name = name " " $i; if (name == fn) s += $3 }
			END { print s + 0 }' "$TMP/$n.top")
		eq "$n: $fn cum (top)" "$want" "$got"
		eq "$n: $fn cum (top --json)" "$want" "$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["snapshot"].startswith("before Python finalization"), d["snapshot"]
print(next((round(f["cum"]) for f in d["python_functions"] if f["name"] == sys.argv[2]), "absent"))' \
			"$TMP/$n.top.json" "$fn (py_globals.py)")"
		eq "$n: $fn inuse_space (go tool pprof)" "$want" "$(pv "$TMP/$n.pb.gz" inuse_space "$fn" cum)"
	done
	# The end, asked for: what finalization left, the globals gone.
	"$A" top --at end -n 0 "$TMP/$n.hsnap" >"$TMP/$n.end" 2>/dev/null || die "$n: top --at end"
	contains "$TMP/$n.end" "Snapshot: end of recording"
	grep -q "keep_buffers (py_globals.py)" "$TMP/$n.end" && die "$n: keep_buffers still held at the end"
	got=$(awk '/^Showing/ { print $(NF - 1) }' "$TMP/$n.end")
	[ "${got:-x}" -lt 2000000 ] 2>/dev/null || die "$n: $got bytes live at the end (the globals freed: under 2 MB)"
	"$A" pprof --at end -o "$TMP/$n.end.pb.gz" "$TMP/$n.hsnap" 2>/dev/null || die "$n: pprof --at end"
	eq "$n: keep_buffers inuse_space at the end" absent "$(pv "$TMP/$n.end.pb.gz" inuse_space keep_buffers cum)"
}

t_python_finalize_default() {
	need_go
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	local n=pyg
	"$R" -o "$TMP/$n.hsnap" -- /usr/bin/python3 "$PWD/tests/workloads/py_globals.py" "$TMP/$n.fig" \
		>"$TMP/$n.out" 2>"$TMP/$n.err" || { cat "$TMP/$n.err"; die "recording py_globals.py"; }
	contains "$TMP/$n.out" held
	[ "$(awk '$1 == "keep_buffers" { print $2 }' "$TMP/$n.fig")" -gt 37000000 ] || die "the script's figures"
	"$A" info "$TMP/$n.hsnap" >"$TMP/$n.info" 2>/dev/null || die "info"
	grep -q '^  1  python-finalize .* python-finalize live' "$TMP/$n.info" || { cat "$TMP/$n.info"; die "no python-finalize snapshot"; }
	contains "$TMP/$n.info" "Format: 5.3"
	py_globals_check $n "$TMP/$n.fig"
	# --snapshot python-finalize is the same moment; summary and html say where they are.
	"$A" top --snapshot python-finalize -n 0 "$TMP/$n.hsnap" 2>/dev/null | grep -F "keep_buffers (py_globals.py)" >"$TMP/$n.snap"
	eq "--snapshot python-finalize: keep_buffers" "$(grep -F "keep_buffers (py_globals.py)" "$TMP/$n.top")" "$(cat "$TMP/$n.snap")"
	"$A" summary "$TMP/$n.hsnap" >"$TMP/$n.sum" 2>/dev/null || die "summary"
	contains "$TMP/$n.sum" "Snapshot: before Python finalization"
	contains "$TMP/$n.sum" "blocks before Python finalization"
	"$A" html -o "$TMP/$n.html" "$TMP/$n.hsnap" 2>/dev/null || die "html"
	contains "$TMP/$n.html" "<h2>Top functions: in use before Python finalization</h2>"
	contains "$TMP/$n.html" '"snapshot":"before Python finalization'
	"$A" html --at end -o "$TMP/$n.end.html" "$TMP/$n.hsnap" 2>/dev/null || die "html --at end"
	contains "$TMP/$n.end.html" "<h2>Top functions: in use at the end</h2>"
	"$A" timeline --at end "$TMP/$n.hsnap" >/dev/null 2>&1 && die "timeline took --at end"
	"$A" top --at end --peak "$TMP/$n.hsnap" >/dev/null 2>&1 && die "--at end with --peak was taken"
	return 0
}

# Two interpreters under one shell, each finalizing: each process at its own snapshot, the
# shell (no Python) at the end; the bytes under the functions are both runs'.
t_python_finalize_processes() {
	need_go
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (Debian's python3)"
	local n=pyg2 s=$PWD/tests/workloads/py_globals.py
	"$R" -o "$TMP/$n.hsnap" -- /bin/sh -c "/usr/bin/python3 $s $TMP/$n.f1 && /usr/bin/python3 $s $TMP/$n.f2" \
		>"$TMP/$n.out" 2>"$TMP/$n.err" || { cat "$TMP/$n.err"; die "recording two py_globals.py"; }
	cat "$TMP/$n.f1" "$TMP/$n.f2" >"$TMP/$n.fig"
	py_globals_check $n "$TMP/$n.fig"
	contains "$TMP/$n.top" "before Python finalization (2 processes, each at its own"
}
ALL="$ALL t_python_finalize_default t_python_finalize_processes"
