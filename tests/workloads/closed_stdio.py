# SPDX-License-Identifier: MIT
# A parent that closed its standard input and output starts a child (CPython's test_subprocess
# does): the child must find its descriptors 0 and 1 closed, as they are unrecorded, and its
# output must go nowhere, never into a recorder's shared memory.
#
#   closed_stdio.py N     N children one after another, each printing 40 x's to its closed
#                         stdout; the child writes "clash FD TARGET" to stderr if its fd 0 or
#                         1 is open, and exits 3 then. Exits with the first child's nonzero
#                         status, else 0.
import os
import subprocess
import sys

CHILD = r"""
import os, sys
for fd in (0, 1):
    try:
        os.fstat(fd)
    except OSError:
        continue
    print("clash", fd, os.readlink("/proc/self/fd/%d" % fd), file=sys.stderr)
    sys.exit(3)
print("x" * 40)
kept = [bytearray(1000) for _ in range(100)]
"""

n = int(sys.argv[1])
os.close(0)
os.close(1)
for _ in range(n):
    rc = subprocess.Popen([sys.executable, "-c", CHILD]).wait()
    if rc:
        sys.exit(rc)
