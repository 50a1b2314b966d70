#!/usr/bin/env bash
# Installs every build and test dependency of heapsnap with apt-get (Debian/Ubuntu).
# Idempotent: when everything is present it only runs one dpkg-query and exits.
set -euo pipefail

PKGS=(make gcc g++ clang llvm pkg-config bpftool libbpf-dev libelf-dev libdw-dev libdebuginfod-dev
      libprotobuf-c-dev protobuf-c-compiler libzstd-dev zlib1g-dev libiberty-dev golang-go time util-linux python3 sqlite3
      libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libc6-dbg libclang-rt-dev heaptrack binutils
      graphviz man-db)

missing=()
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing+=("$p")
done
# A Rust toolchain from rustup counts; otherwise Debian's rustc is installed.
if ! command -v rustc >/dev/null 2>&1; then
	missing+=(rustc)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
