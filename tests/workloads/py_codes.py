# SPDX-License-Identifier: MIT
"""Code objects made and dropped, and a fork, for tests/run.sh's t_python_code_ids: 200 code
objects, each compiled from its own file name (gen0.py ... gen199.py), run once and dropped
before the next is made, so that later ones are made at the addresses of earlier ones; each
allocates one bytearray(1000 + i), whose buffer is one allocation of 1001 + i bytes. Then 200
more (gen200.py ... gen399.py) each dropped as soon as it has run, so that the next is made
where it was and runs in the same frame. Then a
fork child allocates 30 bytearray(222) in in_child (buffers of 223 bytes: pymalloc's)."""
import os

keep = []
# Two lines, not one: on 3.11 a code object of one line, `keep.append(bytearray(N))`, never took
# a dropped one's address (compile's own objects of its size took it first); of these two, 199
# in 200 do.
SRC = "n = %d\nkeep.append(bytearray(n))\n"


def in_child():
    for _ in range(30):
        keep.append(bytearray(222))


def main():
    for i in range(200):
        co = compile(SRC % (1000 + i), "gen%d.py" % i, "exec")
        exec(co, {"keep": keep, "bytearray": bytearray})
        del co
    for i in range(200, 400):
        exec(compile(SRC % (1000 + i), "gen%d.py" % i, "exec"),
             {"keep": keep, "bytearray": bytearray})
    pid = os.fork()
    if pid == 0:
        in_child()
        os._exit(0)
    os.waitpid(pid, 0)
    os._exit(0)


main()
