#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a process's GOT entry for SYMBOL in BINARY points, read from /proc/PID/mem: "libc"
when at glibc's own definition, "libheapsnap" when into a mapping of that library, else
"elsewhere 0x...". Independent of heapsnap's code: the
entry's place comes from readelf, the definition's from nm."""
import os, struct, subprocess, sys

pid, binary, sym = int(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
maps = [l.split() for l in open(f"/proc/{pid}/maps").read().splitlines()]


def base(path):
    for f in maps:
        if len(f) >= 6 and f[5] == path and int(f[2], 16) == 0:
            return int(f[0].split("-")[0], 16)
    sys.exit(f"{path} is not mapped in {pid}")


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
    m.seek(base(binary) + slot)
    got = struct.unpack("<Q", m.read(8))[0]

def mapped_from(addr):
    for f in maps:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if lo <= addr < hi:
            return f[5] if len(f) >= 6 else ""
    return ""


if got == base(libc) + value:
    print("libc")
elif "libheapsnap" in mapped_from(got):
    print("libheapsnap")
else:
    print(f"elsewhere {got:#x}")
