#!/usr/bin/env python3
"""Checks that splitting tests/run.sh into files by area moved code without changing it.

    tests/split_check.py [COMMIT|FILE]   (default ed1ca14, the last single-file tests/run.sh)

Given a branch (or a file) whose single-file tests/run.sh gained tests, it lists them as
changed or LOST: what is left to move into an area file.

Bash reads both sides (`declare -f`: the code, comments and layout aside). Every function of
the old tests/run.sh is looked for in the new files: same name and body, or renamed with the
same body, or a one-line per-way wrapper (`t_preload_X() { VIA=preload t_bpf_X; }`) now a
t_X@preload registration of the same body. The rest is listed as changed, new or gone, with
a diff. Then the tests registered before and after, by old name (t_X@WAY is t_WAY_X), and
comment lines of the old file found in no new file. Exit status 1 if any test was lost.
"""
import difflib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD = sys.argv[1] if len(sys.argv) > 1 else "ed1ca14"

# Prints every function (declare -f) and then the registered tests, after sourcing SCRIPT
# with the arguments given; run from the checkout so that its `cd` lands there.
DUMP = r'''
. "$0" "$@" >/dev/null
declare -f
echo "#ALL $ALL"
'''


def dump(script, *args):
    out = subprocess.run(["bash", "-c", DUMP, script, *args], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        sys.exit("sourcing %s failed: %s" % (script, out.stderr))
    funcs, name, body, tests = {}, None, [], []
    for line in out.stdout.split("\n"):
        if line.startswith("#ALL "):
            tests = line[5:].split()
            continue
        m = re.match(r"^(\S+) \(\) $", line)
        if m and name is None:
            name, body = m.group(1), []
            continue
        if name is not None:
            body.append(line)
            if line == "}":
                funcs[name] = "\n".join(body)
                name = None
    return funcs, tests


def old_name(t):
    if "@" not in t:
        return t
    fn, way = t.split("@", 1)
    return "t_%s_%s" % (way, fn[2:] if fn.startswith("t_") else fn)


def main():
    if os.path.isfile(OLD):
        src = open(OLD).read()
    else:
        src = subprocess.run(["git", "show", "%s:tests/run.sh" % OLD], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
    # The old file without its last part (bpf_check and the run of every test): functions and ALL.
    tail = src.index("\nbpf_check\nALL=")
    head = src[:tail] + src[tail + len("\nbpf_check"):src.index("\nfor t in $ALL; do", tail)]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "old_run.sh")
        with open(path, "w") as f:
            f.write(head + "\n")
        old_funcs, old_tests = dump(path)
    new_funcs, new_tests = dump(os.path.join(ROOT, "tests/run.sh"), "--list")

    by_body = {}
    for n, b in new_funcs.items():
        by_body.setdefault(b, []).append(n)
    same, renamed, wrappers, changed, gone = [], [], [], [], []
    matched_new = set()
    for n, b in old_funcs.items():
        if new_funcs.get(n) == b:
            same.append(n)
            matched_new.add(n)
            continue
        m = re.fullmatch(r"\{\s*VIA=(\w+) (t_\w+)\s*\}", b.strip())
        if m:
            wrappers.append((n, m.group(1), m.group(2)))
            continue
        if b in by_body:
            renamed.append((n, by_body[b]))
            matched_new.update(by_body[b])
            continue
        (changed if n in new_funcs else gone).append(n)
        matched_new.add(n)
    new_only = sorted(set(new_funcs) - set(old_funcs) - matched_new)

    print("functions of the old tests/run.sh (%s): %d" % (OLD, len(old_funcs)))
    print("  moved unchanged: %d" % len(same))
    for o, ns in renamed:
        print("  renamed, body unchanged: %s -> %s" % (o, ", ".join(ns)))
    for o, via, target in wrappers:
        new = None
        for r_o, r_ns in renamed:
            if r_o == target:
                new = r_ns[0]
        reg = "%s@%s" % (new or target, via)
        print("  one-line wrapper %s (VIA=%s %s) -> registration %s%s" % (
            o, via, target, reg, "" if reg in new_tests else "  NOT REGISTERED"))
    for n in changed + gone:
        print("  CHANGED: %s%s" % (n, " (gone from the new files)" if n in gone else ""))
    for n in new_only:
        print("  new: %s" % n)
    # A changed body that is one of the new functions under another name (a generalized test).
    for n in gone:
        best = max(new_only, key=lambda x: difflib.SequenceMatcher(None, old_funcs[n], new_funcs[x]).ratio(),
                   default=None)
        if best is None or difflib.SequenceMatcher(None, old_funcs[n], new_funcs[best]).ratio() < 0.6:
            print("\n%s: in no new file (still to move into an area file?)" % n)
        else:
            print("\n--- %s (old)\n+++ %s (new)" % (n, best))
            sys.stdout.writelines(difflib.unified_diff(old_funcs[n].splitlines(True), new_funcs[best].splitlines(True), n=1))
            print()
    for n in changed:
        print("\n--- %s (old)\n+++ %s (new)" % (n, n))
        sys.stdout.writelines(difflib.unified_diff(old_funcs[n].splitlines(True), new_funcs[n].splitlines(True), n=1))
        print()

    # An old test is still run under its old name (t_X@WAY for t_WAY_X), or, if it ran every
    # way in itself, as one test per way of its function (t_X@WAY for t_X).
    old_set = set(old_tests)
    print("\ntests registered: %d before, %d now" % (len(old_tests), len(new_tests)))
    lost = []
    for t in old_tests:
        per_way = [n for n in new_tests if n.split("@")[0] == t and "@" in n]
        if per_way:
            print("  one test per way now: %s -> %s" % (t, ", ".join(per_way)))
        elif t not in {old_name(n) for n in new_tests}:
            lost.append(t)
            print("  LOST: %s" % t)
    for t in new_tests:
        if old_name(t) not in old_set and t.split("@")[0] not in old_set:
            print("  added: %s (%s)" % (t, old_name(t)))
    dup = sorted({t for t in new_tests if new_tests.count(t) > 1})
    for t in dup:
        print("  REGISTERED TWICE: %s" % t)

    new_text = ""
    for f in sorted(os.listdir(os.path.join(ROOT, "tests"))):
        if f.endswith(".sh"):
            new_text += open(os.path.join(ROOT, "tests", f)).read()
    new_comments = {l.strip() for l in new_text.split("\n")}
    dropped = [l for l in src.split("\n") if l.strip().startswith("#") and l.strip() not in new_comments]
    print("\ncomment lines of the old file in no new file: %d" % len(dropped))
    for l in dropped:
        print("  " + l.strip())
    return 1 if lost or dup else 0


if __name__ == "__main__":
    sys.exit(main())
