#!/usr/bin/env bash
# Round trip through the Collector of scripts/build-otelcol.sh: starts it on a free loopback port
# with the profiles feature gate, posts the hand-encoded request of sendprofile/ (protobuf, and
# again gzip'd), and checks the exact figures in what the file exporter wrote. Prints
# "N passed, N failed". Not part of make check: the export tests of issue 54 take it over.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$("$HERE/../../scripts/build-otelcol.sh")
DIR=$(dirname "$BIN")
GO=$(command -v go)
(cd "$HERE" && GOFLAGS=-mod=readonly "$GO" build -trimpath -o "$DIR/sendprofile" ./sendprofile)

work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
OTLP_PORT=$port OUT_FILE=$work/out.json "$BIN" --config="file:$HERE/config.yaml" \
	--feature-gates=service.profilesSupport >"$work/collector.log" 2>&1 &
pid=$!
for _ in $(seq 50); do
	grep -q "Everything is ready" "$work/collector.log" && break
	kill -0 "$pid" 2>/dev/null || { cat "$work/collector.log" >&2; exit 1; }
	sleep 0.1
done
url=http://127.0.0.1:$port/v1development/profiles
SENDPROFILE_OUT=$work/req.pb "$DIR/sendprofile" "$url"
gzip -c "$work/req.pb" >"$work/req.pb.gz"
curl -fsS -o /dev/null -H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: gzip' \
	--data-binary @"$work/req.pb.gz" "$url"
for _ in $(seq 50); do
	[ "$(wc -l <"$work/out.json" 2>/dev/null || echo 0)" -ge 2 ] && break
	sleep 0.1
done
python3 - "$work/out.json" <<'EOF'
import json, sys
passed = failed = 0
def check(what, got, want):
    global passed, failed
    if got == want:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}: got {got!r}, want {want!r}")
lines = open(sys.argv[1]).read().splitlines()
check("requests written", len(lines), 2)
for line in lines:
    d = json.loads(line)
    dic = d["dictionary"]
    st = dic["stringTable"]
    def s(i): return st[i or 0]
    def val(v):  # AnyValue in OTLP JSON: 64-bit integers are strings
        if "stringValueStrindex" in v: return st[v["stringValueStrindex"]]
        if "intValue" in v: return int(v["intValue"])
        return v.get("stringValue")
    def kv(a):  # the file exporter turns resource attributes into string-table references
        return (a["key"] if "key" in a else s(a.get("keyStrindex"))), val(a["value"])
    rp = d["resourceProfiles"]
    check("resource profiles", len(rp), 1)
    check("resource attributes", dict(kv(a) for a in rp[0]["resource"]["attributes"]),
          {"service.name": "demo", "host.name": "vm", "process.pid": 1234,
           "process.executable.name": "demo"})
    sp = rp[0]["scopeProfiles"][0]
    check("scope", (sp["scope"]["name"], sp["scope"]["version"]), ("heapsnap", "0.1.0"))
    profs = sp["profiles"]
    got = [(s(p["sampleType"].get("typeStrindex")), s(p["sampleType"].get("unitStrindex")),
            [[int(x) for x in smp["values"]] for smp in p["samples"]]) for p in profs]
    check("profiles", got, [("inuse_space", "bytes", [[819200]]), ("inuse_objects", "count", [[100]])])
    p = profs[0]
    check("time_unix_nano", int(p["timeUnixNano"]), 1764688800000000000)
    check("duration_nano", int(p["durationNano"]), 60000000000)
    check("period", (s(p["periodType"]["typeStrindex"]), s(p["periodType"]["unitStrindex"]),
                     int(p["period"])), ("space", "bytes", 1))
    stack = dic["stackTable"][p["samples"][0]["stackIndex"]]["locationIndices"]
    locs = [dic["locationTable"][i] for i in stack]
    check("stack", [s(dic["functionTable"][l["lines"][0]["functionIndex"]]["nameStrindex"])
                    for l in locs], ["cache_insert", "main"])
    check("addresses", [int(l["address"]) for l in locs], [0x401234, 0x401100])
    m = dic["mappingTable"][locs[0]["mappingIndex"]]
    check("mapping file", s(m["filenameStrindex"]), "/usr/bin/demo")
    check("mapping range", (int(m["memoryStart"]), int(m["memoryLimit"])), (0x400000, 0x401000))
    attrs = dict(kv(dic["attributeTable"][i]) for i in m["attributeIndices"])
    check("build-id", attrs, {"process.executable.build_id.gnu":
                              "3d979d270bc58fe827b654768fe976c74bd759ed"})
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
EOF
