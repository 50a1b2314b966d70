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

# An interpreter the tables do not hold (pyenv's 3.7): said once on its stderr, counted, and
# its recording otherwise whole.
t_python_unsupported() {
	local p=$HOME/.pyenv/versions/3.7.16/bin/python3
	[ -x "$p" ] || skip "no pyenv CPython 3.7.16 ($p)"
	"$R" --via preload -o "$TMP/py37.hsnap" -- "$p" -c 'k = [bytearray(5000) for _ in range(10)]' \
		>/dev/null 2>"$TMP/py37.err" || { cat "$TMP/py37.err"; die "recording 3.7"; }
	contains "$TMP/py37.err" "heapsnap: Python frames not read in process"
	contains "$TMP/py37.err" "CPython 3.7 is not one of 3.8 to 3.13"
	eq "said once" 1 "$(grep -c 'Python frames not read' "$TMP/py37.err")"
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
