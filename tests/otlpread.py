# SPDX-License-Identifier: MIT
"""Reads what the OpenTelemetry Collector's file exporter wrote (OTLP/JSON, one request a
line) and prints one line per process profile, independently of heapsnap's code:

  REQ SERVICE PID TYPE START_NS DURATION_NS FUNC=VALUE ...

where FUNC=VALUE sums each sample's value under its leaf function (the first location's
innermost line). Resource attributes may come as strings or as string-table references
(the Collector's marshaler turns them into references); both are resolved here. With
--samples, each sample too:

  SMP REQ TYPE LEAF VALUE KEY=VALUE[UNIT] ...

its attributes from the dictionary's table, sorted by key.
Usage: python3 otlpread.py OUT.json [--attrs] [--mappings] [--samples]"""
import json
import sys


def main():
    path = sys.argv[1]
    attrs = "--attrs" in sys.argv
    mappings = "--mappings" in sys.argv
    samples = "--samples" in sys.argv
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line:
            continue
        d = json.loads(line)
        dic = d.get("dictionary", {})
        st = dic.get("stringTable", [""])

        def s(i):
            return st[i or 0]

        def val(v):
            if "stringValueStrindex" in v:
                return s(v["stringValueStrindex"])
            if "stringValue" in v:
                return v["stringValue"]
            if "intValue" in v:
                return int(v["intValue"])
            return None

        def key(a):
            return a.get("key") or s(a.get("keyStrindex"))

        locs = dic.get("locationTable", [])
        funcs = dic.get("functionTable", [])
        stacks = dic.get("stackTable", [])
        maps = dic.get("mappingTable", [])
        attr_table = dic.get("attributeTable", [])

        def leaf(stack_index):
            li = stacks[stack_index or 0].get("locationIndices", [])
            if not li:
                return "?"
            loc = locs[li[0]]
            lines = loc.get("lines", [])
            if not lines:
                return "0x%x" % int(loc.get("address", "0"))
            return s(funcs[lines[0].get("functionIndex", 0)].get("nameStrindex"))

        for rp in d.get("resourceProfiles", []):
            ra = {key(a): val(a.get("value", {})) for a in rp.get("resource", {}).get("attributes", [])}
            svc, pid = ra.get("service.name"), ra.get("process.pid")
            if attrs:
                print("ATTRS %d %s" % (n, " ".join("%s=%s" % (k, ra[k]) for k in sorted(ra))))
            for sp in rp.get("scopeProfiles", []):
                for p in sp.get("profiles", []):
                    t = s(p.get("sampleType", {}).get("typeStrindex"))
                    sums = {}
                    for smp in p.get("samples", []):
                        f = leaf(smp.get("stackIndex"))
                        sums[f] = sums.get(f, 0) + sum(int(v) for v in smp.get("values", []))
                        if samples:
                            kvs = []
                            for i in smp.get("attributeIndices", []):
                                a = attr_table[i]
                                unit = s(a.get("unitStrindex"))
                                kvs.append("%s=%s%s" % (key(a), val(a.get("value", {})),
                                                        "[%s]" % unit if unit else ""))
                            print("SMP%d %s %s %s %s" % (n, t, f, " ".join(smp.get("values", [])) or "0",
                                                         " ".join(sorted(kvs))))
                    print("REQ%d %s %s %s %s %s %s" % (
                        n, svc, pid, t, p.get("timeUnixNano", "0"), p.get("durationNano", "0"),
                        " ".join("%s=%d" % (f, sums[f]) for f in sorted(sums))))
        if mappings:
            for m in maps[1:]:
                bids = [val(attr_table[i].get("value", {})) for i in m.get("attributeIndices", [])
                        if s(attr_table[i].get("keyStrindex")) == "process.executable.build_id.gnu"]
                print("MAP%d %s %s" % (n, s(m.get("filenameStrindex")), ",".join(bids) or "-"))


main()
