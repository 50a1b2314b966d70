# SPDX-License-Identifier: MIT
"""Python allocations whose stacks and sizes tests/pycheck.py checks, for the in-process
recorder's Python frames and pymalloc wrapping (tests/run.sh, t_python_*). Every function
below keeps what it allocates (in `keep`) to the end, which is os._exit: no finalization
frees anything, so what is live at the end is what each function kept.

  small_objs     2000 bytearray(100): objects and buffers under 512 bytes (pymalloc)
  big_objs       20 bytearray(100000): buffers pymalloc passes on to malloc
  leaf           via nested -> mid -> leaf, 50 bytearray(200)
  key_fn         called back from C by sorted(key=), 40 bytearray(300)
  in_thread      in a threading.Thread, 300 bytearray(150)

With PYCHECK_TRACEMALLOC=1 it runs under tracemalloc and prints, before exiting, what
tracemalloc holds per function of this file (innermost frame): "tm FUNCTION BYTES COUNT".
With an argument FIFO it prints "ready PID" and waits for a line on FIFO before working
(an attach), and after its work prints "done" and waits for another line before exiting."""
import os
import sys
import threading

keep = []


def small_objs():
    for _ in range(2000):
        keep.append(bytearray(100))


def big_objs():
    for _ in range(20):
        keep.append(bytearray(100000))


def leaf():
    keep.append(bytearray(200))


def mid():
    leaf()


def nested():
    for _ in range(50):
        mid()


def key_fn(x):
    keep.append(bytearray(300))
    return -x


def with_callback():
    keep.append(sorted(range(40), key=key_fn))


def in_thread():
    for _ in range(300):
        keep.append(bytearray(150))


def work():
    small_objs()
    big_objs()
    nested()
    with_callback()
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()


def functions():
    """Each function of this file by its line range, from its own source."""
    import ast
    with open(__file__) as f:
        tree = ast.parse(f.read())
    return [(n.lineno, n.end_lineno, n.name) for n in tree.body if isinstance(n, ast.FunctionDef)]


def tracemalloc_report():
    import tracemalloc
    snap = tracemalloc.take_snapshot()
    ranges = functions()
    per = {}
    for tr in snap.traces:
        fr = tr.traceback[0]
        if fr.filename != __file__:
            continue
        for lo, hi, name in ranges:
            if lo <= fr.lineno <= hi:
                b, c = per.get(name, (0, 0))
                per[name] = (b + tr.size, c + 1)
    for name, (b, c) in sorted(per.items()):
        print("tm", name, b, c)
    sys.stdout.flush()


def wait_line(fd):
    """Until a line comes on FD, polled: an attach comes in at an allocator call, and the
    pending call that wraps pymalloc's domains runs when the main thread runs Python."""
    import time
    while True:
        try:
            if b"\n" in os.read(fd, 4096):
                return
        except BlockingIOError:
            time.sleep(0.002)


def main():
    fd = None
    if os.environ.get("PYCHECK_TRACEMALLOC"):
        import tracemalloc
        tracemalloc.start(1)
    if len(sys.argv) > 1:
        # Read and write: the FIFO never reads EOF between the test's writers.
        fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
        print("ready", os.getpid(), flush=True)
        wait_line(fd)
    work()
    if os.environ.get("PYCHECK_TRACEMALLOC"):
        tracemalloc_report()
    if fd is not None:
        print("done", flush=True)
        wait_line(fd)
    os._exit(0)


main()
