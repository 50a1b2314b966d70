#!/usr/bin/env bash
# Runs the libFuzzer targets: first every regression input once (the crafted shapes that
# once cost memory or time, and anything in testdata/fuzz/), then SECONDS of fuzzing per
# target, seeded from testdata/. Memory and time are limited per input, so an input that
# makes the analyzer grow or spin past what its content needs fails the run.
# Usage: scripts/fuzz.sh SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
SECS=${1:-60}
F=$OUT/fuzz
C=$OUT/tests/craft
REG=$F/regress
LIMITS=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=30)

rm -rf "$REG"
mkdir -p "$REG" "$F/corpus-reader" "$F/corpus-replay"
# The crafted shapes of the reliability issue, each past the limits a valid recording has.
"$C" deepstack "$REG/deepstack.hsnap" 20000
"$C" bigwindow "$REG/bigwindow.hsnap" 2000
"$C" counters "$REG/counters.hsnap" 100
"$C" maps "$REG/maps.hsnap" 30000
"$C" escape "$REG/escape.hsnap"
"$C" lost "$REG/lost.hsnap"
"$C" html "$REG/html.hsnap"
"$C" manystacks "$REG/manystacks.hsnap" 3000
"$C" fifo "$REG/fifo-dev-zero.hsnap" 1 /dev/zero
"$C" fifo "$REG/fifo-proc.hsnap" 1 /proc/self/environ
# Times that go back and forth, as rings of several CPUs give them; and two recordings one
# after the other, which fuzz_replay splits into the two files of a diff.
"$C" outoforder "$REG/outoforder.hsnap" 3000
cat testdata/alloc_c.hsnap "$REG/outoforder.hsnap" >"$REG/two-files.hsnap"
# Allocations into live slots (implied frees); sampled recordings' counters, in-process and BPF.
"$C" reused "$REG/reused.hsnap"
"$C" sampled "$REG/sampled.hsnap"
"$C" sampledbpf "$REG/sampledbpf.hsnap"
# Python frames: line tables of random bytes, unrecorded codes, offsets past every table.
"$OUT/tests/craft_py" "$REG/py-hostile.hsnap" --hostile 1
[ -d testdata/fuzz ] && cp testdata/fuzz/* "$REG/"
for t in reader replay; do
	echo "fuzz_$t: $(ls "$REG" | wc -l) regression inputs"
	"$F/fuzz_$t" "${LIMITS[@]}" "$REG"/* 2>"$F/$t.regress.log" || { tail -30 "$F/$t.regress.log"; exit 1; }
done
# Unwind tables: seeded with the .eh_frame_hdr and .eh_frame of a test program and of libc.
mkdir -p "$F/corpus-unwtab"
for bin in "$OUT/tests/nofp" /lib/x86_64-linux-gnu/libc.so.6; do
	[ -r "$bin" ] || continue
	objcopy -O binary --only-section=.eh_frame_hdr "$bin" "$F/hdr.bin" 2>/dev/null || continue
	objcopy -O binary --only-section=.eh_frame "$bin" "$F/eh.bin" 2>/dev/null || continue
	python3 -c 'import sys; h = open(sys.argv[1], "rb").read()[:65535]; sys.stdout.buffer.write(len(h).to_bytes(2, "little") + h + open(sys.argv[2], "rb").read())' \
		"$F/hdr.bin" "$F/eh.bin" >"$F/corpus-unwtab/$(basename "$bin")"
done
# And a .debug_frame, after an empty search table (the target reads the section both ways).
if [ -r "$OUT/tests/nofp_debugframe" ] &&
	objcopy -O binary --only-section=.debug_frame --set-section-flags .debug_frame=alloc \
		"$OUT/tests/nofp_debugframe" "$F/dbg.bin" 2>/dev/null && [ -s "$F/dbg.bin" ]; then
	{ printf '\0\0'; cat "$F/dbg.bin"; } >"$F/corpus-unwtab/nofp_debugframe"
fi
# Inputs that once found a bug (an offset times the data alignment overflowing).
"$F/fuzz_unwtab" "${LIMITS[@]}" testdata/fuzz-unwtab/* 2>"$F/unwtab.regress.log" || { tail -30 "$F/unwtab.regress.log"; exit 1; }
echo "fuzz_unwtab: ${SECS}s"
"$F/fuzz_unwtab" "${LIMITS[@]}" -max_total_time="$SECS" -max_len=262144 -print_final_stats=1 \
	-artifact_prefix="$F/unwtab-" "$F/corpus-unwtab" >"$F/unwtab.log" 2>&1 || { tail -40 "$F/unwtab.log"; exit 1; }
grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$F/unwtab.log" | sed "s/^/  /"
# Line tables: seeded with real ones, each interpreter's present, in fuzz_pyline's input form.
mkdir -p "$F/corpus-pyline"
for py in /usr/bin/python3 "$HOME"/.pyenv/versions/3.{8,9,10,12,13}.*/bin/python3; do
	[ -x "$py" ] || continue
	"$py" tests/pylines.py 3 2>/dev/null | python3 -c '
import sys
versions = {0x308: 0, 0x309: 1, 0x30a: 2, 0x30b: 3, 0x30c: 4, 0x30d: 5}
for i, l in enumerate(x for x in sys.stdin if x.startswith("C ")):
    v, first, n, t = l.split()[1:5]
    if i % 20 == 0 and int(v) in versions and t != "-":
        open("%s/%x-%d" % (sys.argv[1], int(v), i), "wb").write(
            bytes([versions[int(v)]]) + (int(n) // 2).to_bytes(4, "little") + bytes.fromhex(t))' "$F/corpus-pyline"
done
echo "fuzz_pyline: ${SECS}s"
"$F/fuzz_pyline" "${LIMITS[@]}" -max_total_time="$SECS" -max_len=65536 -print_final_stats=1 \
	-artifact_prefix="$F/pyline-" "$F/corpus-pyline" >"$F/pyline.log" 2>&1 || { tail -40 "$F/pyline.log"; exit 1; }
grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$F/pyline.log" | sed "s/^/  /"
for t in reader replay; do
	cp testdata/*.hsnap "$REG"/*.hsnap "$F/corpus-$t/"
	cp testdata/v1/alloc_c.hsnap "$F/corpus-$t/v1-alloc_c.hsnap"
	echo "fuzz_$t: ${SECS}s"
	"$F/fuzz_$t" "${LIMITS[@]}" -max_total_time="$SECS" -max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$F/$t-" "$F/corpus-$t" >"$F/$t.log" 2>&1 || { tail -40 "$F/$t.log"; exit 1; }
	grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$F/$t.log" | sed "s/^/  /"
done
