# SPDX-License-Identifier: MIT
"""make bench's Python workload (bench/python.sh): pure-Python allocation-heavy code, dicts,
lists and strings built and dropped 10 calls deep, most of them pymalloc's (512 bytes or
less), one in a thousand kept a while. Prints the CPU seconds of its loop alone (no start-up):
"cpu SECONDS". Usage: py_alloc.py ITERATIONS."""
import sys
import time

import py_pin


def work(n):
    keep = None
    for i in range(n):
        d = {"a": i, "b": [i, i + 1]}
        s = str(i) * 3
        keep = (d, s, keep) if i % 1000 else None
    return keep


def deep(k, n):
    return deep(k - 1, n) if k else work(n)


py_pin.pin()
t = time.process_time()
deep(10, int(sys.argv[1]))
print("cpu %.4f" % (time.process_time() - t), flush=True)
