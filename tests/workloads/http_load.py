#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A bounded HTTP load for tests/run.sh (t_inject_real_nginx): GETs PATH from 127.0.0.1:PORT
over one keep-alive connection after another, and compares every body with FILE's bytes.
Prints "n COUNT" every 100 answers, and at the end "ok COUNT", or "bad ..." (exit 1) at the
first wrong answer. Ends when STOPFILE exists, after 200000 requests, or after 120 s.

Usage: http_load.py PORT PATH FILE STOPFILE"""
import http.client
import os
import sys
import time

port, path, want, stop = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], "rb").read(), sys.argv[4]
n, t0 = 0, time.monotonic()
while n < 200000 and time.monotonic() - t0 < 120 and not os.path.exists(stop):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(50):
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        if r.status != 200 or body != want:
            print("bad answer", n, r.status, len(body), flush=True)
            sys.exit(1)
        n += 1
        if n % 100 == 0:
            print("n", n, flush=True)
    c.close()
print("ok", n, flush=True)
