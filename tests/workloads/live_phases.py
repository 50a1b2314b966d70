# SPDX-License-Identifier: MIT
# live_phases.c's phases in Python, for a live view's Python table (tests/live.sh):
# keep_py keeps 10 bytearrays of 100000 (K's slots made before it), says "kept" on stderr,
# and waits for a line from the FIFO in argv[1]; then exits. With --tracemalloc, prints
# instead the bytes tracemalloc counts as allocated by keep_py and live at the wait: the
# figure the recorder's Python table must show for it.
import sys

K = [None] * 10


def keep_py():
    for i in range(10):
        K[i] = bytearray(100000)


def main():
    if sys.argv[1] == "--tracemalloc":
        import tracemalloc
        tracemalloc.start(1)
        keep_py()
        snap = tracemalloc.take_snapshot()
        code = keep_py.__code__
        print(sum(s.size for s in snap.statistics("lineno")
                  if s.traceback[0].filename == code.co_filename and s.traceback[0].lineno == code.co_firstlineno + 2))
        return
    f = open(sys.argv[1], "rb+", buffering=0)
    keep_py()
    sys.stderr.write("kept\n")
    sys.stderr.flush()
    f.readline()


main()
