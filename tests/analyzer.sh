# heapsnap-analyze: its command line, reports and views against figures known apart from it.

# Golden outputs of a recorded fixture (no symbols needed).
golden() {
	local name=$1 out="$TMP/${1//\//_}"; shift
	"$A" "$@" >"$out.out" 2>"$out.err" || { cat "$out.err"; die "$A $*"; }
	diff -u "testdata/$name" "$out.out" || die "output differs from testdata/$name"
}

t_golden() {
	local f=testdata/alloc_c.hsnap
	golden alloc_c.top top -n 0 --no-symbolize $f
	golden alloc_c.alloc.top top -n 0 --no-symbolize --value alloc_space $f
	golden alloc_c.collapsed collapsed --no-symbolize $f
	golden alloc_c.summary summary --no-symbolize $f
	golden alloc_c.leaks leaks -n 5 --no-symbolize $f
	golden alloc_c.info info $f
	golden alloc_c.summary.json summary --json --no-symbolize $f
}

t_analyzer_usage() {
	local rc
	"$A" frobnicate x 2>"$TMP/e"; rc=$?; eq "unknown subcommand exit" 2 $rc; contains "$TMP/e" "unknown subcommand 'frobnicate'"
	"$A" top --value bogus x 2>"$TMP/e"; rc=$?; eq "bad --value exit" 2 $rc; contains "$TMP/e" "invalid --value 'bogus'"
	"$A" top --peak --snapshot 1 x 2>"$TMP/e"; rc=$?; eq "conflicting options exit" 2 $rc
	"$A" top 2>"$TMP/e"; rc=$?; eq "no file exit" 2 $rc; contains "$TMP/e" "needs a record file"
	"$A" leaks --min-age 5parsecs x 2>"$TMP/e"; rc=$?; eq "bad duration" 2 $rc; contains "$TMP/e" "--min-age '5parsecs'"
	"$A" --help | grep -q "Usage: heapsnap-analyze" || die "help"
	# The version the Makefile builds in, and the format version record.h defines.
	local v fmt
	v=$(awk '/^VERSION :=/ { print $3 }' Makefile)
	fmt=$(awk '/define HS_FORMAT_MAJOR / { M = $3 } /define HS_FORMAT_MINOR / { m = $3 } END { print M "." m }' format/record.h)
	eq "heapsnap-analyze --version" "heapsnap-analyze $v (record format $fmt)" "$("$A" --version)"
	eq "heapsnap-record --version" "heapsnap-record $v (record format $fmt)" "$("$R" --version)"
}

# Progress goes to stderr for files that take over a second, and only when it is a terminal.
t_analyzer_progress() {
	command -v script >/dev/null || skip "no script(1) to give the analyzer a terminal"
	"$OUT/bench/genfile" "$TMP/big.hsnap" 40000000 1000000 || die "genfile" # over a second of reading
	script -qec "$A summary --no-symbolize -o $TMP/big.txt $TMP/big.hsnap" /dev/null >"$TMP/tty.out" </dev/null ||
		die "summary under a terminal"
	grep -q "reading $TMP/big.hsnap: *[0-9]*%" "$TMP/tty.out" || { cat -v "$TMP/tty.out" | head -5; die "no progress on a terminal"; }
	"$A" summary --no-symbolize -o "$TMP/big2.txt" "$TMP/big.hsnap" 2>"$TMP/notty.err" || die "summary"
	[ ! -s "$TMP/notty.err" ] || { cat "$TMP/notty.err"; die "progress printed to a non-terminal"; }
	cmp -s "$TMP/big.txt" "$TMP/big2.txt" || die "output differs with a terminal"
}

# --pid and --comm narrow every report to processes: alloc_c and its fork child (its
# child_work's 15000 bytes are the child's alone, leak_malloc's 10000 the parent's).
t_analyzer_pid_filter() {
	need_go
	local parent child p
	"$R" --via preload -o "$TMP/pf.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/pf.err" || { cat "$TMP/pf.err"; die "recording"; }
	"$A" summary "$TMP/pf.hsnap" >"$TMP/pf.sum"
	parent=$(awk '/^process/ { print $2; exit }' "$TMP/pf.sum")
	child=$(awk -v p="$parent" '/^process/ && $5 == p ":" { print $2 }' "$TMP/pf.sum")
	[ -n "$parent" ] && [ -n "$child" ] || { cat "$TMP/pf.sum"; die "no parent and fork child in the summary"; }
	"$A" pprof --pid "$child" -o "$TMP/pfc.pb.gz" "$TMP/pf.hsnap" || die "pprof --pid child"
	eq "--pid child: child_work" 15000 "$(pv "$TMP/pfc.pb.gz" inuse_space child_work)"
	eq "--pid child: leak_malloc" absent "$(pv "$TMP/pfc.pb.gz" inuse_space leak_malloc)"
	"$A" pprof --pid "$parent" -o "$TMP/pfp.pb.gz" "$TMP/pf.hsnap" || die "pprof --pid parent"
	eq "--pid parent: leak_malloc" 10000 "$(pv "$TMP/pfp.pb.gz" inuse_space leak_malloc)"
	eq "--pid parent: child_work" absent "$(pv "$TMP/pfp.pb.gz" inuse_space child_work)"
	"$A" pprof --pid "$parent" --pid "$child" -o "$TMP/pfb.pb.gz" "$TMP/pf.hsnap" || die "pprof, both pids"
	eq "both pids: child_work" 15000 "$(pv "$TMP/pfb.pb.gz" inuse_space child_work)"
	eq "both pids: leak_malloc" 10000 "$(pv "$TMP/pfb.pb.gz" inuse_space leak_malloc)"
	"$A" summary --json --pid "$child" "$TMP/pf.hsnap" >"$TMP/pf.json"
	eq "--pid: one process in the summary" 1 "$(grep -o '"pid":' "$TMP/pf.json" | wc -l)"
	"$A" top --comm alloc_c "$TMP/pf.hsnap" | grep -q "^ *15000 .*child_work$" || die "--comm alloc_c"
	"$A" top --comm nosuch "$TMP/pf.hsnap" 2>/dev/null | grep -q child_work && die "--comm nosuch selected something"
	"$A" top --pid 0 "$TMP/pf.hsnap" 2>"$TMP/e"; eq "--pid 0 exit" 2 $?
	contains "$TMP/e" "invalid --pid '0'"
	return 0
}

# timeline: its series' maximum is summary's peak, exactly; at most 1024 points however many
# events (alloc_c bulk: 420k); times in order; snapshots and the peak beside the points.
t_analyzer_timeline() {
	local f
	"$R" --via preload --snapshot-at-peak -o "$TMP/tl.hsnap" -- "$T/demo" >/dev/null 2>"$TMP/tl.err" || { cat "$TMP/tl.err"; die "demo"; }
	"$R" --via preload -o "$TMP/tb.hsnap" -- "$T/alloc_c" bulk >/dev/null 2>"$TMP/tl.err" || { cat "$TMP/tl.err"; die "bulk"; }
	for f in tl tb; do
		"$A" timeline --json "$TMP/$f.hsnap" >"$TMP/$f.json" || die "timeline --json $f"
		"$A" summary --json "$TMP/$f.hsnap" >"$TMP/$f.sum" || die "summary $f"
		python3 - "$TMP/$f.json" "$TMP/$f.sum" <<-'PY' || die "timeline of $f"
		import json, sys
		tl, sm = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
		pts = tl["points"]
		peak = max(p["peak_bytes"] for p in sm["processes"]) if len(sm["processes"]) == 1 else None
		top = max(p["live_bytes"] for p in pts)
		assert 0 < len(pts) <= 1024, len(pts)
		assert all(set(p) == {"time", "live_bytes", "live_blocks", "rss_bytes"} for p in pts)
		assert all(a["time"] <= b["time"] for a, b in zip(pts, pts[1:])), "times out of order"
		assert top == tl["peak"]["live_bytes"], (top, tl["peak"])
		assert peak is None or top == peak, (top, peak)
		assert tl["snapshots"], "no snapshots listed"
		print(sys.argv[1], len(pts), "points, max", top)
		PY
	done
	"$A" timeline --peak "$TMP/tl.hsnap" 2>"$TMP/e"; eq "timeline --peak exit" 2 $?
}

# speedscope's file format: alloc_c's known figures, exactly, as the weights of the samples
# whose stacks hold each function, in-use and allocated, bytes and objects.
t_analyzer_speedscope() {
	"$R" --via preload -o "$TMP/ss.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/ss.err" || { cat "$TMP/ss.err"; die "recording"; }
	"$A" speedscope -o "$TMP/ss.json" "$TMP/ss.hsnap" 2>/dev/null || die "speedscope"
	python3 - "$TMP/ss.json" <<-'PY' || die "speedscope output"
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
	frames = [f["name"] for f in d["shared"]["frames"]]
	profiles = {p["name"]: p for p in d["profiles"]}
	assert set(profiles) == {"inuse_space", "inuse_objects", "alloc_space", "alloc_objects"}, set(profiles)
	want = {"inuse_space": {"leak_malloc": 10000, "child_work": 15000, "thread_work": 20000, "make_calloc": 4000},
	        "inuse_objects": {"leak_malloc": 10, "child_work": 5, "thread_work": 100}}
	for name, p in profiles.items():
	    assert p["type"] == "sampled" and len(p["samples"]) == len(p["weights"])
	    assert all(0 <= i < len(frames) for s in p["samples"] for i in s)
	    assert sum(p["weights"]) == p["endValue"], (name, sum(p["weights"]), p["endValue"])
	    for fn, v in want.get(name, {}).items():
	        got = sum(w for s, w in zip(p["samples"], p["weights"]) if fn in {frames[i] for i in s})
	        assert got == v, (name, fn, got, v)
	    # Root first: every in-use stack of the main thread starts at _start.
	    assert any(frames[s[0]] == "_start" for s in p["samples"] if s)
	print("ok")
	PY
	# speedscope itself opens it (npm's speedscope, as its command line does), and its own
	# totals of the profiles are alloc_c's (live blocks at exit from summary).
	local app=${HEAPSNAP_NPM_PREFIX:-$HOME/.cache/heapsnap/npm}/node_modules/speedscope/dist/release
	command -v chromium >/dev/null || skip "chromium is not installed (scripts/install-deps.sh installs it)"
	[ -f "$app/index.html" ] || skip "speedscope is not installed in $app (scripts/install-deps.sh installs it from npm)"
	"$A" summary --json "$TMP/ss.hsnap" >"$TMP/ss.sum" 2>/dev/null || die "summary"
	mkdir -p "$OUT/tests/screenshots"
	python3 tests/htmlcheck.py speedscope "$app" "$TMP/ss.json" "$OUT/tests/screenshots/speedscope.png" >"$TMP/ss.seen" ||
		die "speedscope in chromium"
	python3 - "$TMP/ss.seen" "$TMP/ss.sum" <<-'PY' || die "what speedscope showed (screenshot: $OUT/tests/screenshots/speedscope.png)"
	import json, sys
	seen, sm = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
	live = sum(p["live_count"] for p in sm["processes"])
	allocs = sum(p["allocated_count"] for p in sm["processes"])
	assert seen["title"].strip().endswith("- speedscope"), seen["title"]
	assert "inuse_space (1/4)" in seen["text"], seen["text"]
	for want in ("inuse_objects %d" % live, "alloc_objects %d" % allocs):
	    assert want in seen["text"], (want, seen["text"])
	assert seen["ink_pixels"] > 20000, seen["ink_pixels"]
	print(seen["text"])
	PY
}

# temporary: alloc_c's churn_malloc frees each of its 100 blocks of 64 before allocating the
# next (all temporary), leak_malloc frees none; bulk's bulk_churn does so 200000 times.
# The HTML report, loaded in headless Chromium: what its script drew is read back from the DOM
# and the screenshot's pixels. alloc_c's exact in-use bytes per function in the flame graph;
# phases' heap at the peak and at the end, and what grew between them, each known from its
# source alone; the chart drawn; nothing fetched from elsewhere; small however long.
t_analyzer_html() {
	command -v chromium >/dev/null || skip "chromium is not installed (scripts/install-deps.sh installs it)"
	local shots=$OUT/tests/screenshots
	mkdir -p "$shots"
	"$R" --via preload -o "$TMP/h1.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "alloc_c"; }
	"$R" --via preload -o "$TMP/h2.hsnap" -- "$T/phases" >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "phases"; }
	"$A" html -o "$TMP/h1.html" "$TMP/h1.hsnap" 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "html alloc_c"; }
	"$A" html -o "$TMP/h2.html" "$TMP/h2.hsnap" 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "html phases"; }
	! grep -qiE '(src|href)=|url\(|@import' "$TMP/h1.html" || die "the report refers to something outside itself"
	python3 tests/htmlcheck.py dom "$TMP/h1.html" "" >"$TMP/d1.json" || die "chromium on alloc_c's report"
	"$A" timeline --json "$TMP/h1.hsnap" >"$TMP/tl1.json" 2>/dev/null || die "timeline"
	python3 tests/htmlcheck.py dom "$TMP/h2.html" "moment=peak" >"$TMP/d2.json" || die "chromium: peak"
	python3 tests/htmlcheck.py dom "$TMP/h2.html" "moment=end" >"$TMP/d3.json" || die "chromium: end"
	python3 tests/htmlcheck.py dom "$TMP/h2.html" "range=peak,end" >"$TMP/d4.json" || die "chromium: range"
	python3 tests/htmlcheck.py dom "$TMP/h2.html" "range=peak,end&value=alloc_space" >"$TMP/d5.json" || die "chromium: alloc range"
	"$R" --via preload -o "$TMP/h6.hsnap" -- "$T/recurse" >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "recurse"; }
	"$A" html -o "$TMP/h6.html" "$TMP/h6.hsnap" 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "html recurse"; }
	python3 tests/htmlcheck.py dom "$TMP/h6.html" "" >"$TMP/d6r.json" || die "chromium: recurse"
	python3 - "$TMP" <<-'PY' || die "what rendered"
	import json, sys
	d = [json.load(open("%s/d%d.json" % (sys.argv[1], i))) for i in range(1, 6)]
	for x in d:
	    assert x["rendered"], "the page's script did not finish"
	v = d[0]["values"]
	want = {"leak_malloc": 10000, "make_calloc": 4000, "thread_work": 20000, "child_work": 15000, "plugin_alloc": 12288}
	for fn, b in want.items():
	    assert v.get(fn) == b, (fn, v.get(fn), b)
	assert "leak_malloc" in d[0]["table_functions"], d[0]["table_functions"][:10]
	# The chart drew every point of the timeline's series.
	tl = json.load(open("%s/tl1.json" % sys.argv[1]))["points"]
	assert d[0]["points"] == len(tl) > 0, (d[0]["points"], len(tl))
	peak, end, grew, alloc = (x["values"] for x in d[1:])
	assert peak.get("phase_one") == 3000000 and "phase_two" not in peak, peak
	assert end.get("phase_two") == 1000000 and "phase_one" not in end, end
	assert grew.get("phase_two") == 1000000 and "phase_one" not in grew, grew
	assert alloc.get("phase_two") == 1000000 and "phase_one" not in alloc, alloc
	assert "(peak)" in d[1]["caption"] and "Grew from" in d[3]["caption"], (d[1]["caption"], d[3]["caption"])
	# The functions table follows the view: [flat, cum] at the end, the peak, over a range.
	view = [x["view"] for x in d]
	for fn, b in want.items():
	    assert view[0].get(fn) == [b, b], (fn, view[0].get(fn), b)
	assert view[1].get("phase_one") == [3000000, 3000000] and "phase_two" not in view[1], view[1]
	assert view[2].get("phase_two") == [1000000, 1000000] and "phase_one" not in view[2], view[2]
	for g in view[3:]:
	    assert g.get("phase_two") == [1000000, 1000000] and "phase_one" not in g, g
	# Recursion counts once in cum: nest keeps 6000 bytes over three levels of itself.
	r = json.load(open("%s/d6r.json" % sys.argv[1]))["view"]
	assert r.get("nest") == [6000, 6000] and r.get("outer") == [0, 6000], r
	print("alloc_c", {k: v[k] for k in want}, "| phases peak", peak["phase_one"], "end", end["phase_two"])
	PY
	# The pictures: a filled chart and a flame graph, in pixels (kept for people to look at).
	python3 tests/htmlcheck.py shot "$TMP/h1.html" "" "$shots/alloc_c.png" >"$TMP/s1.json" || die "screenshot"
	python3 tests/htmlcheck.py shot "$TMP/h2.html" "range=peak,end" "$shots/phases-range.png" >"$TMP/s2.json" || die "screenshot"
	python3 - "$TMP/s1.json" "$TMP/s2.json" <<-'PY' || die "the screenshots show no chart or flame graph (in $shots)"
	import json, sys
	for f in sys.argv[1:]:
	    s = json.load(open(f))
	    assert s["live_pixels"] > 5000 and s["flame_pixels"] > 5000, (f, s)
	    print(f, s)
	PY
	# Small however long: 420k events and 200k temporary blocks.
	"$R" --via preload -o "$TMP/h3.hsnap" -- "$T/alloc_c" bulk >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "bulk"; }
	"$A" html -o "$TMP/h3.html" "$TMP/h3.hsnap" 2>"$TMP/h.err" || { cat "$TMP/h.err"; die "html bulk"; }
	[ "$(stat -c %s "$TMP/h3.html")" -lt 3000000 ] || die "bulk report is $(stat -c %s "$TMP/h3.html") bytes"
	# 20000 stacks in a tree of 40000 call paths: 2500 kept, the rest folded into their callers,
	# every byte still counted (20000 blocks of 100 + i % 7 bytes).
	"$OUT/tests/craft" manystacks "$TMP/h5.hsnap" 20000 || die "craft manystacks"
	"$A" html -o "$TMP/h5.html" "$TMP/h5.hsnap" 2>/dev/null || die "html of many stacks"
	python3 tests/htmlcheck.py dom "$TMP/h5.html" "" >"$TMP/d7.json" || die "chromium on many stacks"
	python3 - "$TMP/d7.json" "$TMP/h5.html" <<-'PY' || die "folding"
	import json, re, sys
	d, page = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
	data = json.loads(re.search(r'<script id=data type="application/json">(.*?)</script>', page, re.S).group(1))
	assert d["values"]["all"] == sum(100 + i % 7 for i in range(20000)), d["values"]["all"]
	assert len(data["names"]) == 2500 and data["folded_nodes"] > 30000, (len(data["names"]), data["folded_nodes"])
	assert len(page) < 3000000, len(page)
	print("kept", len(data["names"]), "folded", data["folded_nodes"], "page", len(page))
	PY
	# A recording's strings cannot end the page's elements or its script: names, the command, a
	# snapshot label, each "</script><img onerror=...>", show as text and run nothing.
	"$OUT/tests/craft" html "$TMP/h4.hsnap" || die "craft html"
	"$A" html -o "$TMP/h4.html" "$TMP/h4.hsnap" 2>/dev/null || die "html of the crafted file"
	python3 tests/htmlcheck.py dom "$TMP/h4.html" "" >"$TMP/d6.json" || die "chromium on the crafted report"
	python3 - "$TMP/d6.json" "$TMP/h4.html" <<-'PY' || die "crafted strings"
	import json, sys
	d, page = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
	assert d["rendered"], "the page's script did not run to its end"
	assert set(d["body"]) == {"data-rendered"}, d["body"]
	assert "<img" not in page.replace("&lt;img", ""), "a raw tag from the recording"
	assert any("</script><img" in n for n in d["values"]), list(d["values"])
	PY
	"$A" html "$TMP/h1.hsnap" --peak 2>"$TMP/e"; eq "html --peak exit" 2 $?
}

# Diffs across two builds of one program (tests/workloads/growth.c): the new build moves every
# line and grows grow_here by exactly 200000 bytes; nothing else changes.
t_analyzer_diff_builds() {
	local pid rc
	# Each build in its own tree, as two checkouts would have them.
	mkdir -p "$TMP/b1" "$TMP/b2"
	cp "$T/growth_old" "$TMP/b1/growth"
	cp "$T/growth_new" "$TMP/b2/growth"
	"$R" --via preload -o "$TMP/old.hsnap" -- "$TMP/b1/growth" 1 1 >/dev/null 2>"$TMP/g.err" || { cat "$TMP/g.err"; die "old"; }
	"$R" --via preload -o "$TMP/new.hsnap" -- "$TMP/b2/growth" 1 3 >/dev/null 2>"$TMP/g.err" || { cat "$TMP/g.err"; die "new"; }
	"$A" diff --json -n 0 "$TMP/old.hsnap" "$TMP/new.hsnap" >"$TMP/d.json" 2>/dev/null || die "diff"
	"$A" diff --json -n 0 --lines "$TMP/old.hsnap" "$TMP/new.hsnap" >"$TMP/dl.json" 2>/dev/null || die "diff --lines"
	python3 - "$TMP/d.json" "$TMP/dl.json" <<-'PY' || die "stacks across builds"
	import json, sys
	d, dl = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
	assert d["delta"] == 200000, d["delta"]
	assert [(f["name"], f["delta"]) for f in d["functions"]] == [("grow_here", 200000)], d["functions"]
	# Only what grew: one stack, grow_here's, shown with the new build's lines (moved by 60).
	st = d["stacks"]
	assert len(st) == 1 and st[0]["delta"] == 200000 and st[0]["name"].startswith("grow_here (growth.c:"), st
	assert "stable_here" not in json.dumps(st), st
	old_line = int(dl["stacks"][-1]["name"].split(":")[1].split(")")[0])
	new_line = int(st[0]["name"].split(":")[1].split(")")[0])
	# --lines keys by file:line: every stack of the moved build is new, each old one gone.
	names = sorted((s["name"].split(" ")[0], s["delta"]) for s in dl["stacks"])
	assert names == [("grow_here", -100000), ("grow_here", 300000), ("stable_here", -500000), ("stable_here", 500000)], names
	print("stacks:", st[0]["name"][:60], "| --lines:", names)
	PY
	# Processes match across recordings by command and executable, not by pid.
	pid=$("$A" info --json "$TMP/old.hsnap" | python3 -c 'import json,sys; print(json.load(sys.stdin)["processes"][0]["pid"])')
	"$A" diff --json --pid "$pid" "$TMP/old.hsnap" "$TMP/new.hsnap" >"$TMP/dp.json" 2>/dev/null || die "diff --pid"
	eq "diff --pid: growth" 200000 "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["delta"])' "$TMP/dp.json")"
	"$A" diff --pid "$pid" "$TMP/old.hsnap" testdata/alloc_c.hsnap >/dev/null 2>"$TMP/e"; eq "diff --pid, no match: exit" 4 $?
	contains "$TMP/e" "has no process with the command and executable name of --pid's in"
	# The gate: exit 5 past the limit, with one line naming the growth and grow_here; 0 within.
	"$A" diff --max-growth 199999 "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>"$TMP/e"; rc=$?
	eq "growth 200000 over 199999: exit" 5 $rc
	grep -q "grew by +200000 .*over the limit of 199999; grew most: grow_here +200000" "$TMP/e" || { cat "$TMP/e"; die "gate line"; }
	"$A" diff --max-growth 200000 "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "growth 200000 within 200000: exit" 0 $?
	"$A" diff --max-growth 190k "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "over 190k (194560): exit" 5 $?
	"$A" diff --max-growth 200k "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "within 200k (204800): exit" 0 $?
	# 200000 of 600000 is 33.3%.
	"$A" diff --max-growth 33% "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "over 33%: exit" 5 $?
	"$A" diff --max-growth 34% "$TMP/old.hsnap" "$TMP/new.hsnap" >/dev/null 2>&1; eq "within 34%: exit" 0 $?
	"$A" diff --json --max-growth 33% "$TMP/old.hsnap" "$TMP/new.hsnap" >"$TMP/dg.json" 2>/dev/null
	python3 -c 'import json,sys; g = json.load(open(sys.argv[1]))["gate"]; assert g["exceeded"] and g["limit"] == 198000, g' \
		"$TMP/dg.json" || die "the verdict in --json"
	"$A" diff --max-growth 5parsecs "$TMP/old.hsnap" "$TMP/new.hsnap" 2>"$TMP/e"; eq "bad amount: exit" 2 $?
	contains "$TMP/e" "invalid --max-growth '5parsecs'"
	"$A" top --max-growth 5% "$TMP/old.hsnap" 2>/dev/null; eq "--max-growth on top: exit" 2 $?
}

# Sampled recordings: the standard error each estimate carries against the spread of 40
# recordings of one run, and the gate's 95% confidence: identical runs pass a 1% gate, a
# growth of 200% (tests/workloads/growth.c with GROW 13) fails it. 120 MB a run at a 4 KiB
# mean: a pair's growth has a standard error of about 0.8% of the total, so a correct gate
# fails two pairs of 20 about once in 2000 runs (at 60 MB, once in 200).
t_analyzer_gate_sampled() {
	local i pass=0
	for i in $(seq 1 40); do
		"$R" --via preload -s 4096 -o "$TMP/s$i.hsnap" -- "$T/growth_old" 200 1 >/dev/null 2>"$TMP/g.err" ||
			{ cat "$TMP/g.err"; die "sampled recording $i"; }
		"$A" top --json -n 0 "$TMP/s$i.hsnap" >"$TMP/s$i.json" 2>/dev/null || die "top $i"
	done
	python3 - "$TMP" <<-'PY' || die "standard errors against the spread of recordings"
	import json, statistics, sys
	for fn in ("grow_here", "stable_here"):
	    est, se = [], []
	    for i in range(1, 41):
	        f = {x["name"]: x for x in json.load(open("%s/s%d.json" % (sys.argv[1], i)))["functions"]}[fn]
	        est.append(f["flat"]); se.append(f["flat_se"])
	    ratio = statistics.stdev(est) / statistics.mean(se)
	    print(fn, "mean", round(statistics.mean(est)), "spread", round(statistics.stdev(est)),
	          "stated se", round(statistics.mean(se)), "ratio %.2f" % ratio)
	    assert 1 / 1.5 <= ratio <= 1.5, ratio
	PY
	for i in $(seq 1 2 39); do
		"$A" diff --max-growth 1% "$TMP/s$i.hsnap" "$TMP/s$((i + 1)).hsnap" >/dev/null 2>>"$TMP/gate.log" && pass=$((pass + 1))
	done
	echo "identical runs passing a 1% gate: $pass of 20"
	[ $pass -ge 19 ] || { cat "$TMP/gate.log"; die "only $pass of 20 pairs of identical runs pass a 1% gate"; }
	"$R" --via preload -s 4096 -o "$TMP/big.hsnap" -- "$T/growth_new" 200 13 >/dev/null 2>&1 || die "grown recording"
	"$A" diff --max-growth 1% "$TMP/s1.hsnap" "$TMP/big.hsnap" >/dev/null 2>"$TMP/e"
	eq "a 200% growth against a 1% gate: exit" 5 $?
	contains "$TMP/e" "grew most: grow_here"
}

t_analyzer_temporary() {
	"$R" --via preload -o "$TMP/tp.hsnap" -- "$T/alloc_c" >/dev/null 2>"$TMP/tp.err" || { cat "$TMP/tp.err"; die "recording"; }
	"$A" temporary -n 0 "$TMP/tp.hsnap" >"$TMP/tp.txt" 2>/dev/null || die "temporary"
	grep -qE '^ +100 +6400 +100\.0%  churn_malloc$' "$TMP/tp.txt" || { cat "$TMP/tp.txt"; die "churn_malloc: 100 temporary, 6400 bytes"; }
	grep -q "leak_malloc" "$TMP/tp.txt" && die "leak_malloc has no temporary allocation"
	"$R" --via preload -o "$TMP/tpb.hsnap" -- "$T/alloc_c" bulk >/dev/null 2>"$TMP/tp.err" || { cat "$TMP/tp.err"; die "bulk"; }
	"$A" temporary --json "$TMP/tpb.hsnap" >"$TMP/tpb.json" 2>/dev/null || die "temporary --json"
	python3 - "$TMP/tpb.json" <<-'PY' || die "bulk temporary"
	import json, sys
	d = json.load(open(sys.argv[1]))
	f = {x["function"]: x for x in d["functions"]}
	assert f["bulk_churn"]["temporary"] == 200000 and f["bulk_churn"]["temporary_bytes"] == 20000000, f.get("bulk_churn")
	assert f["bulk_churn"]["allocations"] == 200000
	assert "bulk_keep" not in f, f.get("bulk_keep")
	PY
}

# A stripped binary: its frames have no symbols, and every location still gets a function,
# named module+0xOFFSET as the text reports name it (viewers drop locations without one).
t_pprof_unsymbolized() {
	need_go
	cp "$T/libplugin.so" "$TMP/" # alloc_c dlopens it from its own directory
	cp "$T/alloc_c" "$TMP/alloc_stripped" && strip --strip-all "$TMP/alloc_stripped" || skip "no strip (binutils)"
	"$R" --via preload -o "$TMP/str.hsnap" -- "$TMP/alloc_stripped" >/dev/null 2>"$TMP/str.err" ||
		{ cat "$TMP/str.err"; die "recording a stripped binary"; }
	"$A" pprof -o "$TMP/str.pb.gz" "$TMP/str.hsnap" 2>/dev/null || die "pprof"
	go tool pprof -raw "$TMP/str.pb.gz" >"$TMP/str.raw" 2>/dev/null || die "go tool pprof -raw"
	sed -n '/^Locations/,/^Mappings/p' "$TMP/str.raw" >"$TMP/str.locs"
	grep -qE '^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ alloc_stripped\+0x[0-9a-f]+ ' "$TMP/str.locs" ||
		{ head -20 "$TMP/str.locs"; die "no module+0xOFFSET function for the stripped binary's frames"; }
	grep -E '^ +[0-9]+: 0x[0-9a-f]+( M=[0-9]+)? *$' "$TMP/str.locs" &&
		die "locations without a function"
	return 0
}

# Losses are said wherever figures are shown, and only events that were lost are called so.
t_losses() {
	local sub
	"$T/craft" lost "$TMP/lost.hsnap" || die "craft lost"
	for sub in top summary leaks; do
		"$A" $sub --no-symbolize "$TMP/lost.hsnap" >"$TMP/l.out" 2>"$TMP/l.err" || die "$sub"
		contains "$TMP/l.out" "Lost: 400 events while recording (lost.ringbuf_full 400)"
		contains "$TMP/l.err" "400 events were lost while recording"
		grep -q "Sampling: every allocation$" "$TMP/l.out" && die "$sub says every allocation of a lossy file"
	done
	"$A" summary --json --no-symbolize "$TMP/lost.hsnap" 2>/dev/null | grep -q '"lost_events":400' || die "JSON lost_events"
	"$A" pprof --no-symbolize -o "$TMP/l.pb.gz" "$TMP/lost.hsnap" 2>/dev/null
	if [ -n "$GO" ]; then
		go tool pprof -raw "$TMP/l.pb.gz" 2>/dev/null | grep -q "lost: 400 events" || die "pprof comment"
	fi
	"$A" top testdata/alloc_c.hsnap 2>&1 | grep -q "Lost:\|were lost" && die "a file with no loss reports one"
	need_bpf
	# A frame-pointer walk that stops early (Debian's python3 has no frame pointers) is no loss.
	PYTHONMALLOC=malloc record --stats -o "$TMP/py.hsnap" -- /usr/bin/python3 -c 'x = [str(i) for i in range(20000)]' ||
		die "python3 recording"
	grep -q "events lost" "$TMP/record.err" && { cat "$TMP/record.err"; die "the recorder called stopped walks lost events"; }
	"$A" stats --json "$TMP/py.hsnap" >"$TMP/py.json"
	contains "$TMP/py.json" '"stacks.fp_walk_stopped":'
	grep -q '"lost.stack_error"' "$TMP/py.json" && die "lost.stack_error is no longer a loss"
	true
}

# ---- out-of-order times, bounded structures, counters that agree (issue 23) ----

# Event times that go back and forth (two threads' runs of 4, every other run 35-43 us behind,
# as rings of several CPUs give them; tests/unit/craft.c's outoforder): every subcommand,
# under ASan, gives the figures the file was made with. Today's timeline wrote past its 1,024
# points here (heap-buffer-overflow; html the same way).
t_analyzer_out_of_order() {
	local SA=$OUT/asan/heapsnap-analyze f=$TMP/ooo.hsnap g=$TMP/ooo2.hsnap sub
	[ -x "$SA" ] || die "no sanitizer build"
	export ASAN_OPTIONS=abort_on_error=0:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:exitcode=99
	"$T/craft" outoforder "$f" 20000 || die "craft outoforder"
	"$T/craft" outoforder "$g" 24000 || die "craft outoforder 24000"
	for sub in "timeline --json" "html" "speedscope" "temporary --json" "summary --json" "top --json -n 0" "leaks" \
		"stats" "info" "collapsed" "pprof"; do
		"$SA" $sub --no-symbolize -o "$TMP/ooo.${sub%% *}" "$f" 2>"$TMP/ooo.err" ||
			{ cat "$TMP/ooo.err"; die "$sub on out-of-order times"; }
	done
	"$SA" diff --json --no-symbolize "$f" "$g" >"$TMP/ooo.diff" 2>"$TMP/ooo.err" || { cat "$TMP/ooo.err"; die "diff"; }
	python3 - "$TMP"/ooo.timeline "$TMP"/ooo.summary "$TMP"/ooo.top "$TMP"/ooo.diff "$TMP"/ooo.temporary <<-'PY' || die "figures"
	import json, sys
	tl, sm, top, diff, tmp = (json.load(open(p)) for p in sys.argv[1:6])
	pts = tl["points"]
	(p,) = sm["processes"]
	# 20000 blocks of 100 bytes, then the first 10000 freed; the last allocation at tick
	# 1000 + 10 * 19999 - (35 + 19999 % 9) (its run, 4999, is behind).
	assert 0 < len(pts) <= 1024, len(pts)
	assert all(a["time"] <= b["time"] for a, b in zip(pts, pts[1:])), "points out of order"
	assert max(q["live_bytes"] for q in pts) == 2000000 == tl["peak"]["live_bytes"], (max(q["live_bytes"] for q in pts), tl["peak"])
	assert abs(tl["peak"]["time"] - (1000 + 10 * 19999 - 35 - 19999 % 9) / 1e6) < 1e-6, tl["peak"]
	assert (p["allocated_bytes"], p["freed_bytes"], p["live_bytes"], p["peak_bytes"]) == (2000000, 1000000, 1000000, 2000000), p
	assert (p["allocated_count"], p["freed_count"], p["live_count"]) == (20000, 10000, 10000), p
	assert {f["name"]: f["flat"] for f in top["functions"]} == {"ooo+0x100": 500000, "ooo+0x200": 500000}, top["functions"]
	assert diff["delta"] == 200000 and diff["from"]["total"] == 1000000 and diff["to"]["total"] == 1200000, diff
	print(len(pts), "points; peak", tl["peak"], "; temporary", tmp.get("temporary"))
	PY
	# At the peak all 20000 are live.
	"$SA" top --json --peak --no-symbolize "$f" >"$TMP/ooo.peak" 2>"$TMP/ooo.err" || { cat "$TMP/ooo.err"; die "top --peak"; }
	contains "$TMP/ooo.peak" '"total":2000000'
}

# An allocation into a slot still live (its block's free not read before it) frees the old
# block by implication, counted, so that allocated - freed = live (tests/unit/craft.c's reused:
# 1050 allocated, 600 freed of which 300 implied, 450 live); stats says what the counters
# say (craft's reused, sampled, sampledbpf); --at inside the recording is no "past the end".
t_analyzer_counters_agree() {
	local f=$TMP/re.hsnap
	"$T/craft" reused "$f" && "$T/craft" sampled "$TMP/sa.hsnap" && "$T/craft" sampledbpf "$TMP/sb.hsnap" || die "craft"
	"$A" summary --json "$f" >"$TMP/re.json" 2>/dev/null || die "summary"
	python3 - "$TMP/re.json" <<-'PY' || die "summary of blocks allocated into live slots"
	import json, sys
	(p,) = json.load(open(sys.argv[1]))["processes"]
	got = tuple(p[k] for k in ("allocated_bytes", "allocated_count", "freed_bytes", "freed_count", "implied_freed_bytes",
	                           "implied_freed_count", "live_bytes", "live_count", "peak_bytes"))
	assert got == (1050, 5, 600, 3, 300, 2, 450, 2, 500), got
	assert p["allocated_bytes"] - p["freed_bytes"] == p["live_bytes"]
	PY
	"$A" summary "$f" 2>/dev/null | grep -q "^    of which *300 bytes in *2 blocks implied" || die "summary's implied frees"
	"$A" stats "$f" >"$TMP/re.st" || die "stats"
	contains "$TMP/re.st" "Events: 6 (5 allocations, 1 frees, 0 restored by a failed realloc, 0 frees of no live block)"
	contains "$TMP/re.st" "Implied frees: 2 blocks"
	contains "$TMP/re.st" "Frees of unknown pointers: 7 (7 counted by the recorder and not written (frees.unknown)"
	! grep -q "Live map" "$TMP/re.st" || die "an every-event recording uses no live map"
	"$A" stats "$TMP/sa.hsnap" >"$TMP/sa.st" || die "stats sampled"
	contains "$TMP/sa.st" "2 allocations sampled (the recorder did not count allocation calls); 2 in the file"
	contains "$TMP/sa.st" "Frees of unknown pointers: 5 (5 counted"
	! grep -q "of 0 \|Live map" "$TMP/sa.st" || die "in-process: no calls counted, no kernel map"
	"$A" stats "$TMP/sb.hsnap" >"$TMP/sb.st" || die "stats sampledbpf"
	contains "$TMP/sb.st" "2 allocations sampled of 40 allocation calls (5.000%)"
	contains "$TMP/sb.st" "Live map: at most 2 sampled blocks live at once, of 65536 entries"
	for g in re sa sb; do
		"$A" stats --json "$TMP/$g.hsnap" | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["events"] == s["allocs"] + s["frees"] + s["restored"] + s["unknown_frees"], s' || die "stats --json of $g"
	done
	# A real one: a free the in-process recorder does not see (tests/workloads/unseen_free.c),
	# its address allocated again. The recorder's "live at the end" is the analyzer's live.
	"$R" --via preload -o "$TMP/us.hsnap" -- "$T/unseen_free" >/dev/null 2>"$TMP/us.err" || { cat "$TMP/us.err"; die "unseen_free"; }
	contains "$TMP/us.err" "live at the end: 3000 bytes"
	"$A" summary --json "$TMP/us.hsnap" >"$TMP/us.json" 2>/dev/null || die "summary unseen_free"
	contains "$TMP/us.json" '"allocated_bytes":5000,"allocated_count":3,"freed_bytes":2000,"freed_count":2,"implied_freed_bytes":1000,"implied_freed_count":1,"live_bytes":3000,"live_count":1'
	# --at inside a 0.301 s recording (outoforder 20000: 9904 blocks at or before 0.1 s).
	"$T/craft" outoforder "$TMP/at.hsnap" 20000 || die "craft outoforder"
	"$A" summary --at 0.1 --json "$TMP/at.hsnap" >"$TMP/at.json" 2>"$TMP/at.err" || { cat "$TMP/at.err"; die "--at 0.1"; }
	contains "$TMP/at.json" '"live_bytes":990400,"live_count":9904'
	"$A" summary --at 1 "$TMP/at.hsnap" >/dev/null 2>"$TMP/at.err"; eq "--at past the end exit" 4 $?
	contains "$TMP/at.err" "--at 1s is past the end of the recording (0.301s)"
	# Seconds no tick count holds are refused, not converted (a double past 2^64 has no integer).
	for sub in nan inf 1e300; do
		"$A" summary --at $sub "$TMP/at.hsnap" >/dev/null 2>"$TMP/at.err"; eq "--at $sub exit" 2 $?
		contains "$TMP/at.err" "invalid --at '$sub'"
	done
}

# ---- a copied stack cut at --max-stack, as a walked one is ----

# recurse keeps 1000 bytes from nest(1), whose stack is 8 frames deep (nest x3, outer, main and
# libc's three); at --max-stack 6 the offline unwinder gave all 8 before.
t_analyzer_dwarf_max_stack() {
	need_bpf
	record --stack dwarf --max-stack 6 -o "$TMP/dms.hsnap" -- "$T/recurse" || die "dwarf recording"
	local line
	line=$("$A" collapsed "$TMP/dms.hsnap" | awk '$NF == 1000')
	[ -n "$line" ] || die "no stack with nest(1)'s 1000 bytes"
	eq "frames of nest(1)'s stack at --max-stack 6" 6 "$(echo "${line% *}" | tr ';' '\n' | wc -l)"
	eq "its innermost three" "nest;nest;nest" "$(echo "${line% *}" | tr ';' '\n' | tail -3 | paste -sd';')"
}

# --snapshot-at-peak on a peak that lasts microseconds (tests/workloads/transient.c): the
# recorder's peak, 5,100,049 bytes, is what `--snapshot peak` shows, though format 3.0 times
# events to the millisecond only (the spike's malloc and free share one); the snapshot showed
# 0 bytes, every event of that millisecond replayed past the peak.
t_analyzer_transient_peak() {
	"$R" -s 0 --snapshot-at-peak -o "$TMP/tp.hsnap" -- "$T/transient" >/dev/null 2>"$TMP/tp.err" || { cat "$TMP/tp.err"; die "recording"; }
	contains "$TMP/tp.err" "peak 5100049 bytes"
	"$A" top -n 0 --snapshot peak "$TMP/tp.hsnap" >"$TMP/tp.top" || die "top --snapshot peak"
	contains "$TMP/tp.top" "accounting for 5100049 of 5100049 total"
	"$A" top -n 0 --peak "$TMP/tp.hsnap" >"$TMP/tp.peak" || die "top --peak"
	contains "$TMP/tp.peak" "accounting for 5100049 of 5100049 total"
}

ALL="$ALL t_golden t_analyzer_usage t_analyzer_progress t_losses t_pprof_unsymbolized t_analyzer_pid_filter"
ALL="$ALL t_analyzer_timeline t_analyzer_speedscope t_analyzer_temporary t_analyzer_html"
ALL="$ALL t_analyzer_diff_builds t_analyzer_gate_sampled t_analyzer_out_of_order t_analyzer_counters_agree"
ALL="$ALL t_analyzer_dwarf_max_stack"
ALL="$ALL t_analyzer_transient_peak"

# A process's blocks stop ageing at its exit, which frees them (tests/workloads/child_exit.c:
# a fork child keeps 5 x 3000 bytes from child_keep and exits 3; its parent runs 100 ms more).
# summary gave them the age of the recording's end (alloc_c's child, gone at 0.016 s: 0.301 s)
# and called them live. In-process, the library sees the child end, not how: its EXIT has no
# status; before 5.1 there was none, and the child never ended (injected postgres backends
# gone by the hundred were all "live at the end").
t_analyzer_exited_ages() {
	need_bpf
	record -s 0 -o "$TMP/ea.hsnap" -- "$T/child_exit" || die "recording"
	"$A" summary --json "$TMP/ea.hsnap" >"$TMP/ea.json" 2>/dev/null || die "summary"
	python3 - "$TMP/ea.json" "$VIA" <<-'PY' || die "the fork child's ages"
	import json, sys
	procs = json.load(open(sys.argv[1]))["processes"]
	pids = {p["pid"] for p in procs}
	child = [p for p in procs if p["ppid"] in pids]
	assert len(child) == 1, "one fork child: %r" % procs
	c = child[0]
	assert c["live_bytes"] == 15000 and c["live_count"] == 5, c
	assert "exit_time" in c, "the child's exit is not in the summary: %r" % c
	if sys.argv[2] == "bpf":
	    assert c.get("exit_status") == 3, "exit status: %r" % c
	else:
	    assert "exit_status" not in c, "an exit status the library cannot know: %r" % c
	# Every block was allocated at oldest_live_time or later, and aged until the exit.
	span = c["exit_time"] - c["oldest_live_time"]
	assert 0 <= c["average_live_age"] <= span + 1e-6, "average age %g, exit %g after the oldest block" % (c["average_live_age"], span)
	PY
	"$A" summary "$TMP/ea.hsnap" | grep -q "^  live at exit  *15000 bytes in  *5 blocks" || die "the child's blocks are not said live at its exit"
}

ALL="$ALL t_analyzer_exited_ages t_analyzer_exited_ages@preload"
