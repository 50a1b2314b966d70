#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The truth heapsnap's line-table decoder (common/pyline.c) is checked against, from the
interpreter that runs this script: for the code objects of standard-library modules (every
function, class body and comprehension, nested ones included), their line table as the
recorder writes it (co_lnotab before 3.10, co_linetable from 3.10) and the line of every
instruction as the interpreter itself reports it: co_lines() from 3.10, dis.findlinestarts()
before. Works on 3.8 to 3.13, with nothing but the standard library.

pylines.py MAX_MODULES > DUMP; each code object is

    C <major<<8|minor> <co_firstlineno> <len(co_code)> <line table in hex or ->
    R <start> <end> <line or -1>      (bytes [start, end) of the bytecode run on that line)

Also `pylines.py --code FILE QUALNAME...`: each code object QUALNAME of FILE as a line
"N QUALNAME", then its C line and R lines (the crafted recordings' real line tables)."""
import dis, os, sys, sysconfig


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)


def ranges(co):
    if sys.version_info >= (3, 10):
        for start, end, line in co.co_lines():
            if end > start:
                yield start, end, -1 if line is None else line
        return
    # Before 3.10: each line start runs to the next one, the last to the code's end.
    starts = list(dis.findlinestarts(co))
    for i, (start, line) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(co.co_code)
        if end > start:
            yield start, end, line


def table(co):
    return co.co_linetable if sys.version_info >= (3, 10) else co.co_lnotab


def dump(co, out):
    v = sys.version_info.major << 8 | sys.version_info.minor
    t = table(co)
    out.append("C %d %d %d %s" % (v, co.co_firstlineno, len(co.co_code), t.hex() if t else "-"))
    for s, e, l in ranges(co):
        out.append("R %d %d %d" % (s, e, l))


def main():
    out = []
    if sys.argv[1] == "--code":
        src = open(sys.argv[2]).read()
        all_codes = list(codes(compile(src, os.path.abspath(sys.argv[2]), "exec")))
        for name in sys.argv[3:]:
            for co in all_codes:
                if getattr(co, "co_qualname", co.co_name) == name:
                    out.append("N " + name)
                    dump(co, out)
                    break
            else:
                sys.exit("%s: no code object %s" % (sys.argv[2], name))
    else:
        lib = sysconfig.get_paths()["stdlib"]
        names = sorted(n for n in os.listdir(lib) if n.endswith(".py"))
        for n in names[: int(sys.argv[1])]:
            path = os.path.join(lib, n)
            try:
                with open(path, encoding="utf-8") as f:
                    top = compile(f.read(), path, "exec")
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for co in codes(top):
                dump(co, out)
    sys.stdout.write("\n".join(out) + "\n")


main()
