# The record file (format/): the library's unit tests, files of version 1, the schema tables.

t_format_unit() { "$T/test_format" && "$T/test_format3" && "$T/test_stacks5"; }

# Version 1 files (blocks named by address) still read: a fixture recorded by version 1,
# against the outputs version 1 gave for it, with the reader now assigning the slots.
t_format_v1() {
	local f=testdata/v1/alloc_c.hsnap
	golden v1/alloc_c.top top -n 0 --no-symbolize $f
	golden v1/alloc_c.collapsed collapsed --no-symbolize $f
	golden v1/alloc_c.summary summary --no-symbolize $f
	golden v1/alloc_c.leaks leaks -n 5 --no-symbolize $f
	golden v1/alloc_c.summary.json summary --json --no-symbolize $f
	"$A" info $f >"$TMP/v1.info" || die "info of a version 1 file"
	contains "$TMP/v1.info" "Format: 1.0, complete"
	# Re-encoded by today's writer (version 5), it gives the same figures.
	"$T/mutate" $f "$TMP/v1to2.hsnap" 0 || die "re-encode"
	"$A" top -n 0 --no-symbolize "$TMP/v1to2.hsnap" | tail -n +2 >"$TMP/v1to2.top"
	tail -n +2 testdata/v1/alloc_c.top | diff -u - "$TMP/v1to2.top" || die "re-encoded file differs"
	"$A" info "$TMP/v1to2.hsnap" >"$TMP/v2.info" || die "info of the re-encoded file"
	contains "$TMP/v2.info" "Format: 5.3, complete"
}

# The schema tables (format/schema.c):
# The writer's bytes and the reader's records and errors for every record type, random values
# at the edges, and damaged payloads: digests of what the hand-written encode_extended and
# decode_extended gave (commit b13c7fc, tests/unit/schemagen.c built against it), so the
# tables cannot change the file format unseen. File offsets are left out: they depend on the
# zstd library's compression, not on the schema. Both digests are 5.1's: EXIT gained its
# optional flags (0 here, one byte more per EXIT), which moves every byte after it, and so
# what the reader makes of the damaged copies; files written before read as before
# (t_format_v1 to t_format_v4).
t_format_schema() {
	local G seed bad
	G=$(realpath "$T/schemagen") || die "no $T/schemagen"
	cd "$TMP" || die "cd $TMP"
	"$G" check >check.log || { cat check.log; die "schema tables break their rules"; }
	for bad in 5 5000; do
		for seed in $(seq 1 25); do
			"$G" write s.hsnap 600 $seed $bad >>w.log || die "schemagen write $seed $bad"
			"$G" raw s.hsnap >>raw.bin || die "schemagen raw $seed $bad"
			"$G" dump s.hsnap >>read.log || die "schemagen dump $seed $bad"
			"$G" corrupt s.hsnap c.hsnap $seed || die "schemagen corrupt $seed $bad"
			"$G" dump c.hsnap >>read.log || die "schemagen dump of the damaged $seed $bad"
		done
	done
	sed -E 's/offset [0-9]+/offset N/g; s/followed by [0-9]+ bytes/followed by N bytes/g; s/ [0-9]+,([0-9]+,[0-9]+)/ \1/g' \
		read.log >read.norm
	eq "writer's bytes" 8500f6ac0d4059be5f35a28ea61de39f12ee71ee7043d7ca96978bcbbda2b687 \
		"$(cat w.log raw.bin | sha256sum | cut -c1-64)"
	eq "reader's records and errors" 872c0281f49d840b52d5639c1641fa2c457d1e60c3ca3aa5031a1ee12de3eb87 \
		"$(sha256sum <read.norm | cut -c1-64)"
}

# Version 2.1 files read as before, and version 3 keeps what they show:
# testdata/v2 holds a 2.1 recording (heapsnap-record of main at 5bb7e6b, --via preload) and what
# that analyzer printed for it. Re-encoded as version 3 (tests/unit/mutate, seed 0), the figures
# that do not print times stay the same to the byte: blocks, bytes, stacks and which free ended
# which block (temporary); times move to the writer's 1 ms steps, never by a whole step.
t_format_v2() {
	local f=testdata/v2/alloc_c.hsnap n
	golden v2/alloc_c.top top -n 0 --no-symbolize $f
	golden v2/alloc_c.collapsed collapsed --no-symbolize $f
	golden v2/alloc_c.summary summary --no-symbolize $f
	golden v2/alloc_c.leaks leaks -n 5 --no-symbolize $f
	golden v2/alloc_c.summary.json summary --json --no-symbolize $f
	golden v2/alloc_c.timeline timeline --no-symbolize $f
	golden v2/alloc_c.temporary temporary --no-symbolize $f
	golden v2/alloc_c.info info $f
	"$T/mutate" $f "$TMP/v2to3.hsnap" 0 || die "re-encode"
	"$A" info "$TMP/v2to3.hsnap" >"$TMP/v2to3.info" || die "info of the re-encoded file"
	contains "$TMP/v2to3.info" "Format: 5.3, complete"
	for n in top collapsed temporary; do
		local more=()
		[ $n = top ] && more=(-n 0)
		"$A" "$n" "${more[@]}" --no-symbolize "$TMP/v2to3.hsnap" | tail -n +2 >"$TMP/v2to3.$n"
		tail -n +2 "testdata/v2/alloc_c.$n" | diff -u - "$TMP/v2to3.$n" || die "re-encoded $n differs"
	done
	# Peak and oldest times: the 2.1 file's, or at most one step (1 ms) earlier.
	"$A" summary --json --no-symbolize "$TMP/v2to3.hsnap" >"$TMP/v2to3.json" || die "summary of the re-encoded file"
	python3 - testdata/v2/alloc_c.summary.json "$TMP/v2to3.json" <<'PY' || die "re-encoded times"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def walk(x, y, path):
    if isinstance(x, dict):
        assert x.keys() == y.keys(), path
        for k in x:
            if k != "file": walk(x[k], y[k], path + "." + k)
    elif isinstance(x, list):
        assert len(x) == len(y), path
        for i, (p, q) in enumerate(zip(x, y)): walk(p, q, "%s[%d]" % (path, i))
    elif isinstance(x, float) and ("time" in path or "_at" in path or "age" in path or path.endswith("s")):
        assert -0.0011 <= y - x <= 0.0011, (path, x, y)
    else:
        assert x == y, (path, x, y)
walk(a, b, "")
PY
}

# A file of an earlier version (alloc_c re-encoded by that version's writer) reads as the
# analyzer of that version read it: the outputs it wrote, kept in testdata/vV.
golden_version() {
	local v=$1 f=testdata/v$1/alloc_c.hsnap
	golden v$v/alloc_c.top top -n 0 --no-symbolize $f
	golden v$v/alloc_c.collapsed collapsed --no-symbolize $f
	golden v$v/alloc_c.summary.json summary --json --no-symbolize $f
	golden v$v/alloc_c.leaks leaks -n 5 --no-symbolize $f
	golden v$v/alloc_c.temporary temporary --no-symbolize $f
	golden v$v/alloc_c.timeline timeline --no-symbolize $f
	golden v$v/alloc_c.info info $f
	contains testdata/v$v/alloc_c.info "Format: $v.0, complete"
}
# 3.0: written before version 4's frees by class; 4.0: before version 5's stack tails.
t_format_v3() { golden_version 3; }
t_format_v4() { golden_version 4; }

# Damaged version 3 frames (raw bytes changed or cut, recompressed: tests/unit/schemagen's
# corrupt) read by the sanitized reader: never a crash, and the version 3 checks are reached.
t_format_v3_damage() {
	local G seed f reasons
	G=$T/schemagen
	"$T/craft" outoforder "$TMP/d3a.hsnap" 3000 && "$T/craft" reused "$TMP/d3b.hsnap" || die "craft"
	"$T/mutate" testdata/v2/alloc_c.hsnap "$TMP/d3c.hsnap" 0 || die "re-encode"
	: >"$TMP/d3.log"
	for f in d3a d3b d3c; do
		for seed in $(seq 1 120); do
			"$G" corrupt "$TMP/$f.hsnap" "$TMP/d3x.hsnap" $seed || die "schemagen corrupt $f $seed"
			"$G" dump "$TMP/d3x.hsnap" >"$TMP/d3x.out" 2>&1 || { tail -5 "$TMP/d3x.out"; die "reading damaged $f $seed"; }
			grep '^ret' "$TMP/d3x.out" >>"$TMP/d3.log"
		done
	done
	reasons=$(grep -o 'status 3 .*' "$TMP/d3.log" | sed 's/.*record: //' | sort -u | tee "$TMP/d3.reasons" | wc -l)
	cat "$TMP/d3.reasons"
	[ "$reasons" -ge 4 ] || die "only $reasons kinds of damage found"
	grep -q 'COLUMNS\|column\|by age\|pair\|TIME\|slot freed last\|reserved' "$TMP/d3.reasons" || die "no version 3 check reached"
}

ALL="$ALL t_format_unit t_format_v1 t_format_schema t_format_v2 t_format_v3 t_format_v4 t_format_v3_damage"
