"""A small service's start-up: a cache of 50,000 strings and 20,000 parsed JSON documents.

Recorded in docs/PYTHON.md ("A Python session"): heapsnap-record -- python3 docs/examples/cache_app.py
"""
import json


def build_cache(n):
    # 50,000 small strings (pymalloc's objects) in a dict, kept for the process's life.
    return {i: "user-%06d:%s" % (i, "x" * (i % 40)) for i in range(n)}


def make_docs(n):
    return [json.dumps({"id": i, "tags": ["a", "b", "c"], "name": "doc-%d" % i, "score": i / 7})
            for i in range(n)]


def parse_docs(raw):
    # 20,000 dicts built by json's C decoder, named here by the Python code that asked for them.
    return [json.loads(doc) for doc in raw]


CACHE = {}
DOCS = []


def main():
    # Module globals, as a service keeps its caches: held until the interpreter finalizes.
    global CACHE, DOCS
    CACHE = build_cache(50_000)
    DOCS = parse_docs(make_docs(20_000))
    print(len(CACHE), len(DOCS))


if __name__ == "__main__":
    main()
