# SPDX-License-Identifier: MIT
"""memray as a second oracle of heapsnap's bytes per Python function (tests/python_memray.sh,
t_python_memray_*), run by the python of scripts/py-venv.sh's venv (Debian's python3.11, with
memray importable).

The figure compared: the bytes of the blocks live at the end (the workloads end in os._exit:
what each function kept), per Python function of the workload, own (its frame the innermost
Python frame of the block's stack) and cum (its frame anywhere in that stack, once a block).
heapsnap's from `heapsnap-analyze top --json --at end` of an every-event recording; memray's
from memray's own reader (memray.FileReader(...).get_leaked_allocation_records(): the blocks
allocated and not freed when the file ends, each with its Python stack) of a `memray run
--native --trace-python-allocators` file: `memray stats --json` names only its top 5 locations.
Total allocated is not compared: with a profile function set, CPython 3.11 makes a frame object
for every call (freed as it returns), which memray's runs allocate and heapsnap's do not.

Where both see the same allocations the figures are equal. They differ in one known way, which
this checker predicts to the byte rather than forgives: memray follows Python calls with a
profile function (PyEval_SetProfile), and with one set CPython 3.11 gives each code object, at
its first call, a line array (_PyCode_CreateLineArray: 2 bytes per code unit, len(co_code)
bytes, kept as long as the code object), made before the hook is told of the call, so that
memray's stack does not yet hold the callee and counts it in the caller. A run without a
profiler (heapsnap's) makes none. So memray's own of F is heapsnap's plus the co_code lengths of
the functions first called from F, and its cum the same over every call below F: this module,
run with --first-calls, runs the script under a profile function of its own, as `memray run`
does (runpy, after the profiler is set), and writes down those first calls.

  memraycheck.py --first-calls SCRIPT OUT     the script run, its first calls' table to OUT (JSON)
  memraycheck.py MEMRAY_FILE TOP_JSON FIRST_CALLS SCRIPT [FUNCTION=BYTES ...]
      compares, printing every function of SCRIPT; FUNCTION=BYTES: a function whose cum the
      script states (the same allocations under both): both must read BYTES, its own the same
      under both, and no first call below it predicted. Exits 1 if any figure is not what is expected."""
import ast
import json
import os
import sys

# A new thread's start and join run threading's Condition.wait and its helpers, or not, as
# the thread wins or loses the race to set its started event: which of their code objects get
# their first call (and line array) under whose frame is not the same from run to run.
RACY = 2048


def first_calls(script, out):
    """Runs SCRIPT as `memray run` does (runpy, as __main__, after a profile function is set in
    this thread and for new threads) and, at its os._exit, writes for each code object called
    its co_code length, its file and the Python frames of the call (the caller first)."""
    import runpy
    import threading

    first = {}
    here = os.path.abspath(__file__)

    def prof(frame, event, arg):
        # Not this file's own code (at_exit, called from the script's os._exit).
        if event != "call" or id(frame.f_code) in first or frame.f_code.co_filename == here:
            return
        callers = []
        b = frame.f_back
        while b is not None:
            callers.append([b.f_code.co_name, b.f_code.co_filename])
            b = b.f_back
        first[id(frame.f_code)] = (frame.f_code, callers)

    real_exit = os._exit

    def at_exit(code):
        sys.setprofile(None)
        threading.setprofile(None)
        rows = [{"name": co.co_name, "file": co.co_filename, "bytes": len(co.co_code), "callers": callers}
                for co, callers in first.values()]
        with open(out, "w") as f:
            json.dump(rows, f)
        sys.stdout.flush()
        real_exit(code)

    os._exit = at_exit
    sys.argv = [script]
    threading.setprofile(prof)
    sys.setprofile(prof)
    runpy.run_path(script, run_name="__main__")


def memray_figures(path, script):
    import memray

    own, cum = {}, {}
    for rec in memray.FileReader(path).get_leaked_allocation_records(merge_threads=False):
        st = rec.stack_trace()  # Python frames, innermost first: (function, file, line)
        if not st:
            continue
        if st[0][1] == script:
            own[st[0][0]] = own.get(st[0][0], 0) + rec.size
        for fn in {f[0] for f in st if f[1] == script}:
            cum[fn] = cum.get(fn, 0) + rec.size
    return own, cum


def main():
    if sys.argv[1] == "--first-calls":
        first_calls(os.path.realpath(sys.argv[2]), sys.argv[3])
        return 0
    mfile, top_json, fc_json, script = sys.argv[1:5]
    script = os.path.realpath(script)
    stated = dict((a.split("=")[0], int(a.split("=")[1])) for a in sys.argv[5:])
    base = os.path.basename(script)
    funcs = [n.name for n in ast.parse(open(script).read()).body if isinstance(n, ast.FunctionDef)]
    hs = {}
    for f in json.load(open(top_json))["python_functions"]:
        if f["name"].endswith(" (%s)" % base):
            hs[f["name"][:-len(base) - 3]] = (round(f["own"]), round(f["cum"]))
    m_own, m_cum = memray_figures(mfile, script)
    # The line arrays predicted under each function of the script: own (first called from it)
    # and cum (first called anywhere below it), and whether threading's waits are below it.
    p_own, p_cum, racy, named = {}, {}, set(), {}
    for r in json.load(open(fc_json)):
        here = [c[0] for c in r["callers"] if c[1] == script]
        if r["callers"] and r["callers"][0][1] == script:
            f = r["callers"][0][0]
            p_own[f] = p_own.get(f, 0) + r["bytes"]
            named.setdefault(f, []).append("%s %d" % (r["name"], r["bytes"]))
        for f in set(here):
            p_cum[f] = p_cum.get(f, 0) + r["bytes"]
            if os.path.basename(r["file"]) == "threading.py":
                racy.add(f)
    bad = []
    print("%-14s %10s %10s %10s %10s  %s" % ("function", "heapsnap", "memray", "heapsnap", "memray", ""))
    print("%-14s %10s %10s %10s %10s" % ("", "own", "own", "cum", "cum"))
    for fn in funcs:
        h_own, h_cum = hs.get(fn, (0, 0))
        mo, mc = m_own.get(fn, 0), m_cum.get(fn, 0)
        if not (h_cum or mc or fn in stated):
            continue  # never run (the script's tracemalloc and FIFO helpers)
        po, pc = p_own.get(fn, 0), p_cum.get(fn, 0)
        nbad = len(bad)
        if fn in stated:
            if po or pc:
                bad.append("%s: its figure is stated, yet functions are first called below it: %s" % (fn, named.get(fn)))
            for what, v in (("heapsnap cum", h_cum), ("memray cum", mc)):
                if v != stated[fn]:
                    bad.append("%s: %s %d, the script's figure %d" % (fn, what, v, stated[fn]))
            if mo != h_own:
                bad.append("%s own: memray %d, heapsnap %d" % (fn, mo, h_own))
            why = "equal: the same allocations, the script's figure" if len(bad) == nbad else "DIFFERS"
        else:
            ok_own = mo == h_own + po
            ok_cum = (abs(mc - (h_cum + pc)) <= RACY) if fn in racy else mc == h_cum + pc
            if not ok_own:
                bad.append("%s own: memray %d, heapsnap %d + %d of line arrays predicted (%s)" % (fn, mo, h_own, po, named.get(fn)))
            if not ok_cum:
                bad.append("%s cum: memray %d, heapsnap %d + %d of line arrays predicted%s" %
                           (fn, mc, h_cum, pc, " (+-%d: threading's waits below)" % RACY if fn in racy else ""))
            if mo == h_own and mc == h_cum:
                why = "equal: the same allocations"
            else:
                why = "memray +%d own, +%d cum: the line arrays of the code first called from it (%s)%s" % (
                    mo - h_own, mc - h_cum, ", ".join(named.get(fn, [])) or "none",
                    "; cum +-%d as threading's waits run or not" % RACY if fn in racy else "")
                if not (ok_own and ok_cum):
                    why = "DIFFERS beyond the line arrays: " + why
        print("%-14s %10d %10d %10d %10d  %s" % (fn, h_own, mo, h_cum, mc, why))
    # The module's own code runs under runpy in memray's run (its code compiled by runpy, after
    # memray's own imports, threading's among them), natively in heapsnap's: not compared.
    h_mod, m_mod = hs.get("<module>", (0, 0)), (m_own.get("<module>", 0), m_cum.get("<module>", 0))
    print("%-14s %10d %10d %10d %10d  %s" % ("<module>", h_mod[0], m_mod[0], h_mod[1], m_mod[1],
                                            "not compared: memray runs the script through runpy, after its own imports"))
    for b in bad:
        print("MISMATCH:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
