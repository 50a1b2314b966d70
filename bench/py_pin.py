# SPDX-License-Identifier: MIT
"""The Python workloads' bench/pin.h: HEAPSNAP_BENCH_CPU=K pins the calling thread to the
K-th CPU (modulo their count) of those it may run on, so that a round's modes run on one CPU
of a virtual machine whose CPUs' speeds differ from minute to minute. The other threads (a
profiler's own) stay where they were."""
import os
import sys


def pin():
    v = os.environ.get("HEAPSNAP_BENCH_CPU")
    if not v:
        return
    try:
        k = int(v)
    except ValueError:
        sys.exit("HEAPSNAP_BENCH_CPU=%s: not a CPU index" % v)
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[k % len(cpus)]})
