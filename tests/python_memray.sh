# memray as a second oracle of heapsnap's Python figures (issue 55): the workloads with known
# figures (tests/workloads/py_exact.py, py_frames.py) recorded by heapsnap (in-process, every
# event) and by `memray run --native --trace-python-allocators` (memray pinned from PyPI in the
# venv of scripts/py-venv.sh, whose python is Debian's python3.11 itself), and their bytes per
# Python function of the blocks live at the end (both scripts end in os._exit) compared by
# tests/memraycheck.py: equal where both see the same allocations (the functions whose figures
# the scripts state: those figures, under both); where they differ, by the line arrays that
# CPython 3.11 makes for memray's profile function and memray counts in the caller, predicted
# to the byte from a run of the script under a profile function of the checker's own; the
# module's own code (runpy's under memray) printed, not compared. Each figure is printed.

# py_memray NAME SCRIPT FUNCTION=BYTES...: the three runs of SCRIPT and the comparison.
py_memray() {
	local n=$1 s venv
	s=$(realpath "$2")
	shift 2
	[ -x /usr/bin/python3.11 ] || skip "no Debian /usr/bin/python3.11"
	venv=$(scripts/py-venv.sh 2>"$TMP/$n.venv") || skip "no memray: $(tail -1 "$TMP/$n.venv")"
	"$R" --via preload -s 0 -o "$TMP/$n.hsnap" -- /usr/bin/python3.11 "$s" >"$TMP/$n.out" 2>"$TMP/$n.err" ||
		{ cat "$TMP/$n.err"; die "$n: recording $s with heapsnap"; }
	py_need_codes "$n"
	"$A" top --json --at end -n 0 "$TMP/$n.hsnap" >"$TMP/$n.top.json" 2>"$TMP/$n.aerr" || { cat "$TMP/$n.aerr"; die "$n: top --json"; }
	"$venv/bin/python" -m memray run -q --native --trace-python-allocators -o "$TMP/$n.memray" "$s" \
		>"$TMP/$n.mout" 2>"$TMP/$n.merr" || { cat "$TMP/$n.merr"; die "$n: memray run $s"; }
	"$venv/bin/python" tests/memraycheck.py --first-calls "$s" "$TMP/$n.first.json" >"$TMP/$n.fout" 2>&1 ||
		{ cat "$TMP/$n.fout"; die "$n: the first calls of $s"; }
	echo "$s: bytes live at the end, heapsnap every event (--via preload -s 0) and memray $("$venv/bin/python" -c 'import memray; print(memray.__version__)') --native --trace-python-allocators"
	"$venv/bin/python" tests/memraycheck.py "$TMP/$n.memray" "$TMP/$n.top.json" "$TMP/$n.first.json" "$s" "$@" ||
		die "$n: heapsnap's figures are not memray's"
}

# py_exact.py's stated figures (its docstring): keep_large 8 x (56 + 100001), keep_small 1000 x
# 133, chain_c (and chain_b, chain_a above it) 60 x 333, worker 20 x (56 + 5001) + 200 x 83,
# key_fn 64 x (56 + 701); its containers are made at their final size before.
t_python_memray_exact() {
	py_memray pmx "$PY_EXACT" keep_large=800456 keep_small=133000 chain_a=19980 chain_b=19980 chain_c=19980 \
		worker=117740 key_fn=48448
}

# py_frames.py's: small_objs 2000 x (56 + 101), big_objs 20 x (56 + 100001), leaf 50 x (56 + 201),
# key_fn 40 x (56 + 301); in_thread's 300 x (56 + 151) holds the shared list's last growth too,
# and is compared without a stated figure.
t_python_memray_frames() {
	py_memray pmf "$PY_FRAMES" small_objs=314000 big_objs=2001140 leaf=12850 key_fn=14280
}

ALL="$ALL t_python_memray_exact t_python_memray_frames"
