#!/usr/bin/env python3
# mkman.py PROGRAM VERSION DESCRIPTION: a man page (roff, man macros) from PROGRAM --help, so
# that the options, defaults and examples live in one place, the program's usage text.
# Sections of the help ("Output:", "Examples:") become SH/SS headings, option lines tagged
# paragraphs, the examples a no-fill block.
import subprocess
import sys
import re

prog, version, description = sys.argv[1], sys.argv[2], sys.argv[3]
name = prog.rsplit("/", 1)[-1]
text = subprocess.run([prog, "--help"], capture_output=True, text=True, check=True).stdout


def esc(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


out = ['.TH %s 1 "" "heapsnap %s" "User Commands"' % (name.upper(), version), ".SH NAME",
       "%s \\- %s" % (name, esc(description)), ".SH SYNOPSIS", ".nf"]
lines = text.rstrip("\n").split("\n")
i = 0
# The usage lines, up to the first blank line.
while i < len(lines) and lines[i].strip():
    out.append(esc(re.sub(r"^Usage: *", "", lines[i]).strip()))
    i += 1
out += [".fi", ".SH DESCRIPTION"]
mode = "text"  # text, options, examples
for line in lines[i:]:
    if not line.strip():
        if mode == "examples":
            out.append("")
        elif mode == "text":
            out.append(".PP")
        continue
    # A heading is a line of its own that ends with a colon; "Exit status: ..." has its text on it.
    head = re.fullmatch(r"([A-Z].*):", line) or re.fullmatch(r"(Exit status):(.*)", line)
    if head and not line.startswith(" "):
        title, rest = head.group(1), (head.group(2) if head.lastindex > 1 else "").strip()
        if mode == "examples":
            out.append(".fi")
        mode = "examples" if title == "Examples" else "options"
        out.append(".SH " + esc(title.upper()) if title in ("Examples", "Exit status") else ".SS " + esc(title))
        if title == "Examples":
            out += [".nf"]
        elif rest:
            mode = "text"
            out.append(esc(rest))
        continue
    if mode == "examples":
        out.append(esc(line.strip()))
        continue
    opt = re.fullmatch(r" {1,8}(\S.*?)(?: {2,}(\S.*))?", line)
    if mode == "options" and opt and not line.startswith(" " * 12):
        out += [".TP", "\\fB%s\\fR" % esc(opt.group(1))]
        if opt.group(2):
            out.append(esc(opt.group(2)))
    else:
        out.append(esc(line.strip()))
if mode == "examples":
    out.append(".fi")
out += [".SH SEE ALSO", "heapsnap\\-record(1), heapsnap\\-analyze(1), pprof(1)",
        ".PP", "docs/FORMAT.md and README.md in the source tree."]
sys.stdout.write("\n".join(out) + "\n")
