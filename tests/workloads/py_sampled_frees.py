#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Python's objects made and freed while a recorder samples, for the frees of the sampled
blocks (libheapsnap/pymem.c: sampling, the domains keep pymalloc's own free, and a sampled
block is placed outside pymalloc's arenas so that its free reaches free's hook).

  churn   400000 bytes objects of 100 bytes (133 bytes each, pymalloc's), each freed at
          once: 53,200,000 bytes allocated, none live at the end (its loop counts with
          itertools.repeat, which makes no int objects)
  grow    5000 bytearrays grown by appends of 10 bytes to 400 bytes (pymalloc's realloc, in
          its pools), each dropped: none live at the end; the bytes it allocates (each
          object, and each size its buffer is reallocated to, which bytearray.__alloc__
          says) are printed first, "grow_bytes N", from a bytearray grown alike
  shrink  20000 bytearrays' buffers of 2001 bytes (malloc's, made beforehand) cut to 401
          bytes, reallocated by pymalloc's realloc through PyMem_RawRealloc, where
          realloc's hook counts them, and only there; then dropped: none live at the end;
          the bytes asked for printed first, "shrink_bytes N"
  big     200 bytearrays of 20000 bytes (56 + 20001 bytes each: over 512, pymalloc passes
          the buffer to malloc), dropped: none live at the end
  keep    20000 bytes objects of 100 bytes (133 bytes each): 2,660,000 bytes live at the end
Then it says "done" and ends with os._exit, so that nothing kept is freed."""
import itertools
import os

N_CHURN, N_GROW, N_SHRINK, N_BIG, N_KEEP = 400000, 5000, 20000, 200, 20000
kept = [None] * N_KEEP


def churn():
    for _ in itertools.repeat(None, N_CHURN):
        b = bytes(100)
        del b


# The 40 appends unrolled, so that grow allocates nothing but its bytearrays (a loop's
# iterator is an object of its own).
exec("def append40(a):\n" + "    a += b'0123456789'\n" * 40)


def grow():
    for _ in itertools.repeat(None, N_GROW):
        a = bytearray()
        append40(a)
        del a


def grow_bytes():
    a = bytearray()
    n = type(a).__basicsize__
    for _ in range(40):
        was = a.__alloc__()
        a += b"0123456789"
        if a.__alloc__() != was:
            n += a.__alloc__()
    return n * N_GROW


def big():
    out = [None] * N_BIG
    for i in range(N_BIG):  # ints up to 256 are the interpreter's own, made at its start
        out[i] = bytearray(20000)
    out[:] = [None] * N_BIG


CUT = slice(400, None)  # made here: shrink's del makes no slice of its own


def shrink(bigs):
    for a in bigs:
        del a[CUT]


def shrink_bytes():
    a = bytearray(2000)
    del a[CUT]
    return a.__alloc__() * N_SHRINK


def keep():
    for i in range(N_KEEP):
        kept[i] = bytes(100)


print("grow_bytes", grow_bytes(), flush=True)
print("shrink_bytes", shrink_bytes(), flush=True)
churn()
grow()
bigs = [bytearray(2000) for _ in itertools.repeat(None, N_SHRINK)]
shrink(bigs)
del bigs
big()
keep()
print("done", flush=True)
os._exit(0)
