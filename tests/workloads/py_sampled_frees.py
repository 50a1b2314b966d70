#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Python's objects made and freed while a recorder samples, for the frees of the sampled
blocks (libheapsnap/pymem.c: sampling, the domains keep pymalloc's own free, and a sampled
block is placed outside pymalloc's arenas so that its free reaches free's hook).

  churn   400000 bytes objects of 100 bytes (133 bytes each, pymalloc's), each freed at
          once: 53,200,000 bytes allocated, none live at the end (its loop counts with
          itertools.repeat, which makes no int objects)
  grow    2000 bytearrays grown by appends of 10 bytes to 400 bytes (pymalloc's realloc, in
          its pools), then dropped: none live at the end
  big     200 bytearrays of 20000 bytes (56 + 20001 bytes each: over 512, pymalloc passes
          the buffer to malloc), dropped: none live at the end
  keep    20000 bytes objects of 100 bytes (133 bytes each): 2,660,000 bytes live at the end
Then it says "done" and ends with os._exit, so that nothing kept is freed."""
import itertools
import os

N_CHURN, N_GROW, N_BIG, N_KEEP = 400000, 2000, 200, 20000
kept = [None] * N_KEEP


def churn():
    for _ in itertools.repeat(None, N_CHURN):
        b = bytes(100)
        del b


def grow():
    out = []
    for _ in itertools.repeat(None, N_GROW):
        a = bytearray()
        for _ in itertools.repeat(None, 40):
            a += b"0123456789"
        out.append(a)
    out.clear()


def big():
    out = [None] * N_BIG
    for i in range(N_BIG):  # ints up to 256 are the interpreter's own, made at its start
        out[i] = bytearray(20000)
    out[:] = [None] * N_BIG


def keep():
    for i in range(N_KEEP):
        kept[i] = bytes(100)


churn()
grow()
big()
keep()
print("done", flush=True)
os._exit(0)
