# SPDX-License-Identifier: MIT
"""Checks a recording of tests/workloads/py_frames.py (as tests/pydump prints it) against
tracemalloc's reading of the same script (its "tm FUNCTION BYTES COUNT" lines), for
tests/run.sh's t_python_* tests:

  - a PY_CODE record for each function of the script, with its file and first line;
  - the bytes and blocks live at the end whose innermost Python frame is each function that
    keeps objects are tracemalloc's, exactly (objects under 512 bytes are pymalloc's: only the wrapped domains
    see them);
  - leaf's stacks hold leaf, mid, nested, work in that order, Python frames only between
    them (one eval call each, 3.11+: the calls are inlined in one);
  - key_fn's stacks have a native frame between key_fn and with_callback (sorted() is C);
  - no eval-loop frame was left without its Python frames (python.eval_frames_unmatched).

Usage: pycheck.py DUMP TRACEMALLOC_OUT SCRIPT. Prints what differs; exits 1 if anything does."""
import ast
import sys


def main():
    dump, tm_out, script = sys.argv[1:4]
    src = ast.parse(open(script).read())
    # The workload's functions: not those that run only with tracemalloc, nor main and the
    # module, which allocate before tracemalloc starts.
    skip = {"functions", "tracemalloc_report", "main", "wait_line"}
    funcs = {n.name: n.lineno for n in src.body if isinstance(n, ast.FunctionDef) and n.name not in skip}
    # What each function keeps on purpose, compared with tracemalloc's; what work, nested and
    # mid hold is the interpreter's own (thread start-up; up to 3.10, the frame objects it
    # keeps for reuse), which a run under tracemalloc need not leave the same.
    holders = {"small_objs", "big_objs", "leaf", "key_fn", "in_thread", "with_callback"}
    want = {}
    for line in open(tm_out):
        f = line.split()
        if f and f[0] == "tm":
            want[f[1]] = (int(f[2]), int(f[3]))
    codes, stacks, live, counters = {}, {}, {}, {}
    for line in open(dump):
        f = line.split(" ")
        f[-1] = f[-1].rstrip("\n")
        if f[0] == "code":
            codes[(f[1], int(f[2]))] = (f[6], " ".join(f[7:]), int(f[3]))
        elif f[0] == "stack":
            stacks[int(f[1])] = f[2:]
        elif f[0] == "alloc":
            live[(f[1], f[2])] = (int(f[3]), int(f[4]))
        elif f[0] == "free":
            live.pop((f[1], f[2]), None)
        elif f[0] == "counter":
            counters[f[1]] = int(f[2])
    bad = []

    def pyname(pid, frame):
        c = codes.get((pid, int(frame.split(":")[1])))
        return c[0] if c and c[1] == script else None

    for name, first in funcs.items():
        if not any(c[0] == name and c[1] == script and c[2] == first for c in codes.values()):
            bad.append("no PY_CODE record for %s (%s:%d)" % (name, script, first))
    got = {}
    orders = {"leaf": [], "key_fn": []}
    for (pid, _), (size, st) in live.items():
        frames = stacks.get(st, [])
        py = [i for i, fr in enumerate(frames) if fr.startswith("py:")]
        if not py:
            continue
        name = pyname(pid, frames[py[0]])
        if not name:
            continue
        b, c = got.get(name, (0, 0))
        got[name] = (b + size, c + 1)
        if name in orders:
            orders[name].append([pyname(pid, fr) if fr.startswith("py:") else "native" for fr in frames[py[0]:]])
    for name in sorted(holders):
        if want.get(name) != got.get(name):
            bad.append("%s: tracemalloc %s, heapsnap %s (bytes, blocks)" % (name, want.get(name), got.get(name)))
    for names in orders["leaf"]:
        py = [n for n in names if n != "native"]
        if py[:4] != ["leaf", "mid", "nested", "work"]:
            bad.append("leaf's stack: %s" % names[:8])
            break
    for names in orders["key_fn"]:
        i = names.index("with_callback") if "with_callback" in names else -1
        if i < 2 or "native" not in names[1:i]:
            bad.append("key_fn's stack has no native frame before with_callback: %s" % names[:8])
            break
    if not orders["leaf"] or not orders["key_fn"]:
        bad.append("no stacks of leaf or key_fn")
    if counters.get("python.eval_frames_unmatched", 0):
        bad.append("python.eval_frames_unmatched = %d" % counters["python.eval_frames_unmatched"])
    for b in bad:
        print(b)
    if not bad:
        print("ok: %d functions as tracemalloc has them" % len(holders))
    return 1 if bad else 0


sys.exit(main())
