#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Python's objects of known sizes made and freed while a recorder samples, for the sampler of
pymalloc's pools (libheapsnap/pymem.c: a candidate every geometric count of calls, sampled
with the chance its size gives): each function makes N bytes objects of one size, each freed
at once, so that its bytes allocated are N times the size. A bytes object of K bytes takes
33 + K (its header, its bytes and a NUL):

  s40     bytes(7), 40 bytes
  s100    bytes(67), 100 bytes
  s250    bytes(217), 250 bytes
  s512    bytes(479), 512 bytes: the largest pymalloc serves
  s600    bytes(567), 600 bytes: malloc's, through PyMem_RawMalloc

Prints each function's size first ("size s40 40"), then "done". The loops count with
itertools.repeat, which makes no int objects."""
import itertools
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200000


def s40():
    for _ in itertools.repeat(None, N):
        b = bytes(7)
        del b


def s100():
    for _ in itertools.repeat(None, N):
        b = bytes(67)
        del b


def s250():
    for _ in itertools.repeat(None, N):
        b = bytes(217)
        del b


def s512():
    for _ in itertools.repeat(None, N):
        b = bytes(479)
        del b


def s600():
    for _ in itertools.repeat(None, N):
        b = bytes(567)
        del b


for f in (s40, s100, s250, s512, s600):
    print("size", f.__name__, sys.getsizeof(bytes(int(f.__name__[1:]) - 33)), flush=True)
for f in (s40, s100, s250, s512, s600):
    f()
print("done", flush=True)
