#!/usr/bin/env python3
"""Record files (version 4) written byte by byte, as someone who wants the analyzer to stall
or to swell would write them: keys chosen to collide in the hash tables as they were before
their seed (common/hmap.c), a process list for a quadratic match, mappings for a long walk,
records that ask for memory they do not need, and one module mapped two ways. The writer in
format/ cannot write most of these: it encodes only what a recorder saw.

Usage: hostile.py SHAPE OUT [ARGS]
  stackids N       N STACK records whose ids all had the same home in the old hmap_hash
  classes M L      M threads whose classes all had one home in the old class hash, then L frees
                   and allocations by class
  pairs L          4096 (stack, size) pairs of one key in the old fold, then L events of the last
  pids N           N processes; `diff --pid 1` of two such files
  samecomm N       N processes of one command and executable: `diff --pid 1` of two such files
                   selects all N in the second, whose replay then looks each process up in them
  longname KIND    a string one byte past its limit: a mapping's path (KIND path) or a Python
                   function's name (KIND name), which reports would show for every frame
  maps N           N samples through a 127-frame stack above 4095 small mappings and in a large
                   one below them
  unknown          a record of a type this version does not know, nearly 16 MiB long
  pycodes N        N Python codes of 256 KiB line tables of one-byte entries, each named by a frame
  symoff BINARY F1 F2 OUT2
                   a block allocated at one runtime address of BINARY, mapped so that it is
                   function F1 in OUT and F2 in OUT2
"""
import random
import re
import struct
import subprocess
import sys

MASK = 2**64 - 1


def uv(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def sv(v):
    return uv(((v << 1) ^ (v >> 63)) & MASK)


def st(s):
    if isinstance(s, str):
        s = s.encode()
    return uv(len(s)) + s


def ext(t, payload):
    return bytes([t]) + uv(len(payload)) + payload


def session(max_stack=127):
    return ext(16, st("hostile") + st("h") + st("k") + st("c") + uv(1000) + uv(0) * 3 + uv(1) + uv(max_stack) +
               uv(0) * 2 + st("v"))


def stack(sid, ips):
    p, prev = uv(sid) + uv(len(ips)), 0
    for ip in ips:
        d = (ip - prev) & MASK
        p += sv(d - 2**64 if d >= 2**63 else d)
        prev = ip
    return ext(21, p)


def mapping(pid, start, length, path="/x", offset=0, build_id=b""):
    return ext(19, uv(0) + uv(pid) + uv(start) + uv(length) + uv(offset) + uv(0) + st(path) + st(build_id))


def process(pid, comm, exe):
    return ext(17, uv(0) + uv(pid) + uv(0) + uv(1) + st(comm) + st("") + st(exe) + st(b""))


def pycode(pid, cid, table):
    return ext(30, uv(0) + uv(pid) + uv(cid) + st("q") + st("f.py") + uv(1) + uv(3 << 8 | 11) + st(table))


def thread(pid, tid):
    return b"\x01" + uv(pid) + uv(tid)


def time(d):
    return b"\x05" + sv(d)


def alloc(ss, pp):
    return bytes([0xC0 | ss << 4 | pp << 2])


def free_age(n):
    return bytes([0x80 | 0x20 | n])


def pair(size, stack_id):
    return uv(size) + uv(stack_id) + uv(0)


class Frame:
    def __init__(self):
        self.main = bytearray()
        self.cols = [bytearray() for _ in range(6)]

    def raw(self):
        return b"\x06" + uv(6) + b"".join(uv(len(c)) for c in self.cols) + bytes(self.main) + b"".join(
            bytes(c) for c in self.cols)


def write(path, frames, level=3):
    with open(path, "wb") as f:
        f.write(b"\x89HSNP\r\n\x1a" + struct.pack("<HHI", 4, 0, 0))
        for fr in frames:
            raw = fr.raw()
            assert len(raw) <= 16 << 20, len(raw)
            comp = subprocess.run(["zstd", "-q", "-c", "-%d" % level], input=raw, capture_output=True,
                                  check=True).stdout
            f.write(struct.pack("<IIII", 0x42465348, len(comp), len(raw), 0) + comp)


# The hashes as they were, unseeded: what a writer could invert.
C1, C2, C3 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0xD6E8FEB86659FD93
K = 0x632BE59BD9B4E019


def stackids(out, n):
    ic1, ic3 = pow(C1, -1, 2**64), pow(C3, -1, 2**64)
    fr = Frame()
    fr.main += session()
    for i in range(1, n + 1):
        # hmap_hash(a, 0) = F, whose low 32 bits are 0: invert its steps.
        f = i << 32
        h2 = ((f ^ f >> 32) * ic3) & MASK
        h1 = h2 ^ h2 >> 32
        fr.main += stack(((h1 ^ (K * C2) & MASK) * ic1) & MASK, [])
    fr.main += time(1) + thread(1, 1) + alloc(1, 2)
    fr.cols[3] += pair(16, 1)
    write(out, [fr])


def classes(out, m, length):
    c3 = 0x94D049BB133111EB
    ic1, ic3 = pow(C1, -1, 2**64), pow(c3, -1, 2**64)
    rnd, threads = random.Random(1), []
    seen = set()
    while len(threads) < m:
        # A home of 0: bits 32 to 48 of the last product clear.
        h2 = ((rnd.getrandbits(15) << 49 | rnd.getrandbits(32)) * ic3) & MASK
        h1 = h2 ^ h2 >> 29 ^ h2 >> 58
        x = ((h1 ^ C2) * ic1) & MASK
        if x not in seen:
            seen.add(x)
            threads.append((x >> 32, x & 0xFFFFFFFF))
    fr = Frame()
    fr.main += session() + time(1)
    for i, (pid, tid) in enumerate(threads):
        fr.main += thread(pid, tid)
        fr.main += alloc(1, 0 if i else 2)
        if not i:
            fr.cols[3] += pair(16, 0)
    fr.main += (free_age(0) + alloc(0, 0)) * length
    write(out, [fr])


def pairs(out, length):
    key = 0x123456789ABCDEF
    fr = Frame()
    fr.main += session() + time(1) + thread(1, 1)
    for sid in range(1, 4097):
        fr.main += alloc(1, 2)
        fr.cols[3] += pair(key ^ (sid * C1 & MASK), sid)
    fr.main += (free_age(0) + alloc(0, 0)) * length
    write(out, [fr])


def pids(out, n):
    fr = Frame()
    fr.main += session()
    for p in range(1, n + 1):
        fr.main += process(p, "c%d" % p, "/e%d" % p)
    fr.main += time(1) + thread(1, 1) + alloc(1, 2)
    fr.cols[3] += pair(16, 1)
    write(out, [fr])


def samecomm(out, n):
    fr = Frame()
    fr.main += session()
    for p in range(1, n + 1):
        fr.main += process(p, "c", "/bin/e")
    fr.main += time(1) + thread(1, 1) + alloc(1, 2)
    fr.cols[3] += pair(16, 1)
    write(out, [fr])


def longname(out, kind):
    fr = Frame()
    fr.main += session()
    if kind == "path":
        fr.main += mapping(1, 0x10000, 0x1000, path="/" + "p" * 8192)
    else:
        fr.main += ext(30, uv(0) + uv(1) + uv(1) + st("n" * 4097) + st("f.py") + uv(1) + uv(3 << 8 | 11) + st(b""))
    fr.main += stack(1, [0x10001]) + time(1) + thread(1, 1) + alloc(1, 2)
    fr.cols[3] += pair(16, 1)
    write(out, [fr])


def maps(out, n):
    fr = Frame()
    fr.main += session() + mapping(1, 0x10000, 0x7F0000000000)
    for i in range(4095):
        fr.main += mapping(1, 0x100000 + i * 0x1000, 0x10)
    fr.main += stack(7, [0x7E0000000001] * 127) + time(1) + thread(1, 1)
    for i in range(n):
        # The first 4096 pairs into the frame's table, the rest literal.
        fr.main += alloc(1, 2 if i < 4096 else 3)
        fr.cols[3] += pair(i + 1, 7)
    write(out, [fr])


def unknown(out):
    fr = Frame()
    fr.main += session() + time(1) + thread(1, 1) + alloc(1, 2)
    fr.cols[3] += pair(16, 1)
    fr.main += ext(100, bytes(16 * 1024 * 1024 - 200))
    write(out, [fr], level=19)


def pycodes(out, n):
    frames, fr = [], Frame()
    fr.main += session()
    for i in range(n):
        if len(fr.main) > 12 << 20:
            frames.append(fr)
            fr = Frame()
        fr.main += pycode(1, i + 1, b"\x80" * (256 * 1024))
    fr.main += stack(1, [0xFFF << 52 | (i + 1) << 24 for i in range(min(n, 127))])
    fr.main += time(1) + thread(1, 1) + alloc(1, 2)
    fr.cols[3] += pair(16, 1)
    frames.append(fr)
    write(out, frames, level=19)


def symoff(out, binary, f1, f2, out2):
    """Offsets in BINARY's text segment from its own tables: F1's and F2's, and its build-id."""
    syms = {}
    for line in subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3:
            syms[f[2]] = int(f[0], 16)
    notes = subprocess.run(["readelf", "-n", binary], capture_output=True, text=True, check=True).stdout
    bid = bytes.fromhex(re.search(r"Build ID: ([0-9a-f]+)", notes).group(1))
    text = None
    for line in subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            text = (int(f[1], 16), int(f[2], 16))  # p_offset, p_vaddr
    off1, off2 = (syms[f] - text[1] + text[0] + 4 for f in (f1, f2))
    # One runtime address, START + A, at file offset OFF1 in OUT and OFF2 in OUT2.
    start, x = 0x7F0000000000, max(0, off1 - off2)
    for path, offset in ((out, x), (out2, x + off2 - off1)):
        fr = Frame()
        fr.main += session() + process(1, "sym", binary)
        fr.main += mapping(1, start, 0x100000, binary, offset, bid)
        fr.main += stack(1, [start + off1 - x + 1])
        fr.main += time(1) + thread(1, 1) + alloc(1, 2)
        fr.cols[3] += pair(4096, 1)
        write(path, [fr])


def main():
    shape, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if shape == "symoff":
        symoff(out, *args)
    elif shape == "unknown":
        unknown(out)
    elif shape == "longname":
        longname(out, *args)
    else:
        {"stackids": stackids, "classes": classes, "pairs": pairs, "pids": pids, "samecomm": samecomm,
         "maps": maps, "pycodes": pycodes}[shape](out, *(int(a) for a in args))


if __name__ == "__main__":
    main()
