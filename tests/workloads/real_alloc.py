# SPDX-License-Identifier: MIT
"""Steady allocation work for Debian's /usr/bin/python3 (3.11), attached to again and again by
tests/run.sh (t_inject_real_python). CPython serves objects of 512 bytes or less from its own
arenas (mmap'd); a bytes object of L bytes is one malloc of 33 + L bytes (its header and a
terminating NUL), so the figures below come from this file alone:

  churn()        100 x b"c" * 1000: 100 mallocs of 1033 bytes, freed, in every round
  keep_blocks(n) n x b"k" * 4967: n mallocs of 5000 bytes, kept to the end

Usage: real_alloc.py FIFO. Prints "ready PID", then churns; each round checks its own sums
(a wrong one prints "bad ..." and exits 3). A line "keep N" on FIFO keeps N more blocks and
prints "kept TOTAL BYTES" (TOTAL blocks kept so far, BYTES their lengths' sum); "exit S"
prints "rounds ok" and exits with status S."""
import os
import sys

CHURN_LEN = 1000
KEEP_LEN = 4967
kept = []


def churn():
    blocks = [b"c" * CHURN_LEN for _ in range(100)]
    return sum(len(b) for b in blocks)


def keep_blocks(n):
    for _ in range(n):
        kept.append(b"k" * KEEP_LEN)


def main():
    # Read and write: the FIFO never reads EOF between the test's writers.
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
    print("ready", os.getpid(), flush=True)
    buf = b""
    while True:
        total = churn()
        if total != 100 * CHURN_LEN:
            print("bad churn", total, flush=True)
            sys.exit(3)
        try:
            buf += os.read(fd, 4096)
        except BlockingIOError:
            continue
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            cmd = line.split()
            if cmd[0] == b"keep":
                keep_blocks(int(cmd[1]))
                print("kept", len(kept), sum(len(b) for b in kept), flush=True)
            elif cmd[0] == b"exit":
                print("rounds ok", flush=True)
                sys.exit(int(cmd[1]))


main()
