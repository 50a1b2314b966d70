#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A Python program attached to while idle, blocked in sys.stdin.read(1), then woken: what it
makes after waking is known in advance, for heapsnap's pymalloc wrap (libheapsnap/pymem.c).

  py_idle.py FIFO   stdin becomes FIFO (opened read and write: no end of file before the test
                    writes); says "ready PID", blocks in sys.stdin.read(1), then makes
                    keep_small   20000 bytes objects of 200 bytes: 233 bytes each (pymalloc),
                                 4,660,000 bytes
                    keep_large   30 bytearrays of 1000000 bytes: a 56-byte object (pymalloc)
                                 and a 1000001-byte buffer (malloc) each, 30,001,710 bytes
                    chain_c      under chain_a -> chain_b: 500 bytes objects of 100 (133 each)
                    worker       in a threading.Thread: 1000 bytes objects of 300 (333 each)
                    churn_make   20000 bytes objects of 150 (183 bytes each), freed by
                                 churn_free once the thread is joined (none held)
                  with a call of sys._debugmallocstats() after keep_small (its pymalloc
                  section on stderr); then says "held SIZES" (the sizes above as sys.getsizeof gives them, to check
                  the figures with) and ends at once with os._exit: nothing it holds is freed.
The bytes objects' sizes are sys.getsizeof's, which is what pymalloc is asked for."""
import os
import sys
import threading

N_SMALL, SMALL = 20000, 200
N_LARGE, LARGE = 30, 1000000
N_CHAIN, CHAIN = 500, 100
N_THREAD, THREAD = 1000, 300
N_CHURN, CHURN = 20000, 150

small = [None] * N_SMALL
large = [None] * N_LARGE
chained = [None] * N_CHAIN
threaded = [None] * N_THREAD
churned = [None] * N_CHURN
# Made now: range's ints over 256 would be objects of churn_make's too.
CHURN_AT = list(range(N_CHURN))


def keep_small():
    for i in range(N_SMALL):
        small[i] = bytes(SMALL)


def keep_large():
    for i in range(N_LARGE):
        large[i] = bytearray(LARGE)


def chain_c():
    for i in range(N_CHAIN):
        chained[i] = bytes(CHAIN)


def chain_b():
    chain_c()


def chain_a():
    chain_b()


def worker():
    for i in range(N_THREAD):
        threaded[i] = bytes(THREAD)


def churn_make():
    for i in CHURN_AT:
        churned[i] = bytes(CHURN)


def churn_free():
    for i in CHURN_AT:
        churned[i] = None


def main():
    fd = os.open(sys.argv[1], os.O_RDWR)
    os.dup2(fd, 0)
    os.close(fd)
    print("ready", os.getpid(), flush=True)
    sys.stdin.read(1)
    keep_small()
    # Before the main thread lets the GIL go: pymalloc's section in it (on stderr).
    sys._debugmallocstats()
    churn_make()
    keep_large()
    chain_a()
    # The main thread lets the GIL go here, and takes it back: what a pending call waits for.
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    churn_free()
    print("held", sys.getsizeof(bytes(SMALL)), sys.getsizeof(bytearray(LARGE)), sys.getsizeof(bytes(CHAIN)),
          sys.getsizeof(bytes(THREAD)), sys.getsizeof(bytes(CHURN)), flush=True)
    os._exit(0)


main()
