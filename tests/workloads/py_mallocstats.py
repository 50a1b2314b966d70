#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sys._debugmallocstats() while pymalloc's domains are wrapped (libheapsnap/pymem.c):
CPython prints its pymalloc section ("Small block threshold", the arenas) only if the object
domain's malloc is pymalloc's own, and the recording must go on afterwards.

  before_stats   1000 bytes objects of 100 bytes (133 bytes each), made before the call
  after_stats    1000 bytes objects of 200 bytes (233 bytes each), made after it
Then says "held SIZE100 SIZE200" (sys.getsizeof's) and ends at once with os._exit."""
import os
import sys

N = 1000
before = [None] * N
after = [None] * N
AT = list(range(N))


def before_stats():
    for i in AT:
        before[i] = bytes(100)


def after_stats():
    for i in AT:
        after[i] = bytes(200)


before_stats()
sys._debugmallocstats()
after_stats()
print("held", sys.getsizeof(bytes(100)), sys.getsizeof(bytes(200)), flush=True)
os._exit(0)
