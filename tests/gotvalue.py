#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a process's GOT entry for SYMBOL in BINARY points, read from /proc/PID/mem: "libc"
when at glibc's own definition, "libheapsnap" when into a mapping of that library, else
"elsewhere 0x...". Independent of heapsnap's code: the
entry's place comes from readelf, the definition's from nm.

gotvalue.py PID --all: every JUMP_SLOT and GLOB_DAT entry of every module mapped from a file;
prints "clean" when none points into libheapsnap or into memory mapped from no file (the
injection's stub) that is executable, else one line for each that does."""
import os, struct, subprocess, sys

pid = int(sys.argv[1])
all_entries = sys.argv[2] == "--all"
binary, sym = (None, None) if all_entries else (os.path.realpath(sys.argv[2]), sys.argv[3])
maps = [l.split() for l in open(f"/proc/{pid}/maps").read().splitlines()]


def base(path):
    for f in maps:
        if len(f) >= 6 and f[5] == path and int(f[2], 16) == 0:
            return int(f[0].split("-")[0], 16)
    sys.exit(f"{path} is not mapped in {pid}")


def bias(path, start):
    """A shared object's (or PIE's) addresses are relative to where it is mapped; an
    executable's (ET_EXEC, non-PIE) are absolute."""
    with open(path, "rb") as f:
        f.seek(16)
        return 0 if struct.unpack("<H", f.read(2))[0] == 2 else start


def mapped_from(addr, want_exec=False):
    for f in maps:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if lo <= addr < hi:
            if want_exec and "x" not in f[1]:
                return None
            return f[5] if len(f) >= 6 else ""
    return None


if all_entries:
    bad = []
    with open(f"/proc/{pid}/mem", "rb") as m:
        for f in maps:
            if len(f) < 6 or int(f[2], 16) or not f[5].startswith("/") or "libheapsnap" in f[5] or not os.path.isfile(f[5]):
                continue
            b = bias(f[5], int(f[0].split("-")[0], 16))
            out = subprocess.run(["readelf", "-rW", f[5]], capture_output=True, text=True).stdout
            for line in out.splitlines():
                g = line.split()
                if len(g) >= 5 and g[2] in ("R_X86_64_JUMP_SLOT", "R_X86_64_GLOB_DAT"):
                    m.seek(b + int(g[0], 16))
                    v = struct.unpack("<Q", m.read(8))[0]
                    to = mapped_from(v, True)
                    if to is not None and ("libheapsnap" in to or to == "" or "memfd:" in to):
                        bad.append(f"{f[5]} {g[4]} -> {v:#x} ({to or 'anonymous'})")
    print("\n".join(bad) if bad else "clean")
    sys.exit(0)

slot = None
for line in subprocess.run(["readelf", "-rW", binary], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if len(f) >= 5 and f[2] in ("R_X86_64_JUMP_SLOT", "R_X86_64_GLOB_DAT") and f[4].split("@")[0] == sym:
        slot = int(f[0], 16)
if slot is None:
    sys.exit(f"{binary} imports no {sym}")
libc = next(f[5] for f in maps if len(f) >= 6 and os.path.basename(f[5]).startswith("libc.so"))
value = None
for line in subprocess.run(["nm", "-D", libc], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if len(f) == 3 and f[1] in "TtWi" and f[2].split("@")[0] == sym:
        value = int(f[0], 16)
with open(f"/proc/{pid}/mem", "rb") as m:
    m.seek(bias(binary, base(binary)) + slot)
    got = struct.unpack("<Q", m.read(8))[0]


if got == base(libc) + value:
    print("libc")
elif "libheapsnap" in (mapped_from(got) or ""):
    print("libheapsnap")
else:
    print(f"elsewhere {got:#x}")
