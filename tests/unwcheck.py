#!/usr/bin/env python3
# unwcheck.py UNWDUMP FILE: every row readelf -wF (binutils) reads from FILE's .eh_frame and
# .debug_frame, compared with the rule heapsnap's table gives at that address and just before the next.
# Independent of heapsnap: readelf interprets the CFA programs itself.
import re
import subprocess
import sys

unwdump, path = sys.argv[1], sys.argv[2]
# readelf exits 1 over a missing separate debug file, after reading .eh_frame in full.
out = subprocess.run(["readelf", "-wF", path], capture_output=True, text=True).stdout
want = {}  # address -> (cfa, rbp)
head = re.compile(r"^([0-9a-f]+) \S+ \S+ (CIE|FDE)(?: cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+))?")
cie_first = {}  # a CIE's offset -> its initial rule
cols = cur = None
ranges = []


def rule(row):
    cfa, ra, rbp = row["CFA"], row.get("ra", "u"), row.get("rbp", "u")
    if ra == "u":
        return ("end", None)
    if ra != "c-8" or not re.fullmatch(r"r[sb]p\+\d+", cfa):
        return ("expr", None)
    return (cfa, "same" if rbp == "u" else rbp if re.fullmatch(r"c-\d+", rbp) else "lost")


def close():
    # An FDE whose program only has nops: readelf prints no row, its CIE's rule holds.
    if cur and cur[0] == "FDE" and not cur[3] and cur[4] in cie_first:
        want[cur[1]] = cie_first[cur[4]]


sec = 0  # each section's CIE offsets are its own
for line in out.splitlines():
    if line.startswith("Contents of the"):
        sec += 1
        continue
    line = re.sub(r"(r\d+) \(\w+\)", r"\1", line)
    m = head.match(line)
    if m:
        close()
        cols = None
        if m.group(2) == "CIE":
            cur = ("CIE", (sec, int(m.group(1), 16)), 0, [], None)
        else:
            lo, hi = int(m.group(4), 16), int(m.group(5), 16)
            cur = ("FDE", lo, hi, [], (sec, int(m.group(3), 16)))
            ranges.append((lo, hi))
        continue
    if line.strip().startswith("LOC"):
        cols = line.split()
        continue
    f = line.split()
    if cur and cols and f and re.fullmatch(r"[0-9a-f]{8,16}", f[0]) and len(f) == len(cols):
        r = rule(dict(zip(cols, f)))
        cur[3].append(r)
        if cur[0] == "CIE":
            cie_first.setdefault(cur[1], r)
        else:
            want[int(f[0], 16)] = r
close()
if not want:
    sys.exit(f"{path}: readelf gave no rows")
# The last byte of each FDE too: the rule there is the one of its last row.
addrs = sorted(want)
queries = list(addrs)
for lo, hi in ranges:
    queries.append(hi - 1)
res = subprocess.run([unwdump, path], input="".join("%x\n" % a for a in queries), capture_output=True,
                     text=True, check=True).stdout.split("\n")
got = {}
for line in res:
    f = line.split()
    if len(f) == 3:
        got[int(f[0], 16)] = (f[1], f[2])
bad = sum(1 for line in res if line.startswith("MISMATCH"))
for line in [x for x in res if x.startswith("MISMATCH")][:10]:
    print("%s: the table and the lookup through .eh_frame_hdr differ: %s" % (path, line))
import bisect
for q in queries:
    i = bisect.bisect_right(addrs, q) - 1
    w = want[addrs[i]]
    g = got.get(q)
    ok = g is not None and g[0] == w[0] and (w[1] is None or g[1] == w[1])
    if not ok:
        bad += 1
        if bad <= 10:
            print("%s: %x: readelf %s, heapsnap %s" % (path, q, w, g))
print("%s: %d addresses compared, %d differ" % (path, len(queries), bad))
sys.exit(1 if bad else 0)
