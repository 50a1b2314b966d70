# The record file (format/): the library's unit tests, files of version 1, the schema tables.

t_format_unit() { "$T/test_format"; }

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
	# Re-encoded by today's writer, it gives the same figures as version 2.
	"$T/mutate" $f "$TMP/v1to2.hsnap" 0 || die "re-encode"
	"$A" top -n 0 --no-symbolize "$TMP/v1to2.hsnap" | tail -n +2 >"$TMP/v1to2.top"
	tail -n +2 testdata/v1/alloc_c.top | diff -u - "$TMP/v1to2.top" || die "re-encoded file differs"
	"$A" info "$TMP/v1to2.hsnap" >"$TMP/v2.info" || die "info of the re-encoded file"
	contains "$TMP/v2.info" "Format: 2.1, complete"
}

# The schema tables (format/schema.c):
# The writer's bytes and the reader's records and errors for every record type, random values
# at the edges, and damaged payloads: digests of what the hand-written encode_extended and
# decode_extended gave (commit b13c7fc, tests/unit/schemagen.c built against it), so the
# tables cannot change the file format unseen. File offsets are left out: they depend on the
# zstd library's compression, not on the schema.
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
	eq "writer's bytes" 5e46fef87bdd2fd8f48a23d7e45c63aee2b6667d3137a2890e622c6bd1900927 \
		"$(cat w.log raw.bin | sha256sum | cut -c1-64)"
	eq "reader's records and errors" 294a9b360efc5d159aaf24f0ae1417112eb4192577b73e47797fc5c203a3e022 \
		"$(sha256sum <read.norm | cut -c1-64)"
}

ALL="$ALL t_format_unit t_format_v1 t_format_schema"
