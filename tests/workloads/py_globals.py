#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A Python program that keeps what it made in module globals, then ends normally (issue 51):
the interpreter's finalization frees the globals, so the end of a recording holds only its
shutdown leftovers, and what the program held is in the snapshot made as finalization begins.

  keep_buffers  a tuple of 37 bytearrays of 1,000,000 bytes each: per bytearray a pymalloc
                object and a 1,000,001-byte buffer, and the tuple (37 slots: past the sizes
                CPython keeps free lists of tuples for, so it is allocated)
  keep_small    a tuple of 1000 bytes objects of 100 bytes (pymalloc)
Each is made from a list that is freed as the function returns (a list's object comes from the
interpreter's free list of lists, not from an allocator).

  py_globals.py FIGURES   writes "FUNCTION BYTES" for each, counted by sys.getsizeof (which
                          counts each object's header, GC head and buffer as allocated: the
                          bytes the allocators were asked for), to FIGURES, and "held" to stdout
The figures are what heapsnap must find under each function before finalization."""
import sys

HELD = None  # bound here: the function's store into the module's dict allocates nothing
SMALL = None


def keep_buffers():
    global HELD
    parts = [None] * 37
    for i in range(37):
        parts[i] = bytearray(1000000)
    HELD = tuple(parts)


def keep_small():
    global SMALL
    parts = [None] * 1000
    for i in range(1000):
        parts[i] = bytes(100)
    SMALL = tuple(parts)


def size_of(held):
    return sys.getsizeof(held) + sum(sys.getsizeof(x) for x in held)


keep_buffers()
keep_small()
with open(sys.argv[1], "w") as f:
    f.write("keep_buffers %d\nkeep_small %d\n" % (size_of(HELD), size_of(SMALL)))
print("held", flush=True)
