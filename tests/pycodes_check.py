# SPDX-License-Identifier: MIT
"""Checks a recording of tests/workloads/py_codes.py (as tests/pydump prints it):
  - for each i < 400, an allocation of 1001 + i bytes has as innermost Python frame a code of
    file gen<i>.py: a code object made at a dropped one's address got its own id and name (the
    list `keep` also grows in those files, to sizes that may be another's 1001 + j);
  - the fork child (the pid other than the command's) has its own PY_CODE records, numbered
    from 1, and 30 allocations of 223 bytes whose innermost Python frame is in_child.
Usage: pycodes_check.py DUMP. Prints what differs; exits 1 if anything does."""
import sys

codes, stacks, allocs = {}, {}, []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split(" ")
    if f[0] == "code":
        codes[(f[1], int(f[2]))] = (f[6], " ".join(f[7:]))
    elif f[0] == "stack":
        stacks[int(f[1])] = f[2:]
    elif f[0] == "alloc":
        allocs.append((f[1], int(f[3]), int(f[4])))


def inner(pid, st):
    for fr in stacks.get(st, []):
        if fr.startswith("py:"):
            return codes.get((pid, int(fr.split(":")[1])), ("?", "?"))
    return None


bad, named, child = [], set(), {}
for pid, size, st in allocs:
    c = inner(pid, st)
    if c and c[1] == "gen%d.py" % (size - 1001):
        named.add(size - 1001)
    if size == 223 and c and c[0] == "in_child":
        child[pid] = child.get(pid, 0) + 1
for i in range(400):
    if i not in named:
        bad.append("no allocation of %d bytes in gen%d.py" % (1001 + i, i))
if len(child) != 1 or list(child.values()) != [30]:
    bad.append("in_child's 223-byte allocations by pid: %s (want one pid, 30)" % child)
else:
    cpid = list(child)[0]
    ids = sorted(i for p, i in codes if p == cpid)
    if not ids or ids[0] != 1:
        bad.append("the child's code ids do not start at 1: %s" % ids[:5])
for b in bad[:10]:
    print(b)
print("ok" if not bad else "%d problems" % len(bad))
sys.exit(1 if bad else 0)
