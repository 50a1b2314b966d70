#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Loads heapsnap's HTML report in headless Chromium and says what rendered.

  htmlcheck.py dom REPORT FRAGMENT         prints JSON: the caption, each flame graph
                                           function's value (summed over its nodes), the
                                           chart's point count, the tables' functions, the
                                           view table's [flat, cum] by function
  htmlcheck.py shot REPORT FRAGMENT PNG    takes a screenshot and prints JSON: how many
                                           pixels of the chart's live-heap fill and of the
                                           flame graph's colours it holds
  htmlcheck.py speedscope DIR PROFILE PNG  opens PROFILE in speedscope (npm's, in DIR) the
                                           way its command line does, and prints JSON: the
                                           page's title, its toolbar's text, and how many
                                           pixels of its screenshot are not background

What Chromium rendered is read back from the DOM it dumps after running the page's script,
and from the pixels of its screenshot, so a page that fails to run or draws nothing fails.
"""
import json, os, struct, subprocess, sys, tempfile, zlib
from html.parser import HTMLParser

CHROMIUM = os.environ.get("CHROMIUM", "chromium")


def chromium(args, url):
    with tempfile.TemporaryDirectory() as prof:
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--disable-dev-shm-usage", "--user-data-dir=" + prof, "--virtual-time-budget=5000"] + args + [url]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
        if r.returncode:
            sys.exit("chromium failed (%d): %s" % (r.returncode, r.stderr.decode()[-2000:]))
        return r.stdout.decode()


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.values, self.caption, self.points, self.rendered, self.body = {}, None, 0, False, {}
        self.table_fns, self.in_caption, self.in_fn, self.view = [], False, False, {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.rendered = a.get("data-rendered") == "yes"
            self.body = {k: v for k, v in a.items() if k.startswith("data-")}
        if tag == "g" and "data-name" in a and "dim" not in a.get("class", ""):
            self.values[a["data-name"]] = self.values.get(a["data-name"], 0) + int(a["data-value"])
        if tag == "path" and a.get("class") == "live":
            self.points = a.get("d", "").count("L") - 1  # a point each, then back to the axis
        if tag == "tr" and "data-flat" in a:
            self.view[a["data-name"]] = [int(a["data-flat"]), int(a["data-cum"])]
        if a.get("id") == "caption":
            self.in_caption = True
        if tag == "td" and a.get("class") == "fn":
            self.in_fn = True
            self.table_fns.append("")

    def handle_endtag(self, tag):
        if tag == "div":
            self.in_caption = False
        if tag == "td":
            self.in_fn = False

    def handle_data(self, data):
        if self.in_caption:
            self.caption = (self.caption or "") + data
        if self.in_fn:
            self.table_fns[-1] += data


def png_pixels(path):
    """The RGB pixels of an 8-bit RGB or RGBA PNG, as rows of bytes."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return rows


class Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.title, self.text, self.in_title = "", "", False

    def handle_starttag(self, tag, attrs):
        self.in_title = tag == "title"

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        self.text += data + " "


def speedscope(app, profile, png):
    # What `speedscope FILE` does: a script that hands the file to the app, named in the URL.
    import base64
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "load.js")
        with open(js, "w") as f:
            f.write("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps(os.path.basename(profile)),
                    json.dumps(base64.b64encode(open(profile, "rb").read()).decode())))
        url = "file://" + os.path.abspath(os.path.join(app, "index.html")) + "#localProfilePath=" + js
        t = Text()
        t.feed(chromium(["--dump-dom"], url))
        chromium(["--window-size=1300,800", "--screenshot=" + png], url)
    ink = sum(1 for row in png_pixels(png) for p in row if min(p) < 200)
    print(json.dumps({"title": t.title, "text": " ".join(t.text.split()), "ink_pixels": ink}))


def main():
    if sys.argv[1] == "speedscope":
        return speedscope(sys.argv[2], sys.argv[3], sys.argv[4])
    mode, report, frag = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    url = "file://" + report + ("#" + frag if frag else "")
    if mode == "dom":
        d = Dom()
        d.feed(chromium(["--dump-dom"], url))
        print(json.dumps({"rendered": d.rendered, "body": d.body, "caption": d.caption, "values": d.values,
                          "points": d.points, "table_functions": d.table_fns,
                          "view": d.view}))
    else:
        chromium(["--window-size=1300,1300", "--screenshot=" + sys.argv[4]], url)
        live = flame = 0
        for row in png_pixels(sys.argv[4]):
            for r, g, b in row:
                # The live heap's fill: blue over white. The flame graph: warm hues.
                live += b > 200 and r < 225 and g < 235 and b - r > 15
                flame += r > 180 and r - b > 60 and g < r
        print(json.dumps({"live_pixels": live, "flame_pixels": flame}))


main()
