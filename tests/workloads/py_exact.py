#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A Python workload whose heap is known in advance, for heapsnap's Python frames.

What it holds when it says "held" (then it ends at once with os._exit, so that nothing it
holds is freed: the recording's end is that moment):
  keep_large   8 bytearrays of 100000 bytes: each a 56-byte object from pymalloc and a
               100001-byte buffer that pymalloc passes on to malloc (over 512 bytes)
  keep_small   1000 bytes objects of 100 bytes (133 bytes each, pymalloc)
  chain_a -> chain_b -> chain_c   60 bytes objects of 300 bytes (333 bytes each), made in
               chain_c: the same figure at each of the three
  worker       in a threading.Thread: 20 bytearrays of 5000 bytes (56 + 5001 bytes each) and
               200 bytes objects of 50 (83 bytes each)
  key_fn       called back from C (sorted(key=)), once for each of 64 items: a bytearray of
               700 bytes each (a 56-byte object and a 701-byte buffer)
Each of these statements is on a line of its own: the function's line is that line (and for
chain_a, chain_b, the line of the call).

  py_exact.py [FIFO]              with FIFO: says "ready PID" and waits for a line on it first,
                                  polling (the recorder attaches meanwhile)
  py_exact.py --tracemalloc [FIFO]  the same, traced by tracemalloc; prints what it holds by
                                  function and line, as tracemalloc counts it:
                                  "FUNCTION LINE BYTES COUNT" (every line of the function's
                                  frames in the tracebacks of the blocks live at "held")
The figures are what heapsnap must find; tracemalloc is the independent count of them."""
import os
import sys
import threading

LARGE, N_LARGE = 100000, 8
SMALL, N_SMALL = 100, 1000
CHAIN, N_CHAIN = 300, 60
T_LARGE, N_T_LARGE, T_SMALL, N_T_SMALL = 5000, 20, 50, 200
CB, N_CB = 700, 64

# Every container is made here, at its final size: the functions below only fill slots.
large = [None] * N_LARGE
small = [None] * N_SMALL
chained = [None] * N_CHAIN
threaded = [None] * (N_T_LARGE + N_T_SMALL)
called_back = [None] * N_CB
items = list(range(N_CB))


def keep_large():
    for i in range(N_LARGE):
        large[i] = bytearray(LARGE)


def keep_small():
    for i in range(N_SMALL):
        small[i] = bytes(SMALL)


def chain_c(n):
    for i in range(n):
        chained[i] = bytes(CHAIN)


def chain_b(n):
    chain_c(n)


def chain_a(n):
    chain_b(n)


def worker():
    for i in range(N_T_LARGE):
        threaded[i] = bytearray(T_LARGE)
    for i in range(N_T_SMALL):
        threaded[N_T_LARGE + i] = bytes(T_SMALL)


def key_fn(x):
    called_back[x] = bytearray(CB)
    return -x


def run_thread():
    t = threading.Thread(target=worker)
    t.start()
    t.join()


def sort_with_key():
    return sorted(items, key=key_fn)


def held_by_line(snapshot):
    """Each (function, line) of this file in the tracebacks of the live blocks: their bytes and count."""
    here = os.path.abspath(__file__)
    names = {}
    for name, f in list(globals().items()):
        co = getattr(f, "__code__", None)
        if co is not None and os.path.abspath(co.co_filename) == here:
            last = max(names.get(name, (0, 0))[1], co.co_firstlineno)
            # A function's lines run to the next function's first line.
            names[name] = (co.co_firstlineno, last)
    starts = sorted((co_first, name) for name, (co_first, _) in names.items())
    out = {}
    for tr in snapshot.traces:
        seen = set()
        for fr in tr.traceback:
            if os.path.abspath(fr.filename) != here:
                continue
            fn = None
            for first, name in starts:
                if first <= fr.lineno:
                    fn = name
            key = (fn, fr.lineno)
            if fn is None or key in seen:
                continue
            seen.add(key)
            b, c = out.get(key, (0, 0))
            out[key] = (b + tr.size, c + 1)
    return out


def wait_line(path):
    """Says "ready PID", then waits for a line on the FIFO at PATH, polling: an attach loads
    the library at an allocator call (a blocked read makes none), and pymalloc's domains are
    wrapped when the main thread next runs Python."""
    import time

    # Read and write: the FIFO gives no end of file before the test writes.
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    print("ready", os.getpid(), flush=True)
    while True:
        try:
            if b"\n" in os.read(fd, 4096):
                return
        except BlockingIOError:
            time.sleep(0.002)


def main():
    args = sys.argv[1:]
    trace = bool(args) and args[0] == "--tracemalloc"
    if trace:
        args = args[1:]
        import tracemalloc

        tracemalloc.start(100)
    if args:
        wait_line(args[0])
    # Up to 3.10 a function's first call makes its frame object, which its later calls reuse,
    # or takes one from a list of freed frames (resized, when small: a realloc), which differs
    # between a run under tracemalloc and one without: the chain's frames made here, from main.
    chain_c(0)
    chain_b(0)
    chain_a(0)
    keep_large()
    keep_small()
    chain_a(N_CHAIN)
    run_thread()
    sort_with_key()
    if trace:
        snap = tracemalloc.take_snapshot()
        for (fn, line), (b, c) in sorted(held_by_line(snap).items()):
            print(fn, line, b, c)
    print("held", flush=True)
    os._exit(0)


main()
