#!/usr/bin/env bash
# Builds the OpenTelemetry Collector that the export tests send profiles to: the Collector's own
# Go modules at one release (otelcol, the OTLP receiver, contrib's file exporter, the debug
# exporter), from tests/otelcol/ (go.mod, go.sum, main.go), with the Go module proxy.
#
#   scripts/build-otelcol.sh          builds if needed; prints the binary's path on stdout
#
# Idempotent: when the binary is there and was built from the same tests/otelcol/ files it only
# prints the path. The binary goes to $HEAPSNAP_CACHE/otelcol-VERSION/otelcol (HEAPSNAP_CACHE
# defaults to ~/.cache/heapsnap). It needs Go 1.26 or newer (go.mod says go 1.26.0): the `go` on
# PATH, else /usr/local/go/bin/go. A cold build downloads about 110 MB of modules and takes a
# few minutes on 2 cores; it runs under nice -n 10.
#
# Run it with the profiles signal enabled (alpha in this release, behind a feature gate):
#   otelcol --config=file:tests/otelcol/config.yaml --feature-gates=service.profilesSupport
set -euo pipefail

VERSION=v0.161.0   # every go.opentelemetry.io/collector module at v0.161.0 / v1.67.0, contrib v0.161.0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=$ROOT/tests/otelcol
CACHE=${HEAPSNAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/heapsnap}
DIR=$CACHE/otelcol-$VERSION
BIN=$DIR/otelcol
STAMP=$DIR/otelcol.sources

say() { echo "build-otelcol: $*" >&2; }
die() { say "error: $*"; exit 1; }

[ -f "$SRC/go.mod" ] && [ -f "$SRC/go.sum" ] && [ -f "$SRC/main.go" ] ||
	die "$SRC/go.mod, go.sum or main.go is missing"
grep -q "go.opentelemetry.io/collector/otelcol $VERSION" "$SRC/go.mod" ||
	die "$SRC/go.mod does not require go.opentelemetry.io/collector/otelcol $VERSION"

# What the binary is built from: when it changes, the binary is built again.
sources=$(cd "$SRC" && sha256sum go.mod go.sum main.go)
if [ -x "$BIN" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$sources" ]; then
	say "up to date: $BIN"
	echo "$BIN"
	exit 0
fi

# A Go new enough for go.mod's `go 1.26.0` line (GOTOOLCHAIN=local here: no toolchain download).
go_ok() {
	local v
	v=$("$1" env GOVERSION 2>/dev/null) || return 1   # go1.26.8
	v=${v#go}
	local major=${v%%.*} rest=${v#*.}
	local minor=${rest%%[.a-z]*}
	[ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge 26 ]; }
}
GO=
for g in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
	if [ -n "$g" ] && [ -x "$g" ] && go_ok "$g"; then GO=$g; break; fi
done
[ -n "$GO" ] || die "needs Go 1.26 or newer (found: $(command -v go >/dev/null && go version || echo none)); put it first on PATH"

mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9   # one build at a time; a second caller waits, then finds the binary up to date
if [ -x "$BIN" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$sources" ]; then
	say "up to date: $BIN"
	echo "$BIN"
	exit 0
fi

say "building the OpenTelemetry Collector $VERSION (otlp receiver, file and debug exporters)"
say "with $("$GO" version) from $SRC into $BIN; modules come from $("$GO" env GOPROXY | cut -d, -f1)"
start=$(date +%s)
tmp=$BIN.tmp.$$
trap 'rm -f "$tmp"' EXIT
if ! (cd "$SRC" && GOFLAGS=-mod=readonly nice -n 10 "$GO" build -trimpath -o "$tmp" .); then
	die "go build failed in $SRC (module download or compile error above)"
fi
"$tmp" --version >/dev/null 2>&1 || die "the built collector does not run: $tmp"
mv -f "$tmp" "$BIN"
echo "$sources" >"$STAMP"
say "built in $(( $(date +%s) - start ))s: $BIN ($(du -h "$BIN" | cut -f1))"
echo "$BIN"
