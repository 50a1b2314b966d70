# SPDX-License-Identifier: MIT
"""The Python workload of docs/FORMAT.md's Size table: a dict of 200,000 entries (each a list of
an int, a string and a dict) dumped to JSON and loaded again, natively or under a recorder.
Usage: python3 py_json.py"""
import json

d = {str(i): [i, str(i) * 2, {"k": i}] for i in range(200000)}
s = json.dumps(d)
e = json.loads(s)
